// @ts-check
'use strict';
// Loads the native addon for this runtime with node-gyp-build, the loader of prebuilt native
// packages. The addon uses V8's C++ API, which is not ABI-stable across Node.js lines, so there is
// one file per ABI, named as node-gyp-build and prebuildify name them:
//   <dir>/prebuilds/<platform>-<arch>/node.abi<process.versions.modules>.<libc>.node
// Two places are searched, first match wins:
//   build/prebuilds/  a build of this tree: `npm run build` in a checkout, or the source build that
//                     `npm install` makes where the package carries no prebuild for the runtime;
//   prebuilds/        the prebuilt addons the npm package carries (`npm run prebuilds`).
// HEAP_LABELS_PREBUILD=<dir> (node-gyp-build's override) replaces both: only <dir>/prebuilds/ is
// searched, <dir> taken relative to the working directory.
//
// The file found is checked before it is loaded (lib/addon-file.js): a damaged one would kill the
// process in dlopen(). Every failure is one Error whose message is one line starting `heap-labels:`.

const fs = require('node:fs');
const path = require('node:path');
const nodeGypBuild = require('node-gyp-build');
const { describeLines } = require('./supported-lines');
const { addonFileProblem } = require('./addon-file');

const root = path.join(__dirname, '..');
const OVERRIDE = 'HEAP_LABELS_PREBUILD';
const override = process.env[OVERRIDE] ? path.resolve(process.env[OVERRIDE]) : undefined;
const SEARCH = override === undefined ? [path.join(root, 'build'), root] : [override];

function resolveAddon() {
  for (const dir of SEARCH) {
    try {
      // Absolute: node-gyp-build joins the override's text as it is when <dir> is itself a copy
      // of this package, and require() would take a relative result for a module name.
      return path.resolve(nodeGypBuild.resolve(dir));
    } catch {
      // node-gyp-build throws when the directory has no match: try the next one.
    }
  }
  return undefined;
}

function libc() {
  if (process.platform !== 'linux') return undefined;
  const report = /** @type {{ header?: { glibcVersionRuntime?: string } } | undefined} */ (process.report?.getReport?.());
  const header = report?.header ?? {};
  return header.glibcVersionRuntime ? 'glibc' : 'musl';
}

// The ABIs of the prebuilt addons the package carries for this platform, for the message.
function carriedAbis(platformArch) {
  let files = [];
  try {
    files = fs.readdirSync(path.join(root, 'prebuilds', platformArch));
  } catch {
    return [];
  }
  return [...new Set(files.map((f) => /\.abi(\d+)\./.exec(f)?.[1]).filter(Boolean))].sort();
}

function missingAddonError() {
  const platformArch = `${process.platform}-${process.arch}`;
  const target = [platformArch, libc()].filter(Boolean).join(' ');
  const abis = carriedAbis(platformArch);
  const carried = abis.length
    ? `The package carries prebuilt addons for ${platformArch} ABIs ${abis.join(', ')} (${describeLines()}).`
    : `The package carries no prebuilt addon for ${platformArch}.`;
  const searched = override === undefined ? '' : ` ${OVERRIDE}=${override}, which replaces them, holds none for it.`;
  return new Error(
    `heap-labels: no native addon for ${target}, Node.js ABI ${process.versions.modules} ` +
      `(Node.js ${process.version}). ${carried}${searched} Ways out: run a supported Node.js line, or build ` +
      'the addon from source: install a Rust toolchain (https://rustup.rs) and a C++ compiler, then ' +
      'run `npm rebuild heap-labels` with this node first on PATH (in a checkout: `npm run build`).',
  );
}

// Where a damaged file came from decides how it is replaced.
function wayToReplace(file) {
  if (override !== undefined) return `replace it in ${OVERRIDE}=${override}`;
  if (file.startsWith(path.join(root, 'build') + path.sep)) {
    return 'rebuild it: `npm rebuild heap-labels` (in a checkout: `npm run build`)';
  }
  return 'install the package again (remove node_modules/heap-labels, then `npm install` or `npm ci`)';
}

// The addons this realm has loaded, by file, shared by every copy of lib/ evaluated in it. A module
// registry reset (hot reload; a test clearing require.cache, the addon's entry too) makes the next
// require() of a lib/ module evaluate it again, and the realm's first instance (lib/instance.js)
// still loads some modules on first use (the agent, the endpoint, the integrations): their fresh
// copy of this module must hand them the addon whose state the instance's sessions and labels live
// in, not a second load of the file (Node.js would initialise the addon again, with empty state).
const kLoaded = Symbol.for('heap-labels.loaded-addons');

function loadedAddons() {
  const descriptor = Object.getOwnPropertyDescriptor(globalThis, kLoaded);
  if (descriptor !== undefined && descriptor.value instanceof Map) return descriptor.value;
  const loaded = new Map();
  Object.defineProperty(globalThis, kLoaded, { value: loaded, enumerable: false, writable: false, configurable: false });
  return loaded;
}

function load(file) {
  const loaded = loadedAddons();
  if (loaded.has(file)) return loaded.get(file);
  const exports = loadFile(file);
  loaded.set(file, exports);
  return exports;
}

function loadFile(file) {
  const problem = addonFileProblem(file);
  if (problem !== undefined) {
    throw new Error(`heap-labels: the native addon ${file} cannot be loaded: ${problem}. Way out: ${wayToReplace(file)}.`);
  }
  try {
    return require(file);
  } catch (err) {
    // dlopen's error (a missing library, an undefined symbol) is one line after the file's name.
    const reason = String(err.message).split('\n')[0].replace(`${file}: `, '');
    throw new Error(`heap-labels: the native addon ${file} cannot be loaded: ${reason}`, { cause: err });
  }
}

const addonPath = resolveAddon();
if (addonPath === undefined) throw missingAddonError();

/** @type {typeof import('./native-addon')} */
const native = load(addonPath);

module.exports = { native, addonPath };
