'use strict';
// withHeapProfileLabels / setHeapProfileLabels against bare AsyncLocalStorage.run / enterWith.
//
//   node [--experimental-async-context-frame] benchmark/inprocess/context.js [--quick] [--reps 15]
//        [--calls 200000] [--name runtime-name]
//
// Cases, each timed over `calls` calls, in rotating order, `reps` times in this one process:
//   als.run             AsyncLocalStorage#run(store, fn) with a prepared store (the baseline)
//   with (interned)     withHeapProfileLabels(labels, fn) with the frozen object getHeapProfileLabels()
//                       returned (interning is a WeakSet lookup)
//   with (literal)      withHeapProfileLabels({ route: '/x' }, fn): validation and interning per call
//   als.enterWith       AsyncLocalStorage#enterWith(store)
//   set (literal)       setHeapProfileLabels({ route: '/x' }) (a hand-written middleware's new object)
//   set (interned)      setHeapProfileLabels(labels) with an interned object
//   http helper         labelRequest(req, '/api/users/:id') of heap-labels/http (httpRouteLabels()):
//                       the per-request cost of the integrations' route labels (a Map lookup of the
//                       template's interned object, then setHeapProfileLabels), over 3 templates
//   http helper+tenant  the same with labels: (req) => a frozen { tenant } kept per tenant
//   request emit        emit('data', chunk) with one listener on a node:http IncomingMessage that
//                       labelRequest() labeled, from a context without its labels: the listener runs
//                       under the request's labels (lib/integrations/request-context.js); against
//                       the same emit on an IncomingMessage no integration labeled ('plain emit',
//                       which pays the wrapper's one property read)
// and the same for an async fn (`await` inside), where the promise machinery dominates.
// Reported: ns per call and the ratio to the bare AsyncLocalStorage call measured in the same rotation.
// Every timed case starts from the same context (neither store set): run()/with() then take their
// full path (enter, call, restore) instead of AsyncLocalStorage#run's shortcut for the store that is
// already current, and one case's leftover store cannot change the next case's path.

const { AsyncLocalStorage } = require('node:async_hooks');
const c = require('./common');

