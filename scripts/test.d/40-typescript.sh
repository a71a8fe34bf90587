#!/usr/bin/env bash
# Type-checks lib/index.d.ts, lib/report/*.d.ts, the integrations' lib/integrations/*.d.ts and
# lib/instrument/*.d.ts against
# tests/types/*.ts (every export used as the README shows, with the frameworks' own types from
# the devDependencies, and misuse it must reject), and lib/'s calls into the native addon against
# lib/native-addon.d.ts, the declarations generated from the Rust signatures
# (tests/types/tsconfig.lib.json), with TypeScript from the npm registry, installed once into the
# cache (scripts/typescript.sh).
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"
tsc=$(bash scripts/typescript.sh) || exit 1
ln -sfn "$(dirname "$(dirname "$tsc")")" tests/types/node_modules
trap 'rm -f tests/types/node_modules' EXIT
status=0
"$tsc" -p tests/types/tsconfig.json && echo "lib/index.d.ts, lib/report/*.d.ts, lib/integrations/*.d.ts, lib/instrument/*.d.ts: type check passed" || status=1
"$tsc" -p tests/types/tsconfig.lib.json && echo "lib/'s calls into the addon (lib/native-addon.d.ts): type check passed" || status=1
exit "$status"
