# The labeled runtime's installed layout and its release tarball (sourced by build.sh; needs
# versions.env, lib.sh and node-source.sh loaded).
# shellcheck shell=bash
#
# The layout is that of nodejs.org's linux-x64 tarballs, so whatever installs those installs this:
#   bin/node, bin/npm, bin/npx          npm from the source's deps/npm, or from the npm registry
#   include/node/                      the headers addons build against, plus v8-sample-labels.h
#   lib/node_modules/npm/
#   share/doc/node/, share/man/man1/node.1
#   LICENSE, README.md, CHANGELOG.md   the source's
#   BUILDINFO                          what it was built from (see write_buildinfo)
# Nothing in it names a path of the building machine (package_runtime checks), so it runs from
# wherever it is unpacked.

# install_runtime <source tree> <dest> <cache> <profile> <key> <configure args>
install_runtime() {
  local src=$1 dest=$2 cache=$3 profile=$4 key=$5 args=$6
  rm -rf "$dest"
  mkdir -p "$dest"
  (cd "$src" && python3 tools/install.py install --silent --dest-dir "$dest" --prefix /) >&2
  [ -x "$dest/bin/node" ] || die "tools/install.py installed no bin/node"
  # The few objects built with debug info (libuv's) name the build directory in their DWARF; the symbol
  # table stays, as in nodejs.org's binaries.
  strip --strip-debug "$dest/bin/node"
  # The patch series' own header, for addons that link to the API instead of probing it.
  [ ! -f "$src/deps/v8/include/v8-sample-labels.h" ] || cp "$src/deps/v8/include/v8-sample-labels.h" "$dest/include/node/"
  local f
  for f in LICENSE README.md CHANGELOG.md; do
    [ ! -f "$src/$f" ] || cp "$src/$f" "$dest/"
  done
  local npm_record
  npm_record=$(install_npm "$dest" "$cache")
  write_buildinfo "$src" "$dest" "$profile" "$key" "$args" "$npm_record" > "$dest/BUILDINFO"
}

