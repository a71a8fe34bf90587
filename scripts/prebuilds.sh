#!/usr/bin/env bash
# The prebuilt addons the npm package carries (`npm run prebuilds`): one per supported Node.js ABI,
# each built against the headers of the stock runtime of its line (scripts/runtimes.sh pins one per
# supported line, NODE_LINES of tools/patched-node/versions.env), release profile, symbols stripped, into
#   prebuilds/<platform>-<arch>/node.abi<N>.<libc>.node
# where lib/native.js (node-gyp-build) finds them. The set is made whole each time: prebuilds/ is
# replaced only when every build succeeded. Each ABI reuses its own cargo target directory
# (target/node-abi<N>), so after the test run's builds this only copies and strips.
#
#   scripts/prebuilds.sh           build the set
#   scripts/prebuilds.sh --check   exit 1 unless prebuilds/ holds exactly one addon per supported ABI
#                                  (npm's prepack runs this: a tarball never carries an odd set)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

log() { echo "prebuilds: $*" >&2; }

# The ABI of each supported runtime, from its own headers.
expected_files() {
  local version dir abi
  while read -r version; do
    dir="$(bash scripts/runtimes.sh path "$version")"
    abi="$(sed -n 's/^#define NODE_MODULE_VERSION \([0-9][0-9]*\).*/\1/p' "$dir/include/node/node_version.h")"
    [[ -n $abi ]] || { log "no NODE_MODULE_VERSION in $dir/include/node/node_version.h"; return 1; }
    echo "node.abi$abi.glibc.node"
  done < <(bash scripts/runtimes.sh list)
}

check() {
  local want have
  want="$(expected_files | sort)" || return 1
  have="$(cd prebuilds/linux-x64 2>/dev/null && ls -- *.node 2>/dev/null | sort)" || true
  if [[ "$want" != "$have" ]]; then
    log "prebuilds/linux-x64 holds [${have//$'\n'/ }], the supported runtimes need [${want//$'\n'/ }]:" \
      "run \`npm run prebuilds\`"
    return 1
  fi
  log "prebuilds/linux-x64: ${have//$'\n'/ }"
}

if [[ "${1:-}" == --check ]]; then
  check
  exit
fi

tmp="$REPO/prebuilds.tmp"
rm -rf "$tmp"
while read -r version; do
  bin="$(bash scripts/runtimes.sh bin "$version")"
  log "Node.js $version"
  # The runtime's own headers decide the ABI; no HEAP_LABELS_NODE_INCLUDE of the caller may leak in.
  env -u HEAP_LABELS_NODE_INCLUDE -u HEAP_LABELS_NODE PATH="$bin:$PATH" \
    nice -n 10 node scripts/build.js --out "$tmp" --strip
done < <(bash scripts/runtimes.sh list)
rm -rf prebuilds
mv "$tmp" prebuilds
check
(cd prebuilds && find . -name '*.node' | sort | xargs sha256sum)
