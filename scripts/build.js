#!/usr/bin/env node
// Builds the native addon for one Node.js runtime and installs it where lib/native.js (node-gyp-build)
// looks for it:
//   <out>/<platform>-<arch>/node.abi<NODE_MODULE_VERSION>.<libc>.node
// <out> is build/prebuilds (a build of this tree; `npm run build`, or `npm install` of the package
// where no prebuilt addon matches) unless --out says otherwise (`npm run prebuilds` writes prebuilds/,
// the set the npm package carries).
//
// The runtime is the node running this script (the `node` first on PATH under `npm run build`);
// its headers come from <prefix>/include/node, or from $HEAP_LABELS_NODE_INCLUDE. Runs under any
// node >= 20. Options: --debug builds the dev profile; --out <dir>; --strip drops the symbol table
// (the package's prebuilds); --check-types leaves lib/native-addon.d.ts as it is (the test run).
//
// In a checkout (not in an installed package) it also generates the addon's TypeScript declarations from the Rust signatures
// (scripts/native-types.js): into build/native-addon.d.ts, and into lib/native-addon.d.ts when they
// differ there, unless --check-types.
//
// Each ABI builds in its own cargo target directory (target/node-abi<N>, or node-abi<N> under
// $HEAP_LABELS_TARGET_BASE, which the test run sets to a directory in its cache; unless
// CARGO_TARGET_DIR is set), so switching runtimes reuses each one's build. Paths of the building machine are mapped to
// fixed names (rustc's --remap-path-prefix, the compilers' -ffile-prefix-map): the file does not
// depend on where the tree or the cargo registry lie.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const { supportedLines, describeLines } = require('../lib/supported-lines');
const nativeTypes = require('./native-types');

function fail(message) {
  console.error(`heap-labels build: ${message}`);
  process.exit(1);
}

function includeDir() {
  const dir =
    process.env.HEAP_LABELS_NODE_INCLUDE ||
    path.join(path.dirname(fs.realpathSync(process.execPath)), '..', 'include', 'node');
  if (!fs.existsSync(path.join(dir, 'v8.h'))) {
    fail(
      `${dir} has no v8.h: run this with a node that ships its headers ` +
        `(e.g. PATH="$(scripts/runtimes.sh bin primary):$PATH" npm run build) ` +
        'or set HEAP_LABELS_NODE_INCLUDE',
    );
  }
  return path.resolve(dir);
}

// The ABI of the headers we compile against (equals process.versions.modules of that runtime).
function moduleVersion(include) {
  const header = fs.readFileSync(path.join(include, 'node_version.h'), 'utf8');
  const match = /#define NODE_MODULE_VERSION (\d+)/.exec(header);
  if (!match) fail(`no NODE_MODULE_VERSION in ${include}/node_version.h`);
  return match[1];
}

