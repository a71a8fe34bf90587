#!/usr/bin/env bash
# Runs the whole benchmark suite and writes the results as markdown (`npm run bench`).
#
#   benchmark/run.sh [--quick] [--targets-only] [--out FILE]
#
#   full (default)  first the cost figures of issue 28 next to their anchors and targets
#                   (benchmark/targets.js: start-up, label calls, memory per sample, reads, dump pause,
#                   latency under scrapes), printed as one table on stdout; then the criterion
#                   benches of the Rust core (cargo bench), the other in-process benchmarks and the
#                   HTTP overhead benchmark, on stock Node.js 22.22.2 and, when it has been built, the
#                   patched (labeled) runtime; writes all of it to benchmark/results/<date>.md. Takes
#                   about 40 minutes idle (half of it callgrind). Run it on an otherwise idle machine: the
#                   numbers are ratios of runs side by side, but a busy machine still widens their
#                   spread.
#   --quick         a smoke run of everything (criterion in --test mode, tiny durations, times instead
#                   of callgrind): checks that each benchmark runs, asserts nothing about timing;
#                   writes to $TMPDIR unless --out.
#   --targets-only  the issue 28 table (and its benchmarks' sections) only.
#
# Needs: npm and cargo (the setup installs the stock runtimes and builds the addon), taskset for CPU
# pinning of the HTTP benchmark (optional).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

quick=0
targets_only=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --targets-only) targets_only=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "benchmark/run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { echo "bench: $*" >&2; }

day=$(date -u +%Y-%m-%d)
if [ -z "$out" ]; then
  if [ "$quick" = 1 ]; then
    out="${TMPDIR:-/tmp}/heap-labels-bench-quick-$day.md"
  else
    mkdir -p benchmark/results
    out="benchmark/results/$day.md"
  fi
fi
mkdir -p "$(dirname "$out")"

log "runtimes"
stock_node="$(scripts/runtimes.sh bin primary)/node"
patched_node=""
if p=$(tools/patched-node/build.sh --print-node-path --cached-only 2>/dev/null); then
  patched_node=$p
else
  log "no patched runtime built (tools/patched-node/build.sh): the patched rows are left out"
fi

# One addon build for ABI 127 (Node 22) serves both: it finds the patched API at run time.
log "building the addon (npm run build with stock 22.22.2)"
PATH="$(dirname "$stock_node"):$PATH" npm run build --silent >&2

runtime_args=(--runtime "stock=$stock_node")
[ -n "$patched_node" ] && runtime_args+=(--runtime "patched=$patched_node")
quick_arg=()
[ "$quick" = 1 ] && quick_arg=(--quick)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
  if [ "$quick" = 1 ]; then echo "# Benchmark smoke run (--quick), $day"; else echo "# Benchmark results, $day"; fi
  echo
  [ "$quick" = 1 ] && { echo "Quick mode: tiny durations, the numbers below mean nothing."; echo; }
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, $(uname -r)"
  echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  # Paths as the results file shows them: the home directory as ~, so no machine's path is kept.
  shown() { echo "${1/#$HOME/\~}"; }
  echo "- stock: $(shown "$stock_node") ($("$stock_node" --version), V8 $("$stock_node" -p process.versions.v8))"
  if [ -n "$patched_node" ]; then
    echo "- patched: $(shown "$patched_node") ($("$patched_node" --version), V8 $("$patched_node" -p process.versions.v8); $(head -1 "$(dirname "$patched_node")/../BUILDINFO" 2>/dev/null || echo 'no BUILDINFO'))"
  else
    echo "- patched: not built (tools/patched-node/build.sh): patched rows missing"
  fi
  echo "- heap-labels: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- lib src cpp core 2>/dev/null || echo ' (with uncommitted changes in lib/src/cpp/core)')"
  for rt in "$stock_node" ${patched_node:+"$patched_node"}; do
    echo "- capabilities on $("$rt" --version) $( [ "$rt" = "$stock_node" ] && echo stock || echo patched ): $("$rt" --experimental-async-context-frame -e '
      const c = require("./lib").capabilities();
      console.log(`sampleLabels ${c.sampleLabels}, externalBytes ${c.externalBytes}, asyncContextFrame ${c.asyncContextFrame}`)')"
  done
  echo
} > "$tmp/header.md"

status=0

# The issue 28 table first: printed on stdout as soon as it is measured, and at the top of the
# results. Its benchmarks' own sections (read-profile, memory-per-sample and dump-pause among them,
# which the in-process section used to run again) come after the in-process section.
log "issue 28 targets (benchmark/targets.js)"
if ! "$stock_node" benchmark/targets.js --stock "$stock_node" ${patched_node:+--labeled "$patched_node"} "${quick_arg[@]}" \
    --sections "$tmp/targets" > "$tmp/targets.md"; then
  status=1
