#!/usr/bin/env bash
# The labeled-runtime recipe's source selection (tools/patched-node/build.sh --node-source): which
# V8 patch series a Node.js source of each supported line selects, and the sources it refuses. Uses
# synthetic sources and --print-selection: nothing is built (tests/install/node-source.js).
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"
bin="$(bash scripts/runtimes.sh bin primary)" || exit 1
PATH="$bin:$PATH" node --test --test-reporter=spec tests/install/node-source.js
