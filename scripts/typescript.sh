#!/usr/bin/env bash
# Prints the path of the TypeScript compiler the tests use (typescript 5.9.3 with @types/node 22 from
# the npm registry), installing it once into ${HEAP_LABELS_CACHE:-~/.cache/heap-labels}/typescript-5.9.3.
# Used by scripts/test.d/40-typescript.sh (the .d.ts checks) and tests/kibana-shape.test.js.
set -euo pipefail
tools="${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}/typescript-5.9.3"
if [[ ! -x "$tools/node_modules/.bin/tsc" ]]; then
  mkdir -p "$tools"
  echo '{"private":true}' > "$tools/package.json"
  (cd "$tools" && npm install --silent --no-audit --no-fund typescript@5.9.3 @types/node@22) >&2
fi
echo "$tools/node_modules/.bin/tsc"
