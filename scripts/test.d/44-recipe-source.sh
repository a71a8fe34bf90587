#!/usr/bin/env bash
# The labeled-runtime recipe's sources and patches, without building anything:
#   - source selection (tools/patched-node/build.sh --node-source): which patch series a Node.js source
#     of each supported line selects, and the sources it refuses (tests/install/node-source.js, on
#     synthetic sources with --print-selection);
#   - that every series the recipe applies to a line applies to that line's release files where they
#     are here: the pinned tarball for 22, the stock runtimes' own lib/ files for 24 and 26
#     (tools/patched-node/check-node-patches.sh; what is not here is reported as skipped, with why).
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"
bin="$(bash scripts/runtimes.sh bin primary)" || exit 1
status=0
PATH="$bin:$PATH" node --test --test-reporter=spec tests/install/node-source.js || status=1
# It reads the stock runtimes that the setup step installed; it installs and downloads nothing.
PATH="$bin:$PATH" bash tools/patched-node/check-node-patches.sh || status=1
exit "$status"
