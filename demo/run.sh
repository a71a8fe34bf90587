#!/usr/bin/env bash
# The heap-labels demo from a fresh clone on a fresh machine of this kind: installs the stock runtimes
# (scripts/runtimes.sh) and the package's dependencies (scripts/node-modules.sh: npm ci, when
# node_modules/ is missing or outdated), builds (or reuses) the patched Node.js 22.22.2 runtime
# (tools/patched-node/build.sh: crypto, TLS, inspector, Intl, AsyncContextFrame on, per-sample
# labels), builds the addon (npm run build; one build serves stock and patched) and runs demo/run.js,
# which ends with the per-route heap table.
#
#   demo/run.sh [--stock | --no-runtime-build] [demo/run.js options, e.g. --requests 20000 --out DIR]
#
# The first build of the patched runtime is cold without a compiler cache (hours on 2 cores) and
# incremental with one (../shared/toolchain); it says which before it starts, then tools/patched-node/
# build.sh reports progress and the time left. The measured times per case are in
# docs/building-the-runtime.md ("Building the patched Node.js"), the one place that states them.
# Later runs reuse it. --stock skips it and runs on stock Node.js 22.22.2
# with --experimental-async-context-frame (labels propagate, but samples carry none).
# --no-runtime-build never builds the runtime: it reuses a built one, and without one stops with exit
# status 3 and what to do (what the test of a fresh clone runs).
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
runtime_build=1
case "${1:-}" in
  --stock) stock=1; shift ;;
  --no-runtime-build) runtime_build=0; shift ;;
esac

log "installing stock runtimes (cached under ${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}/runtimes)"
scripts/runtimes.sh all
stock_node="$(scripts/runtimes.sh bin primary)/node"

log "installing the package's dependencies when missing or outdated (scripts/node-modules.sh)"
scripts/node-modules.sh

build=tools/patched-node/build.sh
times="docs/building-the-runtime.md#building-the-patched-nodejs"
if [ "$stock" = 1 ]; then
  node=$stock_node
  node_flags=(--experimental-async-context-frame)
  log "runtime: stock Node.js 22.22.2 ($node, --stock); per-route heap needs the patched runtime"
else
  if ! "$build" --print-node-path --cached-only >/dev/null 2>&1; then
    if [ "$runtime_build" = 0 ]; then
      log "the patched runtime is not built, and --no-runtime-build does not build it. Build it with"
      log "  $build   (measured build times: $times)"
      log "then rerun; or run the demo now on stock Node.js, without per-route heap: demo/run.sh --stock"
      exit 3
    fi
    kind="a cold build: no compiler cache yet, hours on 2 cores"
    if "$build" --has-compiler-cache; then kind="an incremental build from the compiler cache"; fi
    log "the patched runtime is not built yet: building it now ($kind; measured times: $times; later runs reuse it)."
    log "To run the demo now on stock Node.js instead, without per-route heap: demo/run.sh --stock"
  fi
  # Reuses the built runtime (and installs this checkout's heap-labels into it) or builds it.
  node=$("$build" --print-node-path)
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
