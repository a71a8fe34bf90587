'use strict';
// Regression guard for the parts that run inside V8's GC and teardown: label release from GC weak
// callbacks, ArrayBuffer frees on sweeper threads, sessions and the counting allocator of workers
// terminated mid-session. It must simply survive; a crash fails the child process.

const test = require('node:test');
const assert = require('node:assert/strict');
const { runFixture, asyncContextFrameFlags } = require('./helpers');

const nodeArgs = ['--expose-gc', ...asyncContextFrameFlags()];

test('worker churn with labeled sessions, buffers and forced GCs does not crash', () => {
  const result = runFixture('worker-churn.js', { nodeArgs, args: ['6000'] });
  assert.equal(result.signal, null, `killed by ${result.signal}:\n${result.stderr}`);
  assert.equal(result.status, 0, result.stderr);
  assert.ok(result.json && result.json.iterations >= 3, result.stdout);
  assert.equal(result.json.stats.profiling, false);
});
