'use strict';
// Where post-mortems go: the dump directory is checked at start whatever names it (an explicit
// HEAP_LABELS_DIR or the working directory by default), start-up stays bounded whatever the path,
// and a dump is written all or nothing. Apps run as child processes of this runtime.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { root, tempDir, acfExecArgv, childEnv, lastJson } = require('./helpers');

const registerCjs = path.join(root, 'lib', 'register.js');
const fixtures = path.join(__dirname, 'fixtures');
const tmp = tempDir('dumpdir');

function run(args, { env = {}, cwd = root, timeout = 20_000, shell } = {}) {
  const started = Date.now();
  const r = shell
    ? spawnSync('bash', ['-c', `${shell}; exec "$0" "$@"`, process.execPath, ...acfExecArgv, ...args], { cwd, env: childEnv(env), encoding: 'utf8', timeout })
    : spawnSync(process.execPath, [...acfExecArgv, ...args], { cwd, env: childEnv(env), encoding: 'utf8', timeout });
  return { ...r, json: lastJson(r.stdout), ms: Date.now() - started };
}

test('start-up is bounded whatever HEAP_LABELS_DIR says: each bad path is refused within a second', () => {
  const deep = path.join(tmp, ...Array.from({ length: 200 }, (_, i) => `d${i}`));
  const paths = ['/proc/self/x', '/proc/self/fd/0/x', '/proc/1/x/y', '/dev/null/x', '/sys/kernel/x', '/proc', deep];
  // In a child: the old recursive mkdir never returned on /proc/self/x.
  const r = run(['-e', `
    const { fromEnv } = require(${JSON.stringify(path.join(root, 'lib', 'config.js'))});
    const out = [];
    for (const dir of ${JSON.stringify(paths)}) {
      const t0 = performance.now();
      let error = null;
      try { fromEnv({ HEAP_LABELS_DIR: dir }); } catch (e) { error = e.message; }
      out.push({ dir, ms: performance.now() - t0, error });
    }
    console.log(JSON.stringify(out));
  `]);
  assert.equal(r.error?.code, undefined, `the child did not finish: ${r.error?.code}`);
  assert.equal(r.status, 0, r.stderr);
  for (const { dir, ms, error } of r.json) {
    // A long path is shown cut at 120 characters, with its length (27.8).
    assert.match(error ?? '', /HEAP_LABELS_DIR=".*"(\.\.\. \(\d+ characters\))?: must be a writable directory \(created if missing\): [A-Z]+/, `${dir}: ${error}`);
    assert.ok(ms < 1000, `${dir}: ${ms.toFixed(0)} ms`);
  }
  // With the preload the app starts, unprofiled, and says why.
  const app = run(['-r', registerCjs, path.join(fixtures, 'ops-status.js')], { env: { HEAP_LABELS_DIR: '/proc/self/x' } });
  assert.equal(app.error?.code, undefined, 'the app did not start');
  assert.equal(app.status, 0, app.stderr);
  assert.equal(app.json.agent, false);
  assert.match(app.stderr, /not profiling, the app runs without heap profiling:\n {2}HEAP_LABELS_DIR="\/proc\/self\/x": must be a writable directory/);
});

test('an unwritable working directory (the default dump directory) is found at start: dumps go to the OS temp directory, said once', () => {
  // /proc: no file can be made there, not even by root (access(2) would say it is writable).
  const tmpdir = path.join(tmp, 'os-tmp');
  fs.mkdirSync(tmpdir);
  const r = run(['-r', registerCjs, path.join(fixtures, 'ops-status.js')], { cwd: '/proc', env: { TMPDIR: tmpdir } });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.json.agent, true, r.stderr);
  assert.equal(r.json.options.dir, tmpdir);
  const notes = r.stderr.match(/heap-labels: dumps go to .*\n/g) ?? [];
  assert.equal(notes.length, 1, r.stderr);
  assert.match(notes[0], new RegExp(`^heap-labels: dumps go to ${tmpdir}: the working directory /proc is not writable \\([A-Z]+\\)\\n$`));
  // An explicit directory that cannot be written is still refused, not replaced.
  const explicit = run(['-r', registerCjs, path.join(fixtures, 'ops-status.js')], { cwd: '/proc', env: { TMPDIR: tmpdir, HEAP_LABELS_DIR: '/proc' } });
  assert.equal(explicit.json.agent, false);
  assert.match(explicit.stderr, /HEAP_LABELS_DIR="\/proc": must be a writable directory/);
});

test('a dump is all or nothing: when the pprof cannot be written, no summary is left behind', () => {
  const ok = path.join(tmp, 'complete');
  fs.mkdirSync(ok);
  const full = run([path.join(fixtures, 'dump-write.js'), ok]);
  assert.equal(full.status, 0, full.stderr);
  assert.equal(full.json.ok, true, full.json.error);
  const [pprofBytes, summaryBytes] = full.json.sizes;
  assert.ok(pprofBytes > 2 * summaryBytes && summaryBytes < 8192 && pprofBytes > 16384, `sizes ${pprofBytes} ${summaryBytes}`);

  // A file-size limit between the two (Node.js ignores SIGXFSZ: the write fails with EFBIG, as a
  // full disk fails it with ENOSPC).
  const limited = path.join(tmp, 'limited');
  fs.mkdirSync(limited);
  const blocks = Math.ceil((summaryBytes + 1024) / 1024);
  const r = run([path.join(fixtures, 'dump-write.js'), limited], { shell: `ulimit -f ${blocks}` });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.json.ok, false, `the dump was written under ulimit -f ${blocks}`);
  assert.match(r.json.error, /could not write the dump into .*(too large|File too large|EFBIG|No space)/i);
  assert.deepEqual(r.json.files, [], 'nothing of the failed dump is left');
});
