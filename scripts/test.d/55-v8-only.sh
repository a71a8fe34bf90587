#!/usr/bin/env bash
# The V8 patch series of every line beyond Node.js 22 (v8-patches/<line>/, lines in
# tools/v8-only/lines.env), each built on V8 alone from the `v8` crate's tree and tested with its
# gtests (tools/v8-only/build.sh <line> --test).
#
# A line that has completed a build here rebuilds in minutes, so a build of it that does not finish
# within the budget fails the step, like a build or a test that fails. A line's first (cold) build takes
# hours on 2 cores, more than a CI run has: it stops when the budget runs out, says so loudly, and
# resumes where it stopped on the next run (ninja's state and ccache persist).
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"

build=tools/v8-only/build.sh
# Left for the steps after this one (the install test and the benchmark smoke run, about 8 minutes).
reserve=900
status=0
for line in $("$build" --lines); do
  if why=$("$build" "$line" --unbuildable); then
    echo "SKIPPED: V8 $line: $why" >&2
    continue
  fi
  left=$(( ${HEAP_LABELS_TEST_DEADLINE:-$(( $(date +%s) + 7200 ))} - $(date +%s) - reserve ))
  if (( left < 120 )); then
    echo "SKIPPED: V8 $line: no time left in this run's budget" >&2
    continue
  fi
  built_before=0
  "$build" "$line" --has-built && built_before=1
  echo "V8 $line: building (at most ${left}s; built here before: $built_before) and running its gtests" >&2
  timeout "$left" nice -n 5 "$build" "$line" --print-test-path >/dev/null
  rc=$?
  if (( rc == 124 && built_before == 1 )); then
    echo "V8 $line: an incremental build did not finish within ${left}s" >&2
    status=1
    continue
  fi
  if (( rc == 124 )); then
    cat >&2 <<MSG
################################################################################################
# SKIPPED: the first build of V8 $line did not finish within this run's time budget (${left}s), so
# its gtests did not run. It resumes where it stopped on the next run (or run
# tools/v8-only/build.sh $line).
################################################################################################
MSG
    continue
  fi
  if (( rc != 0 )); then
    echo "V8 $line: the build failed" >&2
    status=1
    continue
  fi
  # A hung test fails after 10 minutes instead of holding the run.
  timeout 600 "$build" "$line" --test --gtest_brief=1 || status=1
done
exit $status
