'use strict';
// The native boundary's types: lib/native-addon.d.ts is generated from the Rust signatures
// (scripts/native-types.js, run by scripts/build.js) and checked in; lib/native.js gives the addon
// that type, and `tsc -p tests/types/tsconfig.lib.json` (scripts/test.d/40-typescript.sh) checks
// lib/'s calls into it. This holds the checked-in file to what the build of this tree generated,
// the loaded addon to the declarations, and every caller of the addon to that check.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { CHECKED_IN, GENERATED } = require('../scripts/native-types');

const root = path.join(__dirname, '..');
const sorted = (names) => [...new Set(names)].sort();

test('lib/native-addon.d.ts is what the build generated from the Rust signatures', () => {
  assert.ok(
    fs.existsSync(GENERATED),
    `${GENERATED} is missing: build the addon in this checkout (npm run build) with the devDependencies installed (npm ci)`,
  );
  const checkedIn = fs.readFileSync(CHECKED_IN, 'utf8').split('\n');
  const generated = fs.readFileSync(GENERATED, 'utf8').split('\n');
  const line = generated.findIndex((text, i) => text !== checkedIn[i]);
  if (line === -1 && checkedIn.length === generated.length) return;
  const at = line === -1 ? generated.length : line;
  assert.fail(
    `lib/native-addon.d.ts is stale: \`npm run build\` rewrites it from src/ (commit it with the Rust change). ` +
      `First difference, line ${at + 1}: checked in ${JSON.stringify(checkedIn[at])}, generated ${JSON.stringify(generated[at])}`,
  );
});

test('the loaded addon exports what lib/native-addon.d.ts declares', () => {
  const { native } = require('../lib/native');
  const declared = [...fs.readFileSync(CHECKED_IN, 'utf8').matchAll(/^export declare (?:function|class|const) (\w+)/gm)];
  assert.deepEqual(sorted(Object.keys(native)), sorted(declared.map((m) => m[1])));
});

// lib/ files, recursively.
function libFiles(dir = path.join(root, 'lib')) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return libFiles(file);
    return entry.name.endsWith('.js') ? [file] : [];
  });
}

test('every lib/ module that requires lib/native.js is type-checked (// @ts-check)', () => {
  const callers = libFiles().filter((file) => /require\((['"])\.{1,2}\/(?:\.\.\/)*native\1\)/.test(fs.readFileSync(file, 'utf8')));
  assert.ok(callers.length >= 10, `only ${callers.length} callers of lib/native.js found`);
  for (const file of [path.join(root, 'lib', 'native.js'), ...callers]) {
    assert.match(fs.readFileSync(file, 'utf8'), /^\/\/ @ts-check\n/, `${path.relative(root, file)} does not start with // @ts-check`);
  }
});
