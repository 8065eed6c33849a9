#!/bin/bash
# Runs inside the soft-RoCE guest (scripts/soft-roce/boot.sh), as root, after the guest's PID 1
# mounted the host's share at /mnt/host. It sets up a node the way Slurm leaves one, runs the
# host's build of the node agent against the guest's real /sys, /proc and cgroup2, and writes
# what it saw to /mnt/host/out for test/integration/node-soft-roce.test.ts to judge:
#
#   rxe0..rxe3   Soft-RoCE devices, each on its own dummy netdev (the guest has no NIC)
#   job 101      ibv_rc_pingpong processes on rxe0 (uid 1000): sole
#   jobs 102+103 a pingpong server each on rxe1: shared
#   storage      a pingpong server on rxe2 in system.slice/storage.service (root, no job): nonjob
#   rxe3         nobody: idle
#
# Job cgroups as slurmstepd makes them under cgroup v2, the rdma controller on down to the
# tasks: system.slice/rxe-guest_slurmstepd.scope/job_<id>/step_0/user/task_<n>.
# Phases: s1 (everything held, no traffic; the agent as a daemon turning per-PID QP counters on),
# traffic (2000 round trips of 4 KiB between two more tasks of job 101), s2 (after it: the agent
# as root and unprivileged), s3 (job 101's processes gone), usage (job 42's memory, OOM kill and
# cpuset under the memory and cpuset controllers).
# Each step is bounded; a step that fails is logged and the next runs: the test says what is wrong.
set -u
H=/mnt/host
OUT=$H/out
mkdir -p "$OUT/rdma" "$OUT/sysfs"
up() { cut -d' ' -f1 /proc/uptime; }
mark() { echo "$1 $(up)" >> "$OUT/timings.txt"; echo "== [$(up)s] $1"; }
note() { echo "$*" | tee -a "$OUT/notes.txt"; }
mark start

# --- the agent: the host's node and build, copied into tmpfs (node over 9p starts ~5x slower)
APP=/tmp/slurm-otel
mkdir -p "$APP"
cp "$H/node" "$APP/node" && tar -xf "$H/app.tar" -C "$APP" || note "could not unpack the agent"
chmod -R a+rX "$APP"
AGENT=("$APP/node" "$APP/dist/src/cli/main.js")
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
mark agent-unpacked

# --- RDMA: no udev runs here, so load what udev and rdma-core would have loaded
modprobe rdma_rxe && modprobe ib_uverbs || note "modprobe failed"
for i in 0 1 2 3; do
  ip link add "rxenet$i" type dummy
  ip addr add "192.0.2.$((i + 1))/32" dev "rxenet$i"
  ip link set "rxenet$i" up
  rdma link add "rxe$i" type rxe netdev "rxenet$i" || note "rdma link add rxe$i failed"
