#!/usr/bin/env bash
# Builds a labeled Node.js runtime (Node.js with heap-labels' V8 patch series), reproducibly, from
# registry sources or from a Node.js source the user has.
#
#   tools/patched-node/build.sh [--node-source <tarball|tree>] [--profile test|full] [--jobs N]
#                               [--print-node-path] [--cached-only] [--package [--out-dir DIR]]
#   tools/patched-node/build.sh [--node-source <tarball|tree>] --print-selection
#   tools/patched-node/build.sh [--profile test|full] --has-compiler-cache
#
# The source: by default the pinned tarball of versions.env (Node.js 22.22.2, the line verified here
# end to end). --node-source takes an official Node.js source instead (nodejs.org's
# node-vX.Y.Z.tar.xz, or a tree extracted from one): its version and its deps/v8 version pick the line
# of NODE_LINES (versions.env) and with it the patch series v8-patches/<V8 major.minor>/; a source of
# a line or V8 not listed there is refused (node-source.sh). --print-selection prints what a source
# selects and exits.
#
# --has-compiler-cache exits 0 when a compiler cache for the profile exists (the recipe's own, or the
# shared toolchain's), i.e. when a build is incremental rather than cold (about 3 hours on 2 cores).
#
# The installed runtime lives in a content-addressed directory outside the repository, laid out like
# nodejs.org's tarballs (release.sh):
#   $HEAP_LABELS_CACHE/runtimes/node-<version>-labels-<profile>-<key>/bin/node
# where <key> hashes the source, this recipe and the patch series. A second run with the same key is a
# no-op. A changed key rebuilds incrementally in the persistent build tree
# ($HEAP_LABELS_CACHE/node-build/<profile>/), compiling through ccache.
#
# --package writes that runtime as node-v<version>-labels-linux-x64.tar.xz and SHA256SUMS into
# --out-dir (default: dist/ of the checkout); with --cached-only it packs the cached runtime and never
# builds.
#
# Profiles:
#   full  (default) what users run: crypto, TLS, HTTP/2 and the inspector (--shared-openssl, bookworm's
#         libssl 3.0, unless the source carries OpenSSL) and full Intl (ICU 76.1 from Debian's archive
#         in deps/icu, unless the source carries full ICU). Its V8 compile lines are those of the
#         read-only compiler cache ../shared/toolchain/ccache-intl (when present).
#   test  --without-intl --without-ssl: a reduced runtime whose compile lines are those of
#         ../shared/toolchain/ccache; kept for fast iteration on the patch series.
# Both profiles carry the V8 series ($V8_PATCH_DIR) and the line's Node.js series (node-patches/22/:
# AsyncContextFrame on by default; node:v8's heap-profile-labels functions, served by the heap-labels
# package that bundle.sh installs into the runtime's lib/node_modules after every build, and when a
# cached runtime is asked for without --cached-only).
#
# Progress goes to stderr; --print-node-path prints only the path of the patched node on stdout,
# --package only the path of the tarball.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
source "$here/lib.sh"
source "$here/native-deps.sh"
source "$here/node-source.sh"
source "$here/release.sh"
PINNED_NODE_VERSION=$NODE_VERSION

profile=full
print_path=0
cached_only=0
has_compiler_cache=0
node_source=""
print_selection=0
package=0
out_dir="$repo/dist"
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=$2; shift 2 ;;
    --print-node-path) print_path=1; shift ;;
    --cached-only) cached_only=1; shift ;;
    --has-compiler-cache) has_compiler_cache=1; shift ;;
    --node-source) [ $# -ge 2 ] || die "--node-source needs a tarball or a directory"; node_source=$2; shift 2 ;;
    --print-selection) print_selection=1; shift ;;
    --package) package=1; shift ;;
    --out-dir) out_dir=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
case "$profile" in test|full) ;; *) die "unknown profile '$profile' (test or full)" ;; esac

[ -z "$node_source" ] || use_node_source "$node_source"
if [ "$print_selection" = 1 ]; then
  echo "node=$NODE_VERSION v8_series=$V8_PATCH_DIR node_series=${NODE_PATCH_DIR:-none} source_sha256=$NODE_TARBALL_SHA256"
  exit 0
fi

cache=${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}
if [ "$has_compiler_cache" = 1 ]; then
  [ -n "$(ls -A "${HEAP_LABELS_CCACHE_DIR:-$cache/ccache}" 2>/dev/null)" ] && exit 0
  shared_compiler_cache "$profile" >/dev/null
  exit
fi
key=$(runtime_key "$profile")
install_dir="$cache/runtimes/node-$NODE_VERSION-labels-$profile-$key"

# The outputs a run was asked for, from the installed runtime.
finish() {
  [ "$print_path" = 1 ] && echo "$install_dir/bin/node"
  [ "$package" = 1 ] && package_runtime "$install_dir" "$out_dir"
  exit 0
}

if [ -x "$install_dir/bin/node" ]; then
  log "patched runtime is cached: $install_dir"
  # The bundled heap-labels package follows this repository (--cached-only leaves it as it is).
  [ "$cached_only" = 1 ] || "$here/bundle.sh" "$install_dir/bin/node"
  finish
fi
if [ "$cached_only" = 1 ]; then
  log "no cached patched runtime for key $key"
  exit 3
fi

build_root="$cache/node-build/$profile"
src="$build_root/node-v$NODE_VERSION"
mkdir -p "$build_root" "$cache/downloads"

packages=$APT_PACKAGES
[ "$profile" = full ] && packages="$packages libssl-dev"
step "1/7 system packages"; ensure_apt_packages $packages
step "2/7 source tarball";  tarball=$(locate_tarball "$cache/downloads")
step "3/7 source tree";     prepare_source_tree "$tarball" "$src"
[ "$profile" = full ] &&    place_icu "$cache/downloads" "$src"
step "4/7 dependencies";    ensure_native_deps "$cache" "$src"; place_js_deps "$cache" "$src"
step "5/7 patches";         apply_v8_patches "$src" "$repo/$V8_PATCH_DIR"; apply_node_patches "$src" "${NODE_PATCH_DIR:+$here/$NODE_PATCH_DIR}"
step "6/7 configure";       configure_node "$src" "$profile" "$cache"
step "7/7 build";           build_node "$src" "$jobs" "$cache" "$profile"

step "installing"
install_runtime "$src" "$install_dir.tmp" "$cache" "$profile" "$key" "$(cat "$src/.heap-labels-configure")"
rm -rf "$install_dir"
mv "$install_dir.tmp" "$install_dir"
log "installed $install_dir/bin/node"
# heap-labels itself, where the runtime's node:v8 finds it (node-patches/22/0002).
"$here/bundle.sh" "$install_dir/bin/node"
finish
