#!/usr/bin/env bash
# Re-records fixtures/node/rxe from a run of the soft-RoCE guest: the sysfs files the node agent
# reads of rxe0..rxe3 and class/infiniband_verbs, and the `rdma -j` outputs the guest saved.
#
#   record.sh [<out-dir of boot.sh>]   # without one: makes the image, boots the guest, records
#
# Needs what image.sh and boot.sh need (root for a new image, qemu-system-x86, a built dist/).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
RUN=${1:-}
if [ -z "$RUN" ]; then
  RUN=$(mktemp -d /tmp/soft-roce-run.XXXXXX)
  "$HERE/image.sh" >/dev/null
  "$HERE/boot.sh" "$HERE/guest.sh" "$RUN"
fi
[ -f "$RUN/done" ] || { echo "record.sh: $RUN holds no completed guest run" >&2; exit 1; }
F=$REPO/fixtures/node/rxe
rm -rf "$F/sysfs" "$F/rdma"
mkdir -p "$F"
cp -r "$RUN/sysfs" "$F/sysfs"
cp -r "$RUN/rdma" "$F/rdma"
cp "$RUN/kernel.txt" "$RUN/rdma-version.txt" "$RUN/uverbs.txt" "$F/"
echo "recorded $RUN into $F"
