#!/usr/bin/env bash
# The V8 patch series of every line beyond Node.js 22 (v8-patches/<line>/, lines in
# tools/v8-only/lines.env), each built on V8 alone from the `v8` crate's tree and tested with its
# gtests (tools/v8-only/build.sh <line> --test).
#
# With a warm compiler cache a line takes minutes; a cold one about 2 hours on 2 cores, more than a CI
# run has. A build that does not fit what is left of this run's budget stops, says so loudly, and
# resumes where it stopped on the next run (ninja's state and ccache persist). A build or a test that
# fails fails the step.
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"

build=tools/v8-only/build.sh
# Left for the steps after this one (the benchmark smoke run).
reserve=600
status=0
for line in $("$build" --lines); do
  left=$(( ${HEAP_LABELS_TEST_DEADLINE:-$(( $(date +%s) + 7200 ))} - $(date +%s) - reserve ))
  if (( left < 120 )); then
    echo "SKIPPED: V8 $line: no time left in this run's budget" >&2
    continue
  fi
  echo "V8 $line: building (incremental, at most ${left}s) and running its gtests" >&2
  timeout "$left" nice -n 5 "$build" "$line" --print-test-path >/dev/null
  rc=$?
  if (( rc == 124 )); then
    cat >&2 <<MSG
################################################################################################
# SKIPPED: the V8 $line build did not finish within this run's time budget (${left}s). It resumes
# where it stopped on the next run (or run tools/v8-only/build.sh $line).
################################################################################################
MSG
    continue
  fi
  if (( rc != 0 )); then
    echo "V8 $line: the build failed" >&2
    status=1
    continue
  fi
  "$build" "$line" --test --gtest_brief=1 || status=1
done
exit $status
