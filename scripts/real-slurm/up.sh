#!/usr/bin/env bash
# Start a throw-away, single-host Slurm 22.05 (Debian 12 packages) on loopback
# for slurm-otel's integration tests and CI:
#
#   munged (private key + socket) -> slurmctld -> N x `slurmd -D -N <prefix>X`
#   -> slurmrestd (JWT auth) on 127.0.0.1:$REAL_SLURM_REST_PORT
#   [+ mariadbd + slurmdbd with REAL_SLURM_DBD=1]
#
# Everything lives under $REAL_SLURM_STATE (default /tmp/slurm-otel-real-slurm).
# Must run as root. Safe to run again: a cluster started earlier from the same
# state dir is stopped first (by its pid files) and the state dir is recreated.
# On success writes $REAL_SLURM_STATE/env (shell syntax, `export K=V` lines):
#   SLURM_CONF SLURM_REST_URL SLURM_REST_USER SLURM_REST_TOKEN SLURM_JWT_KEY
#   REAL_SLURM_STATE REAL_SLURM_WORKDIR
# Knobs: see lib.sh. Stop with down.sh.
set -euo pipefail
# A SLURM_JWT in our own environment would make the slurm clients used below
# authenticate with that (stale) token instead of munge; drop it right away.
# The daemons get a clean environment anyway (rs_env in lib.sh).
unset SLURM_JWT

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
rs_validate
rs_trace

T_START=$(date +%s%N)
say() { printf '[real-slurm up +%5.1fs] %s\n' "$(( ($(date +%s%N) - T_START) / 1000000 ))e-3" "$*" >&2; }

[ "$(id -u)" = 0 ] || rs_die "must run as root (it starts slurmctld/slurmd as SlurmUser=root and installs packages); try: sudo $0"
command -v flock >/dev/null || rs_die "flock (util-linux) is missing"

# ---------------------------------------------------------------- packages
INSTALL_LOCK=/run/lock/slurm-otel-real-slurm-install.lock
[ -d /run/lock ] || INSTALL_LOCK=/tmp/slurm-otel-real-slurm-install.lock
PKGS=(slurmctld slurmd slurmrestd slurm-wlm-jwt-plugin munge slurm-client curl)
[ "$RS_DBD" = 1 ] && PKGS+=(slurmdbd)
[ "$RS_DBD" = 1 ] && [ -z "$RS_DB_EXTERNAL" ] && PKGS+=(mariadb-server)
missing=()
for p in "${PKGS[@]}"; do
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "${REAL_SLURM_INSTALL:-1}" = 1 ] || rs_die "missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]}, or unset REAL_SLURM_INSTALL=0)"
  command -v apt-get >/dev/null || rs_die "missing packages ${missing[*]} and no apt-get (Debian 12 expected)"
  say "installing ${missing[*]} (apt-get update + install)"
  # Two parallel up.sh runs (e.g. two vitest workers) would race on apt and on
  # useradd; serialise them on a machine-wide lock. DPkg::Lock::Timeout covers
  # other apt users (unattended-upgrades on CI images).
  (
    flock -w 900 8 || rs_die "timed out waiting for $INSTALL_LOCK"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  ) 8>"$INSTALL_LOCK"
  say "packages installed"
fi
T_START=$(date +%s%N)   # the timings below exclude package installation

# ---------------------------------------------------------------- state dir + lock
if [ "$RS_FRESH" = 1 ] && [ -e "$RS_STATE" ]; then
  rs_die "$RS_STATE already exists and REAL_SLURM_FRESH=1 asks for a new one (another cluster's state dir, or a leftover of a run that was never stopped: down.sh --wipe with REAL_SLURM_STATE=$RS_STATE)"
fi
mkdir -p "$RS_STATE"
if [ ! -e "$RS_MARKER" ] && [ -n "$(find "$RS_STATE" -mindepth 1 -maxdepth 1 ! -name .lock -print -quit)" ]; then
  rs_die "$RS_STATE exists, is not empty and was not created by these scripts; refusing to use it"
