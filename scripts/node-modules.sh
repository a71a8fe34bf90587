#!/usr/bin/env bash
# Installs the package's dependencies into node_modules/ of this checkout as package-lock.json pins
# them (`npm ci`, with the primary stock runtime's npm), when node_modules/ is missing or older than
# package.json or the lock; otherwise does nothing. The library needs node-gyp-build (its loader);
# the tests need the devDependencies (frameworks, eslint, TypeScript's types), so both are installed.
# Used by demo/run.sh and scripts/test.sh: a fresh clone has no node_modules/.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
installed=node_modules/.package-lock.json
if [[ -f $installed && $installed -nt package-lock.json && $installed -nt package.json ]]; then
  exit 0
fi
echo "node-modules: installing the package's dependencies (npm ci)" >&2
bin="$(bash scripts/runtimes.sh bin primary)"
PATH="$bin:$PATH" npm ci --no-audit --no-fund --loglevel=error
