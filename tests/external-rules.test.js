'use strict';
// The rules of external bytes (docs/external-bytes.md) and the counting allocator's neutrality
// towards Node's own ArrayBuffer bookkeeping, each scenario in a child process
// (fixtures/external-rules.js). The bookkeeping checks run on every runtime (on stock ones the
// counting allocator is never installed, which is the reference); the per-label charges need the
// patched runtime.

const test = require('node:test');
const assert = require('node:assert/strict');
const { libPath, fixtureJson } = require('./helpers');
const hl = require(libPath);

const caps = hl.capabilities();
const skipExternal = caps.externalBytes
  ? false
  : caps.reasons.filter((r) => r.startsWith('externalBytes:')).join('; ');
const MiB = 1024 * 1024;

const scenario = (name, nodeArgs = []) => fixtureJson('external-rules.js', { nodeArgs: ['--expose-gc', ...nodeArgs], args: [name] });

test('process.memoryUsage().arrayBuffers counts exact lengths while a session runs', () => {
  // 10,000 one-byte ArrayBuffers and 16 of 64 KiB: the counting allocator once asked Node for a
  // 16-byte header more per block, so this read 17x the bytes of the small ones.
  const out = scenario('memory-usage');
  assert.equal(out.outside, out.expected, 'reference: no session');
  assert.equal(out.inside, out.expected, 'during a session');
  assert.ok(Math.abs(out.releasedDelta - out.expected) < 4096, `released ${out.releasedDelta} of ${out.expected}`);
  if (caps.externalBytes) {
    // The labels are charged the same exact lengths, and given them back.
    assert.equal(out.charged, out.expected);
    assert.equal(out.releasedCharge, 0);
  }
});

test('zero-fill semantics are untouched: Allocate zeroes, AllocateUninitialized does not', () => {
  const out = scenario('zero-fill');
  // Buffer.allocUnsafe really gets the dirty block back (so the checks below can fail; malloc
  // hands the just-freed block out again nearly always) ...
  assert.ok(out.allocUnsafe >= 10, `Buffer.allocUnsafe must stay uninitialized: dirty ${out.allocUnsafe} of 20`);
  // ... while zeroed allocations never show old bytes, also right after an unsafe one.
  assert.deepEqual([out.newArrayBuffer, out.bufferAlloc, out.afterUnsafe], [0, 0, 0]);
});

test('--zero-fill-buffers zeroes Buffer.allocUnsafe during a session too', () => {
  const out = scenario('zero-fill', ['--zero-fill-buffers']);
  assert.deepEqual(out, { allocUnsafe: 0, newArrayBuffer: 0, bufferAlloc: 0, afterUnsafe: 0 });
});

test('reallocation: the old bytes leave their labels once, the new length goes to the current ones', { skip: skipExternal }, () => {
  const out = scenario('realloc');
  assert.equal(out.data, true);
  assert.equal(out.made.B, 2 * MiB);
  // ab (1 MiB, made under B) grown to 3 MiB under A: B keeps its other 1 MiB buffer.
  assert.equal(out.afterGrow.B, MiB);
  assert.equal(out.afterGrow.A, 3 * MiB);
  // Shrunk to 512 KiB under C: A is back to nothing, C has the new length.
  assert.equal(out.afterShrink.A ?? 0, 0);
  assert.equal(out.afterShrink.B, MiB);
  assert.equal(out.afterShrink.C, MiB / 2);
  for (const r of [out.made, out.afterGrow, out.afterShrink, out.released]) assert.ok(r.min >= 0, JSON.stringify(r));
  assert.deepEqual([out.released.A ?? 0, out.released.B ?? 0, out.released.C ?? 0], [0, 0, 0]);
});

test('request bodies: chunks read from the socket are unlabeled, copies the handler makes are its own', { skip: skipExternal }, () => {
  const out = scenario('request-body');
  const { reading, size } = out;
  assert.equal(out.keptChunks, size);
  assert.equal(out.keptConcat, size);
  // The handler that keeps the parser's chunks (8 MiB) is charged nothing for them: they were
  // allocated in libuv's read callback before the request's context was entered.
  assert.ok((reading['/keep-chunks'] ?? 0) < 64 * 1024, JSON.stringify(reading));
  // Its Buffer.concat copy, made in the labeled context, is the handler's.
  assert.ok(reading['/concat'] >= size && reading['/concat'] < size + 64 * 1024, JSON.stringify(reading));
  // The kept chunks of both requests sit in the unlabeled group.
  assert.ok(reading[''] >= size, JSON.stringify(reading));
  assert.ok(reading.min >= 0);
});
