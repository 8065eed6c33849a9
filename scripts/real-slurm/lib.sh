# shellcheck shell=bash disable=SC2034  # the RS_* settings are used by the scripts that source this
# Settings and helpers shared by up.sh and down.sh. Sourced, never run.
#
# Every knob is an environment variable with a default. The default ports are
# chosen so this cluster can run beside a Slurm on its own default ports (6817-6820):
#
#   REAL_SLURM_STATE             state dir (default /tmp/slurm-otel-real-slurm); holds
#                                config, keys, logs, pid files, spool, env file
#   REAL_SLURM_PORT_OFFSET       added to every default port below (default 0); the
#                                vitest helper uses 100*VITEST_POOL_ID so parallel
#                                workers each get their own cluster
#   REAL_SLURM_REST_PORT         slurmrestd on 127.0.0.1 (default 16820)
#   REAL_SLURM_CTLD_PORT         slurmctld (default 26817)
#   REAL_SLURM_SLURMD_BASE_PORT  slurmd of node1; nodeN gets base+N-1 (default 27001)
#   REAL_SLURM_DBD_PORT          slurmdbd, only with REAL_SLURM_DBD=1 (default 26819)
#   REAL_SLURM_DB_PORT           mariadbd, only with REAL_SLURM_DBD=1 (default 23306)
#   REAL_SLURM_NODES             node count, 2..16 (default 4): cpu = first half, gpu = rest
#   REAL_SLURM_DBD               1 = also run mariadb + slurmdbd (accounting, /slurmdb/*)
#   REAL_SLURM_SLURMD_TIMEOUT    SlurmdTimeout seconds (default 10)
#   REAL_SLURM_MESSAGE_TIMEOUT   MessageTimeout seconds (default 5)
#   REAL_SLURM_MIN_JOB_AGE       MinJobAge seconds (default 30)
#   REAL_SLURM_TOKEN_LIFESPAN    lifespan of the token in the env file (default 7 days)
#   REAL_SLURM_TIMEOUT           seconds up.sh waits for readiness (default 60)
#   REAL_SLURM_INSTALL           1 (default) = apt-get install missing packages; 0 = fail instead
#   REAL_SLURM_EXTRA_CONF        extra lines appended to slurm.conf before the node lines
#   REAL_SLURM_TRACE             file: append a timestamped `set -x` trace of up.sh/down.sh
#   REAL_SLURM_NODE_PREFIX       node names are <prefix>1..N (default node); job cgroups of
#                                cluster instances on one host are told apart by it
#   REAL_SLURM_FIRST_JOB_ID      FirstJobId (default 1)
#   REAL_SLURM_CLUSTER           ClusterName (default slurmotel)
#   REAL_SLURM_FRESH             1 = refuse to start when the state dir exists already (the
#                                test helper gives every run a new one); default 0 reuses it
#   REAL_SLURM_CGROUP            process tracking: none (default: proctrack/linuxproc,
#                                task/none; runs anywhere) or v1 (proctrack/cgroup +
#                                task/cgroup with cgroup/v1: real job cgroups made by
#                                slurmstepd; needs the v1 controllers mounted at
#                                /sys/fs/cgroup/<controller>) or v2 (cgroup/v2; only inside a
#                                chroot: slurmd refuses a hybrid host's /proc/self/cgroup with
#                                "Hybrid mode is not supported", so up.sh mounts the host's
#                                cgroup2 hierarchy at the chroot's /sys/fs/cgroup and
#                                REAL_SLURM_PRELOAD=cg2only.so shows slurmd only the 0:: line;
#                                IgnoreSystemd=yes: slurmd makes <node>_slurmstepd.scope itself.
#                                down.sh removes the scopes and the mount it made)
#   REAL_SLURM_JOBACCT           with REAL_SLURM_CGROUP=v1 or v2: cgroup = JobAcctGatherType=
#                                jobacct_gather/cgroup (slurmstepd also makes each job's v1
#                                cpuacct directory, and sstat answers from the job cgroup);
#                                unset: jobacct_gather/none, or linux with REAL_SLURM_DBD=1
#   REAL_SLURM_CGROUP_JOBID_PATHS  with REAL_SLURM_CGROUP=v2: yes or no writes
#                                CgroupJobIdPaths=<it> into cgroup.conf (unset: not written, Slurm's
#                                default no). 26.05 names a job's v2 directory by its SLUID; yes
#                                names it job_<id> again. Known from Slurm 26.05.2 on: up.sh
#                                refuses it, naming the version, on an older slurmd
#   REAL_SLURM_GPU_MINORS        two comma-separated minors, e.g. 3,1: the two fake GPUs of each
#                                gpu node are then character devices <state>/dev/nvidia<minor> made
#                                with mknod at 195:<minor> (the NVIDIA major), as Slurm's device
#                                confinement needs, one gres.conf line each in this order; default
#                                empty = plain files nvidia0, nvidia1. No driver is behind 195
#                                here: open(2) of them fails with ENXIO, an O_PATH open works
#   REAL_SLURM_CONSTRAIN_DEVICES yes or no (default no): ConstrainDevices in cgroup.conf (v1/v2)
#   REAL_SLURM_CONSTRAIN_CORES   yes or no (default no): ConstrainCores in cgroup.conf (v1/v2); yes
#                                gives each job a cpuset of the cores Slurm allocated it
#
# Newer Slurm (24.11, 26.05) runs these scripts inside a Debian chroot made by chroot.sh;
# the knobs that differ from 22.05:
#   REAL_SLURM_REST_PLUGINS      slurmrestd's -s list (default the v0.0.36-38 plugins of 22.05,
#                                + dbv0.0.36-38 with REAL_SLURM_DBD=1); 24.11: openapi/slurmctld
#                                (+ ,openapi/slurmdbd); 26.05: openapi/slurmctld,openapi/util (+ ...dbd)
#   REAL_SLURM_PING_VERSION      API version of the readiness ping (default v0.0.38)
#   REAL_SLURM_DB_EXTERNAL       port of a MariaDB already listening on 127.0.0.1 (db.sh starts
#                                one on the host): slurmdbd uses it instead of a mariadbd of its own.
#                                26.05's slurmdbd stops at start with sid's MariaDB 11.8, so the
#                                chroots use the host's (Debian 12's 10.11)
#   REAL_SLURM_DB_PASS           password of its user `slurm` (default slurm-otel-test)
#   REAL_SLURM_PRELOAD           a library put in LD_PRELOAD of every daemon (e.g. chroot.sh's
#                                /opt/slurm-otel/cg2only.so for cgroup v2 on hybrid hosts)
#   REAL_SLURM_EXTRA_CONF        e.g. MetricsType=metrics/openmetrics: 26.05's slurmctld then serves
#                                /metrics/{nodes,jobs,partitions,scheduler,jobs-users-accts} on its port

