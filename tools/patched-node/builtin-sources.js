'use strict';
// Writes the JavaScript sources a Node.js binary carries for its built-in modules (lib/<id>.js) into
// a directory, laid out as in the Node.js source tree:
//
//   node --expose-internals --no-warnings tools/patched-node/builtin-sources.js <out dir> [<path>...]
//
// <path> is a source path such as lib/v8.js; without any, every built-in is written. Prints one line
// per file written; exits 2 when a requested path is not a built-in of this binary.
//
// Why: a release's lib/ files are compiled into its binary verbatim (js2c), so the stock runtime of a
// line (scripts/runtimes.sh installs it from the npm registry) holds the exact lib/ files of that
// release, with no source tarball and no network. Checked for Node.js 22.22.2: all 341 lib/*.js that
// Debian's source tarball ships are byte-identical to what this writes from npm's 22.22.2 binary.
// tools/patched-node/check-node-patches.sh checks the recipe's Node.js patches against them.

const fs = require('node:fs');
const path = require('node:path');

function builtinSources() {
  let internalBinding;
  try {
    ({ internalBinding } = require('internal/test/binding'));
  } catch {
    console.error('builtin-sources: run with node --expose-internals');
    process.exit(2);
  }
  return internalBinding('builtins').natives;
}

function main([outDir, ...paths]) {
  if (!outDir) {
    console.error('usage: node --expose-internals builtin-sources.js <out dir> [lib/<id>.js ...]');
    process.exit(2);
  }
  const natives = builtinSources();
  const wanted = paths.length > 0 ? paths : Object.keys(natives).map((id) => `lib/${id}.js`);
  let missing = 0;
  for (const file of wanted) {
    const id = /^lib\/(.+)\.js$/.exec(file)?.[1];
    if (id === undefined || typeof natives[id] !== 'string') {
      console.error(`builtin-sources: ${file} is not a built-in module of Node.js ${process.version}`);
      missing += 1;
      continue;
    }
    const out = path.join(outDir, file);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, natives[id]);
    console.log(file);
  }
  if (missing > 0) process.exit(2);
}

main(process.argv.slice(2));
