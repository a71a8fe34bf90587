#!/usr/bin/env bash
# Installs this repository's heap-labels package, with its addon, into a patched runtime's prefix:
#   <prefix>/lib/node_modules/heap-labels   (and <prefix>/bin/heap-labels)
# where the runtime's node:v8 finds it (the line's node:v8 patch, node-patches/22/0002 or
# node-patches/<24|26>/0001: v8.withHeapProfileLabels, setHeapProfileLabels, startHeapProfile). npm installs it from a packed tarball, as
# `npm install --global` would, with its dependencies from the npm registry.
#
#   tools/patched-node/bundle.sh <path of the patched node>
#
# The addon is the one build of this runtime's ABI (build/prebuilds/linux-x64/node.abi<ABI>.glibc.node,
# scripts/build.js), built against the stock headers of the runtime's line when missing, and goes
# where the package carries its prebuilt addons (prebuilds/, found by lib/native.js): the same file loads into stock and
# patched runtimes (tests/patched.test.js checks that promise). A second run with unchanged package
# files and addon is a no-op (a content stamp in the installed package). Each version is a directory
# of its own (lib/node_modules/.heap-labels-<stamp>) and `heap-labels` a symbolic link to it, replaced
# in one rename: a process starting meanwhile sees the old or the new package, never half of one.
# The version before is kept (processes still running may load its files lazily); older ones go.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
source "$here/lib.sh"

node=${1:?usage: bundle.sh <path of the patched node>}
[ -x "$node" ] || die "not an executable: $node"
prefix=$(cd "$(dirname "$node")/.." && pwd)
abi=$("$node" -p 'process.versions.modules')
addon="build/prebuilds/linux-x64/node.abi$abi.glibc.node"

cd "$repo"
if [ ! -f "$addon" ]; then
  log "building the addon for ABI $abi (the stock runtime's headers)"
  stock_bin=$(bash scripts/runtimes.sh bin primary)
  PATH="$stock_bin:$PATH" node scripts/build.js >&2
fi

stamp=$({
  sha256sum package.json package-lock.json "$addon" scripts/install.js tools/patched-node/versions.env
  find lib bin -type f -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -c1-16)
target="$prefix/lib/node_modules/heap-labels"
if [ "$(cat "$target/.heap-labels-bundle" 2>/dev/null)" = "$stamp" ]; then
  log "bundled heap-labels is up to date ($target)"
  exit 0
fi

work=$(mktemp -d "$prefix/.bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/stage"
mkdir -p "$stage/prebuilds/linux-x64" "$stage/scripts" "$stage/tools/patched-node"
cp -r package.json lib bin "$stage/"
# The install hook (it finds the prebuilt addon and does nothing) and the list of supported lines.
cp scripts/install.js "$stage/scripts/"
cp tools/patched-node/versions.env "$stage/tools/patched-node/"
cp "$addon" "$stage/prebuilds/linux-x64/"
tarball=$(cd "$stage" && npm pack --silent --ignore-scripts --pack-destination "$work")
log "installing $tarball into $prefix/lib/node_modules"
npm install --global --prefix "$work/prefix" --no-audit --no-fund --loglevel=error "$work/$tarball" >&2
echo "$stamp" > "$work/prefix/lib/node_modules/heap-labels/.heap-labels-bundle"

mkdir -p "$prefix/lib/node_modules" "$prefix/bin"
previous=$(readlink "$target" 2>/dev/null || true)
current=".heap-labels-$stamp"
rm -rf "${prefix:?}/lib/node_modules/$current"
mv "$work/prefix/lib/node_modules/heap-labels" "$prefix/lib/node_modules/$current"
# A real directory there (installed by hand) cannot be renamed over: moved aside first.
if [ -d "$target" ] && [ ! -L "$target" ]; then mv "$target" "$work/replaced"; fi
ln -sfn "$current" "$work/link"
mv -T "$work/link" "$target"
for old in "$prefix"/lib/node_modules/.heap-labels-*; do
  name=$(basename "$old")
  [ "$name" = "$current" ] || [ "$name" = "$previous" ] || rm -rf "$old"
done
ln -sfn ../lib/node_modules/heap-labels/bin/heap-labels.js "$prefix/bin/heap-labels"
log "bundled heap-labels $(cd "$target" && "$node" -p 'require("./package.json").version') at $target"
