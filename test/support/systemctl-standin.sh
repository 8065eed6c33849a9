#!/bin/sh
# A stand-in for systemctl in the Node-less chroot, where no systemd runs (test/integration/deb.test.ts):
# it records each call, one a line, in /var/log/systemctl-standin.calls and keeps which units are
# active as files under /run/systemctl-standin/active. Enabled is what the links on disk say (the
# links deb-systemd-helper and `systemctl enable` make), so that deb-systemd-invoke's questions get
# the answers the package's state gives. Only what the maintainer scripts and deb-systemd-invoke ask.
set -e
echo "$*" >>/var/log/systemctl-standin.calls
ACTIVE=/run/systemctl-standin/active
WANTS=/etc/systemd/system/multi-user.target.wants
mkdir -p "$ACTIVE"
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
action=${1:-}
[ $# -gt 0 ] && shift
units=
for arg in "$@"; do [ "$arg" = -- ] || units="$units $arg"; done
case $action in
  is-active)
    for u in $units; do [ -e "$ACTIVE/$u" ] || exit 3; done
    exit 0
    ;;
  is-enabled)
    for u in $units; do
      if [ -L "$WANTS/$u" ]; then echo enabled; else echo disabled; exit 1; fi
    done
    ;;
  enable)
    mkdir -p "$WANTS"
    for u in $units; do ln -sfn "/usr/lib/systemd/system/$u" "$WANTS/$u"; done
    ;;
  start | restart) for u in $units; do touch "$ACTIVE/$u"; done ;;
  try-restart) for u in $units; do [ ! -e "$ACTIVE/$u" ] || touch "$ACTIVE/$u"; done ;;
  stop) for u in $units; do rm -f "$ACTIVE/$u"; done ;;
  daemon-reload) ;;
  *) echo "systemctl stand-in: '$action' is not one it knows" >&2; exit 1 ;;
esac
exit 0
