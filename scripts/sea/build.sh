#!/usr/bin/env bash
# Builds the single executable dist/sea/slurm-otel: compiles the package (npm run build), then
# bundles it and makes the executable (scripts/sea/build.ts says how; its options pass through:
# --node PATH, --out FILE, --no-code-cache). Prints the executable's path. The embedded Node
# (24.22.3 by default) comes from scripts/node-lines.sh's cache outside the clone; an unchanged
# input reuses the last executable, so a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x node_modules/.bin/esbuild ] || { echo "[sea build] ERROR: no node_modules/.bin/esbuild: run npm ci first" >&2; exit 1; }
npm run build --silent
exec node dist/scripts/sea/build.js "$@"