RS_STATE=${REAL_SLURM_STATE:-/tmp/slurm-otel-real-slurm}
RS_OFFSET=${REAL_SLURM_PORT_OFFSET:-0}
RS_REST_PORT=${REAL_SLURM_REST_PORT:-$((16820 + RS_OFFSET))}
RS_CTLD_PORT=${REAL_SLURM_CTLD_PORT:-$((26817 + RS_OFFSET))}
RS_SLURMD_BASE=${REAL_SLURM_SLURMD_BASE_PORT:-$((27001 + RS_OFFSET))}
RS_DBD_PORT=${REAL_SLURM_DBD_PORT:-$((26819 + RS_OFFSET))}
RS_DB_PORT=${REAL_SLURM_DB_PORT:-$((23306 + RS_OFFSET))}
RS_NODES=${REAL_SLURM_NODES:-4}
RS_DBD=${REAL_SLURM_DBD:-0}
RS_SLURMD_TIMEOUT=${REAL_SLURM_SLURMD_TIMEOUT:-10}
RS_MESSAGE_TIMEOUT=${REAL_SLURM_MESSAGE_TIMEOUT:-5}
RS_MIN_JOB_AGE=${REAL_SLURM_MIN_JOB_AGE:-30}
RS_TOKEN_LIFESPAN=${REAL_SLURM_TOKEN_LIFESPAN:-604800}
RS_TIMEOUT=${REAL_SLURM_TIMEOUT:-60}
RS_PREFIX=${REAL_SLURM_NODE_PREFIX:-node}
RS_FIRST_JOB_ID=${REAL_SLURM_FIRST_JOB_ID:-1}
RS_CLUSTER=${REAL_SLURM_CLUSTER:-slurmotel}
RS_FRESH=${REAL_SLURM_FRESH:-0}
RS_CGROUP=${REAL_SLURM_CGROUP:-none}
RS_CGROUP_ROOT=/sys/fs/cgroup
RS_REST_PLUGINS=${REAL_SLURM_REST_PLUGINS:-}
RS_PING_VERSION=${REAL_SLURM_PING_VERSION:-v0.0.38}
RS_DB_EXTERNAL=${REAL_SLURM_DB_EXTERNAL:-}
RS_DB_PASS=${REAL_SLURM_DB_PASS:-slurm-otel-test}
RS_PRELOAD=${REAL_SLURM_PRELOAD:-}
RS_JOBID_PATHS=${REAL_SLURM_CGROUP_JOBID_PATHS:-}
RS_GPU_MINORS=${REAL_SLURM_GPU_MINORS:-}
RS_CONSTRAIN_DEVICES=${REAL_SLURM_CONSTRAIN_DEVICES:-no}
RS_CONSTRAIN_CORES=${REAL_SLURM_CONSTRAIN_CORES:-no}
RS_JOBACCT=${REAL_SLURM_JOBACCT:-}
# The unprivileged account slurmrestd runs as (it refuses root and SlurmUser).
RS_REST_ACCOUNT=slurmotel-rest