done
uname -r > "$OUT/kernel.txt"
rdma -V > "$OUT/rdma-version.txt" 2>&1
for u in /sys/class/infiniband_verbs/uverbs*; do
  echo "${u##*/} $(cat "$u/ibdev") $(cat "$u/dev") $(stat -c '%t:%T' "/dev/infiniband/${u##*/}")"
done > "$OUT/uverbs.txt"
mark rxe-up

# --- cgroup v2 as a Slurm node has it: nothing left in the root, rdma on down to the tasks
CG=/sys/fs/cgroup
mkdir -p "$CG/init.scope"
for p in $(cat "$CG/cgroup.procs"); do echo "$p" > "$CG/init.scope/cgroup.procs" 2>/dev/null; done
SCOPE=$CG/system.slice/rxe-guest_slurmstepd.scope
mkdir -p "$CG/system.slice/storage.service" "$SCOPE"
for d in "$CG" "$CG/system.slice" "$SCOPE"; do echo +rdma > "$d/cgroup.subtree_control" || note "+rdma failed in $d"; done
task_dir() { # job task: the task's cgroup, made (with rdma on above it) if new
  local j=$SCOPE/job_$1
  mkdir -p "$j/step_0/user/task_$2" "$j/step_0/slurm"
  for d in "$j" "$j/step_0" "$j/step_0/user"; do echo +rdma > "$d/cgroup.subtree_control"; done
  echo "$j/step_0/user/task_$2"
}
cat "$CG/cgroup.subtree_control" > "$OUT/cgroup-root-subtree.txt"

# start <name> <cgroup dir> <uid> <args…>: a process in that cgroup, its pid in pids.txt
start() {
  local name=$1 dir=$2 uid=$3; shift 3
  (
    echo "$BASHPID" > "$dir/cgroup.procs"
    exec setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"
  ) > "$OUT/$name.txt" 2>&1 &
  echo "$name $!" >> "$OUT/pids.txt"
  eval "PID_${name//-/_}=$!"
}
# has_qp <pid> [state]: the process has a QP (in that state) per the kernel
has_qp() { rdma -j resource show qp 2>/dev/null | tr '{' '\n' | grep "\"pid\":$1," | grep -q "${2:-}"; }
wait_for() { # <what> <tries of 0.2 s> <command…>
  local what=$1 n=$2; shift 2
  for ((k = 0; k < n; k++)); do "$@" && return 0; sleep 0.2; done
  note "timed out waiting for $what"; return 1
}
snap_hw() { # every rxe port's hw_counters, one "device name value" line each
  for f in /sys/class/infiniband/rxe*/ports/1/hw_counters/*; do
    local dev=${f#/sys/class/infiniband/}; echo "${dev%%/*} ${f##*/} $(cat "$f")"
  done > "$OUT/$1"
}
rdma_current() {
  for d in "$SCOPE"/job_* "$CG/system.slice/storage.service" "$CG/init.scope"; do
    echo "== ${d#$CG/}"; cat "$d/rdma.current"
  done > "$OUT/$1"
}
scrape() { # <port> <path>: the body of an HTTP/1.0 GET on loopback
  exec 5<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\n\r\n' "$2" >&5
  sed '1,/^\r$/d' <&5
  exec 5<&-
}
once() { # <file> [agent flags…]: one `node --once`, as root
  local f=$1; shift
  "${AGENT[@]}" node --once "$@" > "$OUT/$f.prom" 2> "$OUT/$f.err"; echo "rc=$?" >> "$OUT/$f.err"
}

# --- the agent as a daemon, turning per-PID QP counters on (before any job QP exists)
"${AGENT[@]}" node --collection-interval 3s --qp-counters manage --log-format json \
  --metrics-bind-address 127.0.0.1:9836 --monitoring-bind-address 127.0.0.1:9837 \
  > "$OUT/daemon.log" 2>&1 &
DAEMON=$!
wait_for "the daemon's metrics endpoint" 300 scrape 9836 /metrics > /dev/null
mode_on() { ! rdma statistic qp mode 2>/dev/null | grep -q 'auto off'; }
wait_for "per-PID QP counters on every link" 150 mode_on
rdma statistic qp mode > "$OUT/rdma/statistic-qp-mode.txt" 2>&1
rdma -j statistic qp mode > "$OUT/rdma/statistic-qp-mode.json" 2>&1
mark daemon-up

# --- s1: every holder in place, no traffic yet
# -e: wait for completion events (busy polling on one vCPU is ~10x slower); GID 1 is the IPv4 one.
PP=(ibv_rc_pingpong -g 1 -e -s 4096)
ROUNDS=2000
# Job 101's first task only holds rxe0 (a server no client ever reaches) until s3.
start job101-holder "$(task_dir 101 0)" 1000 "${PP[@]}" -d rxe0 -n 10 -p 18601
start job102-server "$(task_dir 102 0)" 1000 "${PP[@]}" -d rxe1 -n 10 -p 18602
start job103-server "$(task_dir 103 0)" 1000 "${PP[@]}" -d rxe1 -n 10 -p 18603
start storage-server "$CG/system.slice/storage.service" 0 "${PP[@]}" -d rxe2 -n 10 -p 18604
HOLDERS=(job101-holder job102-server job103-server storage-server)
for n in "${HOLDERS[@]}"; do
  eval "p=\$PID_${n//-/_}"; wait_for "$n's QP" 150 has_qp "$p"
done
for n in "${HOLDERS[@]}"; do
  eval "p=\$PID_${n//-/_}"
  for fd in /proc/$p/fd/*; do
    l=$(readlink "$fd")
    case $l in /dev/infiniband/uverbs*) echo "$n $p ${fd##*/} $l $(stat -L -c '%t:%T' "$fd")" ;; esac
  done
