#!/usr/bin/env bash
# The README's first command, demo/run.sh, from a fresh clone of this repository's HEAD
# (tests/install/demo-fresh-clone.js): no node_modules/, no build/, the PATH this run started with.
# After the patched runtime's step, so the demo runs on that runtime when it is built; it never
# starts a runtime build (--no-runtime-build), and runs on stock Node.js too.
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"
export HEAP_LABELS_FRESH_PATH="$PATH"
primary_bin="$(bash scripts/runtimes.sh bin primary)" || exit 1
PATH="$primary_bin:$PATH" node --test --test-reporter=spec --test-timeout=3600000 tests/install/demo-fresh-clone.js