RS_ETC=$RS_STATE/etc
RS_RUN=$RS_STATE/run
RS_LOG=$RS_STATE/log
RS_CONF=$RS_ETC/slurm.conf
# Marker file: up.sh only ever wipes a directory that carries it (or is empty),
# so a mistyped REAL_SLURM_STATE cannot delete someone's data.
RS_MARKER=$RS_STATE/.slurm-otel-real-slurm
# Every daemon is started with this variable in its (otherwise empty)
# environment. down.sh checks it in /proc/<pid>/environ before signalling a pid
# from a pid file, so a recycled pid that now belongs to something else is
# never killed, and it finds slurmstepd processes of *this* cluster by it.
RS_TAG="SLURM_OTEL_REAL_SLURM=$RS_STATE"

rs_die() { echo "[real-slurm] ERROR: $*" >&2; exit 1; }

rs_validate() {
  # Paths go unquoted into slurm.conf and the env file: allow only plain characters.
  [[ $RS_STATE =~ ^/[A-Za-z0-9._/-]+$ ]] || rs_die "REAL_SLURM_STATE must be an absolute path of [A-Za-z0-9._/-] (got '$RS_STATE')"
  case $RS_STATE in /|/tmp|/tmp/|/var|/root|/home|/etc|/usr) rs_die "refusing REAL_SLURM_STATE=$RS_STATE";; esac
  local v
  [[ $RS_PREFIX =~ ^[a-z][a-z0-9]{0,15}$ ]] || rs_die "REAL_SLURM_NODE_PREFIX must be a lower-case letter then up to 15 of [a-z0-9] (got '$RS_PREFIX')"
  [[ $RS_CLUSTER =~ ^[a-z][a-z0-9_]{0,31}$ ]] || rs_die "REAL_SLURM_CLUSTER must be lower-case [a-z0-9_], starting with a letter (got '$RS_CLUSTER')"
  [[ $RS_FRESH =~ ^[01]$ ]] || rs_die "REAL_SLURM_FRESH must be 0 or 1 (got '$RS_FRESH')"
  [[ $RS_CGROUP =~ ^(none|v1|v2)$ ]] || rs_die "REAL_SLURM_CGROUP must be none, v1 or v2 (got '$RS_CGROUP')"
  [[ $RS_REST_PLUGINS =~ ^[a-z0-9/._,]*$ ]] || rs_die "REAL_SLURM_REST_PLUGINS must be a comma list of plugin names (got '$RS_REST_PLUGINS')"
  [[ $RS_PING_VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || rs_die "REAL_SLURM_PING_VERSION must look like v0.0.42 (got '$RS_PING_VERSION')"
  [[ $RS_DB_EXTERNAL =~ ^[0-9]*$ ]] || rs_die "REAL_SLURM_DB_EXTERNAL must be a port number (got '$RS_DB_EXTERNAL')"
  [[ $RS_DB_PASS =~ ^[A-Za-z0-9._-]+$ ]] || rs_die "REAL_SLURM_DB_PASS must be plain [A-Za-z0-9._-]"
  [[ $RS_JOBID_PATHS =~ ^(yes|no)?$ ]] || rs_die "REAL_SLURM_CGROUP_JOBID_PATHS must be yes or no (got '$RS_JOBID_PATHS')"
  [ -z "$RS_JOBID_PATHS" ] || [ "$RS_CGROUP" = v2 ] || rs_die "REAL_SLURM_CGROUP_JOBID_PATHS needs REAL_SLURM_CGROUP=v2"
  [[ $RS_GPU_MINORS =~ ^([0-9]{1,3},[0-9]{1,3})?$ ]] || rs_die "REAL_SLURM_GPU_MINORS must be two minors, e.g. 3,1 (got '$RS_GPU_MINORS')"
  [[ $RS_CONSTRAIN_DEVICES =~ ^(yes|no)$ ]] || rs_die "REAL_SLURM_CONSTRAIN_DEVICES must be yes or no (got '$RS_CONSTRAIN_DEVICES')"
  [[ $RS_PRELOAD =~ ^(/[A-Za-z0-9._/-]+)?$ ]] || rs_die "REAL_SLURM_PRELOAD must be an absolute plain path (got '$RS_PRELOAD')"
  for v in RS_OFFSET RS_REST_PORT RS_CTLD_PORT RS_SLURMD_BASE RS_DBD_PORT RS_DB_PORT RS_NODES \
           RS_SLURMD_TIMEOUT RS_MESSAGE_TIMEOUT RS_MIN_JOB_AGE RS_TOKEN_LIFESPAN RS_TIMEOUT RS_FIRST_JOB_ID; do
    [[ ${!v} =~ ^[0-9]+$ ]] || rs_die "$v must be a non-negative integer (got '${!v}')"
  done
  # >= 2 so both partitions have a node; <= 16 so the port ranges of instances
  # that differ by a multiple of 100 in REAL_SLURM_PORT_OFFSET never overlap.
  { [ "$RS_NODES" -ge 2 ] && [ "$RS_NODES" -le 16 ]; } || rs_die "REAL_SLURM_NODES must be 2..16"
}

rs_trace() {
  [ -n "${REAL_SLURM_TRACE:-}" ] || return 0
  PS4='+ $EPOCHREALTIME '
  exec 2>>"$REAL_SLURM_TRACE"
  set -x
}

# Run a command with a clean environment: nothing from the caller leaks into the
# daemons or the clients we use. The big one is SLURM_JWT: if set, every Slurm
# daemon and client switches to auth/jwt, slurmctld then rejects munge-signed
# RPCs and a second run breaks in confusing ways. SLURM_CLUSTERS, SQUEUE_FORMAT,
# SLURM_TIME_FORMAT etc. would change client output we parse, so drop them all.
RS_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "SLURM_CONF=$RS_CONF" "$RS_TAG")
rs_env() { "${RS_ENV[@]}" "$@"; }

