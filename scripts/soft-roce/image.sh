#!/usr/bin/env bash
# Make (or reuse) the qemu guest in which the node agent meets a real kernel RDMA stack:
# Debian 12's own kernel (linux-image-amd64: it has Soft-RoCE, rdma_rxe, the uverbs devices and
# the rdma cgroup controller; the -cloud flavour has no rxe and no 9p) on a minbase root disk.
#
# Cached outside any clone in ${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}/rxe:
#   rootfs/       the debootstrap tree (kept so that a new init needs no new debootstrap)
#   rootfs.img    ext4 image of it (qemu opens it with -snapshot: never written)
#   vmlinuz, initrd.img   the kernel and a small initramfs (virtio + ext4 only)
#   kernel-version, ready  written last; `ready` holds the recipe's version
# Reused when `ready` matches RECIPE below; otherwise rebuilt (about 2 minutes, 130 MB of
# .debs from Debian's archive). Prints the cache directory on stdout. Needs root.
# The guest's PID 1 (written here) mounts the host's share (virtio-9p, tag `host0`) at
# /mnt/host, runs /mnt/host/guest.sh, writes its exit code to /mnt/host/out/rc, powers off.
set -euo pipefail
die() { echo "[soft-roce image] ERROR: $*" >&2; exit 1; }
say() { echo "[soft-roce image] $*" >&2; }

# Bump when the package list or the init below changes: cached images are then remade.
RECIPE=1
PKGS=linux-image-amd64,initramfs-tools,kmod,udev,rdma-core,ibverbs-utils,ibverbs-providers,iproute2,procps,libstdc++6
CACHE=${SLURM_OTEL_CHROOT_CACHE:-/var/cache/slurm-otel}
[[ $CACHE =~ ^/[A-Za-z0-9._/-]+$ ]] || die "SLURM_OTEL_CHROOT_CACHE must be an absolute plain path (got '$CACHE')"
D=$CACHE/rxe
ready() { [ "$(cat "$D/ready" 2>/dev/null)" = "$RECIPE" ] && [ -s "$D/rootfs.img" ]; }
# A ready image is used as it is (booting it needs no root).
if ready; then echo "$D"; exit 0; fi
[ "$(id -u)" = 0 ] || die "no guest image in $D yet; making one must run as root (debootstrap, chroot)"
for t in debootstrap:debootstrap mke2fs:e2fsprogs; do
  command -v "${t%%:*}" >/dev/null || die "${t%%:*} is missing: apt-get install -y ${t#*:}"
done

mkdir -p "$D"
# Several test workers may call this at once: one makes the image, the others wait for it.
exec 8>"$CACHE/.rxe.lock"
flock -w 900 8 || die "timed out waiting for $CACHE/.rxe.lock"
if ready; then echo "$D"; exit 0; fi
rm -f "$D/ready"
T0=$SECONDS

R=$D/rootfs
if [ ! -e "$R/.debootstrap-ok" ] || [ "$(cat "$R/.debootstrap-ok")" != "$PKGS" ]; then
  # Built aside and renamed when complete: an interrupted run never leaves a tree taken for good.
  rm -rf -- "$R.partial" "$R"
  say "debootstrap bookworm (minbase + $PKGS), about 2 minutes; log $D/debootstrap.log"
  if ! nice -n 10 debootstrap --variant=minbase --include="$PKGS" bookworm "$R.partial" \
    >"$D/debootstrap.log" 2>&1; then
    tail -n 8 "$D/debootstrap.log" >&2
    rm -rf -- "$R.partial"
    die "could not install Debian bookworm's linux-image-amd64 (and rdma-core, ibverbs-utils," \
      "iproute2) into the guest: Debian's archive unreachable or the package missing" \
      "(log: $D/debootstrap.log; a proxy goes in http_proxy)"
  fi
  echo "$PKGS" > "$R.partial/.debootstrap-ok"
  mv "$R.partial" "$R"
fi
KVER=$(ls "$R/lib/modules" 2>/dev/null | sort -V | tail -n 1)
[ -n "$KVER" ] && [ -s "$R/boot/vmlinuz-$KVER" ] \
  || die "the guest tree has no kernel: Debian's linux-image-amd64 did not install (see $D/debootstrap.log)"
find "$R/lib/modules/$KVER" -name 'rdma_rxe.ko*' | grep -q . \
  || die "kernel $KVER has no rdma_rxe module: linux-image-amd64 is needed (not -cloud-amd64)"

mkdir -p "$R/mnt/host"
cat > "$R/sbin/slurm-otel-init" <<'INIT'
#!/bin/bash
# PID 1 of the soft-RoCE guest (written by scripts/soft-roce/image.sh).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mountpoint -q /run || mount -t tmpfs run /run
mount -t tmpfs -o mode=1777 tmp /tmp
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
hostname rxe-guest
ip link set lo up
modprobe 9pnet_virtio; modprobe 9p
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host0 /mnt/host && [ -f /mnt/host/guest.sh ]; then
  echo "SOFT-ROCE-INIT: running guest.sh at uptime $(cut -d' ' -f1 /proc/uptime)s"
  mkdir -p /mnt/host/out
  bash /mnt/host/guest.sh > >(tee /mnt/host/out/guest.log) 2>&1
  echo $? > /mnt/host/out/rc
  sync
  echo "SOFT-ROCE-INIT: guest.sh exited rc=$(cat /mnt/host/out/rc)"
  umount /mnt/host
else
  echo "SOFT-ROCE-INIT: no 9p share with guest.sh: nothing to run"
fi
echo 1 > /proc/sys/kernel/sysrq
echo o > /proc/sysrq-trigger
sleep 60
INIT
chmod 0755 "$R/sbin/slurm-otel-init"

# Debian's initrd carries most modules (35 MB); the root disk needs only these three.
say "small initramfs for $KVER"
rm -rf "$R/tmp/ird"; cp -a "$R/etc/initramfs-tools" "$R/tmp/ird"
sed -i 's/^MODULES=.*/MODULES=list/' "$R/tmp/ird/initramfs.conf"
printf '%s\n' virtio_pci virtio_blk ext4 >> "$R/tmp/ird/modules"
mount --bind /proc "$R/proc"
trap 'umount "$R/proc" 2>/dev/null || true' EXIT
chroot "$R" mkinitramfs -d /tmp/ird -o /tmp/initrd.img "$KVER" >"$D/mkinitramfs.log" 2>&1 \
  || { tail -n 8 "$D/mkinitramfs.log" >&2; die "mkinitramfs failed in the guest tree"; }
umount "$R/proc"; trap - EXIT
mv "$R/tmp/initrd.img" "$D/initrd.img"; rm -rf "$R/tmp/ird"
cp "$R/boot/vmlinuz-$KVER" "$D/vmlinuz"
echo "$KVER" > "$D/kernel-version"

SIZE_MB=$(( $(du -sm "$R" | cut -f1) * 13 / 10 + 256 ))
rm -f "$D/rootfs.img"
mke2fs -q -t ext4 -L rxeroot -d "$R" "$D/rootfs.img" "${SIZE_MB}M"
echo "$RECIPE" > "$D/ready"
say "guest ready: kernel $KVER, image ${SIZE_MB} MiB, $((SECONDS - T0)) s"
echo "$D"
