#!/usr/bin/env node
// Builds the native addon for one Node.js runtime and installs it as
//   build/node-v<NODE_MODULE_VERSION>-<platform>-<arch>/heap_labels.node
// where lib/native.js looks for it.
//
// The runtime is the node running this script (the `node` first on PATH under `npm run build`);
// its headers come from <prefix>/include/node, or from $HEAP_LABELS_NODE_INCLUDE. Runs under any
// node >= 20. Options: --debug builds the dev profile.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const { supportedLines, describeLines } = require('../lib/supported-lines');

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

// V8's API differs before the oldest line the recipe supports (tools/patched-node/versions.env):
// older headers are refused with the way out.
function checkSupported(include) {
  const header = fs.readFileSync(path.join(include, 'node_version.h'), 'utf8');
  const major = Number((/#define NODE_MAJOR_VERSION (\d+)/.exec(header) || [])[1]);
  const oldest = Math.min(...supportedLines().map((line) => Number(line.node)));
  if (!(major >= oldest)) {
    fail(
      `the headers in ${include} are of Node.js ${major || 'unknown'}; heap-labels supports ` +
        `${describeLines()}. Put a supported runtime first on PATH, e.g. ` +
        'PATH="$(scripts/runtimes.sh bin primary):$PATH" npm run build',
    );
  }
}

function cargoBuild(include, release) {
  const args = ['build', '-p', 'heap-labels', '--lib'];
  if (release) args.push('--release');
  console.error(`heap-labels build: cargo ${args.join(' ')} (headers: ${include})`);
  const result = spawnSync('cargo', args, {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, HEAP_LABELS_NODE_INCLUDE: include, HEAP_LABELS_NODE: process.execPath },
  });
  if (result.error) fail(`could not run cargo: ${result.error.message}`);
  if (result.status !== 0) fail(`cargo exited with ${result.status}`);
}

function install(release, abi) {
  const targetDir = process.env.CARGO_TARGET_DIR
    ? path.resolve(root, process.env.CARGO_TARGET_DIR)
    : path.join(root, 'target');
  const built = path.join(targetDir, release ? 'release' : 'debug', 'libheap_labels.so');
  if (!fs.existsSync(built)) fail(`cargo produced no ${built}`);
  const outDir = path.join(root, 'build', `node-v${abi}-${process.platform}-${process.arch}`);
  fs.mkdirSync(outDir, { recursive: true });
  const out = path.join(outDir, 'heap_labels.node');
  // Copy then rename: a process that has the old file loaded keeps its mapping intact.
  const tmp = `${out}.${process.pid}.tmp`;
  fs.copyFileSync(built, tmp);
  fs.renameSync(tmp, out);
  console.error(`heap-labels build: installed ${path.relative(root, out)}`);
}

function main() {
  const release = !process.argv.includes('--debug');
  const include = includeDir();
  checkSupported(include);
  const abi = moduleVersion(include);
  cargoBuild(include, release);
  install(release, abi);
}

main();
