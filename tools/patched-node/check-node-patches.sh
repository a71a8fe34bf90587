#!/usr/bin/env bash
# Checks, for every Node.js line the recipe supports (NODE_LINES of versions.env), that the patches the
# recipe applies to a source of that line apply to the real files of that line's release: the Node.js
# series (node-patches/<major>/, applied to the tree's root) and the V8 series (v8-patches/<V8 line>/,
# applied to deps/v8), each in order, as build.sh applies them, in a scratch tree outside the
# repository. Nothing is built and nothing is downloaded.
#
#   tools/patched-node/check-node-patches.sh [--files DIR]
#
# The release of a line: the pinned NODE_VERSION for its line, the one scripts/runtimes.sh pins for
# each of the others (`scripts/runtimes.sh list`). Each file a patch changes is taken from the first of:
#   1. DIR/node-v<version>/<path>: files fetched from the release (for instance nodejs/node's files at
#      the release's tag, read through a source index);
#   2. the pinned source tarball of versions.env, for its own version (the shared toolchain folder,
#      $HEAP_LABELS_NODE_TARBALL or the download cache; sha256-verified, never downloaded here);
#   3. for lib/*.js, the stock runtime of that version in the runtime cache (scripts/runtimes.sh
#      installs it): a release's binary carries its lib/ files verbatim (builtin-sources.js).
# A series some of whose files none of these has is reported as skipped, naming the files and why,
# and does not fail the check. Exit status: 1 when a series does not apply, else 0.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
source "$here/lib.sh"
source "$here/node-source.sh"