# rs_version_at_least MAJOR MINOR PATCH: whether this slurmd (`slurmd -V`: "slurm 26.05.5") is at
# least that release. Also prints the version, for the caller's message.
rs_version_at_least() {
  local v
  v=$(rs_env slurmd -V | awk '{print $2}')
  echo "$v"
  [[ $v =~ ^([0-9]+)\.([0-9]+)\.([0-9]+) ]] || return 1
  local have=$((10#${BASH_REMATCH[1]} * 10000 + 10#${BASH_REMATCH[2]} * 100 + 10#${BASH_REMATCH[3]}))
  [ "$have" -ge $(($1 * 10000 + $2 * 100 + $3)) ]
}

# rs_launch NAME CMD...: start a daemon in the foreground mode of its own (-D,
# --foreground), detached into its own session (a Ctrl-C of the test runner
# does not hit it), with a clean environment, stdin from /dev/null and output
# in $RS_LOG/NAME.out (a daemon holding our stdout pipe would keep the
# caller's child_process.execFile waiting forever), and its pid in run/NAME.pid.
rs_launch() {
  local name=$1; shift
  # A simple command (not a shell function, whose subshell would stay the
  # parent) and setsid execing in place (a background job of a non-interactive
  # shell is no process-group leader): $! is the daemon's own pid.
  local preload=()
  [ -n "$RS_PRELOAD" ] && preload=("LD_PRELOAD=$RS_PRELOAD")
  "${RS_ENV[@]}" "${preload[@]}" setsid "$@" </dev/null >>"$RS_LOG/$name.out" 2>&1 9>&- &
  local pid=$! i
  echo "$pid" >"$RS_RUN/$name.pid"
  # Until the forked shell has exec'd env, the pid lacks our tag and
  # rs_is_ours would call it "not ours / exited": wait for the exec (<= 1 s).
  for ((i = 0; i < 50; i++)); do rs_is_ours "$pid" && break; sleep 0.02; done
}

# A pid from a pid file is ours only if it is alive and carries our tag.
rs_is_ours() {
  local pid=$1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  # environ is NUL-separated: grep -z treats NUL as the line end.
  grep -qzxF -- "$RS_TAG" "/proc/$pid/environ" 2>/dev/null
}

# True if something already listens on 127.0.0.1:$1 (bash /dev/tcp, no ss needed).
rs_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Kill $1 and all its descendants with SIGKILL (children first). Parent pids
# come from /proc/<pid>/stat (no procps needed); the command name there may
# contain spaces or ')', so the fields are taken after the last ')'.
rs_kill_tree() {
  local root=$1 p st kids=()
  for p in /proc/[0-9]*; do
    read -r st 2>/dev/null <"$p/stat" || continue
    st=${st##*) }            # "S <ppid> <pgrp> ..."
    st=${st#* }; st=${st%% *}
    [ "$st" = "$root" ] && kids+=("${p#/proc/}")
  done
  for p in "${kids[@]}"; do rs_kill_tree "$p"; done
  kill -KILL "$root" 2>/dev/null && echo "[real-slurm] killed leftover pid $root" >&2
  return 0
}

# Stop the daemon recorded in pid file $1: SIGTERM, up to 10 s, then SIGKILL.
rs_stop_pidfile() {
  local f=$1 name pid i
  [ -f "$f" ] || return 0
  name=$(basename "$f" .pid)
  pid=$(cat "$f" 2>/dev/null || true)
  if rs_is_ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do rs_is_ours "$pid" || break; sleep 0.2; done
    if rs_is_ours "$pid"; then
      echo "[real-slurm] $name (pid $pid) ignored SIGTERM for 10 s, sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    echo "[real-slurm] stopped $name (pid $pid)" >&2
  fi
  rm -f "$f"
}

# Stop everything this state dir's cluster started. Only pids recorded in
# $RS_RUN/*.pid and processes that carry our tag (or run a batch script from
# our spool) are touched; nothing is found by process name.
rs_stop() {
  [ -d "$RS_RUN" ] || return 0
  local f p pid out i comm
  # 1. Cancel jobs while slurmctld still runs, so slurmstepd ends them cleanly
  #    (KillWait is 2 s) instead of leaving orphaned job processes behind.
  if [ -f "$RS_RUN/slurmctld.pid" ] && rs_is_ours "$(cat "$RS_RUN/slurmctld.pid")"; then
    out=$(rs_env timeout 10 squeue -h -o %A 2>/dev/null || true)
    if [ -n "$out" ]; then
      # shellcheck disable=SC2086  # one id per word
      rs_env timeout 10 scancel $out >/dev/null 2>&1 || true
      for ((i = 0; i < 30; i++)); do
        out=$(rs_env timeout 5 squeue -h -t running,completing,configuring -o %A 2>/dev/null || echo busy)
        [ -z "$out" ] && break
        sleep 0.3
      done
    fi
  fi
  # 2. Clients-facing daemon first, then the controller, then the compute
  #    daemons. slurmctld goes before the slurmd: stopped the other way round,
  #    an agent thread of slurmctld often still talks to a vanished slurmd and
  #    its shutdown hangs ~3 s ("Dropped 1 hung communications to shutdown").
  rs_stop_pidfile "$RS_RUN/slurmrestd.pid"
  rs_stop_pidfile "$RS_RUN/slurmctld.pid"
  for f in "$RS_RUN"/slurmd-*.pid; do [ -e "$f" ] && rs_stop_pidfile "$f"; done
  # 3. Leftovers: slurmd execs slurmstepd with its own environment, so every
  #    step daemon of this cluster carries our tag; job processes are its
  #    descendants. A batch script orphaned by a dead slurmstepd is recognised
  #    by its path under our spool dir.
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    comm=; read -r comm 2>/dev/null <"$p/comm" || continue
    if [ "$comm" = slurmstepd ] && rs_is_ours "$pid"; then
      rs_kill_tree "$pid"
    elif grep -qzE -- "^$RS_STATE/spool/.*/slurm_script\$" "$p/cmdline" 2>/dev/null; then
      rs_kill_tree "$pid"
    fi
  done
  # 4. Job cgroups: slurmstepd removes a job's cgroups when the job ends, but
  #    the per-node roots (slurm_<node>/uid_<U>) stay. Remove this cluster's,
  #    deepest first, once no process is left in them; rmdir never removes a
  #    cgroup that still has a process.
  rs_remove_cgroups
  rs_unmount_cgroup2
  # 5. Accounting, database, munge last (everything above needs it).
  for f in slurmdbd mariadbd munged; do rs_stop_pidfile "$RS_RUN/$f.pid"; done
  # 6. Anything else still carrying our tag (e.g. a slurmd a test restarted by hand).
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    rs_is_ours "$pid" && rs_kill_tree "$pid"
  done
  return 0
}

# The job cgroup roots this cluster's slurmd create: v1 <controller>/slurm_<node>, v2
# system.slice/<node>_slurmstepd.scope (with its slurmd/, system/ and SLUID directories).
rs_cgroup_roots() {
  local i scope
  for ((i = 1; i <= RS_NODES; i++)); do
    case $RS_CGROUP in
      v1) compgen -G "$RS_CGROUP_ROOT/*/slurm_$RS_PREFIX$i" || true ;;
      v2)
        scope=$RS_CGROUP_ROOT/system.slice/${RS_PREFIX}${i}_slurmstepd.scope
        if [ -d "$scope" ]; then echo "$scope"; fi ;;
    esac
  done
  return 0
}

# cgroup v2 in a chroot: the host's cgroup2 hierarchy at /sys/fs/cgroup, unless it is one already.
# The marker in the state dir says this cluster mounted it, so down.sh unmounts only its own.
RS_CG2_MARK=$RS_STATE/cgroup2-mounted
rs_mount_cgroup2() {
  [ "$RS_CGROUP" = v2 ] || return 0
  [ "$(stat -f -c %T "$RS_CGROUP_ROOT")" = cgroup2fs ] && return 0
  # Never over the host's own /sys/fs/cgroup: only from the copy chroot.sh put in its chroot,
  # and not where / is PID 1's root (when that can be read).
  local here host
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  host=$(stat -L -c %d:%i /proc/1/root 2>/dev/null) || host=
  if [ "$here" != /opt/slurm-otel/real-slurm ] || [ "$host" = "$(stat -c %d:%i /)" ]; then
    rs_die "REAL_SLURM_CGROUP=v2 on a hybrid host runs only inside chroot.sh's chroot"
  fi
  mount -t cgroup2 none "$RS_CGROUP_ROOT" || rs_die "could not mount cgroup2 at $RS_CGROUP_ROOT"
  : >"$RS_CG2_MARK"
}

rs_unmount_cgroup2() {
  [ -e "$RS_CG2_MARK" ] || return 0
  umount "$RS_CGROUP_ROOT" 2>/dev/null || umount -l "$RS_CGROUP_ROOT" || true
  rm -f "$RS_CG2_MARK"
}

rs_remove_cgroups() {
  local root d
  while read -r root; do
    [ -n "$root" ] || continue
    while read -r d; do
      rmdir "$d" 2>/dev/null || echo "[real-slurm] could not remove cgroup $d (a process is still in it?)" >&2
    done < <(find "$root" -depth -type d)
  done < <(rs_cgroup_roots)
  return 0
}

# rs_start_mariadb DIR: a private mariadbd with its data in DIR/data, on 127.0.0.1:$RS_DB_PORT,
# with user slurm (password $RS_DB_PASS) allowed on slurm_acct_db. Used by up.sh (REAL_SLURM_DBD=1)
# and by db.sh (a host MariaDB for the chroot clusters). --no-defaults: ignore /etc/mysql (the
# host's server, if any, keeps its own socket/port); a small buffer pool keeps it CI-friendly.
rs_start_mariadb() {
  local dir=$1 dl
  mkdir -p "$dir"
  mariadb-install-db --no-defaults --user=root --datadir="$dir/data" \
    --auth-root-authentication-method=normal --skip-test-db >"$RS_LOG/mariadb-install.log" 2>&1 \
    || rs_die "mariadb-install-db failed; see $RS_LOG/mariadb-install.log"
  rs_launch mariadbd mariadbd --no-defaults --user=root --datadir="$dir/data" \
    --socket="$dir/mysqld.sock" --port="$RS_DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
    --pid-file="$RS_RUN/own/mariadbd.pid" --innodb-buffer-pool-size=32M --log-error="$RS_LOG/mariadbd.log"
  dl=$(( $(date +%s) + RS_TIMEOUT ))
  until mariadb-admin --no-defaults --socket="$dir/mysqld.sock" -uroot ping >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$dl" ]; then
      tail -n 25 "$RS_LOG/mariadbd.log" >&2 2>/dev/null || true
      rs_die "mariadbd not answering within ${RS_TIMEOUT}s; logs in $RS_LOG/"
    fi
    sleep 0.2
  done
  mariadb --no-defaults --socket="$dir/mysqld.sock" -uroot -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$RS_DB_PASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}