fi
cat "$tmp/targets.md"
{
  echo "## Measurements of the issue 28 table"
  echo
  for section in startup call-instructions new-sets memory-per-sample read-profile dump-pause scrape-latency; do
    if [ -f "$tmp/targets/$section.md" ]; then cat "$tmp/targets/$section.md"; echo; else echo "**$section failed** (see the log)"; echo; fi
  done
} > "$tmp/targets-sections.md"

if [ "$targets_only" = 1 ]; then
  cat "$tmp/header.md" "$tmp/targets.md" "$tmp/targets-sections.md" > "$out"
  log "results: $out"
  exit $status
fi

log "criterion (cargo bench --manifest-path core/Cargo.toml)"
{
  echo "## Rust core (criterion)"
  echo
  if [ "$quick" = 1 ]; then
    echo "Quick mode: each benchmark runs once as a test (\`cargo bench -- --test\`)."
    echo
    if cargo bench --manifest-path core/Cargo.toml -- --test > "$tmp/criterion.log" 2>&1; then
      echo "$(grep -c '^Success' "$tmp/criterion.log") benchmarks ran once, all succeeded."
    else
      echo "**cargo bench -- --test failed:**"
      echo '```'
      tail -30 "$tmp/criterion.log"
      echo '```'
      status=1
    fi
  else
    echo "\`cargo bench --manifest-path core/Cargo.toml\`; criterion's estimate [low mean high] per benchmark."
    echo
    echo '```'
    if ! cargo bench --manifest-path core/Cargo.toml 2>&1 | tee "$tmp/criterion.log" >&2; then
      echo "cargo bench failed"
      status=1
    fi
    # "name  time: [low mean high]" (long names print the time on the next line) and throughput;
    # criterion's "change:" block against an earlier run is left out.
    awk '
      /^Benchmarking/ { next }
      /^[^ ].* +time: / { name = $0; sub(/ +time:.*/, "", name); inchange = 0; t = $0; sub(/^[^ ]+ +/, "", t)
                          printf "%-58s %s\n", name, t; next }
      /^[^ ]+$/ { name = $0; inchange = 0; next }
      /^ +change:/ { inchange = 1; next }
      /^ +time:/ && !inchange { t = $0; sub(/^ +/, "", t); printf "%-58s %s\n", name, t; next }
      /^ +thrpt:/ && !inchange { t = $0; sub(/^ +/, "", t); printf "%-58s %s\n", "", t; next }
    ' "$tmp/criterion.log"
    echo '```'
  fi
  echo
} > "$tmp/criterion.md"

echo "## In-process (Node.js)" > "$tmp/inprocess.md"
echo >> "$tmp/inprocess.md"
run_js() {
  local name=$1; shift
  log "$name"
  if ! "$stock_node" "$@" >> "$tmp/inprocess.md"; then
    echo "**$name failed** (see the log)" >> "$tmp/inprocess.md"
    status=1
  fi
}
run_js alloc-loop benchmark/inprocess/alloc-loop.js "${runtime_args[@]}" "${quick_arg[@]}"
for rt in "$stock_node" ${patched_node:+"$patched_node"}; do
  name=$([ "$rt" = "$stock_node" ] && echo stock || echo patched)
  log "context ($name)"
  if ! "$rt" --experimental-async-context-frame benchmark/inprocess/context.js --name "$name" "${quick_arg[@]}" >> "$tmp/inprocess.md"; then
    echo "**context.js failed on $rt**" >> "$tmp/inprocess.md"
    status=1
  fi
done
run_js counters benchmark/inprocess/counters.js "${runtime_args[@]}" "${quick_arg[@]}"
run_js group-stats benchmark/inprocess/group-stats.js "${runtime_args[@]}" "${quick_arg[@]}"

log "http"
{
  echo "## HTTP overhead"
  echo
} > "$tmp/http.md"
if ! "$stock_node" benchmark/http/bench.js --stock "$stock_node" ${patched_node:+--patched "$patched_node"} "${quick_arg[@]}" >> "$tmp/http.md"; then
  echo "**HTTP benchmark failed** (see the log)" >> "$tmp/http.md"
  status=1
fi

# Instruction counts per request (callgrind): full runs only, they take about 15 minutes; they need
# the patched runtime for their patched rows and valgrind (Debian's valgrind package).
if [ "$quick" = 0 ] && [ -n "$patched_node" ] && command -v valgrind >/dev/null; then
  log "http instructions (callgrind)"
  echo >> "$tmp/http.md"
  if ! "$stock_node" benchmark/http/instructions.js --node "$patched_node" --stock "$stock_node" >> "$tmp/http.md"; then
    echo "**instruction-count benchmark failed** (see the log)" >> "$tmp/http.md"
    status=1
  fi
fi

cat "$tmp/header.md" "$tmp/targets.md" "$tmp/criterion.md" "$tmp/inprocess.md" "$tmp/targets-sections.md" "$tmp/http.md" > "$out"
log "results: $out"
exit $status
