#!/usr/bin/env bash
# A private MariaDB on the HOST for a cluster that runs in a chroot (chroot.sh): 26.05's slurmdbd
# stops at start with sid's MariaDB 11.8 ("_check_mysql_concat_is_sane"), Debian 12's 10.11 works.
#
#   db.sh up     start mariadbd on 127.0.0.1:$REAL_SLURM_DB_PORT (default 23306 + offset)
#   db.sh down   stop it (only the pid it recorded, checked by its tag) and drop its data
#                (about 100 MB); the logs stay until the next `up`
#   db.sh down --wipe
#                the same, and the whole state dir with its logs (a run's own, not to be reused)
#
# Its state dir is "$REAL_SLURM_STATE-db" (own marker, lock, logs, pid files), so the cluster's
# up.sh, which recreates its own state dir, never touches it. Give the cluster's up.sh
# REAL_SLURM_DBD=1 REAL_SLURM_DB_EXTERNAL=<that port>. Knobs: see lib.sh.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REAL_SLURM_STATE="${REAL_SLURM_STATE:-/tmp/slurm-otel-real-slurm}-db"
# shellcheck source=lib.sh
. "$HERE/lib.sh"
rs_validate
rs_trace
[ "$(id -u)" = 0 ] || rs_die "must run as root"

case "${1:-}" in
  up)
    command -v mariadbd >/dev/null || rs_die "mariadbd is missing on the host (apt-get install mariadb-server)"
    mkdir -p "$RS_STATE"
    if [ ! -e "$RS_MARKER" ] && [ -n "$(find "$RS_STATE" -mindepth 1 -maxdepth 1 ! -name .lock -print -quit)" ]; then
      rs_die "$RS_STATE exists, is not empty and was not created by these scripts; refusing to use it"
    fi
    touch "$RS_MARKER"
    exec 9>"$RS_STATE/.lock"
    flock -w 180 9 || rs_die "another db.sh holds $RS_STATE/.lock"
    rs_stop_pidfile "$RS_RUN/mariadbd.pid"
    find "$RS_STATE" -mindepth 1 -maxdepth 1 ! -name .lock ! -name "$(basename "$RS_MARKER")" -exec rm -rf {} +
    mkdir -p "$RS_RUN/own" "$RS_LOG"
    rs_port_busy "$RS_DB_PORT" && rs_die "127.0.0.1:$RS_DB_PORT is already in use"
    rs_start_mariadb "$RS_STATE/mysql"
    echo "[real-slurm db] mariadbd up on 127.0.0.1:$RS_DB_PORT" >&2
    ;;
  down)
    [ -e "$RS_MARKER" ] || exit 0
    exec 9>"$RS_STATE/.lock"
    flock -w 180 9 || rs_die "another db.sh holds $RS_STATE/.lock"
    rs_stop_pidfile "$RS_RUN/mariadbd.pid"
    rm -rf -- "$RS_STATE/mysql"
    if [ "${2:-}" = --wipe ]; then rm -rf -- "$RS_STATE"; fi
    ;;
  *) echo "usage: $0 up|down [--wipe]" >&2; exit 2 ;;
esac