fi
touch "$RS_MARKER"
# One up/down at a time per state dir. fd 9 must NOT leak into the daemons
# (every launch below closes it with 9>&-), or they would hold the lock forever
# and the next up.sh would wait for it until its timeout.
exec 9>"$RS_STATE/.lock"
flock -w 180 9 || rs_die "another up.sh/down.sh holds $RS_STATE/.lock for > 180 s"

if compgen -G "$RS_RUN/*.pid" >/dev/null; then
  say "stopping the previous cluster of $RS_STATE"
  rs_stop
fi
# Recreate the state (logs of the previous run go too: a fresh cluster each time).
find "$RS_STATE" -mindepth 1 -maxdepth 1 ! -name .lock ! -name "$(basename "$RS_MARKER")" -exec rm -rf {} +
mkdir -p "$RS_ETC" "$RS_RUN/own" "$RS_LOG" "$RS_STATE/ctld" "$RS_STATE/spool" "$RS_STATE/dev" "$RS_STATE/work"
chmod 755 "$RS_STATE" "$RS_ETC"
# work/: a scratch cwd for sbatch, whose jobs write slurm-<id>.out into the
# submit directory; the test helper submits from here, not from the repo.
chmod 1777 "$RS_STATE/work"

# From here on, any failure stops what this run started; the logs stay.
on_exit() {
  local rc=$?
  [ "$rc" -eq 0 ] && return 0
  echo "[real-slurm up] FAILED (exit $rc); logs: $RS_LOG/; stopping what was started" >&2
  rs_stop
}
trap on_exit EXIT

deadline() { echo $(( $(date +%s) + $1 )); }
# Explain and fail, naming the log files to read.
fail_with_logs() {
  local msg=$1 f; shift
  {
    echo "[real-slurm up] $msg"
    for f in "$@"; do [ -s "$f" ] && { echo "---- tail $f"; tail -n 25 "$f"; }; done
    echo "[real-slurm up] full logs: $*"
  } >&2
  exit 1
}

# ---------------------------------------------------------------- preflight
# slurmctld only runs where `hostname -s` equals the SlurmctldHost name
# ("This host not a valid controller" otherwise), and Slurm resolves that name;
# a CI container whose hostname is in neither /etc/hosts nor DNS fails later in
# obscure ways, so check here and say what to do.
SHORT=$(hostname -s)
[ -n "$SHORT" ] || rs_die "hostname -s is empty"
getent hosts "$SHORT" >/dev/null || rs_die "the short hostname '$SHORT' does not resolve; add '127.0.0.1 $SHORT' to /etc/hosts"
ports=("$RS_REST_PORT" "$RS_CTLD_PORT")
for ((i = 0; i < RS_NODES; i++)); do ports+=("$((RS_SLURMD_BASE + i))"); done
[ "$RS_DBD" = 1 ] && ports+=("$RS_DBD_PORT")
[ "$RS_DBD" = 1 ] && [ -z "$RS_DB_EXTERNAL" ] && ports+=("$RS_DB_PORT")
for p in "${ports[@]}"; do
  rs_port_busy "$p" && rs_die "127.0.0.1:$p is already in use (another cluster? pick other ports with REAL_SLURM_PORT_OFFSET, a multiple of 100, or REAL_SLURM_*_PORT)"
done
# Job cgroups are named after the nodes (v1 <controller>/slurm_<node>, v2 <node>_slurmstepd.scope).
# One that exists now belongs to another Slurm with our node names (or is a leftover): its jobs
# would be taken for ours, so refuse rather than share.
for ((i = 1; i <= RS_NODES; i++)); do
  n=$RS_PREFIX$i
  for g in "$RS_CGROUP_ROOT"/*/"slurm_$n" "$RS_CGROUP_ROOT/system.slice/${n}_slurmstepd.scope" \
           "$RS_CGROUP_ROOT"/*/system.slice/"${n}_slurmstepd.scope"; do
    [ -e "$g" ] && rs_die "$g exists: another Slurm on this host (or a leftover) uses node name $n; pick another REAL_SLURM_NODE_PREFIX"
  done
