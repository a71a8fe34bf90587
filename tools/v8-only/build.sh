#!/usr/bin/env bash
# Builds one V8 line with heap-labels' patch series on V8 alone (no Node.js), and its gtests.
#
#   tools/v8-only/build.sh <line> [--test [gtest args...]] [--jobs N] [--print-test-path]
#   tools/v8-only/build.sh <line> --has-built     exit 0 when the line has completed a build here
#   tools/v8-only/build.sh <line> --prepare       the patched tree and its ninja files, no compile
#   tools/v8-only/build.sh <line> --covered       exit 0 when a build here would not be cold: the line
#                                                 has completed a build here, or a shared toolchain's
#                                                 compiler cache for this line and compiler is complete
#   tools/v8-only/build.sh <line> --unbuildable   exit 0 and say why when this route cannot build the
#                                                 line yet (lines.env's V8_<line>_UNBUILDABLE)
#   tools/v8-only/build.sh --lines          the lines that have a series (v8-patches/<line>/)
#
# <line> is a V8 line of lines.env (13.6, 14.6, 15.2). The source is the V8 tree of the `v8` crate of
# crates.io (fetched with cargo, checked against lines.env's sha256), built with V8's own gn files and
# Chromium's build/ config, with Debian's clang 22 and libstdc++ (args.gn, plus the line's
# V8_<line>_GN_ARGS).
# Debian bookworm's gn (2022-12) is older than these trees: gn_compat.py rewrites the few constructs it
# lacks (none of them changes a compile line). BUILD.gn replaces the crate's root build file with the
# series' gtest executable. compat/<line>/ holds build fixes a line needs for this toolchain that
# upstream V8 lacks, applied after the series (not part of it).
#
# The tree lives in $HEAP_LABELS_CACHE/v8-only/<line>/ (a git checkout of the pristine crate: a change of
# the series restores the files it touched and applies the new one; files that come out unchanged keep
# their mtime, so ninja rebuilds only what changed).
# Every compile goes through ccache ($HEAP_LABELS_CACHE/ccache-v8). Compile lines hold no absolute path,
# so a cache made in one location hits in any other. A cold build is about 2.5-3 hours on 2 cores with
# clang 22 (13.6: 1,751 steps); with a warm cache, minutes. A shared toolchain's read-only compiler caches
# (`ccache-v8`, `ccache-v8-<line>-*`; tools/toolchain.sh says where) seed it once each; the cache's
# COVERAGE file lists the line builds it holds, for whoever would ship it so.
#
# Progress goes to stderr; --print-test-path prints the gtest binary's path on stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lines.env
source "$here/lines.env"

# shellcheck source=../toolchain.sh
source "$repo/tools/toolchain.sh"

log() { echo "[v8-only] $*" >&2; }
die() { log "error: $*"; exit 1; }

# The lines with a patch series in the repository, in lines.env's order.
series_lines() {
  local line
  for line in $V8_LINES; do
    if compgen -G "$repo/v8-patches/$line/*.patch" >/dev/null; then echo "$line"; fi
  done
}

if [ "${1:-}" = "--lines" ]; then series_lines; exit 0; fi
line=${1:-}
[ -n "$line" ] || die "usage: $0 <line> [--test] [--jobs N] [--print-test-path] (lines: $V8_LINES)"
shift
var=${line//./_}
crate_version_var="V8_${var}_CRATE"
crate_sha_var="V8_${var}_CRATE_SHA256"
crate_version=${!crate_version_var:-}
crate_sha=${!crate_sha_var:-}
line_args_var="V8_${var}_GN_ARGS"
line_args=${!line_args_var:-}
unbuildable_var="V8_${var}_UNBUILDABLE"
unbuildable=${!unbuildable_var:-}
[ -n "$crate_version" ] || die "unknown V8 line '$line' (lines.env knows: $V8_LINES)"
series="$repo/v8-patches/$line"
compgen -G "$series/*.patch" >/dev/null || die "no patch series in v8-patches/$line/"

run_test=0
print_test=0
has_built=0
covered=0
prepare_only=0
force=0
jobs=$(nproc)
test_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --test) run_test=1; shift; test_args=("$@"); break ;;
    --jobs) jobs=$2; shift 2 ;;
    --print-test-path) print_test=1; shift ;;
    --has-built) has_built=1; shift ;;
    --covered) covered=1; shift ;;
    --prepare) prepare_only=1; shift ;;
    --force) force=1; shift ;;
    --unbuildable) [ -n "$unbuildable" ] && { echo "$unbuildable"; exit 0; }; exit 1 ;;
    *) die "unknown argument: $1" ;;
  esac
done

cache=${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}
export CCACHE_DIR="${HEAP_LABELS_V8_CCACHE_DIR:-$cache/ccache-v8}"
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
# A line that has completed a build here rebuilds incrementally (minutes); one that never has is a cold
# build of hours.
if [ "$has_built" = 1 ]; then
  [ -f "$cache/v8-only/$line.built" ]
  exit
