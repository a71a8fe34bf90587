// @ts-check
'use strict';
// The heap profile over HTTP, in Go's net/http/pprof convention, so that
//   go tool pprof http://127.0.0.1:6060/debug/pprof/heap
// works: GET returns the gzip-compressed pprof of the agent's session; ?gc=1 runs a full garbage
// collection first; ?debug=1 returns the text per-label table instead. With { profile: 'allocs' }
// it serves Go's /debug/pprof/allocs: the same data with alloc_space the default sample type.
// As in Go, the allocated figures count from the agent's start (no read restarts them), and
// ?seconds=N returns a delta: a profile now, one N seconds later, the first subtracted from the
// second (natively, off the main thread: core/src/pprof/delta.rs). The wait holds a timer and
// the first profile, nothing else; a client that goes away ends it.
//
// One handler for node:http and express ((req, res)), with thin forms for fastify and koa. The
// request chooses only among those query options: nothing in it names a file or a path.
// With a token, requests must send `Authorization: Bearer <token>` (lib/endpoint-http.js).
//
// What a client can cost: concurrent requests share one copy of V8's profile, copies are spaced
// and ?gc=1 is rate-limited (lib/profile-reads.js); refused requests get 429 or 503 with
// Retry-After. The handler never throws or rejects, whatever the request. A profile's response
// carries X-Heap-Labels-Pid, the pid of the process whose heap it is.

const { performance } = require('node:perf_hooks');
const { currentAgent } = require('./current-agent');
const { SHARED_PROFILE, ReadRefusedError } = require('./profile-reads');
const { PID_HEADER, digest, flag, queryOf, send, sendText, admitted } = require('./endpoint-http');
const { MIN_TOKEN } = require('./config');

const HEAP_PATH = '/debug/pprof/heap';
const ALLOCS_PATH = '/debug/pprof/allocs';
const PROFILES = ['heap', 'allocs'];
// ?seconds=N: N in 1..MAX_DELTA_SECONDS (Go takes any positive integer its server's write timeout
// allows; an hour is past what a profiling client asks for and bounds how long a request holds a
// socket and its first profile). At most MAX_DELTAS wait at once (each holds one profile).
const MAX_DELTA_SECONDS = 3600;
const MAX_DELTAS = 16;
let waitingDeltas = 0;

// The seconds of a delta request, undefined when the query has none; a RangeError for a value
// that is not a whole number in 1..MAX_DELTA_SECONDS (Go's rule: a positive integer).
function deltaSeconds(params) {
  const value = params.get('seconds');
  if (value === null) return undefined;
  const n = /^\+?[0-9]{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(n >= 1 && n <= MAX_DELTA_SECONDS)) {
    const shown = value.length > 40 ? `${value.slice(0, 40)}...` : value;
    throw new RangeError(`query parameter seconds must be a whole number of seconds in 1..${MAX_DELTA_SECONDS}, got ${JSON.stringify(shown)}`);
  }
  return n;
}

// Resolves after `ms` (true), or as soon as the response closes (false: the client went away).
// The timer does not keep the process alive; while it runs, the socket's idle timeout is
// lengthened by the wait so that the wait is not taken for an idle client, then restored.
function waitFor(ms, req, res) {
  return new Promise((resolve) => {
    const socket = req.socket;
    const idle = socket?.timeout;
    if (idle > 0) socket.setTimeout(idle + ms);
    const done = (result) => {
      clearTimeout(timer);
      res.removeListener('close', onClose);
      if (idle > 0 && !socket.destroyed) socket.setTimeout(idle);
      resolve(result);
    };
    const onClose = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    timer.unref();
    res.once('close', onClose);
  });
}

// Go's delta profile: the profile now, the profile `seconds` later (a copy made after the wait),
// the second minus the first. Undefined when the client went away meanwhile.
async function deltaProfile(read, seconds, req, res) {
  if (waitingDeltas >= MAX_DELTAS) {
    throw new ReadRefusedError(`${MAX_DELTAS} delta profiles (?seconds=) are already being taken; retry later`, 503, seconds);
  }
  waitingDeltas++;
  try {
    const base = await read({});
    if (!(await waitFor(seconds * 1000, req, res))) return undefined;
    // A copy made after the wait, not one shared from before it.
    const current = await read({ gc: false, notBefore: performance.now() });
    return await require('./native').native.pprofDelta(base, current);
  } finally {
    waitingDeltas--;
  }
}