done

# CgroupJobIdPaths is known from 26.05.2 on: refuse it, naming the version, before anything starts.
# An older release stops on it in slurmctld (24.11.5: "Parsing error at unrecognized key:
# CgroupJobIdPaths", then "fatal: Could not open/read/parse cgroup.conf").
if [ -n "$RS_JOBID_PATHS" ]; then
  v=$(rs_version_at_least 26 5 2) || rs_die "REAL_SLURM_CGROUP_JOBID_PATHS: CgroupJobIdPaths is known from Slurm 26.05.2 on; this slurmd is ${v:-of unknown version}"
fi

# ---------------------------------------------------------------- munge
# A private munged with its own key and socket: the host's munged (if any) and
# other clusters on this machine are left alone. Slurm finds the socket via
# AuthInfo=socket=... in slurm.conf (clients too).
MUNGE=$RS_STATE/munge
mkdir -p "$MUNGE"; chmod 700 "$MUNGE"
mungekey --create --keyfile="$MUNGE/munge.key" >/dev/null 2>&1 \
  || dd if=/dev/urandom of="$MUNGE/munge.key" bs=1024 count=1 status=none
chmod 400 "$MUNGE/munge.key"
# --force: munged otherwise refuses to start as root / with a socket dir it
# considers insecure; this key and socket are private to this test cluster.
rs_launch munged munged --foreground --force --key-file="$MUNGE/munge.key" \
  --socket="$MUNGE/munge.socket" --pid-file="$RS_RUN/own/munged.pid" \
  --seed-file="$MUNGE/munged.seed" --log-file="$RS_LOG/munged.log"
dl=$(deadline 10)
until [ -S "$MUNGE/munge.socket" ]; do
  [ "$(date +%s)" -lt "$dl" ] || fail_with_logs "munged did not create its socket within 10 s" "$RS_LOG/munged.out" "$RS_LOG/munged.log"
  sleep 0.1
done
say "munged up"

# ---------------------------------------------------------------- JWT key
# HS256 key shared by slurmctld (verifies tokens, signs `scontrol token`) and
# the tests (sign their own tokens). Readable by root and by the group in
# REAL_SLURM_READ_GROUP (default: the sudo caller's group), never by everyone:
# whoever reads it can act as root on this cluster, i.e. run jobs as root.
JWT_KEY=$RS_ETC/jwt_hs256.key
dd if=/dev/urandom of="$JWT_KEY" bs=32 count=1 status=none
READ_GROUP=${REAL_SLURM_READ_GROUP:-${SUDO_GID:-0}}
chgrp "$READ_GROUP" "$JWT_KEY"
chmod 640 "$JWT_KEY"

# ---------------------------------------------------------------- optional accounting
ACCOUNTING="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
if [ "$RS_DBD" = 1 ]; then
  DB_PORT=$RS_DB_EXTERNAL
  if [ -z "$DB_PORT" ]; then
    rs_start_mariadb "$RS_STATE/mysql"
    DB_PORT=$RS_DB_PORT
  fi
  # slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF and insists
  # on mode 600 and ownership by SlurmUser.
  cat >"$RS_ETC/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE/munge.socket
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$JWT_KEY
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$RS_DBD_PORT
SlurmUser=root
LogFile=$RS_LOG/slurmdbd.log
PidFile=$RS_RUN/own/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$RS_DB_PASS
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$RS_ETC/slurmdbd.conf"
  rs_launch slurmdbd slurmdbd -D
  say "slurmdbd started (MariaDB on 127.0.0.1:$DB_PORT)"
  ACCOUNTING="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$RS_DBD_PORT
# With slurmdbd, this names the munge socket for slurmctld <-> slurmdbd;
# left empty Slurm would use the host's default munge socket, not ours.
AccountingStoragePass=$MUNGE/munge.socket
AccountingStorageTRES=gres/gpu,gres/gpu:tesla
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=10"
fi
if [ "$RS_JOBACCT" = cgroup ]; then
  [ "$RS_CGROUP" != none ] || rs_die "REAL_SLURM_JOBACCT=cgroup needs REAL_SLURM_CGROUP=v1 or v2"
  ACCOUNTING=$(printf '%s\n' "$ACCOUNTING" | sed 's|^JobAcctGatherType=.*|JobAcctGatherType=jobacct_gather/cgroup|')
