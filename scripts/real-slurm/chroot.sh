#!/usr/bin/env bash
# Make (or reuse) a Debian chroot holding a newer Slurm from Debian's own archive,
# for running the scripts of this directory against it (Debian 12 ships 22.05 only;
# installing trixie's or sid's Slurm on the host would replace its libc):
#
#   chroot.sh trixie   -> Slurm 24.11 (data parsers v0.0.40-v0.0.42)
#   chroot.sh sid      -> Slurm 26.05 (v0.0.42-v0.0.45, metrics/openmetrics)
#   chroot.sh <release> --unmount   -> undo the bind mounts (the chroot stays cached)
#
# The chroot lives at ${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}/<release>, outside any
# clone, and is reused when it already holds slurmctld, slurmdbd and slurmrestd. Made with
# `debootstrap --variant=minbase` from debootstrap's default mirror (about 90 s, 300 MB).
# Each run then (idempotently) bind-mounts /proc /sys /dev /dev/pts /tmp (state dirs live in
# /tmp, so host and chroot see the same files), copies the host's /etc/hosts (SlurmctldHost
# must resolve), copies this directory to /opt/slurm-otel/real-slurm inside, and builds the
# cg2only.so LD_PRELOAD helper (cg2only.c) at /opt/slurm-otel/cg2only.so for cgroup v2 runs.
# Prints the chroot's path on stdout. Needs root; installs debootstrap with apt-get if missing.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "[real-slurm chroot] ERROR: $*" >&2; exit 1; }
say() { echo "[real-slurm chroot] $*" >&2; }

REL=${1:-}
case $REL in trixie|sid|forky) ;; *) die "usage: $0 <trixie|sid|forky> [--unmount]";; esac
CACHE=${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}
[[ $CACHE =~ ^/[A-Za-z0-9._/-]+$ ]] || die "SLURM_OTEL_CHROOT_CACHE must be an absolute plain path (got '$CACHE')"
R=$CACHE/$REL
BINDS=(proc sys dev dev/pts tmp)
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, mount, chroot)"

if [ "${2:-}" = --unmount ]; then
  for ((i = ${#BINDS[@]} - 1; i >= 0; i--)); do
    mountpoint -q "$R/${BINDS[i]}" && { umount -R "$R/${BINDS[i]}" 2>/dev/null || umount -l "$R/${BINDS[i]}"; }
  done
  exit 0
fi

PKGS=slurmctld,slurmd,slurmrestd,slurmdbd,munge,slurm-client,slurm-wlm-jwt-plugin,curl,jq,procps,python3
complete() { [ -x "$R/usr/sbin/slurmctld" ] && [ -x "$R/usr/sbin/slurmdbd" ] && [ -x "$R/usr/sbin/slurmrestd" ]; }

mkdir -p "$CACHE"
# Several test workers may call this at once: one makes the chroot, the others wait.
exec 8>"$CACHE/.$REL.lock"
flock -w 900 8 || die "timed out waiting for $CACHE/.$REL.lock"

if ! complete; then
  if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q debootstrap >/dev/null \
      || die "debootstrap is missing and apt-get could not install it"
  fi
  # Built aside and renamed when complete: an interrupted run never leaves a half chroot
  # that the check above would take for a good one.
  TMPR=$R.partial
  rm -rf -- "$TMPR"; mkdir -p "$TMPR"
  say "debootstrap $REL into $R (about 90 s)"
  if ! debootstrap --variant=minbase --include="$PKGS" "$REL" "$TMPR" >"$CACHE/$REL.debootstrap.log" 2>&1; then
    tail -n 8 "$CACHE/$REL.debootstrap.log" >&2
    rm -rf -- "$TMPR"
    die "could not make the $REL chroot: Debian's archive unreachable or a package missing" \
      "(log: $CACHE/$REL.debootstrap.log; a proxy goes in http_proxy)"
  fi
  rm -rf -- "$R"; mv "$TMPR" "$R"
  complete || die "$R lacks slurmctld/slurmdbd/slurmrestd after debootstrap"
fi

for d in "${BINDS[@]}"; do
  mkdir -p "$R/$d"
  mountpoint -q "$R/$d" || mount --rbind "/$d" "$R/$d"
done
cp /etc/hosts "$R/etc/hosts"
mkdir -p "$R/opt/slurm-otel"
rm -rf "$R/opt/slurm-otel/real-slurm.new"
cp -r "$HERE" "$R/opt/slurm-otel/real-slurm.new"
rm -rf "$R/opt/slurm-otel/real-slurm"; mv "$R/opt/slurm-otel/real-slurm.new" "$R/opt/slurm-otel/real-slurm"
SO=$R/opt/slurm-otel/cg2only.so
if [ ! -e "$SO" ] || [ "$HERE/cg2only.c" -nt "$SO" ]; then
  # Only cgroup v2 runs need it: without gcc the chroot is still usable.
  if command -v gcc >/dev/null; then
    gcc -shared -fPIC -O2 -Wall -o "$SO.tmp" "$HERE/cg2only.c" -ldl && mv "$SO.tmp" "$SO"
  else
    say "warning: no gcc, cg2only.so not built (needed only for REAL_SLURM_PRELOAD / cgroup v2)"
  fi
fi
echo "$R"
