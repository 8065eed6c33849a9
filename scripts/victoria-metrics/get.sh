#!/usr/bin/env bash
# Fetch (or reuse) Debian's VictoriaMetrics server, the OTLP-native store of
# test/integration/victoria-metrics.test.ts:
#
#   scripts/victoria-metrics/get.sh   -> prints the binary's path on stdout
#
# The package `victoria-metrics` of the release pinned below is downloaded from Debian's archive
# (the mirror debootstrap uses for the Slurm chroots, DEBIAN_MIRROR to change it), checked against
# the pinned SHA-256, unpacked with `dpkg-deb -x` (nothing is installed, no chroot is touched) and
# its server kept at ${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}/victoria-metrics-<version>/
# victoria-metrics, reused when present. The binary is Go with cgo: it needs only libc (>= 2.34)
# and libzstd, which Debian 12 has; the check below resolves every symbol before it is kept.
# sid carries a newer release than trixie (1.112): its OTLP ingestion has the flags that name
# and label the series as the gateway's remote write does (-opentelemetry.promoteResourceAttributes
# and -opentelemetry.promoteScopeMetadata are not in 1.112). sid moves on: when the pinned file
# leaves the archive this says which version the suite has now, to pin instead.
set -euo pipefail
die() { echo "[victoria-metrics get] ERROR: $*" >&2; exit 1; }
say() { echo "[victoria-metrics get] $*" >&2; }

SUITE=sid
VERSION=1.145.0+ds1-2
SHA256=c858b5c15b1c3a3872ec7520cddb2bb51fc48d4b61b6b88f05ac7304edb44557
ARCH=amd64
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}
[[ $CACHE =~ ^/[A-Za-z0-9._/-]+$ ]] || die "SLURM_OTEL_CHROOT_CACHE must be an absolute plain path (got '$CACHE')"
[ "$(dpkg --print-architecture 2>/dev/null || echo unknown)" = "$ARCH" ] || die "only $ARCH is pinned here"
DEST=$CACHE/victoria-metrics-$VERSION
BIN=$DEST/victoria-metrics
DEB=victoria-metrics_${VERSION}_$ARCH.deb
URL=$MIRROR/pool/main/v/victoriametrics/$DEB

# LD_BIND_NOW: a library the host lacks (or one too old) fails here, not in the middle of a test.
runs() { LD_BIND_NOW=1 "$1" -version >/dev/null 2>&1; }

mkdir -p "$CACHE"
# Several test workers or sessions may call this at once: one downloads, the others wait.
exec 8>"$CACHE/.victoria-metrics-$VERSION.lock"
flock -w 900 8 || die "timed out waiting for $CACHE/.victoria-metrics-$VERSION.lock"
if [ -x "$BIN" ] && runs "$BIN"; then echo "$BIN"; exit 0; fi

command -v curl >/dev/null || die "curl is missing (the package comes from $MIRROR)"
# Unpacked aside and renamed when complete: an interrupted run never leaves a binary that the
# check above would take for a good one.
WORK=$DEST.partial
rm -rf -- "$WORK"; mkdir -p "$WORK"
say "downloading $URL (about 55 MB)"
if ! curl -fsS --retry 3 -m 900 -o "$WORK/$DEB" "$URL" 2>"$WORK/curl.log"; then
  cat "$WORK/curl.log" >&2
  now=$(curl -fsS -m 120 "$MIRROR/dists/$SUITE/main/binary-$ARCH/Packages.xz" 2>/dev/null | xz -dc 2>/dev/null \
    | awk -v RS= '/(^|\n)Package: victoria-metrics\n/' | awk '$1 == "Version:" { print $2 }' || true)
  rm -rf -- "$WORK"
  [ -z "$now" ] || die "$SUITE no longer has $VERSION but $now: pin that (VERSION and SHA256 from its Packages index)"
  die "could not download $URL: Debian's archive unreachable (a proxy goes in http_proxy, a mirror in DEBIAN_MIRROR)"
fi
got=$(sha256sum "$WORK/$DEB" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] || { rm -rf -- "$WORK"; die "$DEB has SHA-256 $got, not the pinned $SHA256"; }
dpkg-deb -x "$WORK/$DEB" "$WORK/root" || { rm -rf -- "$WORK"; die "dpkg-deb could not unpack $DEB"; }
mv "$WORK/root/usr/bin/victoria-metrics" "$WORK/victoria-metrics"
# The licence travels with the binary.
mv "$WORK/root/usr/share/doc/victoria-metrics/copyright" "$WORK/copyright"
rm -rf -- "$WORK/root" "$WORK/$DEB" "$WORK/curl.log"
runs "$WORK/victoria-metrics" || { rm -rf -- "$WORK"; die "the unpacked binary does not run here (libc or libzstd too old?)"; }
rm -rf -- "$DEST"; mv "$WORK" "$DEST"
say "VictoriaMetrics $VERSION ($SUITE) at $BIN"
echo "$BIN"
