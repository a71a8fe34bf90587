#!/usr/bin/env bash
# Prints the configure.py arguments of a build profile. Part of the runtime's cache key.
# The test profile must keep V8's compile lines identical to those of the shared read-only compiler
# cache: --without-intl --without-ssl, no global -I, default compilers through ccache.
set -euo pipefail
common="--ninja --without-intl --without-npm --without-corepack
  --shared-http-parser --shared-ada --shared-simdutf --shared-simdjson --shared-cares
  --shared-brotli --shared-zlib --shared-zstd --shared-nghttp2 --shared-sqlite"
case "${1:-test}" in
  test) echo $common --without-ssl ;;
  full) echo $common --shared-openssl ;;
  *) echo "unknown profile $1" >&2; exit 1 ;;
esac
