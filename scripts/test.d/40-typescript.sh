#!/usr/bin/env bash
# Type-checks lib/index.d.ts, lib/report/*.d.ts and the integrations' lib/integrations/*.d.ts against
# tests/types/*.ts (every export used as the README shows, with the frameworks' own types from
# the devDependencies, and misuse it must reject) with TypeScript from the npm registry, installed
# once into the cache.
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"
tools="${HEAP_LABELS_CACHE:?}/typescript-5.9.3"
if [[ ! -x "$tools/node_modules/.bin/tsc" ]]; then
  mkdir -p "$tools"
  echo '{"private":true}' > "$tools/package.json"
  (cd "$tools" && npm install --silent --no-audit --no-fund typescript@5.9.3 @types/node@22) || exit 1
fi
ln -sfn "$tools/node_modules" tests/types/node_modules
trap 'rm -f tests/types/node_modules' EXIT
"$tools/node_modules/.bin/tsc" -p tests/types/tsconfig.json && echo "lib/index.d.ts, lib/report/*.d.ts, lib/integrations/*.d.ts: type check passed"
