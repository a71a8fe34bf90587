#!/usr/bin/env bash
# Builds and runs the C++ tests of the V8 patch series (v8-patches/test/*.cc, one file for every V8 line) against the patched
# V8 of the persistent build tree: compiled with the embedder flags Node's own sources use, linked
# with the same static libraries as the node binary, and googletest from the tarball's deps/.
#
#   tools/patched-node/test-patch.sh [--profile full|test]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$here/versions.env"
source "$here/lib.sh"

profile=full
if [ "${1:-}" = "--profile" ]; then profile=$2; shift 2; fi
cache=${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}
out="$cache/node-build/$profile/node-v$NODE_VERSION/out/Release"
# Makes sure the tree holds the current patch series (a no-op when the runtime is cached and built).
"$here/build.sh" --profile "$profile" >&2
[ -f "$out/build.ninja" ] || die "no build tree at $out"
ccache_env "$cache" "$profile"

cd "$out"
ninja gtest gtest_main >&2
# Embedder compile flags: those of a Node.js source file, without its dependency-file arguments.
flags=$(ninja -t commands obj/src/libnode.async_wrap.o | tail -n1 |
  sed -e 's/^ccache g++ //' -e 's/ -MMD -MF [^ ]*//' -e 's/ -c .*$//')
objs=()
mkdir -p heap-labels-test
for src in "$repo"/v8-patches/test/*.cc; do
  obj="heap-labels-test/$(basename "${src%.cc}").o"
  log "compiling $(basename "$src")"
  # shellcheck disable=SC2086
  eval "ccache g++ $flags -c '$src' -o '$obj'"
  objs+=("$obj")
done
# The node binary's libraries, in its order, minus node_main (gtest_main provides main).
libs=$(ninja -t commands node | tail -n1 | sed -e 's/^ccache g++ //' -e 's/ -o node / /' |
  tr ' ' '\n' | grep -vE 'node_main\.o' | tr '\n' ' ')
log "linking sample-labels-unittest"
# shellcheck disable=SC2086
eval "g++ ${objs[*]} obj/deps/googletest/libgtest_main.a obj/deps/googletest/libgtest.a $libs -o heap-labels-test/sample-labels-unittest"
log "running"
exec heap-labels-test/sample-labels-unittest "$@"