done > "$OUT/holder-fds.txt"
mark s1-held
rdma_current rdma-current.s1.txt
rdma -j resource show qp > "$OUT/rdma/resource-qp.s1.json" 2>&1
rdma -j resource show > "$OUT/rdma/resource.s1.json" 2>&1
rdma -j resource show ctx > "$OUT/rdma/resource-ctx.s1.json" 2>&1
# The same two from a new PID namespace, where none of these processes has a PID: the list hides
# their contexts, and the per-device totals must still count them (src/node/read/rdma-contexts.ts
# takes a device whose total exceeds its listed contexts as one with contexts of unknown owners).
unshare --pid --fork rdma -j resource show ctx > "$OUT/rdma/resource-ctx.pidns.json" 2>&1
unshare --pid --fork rdma -j resource show > "$OUT/rdma/resource.pidns.json" 2>&1
rdma -j link show > "$OUT/rdma/link.json" 2>&1
rdma -j statistic qp show > "$OUT/rdma/statistic-qp.s1.json" 2>&1
# The daemon's view once a cycle used a QP reading taken with every holder in place.
daemon_sees() { scrape 9836 /metrics > "$OUT/daemon.s1.prom" && grep -q '^ib_slurm_job_qps{.*job_id="103"' "$OUT/daemon.s1.prom"; }
wait_for "the daemon's QP reading of s1" 150 daemon_sees
mark s1-daemon
snap_hw hw.s1.before
once once-root.s1
snap_hw hw.s1.after
mark s1-done

# --- traffic: a server and a client in two more tasks of job 101, over rxe0, the daemon cycling
start job101-server "$(task_dir 101 1)" 1000 "${PP[@]}" -d rxe0 -n "$ROUNDS" -p 18605
wait_for "job 101's server QP" 150 has_qp "$PID_job101_server"
start job101-client "$(task_dir 101 2)" 1000 "${PP[@]}" -d rxe0 -n "$ROUNDS" -p 18605 127.0.0.1
both_rts() { has_qp "$PID_job101_server" RTS && has_qp "$PID_job101_client" RTS; }
if wait_for "job 101's two QPs in RTS" 300 both_rts; then
  # Both held still while the kernel's view is taken: on a quiet host the 2000 round trips can end
  # between two of these reads, and a process tearing down shows half its objects. Stopped, they
  # keep their contexts and QPs (the kernel answers for them), and go on once continued.
  kill -STOP "$PID_job101_client" "$PID_job101_server"
  rdma_current rdma-current.traffic.txt
  rdma -j resource show qp > "$OUT/rdma/resource-qp.traffic.json" 2>&1
  rdma -j statistic qp show > "$OUT/rdma/statistic-qp.traffic.json" 2>&1
  rdma statistic qp mode > "$OUT/rdma/statistic-qp-mode.traffic.txt" 2>&1
  snap_hw hw.traffic
  kill -CONT "$PID_job101_client" "$PID_job101_server"
fi
# Bounded: a client that failed leaves its server waiting for a connection.
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_for "job 101's client to end" 900 gone "$PID_job101_client"
wait_for "job 101's server to end" 100 gone "$PID_job101_server" || kill "$PID_job101_server"
wait "$PID_job101_client"; echo "client rc=$?" >> "$OUT/notes.txt"
wait "$PID_job101_server"; echo "server rc=$?" >> "$OUT/notes.txt"
mark traffic-done
# The daemon's cycle after the traffic: rxe0's sent_pkts as sysfs has it now.
SENT=$(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts)
daemon_after() {
  scrape 9836 /metrics > "$OUT/daemon.traffic.prom" &&
    grep -q "^ib_slurm_device_counters_total{device=\"rxe0\",port=\"1\",counter=\"sent_pkts\"} $SENT\$" "$OUT/daemon.traffic.prom"
}
wait_for "the daemon's cycle after the traffic" 150 daemon_after
kill -TERM "$DAEMON"; wait "$DAEMON"; echo "daemon rc=$?" >> "$OUT/notes.txt"
rdma statistic qp mode > "$OUT/rdma/statistic-qp-mode.after-daemon.txt" 2>&1
mark daemon-stopped

# --- s2: after the traffic, every holder of s1 still in place
snap_hw hw.s2.before
once once-root.s2
snap_hw hw.s2.after
"${AGENT[@]}" explain --json > "$OUT/explain-root.s2.json" 2> "$OUT/explain-root.s2.err"
mark s2-root
# The agent without privileges: every job process's fd table is closed to it (EACCES), so only
# the kernel's rdma cgroup charges can say who holds what.
as_nobody "${AGENT[@]}" explain --json --unreadable-processes ignore-outside-jobs \
  > "$OUT/explain-nobody.s2.json" 2> "$OUT/explain-nobody.s2.err"
