#!/usr/bin/env bash
# The project's whole test run (`npm test`, and `.ci/run`): sets up what the tests need, then runs
#   1. Rust checks: cargo fmt --check, cargo clippy -D warnings, cargo test (the workspace);
#   2. for every runtime in RUNTIMES: build the addon for it and run the JS tests with it first on
#      PATH;
#   3. every executable scripts/test.d/*.sh, in name order (extra steps, e.g. the patched runtime
#      or the go-pprof reader tests), each run with REPO, HEAP_LABELS_CACHE and the helper
#      functions' environment.
# Every step runs even when an earlier one failed; the summary at the end lists them and the exit
# status is non-zero when any failed.
#
# Environment: HEAP_LABELS_CACHE (runtime cache, default ~/.cache/heap-labels),
# HEAP_LABELS_TEST_RUNTIMES (space-separated subset of RUNTIMES names to run, default all),
# HEAP_LABELS_TEST_BUDGET_MIN (minutes the whole run may take, default 85: CI allows 90).
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO
export HEAP_LABELS_CACHE="${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}"
# Cargo's build directories live in the cache, as the compiler caches do, so that a fresh clone
# reuses the dependencies compiled by earlier runs (the workspace's own crates rebuild when the
# checkout moves): <cache>/cargo-target/check (clippy, tests, benches), node-abi<N> (the addon per
# runtime, scripts/build.js), loom. Correctness never depends on it: cargo rebuilds what changed.
export HEAP_LABELS_TARGET_BASE="${HEAP_LABELS_TARGET_BASE:-$HEAP_LABELS_CACHE/cargo-target}"
cd "$REPO"

# name|node version|NODE_OPTIONS for the tests: the stock release scripts/runtimes.sh pins for each
# supported line (the lines are NODE_LINES of tools/patched-node/versions.env), named by its major
# version, and the primary one (Node.js 22, where AsyncContextFrame is off by default) once more with
# it on.
PRIMARY="$(bash scripts/runtimes.sh primary)" || exit 1
RUNTIMES=()
while read -r version; do
  RUNTIMES+=("node${version%%.*}|$version|")
  if [[ $version == "$PRIMARY" ]]; then
    RUNTIMES+=("node${version%%.*}-acf|$version|--experimental-async-context-frame")
  fi
done < <(bash scripts/runtimes.sh list)

# Debian packages the tests (and later steps) need: command -> package.
APT_NEEDS=(
  "go:golang-go"
  "ccache:ccache"
  "g++:build-essential"
  "openssl:openssl"
  "chromium:chromium"
  "clang-format:clang-format"
)

PASSED=()
FAILED=()
# "<seconds> <name>" of every step, for the summary.
TIMES=()

log() { echo "test.sh: $*" >&2; }
banner() { printf '\n======== %s ========\n' "$*"; }

# run_step <name> <command...>: runs one step, records the result.
run_step() {
  local name="$1"
  shift
  banner "$name"
  local start=$SECONDS status=0
  "$@" || status=$?
  if ((status == 0)); then
    PASSED+=("$name")
    log "$name passed in $((SECONDS - start))s"
  else
    FAILED+=("$name")
    log "$name FAILED after $((SECONDS - start))s"
  fi
  TIMES+=("$((SECONDS - start)) $name")
}

# The lines of a failed step's output that say why (the test runners' failure and assertion lines),
# from the run's log (RUN_LOG): CI shows only the end of a run's output.
why_failed() {
  awk -v banner="======== $1 ========" '$0 == banner { on = 1; next } /^======== / { on = 0 } on' "$RUN_LOG" |
    grep -aE '✖|^ *not ok|AssertionError|Error:|FAILED|^ *[+-] |expected|actual|SKIPPED' |
    grep -av '^test.sh: ' | tail -n 25 | cut -c1-400
}