// Only the lines the recipe supports (NODE_LINES of tools/patched-node/versions.env): V8's API
// differs before the oldest, and an odd or newer line is one nothing here is built or tested on.
// Other headers are refused with the way out.
function checkSupported(include) {
  const header = fs.readFileSync(path.join(include, 'node_version.h'), 'utf8');
  const major = (/#define NODE_MAJOR_VERSION (\d+)/.exec(header) || [])[1];
  if (!supportedLines().some((line) => line.node === major)) {
    fail(
      `the headers in ${include} are of Node.js ${major || 'unknown'}, not a supported line: heap-labels supports ` +
        `${describeLines()} (NODE_LINES of tools/patched-node/versions.env). Put a supported runtime first on PATH, e.g. ` +
        'PATH="$(scripts/runtimes.sh bin primary):$PATH" npm run build',
    );
  }
}

function targetDir(abi) {
  if (process.env.HEAP_LABELS_TARGET_BASE) return path.join(path.resolve(root, process.env.HEAP_LABELS_TARGET_BASE), `node-abi${abi}`);
  return process.env.CARGO_TARGET_DIR
    ? path.resolve(root, process.env.CARGO_TARGET_DIR)
    : path.join(root, 'target', `node-abi${abi}`);
}

function cargoBuild(include, release, abi) {
  const args = ['build', '-p', 'heap-labels', '--lib'];
  if (release) args.push('--release');
  console.error(`heap-labels build: cargo ${args.join(' ')} (headers: ${include})`);
  const cargoHome = process.env.CARGO_HOME || path.join(os.homedir(), '.cargo');
  const remap = [`${root}=heap-labels`, `${cargoHome}=cargo`, `${include}=node-include`];
  // In a checkout, napi-derive writes the addon's declarations (scripts/native-types.js); it does so
  // only while the crate compiles, so without them the crate is compiled again.
  const typeDefs = nativeTypes.inCheckout() ? nativeTypes.typeDefDir(targetDir(abi)) : undefined;
  if (typeDefs !== undefined && !nativeTypes.hasTypeDefs(typeDefs)) {
    fs.mkdirSync(typeDefs, { recursive: true }); // napi-derive does not create it
    const now = new Date();
    fs.utimesSync(path.join(root, 'src', 'lib.rs'), now, now);
  }
  const env = {
    ...process.env,
    ...(typeDefs === undefined ? {} : { NAPI_TYPE_DEF_TMP_FOLDER: typeDefs }),
    HEAP_LABELS_NODE_INCLUDE: include,
    HEAP_LABELS_NODE: process.execPath,
    CARGO_TARGET_DIR: targetDir(abi),
    RUSTFLAGS: [process.env.RUSTFLAGS, ...remap.map((m) => `--remap-path-prefix=${m}`)].filter(Boolean).join(' '),
    CXXFLAGS: [process.env.CXXFLAGS, ...remap.map((m) => `-ffile-prefix-map=${m}`)].filter(Boolean).join(' '),
  };
  const result = spawnSync('cargo', args, { cwd: root, stdio: 'inherit', env });
  if (result.error) fail(`could not run cargo: ${result.error.message}`);
  if (result.status !== 0) fail(`cargo exited with ${result.status}`);
}

// glibc or musl: the libc tag of node-gyp-build's file names (it asks the same of the loading node).
function libc() {
  return process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
}

function install(release, abi, outRoot, strip) {
  const built = path.join(targetDir(abi), release ? 'release' : 'debug', 'libheap_labels.so');
  if (!fs.existsSync(built)) fail(`cargo produced no ${built}`);
  const outDir = path.join(outRoot, `${process.platform}-${process.arch}`);
  fs.mkdirSync(outDir, { recursive: true });
  const out = path.join(outDir, `node.abi${abi}.${libc()}.node`);
  // Copy then rename: a process that has the old file loaded keeps its mapping intact.
  const tmp = `${out}.${process.pid}.tmp`;
  fs.copyFileSync(built, tmp);
  if (strip) {
    const result = spawnSync('strip', ['--strip-unneeded', tmp], { stdio: 'inherit' });
    if (result.status !== 0) fail(`strip failed on ${tmp}`);
  }
  fs.renameSync(tmp, out);
  console.error(`heap-labels build: installed ${path.relative(process.cwd(), out) || out}`);
}

function option(name) {
  const i = process.argv.indexOf(name);
  if (i === -1) return undefined;
  if (i + 1 >= process.argv.length) fail(`${name} needs a value`);
  return process.argv[i + 1];
}

async function main() {
  const release = !process.argv.includes('--debug');
  const strip = process.argv.includes('--strip');
  const outRoot = path.resolve(option('--out') ?? path.join(root, 'build', 'prebuilds'));
  const include = includeDir();
  checkSupported(include);
  const abi = moduleVersion(include);
  cargoBuild(include, release, abi);
  install(release, abi, outRoot, strip);
  if (nativeTypes.inCheckout()) {
    const typeDefs = nativeTypes.typeDefDir(targetDir(abi));
    console.error(`heap-labels build: ${await nativeTypes.writeTypes(typeDefs, process.argv.includes('--check-types'))}`);
  }
}

main().catch((err) => fail(err.stack || String(err)));