elif [ -n "$RS_JOBACCT" ]; then
  rs_die "REAL_SLURM_JOBACCT must be cgroup or unset (got '$RS_JOBACCT')"
fi

# ---------------------------------------------------------------- slurm.conf + gres.conf
# Process tracking. none: track processes by pid tree, no task binding or
# device confinement (works in containers and CI runners without cgroup
# delegation). v1: real job cgroups, made by slurmstepd, as on a production
# node: proctrack/cgroup + task/cgroup, and a cgroup.conf beside slurm.conf.
# ConstrainRAMSpace puts jobs under `memory` as well as `freezer`; devices stay
# unconstrained because the fake GPUs are plain files.
if [ "$RS_CGROUP" = v1 ]; then
  for c in freezer memory; do
    [ -f "$RS_CGROUP_ROOT/$c/cgroup.procs" ] || rs_die "REAL_SLURM_CGROUP=v1 needs the v1 '$c' controller mounted at $RS_CGROUP_ROOT/$c"
  done
  TRACKING="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup"
  cat >"$RS_ETC/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=$RS_CGROUP_ROOT
ConstrainCores=$RS_CONSTRAIN_CORES
ConstrainRAMSpace=yes
ConstrainDevices=$RS_CONSTRAIN_DEVICES
EOF
  chmod 644 "$RS_ETC/cgroup.conf"
elif [ "$RS_CGROUP" = v2 ]; then
  [ -n "$RS_PRELOAD" ] || rs_die "REAL_SLURM_CGROUP=v2 needs REAL_SLURM_PRELOAD (cg2only.so) on a hybrid host"
  rs_mount_cgroup2
  TRACKING="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup"
  # No memory constraint: a hybrid host's memory controller is bound to its v1 hierarchy.
  cat >"$RS_ETC/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v2
CgroupMountpoint=$RS_CGROUP_ROOT
IgnoreSystemd=yes
ConstrainCores=$RS_CONSTRAIN_CORES
ConstrainRAMSpace=no
ConstrainDevices=$RS_CONSTRAIN_DEVICES
EOF
  # 26.05 names job directories by SLUID; CgroupJobIdPaths=yes names them job_<id> (preflight
  # checked the version).
  if [ -n "$RS_JOBID_PATHS" ]; then echo "CgroupJobIdPaths=$RS_JOBID_PATHS" >>"$RS_ETC/cgroup.conf"; fi
  chmod 644 "$RS_ETC/cgroup.conf"
else
  TRACKING="ProctrackType=proctrack/linuxproc
TaskPlugin=task/none"
  # From 23.02 slurmd otherwise autodetects the cgroup version from /sys/fs/cgroup, which a cgroup/v2
  # run mounts in the same chroot: a cluster starting meanwhile would stop ("Hybrid mode is not
  # supported"). 22.05 has no "disabled" and runs on the host, untouched by such a mount.
  if [ "$(rs_env slurmctld -V | awk '{split($2, v, "."); print v[1]}')" -ge 23 ]; then
    printf 'CgroupPlugin=disabled\n' >"$RS_ETC/cgroup.conf"
    chmod 644 "$RS_ETC/cgroup.conf"
  fi
