#!/usr/bin/env bash
# Build (or reuse) the OpenTelemetry Collector that runs otel-config/collector-*.yaml, from its Go
# modules with the OpenTelemetry Collector Builder and the manifest beside this script:
#
#   scripts/collector/build.sh        -> prints the binary's path on stdout
#
# The binary lives at ${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}/otelcol-<version>/otelcol,
# outside any clone (like the Slurm chroots), and is reused while the manifest it was built from is
# unchanged. The modules come from the Go module proxy (`go env GOPROXY`); a module that cannot be
# had there stops the build with its name. A cold build takes minutes on two cores (it runs under
# `nice`); a cached one returns at once. Needs Go (the version the builder's go.mod names).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "[collector build] ERROR: $*" >&2; exit 1; }
say() { echo "[collector build] $*" >&2; }

MANIFEST=$HERE/manifest.yaml
VERSION=$(awk '$1 == "version:" { print $2; exit }' "$MANIFEST")
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "no dist.version in $MANIFEST"
CACHE=${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}
[[ $CACHE =~ ^/[A-Za-z0-9._/-]+$ ]] || die "SLURM_OTEL_CHROOT_CACHE must be an absolute plain path (got '$CACHE')"
DEST=$CACHE/otelcol-$VERSION
BIN=$DEST/otelcol

cached() { [ -x "$BIN" ] && cmp -s "$MANIFEST" "$DEST/manifest.yaml" && "$BIN" --version >/dev/null 2>&1; }

mkdir -p "$CACHE"
# Several test workers or sessions may call this at once: one builds, the others wait.
exec 8>"$CACHE/.otelcol-$VERSION.lock"
flock -w 1800 8 || die "timed out waiting for $CACHE/.otelcol-$VERSION.lock"
if cached; then echo "$BIN"; exit 0; fi

command -v go >/dev/null || die "Go is missing (the Collector is built from its Go modules)"
say "building otelcol $VERSION into $DEST (GOPROXY=$(go env GOPROXY); a cold build takes minutes)"

# Every module the manifest names must be served at its pinned version; asking first names the
# one that is not, instead of leaving it in the middle of the builder's output.
while read -r mod ver; do
  go list -m -json "$mod@$ver" >/dev/null 2>"$CACHE/otelcol-$VERSION.module.log" \
    || { tail -n 3 "$CACHE/otelcol-$VERSION.module.log" >&2; die "module $mod $ver cannot be had from $(go env GOPROXY)"; }
done < <(awk '$1 == "-" && $2 == "gomod:" { print $3, $4 }' "$MANIFEST")

BUILDER_DIR=$CACHE/ocb-$VERSION
if [ ! -x "$BUILDER_DIR/builder" ]; then
  GOBIN=$BUILDER_DIR nice go install "go.opentelemetry.io/collector/cmd/builder@v$VERSION" \
    || die "module go.opentelemetry.io/collector/cmd/builder v$VERSION cannot be had or built"
fi

# Built aside and renamed when complete: an interrupted run never leaves a binary that the check
# above would take for a good one. The builder writes its sources under ./build of its cwd.
WORK=$DEST.partial
rm -rf -- "$WORK"; mkdir -p "$WORK"
cp "$MANIFEST" "$WORK/manifest.yaml"
LOG=$CACHE/otelcol-$VERSION.build.log
if ! (cd "$WORK" && nice "$BUILDER_DIR/builder" --config manifest.yaml) >"$LOG" 2>&1; then
  # Name what could not be had: modules the proxy refuses, or a newer Go that a module asks for.
  missing=$(grep -oE '[A-Za-z0-9._/~-]+@v[^:]+: reading [^ ]+: [0-9]{3}' "$LOG" | sed 's/: reading.*//' | sort -u || true)
  toolchain=$(grep -oE '[^ ]+ requires go >= [0-9.]+ \(running go [0-9.]+' "$LOG" | sort -u || true)
  [ -z "$missing" ] || die "module(s) not served by $(go env GOPROXY): $(echo $missing) (log: $LOG)"
  [ -z "$toolchain" ] || die "a module needs a newer Go: $toolchain) (log: $LOG)"
  grep -iE 'error|cannot|not found' "$LOG" | tail -n 8 >&2 || tail -n 8 "$LOG" >&2
  die "the builder failed (full log: $LOG)"
fi
"$WORK/build/otelcol" --version >/dev/null || die "the built binary does not run (log: $LOG)"
rm -rf -- "$DEST"; mkdir -p "$DEST"
mv "$WORK/build/otelcol" "$BIN"
cp "$MANIFEST" "$DEST/manifest.yaml"
rm -rf -- "$WORK"
say "built $("$BIN" --version)"
echo "$BIN"
