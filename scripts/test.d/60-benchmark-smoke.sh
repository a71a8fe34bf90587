#!/usr/bin/env bash
# Smoke run of the whole benchmark suite (benchmark/run.sh --quick, `npm run bench -- --quick`: the
# issue 28 table first, timed instead of callgrind): every benchmark starts, runs
# briefly and reports. It asserts nothing about timing: numbers from a CI run are not measurements.
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"
# The criterion benches build in the test run's cargo directory (scripts/test.sh), not a cold target/.
CARGO_TARGET_DIR="${HEAP_LABELS_TARGET_BASE:-target}/check" exec bash benchmark/run.sh --quick --out "${TMPDIR:-/tmp}/heap-labels-bench-smoke.md"
