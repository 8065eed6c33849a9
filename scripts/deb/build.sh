#!/usr/bin/env bash
# Builds dist/deb/slurm-otel_<version>_amd64.deb with dpkg-deb: the single executable
# (scripts/sea/build.sh) as /usr/bin/slurm-otel, the systemd units of deploy/systemd/ in
# /usr/lib/systemd/system, the node agent's sysusers file in /usr/lib/sysusers.d, and the example
# environment files as /etc/default/slurm-otel-{node,cluster} (conffiles: the units read them).
#
#   scripts/deb/build.sh [EXECUTABLE]   prints the .deb's path
#
# Without EXECUTABLE it runs scripts/sea/build.sh first. SLURM_OTEL_DEB_COMPRESSION picks
# dpkg-deb's compressor: xz (the default: the smallest, and what every dpkg reads; a minute or
# more for the 120 MB executable), or zstd (seconds, a quarter larger; dpkg ≥ 1.21.18, Debian 12 and
# later: what the tests use). An unchanged input (executable, files, compressor) reuses the last
# .deb, whose input hash sits beside it (.deb.inputs). The units of deploy/systemd/ are written
# for an npm install (/usr/local/bin); the package's copies point at /usr/bin and at the package's
# README instead. Nothing is enabled or started at install: the cluster agent needs its token,
# and a site decides where the node agent runs. The maintainer scripts (scripts/deb/maintainer/)
# stop the agents before a removal or an upgrade, start again after an upgrade those that ran,
# and remove the enable links on purge (deb-systemd-helper, hence init-system-helpers in
# Depends). Reproducible: every mtime is the last commit's time (SOURCE_DATE_EPOCH, which
# dpkg-deb also uses), owners are root.
set -euo pipefail
die() { echo "[deb build] ERROR: $*" >&2; exit 1; }
say() { echo "[deb build] $*" >&2; }
cd "$(dirname "$0")/../.."

