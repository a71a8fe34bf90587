# Native dependencies of the patched Node.js build (sourced by build.sh).
# shellcheck shell=bash

# Native libraries Debian removed from the tarball and bookworm does not have in a usable version.
# They go to /usr/local because a library found on the compiler's default paths does not change V8's
# compile lines (a global -I would, and so would defeat the compiler cache).
ensure_native_deps() {
  local cache=$1 src=$2
  local stamp_value
  stamp_value=$({ echo "$LLHTTP_PYPI $ADA_PYPI $CARES_PYPI $SIMDUTF_CRATE $SIMDJSON_SYS_CRATE"; cat "$here/native-deps.sh"; } | sha256sum | cut -c1-16)
  local stamp=/usr/local/lib/heap-labels-node-deps.stamp
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_value" ]; then
    log "native dependencies present (/usr/local)"
    relink_if_deps_changed "$src" "$stamp_value"
    return
  fi
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  local work="$cache/node-build/deps"
  rm -rf "$work"
  mkdir -p "$work/pypi"
  log "fetching PyPI source distributions"
  local spec
  for spec in "$LLHTTP_PYPI" "$ADA_PYPI" "$CARES_PYPI"; do
    pip download --quiet --no-binary :all: --no-deps -d "$work/pypi" "$spec" >&2
  done
  verify_sdist "$work/pypi" llhttp-9.3.0.0.tar.gz "$LLHTTP_SHA256"
  verify_sdist "$work/pypi" ada_url-1.15.3.tar.gz "$ADA_SHA256"
  verify_sdist "$work/pypi" pycares-5.2.1.tar.gz "$CARES_SHA256"
  local crates
  crates=$(fetch_crates "$work")

  # -ffile-prefix-map: the libraries' __FILE__ strings end up in node; they must not name this machine.
  local cflags="-O3 -fPIC -ffile-prefix-map=$work/="
  local cxxflags="-O3 -fPIC -std=gnu++20 -fno-exceptions -fno-rtti -ffile-prefix-map=$work/="
  (
    cd "$work"
    tar -xzf pypi/llhttp-9.3.0.0.tar.gz
    tar -xzf pypi/ada_url-1.15.3.tar.gz
    tar -xzf pypi/pycares-5.2.1.tar.gz
    log "building llhttp"
    for f in llhttp api http; do gcc $cflags -Illhttp-9.3.0.0/lib -c "llhttp-9.3.0.0/lib/$f.c" -o "llhttp_$f.o"; done
    ar rcs libhttp_parser.a llhttp_*.o
    log "building ada"
    g++ $cxxflags -Iada_url-1.15.3/ada_url -c ada_url-1.15.3/ada_url/ada.cpp -o ada.o
    ar rcs libada.a ada.o
    log "building simdutf"
    g++ $cxxflags -I"$crates/simdutf/cpp" -c "$crates/simdutf/cpp/simdutf.cpp" -o simdutf.o
    ar rcs libsimdutf.a simdutf.o
    log "building simdjson"
    g++ $cxxflags -I"$crates/simdjson/vendor/simdjson" -c "$crates/simdjson/vendor/simdjson/simdjson.cpp" -o simdjson.o
    ar rcs libsimdjson.a simdjson.o
    log "building c-ares"
    cmake -S pycares-5.2.1/deps/c-ares -B cares-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCARES_STATIC=ON -DCARES_SHARED=OFF -DCARES_STATIC_PIC=ON -DCARES_BUILD_TOOLS=OFF \
      -DCARES_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX="$work/cares-install" >/dev/null
    cmake --build cares-build >/dev/null
    cmake --install cares-build >/dev/null
  ) >&2
  log "installing into /usr/local"
  $sudo install -d /usr/local/include /usr/local/lib
  $sudo install -m644 "$work"/lib{http_parser,ada,simdutf,simdjson}.a /usr/local/lib/
  $sudo install -m644 "$work/cares-install/lib/libcares.a" /usr/local/lib/
  $sudo install -m644 "$work/llhttp-9.3.0.0/lib/llhttp.h" "$work/ada_url-1.15.3/ada_url/ada.h" \
    "$crates/simdutf/cpp/simdutf.h" "$crates/simdjson/vendor/simdjson/simdjson.h" /usr/local/include/
  $sudo install -m644 "$work"/cares-install/include/*.h /usr/local/include/
  echo "$stamp_value" | $sudo tee "$stamp" >/dev/null
  relink_if_deps_changed "$src" "$stamp_value"
}

# ninja does not track libraries found on the linker's default paths: when they changed since the
# tree's node was linked, its binary goes, so the build links it again.
relink_if_deps_changed() {
  local src=$1 value=$2
  local linked="$src/.heap-labels-native-deps"
  [ -f "$linked" ] && [ "$(cat "$linked")" = "$value" ] && return
  if [ -f "$src/out/Release/node" ]; then
    log "native dependencies changed since node was linked: relinking"
    rm -f "$src/out/Release/node"
  fi
  echo "$value" > "$linked"
}

verify_sdist() {
  local dir=$1 file=$2 want=$3
  [ -f "$dir/$file" ] || die "pip did not produce $file"
  [ "$(sha256_of "$dir/$file")" = "$want" ] || die "$file: sha256 mismatch"
}

# Downloads the pinned crates with cargo (crates.io's own client) and prints the directory holding
# them unpacked as simdutf/ and simdjson/.
fetch_crates() {
  local work=$1
  mkdir -p "$work/crates-fetch"
  cat > "$work/crates-fetch/Cargo.toml" <<EOF
[package]
name = "heap-labels-node-deps"
version = "0.0.0"
edition = "2021"
[lib]
path = "lib.rs"
[dependencies]
simdutf = "=$SIMDUTF_CRATE"
simdjson-sys = "=$SIMDJSON_SYS_CRATE"
EOF
  : > "$work/crates-fetch/lib.rs"
  (cd "$work/crates-fetch" && cargo fetch --quiet) >&2
  local reg="${CARGO_HOME:-$HOME/.cargo}/registry/cache"
  local utf json
  utf=$(find "$reg" -name "simdutf-$SIMDUTF_CRATE.crate" | head -n1)
  json=$(find "$reg" -name "simdjson-sys-$SIMDJSON_SYS_CRATE.crate" | head -n1)
  [ -n "$utf" ] && [ -n "$json" ] || die "cargo fetch did not provide the simdutf/simdjson crates"
  mkdir -p "$work/crates/simdutf" "$work/crates/simdjson"
  tar -xzf "$utf" -C "$work/crates/simdutf" --strip-components=1
  tar -xzf "$json" -C "$work/crates/simdjson" --strip-components=1
  echo "$work/crates"
}

