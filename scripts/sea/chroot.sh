#!/usr/bin/env bash
# A Debian trixie chroot with no Node in it, where the single executable and the .deb are proved:
#
#   chroot.sh                     make (or reuse) the chroot; prints its path
#   chroot.sh run DIR CMD [ARG...]   run CMD in a throw-away copy of it (see below)
#
# The chroot lives at ${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}/nonode-trixie, outside any
# clone, and is reused when present. Made with `debootstrap --variant=minbase` from debootstrap's
# default mirror, as scripts/real-slurm/chroot.sh makes its own (under a minute, about 200 MB), plus
# systemd-standalone-sysusers: what a Debian system without systemd has to create the package's
# system user (the .deb depends on a sysusers provider, as Debian's packages do). Nothing else:
# no Node, no npm.
#
# `run` never writes into the cached chroot: DIR/root is an overlay whose lower layer is the
# chroot and whose upper layer is DIR/upper (files put there beforehand appear inside; what CMD
# writes stays there, so a second `run` with the same DIR sees a `dpkg -i` of the first). The
# overlay, /proc and /dev exist only in a private mount namespace that ends with CMD: nothing is
# left mounted whatever happens. CMD runs as the same process (exec all the way down), so a
# signal sent to this script's process reaches it. Needs root.
set -euo pipefail
die() { echo "[sea chroot] ERROR: $*" >&2; exit 1; }
say() { echo "[sea chroot] $*" >&2; }

CACHE=${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}
[[ $CACHE =~ ^/[A-Za-z0-9._/-]+$ ]] || die "SLURM_OTEL_CHROOT_CACHE must be an absolute plain path (got '$CACHE')"
R=$CACHE/nonode-trixie
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, mount, chroot)"

# The marker is written last: a chroot without it is never taken for a complete one.
complete() { [ -f "$R/.slurm-otel-complete" ]; }

make_chroot() {
  mkdir -p "$CACHE"
  # Several test files may call this at once: one makes the chroot, the others wait.
  exec 8>"$CACHE/.nonode-trixie.lock"
  flock -w 900 8 || die "timed out waiting for $CACHE/.nonode-trixie.lock"
  if ! complete; then
    command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install -y debootstrap"
    # Built aside and renamed when complete: an interrupted run never leaves a half chroot.
    local tmp=$R.partial log=$CACHE/nonode-trixie.debootstrap.log
    rm -rf -- "$tmp"
    mkdir -p "$tmp"
    say "debootstrap trixie into $R (under a minute)"
    if ! debootstrap --variant=minbase --include=systemd-standalone-sysusers trixie "$tmp" >"$log" 2>&1; then
      tail -n 8 "$log" >&2
      rm -rf -- "$tmp"
      die "could not make the trixie chroot: Debian's archive unreachable or a package missing" \
        "(log: $log; a proxy goes in http_proxy)"
    fi
    # Proof that the chroot has no Node: the tests rely on it.
    [ -z "$(find "$tmp" -xdev -name node -type f -perm -u+x -print -quit)" ] || die "the new chroot holds a node binary"
    touch "$tmp/.slurm-otel-complete"
    rm -rf -- "$R"
    mv -- "$tmp" "$R"
  fi
  exec 8>&-
}

case ${1:-} in
  '')
    make_chroot
    echo "$R"
    ;;
  run)
    [ $# -ge 3 ] || die "usage: $0 run DIR CMD [ARG...]"
    dir=$2
    shift 2
    complete || die "no chroot at $R: run $0 first"
    [[ $dir = /* ]] || die "DIR must be absolute (got '$dir')"
    mkdir -p "$dir/upper" "$dir/work" "$dir/root"
    # The mounts below are made in the new namespace only; the last exec replaces the shell by CMD.
    exec unshare --mount --propagation private -- /bin/bash -euc '
      r=$1/root
      mount -t overlay overlay -o "lowerdir=$2,upperdir=$1/upper,workdir=$1/work" "$r"
      mount -t proc proc "$r/proc"
      mount --rbind /dev "$r/dev"
      shift 2
      exec chroot "$r" "$@"
    ' sea-chroot "$dir" "$R" "$@"
    ;;
  *) die "usage: $0 [run DIR CMD [ARG...]]" ;;
esac
