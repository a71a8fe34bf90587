# Which Node.js source the recipe builds (sourced by build.sh; needs versions.env and lib.sh loaded).
# shellcheck shell=bash
#
# Without --node-source: the pinned tarball of versions.env (the line verified here end to end).
# With --node-source <tarball or tree>: an official Node.js source (nodejs.org's node-vX.Y.Z.tar.xz,
# or a tree extracted from one). Its Node.js version (src/node_version.h) and V8 version
# (deps/v8/include/v8-version.h) must match a line of NODE_LINES; the line gives the V8 patch series
# (v8-patches/<V8 major.minor>/) and the Node.js patch series (node-patches/<major>/, when the line
# has one). A source of any other line or V8 is refused: a series made for one V8 does not apply to
# another, and guessing would build a runtime with wrong or missing labels.

# header_define <file> <NAME>: the value of `#define NAME <value>` in a C header.
header_define() {
  sed -n "s/^#define $2 \\([0-9][0-9]*\\).*/\\1/p" "$1" | head -n1
}

# source_headers <tarball or tree> <dir>: copies the source's node_version.h and v8-version.h into
# <dir>, from a tree or (one pass, only those two members) from a tarball.
source_headers() {
  local source=$1 out=$2
  local node_h=src/node_version.h v8_h=deps/v8/include/v8-version.h
  if [ -d "$source" ]; then
    [ -f "$source/$node_h" ] && [ -f "$source/$v8_h" ] ||
      die "$source is not a Node.js source tree: it lacks $node_h or $v8_h"
    cp "$source/$node_h" "$source/$v8_h" "$out/"
    return
  fi
  [ -f "$source" ] || die "--node-source $source: no such file or directory"
  local top
  # head stops reading after the first name: tar's SIGPIPE is expected, not an error.
  top=$({ tar -tf "$source" 2>/dev/null || true; } | head -n1 | cut -d/ -f1)
  [ -n "$top" ] || die "$source is neither a directory nor a tarball tar can read"
  mkdir -p "$out/x"
  tar --no-same-owner -xf "$source" -C "$out/x" "$top/$node_h" "$top/$v8_h" 2>/dev/null ||
    die "$source is not a Node.js source tarball: $top/ lacks $node_h or $v8_h"
  cp "$out/x/$top/$node_h" "$out/x/$top/$v8_h" "$out/"
  rm -rf "$out/x"
}

# read_source_versions <tarball or tree>: sets SOURCE_NODE_VERSION (X.Y.Z) and SOURCE_V8_VERSION
# (major.minor.build.patch).
read_source_versions() {
  local tmp
  tmp=$(mktemp -d)
  source_headers "$1" "$tmp"
  local n=$tmp/node_version.h v=$tmp/v8-version.h
  SOURCE_NODE_VERSION="$(header_define "$n" NODE_MAJOR_VERSION).$(header_define "$n" NODE_MINOR_VERSION).$(header_define "$n" NODE_PATCH_VERSION)"
  SOURCE_V8_VERSION="$(header_define "$v" V8_MAJOR_VERSION).$(header_define "$v" V8_MINOR_VERSION).$(header_define "$v" V8_BUILD_NUMBER).$(header_define "$v" V8_PATCH_LEVEL)"
  rm -rf "$tmp"
  [[ $SOURCE_NODE_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    die "$1: cannot read the Node.js version from src/node_version.h"
  [[ $SOURCE_V8_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
    die "$1: cannot read the V8 version from deps/v8/include/v8-version.h"
}

# The supported lines in words: "22 (V8 12.4), 24 (V8 13.6), 26 (V8 14.6)".
describe_lines() {
  local entry out=""
  for entry in $NODE_LINES; do out="$out${out:+, }${entry%%:*} (V8 ${entry#*:})"; done
  echo "$out"
}

# select_line <node version> <V8 version>: prints the V8 major.minor of the matching line, or stops.
select_line() {
  local node=$1 v8=$2 major=${1%%.*} v8_line entry
  v8_line=$(echo "$v8" | cut -d. -f1-2)
  for entry in $NODE_LINES; do
    [ "${entry%%:*}" = "$major" ] || continue
    [ "${entry#*:}" = "$v8_line" ] ||
      die "Node.js $node carries V8 $v8, but the recipe's series for the Node.js $major line is for V8 ${entry#*:} (v8-patches/${entry#*:}); it does not apply to V8 $v8_line, so this source is refused"
    [ -d "$repo/v8-patches/$v8_line" ] ||
      die "Node.js $node (V8 $v8) is a supported line, but this checkout has no series v8-patches/$v8_line/"
    echo "$v8_line"
    return
  done
  die "Node.js $node (V8 $v8) is not a line this recipe supports; supported: Node.js $(describe_lines) (NODE_LINES of tools/patched-node/versions.env). Refusing to guess a patch series"
}

# sha256 of a tree's content: every file's path and sha256, in name order.
tree_sha256() {
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

# use_node_source <tarball or tree>: makes the recipe build that source. Sets NODE_VERSION,
# V8_PATCH_DIR, NODE_PATCH_DIR and the source's identity (NODE_SOURCE, NODE_SOURCE_KIND,
# NODE_TARBALL, NODE_TARBALL_SHA256, the runtime's cache key input).
use_node_source() {
  local source
  source=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  read_source_versions "$source"
  local v8_line
  v8_line=$(select_line "$SOURCE_NODE_VERSION" "$SOURCE_V8_VERSION") || exit 1
  NODE_VERSION=$SOURCE_NODE_VERSION
  V8_PATCH_DIR=v8-patches/$v8_line
  NODE_PATCH_DIR=$(node_patch_dir "${NODE_VERSION%%.*}")
  NODE_SOURCE=$source
  NODE_TARBALL=$(basename "$source")
  if [ -d "$source" ]; then
    NODE_SOURCE_KIND=tree
    log "hashing the source tree $source"
    NODE_TARBALL_SHA256=$(tree_sha256 "$source")
  else
    NODE_SOURCE_KIND=tarball
    NODE_TARBALL_SHA256=$(sha256_of "$source")
  fi
}

# The Node.js patch series of a line (node-patches/<major>/), empty when the line needs none.
node_patch_dir() {
  [ -d "$here/node-patches/$1" ] && echo "node-patches/$1"
  return 0
}
