'use strict';
// Loads the native addon built for this runtime: build/node-v<ABI>-<platform>-<arch>/heap_labels.node.
// The V8 C++ API is not ABI-stable across Node.js majors, so each runtime has its own build.

const fs = require('node:fs');
const path = require('node:path');

const buildName = `node-v${process.versions.modules}-${process.platform}-${process.arch}`;
const addonPath = path.join(__dirname, '..', 'build', buildName, 'heap_labels.node');

function load() {
  if (!fs.existsSync(addonPath)) {
    throw new Error(
      `heap-labels: no native addon for this runtime (Node.js ${process.version}, ` +
        `ABI ${process.versions.modules}): ${addonPath} is missing. ` +
        'Build it with `npm run build` with this node first on PATH.',
    );
  }
  return require(addonPath);
}

module.exports = { native: load(), addonPath };
