#!/usr/bin/env bash
# Prints the configure.py arguments of a build profile for a source tree. Part of the runtime's cache key.
#
#   configure-args.sh <full|test> [<source tree>]
#
# A dependency the source carries in deps/ is built from it (what Node.js tests upstream: nodejs.org's
# tarballs carry them all); one it lacks (Debian's tarball removed them) is linked from the system
# (Debian's packages) or from the static builds of native-deps.sh in /usr/local. The same goes for npm
# and corepack. Without a tree every dependency counts as missing, as in Debian's tarball.
# For Debian's tarball each profile keeps V8's compile lines identical to those of its shared read-only
# compiler cache (../shared/toolchain/ccache for test, ccache-intl for full): same flags in the same
# order, no global -I, default compilers through ccache. Changing a line here means a cold V8 build
# (about 3 hours on 2 cores).
set -euo pipefail
profile=${1:-full}
tree=${2:-}

# has <path under the tree>: whether the source carries it.
has() { [ -n "$tree" ] && [ -e "$tree/$1" ]; }
# shared <flag> <path of the bundled copy>: the flag when the source lacks the copy.
shared() { has "$2" || printf ' %s' "$1"; }

deps="$(shared --without-npm deps/npm/package.json)$(shared --without-corepack deps/corepack/package.json)"
deps+="$(shared --shared-http-parser deps/llhttp)$(shared --shared-ada deps/ada)"
deps+="$(shared --shared-simdutf deps/simdutf)$(shared --shared-simdjson deps/simdjson)"
deps+="$(shared --shared-cares deps/cares)$(shared --shared-brotli deps/brotli)"
deps+="$(shared --shared-zlib deps/zlib)$(shared --shared-zstd deps/zstd)"
deps+="$(shared --shared-nghttp2 deps/nghttp2)$(shared --shared-sqlite deps/sqlite)"
case "$profile" in
  # Crypto, TLS, HTTP/2, the inspector and full Intl (ICU 76.1 in deps/icu, or the source's own): what
  # users run.
  full) echo "--ninja --with-intl=full-icu$(shared --shared-openssl deps/openssl/openssl)$deps" ;;
  # A reduced runtime for quick patch iteration: no Intl, no OpenSSL (so no crypto, TLS or inspector).
  test) echo "--ninja --without-intl$deps --without-ssl" ;;
  *) echo "unknown profile $profile" >&2; exit 1 ;;
esac
