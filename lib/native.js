'use strict';
// Loads the native addon for this runtime with node-gyp-build, the loader of prebuilt native
// packages. The addon uses V8's C++ API, which is not ABI-stable across Node.js lines, so there is
// one file per ABI, named as node-gyp-build and prebuildify name them:
//   <dir>/prebuilds/<platform>-<arch>/node.abi<process.versions.modules>.<libc>.node
// Two places are searched, first match wins:
//   build/prebuilds/  a build of this tree: `npm run build` in a checkout, or the source build that
//                     `npm install` makes where the package carries no prebuild for the runtime;
//   prebuilds/        the prebuilt addons the npm package carries (`npm run prebuilds`).
// HEAP_LABELS_PREBUILD=<dir> (node-gyp-build's override) stands for the package's directory in the
// second search (<dir>/prebuilds/ instead of prebuilds/).

const fs = require('node:fs');
const path = require('node:path');
const nodeGypBuild = require('node-gyp-build');
const { describeLines } = require('./supported-lines');

const root = path.join(__dirname, '..');
const SEARCH = [path.join(root, 'build'), root];

function resolveAddon() {
  for (const dir of SEARCH) {
    try {
      return nodeGypBuild.resolve(dir);
    } catch {
      // node-gyp-build throws when the directory has no match: try the next one.
    }
  }
  return undefined;
}

function libc() {
  if (process.platform !== 'linux') return undefined;
  const header = process.report?.getReport?.().header ?? {};
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
  return new Error(
    `heap-labels: no native addon for ${target}, Node.js ABI ${process.versions.modules} ` +
      `(Node.js ${process.version}). ${carried} Ways out: run a supported Node.js line, or build ` +
      'the addon from source: install a Rust toolchain (https://rustup.rs) and a C++ compiler, then ' +
      'run `npm rebuild heap-labels` with this node first on PATH (in a checkout: `npm run build`).',
  );
}

const addonPath = resolveAddon();
if (addonPath === undefined) throw missingAddonError();

module.exports = { native: require(addonPath), addonPath };
