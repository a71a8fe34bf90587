'use strict';
// A request's own event listeners carry its route's labels, with AsyncContextFrame on and off:
// the 'data'/'end' listeners through which the frameworks' usual parsers read JSON bodies
// (express.json() of express 4 and 5, i.e. body-parser and raw-body; fastify's JSON parser;
// @koa/bodyparser, i.e. co-body and raw-body; a node:http handler's own req.on('data'/'end')),
// the request's 'error'/'close' listeners (also of a request whose client goes away mid-body),
// and the response's 'finish'/'close' listeners. Bodies arrive in pieces, so that most 'data'
// events come from socket reads after the request was emitted, where AsyncContextFrame restores
// the connection's context. In sequence on a keep-alive connection and with two requests of
// different routes interleaving on two connections, no request sees another's labels. On the
// patched runtime, the parsed 1 MB JSON bodies a route keeps are attributed to it in the profile.
// Each case is a child process (tests/fixtures/framework-scenarios.js, scenarios `bodies` and
// `body-attribution`).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { fixtureJson } = require('./helpers');

const FRAMEWORKS = ['express4', 'express5', 'fastify', 'koa', 'http'];
const ROUTE_OF = { s1: '/upload/:id', s2: '/other/:id', s3: '/upload/:id', s4: '/other/:id', c1: '/upload/:id', c2: '/other/:id' };
const LISTENER_POINTS = ['data', 'end', 'req-error', 'req-close', 'handler', 'finish', 'res-close'];

// The flags that turn AsyncContextFrame on and off on this runtime (NODE_OPTIONS cleared, so that
// the flags of the test run itself do not decide it).
const defaultOn = process.allowedNodeEnvironmentFlags.has('--async-context-frame'); // 24+, patched 22
const MODES = {
  on: defaultOn ? [] : ['--experimental-async-context-frame'],
  off: defaultOn ? ['--no-async-context-frame'] : [],
};

const scenario = (framework, name, nodeArgs) => fixtureJson('framework-scenarios.js', { nodeArgs, args: [framework, name], env: { NODE_OPTIONS: '' } });

for (const framework of FRAMEWORKS) {
  for (const [mode, nodeArgs] of Object.entries(MODES)) {
    test(`${framework}, AsyncContextFrame ${mode}: body and response listeners see their own route's labels`, () => {
      const out = scenario(framework, 'bodies', nodeArgs);
      assert.equal(out.asyncContextFrame, mode === 'on', 'the child ran in the intended mode');
      for (const [rid, response] of Object.entries(out.responses)) assert.equal(response.status, 200, rid);
      assert.equal(out.responses.s2.reused && out.responses.s3.reused && out.responses.s4.reused, true, 'one keep-alive connection');
      for (const [rid, route] of Object.entries(ROUTE_OF)) {
        const seen = (out.observations[rid] || []).filter(([point]) => LISTENER_POINTS.includes(point));
        const count = (point) => seen.filter(([p]) => p === point).length;
        assert.ok(count('data') >= 2, `${rid}: the body came in pieces: ${JSON.stringify(seen)}`);
        for (const point of ['end', 'req-close', 'handler', 'finish', 'res-close']) {
          assert.equal(count(point), 1, `${rid}: one ${point}`);
        }
        for (const [point, id] of seen) {
          assert.deepEqual(id === null ? undefined : out.labels[id], { route }, `${rid} (${route}) at ${point}`);
        }
      }
      // The request whose client went away mid-body: its listeners ran ('close' always; 'error'
      // where the framework or Node.js emits one) with its route's labels.
      const aborted = (out.observations.abort || []).filter(([point]) => LISTENER_POINTS.includes(point));
      assert.ok(aborted.some(([point]) => point === 'req-close'), `abort: ${JSON.stringify(aborted)}`);
      for (const [point, id] of aborted) {
        assert.deepEqual(id === null ? undefined : out.labels[id], { route: '/upload/:id' }, `abort at ${point}`);
      }
    });
  }
}

const caps = fixtureJson('labeled-scenarios.js', { nodeArgs: MODES.on, args: ['capabilities'], env: { NODE_OPTIONS: '' } });
const noSampleLabels = !caps?.sampleLabels && 'capabilities().sampleLabels is false: per-sample labels need the patched runtime';

for (const framework of FRAMEWORKS) {
  test(`${framework}: the parsed 1 MB JSON bodies a route keeps are attributed to the route`, { skip: noSampleLabels }, () => {
    const out = scenario(framework, 'body-attribution', ['--expose-gc', ...MODES.on]);
    assert.ok(out.statuses.every((s) => s === 200), JSON.stringify(out.statuses));
    assert.equal(out.kept, 10);
    const detail = JSON.stringify(out.groups);
    const route = out.groups.find((g) => g.route === '/upload/:id')?.bytes ?? 0;
    const total = out.groups.reduce((sum, g) => sum + g.bytes, 0);
    // Ten parsed bodies take more heap than their JSON text.
    assert.ok(route >= 10 * out.payloadBytes, `route ${route} B < 10 x ${out.payloadBytes} B: ${detail}`);
    assert.ok(route / total >= 0.85, `route share ${(route / total).toFixed(3)}: ${detail}`);
  });
}

test("a labeled request's emit hands its listeners exactly the caller's arguments, under the request's labels", () => {
  const out = fixtureJson('emit-arguments.js', { nodeArgs: ['-r', require.resolve('../lib/entries/register.js')], env: { NODE_OPTIONS: '' } });
  const ARGS = [[], [1], [1, null], [null], [1, 2, 3, 4, 5]]; // undefined arrives as null through JSON
  assert.deepEqual(out.results, [true, true, true, true, true, false, true, true, true, true, true]);
  assert.equal(out.calls.length, ARGS.length * 2);
  out.calls.forEach((call, i) => {
    const args = ARGS[i % ARGS.length];
    assert.equal(call.where, i < ARGS.length ? 'in the request' : 'outside');
    assert.equal(call.count, args.length, `call ${i}: the count of arguments`);
    assert.deepEqual(call.args, args, `call ${i}`);
    assert.equal(call.self, true, `call ${i}: this is the request`);
    assert.deepEqual(call.labels, out.calls[0].labels, `call ${i}: the request's labels`);
  });
  assert.ok(out.calls[0].labels.route, `the request is labeled: ${JSON.stringify(out.calls[0].labels)}`);
});
