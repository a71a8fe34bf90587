#!/usr/bin/env bash
# Prints the configure.py arguments of a build profile. Part of the runtime's cache key.
# Each profile keeps V8's compile lines identical to those of its shared read-only compiler cache
# (../shared/toolchain/ccache for test, ccache-intl for full): same flags in the same order, no global -I,
# default compilers through ccache. Changing a line here means a cold V8 build (about 3 hours on 2 cores).
set -euo pipefail
shared="--without-npm --without-corepack
  --shared-http-parser --shared-ada --shared-simdutf --shared-simdjson --shared-cares
  --shared-brotli --shared-zlib --shared-zstd --shared-nghttp2 --shared-sqlite"
case "${1:-full}" in
  # Crypto, TLS, HTTP/2, the inspector and full Intl (ICU 76.1 in deps/icu): what users run.
  full) echo --ninja --with-intl=full-icu --shared-openssl $shared ;;
  # A reduced runtime for quick patch iteration: no Intl, no OpenSSL (so no crypto, TLS or inspector).
  test) echo --ninja --without-intl $shared --without-ssl ;;
  *) echo "unknown profile $1" >&2; exit 1 ;;
esac