as_nobody "${AGENT[@]}" node --once --unreadable-processes ignore-outside-jobs \
  > "$OUT/once-nobody.s2.prom" 2> "$OUT/once-nobody.s2.err"
mark s2-nobody

# --- s3: job 101's last process is gone (its cgroup stays, charged nothing)
kill "$PID_job101_holder"; wait "$PID_job101_holder"
rdma_current rdma-current.s3.txt
as_nobody "${AGENT[@]}" node --once --unreadable-processes ignore-outside-jobs \
  > "$OUT/once-nobody.s3.prom" 2> "$OUT/once-nobody.s3.err"
mark s3-done

# --- usage: a job's memory and CPU use under cgroup v2 with the memory and cpuset controllers
# (the CI host's own v2 tree has neither). Job 42: memory.max 32 MiB and a cpuset of CPU 0, as
# Slurm sets them (ConstrainRAMSpace, ConstrainCores); a task that touches 100 MiB is OOM-killed,
# then one holds 16 MiB while the agent reads. The files are read before and after the agent.
usage_files() {
  for f in memory.current memory.peak memory.max memory.events cpuset.cpus cpuset.cpus.effective cpu.stat; do
    echo "== $f"; cat "$U/$f"
  done > "$OUT/$1"
}
U=$SCOPE/job_42
for d in "$CG" "$CG/system.slice" "$SCOPE"; do
  echo "+memory +cpuset" > "$d/cgroup.subtree_control" || note "+memory +cpuset failed in $d"
done
mkdir -p "$U/step_0/user/task_0" "$U/step_0/slurm"
echo 0 > "$U/cpuset.cpus" || note "job 42's cpuset could not be set"
echo $((32 * 1048576)) > "$U/memory.max" || note "job 42's memory.max could not be set"
start job42-oom "$U/step_0/user/task_0" 1000 perl -e 'vec($x, 100 * 1048576 - 1, 8) = 1'
wait "$PID_job42_oom"; echo "$?" > "$OUT/usage-oom-rc.txt"
start job42-hold "$U/step_0/user/task_0" 1000 perl -e 'vec($x, 16 * 1048576 - 1, 8) = 1; sleep 600'
holds() { [ "$(cat "$U/memory.current")" -ge $((16 * 1048576)) ]; }
wait_for "job 42's 16 MiB" 150 holds
usage_files usage-files.before.txt
once once-root.usage
usage_files usage-files.after.txt
kill "$PID_job42_hold"; wait "$PID_job42_hold"
mark usage-done

# --- recordings for the unit tests (fixtures/node/rxe): what the agent reads of sysfs, rdma JSON
for d in /sys/class/infiniband/rxe*; do
  t=$OUT/sysfs/class/infiniband/${d##*/}
  mkdir -p "$t/ports/1/hw_counters"
  for f in node_type node_guid sys_image_guid fw_ver node_desc parent; do cat "$d/$f" > "$t/$f"; done
  for f in state phys_state rate link_layer lid sm_lid lid_mask_count cap_mask; do cat "$d/ports/1/$f" > "$t/ports/1/$f"; done
  for f in "$d"/ports/1/hw_counters/*; do cat "$f" > "$t/ports/1/hw_counters/${f##*/}"; done
  ls "$d" > "$OUT/sysfs-ls-${d##*/}.txt"; ls "$d/ports/1" >> "$OUT/sysfs-ls-${d##*/}.txt"
done
v=$OUT/sysfs/class/infiniband_verbs
mkdir -p "$v"; cat /sys/class/infiniband_verbs/abi_version > "$v/abi_version"
for u in /sys/class/infiniband_verbs/uverbs*; do
  mkdir -p "$v/${u##*/}"; for f in ibdev dev abi_version; do cat "$u/$f" > "$v/${u##*/}/$f"; done
done
rdma -j dev show > "$OUT/rdma/dev.json" 2>&1
rdma -j statistic show > "$OUT/rdma/statistic.after.json" 2>&1
rdma -j resource show qp > "$OUT/rdma/resource-qp.s3.json" 2>&1

for n in job102-server job103-server storage-server; do eval "kill \$PID_${n//-/_}"; done
wait
mark end
echo SOFT-ROCE-GUEST-DONE > "$OUT/done"
