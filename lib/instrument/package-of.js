'use strict';
// The package a loaded module file belongs to: { name, version, dir } from the nearest
// package.json above it that has a name (package.json files without one, such as the
// {"type": "module"} markers some packages keep in subdirectories, are passed over). The real
// package name, not the directory's: an app that installs express as "express4"
// (npm:express@4) still has express. Read once per framework copy, when it is first seen.

const fs = require('node:fs');
const path = require('node:path');

const MAX_LEVELS = 16;

function packageOf(filename) {
  if (typeof filename !== 'string' || !path.isAbsolute(filename)) return undefined;
  let dir = path.dirname(filename);
  for (let level = 0; level < MAX_LEVELS; level++) {
    let text;
    try {
      text = fs.readFileSync(path.join(dir, 'package.json'), 'utf8');
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      let json;
      try {
        json = JSON.parse(text);
      } catch {
        return undefined;
      }
      if (json !== null && typeof json === 'object' && typeof json.name === 'string') {
        return { name: json.name, version: typeof json.version === 'string' ? json.version : '', dir };
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
  return undefined;
}

// The major version number of a semver string ('4.22.3' -> 4), or NaN.
function majorOf(version) {
  const match = /^v?(\d+)\./.exec(version);
  return match === null ? NaN : Number(match[1]);
}

module.exports = { packageOf, majorOf };