fi
HALF=$(( (RS_NODES + 1) / 2 ))
CPU_NODES=$(seq -s, -f "$RS_PREFIX%g" 1 "$HALF")
GPU_NODES=$(seq -s, -f "$RS_PREFIX%g" "$((HALF + 1))" "$RS_NODES")
{
  cat <<EOF
# Generated by slurm-otel scripts/real-slurm/up.sh -- throw-away test cluster.
ClusterName=$RS_CLUSTER
FirstJobId=$RS_FIRST_JOB_ID
# Must be this machine's short hostname; the address pins it to loopback.
SlurmctldHost=$SHORT(127.0.0.1)
SlurmctldPort=$RS_CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE/munge.socket
CredType=cred/munge
# JWT as the alternative auth type: slurmrestd forwards the clients' tokens.
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$JWT_KEY
StateSaveLocation=$RS_STATE/ctld
SlurmdSpoolDir=$RS_STATE/spool/%n
SlurmctldPidFile=$RS_RUN/own/slurmctld.pid
SlurmdPidFile=$RS_RUN/own/slurmd-%n.pid
SlurmctldLogFile=$RS_LOG/slurmctld.log
SlurmdLogFile=$RS_LOG/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
$TRACKING
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Nodes declare 4 CPUs / 8000 MB whatever the host has (all N share one host).
SlurmdParameters=config_overrides
# Without a default, a job that gives no --mem is allocated the node's whole
# memory under CR_Core_Memory, so a second job never fits on that node.
DefMemPerCPU=1000
SchedulerType=sched/backfill
# Schedule every 2 s instead of every 60 s / 30 s, so a resumed node or freed
# resources show up in job states quickly.
SchedulerParameters=sched_interval=2,bf_interval=2
# A node that was DOWN (e.g. its slurmd was killed by a test) returns to
# service as soon as its slurmd registers again.
ReturnToService=2
# How fast a killed slurmd shows: slurmctld's pings to it fail only after
# MessageTimeout (connect retries), so both matter. Measured with 10 / 5:
# NOT_RESPONDING ("idle*") after ~13 s, DOWN after ~21 s (with 10 / 10:
# ~18 s / ~31 s; Slurm's defaults 300 / 10: minutes). Loopback RPCs need far
# less than 5 s unless the machine is badly overloaded.
SlurmdTimeout=$RS_SLURMD_TIMEOUT
MessageTimeout=$RS_MESSAGE_TIMEOUT
SlurmctldTimeout=120
# Finished jobs stay visible in squeue / REST /jobs for MinJobAge seconds.
MinJobAge=$RS_MIN_JOB_AGE
KillWait=2
InactiveLimit=0
Waittime=0
# Do not try to apply the submitter's ulimits on the (same) host.
PropagateResourceLimits=NONE
GresTypes=gpu
$ACCOUNTING
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
EOF
  if [ -n "${REAL_SLURM_EXTRA_CONF:-}" ]; then printf '%s\n' "$REAL_SLURM_EXTRA_CONF"; fi
  echo "NodeName=DEFAULT CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN"
  # All slurmd run on this host: same NodeHostname, one port each.
  for ((i = 1; i <= RS_NODES; i++)); do
    gres=""; [ "$i" -gt "$HALF" ] && gres=" Gres=gpu:tesla:2"
    echo "NodeName=$RS_PREFIX$i NodeHostname=$SHORT NodeAddr=127.0.0.1 Port=$((RS_SLURMD_BASE + i - 1))$gres"
  done
  echo "PartitionName=cpu Nodes=$CPU_NODES Default=YES MaxTime=INFINITE State=UP"
  echo "PartitionName=gpu Nodes=$GPU_NODES MaxTime=INFINITE State=UP"
} >"$RS_CONF"
# Slurm 22.05 ignores GPUs without File= (Count= only), so each fake GPU is a
# plain file; the digit in its name is the device index. slurmd logs "is not a
# valid character or block device" for them: harmless without ConstrainDevices. With
# REAL_SLURM_GPU_MINORS they are character devices at 195:<minor> instead, one line each, in the
# order given (Slurm numbers its GRES in that order, not by minor). AutoDetect=off: never probe
# NVML on the host.
if [ -n "$RS_GPU_MINORS" ]; then
  gres_lines=""
  for m in ${RS_GPU_MINORS//,/ }; do
    [ -e "$RS_STATE/dev/nvidia$m" ] || mknod -m 666 "$RS_STATE/dev/nvidia$m" c 195 "$m"
    gres_lines+="NodeName=$GPU_NODES Name=gpu Type=tesla File=$RS_STATE/dev/nvidia$m"$'\n'
  done
else
  touch "$RS_STATE/dev/nvidia0" "$RS_STATE/dev/nvidia1"
  gres_lines="NodeName=$GPU_NODES Name=gpu Type=tesla File=$RS_STATE/dev/nvidia[0-1]"$'\n'
fi
printf 'AutoDetect=off\n%s' "$gres_lines" >"$RS_ETC/gres.conf"
chmod 644 "$RS_CONF" "$RS_ETC/gres.conf"

if [ "$RS_DBD" = 1 ]; then
  dl=$(deadline "$RS_TIMEOUT")
  until rs_env timeout 5 sacctmgr -n list cluster >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$dl" ] || fail_with_logs "slurmdbd not answering" "$RS_LOG/slurmdbd.out" "$RS_LOG/slurmdbd.log"
    sleep 0.3
  done
  rs_env timeout 10 sacctmgr -i add cluster "$RS_CLUSTER" >/dev/null 2>&1 || true
  say "slurmdbd up, cluster registered"
fi

# ---------------------------------------------------------------- slurmctld
# -i: start even if (absent) state files cannot be read.
rs_launch slurmctld slurmctld -D -i -f "$RS_CONF"
dl=$(deadline "$RS_TIMEOUT")
# NB: no `scontrol ping | grep -q` under pipefail: grep -q exits early and
# the SIGPIPE of scontrol would make the test fail even on a match.
until [[ $(rs_env timeout 5 scontrol ping 2>/dev/null || true) == *"is UP"* ]]; do
  rs_is_ours "$(cat "$RS_RUN/slurmctld.pid")" || fail_with_logs "slurmctld exited" "$RS_LOG/slurmctld.out" "$RS_LOG/slurmctld.log"
  [ "$(date +%s)" -lt "$dl" ] || fail_with_logs "slurmctld not answering 'scontrol ping' within ${RS_TIMEOUT}s" "$RS_LOG/slurmctld.out" "$RS_LOG/slurmctld.log"
  sleep 0.2
done
say "slurmctld up on 127.0.0.1:$RS_CTLD_PORT"

# ---------------------------------------------------------------- slurmd x N
# -N gives each slurmd its node name, so N of them share this one host.
for ((i = 1; i <= RS_NODES; i++)); do
  mkdir -p "$RS_STATE/spool/$RS_PREFIX$i"
  rs_launch "slurmd-$RS_PREFIX$i" slurmd -D -N "$RS_PREFIX$i" -f "$RS_CONF"
done
say "slurmd started for ${RS_PREFIX}1..$RS_PREFIX$RS_NODES"

# ---------------------------------------------------------------- slurmrestd
# slurmrestd refuses to run as root or as SlurmUser (root here): start it as
# root and let it drop to an unprivileged system account with -u/-g.
# SLURM_JWT=daemon (in its environment only) makes slurmrestd talk to
# slurmctld with auth/jwt, passing each request's X-SLURM-USER-TOKEN through;
# without it slurmrestd uses munge and every request fails (401/"Rejecting").
if ! id "$RS_REST_ACCOUNT" >/dev/null 2>&1; then
  (
    flock -w 60 8 || true
    id "$RS_REST_ACCOUNT" >/dev/null 2>&1 ||
      useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$RS_REST_ACCOUNT"
  ) 8>"$INSTALL_LOCK"
fi
# The /slurmdb/* plugins abort slurmrestd unless accounting uses slurmdbd.
# Newer releases name their plugins differently (REAL_SLURM_REST_PLUGINS, see lib.sh).
PLUGINS=$RS_REST_PLUGINS
if [ -z "$PLUGINS" ]; then
  PLUGINS=openapi/v0.0.36,openapi/v0.0.37,openapi/v0.0.38
  [ "$RS_DBD" = 1 ] && PLUGINS+=,openapi/dbv0.0.36,openapi/dbv0.0.37,openapi/dbv0.0.38
fi
rs_launch slurmrestd env SLURM_JWT=daemon slurmrestd -f "$RS_CONF" -u "$RS_REST_ACCOUNT" -g "$RS_REST_ACCOUNT" \
  -a rest_auth/jwt -s "$PLUGINS" "127.0.0.1:$RS_REST_PORT"

# ---------------------------------------------------------------- readiness
dl=$(deadline "$RS_TIMEOUT")
while :; do
  states=$(rs_env timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null || true)
  idle=$(awk '$2 == "idle"' <<<"$states" | wc -l)
  [ "$idle" -ge "$RS_NODES" ] && break
  if [ "$(date +%s)" -ge "$dl" ]; then
    echo "[real-slurm up] nodes (sinfo -N):" >&2; echo "$states" >&2
    fail_with_logs "not all $RS_NODES nodes idle within ${RS_TIMEOUT}s" "$RS_LOG/slurmd-${RS_PREFIX}1.out" "$RS_LOG/slurmd-${RS_PREFIX}1.log" "$RS_LOG/slurmctld.log"
  fi
  sleep 0.3
done
say "all $RS_NODES nodes idle"

TOKEN=$(rs_env timeout 10 scontrol token username=root lifespan="$RS_TOKEN_LIFESPAN" 2>>"$RS_LOG/up.err" | sed -n 's/^SLURM_JWT=//p')
[ -n "$TOKEN" ] || fail_with_logs "scontrol token failed (is slurm-wlm-jwt-plugin installed?)" "$RS_LOG/up.err" "$RS_LOG/slurmctld.log"

REST_URL=http://127.0.0.1:$RS_REST_PORT
dl=$(deadline "$RS_TIMEOUT")
code=000
while :; do
  # Slurm 22.05's rest_auth/jwt insists on X-SLURM-USER-NAME next to the token
  # (token alone: 401 "missing header user name"); later versions made it optional.
  code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -H "X-SLURM-USER-NAME: root" \
    -H "X-SLURM-USER-TOKEN: $TOKEN" "$REST_URL/slurm/$RS_PING_VERSION/ping" || true)
  [ "$code" = 200 ] && break
  # 401 means slurmrestd is up but rejects our credentials: waiting will not help.
  [ "$code" = 401 ] && fail_with_logs "slurmrestd answered 401 to a fresh root token" "$RS_LOG/slurmrestd.out" "$RS_LOG/slurmctld.log"
  rs_is_ours "$(cat "$RS_RUN/slurmrestd.pid")" || fail_with_logs "slurmrestd exited" "$RS_LOG/slurmrestd.out"
  [ "$(date +%s)" -lt "$dl" ] || fail_with_logs "slurmrestd did not answer 200 on $REST_URL/slurm/$RS_PING_VERSION/ping (last HTTP $code)" "$RS_LOG/slurmrestd.out"
  sleep 0.2
done
say "slurmrestd answering on $REST_URL"

# ---------------------------------------------------------------- env file
# Written atomically (tests may poll for it); 0640 because it holds a root token.
# The token is exported as SLURM_REST_TOKEN, deliberately not as SLURM_JWT (see top).
umask 027
cat >"$RS_STATE/env.tmp" <<EOF
export REAL_SLURM_STATE=$RS_STATE
export SLURM_CONF=$RS_CONF
export SLURM_REST_URL=$REST_URL
export SLURM_REST_USER=root
export SLURM_REST_TOKEN=$TOKEN
export SLURM_JWT_KEY=$JWT_KEY
export REAL_SLURM_WORKDIR=$RS_STATE/work
export REAL_SLURM_CTLD_PORT=$RS_CTLD_PORT
export REAL_SLURM_SLURMCTLD_VERSION=$(rs_env slurmctld -V | awk '{print $2}')
EOF
chgrp "$READ_GROUP" "$RS_STATE/env.tmp"
mv -f "$RS_STATE/env.tmp" "$RS_STATE/env"
say "ready: . $RS_STATE/env  (REST $REST_URL, slurmctld 127.0.0.1:$RS_CTLD_PORT, slurmd from $RS_SLURMD_BASE)"
