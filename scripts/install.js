#!/usr/bin/env node
// npm's install hook of the package. It never fails the install:
//   - a prebuilt addon (prebuilds/) or an earlier source build (build/prebuilds/) matches this
//     runtime and is whole (lib/addon-file.js): nothing to do; a damaged one counts as none, so that
//     `npm rebuild heap-labels` replaces it when cargo is there;
//   - none matches and cargo is on PATH: build the addon from the package's sources
//     (scripts/build.js, into build/prebuilds/); a failed build is reported, not fatal;
//   - none matches and there is no cargo: say so. require() then fails with the message that names
//     the platform, the ABI and the way out (lib/native.js).
// In a source checkout (a .git beside package.json) it does nothing: `npm run build` builds there.
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const say = (message) => console.error(`heap-labels install: ${message}`);

function matchingAddon() {
  const nodeGypBuild = require('node-gyp-build');
  const { addonFileProblem } = require('../lib/addon-file');
  for (const dir of [path.join(root, 'build'), root]) {
    let file;
    try {
      file = nodeGypBuild.resolve(dir);
    } catch {
      continue; // no match in this directory
    }
    const problem = addonFileProblem(file);
    if (problem === undefined) return file;
    say(`the addon ${file} is damaged: ${problem}`);
    return undefined;
  }
  return undefined;
}

function hasCargo() {
  const result = spawnSync('cargo', ['--version'], { stdio: 'ignore' });
  return !result.error && result.status === 0;
}

function main() {
  if (fs.existsSync(path.join(root, '.git'))) return;
  const target = `${process.platform}-${process.arch}, Node.js ${process.version} (ABI ${process.versions.modules})`;
  const found = matchingAddon();
  if (found) return;
  if (!hasCargo()) {
    say(
      `no prebuilt addon for ${target} and no cargo on PATH to build one; ` +
        "require('heap-labels') will fail with the way out until one of them is there",
    );
    return;
  }
  say(`no prebuilt addon for ${target}: building it from source with cargo (a few minutes)`);
  const result = spawnSync(process.execPath, [path.join(__dirname, 'build.js')], { cwd: root, stdio: 'inherit' });
  if (result.status === 0 && matchingAddon()) {
    say('built the addon from source');
  } else {
    say("the source build failed (see above); require('heap-labels') will fail until an addon is built");
  }
}

try {
  main();
} catch (err) {
  say(`unexpected error, install goes on: ${err && err.stack ? err.stack : err}`);
}
process.exitCode = 0;