command -v dpkg-deb >/dev/null || die "dpkg-deb is missing: apt-get install -y dpkg"
EXE=${1:-}
if [ -z "$EXE" ]; then EXE=$(scripts/sea/build.sh | tail -n 1); fi
[ -x "$EXE" ] || die "no executable at '$EXE'"
VERSION=$(node -p 'require("./package.json").version')
[[ $VERSION =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || die "package.json's version '$VERSION' is not a Debian version"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

# The Depends below hold for the embedded Node's symbol versions (Node's official Linux builds
# need glibc 2.28 and a libstdc++ from GCC 5); a newer runtime that needs more fails here.
max_version() { grep -ao "$1[0-9.]*[0-9]" "$EXE" | sort -uV | tail -n 1; }
[ "$(printf '%s\n' "$(max_version GLIBC_2.)" GLIBC_2.28 | sort -V | tail -n 1)" = GLIBC_2.28 ] \
  || die "the executable needs $(max_version GLIBC_2.): raise libc6 in Depends"
[ "$(printf '%s\n' "$(max_version GLIBCXX_3.4.)" GLIBCXX_3.4.21 | sort -V | tail -n 1)" = GLIBCXX_3.4.21 ] \
  || die "the executable needs $(max_version GLIBCXX_3.4.): raise libstdc++6 in Depends"

COMPRESSION=${SLURM_OTEL_DEB_COMPRESSION:-xz}
case $COMPRESSION in xz) LEVEL=6 ;; zstd) LEVEL=9 ;; *) die "SLURM_OTEL_DEB_COMPRESSION must be xz or zstd (got '$COMPRESSION')" ;; esac
OUT=dist/deb
DEB=$OUT/slurm-otel_${VERSION}_amd64.deb
STAGE=$OUT/stage
mkdir -p "$OUT"
INPUTS=$( (echo "$VERSION $COMPRESSION $SOURCE_DATE_EPOCH"; sha256sum "$EXE" "$0" scripts/deb/maintainer/* deploy/systemd/* README.md | cut -d' ' -f1) | sha256sum | cut -d' ' -f1)
if [ -f "$DEB" ] && [ "$(cat "$DEB.inputs" 2>/dev/null)" = "$INPUTS" ]; then
  say "$DEB is up to date"
  echo "$PWD/$DEB"
  exit 0
fi
rm -rf -- "$STAGE"
mkdir -p "$STAGE/DEBIAN" "$STAGE/usr/bin" "$STAGE/usr/lib/systemd/system" "$STAGE/usr/lib/sysusers.d" \
  "$STAGE/etc/default" "$STAGE/usr/share/doc/slurm-otel"

install -m 0755 "$EXE" "$STAGE/usr/bin/slurm-otel"
for unit in deploy/systemd/*.service; do
  # The npm-install paths become the package's; the npm hint goes.
  sed -e 's#/usr/local/bin/slurm-otel#/usr/bin/slurm-otel#g' \
    -e 's#file:/usr/local/lib/node_modules/slurm-otel/README.md#file:/usr/share/doc/slurm-otel/README.md#' \
    -e '/command -v slurm-otel. tells where npm installed it/d' \
    "$unit" >"$STAGE/usr/lib/systemd/system/$(basename "$unit")"
  grep -q '^ExecStart=/usr/bin/slurm-otel ' "$STAGE/usr/lib/systemd/system/$(basename "$unit")" \
    || die "$unit: no ExecStart=/usr/local/bin/slurm-otel line to point at /usr/bin"
done
chmod 0644 "$STAGE"/usr/lib/systemd/system/*
sed -e 's#/etc/sysusers.d/slurm-otel.conf#/usr/lib/sysusers.d/slurm-otel.conf#' \
  deploy/systemd/slurm-otel.sysusers.conf >"$STAGE/usr/lib/sysusers.d/slurm-otel.conf"
chmod 0644 "$STAGE/usr/lib/sysusers.d/slurm-otel.conf"
install -m 0644 deploy/systemd/slurm-otel-node.env.example "$STAGE/etc/default/slurm-otel-node"
# It holds the slurmrestd token once filled in (the unit's comment asks for 0600).
install -m 0600 deploy/systemd/slurm-otel-cluster.env.example "$STAGE/etc/default/slurm-otel-cluster"
install -m 0644 README.md "$STAGE/usr/share/doc/slurm-otel/README.md"
cat >"$STAGE/usr/share/doc/slurm-otel/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: slurm-otel

Files: *
Copyright: the slurm-otel authors
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0. The executable embeds Node.js (MIT and
 the licences of its bundled libraries) and the npm dependencies of slurm-otel.
EOF
chmod 0644 "$STAGE/usr/share/doc/slurm-otel/copyright"

printf '%s\n' /etc/default/slurm-otel-node /etc/default/slurm-otel-cluster >"$STAGE/DEBIAN/conffiles"
# The maintainer scripts (scripts/deb/maintainer/, where each says what it does), given the units.
UNITS=$(cd deploy/systemd && echo *.service)
for script in postinst prerm postrm; do
  sed -e "s#^UNITS=\"@UNITS@\"\$#UNITS=\"$UNITS\"#" "scripts/deb/maintainer/$script" >"$STAGE/DEBIAN/$script"
  grep -q '@UNITS@' "$STAGE/DEBIAN/$script" && die "$script: @UNITS@ left in place"
  chmod 0755 "$STAGE/DEBIAN/$script"
done
cat >"$STAGE/DEBIAN/control" <<EOF
Package: slurm-otel
Version: $VERSION
Architecture: amd64
Maintainer: slurm-otel developers <dev@slurm-otel.invalid>
Installed-Size: $(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
Depends: libc6 (>= 2.28), libgcc-s1, libstdc++6 (>= 5), systemd | systemd-standalone-sysusers | systemd-sysusers,
 init-system-helpers
Section: net
Priority: optional
Description: OpenTelemetry metrics for Slurm clusters with InfiniBand/RoCE fabrics
 slurm-otel node (one per compute node) attributes InfiniBand HCA counters to
 Slurm jobs; slurm-otel cluster (one per cluster) exports slurmrestd's nodes,
 jobs and controller statistics. Both serve Prometheus and push OTLP/HTTP.
 One executable with its own Node.js runtime: no Node installation needed.
EOF
find "$STAGE" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
rm -f -- "$DEB.partial" "$DEB.inputs"
dpkg-deb --root-owner-group "-Z$COMPRESSION" "-z$LEVEL" --build "$STAGE" "$DEB.partial" >/dev/null
mv -- "$DEB.partial" "$DEB"
echo "$INPUTS" >"$DEB.inputs"
rm -rf -- "$STAGE"
say "$DEB: $(du -k "$DEB" | cut -f1) KiB (installed $(dpkg-deb -f "$DEB" Installed-Size) KiB)"
echo "$PWD/$DEB"
