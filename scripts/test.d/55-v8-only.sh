#!/usr/bin/env bash
# The V8 patch series of every line beyond Node.js 22 (v8-patches/<line>/, lines in
# tools/v8-only/lines.env), each built on V8 alone from the `v8` crate's tree and tested with its
# gtests (tools/v8-only/build.sh <line> --test).
#
# Only a line whose build is covered runs here: one that has completed a build here (an incremental
# rebuild of minutes) or one a shared toolchain's complete compiler cache seeds (`build.sh --covered`).
# A build of a covered line that does not finish within the budget fails the step, like a build or a
# test that fails. Any other line would be a cold build of hours on 2 cores, more than a CI run has: it is
# reported skipped in seconds, with the command that builds it, and never started here.
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
  if ! "$build" "$line" --covered; then
    cat >&2 <<MSG
################################################################################################
# SKIPPED: V8 $line has not completed a build here and no shared compiler cache covers it: its
# first build is cold (about 2.5-3 hours on 2 cores), so its gtests did not run. Build it once
# outside the test run with: tools/v8-only/build.sh $line
################################################################################################
MSG
    continue
  fi
  built_before=0
  "$build" "$line" --has-built && built_before=1
  echo "V8 $line: building (at most ${left}s; built here before: $built_before) and running its gtests" >&2
  start=$SECONDS
  timeout "$left" nice -n 5 "$build" "$line" --print-test-path >/dev/null
  rc=$?
  echo "V8 $line: build step took $((SECONDS - start))s (exit $rc)" >&2
  if (( rc == 124 )); then
    echo "V8 $line: a covered build did not finish within ${left}s" >&2
    status=1
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