async function main(args) {
  const hl = require('../../lib');
  const quick = Boolean(args.quick);
  const reps = Number(args.reps || (quick ? 3 : 15));
  const calls = Number(args.calls || (quick ? 20_000 : 200_000));
  const asyncCalls = Math.max(1, Math.floor(calls / 10));

  const { httpRouteLabels } = require('../../lib/integrations/http');
  const labelRequest = httpRouteLabels();
  const tenants = new Map(['acme', 'globex'].map((t) => [t, Object.freeze({ tenant: t })]));
  const labelRequestWithTenant = httpRouteLabels({ labels: (req) => tenants.get(req.tenant) });
  const templates = ['/api/users/:id', '/api/orders/:id', '/api/products'];
  const requests = templates.map((_, i) => ({ tenant: i % 2 ? 'acme' : 'globex' }));
  const http = require('node:http');
  const message = () => {
    const req = new http.IncomingMessage(null);
    req.on('data', () => sink++);
    return req;
  };
  const plainRequest = message();
  const labeledRequest = message();
  labelRequest(labeledRequest, '/api/users/:id');
  const chunk = Buffer.alloc(16);

  const als = new AsyncLocalStorage();
  const store = { route: '/x' };
  const interned = hl.withHeapProfileLabels({ route: '/x' }, hl.getHeapProfileLabels);
  let sink = 0;
  const fn = () => {
    sink++;
    return sink;
  };
  const afn = async () => {
    await null;
    sink++;
  };

  const sync = {
    'als.run': () => {
      for (let i = 0; i < calls; i++) als.run(store, fn);
    },
    'with (interned)': () => {
      for (let i = 0; i < calls; i++) hl.withHeapProfileLabels(interned, fn);
    },
    'with (literal)': () => {
      for (let i = 0; i < calls; i++) hl.withHeapProfileLabels({ route: '/x' }, fn);
    },
    'als.enterWith': () => {
      for (let i = 0; i < calls; i++) als.enterWith(store);
    },
    'set (literal)': () => {
      for (let i = 0; i < calls; i++) hl.setHeapProfileLabels({ route: '/x' });
    },
    'set (interned)': () => {
      for (let i = 0; i < calls; i++) hl.setHeapProfileLabels(interned);
    },
    'http helper': () => {
      for (let i = 0; i < calls; i++) labelRequest(requests[i % 3], templates[i % 3]);
    },
    'http helper+tenant': () => {
      for (let i = 0; i < calls; i++) labelRequestWithTenant(requests[i % 3], templates[i % 3]);
    },
    'plain emit': () => {
      for (let i = 0; i < calls; i++) plainRequest.emit('data', chunk);
    },
    'request emit': () => {
      for (let i = 0; i < calls; i++) labeledRequest.emit('data', chunk);
    },
  };
  const baselineOf = {
    'with (interned)': 'als.run',
    'with (literal)': 'als.run',
    'set (literal)': 'als.enterWith',
    'set (interned)': 'als.enterWith',
    'http helper': 'als.enterWith',
    'http helper+tenant': 'als.enterWith',
    'request emit': 'plain emit',
  };
  const asyncCases = {
    'als.run': async () => {
      for (let i = 0; i < asyncCalls; i++) await als.run(store, afn);
    },
    'with (interned)': async () => {
      for (let i = 0; i < asyncCalls; i++) await hl.withHeapProfileLabels(interned, afn);
    },
    'with (literal)': async () => {
      for (let i = 0; i < asyncCalls; i++) await hl.withHeapProfileLabels({ route: '/x' }, afn);
    },
  };

  const timeAsync = async (f) => {
    const t0 = process.hrtime.bigint();
    await f();
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };

  const reset = () => {
    als.enterWith(undefined);
    hl.setHeapProfileLabels(null);
  };
  const measure = async (cases, n, isAsync) => {
    const names = Object.keys(cases);
    const times = Object.fromEntries(names.map((x) => [x, []]));
    for (const name of names) {
      reset();
      await (isAsync ? timeAsync(cases[name]) : c.timeMs(cases[name])); // warm-up
    }
    for (let r = 0; r < reps; r++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(r + k) % names.length];
        reset();
        const ms = isAsync ? await timeAsync(cases[name]) : c.timeMs(cases[name]);
        times[name].push((ms * 1e6) / n);
      }
    }
    return times;
  };

  const syncTimes = await measure(sync, calls, false);
  const asyncTimes = await measure(asyncCases, asyncCalls, true);

  const caps = hl.capabilities();
  const rows = [];
  const addRows = (kind, times) => {
    for (const name of Object.keys(times)) {
      const base = baselineOf[name] || 'als.run';
      const ratio = times[name].map((t, i) => t / times[base][i]);
      rows.push([
        kind,
        name,
        c.fmtValue(times[name], 0, 'ns'),
        name === base || name === 'als.enterWith' || name === 'plain emit' ? '(baseline)' : `${c.fmtRatio(ratio)} vs ${base}`,
      ]);
    }
  };
  addRows('sync fn', syncTimes);
  addRows('async fn', asyncTimes);
  const out = [];
  const name = args.name ? `${args.name}, ` : '';
  out.push(`### Context API (${name}Node.js ${process.version}): heap-labels vs bare AsyncLocalStorage`);
  out.push('');
  out.push(
    `Node.js ${process.version}, asyncContextFrame ${caps.asyncContextFrame}; ${calls} sync calls ` +
      `(${asyncCalls} async) per measurement, ${reps} rotations in one process; ns per call, overhead ` +
      'against the AsyncLocalStorage call measured in the same rotation (median, IQR, range).',
  );
  out.push('');
  out.push(c.table(['fn', 'call', 'ns/call', 'overhead'], rows));
  out.push('');
  if (sink === 0) throw new Error('unreachable');
  return out.join('\n');
}

if (require.main === module) {
  const args = c.parseArgs(process.argv.slice(2), { flags: ['quick'] });
  main(args).then(
    (md) => console.log(md),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
