#!/usr/bin/env bash
# The heap-labels demo from a fresh machine of this kind: installs the stock runtimes
# (scripts/runtimes.sh), picks the patched Node.js 22.22.2 when it has been built
# (tools/patched-node/build.sh), otherwise stock 22.22.2 with --experimental-async-context-frame,
# builds the addon (npm run build; one build serves both) and runs demo/run.js.
#
#   demo/run.sh [--build-patched] [demo/run.js options, e.g. --requests 20000 --in-process --out DIR]
#
# --build-patched first builds (or reuses) the patched runtime with tools/patched-node/build.sh:
# about 20 minutes on 2 cores with the shared compiler cache, 2-3 hours without one.
#
# Setup is idempotent; after it the demo itself takes a few seconds.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

log() { echo "demo: $*" >&2; }

for tool in npm cargo; do
  if ! command -v "$tool" >/dev/null; then
    log "'$tool' is missing: the setup needs npm (any Node.js >= 18 with npm, to fetch runtimes) and a Rust toolchain (cargo)"
    exit 1
  fi
done

if [ "${1:-}" = "--build-patched" ]; then
  shift
  log "building the patched runtime (tools/patched-node/build.sh)"
  tools/patched-node/build.sh
fi

log "installing stock runtimes (cached under ${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}/runtimes)"
scripts/runtimes.sh all
stock_node="$(scripts/runtimes.sh bin 22.22.2)/node"

if patched_node=$(tools/patched-node/build.sh --print-node-path --cached-only 2>/dev/null); then
  node=$patched_node
  log "runtime: patched Node.js 22.22.2 ($node)"
else
  node=$stock_node
  log "runtime: stock Node.js 22.22.2 ($node); per-route heap needs the patched runtime"
  log "  (build it once with tools/patched-node/build.sh; the demo then uses it automatically)"
fi

# One addon build for Node 22 (ABI 127), against the stock headers, serves stock and patched alike:
# it finds the patched runtime's API at run time.
log "building the addon (npm run build with stock Node.js 22.22.2)"
PATH="$(dirname "$stock_node"):$PATH" npm run build --silent

if ! command -v go >/dev/null; then
  log "note: 'go tool pprof' (Debian package golang-go) reads the pprof file the demo writes"
fi

exec "$node" --experimental-async-context-frame --expose-gc demo/run.js "$@"
