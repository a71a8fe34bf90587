# Where the shared toolchain may be: source tarballs and read-only compiler caches that speed up the
# builds of tools/patched-node and tools/v8-only (never needed for a correct build). This is the only
# place that knows where it lives. Sourced; needs $repo (the repository's root).
# shellcheck shell=bash

# The folders that may hold it, in the order they are searched: $HEAP_LABELS_TOOLCHAIN, then
# ../shared/toolchain beside the repository.
toolchain_dirs() {
  local d
  for d in "${HEAP_LABELS_TOOLCHAIN:-}" "$repo/../shared/toolchain"; do
    [ -n "$d" ] && [ -d "$d" ] && (cd "$d" && pwd)
  done
  return 0
}

# The first toolchain folder's entry named $1 (a compiler cache: ccache, ccache-intl, ccache-v8-13.6,
# ...), or status 1 when none has it.
toolchain_entry() {
  local dir
  while IFS= read -r dir; do
    [ -e "$dir/$1" ] && { echo "$dir/$1"; return 0; }
  done < <(toolchain_dirs)
  return 1
}

# Every toolchain folder's entries matching the glob $1 (e.g. 'ccache-v8*'), one path per line.
toolchain_entries() {
  local dir entry
  while IFS= read -r dir; do
    for entry in "$dir"/$1; do
      [ -e "$entry" ] && echo "$entry"
    done
  done < <(toolchain_dirs)
  return 0
}