files_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --files) [ $# -ge 2 ] || die "--files needs a directory"; files_dir=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done

cache=${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/heap-labels-node-patches.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The release checked for a Node.js major: the pinned one for its line, else the one runtimes.sh pins.
release_of() {
  local major=$1 v
  if [ "${NODE_VERSION%%.*}" = "$major" ]; then echo "$NODE_VERSION"; return; fi
  for v in $(bash "$repo/scripts/runtimes.sh" list); do
    [ "${v%%.*}" = "$major" ] && { echo "$v"; return; }
  done
  return 1
}

# The pinned tarball, when it is here already (never downloaded by this check).
pinned_tarball() {
  local c
  for c in "${HEAP_LABELS_NODE_TARBALL:-}" $(toolchain_dirs | sed "s|\$|/$NODE_TARBALL|") "$cache/downloads/$NODE_TARBALL"; do
    [ -n "$c" ] && [ -f "$c" ] && [ "$(sha256_of "$c")" = "$NODE_TARBALL_SHA256" ] && { echo "$c"; return 0; }
  done
  return 1
}
pinned=$(pinned_tarball) || pinned=""

# The files a series needs from the release (those it changes or deletes, less those an earlier
# patch of the series creates), relative to the directory it applies in.
files_of_series() {
  local changed created
  changed=$(sed -n 's|^--- a/\(.*\)$|\1|p' "$@" | sed 's/[[:space:]]*$//' | sort -u)
  created=$(awk '/^--- \/dev\/null/ { getline; sub(/^\+\+\+ b\//, ""); print }' "$@" | sed 's/[[:space:]]*$//' | sort -u)
  comm -23 <(echo "$changed") <(echo "$created") | sed '/^$/d'
}

# fetch_files <version> <tree> <path>...: puts each of the release's files (paths in the Node.js
# tree) into <tree>, from the first source that has it, and prints "<path>: <source>" for each one
# found and "MISSING <path>: <why>" for each one not.
fetch_files() {
  local version=$1 tree=$2
  shift 2
  local path top node
  local -a rest=()
  for path in "$@"; do
    mkdir -p "$tree/$(dirname "$path")"
    if [ -n "$files_dir" ] && [ -f "$files_dir/node-v$version/$path" ]; then
      cp "$files_dir/node-v$version/$path" "$tree/$path"
      echo "$path: fetched files ($files_dir/node-v$version)"
    else
      rest+=("$path")
    fi
  done
  # The pinned tarball, in one pass for all its files.
  if [ ${#rest[@]} -gt 0 ] && [ "$version" = "$NODE_VERSION" ] && [ -n "$pinned" ]; then
    # head stops reading after the first name: tar's SIGPIPE is expected, not an error.
    top=$({ tar -tf "$pinned" 2>/dev/null || true; } | head -n1 | cut -d/ -f1)
    mkdir -p "$scratch/tarball"
    tar --no-same-owner -xf "$pinned" -C "$scratch/tarball" "${rest[@]/#/$top/}" 2>/dev/null || true
    local -a left=()
    for path in "${rest[@]}"; do
      if [ -f "$scratch/tarball/$top/$path" ]; then
        cp "$scratch/tarball/$top/$path" "$tree/$path"
        echo "$path: the pinned tarball $(basename "$pinned")"
      else
        left+=("$path")
      fi
    done
    rest=("${left[@]}")
  fi
  node="$cache/runtimes/node-$version/bin/node"
  for path in "${rest[@]}"; do
    if [[ $path == lib/*.js ]] && [ -f "$cache/runtimes/node-$version/.complete" ] &&
       "$node" --expose-internals --no-warnings "$here/builtin-sources.js" "$tree" "$path" >/dev/null 2>&1; then
      echo "$path: the stock node $version's built-in sources ($cache/runtimes/node-$version)"
      continue
    fi
    local why="no $path"
    [ -n "$files_dir" ] && why="$why under $files_dir/node-v$version"
    if [ "$version" = "$NODE_VERSION" ]; then
      why="$why, nor in $NODE_TARBALL (not in the shared toolchain or the download cache)"
    else
      why="$why: Node.js $version's source is not downloadable here (pass --files with the release's files)"
    fi
    [[ $path == lib/*.js ]] && why="$why, and no stock runtime at $cache/runtimes/node-$version (scripts/runtimes.sh path $version)"
    echo "MISSING $why"
  done
}

checked=0
skipped=0
failed=0

# check_series <label> <version> <patch dir> <subdir of the tree it applies in, or .>
check_series() {
  local label=$1 version=$2 dir=$3 sub=$4
  local tree="$scratch/node-v$version"
  mkdir -p "$tree/$sub"
  local patches=("$dir"/*.patch)
  local prefix="" line p
  [ "$sub" = . ] || prefix="$sub/"
  local -a needed=() missing=() sources=()
  mapfile -t needed < <(files_of_series "${patches[@]}" | sed "s|^|$prefix|")
  while IFS= read -r line; do
    case "$line" in
      MISSING\ *) missing+=("${line#MISSING }") ;;
      *) sources+=("$line") ;;
    esac
  done < <(fetch_files "$version" "$tree" "${needed[@]}")
  if [ ${#missing[@]} -gt 0 ]; then
    printf 'SKIP  Node.js %s, %s: its files are not all here\n' "$version" "$label"
    printf '      %s\n' "${missing[@]}"
    skipped=$((skipped + 1))
    return
  fi
  local out
  for p in "${patches[@]}"; do
    if ! out=$(cd "$tree/$sub" && git apply --whitespace=nowarn "$p" 2>&1); then
      printf 'FAIL  Node.js %s, %s: %s does not apply:\n%s\n' "$version" "$label" "$(basename "$p")" "$out"
      failed=$((failed + 1))
      return
    fi
  done
  printf 'OK    Node.js %s, %s: %s\n' "$version" "$label" "$(cd "$dir" && echo *.patch)"
  printf '      %s\n' "${sources[@]}" | sort -u
  checked=$((checked + 1))
}

for entry in $NODE_LINES; do
  major=${entry%%:*}
  v8_line=${entry#*:}
  if ! version=$(release_of "$major"); then
    printf 'SKIP  Node.js %s: no release of this line is pinned (scripts/runtimes.sh list)\n' "$major"
    skipped=$((skipped + 1))
    continue
  fi
  node_dir=$(node_patch_dir "$major")
  if [ -n "$node_dir" ]; then
    check_series "Node.js series $node_dir" "$version" "$here/$node_dir" .
  else
    printf 'OK    Node.js %s: the recipe applies no Node.js patches to this line\n' "$version"
  fi
  if [ -d "$repo/v8-patches/$v8_line" ]; then
    check_series "V8 series v8-patches/$v8_line" "$version" "$repo/v8-patches/$v8_line" deps/v8
  fi
done

echo "check-node-patches: $checked series apply, $skipped skipped, $failed do not apply"
[ "$failed" = 0 ]
