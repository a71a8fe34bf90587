'use strict';
// Labels follow the async context: await, promise chains, timers, setImmediate, nextTick, I/O
// callbacks and events, AsyncResource; never into sibling contexts; undisturbed by other
// AsyncLocalStorage users.

const test = require('node:test');
const assert = require('node:assert/strict');
const { AsyncLocalStorage, AsyncResource } = require('node:async_hooks');
const { EventEmitter, once } = require('node:events');
const fs = require('node:fs');
const net = require('node:net');
const http = require('node:http');
const { libPath, sleep } = require('./helpers');
const {
  withHeapProfileLabels,
  setHeapProfileLabels,
  getHeapProfileLabels,
} = require(libPath);

const A = Object.freeze({ route: '/a' });

test('labels are visible synchronously and gone afterwards', () => {
  assert.equal(getHeapProfileLabels(), undefined);
  const seen = withHeapProfileLabels({ route: '/a' }, () => getHeapProfileLabels());
  assert.deepEqual({ ...seen }, { route: '/a' });
  assert.equal(getHeapProfileLabels(), undefined);
});

test('withHeapProfileLabels returns what fn returns, sync or async', async () => {
  assert.equal(withHeapProfileLabels(A, () => 42), 42);
  const p = withHeapProfileLabels(A, async () => 7);
  assert.ok(p instanceof Promise);
  assert.equal(await p, 7);
  assert.throws(() => withHeapProfileLabels(A, () => { throw new Error('boom'); }), /boom/);
  assert.equal(getHeapProfileLabels(), undefined);
});

test('await and promise chains keep labels', async () => {
  await withHeapProfileLabels(A, async () => {
    const labels = getHeapProfileLabels();
    assert.equal(labels.route, '/a');
    await null;
    assert.equal(getHeapProfileLabels(), labels);
    await sleep(2);
    assert.equal(getHeapProfileLabels(), labels);
    const chained = await Promise.resolve(1)
      .then(() => getHeapProfileLabels())
      .then((l) => [l, getHeapProfileLabels()]);
    assert.equal(chained[0], labels);
    assert.equal(chained[1], labels);
    const viaAll = await Promise.all([sleep(1).then(getHeapProfileLabels), (async () => getHeapProfileLabels())()]);
    assert.deepEqual(viaAll, [labels, labels]);
  });
});

test('timers, setImmediate, nextTick and queueMicrotask keep labels', async () => {
  const seen = await withHeapProfileLabels({ route: '/timers' }, () => {
    const got = {};
    return new Promise((resolve) => {
      let pending = 5;
      const done = (name) => {
        got[name] = getHeapProfileLabels()?.route;
        if (--pending === 0) resolve(got);
      };
      setTimeout(() => done('setTimeout'), 1);
      const interval = setInterval(() => {
        clearInterval(interval);
        done('setInterval');
      }, 1);
      setImmediate(() => done('setImmediate'));
      process.nextTick(() => done('nextTick'));
      queueMicrotask(() => done('queueMicrotask'));
    });
  });
  assert.deepEqual(seen, {
    setTimeout: '/timers',
    setInterval: '/timers',
    setImmediate: '/timers',
    nextTick: '/timers',
    queueMicrotask: '/timers',
  });
});

test('fs callbacks and stream events started in scope keep labels', async () => {
  const seen = await withHeapProfileLabels({ route: '/fs' }, async () => {
    const viaCallback = await new Promise((resolve, reject) => {
      fs.readFile(__filename, (err) => (err ? reject(err) : resolve(getHeapProfileLabels()?.route)));
    });
    const viaPromise = await fs.promises.readFile(__filename).then(() => getHeapProfileLabels()?.route);
    const stream = fs.createReadStream(__filename);
    const events = [];
    stream.on('data', () => events.push(getHeapProfileLabels()?.route));
    await once(stream, 'close');
    return { viaCallback, viaPromise, events };
  });
  assert.equal(seen.viaCallback, '/fs');
  assert.equal(seen.viaPromise, '/fs');
  assert.ok(seen.events.length > 0);
  assert.ok(seen.events.every((r) => r === '/fs'), JSON.stringify(seen.events));
});

