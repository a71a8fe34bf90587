# Functions of the patched Node.js recipe (sourced by build.sh; needs versions.env loaded).
# shellcheck shell=bash

log()  { printf '[patched-node] %s\n' "$*" >&2; }
step() { printf '\n[patched-node] == %s ==\n' "$*" >&2; }
die()  { printf '[patched-node] error: %s\n' "$*" >&2; exit 1; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# The cache key of an installed runtime: the tarball, every file of this recipe and the patch series.
runtime_key() {
  local profile=$1
  {
    echo "profile=$profile tarball=$NODE_TARBALL_SHA256"
    (cd "$here" && sha256sum build.sh lib.sh native-deps.sh node-source.sh release.sh versions.env configure-args.sh openssl.cnf)
    (cd "$repo/$V8_PATCH_DIR" && shopt -s nullglob && for p in ./*.patch; do sha256sum "$p"; done)
    [ -z "$NODE_PATCH_DIR" ] ||
      (cd "$here/$NODE_PATCH_DIR" && shopt -s nullglob && for p in ./*.patch; do sha256sum "$p"; done)
  } | sha256sum | cut -c1-16
}

ensure_apt_packages() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && { log "all present"; return; }
  log "installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

# toolchain_dirs and toolchain_entry: where the shared toolchain may be.
# shellcheck source=../toolchain.sh
source "$repo/tools/toolchain.sh"

# The read-only compiler cache made with this profile's compile lines, if the toolchain has one
# (Intl changes every V8 compile line, so each profile has its own).
shared_compiler_cache() {
  local name=ccache
  [ "$1" = full ] && name=ccache-intl
  toolchain_entry "$name"
}

# Finds a pinned source tarball: $2 (an explicit path, may be empty), the shared toolchain folder, the
# download cache, or a download from Debian's archive. Always verified against the pinned sha256.
#   locate_source <file name> <explicit path> <sha256> <url> <download dir>
locate_source() {
  local name=$1 explicit=$2 sha=$3 url=$4 downloads=$5
  local candidates=("$explicit")
  local dir
  while IFS= read -r dir; do candidates+=("$dir/$name"); done < <(toolchain_dirs)
  candidates+=("$downloads/$name")
  local c
  for c in "${candidates[@]}"; do
    [ -n "$c" ] && [ -f "$c" ] || continue
    if [ "$(sha256_of "$c")" = "$sha" ]; then
      log "using $c (sha256 verified)"
      echo "$c"
      return
    fi
    log "ignoring $c: sha256 mismatch"
  done
  log "downloading $url"
  curl -fsSL --retry 3 -o "$downloads/$name.part" "$url" ||
    die "cannot download $name; put it in $downloads or set HEAP_LABELS_TOOLCHAIN to a folder holding it"
  [ "$(sha256_of "$downloads/$name.part")" = "$sha" ] || die "downloaded $name has the wrong sha256"
  mv "$downloads/$name.part" "$downloads/$name"
  echo "$downloads/$name"
}

locate_tarball() {
  if [ -n "${NODE_SOURCE:-}" ]; then
    log "using $NODE_SOURCE ($NODE_SOURCE_KIND, sha256 $NODE_TARBALL_SHA256)"
    echo "$NODE_SOURCE"
    return
  fi
  locate_source "$NODE_TARBALL" "${HEAP_LABELS_NODE_TARBALL:-}" "$NODE_TARBALL_SHA256" "$NODE_TARBALL_URL" "$1"
}

# ICU for --with-intl=full-icu: extracted once into deps/icu (configure.py builds it from there), unless
# the source carries its own full ICU (nodejs.org's deps/icu-small with README-FULL-ICU.txt), which
# configure.py then uses.
place_icu() {
  local downloads=$1 src=$2
  if [ -f "$src/deps/icu-small/README-FULL-ICU.txt" ]; then
    log "the source carries full ICU: $src/deps/icu-small"
    return
  fi
  if [ -f "$src/deps/.heap-labels-icu" ] && [ "$(cat "$src/deps/.heap-labels-icu")" = "$ICU_TARBALL_SHA256" ]; then
    log "ICU present: $src/deps/icu"
    return
  fi
  local tarball
  tarball=$(locate_source "$ICU_TARBALL" "${HEAP_LABELS_ICU_TARBALL:-}" "$ICU_TARBALL_SHA256" "$ICU_TARBALL_URL" "$downloads")
  rm -rf "$src/deps/icu"
  tar --no-same-owner -xzf "$tarball" -C "$src/deps"
  [ -f "$src/deps/icu/source/common/unicode/uversion.h" ] || die "$ICU_TARBALL did not unpack to icu/source"
  echo "$ICU_TARBALL_SHA256" > "$src/deps/.heap-labels-icu"
}

# Extracts the tarball (or copies the tree of --node-source) once per source hash. deps/v8 becomes a git
# repository whose first commit is the pristine source, so the patch series can be re-applied from a
# clean state at every run.
prepare_source_tree() {
  local tarball=$1 src=$2
  if [ -f "$src/.heap-labels-tarball" ] && [ "$(cat "$src/.heap-labels-tarball")" = "$NODE_TARBALL_SHA256" ]; then
    log "source tree ready: $src"
    return
  fi
  rm -rf "$src" "$src.unpack"
  mkdir -p "$src.unpack"
  if [ -d "$tarball" ]; then
    log "copying $tarball into $src"
    cp -a "$tarball" "$src.unpack/tree"
  else
    log "extracting into $src"
    tar --no-same-owner -xf "$tarball" -C "$src.unpack"
  fi
  local top=("$src.unpack"/*)
  [ ${#top[@]} = 1 ] && [ -f "${top[0]}/src/node_version.h" ] || die "$tarball did not unpack to one Node.js source directory"
  mv "${top[0]}" "$src"
  rmdir "$src.unpack"
  (
    cd "$src/deps/v8"
    git init -q
    git add -A
    git -c user.name=heap-labels -c user.email=build@heap-labels.invalid commit -qm "pristine V8 from $NODE_TARBALL"
  )
  echo "$NODE_TARBALL_SHA256" > "$src/.heap-labels-tarball"
}

# JavaScript dependencies: copied or bundled (esbuild) into deps/ as Node's own updater scripts do, when
# the source lacks them (Debian's tarball; nodejs.org's carries them). esbuild runs on paths relative to
# the npm work directory: its bundles' comments name them, and they end up in the node binary.
place_js_deps() {
  local cache=$1 src=$2
  local marker="$NPM_DEPS (relative paths)"
  if [ -f "$src/deps/.heap-labels-js-deps" ] && [ "$(cat "$src/deps/.heap-labels-js-deps")" = "$marker" ]; then
    log "JavaScript dependencies present"
    return
  fi
  if [ ! -f "$src/deps/.heap-labels-js-deps" ] && [ -f "$src/deps/undici/undici.js" ] && [ -f "$src/deps/minimatch/index.js" ]; then
    log "the source carries its JavaScript dependencies"
    return
  fi
  local work="$cache/node-build/npm"
  rm -rf "$work"
  mkdir -p "$work"
  echo '{"name":"heap-labels-node-deps","private":true}' > "$work/package.json"
  log "npm install $NPM_DEPS"
  # shellcheck disable=SC2086
  (cd "$work" && npm install --silent --no-audit --no-fund $NPM_DEPS) >&2
  local nm="$work/node_modules"
  local esbuild="$nm/@esbuild/linux-x64/bin/esbuild"
  [ -x "$esbuild" ] || die "esbuild binary missing from $nm/@esbuild"
  mkdir -p "$src/deps/acorn/acorn/dist" "$src/deps/acorn/acorn-walk/dist" "$src/deps/minimatch" \
    "$src/deps/cjs-module-lexer/dist" "$src/deps/undici" "$src/deps/amaro"
  cp "$nm/acorn/dist/acorn.js" "$src/deps/acorn/acorn/dist/"
  cp "$nm/acorn-walk/dist/walk.js" "$src/deps/acorn/acorn-walk/dist/"
  cp "$nm/acorn/package.json" "$src/deps/acorn/acorn/"
  cp "$nm/acorn-walk/package.json" "$src/deps/acorn/acorn-walk/"
  (cd "$work" && "$esbuild" node_modules/minimatch/dist/commonjs/index.js --bundle --platform=node \
    --log-level=warning --outfile="$src/deps/minimatch/index.js")
  cp "$nm/cjs-module-lexer/lexer.js" "$src/deps/cjs-module-lexer/"
  cp "$nm/cjs-module-lexer/dist/lexer.js" "$src/deps/cjs-module-lexer/dist/"
  cp "$nm/cjs-module-lexer/package.json" "$src/deps/cjs-module-lexer/"
  (cd "$nm/undici" && "$esbuild" index-fetch.js --bundle --platform=node --keep-names \
    --define:esbuildDetection=1 --log-level=warning --outfile="$src/deps/undici/undici.js")
  cp "$nm/undici/package.json" "$src/deps/undici/"
  cp -r "$nm/amaro/dist" "$nm/amaro/package.json" "$src/deps/amaro/"
  mkdir -p "$src/deps/openssl"
  cp "$here/openssl.cnf" "$src/deps/openssl/nodejs-openssl.cnf"
  echo "$marker" > "$src/deps/.heap-labels-js-deps"
}

# Resets deps/v8 to the pristine tarball and applies the series. Files whose patched content did not
# change since the last run get their old mtime back, so ninja recompiles only what really changed.
apply_v8_patches() {
  local src=$1 patches=$2
  local v8="$src/deps/v8"
  local keep="$src/.heap-labels-prev"
  rm -rf "$keep"
  mkdir -p "$keep"
  local f
  while IFS= read -r f; do
    [ -f "$v8/$f" ] || continue
    mkdir -p "$keep/$(dirname "$f")"
    cp -p "$v8/$f" "$keep/$f"
  done < <(cd "$v8" && { git diff --name-only; git ls-files --others --exclude-standard; })
  (cd "$v8" && git checkout -q -- . && git clean -fdq)
  local p
  shopt -s nullglob
  for p in "$patches"/*.patch; do
    log "applying $(basename "$p")"
    (cd "$v8" && git apply --whitespace=nowarn "$p") || die "patch $(basename "$p") does not apply"
  done
  while IFS= read -r f; do
    if [ -f "$keep/$f" ] && cmp -s "$keep/$f" "$v8/$f"; then
      touch -r "$keep/$f" "$v8/$f"
    fi
  done < <(cd "$v8" && { git diff --name-only; git ls-files --others --exclude-standard; })
  rm -rf "$keep"
}

# Applies the recipe's Node.js patch series (outside deps/v8). The series last applied is kept in the
# tree; when the series changes it is reverse-applied first, so the tree always holds pristine + current.
apply_node_patches() {
  local src=$1 patches=$2
  local applied="$src/.heap-labels-node-patches"
  local p
  shopt -s nullglob
  # A line without a series: an empty one.
  if [ ! -d "$patches" ]; then
    patches="$src/.heap-labels-no-node-patches"
    mkdir -p "$patches"
  fi
  if [ -d "$applied" ]; then
    if diff -rq "$applied" "$patches" >/dev/null 2>&1; then
      log "Node.js patches applied already"
      return
    fi
    local old=("$applied"/*.patch)
    for ((i = ${#old[@]} - 1; i >= 0; i--)); do
      log "reverting $(basename "${old[$i]}")"
      (cd "$src" && git apply -R --whitespace=nowarn "${old[$i]}") || die "cannot revert $(basename "${old[$i]}")"
    done
    rm -rf "$applied"
  fi
  for p in "$patches"/*.patch; do
    log "applying $(basename "$p")"
    (cd "$src" && git apply --whitespace=nowarn "$p") || die "patch $(basename "$p") does not apply"
  done
  mkdir -p "$applied"
  for p in "$patches"/*.patch; do cp "$p" "$applied/"; done
}

# ccache in a writable directory of the cache. When the shared read-only toolchain cache exists it is
# copied in once (it is a plain ccache directory in the local layout, which ccache cannot read as
# secondary storage), so V8 objects hit while the objects of Node's own sources are stored for next time.
ccache_env() {
  local cache=$1 profile=$2
  export CCACHE_DIR="${HEAP_LABELS_CCACHE_DIR:-$cache/ccache}"
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
  mkdir -p "$CCACHE_DIR"
  local shared
  shared=$(shared_compiler_cache "$profile") || shared=""
  if [ -z "$shared" ]; then
    log "compiler cache: $CCACHE_DIR (no shared toolchain cache found: a cold build takes about 3 hours on 2 cores)"
    return
  fi
  local seed
  seed=$(cat "$shared/COVERAGE" 2>/dev/null | sha256sum | cut -c1-16)
  if [ ! -f "$CCACHE_DIR/.seeded-$seed" ]; then
    log "seeding $CCACHE_DIR from $shared"
    cp -rn "$shared"/. "$CCACHE_DIR"/
    touch "$CCACHE_DIR/.seeded-$seed"
  fi
  log "compiler cache: $CCACHE_DIR (seeded from $shared)"
}

configure_node() {
  local src=$1 profile=$2 cache=$3
  local args
  args=$(bash "$here/configure-args.sh" "$profile" "$src")
  if [ -f "$src/out/Release/build.ninja" ] && [ -f "$src/.heap-labels-configure" ] &&
     [ "$(cat "$src/.heap-labels-configure")" = "$args" ]; then
    log "configured already: $args"
    return
  fi
  local venv="$cache/node-build/gyp-venv-$GYP_NEXT_VERSION"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "gyp-next==$GYP_NEXT_VERSION" >&2
  fi
  log "configure $args"
  # shellcheck disable=SC2086
  (cd "$src" && CC="ccache gcc" CXX="ccache g++" "$venv/bin/python" configure.py $args) >&2
  echo "$args" > "$src/.heap-labels-configure"
}

build_node() {
  local src=$1 jobs=$2 cache=$3 profile=$4
  ccache_env "$cache" "$profile"
  ccache -z >/dev/null
  local started=$SECONDS
  log "ninja -j$jobs node (progress: [done/total])"
  ninja -C "$src/out/Release" -j"$jobs" node | ninja_progress >&2
  log "build took $((SECONDS - started)) s; $(ccache -s | grep -iE 'hits|misses' | tr -s ' ' | paste -sd';')"
}

# Passes ninja's output through and, at most once a minute, adds a line with the steps done and an
# estimate of the time left from the rate of the last ten minutes (cache hits are fast, misses take
# 10-20 s each: the recent rate follows whichever phase the build is in).
ninja_progress() {
  local line done_steps total last_report=$SECONDS
  local -a times=() counts=()
  while IFS= read -r line; do
    printf '%s\n' "$line"
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    done_steps=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
    ((SECONDS - last_report >= 60)) || continue
    last_report=$SECONDS
    times+=("$SECONDS") counts+=("$done_steps")
    while ((${#times[@]} > 1 && SECONDS - times[0] > 600)); do times=("${times[@]:1}") counts=("${counts[@]:1}"); done
    local span=$((SECONDS - times[0])) steps=$((done_steps - counts[0])) left=""
    if ((span > 0 && steps > 0)); then
      left=", about $(((total - done_steps) * span / steps / 60 + 1)) min left at the recent rate"
    fi
    log "progress: $done_steps/$total steps after $((SECONDS - started)) s$left"
  done
}