fi
# A shared toolchain's cache of this line's build with this route's compiler (ccache-v8-<line>-clang22)
# whose COVERAGE says it holds the whole build seeds a build of minutes; anything less is a cold build.
if [ "$covered" = 1 ]; then
  [ -f "$cache/v8-only/$line.built" ] && exit 0
  while IFS= read -r entry; do
    grep -q '^Coverage: complete' "$entry/COVERAGE" 2>/dev/null && exit 0
  done < <(toolchain_entries "ccache-v8-$line-clang22")
  exit 1
fi

ensure_packages() {
  local missing=() entry
  for entry in ccache:ccache ninja:ninja-build gn:generate-ninja git:git \
    /usr/lib/llvm-22/bin/clang++:clang-22 /usr/lib/llvm-22/bin/ld.lld:lld-22 \
    /usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.builtins-x86_64.a:libclang-rt-22-dev; do
    case "$entry" in
      /*) [ -e "${entry%%:*}" ] || missing+=("${entry#*:}") ;;
      *) command -v "${entry%%:*}" >/dev/null 2>&1 || missing+=("${entry#*:}") ;;
    esac
  done
  [ -f /usr/lib/x86_64-linux-gnu/libgtest.a ] || missing+=(libgtest-dev)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Chromium's build/ links clang's runtime builtins from the per-target layout
# (lib/clang/22/lib/x86_64-unknown-linux-gnu/libclang_rt.builtins.a); Debian's libclang-rt-22-dev ships the
# same archive in the per-OS layout (lib/linux/libclang_rt.builtins-x86_64.a). A link bridges the two; it
# changes no compile line.
ensure_clang_rt_layout() {
  local lib=/usr/lib/llvm-22/lib/clang/22/lib
  local want="$lib/x86_64-unknown-linux-gnu/libclang_rt.builtins.a"
  [ -e "$want" ] && return 0
  [ -e "$lib/linux/libclang_rt.builtins-x86_64.a" ] || die "libclang-rt-22-dev has no $lib/linux/libclang_rt.builtins-x86_64.a"
  log "linking $want to Debian's per-OS builtins archive"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" mkdir -p "$(dirname "$want")"
  "${sudo[@]}" ln -sfn ../linux/libclang_rt.builtins-x86_64.a "$want"
}

# Prints the path of the crate file, fetched by cargo into its registry cache and checked.
fetch_crate() {
  local manifest="$cache/v8-only/fetch-$crate_version"
  mkdir -p "$manifest/src"
  printf '[package]\nname = "v8-source-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nv8 = "=%s"\n' \
    "$crate_version" >"$manifest/Cargo.toml"
  : >"$manifest/src/lib.rs"
  cargo fetch --quiet --manifest-path "$manifest/Cargo.toml" >&2
  local crate
  crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"v8-$crate_version.crate" 2>/dev/null | head -n1)
  [ -n "$crate" ] || die "cargo fetched no v8-$crate_version.crate"
  local got
  got=$(sha256sum "$crate" | cut -d' ' -f1)
  [ "$got" = "$crate_sha" ] || die "v8-$crate_version.crate has sha256 $got, lines.env pins $crate_sha"
  echo "$crate"
}

git_tree() { git -C "$tree" -c user.name=heap-labels -c user.email=heap-labels@users.noreply.invalid "$@"; }

# The pristine crate as a git checkout, made once per line and crate version.
ensure_tree() {
  [ "$(cat "$tree/.pristine" 2>/dev/null)" = "$crate_version" ] && return 0
  local crate tmp
  crate=$(fetch_crate)
  log "unpacking $(basename "$crate") into $tree"
  tmp=$(mktemp -d "$cache/v8-only/.unpack.XXXXXX")
  tar -xzf "$crate" -C "$tmp" --strip-components=1
  rm -rf "$tree"
  mv "$tmp" "$tree"
  git -C "$tree" init -q
  # The build directory and this script's markers are not part of the source.
  printf '/out/\n/.pristine\n/.applied\n' >"$tree/.git/info/exclude"
  git_tree add -A
  git_tree commit -q -m "v8 crate $crate_version (pristine)"
  echo "$crate_version" >"$tree/.pristine"
}

# Build fixes this line needs from gcc that upstream V8 lacks (not part of the series; applied after it).
compat_patches() {
  compgen -G "$here/compat/$line/*.patch" || true
}

# Hash of everything that decides the tree's content and compile lines.
tree_key() {
  # shellcheck disable=SC2046 # one path per line, none with spaces
  cat "$here/lines.env" "$here/args.gn" "$here/gn_compat.py" "$here/BUILD.gn" "$0" \
    "$series"/*.patch $(compat_patches) "$repo/v8-patches/test"/*.cc | sha256sum | cut -c1-16
}

# Restores the pristine tree (files only: out/ stays) and applies gn_compat.py, the series and the test
# files. A file that comes out as it was before gets its old mtime back, so ninja rebuilds only what
# a change of the series really changed (a one-patch edit recompiles the units that see it).
apply_series() {
  local key=$1 patch before
  log "applying the $line series (key $key)"
  # Until the whole series is applied the tree matches no key: a failure here leaves it to be redone.
  rm -f "$tree/.applied"
  before=$(mktemp)
  changed_files_state >"$before"
  git_tree checkout -q -- .
  git_tree clean -fdq
  python3 "$here/gn_compat.py" "$tree" >/dev/null
  for patch in "$series"/*.patch $(compat_patches); do
    git_tree apply --directory=v8 "$patch" || die "$(basename "$patch") does not apply to v8 $crate_version"
  done
  cp "$here/BUILD.gn" "$tree/BUILD.gn"
  mkdir -p "$tree/heap_labels_test"
  cp "$repo/v8-patches/test"/*.cc "$tree/heap_labels_test/"
  restore_unchanged_mtimes "$before"
  rm -f "$before"
  echo "$key" >"$tree/.applied"
}

# "<mtime> <sha256> <path>" of every file that differs from the pristine tree (modified or added).
changed_files_state() {
  (
    cd "$tree"
    git ls-files -z -m -o --exclude-standard | while IFS= read -r -d '' f; do
      [ -f "$f" ] && printf '%s %s %s\n' "$(stat -c %Y "$f")" "$(sha256sum <"$f" | cut -c1-64)" "$f"
    done
  )
}

# Gives each file listed by changed_files_state that has the same content now its mtime back.
restore_unchanged_mtimes() {
  local mtime sum f kept=0
  while read -r mtime sum f; do
    if [ -f "$tree/$f" ] && [ "$(sha256sum <"$tree/$f" | cut -c1-64)" = "$sum" ]; then
      touch -m -d "@$mtime" "$tree/$f"
      kept=$((kept + 1))
    fi
  done <"$1"
  log "$kept changed file(s) came out as before and keep their mtime"
}

gn_args() { echo "$(grep -vE '^\s*(#|$)' "$here/args.gn" | tr '\n' ' ')$line_args"; }

# Copies each shared toolchain compiler cache of the V8-only builds into ours once per its COVERAGE
# (ccache 4.7 cannot read a local cache directory as secondary storage).
seed_compiler_cache() {
  local shared seed
  while IFS= read -r shared; do
    seed=$(cat "$shared/COVERAGE" 2>/dev/null | sha256sum | cut -c1-16)
    [ -f "$CCACHE_DIR/.seeded-$seed" ] && continue
    log "seeding $CCACHE_DIR from $shared"
    cp -rn "$shared"/. "$CCACHE_DIR"/
    touch "$CCACHE_DIR/.seeded-$seed"
  done < <(toolchain_entries 'ccache-v8*')
}

# Records in the cache's COVERAGE which line build (crate, tree key, gn args) it now holds.
record_coverage() {
  local entry="v8-only $line crate $crate_version key $key args: $args"
  grep -qxF "$entry" "$CCACHE_DIR/COVERAGE" 2>/dev/null || echo "$entry" >>"$CCACHE_DIR/COVERAGE"
}

# The whole run is one function, read before it starts: editing this file while a build runs cannot
# change what that build goes on to do.
main() {
  ensure_packages
  ensure_clang_rt_layout
  mkdir -p "$cache/v8-only" "$CCACHE_DIR"
  seed_compiler_cache
  tree="$cache/v8-only/$line"
  # One build of a line at a time: a second caller waits for the first (the test step's timeout bounds
  # the wait).
  exec 8>"$tree.lock"
  if ! flock -n 8; then
    log "another build of V8 $line is running; waiting for it"
    flock 8
  fi
  ensure_tree
  key=$(tree_key)
  [ "$(cat "$tree/.applied" 2>/dev/null)" = "$key" ] || apply_series "$key"

  out="$tree/out/clang"
  args=$(gn_args)
  if [ ! -f "$out/build.ninja" ] || [ "$(cat "$out/.heap-labels-args" 2>/dev/null)" != "$args" ]; then
    log "gn gen out/clang"
    (cd "$tree" && gn gen out/clang --args="$args" >&2)
    echo "$args" >"$out/.heap-labels-args"
  fi
  [ "$prepare_only" = 1 ] && { log "prepared $out"; exit 0; }
  if [ -n "$unbuildable" ] && [ "$force" = 0 ]; then
    die "V8 $line cannot be built on this route yet (--force tries anyway): $unbuildable"
  fi
  log "building sample_labels_unittest (ninja -j$jobs; compiler cache $CCACHE_DIR)"
  start=$SECONDS
  ninja -C "$out" -j "$jobs" sample_labels_unittest >&2
  log "built in $((SECONDS - start))s ($(ccache -s 2>/dev/null | grep -iE '^ *(hits|misses)' | tr -s ' ' | tr '\n' ';'))"
  echo "$key" >"$tree.built"
  record_coverage

  [ "$print_test" = 1 ] && echo "$out/sample_labels_unittest"
  if [ "$run_test" = 1 ]; then
    log "running the $line gtests"
    exec "$out/sample_labels_unittest" "${test_args[@]}"
  fi
}

main; exit "$?"