test('net socket events of a connection started in scope keep labels; the server side does not get them', async () => {
  const serverSide = [];
  const server = net.createServer((socket) => {
    serverSide.push(getHeapProfileLabels());
    socket.on('data', (data) => {
      serverSide.push(getHeapProfileLabels());
      socket.end(data);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const clientSide = await withHeapProfileLabels({ route: '/net' }, () => {
      const seen = [];
      return new Promise((resolve, reject) => {
        const socket = net.connect(server.address().port, '127.0.0.1');
        socket.on('error', reject);
        socket.on('connect', () => {
          seen.push(getHeapProfileLabels()?.route);
          socket.write('ping');
        });
        socket.on('data', () => seen.push(getHeapProfileLabels()?.route));
        socket.on('close', () => {
          seen.push(getHeapProfileLabels()?.route);
          resolve(seen);
        });
      });
    });
    assert.ok(clientSide.length >= 3, JSON.stringify(clientSide));
    assert.ok(clientSide.every((r) => r === '/net'), JSON.stringify(clientSide));
    assert.ok(serverSide.length >= 2);
    assert.ok(serverSide.every((l) => l === undefined), 'labels leaked into the server connection');
  } finally {
    server.close();
  }
});

test('EventEmitter listeners run in the emitter\'s caller context; AsyncResource restores its own', async () => {
  const emitter = new EventEmitter();
  let heard;
  emitter.on('x', () => { heard = getHeapProfileLabels()?.route; });
  withHeapProfileLabels({ route: '/emit' }, () => emitter.emit('x'));
  assert.equal(heard, '/emit');

  const resource = withHeapProfileLabels({ route: '/resource' }, () => new AsyncResource('TestResource'));
  const bound = withHeapProfileLabels({ route: '/bound' }, () => AsyncResource.bind(() => getHeapProfileLabels()?.route));
  assert.equal(resource.runInAsyncScope(() => getHeapProfileLabels()?.route), '/resource');
  const inOther = withHeapProfileLabels({ route: '/other' }, () => [
    resource.runInAsyncScope(() => getHeapProfileLabels()?.route),
    bound(),
    getHeapProfileLabels()?.route,
  ]);
  assert.deepEqual(inOther, ['/resource', '/bound', '/other']);
  resource.emitDestroy();
});

test('sibling contexts do not see each other\'s labels', async () => {
  const results = await Promise.all(
    ['/a', '/b', '/c'].map((route, i) =>
      withHeapProfileLabels({ route }, async () => {
        const seen = [];
        for (let step = 0; step < 5; step++) {
          await sleep((3 - i) % 3);
          seen.push(getHeapProfileLabels()?.route);
          await null;
        }
        return seen;
      }),
    ),
  );
  assert.deepEqual(results, [
    Array(5).fill('/a'),
    Array(5).fill('/b'),
    Array(5).fill('/c'),
  ]);
  assert.equal(getHeapProfileLabels(), undefined);
  // A callback scheduled outside any scope stays unlabeled.
  await new Promise((resolve) => setTimeout(() => {
    assert.equal(getHeapProfileLabels(), undefined);
    resolve();
  }, 1));
});

test('nested scopes replace labels for their extent only', async () => {
  await withHeapProfileLabels({ route: '/outer' }, async () => {
    await withHeapProfileLabels({ route: '/inner', tenant: 't1' }, async () => {
      await sleep(1);
      assert.deepEqual({ ...getHeapProfileLabels() }, { route: '/inner', tenant: 't1' });
    });
    assert.equal(getHeapProfileLabels().route, '/outer');
  });
});

test('a tracer-style AsyncLocalStorage run/enterWith inside a labeled scope does not disturb labels', async () => {
  const tracer = new AsyncLocalStorage();
  await withHeapProfileLabels({ route: '/traced' }, async () => {
    const labels = getHeapProfileLabels();
    await tracer.run({ span: 1 }, async () => {
      assert.equal(getHeapProfileLabels(), labels);
      await sleep(1);
      assert.equal(getHeapProfileLabels(), labels);
      assert.deepEqual(tracer.getStore(), { span: 1 });
      tracer.enterWith({ span: 2 });
      await null;
      assert.equal(getHeapProfileLabels(), labels);
      assert.deepEqual(tracer.getStore(), { span: 2 });
    });
    assert.equal(getHeapProfileLabels(), labels);
    tracer.disable();
    await sleep(1);
    assert.equal(getHeapProfileLabels(), labels);
  });
  // And labels set inside a tracer scope do not leak out of it.
  tracer.run({ span: 3 }, () => {
    withHeapProfileLabels({ route: '/x' }, () => assert.equal(tracer.getStore().span, 3));
    assert.equal(getHeapProfileLabels(), undefined);
  });
});

test('setHeapProfileLabels labels the rest of the request in a middleware chain; null clears', async () => {
  const log = [];
  const middleware = (req, res, next) => {
    setHeapProfileLabels({ route: new URL(req.url, 'http://x').pathname });
    next();
  };
  const handler = async (req, res) => {
    await sleep(Math.random() * 5);
    log.push([req.url, getHeapProfileLabels()?.route]);
    setHeapProfileLabels(null);
    log.push([req.url, getHeapProfileLabels()?.route]);
    res.end('ok');
  };
  const server = http.createServer((req, res) => middleware(req, res, () => handler(req, res)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address();
    const get = (path) => new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
    await Promise.all(['/one', '/two', '/three', '/one'].map(get));
  } finally {
    server.close();
  }
  const labeled = log.filter((_, i) => i % 2 === 0);
  const cleared = log.filter((_, i) => i % 2 === 1);
  assert.equal(labeled.length, 4);
  for (const [url, route] of labeled) assert.equal(route, url);
  for (const [, route] of cleared) assert.equal(route, undefined);
  assert.equal(getHeapProfileLabels(), undefined, 'labels leaked into the test context');
});