ensure_apt_packages() {
  local missing=() entry
  for entry in "${APT_NEEDS[@]}"; do
    command -v "${entry%%:*}" >/dev/null 2>&1 || missing+=("${entry#*:}")
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  log "installing Debian packages: ${missing[*]}"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_rust() {
  if ! command -v cargo >/dev/null 2>&1; then
    log "cargo is missing: install a Rust toolchain (rustup) with rustfmt and clippy"
    return 1
  fi
}

# The dependencies and devDependencies (the frameworks the integration tests run against,
# TypeScript's framework types) as package-lock.json pins them (scripts/node-modules.sh).
ensure_node_modules() {
  bash scripts/node-modules.sh
}

setup() {
  ensure_apt_packages && ensure_rust && bash scripts/runtimes.sh all && ensure_node_modules
}

runtime_bin() { bash scripts/runtimes.sh bin "$1"; }

rust_checks() {
  # cpp/ is compiled against one runtime's headers for the Rust-only checks.
  local include
  include="$(bash scripts/runtimes.sh path primary)/include/node" || return 1
  HEAP_LABELS_NODE_INCLUDE="$include" CARGO_TARGET_DIR="$HEAP_LABELS_TARGET_BASE/check" bash -c '
    set -e
    cargo fmt --all --check
    nice -n 10 cargo clippy --workspace --all-targets -- -D warnings
    nice -n 10 cargo test --workspace
  '
}

# Test files that exercise no runtime-specific behaviour: the report CLI and its hostile inputs (pure
# JS over files), the readers' fuzzers, code written for node:v8's labels API (which only the
# patched runtime has), and the agreement of the lists of supported lines (files only). They run on
# the primary runtime (and scripts/test.d's patched-runtime step), not once more on every other
# runtime: that keeps CI within its time budget.
PRIMARY_ONLY_TESTS=(report-hostile report fuzz kibana-shape supported-lines)

# js_tests <version> <node options> [all|secondary]: builds the addon for that runtime and runs
# tests/*.test.js (secondary: without PRIMARY_ONLY_TESTS, said so in the output).
js_tests() {
  local version="$1" node_options="$2" which="${3:-all}" bin files=() f name skip
  bin="$(runtime_bin "$version")" || return 1
  for f in tests/*.test.js; do
    name=$(basename "$f" .test.js)
    skip=0
    if [[ $which == secondary ]]; then
      for skipped in "${PRIMARY_ONLY_TESTS[@]}"; do [[ $name == "$skipped" ]] && skip=1; done
    fi
    ((skip)) || files+=("$f")
  done
  (
    export PATH="$bin:$PATH"
    unset HEAP_LABELS_NODE_INCLUDE HEAP_LABELS_NODE
    echo "node $(node --version) (NODE_OPTIONS=${node_options:-none})"
    if [[ $which == secondary ]]; then
      echo "SKIPPED on this runtime (runtime-independent; they run on the primary one): ${PRIMARY_ONLY_TESTS[*]}"
    fi
    # --check-types: lib/native-addon.d.ts stays as checked in; tests/native-types.test.js compares it
    # with what this build generated.
    nice -n 10 node scripts/build.js --check-types || exit 1
    # A hung test fails after 3 minutes instead of holding CI.
    NODE_OPTIONS="$node_options" node --test --test-reporter=spec --test-timeout=180000 "${files[@]}"
  )
}

extra_steps() {
  local script
  for script in scripts/test.d/*.sh; do
    [[ -x "$script" ]] || continue
    run_step "$(basename "$script" .sh)" "$script"
  done
}

selected() {
  [[ -z "${HEAP_LABELS_TEST_RUNTIMES:-}" ]] && return 0
  [[ " $HEAP_LABELS_TEST_RUNTIMES " == *" $1 "* ]]
}

main() {
  local total_start=$SECONDS
  RUN_LOG=$(mktemp "${TMPDIR:-/tmp}/heap-labels-test-run.XXXXXX.log")
  exec > >(tee "$RUN_LOG") 2>&1
  # Steps that could run long (the patched runtime's build) fit what is left of this budget.
  export HEAP_LABELS_TEST_DEADLINE=$(( $(date +%s) + ${HEAP_LABELS_TEST_BUDGET_MIN:-85} * 60 ))
  run_step setup setup
  if [[ " ${FAILED[*]} " == *" setup "* ]]; then
    log "setup failed; nothing else can run"
    exit 1
  fi
  run_step rust rust_checks
  local entry name version options
  for entry in "${RUNTIMES[@]}"; do
    IFS='|' read -r name version options <<<"$entry"
    selected "$name" || continue
    if [[ $name == "node${PRIMARY%%.*}" ]]; then
      run_step "js-$name" js_tests "$version" "$options" all
    else
      run_step "js-$name" js_tests "$version" "$options" secondary
    fi
  done
  shopt -s nullglob
  extra_steps

  banner "summary ($((SECONDS - total_start))s)"
  local step
  for step in "${PASSED[@]}"; do echo "  ok      $step"; done
  for step in "${FAILED[@]}"; do echo "  FAILED  $step"; done
  echo "time per step:"
  for step in "${TIMES[@]}"; do printf '  %6ss  %s\n' "${step%% *}" "${step#* }"; done
  echo "steps: ${#PASSED[@]} passed, ${#FAILED[@]} failed"
  # Last, where a reader of the run's tail sees it.
  for step in "${FAILED[@]}"; do
    echo "why $step failed (from $RUN_LOG):"
    why_failed "$step" | sed 's/^/    /'
  done
  ((${#FAILED[@]} == 0))
}

main "$@"
