#!/usr/bin/env bash
# The heap-labels demo from a fresh machine of this kind: builds (or reuses) the patched Node.js
# 22.22.2 runtime (tools/patched-node/build.sh: crypto, TLS, inspector, Intl, AsyncContextFrame on,
# per-sample labels), installs the stock runtimes (scripts/runtimes.sh), builds the addon (npm run
# build; one build serves stock and patched) and runs demo/run.js, which ends with the per-route heap
# table.
#
#   demo/run.sh [--stock] [demo/run.js options, e.g. --requests 20000 --in-process --out DIR]
#
# The first build of the patched runtime takes about 25 minutes on 2 cores with the shared compiler
# cache (../shared/toolchain), about 3 hours without it; it reports progress and the time left.
# Later runs reuse it. --stock skips it and runs on stock Node.js 22.22.2 with
# --experimental-async-context-frame (labels propagate, but samples carry none).
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

stock=0
if [ "${1:-}" = "--stock" ]; then
  stock=1
  shift
fi

log "installing stock runtimes (cached under ${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}/runtimes)"
scripts/runtimes.sh all
stock_node="$(scripts/runtimes.sh bin primary)/node"

if [ "$stock" = 1 ]; then
  node=$stock_node
  node_flags=(--experimental-async-context-frame)
  log "runtime: stock Node.js 22.22.2 ($node, --stock); per-route heap needs the patched runtime"
else
  log "building (or reusing) the patched runtime: tools/patched-node/build.sh"
  node=$(tools/patched-node/build.sh --print-node-path)
  node_flags=()
  log "runtime: patched Node.js 22.22.2 ($node)"
fi

# One addon build for Node 22 (ABI 127), against the stock headers, serves stock and patched alike:
# it finds the patched runtime's API at run time.
log "building the addon (npm run build with stock Node.js 22.22.2)"
PATH="$(dirname "$stock_node"):$PATH" npm run build --silent

if ! command -v go >/dev/null; then
  log "note: 'go tool pprof' (Debian package golang-go) reads the pprof file the demo writes"
fi

exec "$node" "${node_flags[@]}" --expose-gc demo/run.js "$@"
