#!/usr/bin/env bash
# Stop the cluster that up.sh started from $REAL_SLURM_STATE (default
# /tmp/slurm-otel-real-slurm). Only processes recorded in its pid files (and
# their job steps, recognised by a tag in their environment) are signalled;
# never anything found by name, so the host's own Slurm/munge and other
# clusters on this machine are untouched.
#
#   down.sh          stop; keep the state dir (logs, config) for post-mortems
#   down.sh --wipe   stop and delete the state dir (only if up.sh created it)
set -uo pipefail
unset SLURM_JWT   # would switch the scancel/squeue below to JWT auth (see up.sh)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
rs_validate
rs_trace

wipe=0
case "${1:-}" in
  --wipe) wipe=1 ;;
  "") ;;
  *) echo "usage: $0 [--wipe]" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || rs_die "must run as root (the daemons run as root)"
if [ ! -d "$RS_STATE" ]; then
  echo "[real-slurm down] nothing to do: $RS_STATE does not exist" >&2
  exit 0
fi
[ -e "$RS_MARKER" ] || rs_die "$RS_STATE was not created by up.sh; not touching it"

# Same lock as up.sh: never stop a cluster while another run is starting it.
exec 9>"$RS_STATE/.lock"
flock -w 180 9 || rs_die "another up.sh/down.sh holds $RS_STATE/.lock for > 180 s"
rs_stop
rm -f "$RS_STATE/env"   # its token and URL point at nothing now
if [ "$wipe" = 1 ]; then
  # Path was validated (absolute, plain characters, not a system dir) and carries our marker.
  rm -rf -- "$RS_STATE"
  echo "[real-slurm down] removed $RS_STATE" >&2
fi
echo "[real-slurm down] done" >&2
