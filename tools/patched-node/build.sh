#!/usr/bin/env bash
# Builds Node.js 22.22.2 with heap-labels' V8 patch series, reproducibly, from registry sources.
#
#   tools/patched-node/build.sh [--profile test|full] [--print-node-path] [--cached-only] [--jobs N]
#   tools/patched-node/build.sh [--profile test|full] --has-compiler-cache
#
# --has-compiler-cache exits 0 when a compiler cache for the profile exists (the recipe's own, or the
# shared toolchain's), i.e. when a build is incremental rather than cold (about 3 hours on 2 cores).
#
# The installed runtime lives in a content-addressed directory outside the repository:
#   $HEAP_LABELS_CACHE/runtimes/node-22.22.2-labels-<profile>-<key>/bin/node
# where <key> hashes the tarball, this recipe and the patch series. A second run with the same key is a
# no-op. A changed key rebuilds incrementally in the persistent build tree
# ($HEAP_LABELS_CACHE/node-build/<profile>/), compiling through ccache.
#
# Profiles:
#   full  (default) what users run: crypto, TLS, HTTP/2 and the inspector (--shared-openssl, bookworm's
#         libssl 3.0) and full Intl (ICU 76.1 from Debian's archive in deps/icu). Its V8 compile lines are
#         those of the read-only compiler cache ../shared/toolchain/ccache-intl (when present).
#   test  --without-intl --without-ssl: a reduced runtime whose compile lines are those of
#         ../shared/toolchain/ccache; kept for fast iteration on the patch series.
# Both profiles carry the V8 series ($V8_PATCH_DIR) and the Node.js series (node-patches/: AsyncContextFrame
# on by default).
#
# Progress goes to stderr; --print-node-path prints only the path of the patched node on stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
source "$here/lib.sh"
source "$here/native-deps.sh"

profile=full
print_path=0
cached_only=0
has_compiler_cache=0
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile=$2; shift 2 ;;
    --print-node-path) print_path=1; shift ;;
    --cached-only) cached_only=1; shift ;;
    --has-compiler-cache) has_compiler_cache=1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
case "$profile" in test|full) ;; *) die "unknown profile '$profile' (test or full)" ;; esac

cache=${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}
if [ "$has_compiler_cache" = 1 ]; then
  [ -n "$(ls -A "${HEAP_LABELS_CCACHE_DIR:-$cache/ccache}" 2>/dev/null)" ] && exit 0
  shared_compiler_cache "$profile" >/dev/null
  exit
fi
key=$(runtime_key "$profile")
install_dir="$cache/runtimes/node-$NODE_VERSION-labels-$profile-$key"

if [ -x "$install_dir/bin/node" ]; then
  log "patched runtime is cached: $install_dir"
  [ "$print_path" = 1 ] && echo "$install_dir/bin/node"
  exit 0
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
step "4/7 dependencies";    ensure_native_deps "$cache"; place_js_deps "$cache" "$src"
step "5/7 patches";         apply_v8_patches "$src" "$repo/$V8_PATCH_DIR"; apply_node_patches "$src" "$here/$NODE_PATCH_DIR"
step "6/7 configure";       configure_node "$src" "$profile" "$cache"
step "7/7 build";           build_node "$src" "$jobs" "$cache" "$profile"

rm -rf "$install_dir.tmp"
mkdir -p "$install_dir.tmp/bin"
cp "$src/out/Release/node" "$install_dir.tmp/bin/node"
# include/node as in the npm packages (addons are built against it), plus the patch's own header.
(cd "$src" && python3 tools/install.py install --headers-only --silent --dest-dir "$install_dir.tmp" --prefix /) >&2
cp "$src/deps/v8/include/v8-sample-labels.h" "$install_dir.tmp/include/node/"
{
  echo "node $NODE_VERSION, V8 patched with $V8_PATCH_DIR, profile $profile, key $key"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
  (cd "$repo" && ls "$V8_PATCH_DIR"/*.patch)
} > "$install_dir.tmp/BUILDINFO"
rm -rf "$install_dir"
mv "$install_dir.tmp" "$install_dir"
log "installed $install_dir/bin/node"
[ "$print_path" = 1 ] && echo "$install_dir/bin/node"
exit 0