function checkOptions(options, where, allowed = ['agent', 'token', 'profile']) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`heap-labels: ${where}: options must be an object`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`heap-labels: ${where}: unknown option ${JSON.stringify(key)}`);
    }
  }
  if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length < MIN_TOKEN)) {
    throw new RangeError(`heap-labels: ${where}: option token must be a string of at least ${MIN_TOKEN} characters`);
  }
  if (options.profile !== undefined && !PROFILES.includes(options.profile)) {
    throw new TypeError(`heap-labels: ${where}: option profile must be 'heap' or 'allocs'`);
  }
  return options;
}

// (req, res) => Promise<void>: serves the heap profile for every request it is given (mount it on
// the path you choose, e.g. app.get('/debug/pprof/heap', handler)). Options: `agent` (default:
// the running agent of this thread, see startAgent and heap-labels/register), `token`, `profile`
// ('heap', the default, or 'allocs').
function createHeapProfileHandler(options) {
  const { agent, token, profile = 'heap' } = checkOptions(options, 'createHeapProfileHandler');
  const allocs = profile === 'allocs';
  const tokenDigest = token === undefined ? undefined : digest(token);
  return async function heapProfileHandler(req, res) {
    try {
      if (!admitted(req, res, tokenDigest)) return;
      const params = queryOf(req.url);
      let gc;
      let debug;
      let seconds;
      try {
        gc = flag(params, 'gc');
        debug = flag(params, 'debug');
        seconds = deltaSeconds(params);
        if (seconds !== undefined && debug) throw new RangeError('query parameters seconds and debug exclude each other');
      } catch (err) {
        sendText(res, 400, `heap-labels: ${err.message}\n`);
        return;
      }
      const source = agent ?? currentAgent();
      if (source === undefined || !source.running) {
        sendText(res, 503, 'heap-labels: no profiling session runs (start one with heap-labels/register or startAgent())\n');
        return;
      }
      const options = { format: debug ? 'summary' : 'pprof', gc, reason: 'http', allocs };
      const read = (more) => {
        const o = { ...options, ...more };
        return typeof source[SHARED_PROFILE] === 'function' ? source[SHARED_PROFILE](o) : source.profile(o);
      };
      const body = seconds === undefined ? await read({}) : await deltaProfile(read, seconds, req, res);
      if (body === undefined) return; // the client went away during the wait
      const headers = debug
        ? { 'content-type': 'text/plain; charset=utf-8' }
        : { 'content-type': 'application/octet-stream', 'content-disposition': `attachment; filename="${profile}"` };
      headers['content-length'] = String(Buffer.byteLength(body));
      // Which process the profile is of (a service runs as several: launcher, primary, workers).
      headers[PID_HEADER] = String(process.pid);
      send(res, 200, req.method === 'HEAD' ? undefined : body, headers);
    } catch (err) {
      try {
        if (err?.code === 'ERR_HEAP_LABELS_BUSY') {
          sendText(res, err.status, `${err.message}\n`, { 'retry-after': String(err.retryAfter) });
        } else {
          sendText(res, 500, `heap-labels: ${err?.message}\n`);
        }
      } catch {
        res.destroy(); // the response cannot be written: drop the connection, never throw
      }
    }
  };
}

// Fastify route handler: fastify.get('/debug/pprof/heap', fastifyHeapProfile(options)).
function fastifyHeapProfile(options) {
  const handler = createHeapProfileHandler(checkOptions(options, 'fastifyHeapProfile'));
  return async function heapProfileRoute(request, reply) {
    reply.hijack();
    await handler(request.raw, reply.raw);
  };
}

// Koa middleware answering `options.path` (default /debug/pprof/heap, or /debug/pprof/allocs
// for profile 'allocs'): app.use(koaHeapProfile()).
function koaHeapProfile(options) {
  const checked = checkOptions(options, 'koaHeapProfile', ['agent', 'token', 'path', 'profile']);
  const { path = checked.profile === 'allocs' ? ALLOCS_PATH : HEAP_PATH, ...rest } = checked;
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError('heap-labels: koaHeapProfile: option path must start with /');
  }
  const handler = createHeapProfileHandler(rest);
  return async function heapProfileMiddleware(ctx, next) {
    if (ctx.path !== path) return next();
    ctx.respond = false;
    await handler(ctx.req, ctx.res);
  };
}

module.exports = { createHeapProfileHandler, fastifyHeapProfile, koaHeapProfile, HEAP_PATH, ALLOCS_PATH };
