#!/usr/bin/env bash
# Boot the soft-RoCE guest (made by image.sh) under qemu, run one guest script in it and collect
# what it wrote:
#
#   boot.sh <guest-script> <out-dir>
#
# The guest gets, over virtio-9p (tag host0, at /mnt/host): the script as guest.sh, the host's
# `node` binary and app.tar (this clone's dist/ with the fd reader, package.json and the production packages of
# node_modules), to be unpacked into the guest's tmpfs. The script writes into /mnt/host/out;
# that directory is copied to <out-dir>, with console.log (the serial console, each line
# prefixed with host seconds since qemu started) and rc (the script's exit code).
# Exit status: the script's, or 124 when qemu did not finish in SOFT_ROCE_TIMEOUT seconds.
# Knobs: SOFT_ROCE_TIMEOUT (600 s: a run takes 3 min, 6.5 min at load 10), SOFT_ROCE_SMP (1 vCPU), SOFT_ROCE_MEM (1024 MiB),
# SOFT_ROCE_ACCEL (tcg: the only accelerator a stock Debian kernel boots under here),
# SLURM_OTEL_CHROOT_CACHE (as image.sh). The guest has no network device (-nic none).
set -euo pipefail
die() { echo "[soft-roce boot] ERROR: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: $0 <guest-script> <out-dir>"
SCRIPT=$1 OUT=$2
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
D=${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}/rxe
[ -s "$D/rootfs.img" ] && [ -s "$D/ready" ] || die "no guest image in $D: run scripts/soft-roce/image.sh first"
[ -f "$SCRIPT" ] || die "no guest script $SCRIPT"
[ -f "$REPO/dist/src/cli/main.js" ] || die "no $REPO/dist: run npm run build first"
NODE=$(command -v node) || die "no node binary on the host"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing: apt-get install -y qemu-system-x86"
TMO=${SOFT_ROCE_TIMEOUT:-600}

SHARE=$(mktemp -d /tmp/soft-roce-share.XXXXXX)
trap 'rm -rf -- "$SHARE"' EXIT
mkdir -p "$SHARE/out"
install -m 0755 "$SCRIPT" "$SHARE/guest.sh"
install -m 0755 "$NODE" "$SHARE/node"
# Only what the agent loads: the build and the production dependency closure (about 25 MB).
"$NODE" "$REPO/dist/scripts/soft-roce/packages.js" "$REPO" > "$SHARE/packages"
[ -s "$SHARE/packages" ] || die "no production packages found under $REPO/node_modules"
tar -C "$REPO" -chf "$SHARE/app.tar" package.json dist/src dist/native -T "$SHARE/packages"

START=${EPOCHREALTIME/./}
set +e
timeout -k 10 "$TMO" nice -n 10 qemu-system-x86_64 -accel "${SOFT_ROCE_ACCEL:-tcg}" -cpu max \
  -m "${SOFT_ROCE_MEM:-1024}" -smp "${SOFT_ROCE_SMP:-1}" -nographic -no-reboot -nic none -snapshot \
  -kernel "$D/vmlinuz" -initrd "$D/initrd.img" \
  -append "root=/dev/vda rw console=ttyS0 loglevel=4 panic=-1 init=/sbin/slurm-otel-init" \
  -drive file="$D/rootfs.img",if=virtio,format=raw \
  -virtfs local,path="$SHARE",mount_tag=host0,security_model=none,id=host0 </dev/null 2>&1 |
  while IFS= read -r line; do
    t=$(( (${EPOCHREALTIME/./} - START) / 100000 ))
    printf '[%5d.%d] %s\n' $((t / 10)) $((t % 10)) "${line%$'\r'}"
  done > "$SHARE/console.log"
qemu=${PIPESTATUS[0]}
set -e
mkdir -p "$OUT"
cp -r "$SHARE/out/." "$OUT/"
cp "$SHARE/console.log" "$OUT/console.log"
echo "qemu exit $qemu; wall $(( (${EPOCHREALTIME/./} - START) / 1000000 )) s" >> "$OUT/console.log"
if [ "$qemu" = 124 ] || [ "$qemu" = 137 ]; then
  echo "[soft-roce boot] ERROR: qemu did not finish in $TMO s (see $OUT/console.log)" >&2
  exit 124
fi
[ -s "$OUT/rc" ] || { tail -n 20 "$OUT/console.log" >&2; die "the guest script left no exit code (see $OUT/console.log)"; }
exit "$(cat "$OUT/rc")"