# npm in lib/node_modules/npm with nodejs.org's bin/npm and bin/npx links: the one install.py put there
# from the source's deps/npm, or, for the pinned source (Debian's tarball has no deps/npm), the
# release NPM_VERSION of the npm registry. Prints what it installed, for BUILDINFO.
install_npm() {
  local dest=$1 cache=$2
  if [ -f "$dest/lib/node_modules/npm/package.json" ]; then
    echo "npm $(sed -n 's/^ *"version": "\(.*\)",*$/\1/p' "$dest/lib/node_modules/npm/package.json" | head -n1) from the source's deps/npm"
    return
  fi
  if [ "$NODE_VERSION" != "$PINNED_NODE_VERSION" ] || [ -z "${NPM_VERSION:-}" ]; then
    log "the source has no deps/npm and versions.env pins no npm for Node.js $NODE_VERSION: the runtime has no npm"
    echo "none (the source has no deps/npm)"
    return
  fi
  local dir="$cache/downloads/npm-$NPM_VERSION"
  if [ ! -f "$dir/npm-$NPM_VERSION.tgz" ] || [ ! -f "$dir/integrity" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    log "npm pack npm@$NPM_VERSION"
    local json
    json=$(cd "$dir" && npm pack --json --silent "npm@$NPM_VERSION") || die "npm pack npm@$NPM_VERSION failed"
    printf '%s\n' "$json" | sed -n 's/^ *"integrity": "\(.*\)",*$/\1/p' | head -n1 > "$dir/integrity"
    [ -s "$dir/integrity" ] || die "npm pack gave no integrity for npm@$NPM_VERSION"
  fi
  mkdir -p "$dest/lib/node_modules/npm"
  tar --no-same-owner -xzf "$dir/npm-$NPM_VERSION.tgz" -C "$dest/lib/node_modules/npm" --strip-components=1
  ln -sfn ../lib/node_modules/npm/bin/npm-cli.js "$dest/bin/npm"
  ln -sfn ../lib/node_modules/npm/bin/npx-cli.js "$dest/bin/npx"
  echo "npm $NPM_VERSION from the npm registry ($(cat "$dir/integrity"))"
}

# patch_lines <dir>: "sha256  name" of each patch of a series.
patch_lines() {
  [ -n "$1" ] && [ -d "$1" ] || { echo "  (none)"; return; }
  (cd "$1" && shopt -s nullglob && for p in *.patch; do echo "  $(sha256_of "$p")  $p"; done)
}

# What the runtime was built from: every input of the cache key, in words.
write_buildinfo() {
  local src=$1 dest=$2 profile=$3 key=$4 args=$5 npm_record=$6
  local v8
  v8=$(cd "$src/deps/v8/include" && echo "$(header_define v8-version.h V8_MAJOR_VERSION).$(header_define v8-version.h V8_MINOR_VERSION).$(header_define v8-version.h V8_BUILD_NUMBER).$(header_define v8-version.h V8_PATCH_LEVEL)")
  echo "Node.js $NODE_VERSION with heap-labels' V8 patch series ($V8_PATCH_DIR), profile $profile"
  echo "cache key: $key"
  echo "V8: $v8"
  echo "source: $NODE_TARBALL (${NODE_SOURCE_KIND:-tarball}) sha256 $NODE_TARBALL_SHA256"
  if [ "$profile" = full ]; then
    if [ -f "$src/deps/.heap-labels-icu" ]; then
      echo "ICU: $ICU_TARBALL sha256 $ICU_TARBALL_SHA256 (deps/icu)"
    else
      echo "ICU: the source's deps/icu-small"
    fi
  fi
  echo "V8 patch series: $V8_PATCH_DIR"
  patch_lines "$repo/$V8_PATCH_DIR"
  echo "Node.js patch series: ${NODE_PATCH_DIR:-none}"
  patch_lines "${NODE_PATCH_DIR:+$here/$NODE_PATCH_DIR}"
  echo "configure: configure.py $args (gyp-next $GYP_NEXT_VERSION; CC=\"ccache gcc\" CXX=\"ccache g++\")"
  if [[ " $args " == *" --shared-http-parser "* ]]; then
    echo "static dependencies (native-deps.sh): $LLHTTP_PYPI sha256 $LLHTTP_SHA256, $ADA_PYPI sha256 $ADA_SHA256," \
      "$CARES_PYPI sha256 $CARES_SHA256, crates simdutf $SIMDUTF_CRATE and simdjson-sys $SIMDJSON_SYS_CRATE"
  fi
  if [ -f "$src/deps/.heap-labels-js-deps" ]; then
    echo "JavaScript dependencies (npm registry): $NPM_DEPS"
  fi
  echo "npm: $npm_record"
  echo "compiler: $(gcc --version | head -n1)"
  echo "system libraries: Debian $(cat /etc/debian_version 2>/dev/null || echo unknown) (ldd bin/node lists them)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
}

# package_runtime <installed runtime> <out dir>: writes <out dir>/node-v<version>-labels-linux-x64.tar.xz
# (one top directory of that name, as nodejs.org's tarballs) and <out dir>/SHA256SUMS. The archive is
# reproducible from the installed runtime: sorted names, no owners, every mtime that of bin/node.
# Packing takes minutes (xz, one thread for a reproducible stream): a tarball this function made from
# the same installed runtime (its directory names the cache key) is kept.
package_runtime() {
  local installed=$1 out=$2
  local name="node-v$NODE_VERSION-labels-linux-x64"
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  if [ -f "$out/$name.tar.xz" ] && [ "$(cat "$out/.$name.from" 2>/dev/null)" = "$installed" ] &&
     (cd "$out" && sha256sum --quiet -c SHA256SUMS 2>/dev/null); then
    log "packed already from $installed: $out/$name.tar.xz"
    echo "$out/$name.tar.xz"
    return
  fi
  rm -f "$out/.$name.from"
  local stage="$out/.stage-$name"
  rm -rf "$stage"
  mkdir -p "$stage"
  cp -a "$installed" "$stage/$name"
  check_relocatable "$stage/$name"
  local epoch
  epoch=$(stat -c %Y "$installed/bin/node")
  log "packing $out/$name.tar.xz"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --clamp-mtime \
    -C "$stage" -cf - "$name" | xz -6 -T1 > "$out/$name.tar.xz.part"
  mv "$out/$name.tar.xz.part" "$out/$name.tar.xz"
  rm -rf "$stage"
  (cd "$out" && sha256sum "$name.tar.xz" > SHA256SUMS)
  echo "$installed" > "$out/.$name.from"
  log "$(cd "$out" && cat SHA256SUMS) ($(du -h "$out/$name.tar.xz" | cut -f1))"
  echo "$out/$name.tar.xz"
}

# Stops when a file of the layout names a directory of the building machine (the build tree, the
# recipe's cache or this checkout): the runtime must not depend on where it was built.
check_relocatable() {
  local dir=$1 needle hits
  for needle in "$cache" "$repo"; do
    hits=$(grep -rlF -- "$needle" "$dir" || true)
    [ -z "$hits" ] || die "not relocatable: $(echo "$hits" | head -n3 | tr '\n' ' ')name $needle"
  done
  if ldd "$dir/bin/node" | grep -q 'not found'; then
    die "bin/node needs libraries this machine lacks: $(ldd "$dir/bin/node" | grep 'not found' | tr -s ' \n' ' ')"
  fi
  readelf -d "$dir/bin/node" | grep -qE 'R(UN)?PATH' && die "bin/node has an rpath: $(readelf -d "$dir/bin/node" | grep -E 'R(UN)?PATH')"
  return 0
}
