#!/usr/bin/env bash
# Stop or (re)start one node's slurmd of the cluster up.sh started, to let a
# test watch a node go NOT_RESPONDING -> DOWN and come back:
#
#   slurmd.sh stop  node4   # SIGTERM its slurmd (running job steps keep running)
#   slurmd.sh start node4   # start it again; ReturnToService=2 makes it idle again
#
# Uses the same state dir / knobs as up.sh (REAL_SLURM_STATE, see lib.sh).
set -euo pipefail
unset SLURM_JWT   # see up.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
rs_validate
rs_trace

action=${1:-}; node=${2:-}
[[ $action =~ ^(start|stop)$ && $node =~ ^${RS_PREFIX}[0-9]+$ ]] || { echo "usage: $0 start|stop ${RS_PREFIX}N" >&2; exit 2; }
[ "$(id -u)" = 0 ] || rs_die "must run as root"
{ [ -f "$RS_CONF" ] && [ -e "$RS_MARKER" ]; } || rs_die "no cluster in $RS_STATE (run up.sh)"
grep -q "^NodeName=$node " "$RS_CONF" || rs_die "$node is not a node of $RS_CONF"
exec 9>"$RS_STATE/.lock"
flock -w 60 9 || rs_die "$RS_STATE/.lock busy for > 60 s"

pidfile=$RS_RUN/slurmd-$node.pid
case $action in
  stop)
    rs_stop_pidfile "$pidfile"
    ;;
  start)
    if [ -f "$pidfile" ] && rs_is_ours "$(cat "$pidfile")"; then
      echo "[real-slurm] slurmd of $node already runs (pid $(cat "$pidfile"))" >&2
      exit 0
    fi
    rs_launch "slurmd-$node" slurmd -D -N "$node" -f "$RS_CONF"
    for ((i = 0; i < 50; i++)); do
      rs_is_ours "$(cat "$pidfile")" || { tail -n 20 "$RS_LOG/slurmd-$node.out" >&2; rs_die "slurmd of $node exited; see $RS_LOG/slurmd-$node.{out,log}"; }
      # started once it listens on its port
      rs_port_busy "$(sed -n "s/^NodeName=$node .* Port=\([0-9]*\).*/\1/p" "$RS_CONF")" && break
      sleep 0.1
    done
    echo "[real-slurm] started slurmd of $node (pid $(cat "$pidfile"))" >&2
    ;;
esac
