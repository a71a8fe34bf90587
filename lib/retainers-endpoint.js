// @ts-check
'use strict';
// Retainers per label over HTTP, on the agent's own server (option `retainers`, off by default):
//   GET /debug/heap-labels/retainers[?key=route][&debug=1]
// answers what agent.retainers({ key }) returns, as JSON (?debug=1: the text `heap-labels
// retainers` prints). Not a pprof route: go tool pprof has no view of it, so it lives beside
// /debug/pprof/, under the package's name.
//
// Each read is a heap snapshot: the app is paused for the whole of it and needs several times the
// used heap (docs/operations.md). So, beyond the token and the option:
//   - one at a time, spaced: after a read that held the main thread h ms, none starts for
//     COPY_GAP_FACTOR x h ms (reads hold the main thread at most 10 % of the time, the profile
//     reads' rule) and at least GC_INTERVAL_MS (a snapshot runs full GCs: the ?gc=1 rule); meanwhile
//     429 with Retry-After;
//   - the refusals of handle.retainers() as statuses: another heap snapshot held (the
//     inspector's, v8.getHeapSnapshot()'s) 409, no room for the snapshot 507, no sample-labels API
//     version 3 (stock runtimes) 501, each with its message.
// The handler never throws or rejects, whatever the request.

const { COPY_GAP_FACTOR, GC_INTERVAL_MS } = require('./profile-reads');
const { PID_HEADER, digest, flag, queryOf, send, sendText, admitted } = require('./endpoint-http');

const RETAINERS_PATH = '/debug/heap-labels/retainers';

// Refusals of handle.retainers() (their codes) -> the status that tells a client what happened.
const STATUS = Object.freeze({
  ERR_INVALID_ARG_TYPE: 400,
  ERR_HEAP_LABELS_UNSUPPORTED: 501,
  ERR_HEAP_LABELS_SNAPSHOT_BUSY: 409,
  ERR_HEAP_LABELS_NO_ROOM: 507,
  ERR_HEAP_LABELS_SESSION_NOT_RUNNING: 503,
});

const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

// The grouping key of the query: undefined when absent (full label sets), else a non-empty value.
function keyOf(params) {
  const key = params.get('key');
  if (key === null) return undefined;
  if (key === '') throw new RangeError('query parameter key must not be empty (leave it out to group by full label set)');
  return key;
}

// (req, res) => Promise<void> for `agent`'s server (lib/agent.js). `token`: as the profile routes'.
function createRetainersHandler({ agent, token }) {
  const tokenDigest = token === undefined ? undefined : digest(token);
  let notBefore = -Infinity; // monotonic ms before which no read starts
  return async function retainersHandler(req, res) {
    try {
      if (!agent.options.retainers) {
        sendText(res, 404, `heap-labels: ${RETAINERS_PATH} is off (HEAP_LABELS_RETAINERS=on turns it on: each read pauses the app for a heap snapshot)\n`);
        return;
      }
      // GET only: a HEAD (curl -I for the pid) would pause the app for a snapshot it never sends.
      if (req.method === 'HEAD') {
        sendText(res, 405, 'heap-labels: use GET (each read is a heap snapshot)\n', { allow: 'GET' });
        return;
      }
      if (!admitted(req, res, tokenDigest)) return;
      const params = queryOf(req.url);
      let key;
      let debug;
      try {
        key = keyOf(params);
        debug = flag(params, 'debug');
      } catch (err) {
        sendText(res, 400, `heap-labels: ${err.message}\n`);
        return;
      }
      if (!agent.running) {
        sendText(res, 503, 'heap-labels: no profiling session runs (start one with heap-labels/register or startAgent())\n');
        return;
      }
      const now = monotonicMs();
      if (now < notBefore) {
        const wait = Math.max(1, Math.ceil((notBefore - now) / 1000));
        sendText(res, 429, `heap-labels: a heap snapshot for retainers was taken moments ago; the next one in ${wait} s\n`, { 'retry-after': String(wait) });
        return;
      }
      let result;
      let snapshot = true; // whether the call got past the refusals (they take nothing)
      try {
        result = agent.retainers({ key });
      } catch (err) {
        const status = STATUS[err?.code];
        if (status === undefined) throw err;
        snapshot = false;
        sendText(res, status, `${err.message}\n`);
        return;
      } finally {
        if (snapshot) {
          const end = monotonicMs();
          notBefore = end + Math.max(GC_INTERVAL_MS, COPY_GAP_FACTOR * (end - now));
        }
      }
      // The text view is loaded when first asked for (the agent starts with the app).
      const body = debug ? require('./report/retainers').retainersText(result) : `${JSON.stringify(result)}\n`;
      send(res, 200, body, {
        'content-type': debug ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(body)),
        [PID_HEADER]: String(process.pid),
      });
    } catch (err) {
      try {
        sendText(res, 500, `heap-labels: ${err?.message}\n`);
      } catch {
        res.destroy(); // the response cannot be written: drop the connection, never throw
      }
    }
  };
}

module.exports = { createRetainersHandler, RETAINERS_PATH };
