// @ts-check
'use strict';
// The production agent: one always-on profiling session plus the ways an operator gets at it:
// dumps on a signal, an HTTP endpoint, a profile written near the heap limit, per-label counters,
// and (watchInterval) a watch that flags label sets whose live heap keeps growing (lib/growth.js),
// and (otlpEndpoint) OTLP profiles pushed to a collector every pushInterval (lib/push.js), and
// (retainers) retainers per label on the endpoint and with each signal dump.
// Started by heap-labels/register from the environment, or by startAgent(options) from code.
//
// Allocations (option allocations, on by default): the session tracks what was allocated per
// (site, label set), in two views of one set of totals (core/src/allocations.rs). Reads of the
// profile (the endpoint's /heap and /allocs, profile(), dumps) show what was allocated since the
// agent started, as Go's profiles do, so that two of them subtract (`go tool pprof -base`,
// ?seconds=N); no read restarts it. Pushes send windows: each push the allocations since the
// previous push. Without pushes, the agent ends the window every allocationWindow seconds: the
// window's totals hold the label sets allocated in it, and rotating sets must not pile up.
//
// Memory stays bounded: the agent never keeps a profile. A dump copies V8's profile on the main
// thread, builds, encodes and writes it on a libuv worker thread and drops it; the label sets its
// samples referenced are released with it.

const fs = require('node:fs');
const path = require('node:path');
const { native } = require('./native');
const { startHeapProfile, sessionOf } = require('./profile');
const { capabilities } = require('./capabilities');
const { counters, createCountersReader } = require('./counters');
const { fromOptions } = require('./config');
const { ProfileReads, SHARED_PROFILE } = require('./profile-reads');
const { currentAgent, setCurrentAgent } = require('./current-agent');
const { endpointPorts } = require('./process-model');
const { startInstrumentation } = require('./instrument');
const { markOwnServer } = require('./instrument/servers');
const { report } = require('./preload-report');
const { retainersPathOf } = require('./dump-files');
// The endpoint (./endpoint, ./retainers-endpoint and node:http, its streams and sockets), pushing
// (./push, ./otlp) and the growth watch (./growth) are loaded by the method that starts them: a
// configuration pays the start-up instructions of what it uses only (with the defaults, none).

// Milliseconds on a monotonic clock (node:perf_hooks' performance.now() without loading it: the
// module and its bindings cost start-up instructions).
function monotonicMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}


function log(message) {
  try {
    report(message);
  } catch {
    // stderr closed: nothing to tell, and nothing to throw into the app.
  }
}

// The agent's own server: whatever a client sends or withholds costs bounded time and sockets.
// Node's defaults answer malformed requests (400) and oversized headers (431) and close the socket.
const SERVER_OPTIONS = Object.freeze({
  headersTimeout: 10_000, // a client sending its headers byte by byte (slowloris) is cut off
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 1_000,
  maxHeaderSize: 8192, // no header the endpoint reads (authorization) needs more
});
// Connections the endpoint serves at once; the next ones up to MAX_OPEN_CONNECTIONS are answered
// 503 (Retry-After) and closed, beyond that they are closed at once (bounded memory under a flood).
// The longest a process's end waits for its last profiles to go out (at most pushTimeout).
const EXIT_FLUSH_MS = 5_000;
const MAX_CONNECTIONS = 128;
const MAX_OPEN_CONNECTIONS = 4 * MAX_CONNECTIONS;
const IDLE_SOCKET_MS = 30_000;

// The path of a request target in origin form ("/path?query"), or undefined for anything else:
// "//host/..." (read as an authority by URL parsers), absolute or asterisk forms.
function originPath(target) {
  if (typeof target !== 'string' || target[0] !== '/' || target[1] === '/') return undefined;
  const end = target.search(/[?#]/);
  return end === -1 ? target : target.slice(0, end);
}

class Agent {
  #options;
  #handle;
  #session;
  #labeled;
  #signalListener;
  #server;
  #address;
  #dumping; // the dump in flight (signals during it are coalesced)
  #watch; // the GrowthWatch, when watchInterval > 0
  #watchTimer;
  #watchCounters; // its counters reader
  #reads; // coalesced, spaced in-memory reads (lib/profile-reads.js)
  #pusher; // the OtlpPusher, when otlpEndpoint is set
  #exitFlush; // removes the exit/SIGTERM flush listeners
  #otlpOptions; // the resource of pushed profiles
  #windowStarted = monotonicMs(); // when the allocation window started
  #windowTimer; // ends a window nobody ended for allocationWindow seconds (no pushes)
  #instrumentation; // the automatic route labels (lib/instrument/), when option routes is on
  #stopped = false;

  constructor(options) {
    this.#options = options;
    this.#labeled = capabilities().sampleLabels;
    this.#handle = startHeapProfile({
      sampleInterval: options.sampleInterval,
      stackDepth: options.stackDepth,
      maxLabelSets: options.maxLabelSets,
      trackAllocations: options.allocations,
    });
    this.#session = sessionOf(this.#handle);
    this.#reads = new ProfileReads((what) => this.#copyProfile(what));
    try {
      if (options.nearHeapLimit > 0) {
        native.armNearHeapLimit(this.#session, {
          dir: options.dir,
          count: options.nearHeapLimit,
          keep: options.keep,
          labeled: this.#labeled,
        });
      }
      if (options.signal !== null) {
        this.#signalListener = () => this.#onSignal(options.signal);
        process.on(options.signal, this.#signalListener);
      }
      if (options.watchInterval > 0) this.#startWatch(options);
      if (options.otlpEndpoint) this.#startPush(options);
      else if (options.allocations) this.#scheduleWindowEnd();
      if (options.routes) this.#startInstrumentation();
    } catch (err) {
      this.#teardown();
      throw err;
    }
  }

  // The validated options (dir resolved, http as { host, port }).
  get options() {
    return this.#options;
  }

  // Whether samples carry labels in this process (the patched runtime).
  get labeled() {
    return this.#labeled;
  }

  // { host, port, url } of the agent's own HTTP server once it listens; undefined otherwise.
  get address() {
    return this.#address;
  }

  get running() {
    return !this.#stopped;
  }

  // The automatic route labels: a failure to start them is said once and the agent runs on
  // without them (the app's requests are then unlabeled, never failed).
  #startInstrumentation() {
    try {
      this.#instrumentation = startInstrumentation(log);
    } catch (err) {
      log(`route labels are off: ${err.message}`);
    }
  }

  // Writes a pprof and a text summary into the output directory (atomically; the newest `keep`
  // dumps are kept). Resolves to { pprofPath, summaryPath, removed, samples, pauseMs }, where
  // pauseMs is how long the main thread was held (the copy of V8's profile).
  async dump({ reason = 'api' } = {}) {
    this.#checkRunning();
    const started = monotonicMs();
    const pending = native.dumpProfile(this.#session, {
      reason,
      labeled: this.#labeled,
      dir: this.#options.dir,
      keep: this.#options.keep,
      summaryAppendix: this.#growthSection(),
      allocationsSinceStart: true,
      resetAllocations: this.#pusher === undefined,
    });
    const pauseMs = monotonicMs() - started;
    const result = await pending;
    return {
      pprofPath: result.pprofPath,
      summaryPath: result.summaryPath,
      removed: result.removed,
      samples: result.samples,
      pauseMs,
    };
  }

  // The current profile in memory: format 'pprof' (gzip-compressed profile.proto, a Buffer) or
  // 'summary' (the text per-label table); gc: run a full garbage collection first; allocs: Go's
  // allocs profile (the same data, alloc_space the default sample type). Allocated figures are
  // those since the agent started. Concurrent callers share one copy of V8's profile,
  // copies are spaced and forced GCs rate-limited (lib/profile-reads.js): a refused read rejects
  // with code ERR_HEAP_LABELS_BUSY and `retryAfter` (seconds).
  async profile({ format = 'pprof', gc = false, reason = 'api', allocs = false } = {}) {
    const result = await this[SHARED_PROFILE]({ format, gc, reason, allocs });
    // The caller's own Buffer: the shared one may be in other callers' hands.
    return format === 'pprof' ? Buffer.from(result) : result;
  }

  // As profile(), but the pprof Buffer may be shared with other callers (the endpoint sends it
  // as it is, whatever the number of clients). notBefore: see ProfileReads.read (a delta's second
  // profile must be copied after its wait).
  /** @param {{ format?: string, gc?: boolean, reason?: string, allocs?: boolean, notBefore?: number }} [options] */
  async [SHARED_PROFILE]({ format = 'pprof', gc = false, reason = 'api', allocs = false, notBefore } = {}) {
    this.#checkRunning();
    if (format !== 'pprof' && format !== 'summary') {
      throw new TypeError(`heap-labels: profile: format must be 'pprof' or 'summary', got ${JSON.stringify(format)}`);
    }
    // The allocs profile is a format of its own: it shares a copy with heap and summary readers.
    const what = format === 'pprof' && allocs === true ? 'allocs' : format;
    const result = await this.#reads.read(what, gc === true, String(reason), notBefore);
    return result[what];
  }

  // One read for the callers of ProfileReads: the GC and the copy hold the main thread (now); the
  // rest is the returned promise.
  #copyProfile({ pprof, summary, allocs, gc, reason }) {
    this.#checkRunning();
    if (gc) native.collectGarbage();
    return native.dumpProfile(this.#session, {
      reason,
      labeled: this.#labeled,
      pprof,
      summary,
      summaryAppendix: summary ? this.#growthSection() : undefined,
      allocs,
      // Go's semantics: since the start, never restarted by a read (pushes keep their windows).
      allocationsSinceStart: true,
      // Without pushes nobody reads the window: each read lets its groups (and sets) go.
      resetAllocations: this.#pusher === undefined,
    });
  }

  // Pushes a window now (it ends with this read): queues its OTLP profile and waits until the
  // queue is sent or the push timeout passes. Resolves to { sent, pprof } (sent: whether this
  // window's profile reached the collector; pprof: the same window as pprof, when asked). Rejects only when pushing is off or the agent is stopped.
  async push({ pprof = false } = {}) {
    this.#checkRunning();
    if (this.#pusher === undefined) throw new Error('heap-labels: pushing is off (set otlpEndpoint / HEAP_LABELS_OTLP_ENDPOINT)');
    const window = await this.#pusher.collect({ pprof: pprof === true });
    await this.#pusher.flush();
    // This window's profile, not merely an empty queue: a refused one was not sent.
    return { sent: window?.entry.outcome === 'sent', pprof: window?.pprof };
  }

  // The pusher's counters (see lib/push.js); undefined when pushing is off.
  pushStats() {
    return this.#pusher?.stats();
  }

  // The label sets the growth watch flags now (see lib/growth.js): [{ labels, periods, since,
  // fromBytes, heapBytes, series }], largest growth first; [] when the watch is off.
  growth() {
    return this.#watch === undefined ? [] : this.#watch.growth();
  }

  // Per-label counters (see counters()).
  counters() {
    return counters();
  }

  // What retains the session's live sampled objects per label group (handle.retainers(key)): one
  // heap snapshot, the app paused for all of it. From code whatever the option `retainers`, which
  // opens it to operators (the endpoint's route, signal dumps); refusals as handle.retainers'.
  /** @param {{ key?: string }} [options] */
  retainers({ key } = {}) {
    this.#checkRunning();
    return this.#handle.retainers(key);
  }

  // Starts the agent's own HTTP server (GET /debug/pprof/heap). Resolves to { host, port, url }.
  listen({ host, port }, token) {
    this.#checkRunning();
    if (this.#server) return Promise.resolve(this.#address);
    const http = require('node:http');
    const { createHeapProfileHandler, HEAP_PATH, ALLOCS_PATH } = require('./endpoint');
    const { createRetainersHandler, RETAINERS_PATH } = require('./retainers-endpoint');
    const handler = createHeapProfileHandler({ agent: this, token: token ?? undefined });
    const allocsHandler = createHeapProfileHandler({ agent: this, token: token ?? undefined, profile: 'allocs' });
    const retainersHandler = createRetainersHandler({ agent: this, token: token ?? undefined });
    let open = 0;
    // Connections accepted while MAX_CONNECTIONS others were open: their requests are answered 503,
    // so the first ones keep being served (as maxConnections would, with an answer instead of a reset).
    const overflowing = new WeakSet();
    const server = http.createServer(SERVER_OPTIONS, (req, res) => {
      // Nothing a client sends may throw into the app.
      try {
        const pathname = originPath(req.url);
        if (pathname === undefined) {
          plain(res, 400, 'heap-labels: malformed request target\n');
        } else if (overflowing.has(req.socket)) {
          res.setHeader('retry-after', '1');
          res.shouldKeepAlive = false;
          plain(res, 503, `heap-labels: more than ${MAX_CONNECTIONS} connections are open; retry later\n`);
        } else if (pathname === HEAP_PATH) {
          handler(req, res); // never rejects
        } else if (pathname === ALLOCS_PATH) {
          allocsHandler(req, res);
        } else if (pathname === RETAINERS_PATH) {
          retainersHandler(req, res); // answers 404 while the option is off
        } else {
          const served = this.#options.retainers ? `${HEAP_PATH}, ${ALLOCS_PATH} and ${RETAINERS_PATH}` : `${HEAP_PATH} and ${ALLOCS_PATH}`;
          plain(res, 404, `heap-labels serves ${served} only\n`);
        }
      } catch (err) {
        log(`HTTP request failed: ${err.message}`);
        res.destroy();
      }
    });
    markOwnServer(server); // its requests get no route label
    server.on('connection', (socket) => {
      open++;
      socket.once('close', () => open--);
      if (open > MAX_OPEN_CONNECTIONS) socket.destroy();
      else if (open > MAX_CONNECTIONS) overflowing.add(socket);
    });
    server.setTimeout(IDLE_SOCKET_MS); // idle sockets are destroyed
    this.#server = server;
    return new Promise((resolve, reject) => {
      let listening = false;
      server.on('error', (err) => {
        if (listening) {
          log(`HTTP server: ${err.message}`);
          return;
        }
        this.#server = undefined;
        reject(err);
      });
      // exclusive: the port is this process's own, also in a cluster worker (whose listen() is
      // otherwise shared through the primary, which hands each request to any worker).
      server.listen({ port, host, exclusive: true }, () => {
        listening = true;
        // The server is for operators: it never keeps the process alive on its own.
        server.unref();
        const address = /** @type {import('node:net').AddressInfo} */ (server.address());
        const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        this.#address = { host: address.address, port: address.port, url: `http://${shown}:${address.port}${HEAP_PATH}` };
        resolve(this.#address);
      });
    });
  }

  // Stops everything: the signal listener, the server, the near-heap-limit callback, the session.
  // The session's last profile is not kept.
  async stop() {
    if (this.#stopped) return;
    const server = this.#server;
    this.#teardown();
    if (server) await new Promise((resolve) => server.close(() => resolve()));
  }

  #teardown() {
    this.#stopped = true;
    this.#reads.close('heap-labels: the agent is stopped');
    this.#stopWatch();
    this.#removeExitFlush();
    const lost = this.#pusher?.stop('stopped') ?? 0;
    if (lost > 0) log(`push: the agent stopped with ${lost} profile(s) not sent (counted dropped)`);
    this.#pusher = undefined;
    this.#instrumentation?.stop();
    this.#instrumentation = undefined;
    clearTimeout(this.#windowTimer);
    this.#windowTimer = undefined;
    if (this.#signalListener) process.removeListener(this.#options.signal, this.#signalListener);
    this.#signalListener = undefined;
    if (this.#server) {
      this.#server.closeAllConnections?.();
      this.#server.close();
      this.#server = undefined;
    }
    native.disarmNearHeapLimit();
    // Stop without holding on to the last profile (the handle itself is dropped with the agent).
    this.#handle.stop();
    this.#handle = undefined;
    if (currentAgent() === this) setCurrentAgent(undefined);
  }

  // Snapshots on an unref'd timer: the watch never keeps the process alive. At most maxLabelSets
  // sets plus the overflow and unlabeled groups are tracked (the counters have no more).
  #startWatch(options) {
    const { GrowthWatch } = require('./growth');
    this.#watch = new GrowthWatch({
      periods: options.watchPeriods,
      minGrowth: options.watchMinGrowth,
      minGrowthPercent: options.watchMinGrowthPercent,
      maxSeries: options.maxLabelSets + 2,
    });
    // A counters reader of its own, so that its snapshots never end a metrics adapter's or the
    // app's external-peak period (lib/counters.js).
    this.#watchCounters = createCountersReader();
    this.#watchTimer = setInterval(() => this.#snapshot(), options.watchInterval * 1000);
    this.#watchTimer.unref();
  }

  #snapshot() {
    try {
      const { formatEpisode } = require('./growth');
      for (const entry of this.#watch.observe(this.#watchCounters())) log(formatEpisode(entry, this.#options.watchInterval));
    } catch (err) {
      // Never into the app: say so once and stop watching.
      log(`growth watch stopped: ${err.message}`);
      this.#stopWatch();
    }
  }

  #stopWatch() {
    if (this.#watchTimer !== undefined) clearInterval(this.#watchTimer);
    this.#watchTimer = undefined;
    this.#watch = undefined;
    this.#watchCounters = undefined; // its pending peaks go with it (a weak entry among the readers)
  }

  // Pushes on an unref'd timer (lib/push.js): each read ends the allocation window and is
  // encoded (OTLP, gzip) on a libuv worker thread.
  #startPush(options) {
    const { OtlpPusher, profilesUrl } = require('./push');
    this.#otlpOptions = require('./otlp').nativeOtlpOptions(options.serviceName ? { serviceName: options.serviceName } : {});
    this.#pusher = new OtlpPusher({
      url: profilesUrl(options.otlpEndpoint),
      headers: options.otlpHeaders,
      interval: options.pushInterval,
      timeout: options.pushTimeout,
      queueSize: options.pushQueue,
      read: ({ pprof = false } = {}) => this.#readWindow(pprof),
      log,
    });
    this.#pusher.start();
    this.#installExitFlush(options.pushTimeout);
  }

  // At the end of the process the open window goes out too, within EXIT_FLUSH_MS at most: on a
  // normal exit (the event loop empties: 'beforeExit') and on SIGTERM (where, if no other listener
  // handles SIGTERM, the signal is raised again once the flush is done, so the process still ends
  // as SIGTERM ends it). Whatever is still queued when the process exits is counted dropped
  // ('exit') and reported in one line.
  #installExitFlush(pushTimeout) {
    const budget = Math.min(pushTimeout * 1000, EXIT_FLUSH_MS);
    let flushing;
    const flushOnce = () => {
      if (flushing === undefined && this.#pusher !== undefined) {
        const pusher = this.#pusher;
        flushing = pusher
          .collect()
          .then(() => pusher.flush(budget))
          .catch(() => false);
      }
      return flushing ?? Promise.resolve(false);
    };
    const onBeforeExit = () => {
      flushOnce();
    };
    const onTerm = () => {
      process.removeListener('SIGTERM', onTerm);
      flushOnce().then(() => {
        if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM');
      });
    };
    const onExit = () => {
      const lost = this.#pusher?.stop('exit') ?? 0;
      if (lost > 0) log(`push: ${lost} profile(s) were not sent before the process exited (counted dropped)`);
    };
    process.once('beforeExit', onBeforeExit);
    process.on('SIGTERM', onTerm);
    process.once('exit', onExit);
    this.#exitFlush = () => {
      process.removeListener('beforeExit', onBeforeExit);
      process.removeListener('SIGTERM', onTerm);
      process.removeListener('exit', onExit);
    };
  }

  #removeExitFlush() {
    this.#exitFlush?.();
    this.#exitFlush = undefined;
  }

  // Ends the allocation window every allocationWindow seconds when nothing pushes (an unref'd
  // timer): nothing reads that window then, and its groups would hold every label set allocated
  // since the start. The read copies V8's profile like any read.
  #scheduleWindowEnd() {
    const windowMs = this.#options.allocationWindow * 1000;
    const due = this.#windowStarted + windowMs - monotonicMs();
    this.#windowTimer = setTimeout(() => {
      this.#windowTimer = undefined;
      if (this.#stopped) return;
      if (monotonicMs() - this.#windowStarted >= windowMs - 1) {
        this.#windowStarted = monotonicMs();
        try {
          native
            .dumpProfile(this.#session, { reason: 'allocation window', labeled: this.#labeled, pprof: false, summary: false, resetAllocations: true })
            .catch((err) => log(`could not end the allocation window: ${err.message}`));
        } catch (err) {
          log(`could not end the allocation window: ${err.message}`);
        }
      }
      this.#scheduleWindowEnd();
    }, Math.max(due, 0));
    this.#windowTimer.unref();
  }

  async #readWindow(pprof) {
    this.#checkRunning();
    const result = await native.dumpProfile(this.#session, {
      reason: 'push',
      labeled: this.#labeled,
      pprof,
      summary: false,
      resetAllocations: true,
      otlp: this.#otlpOptions,
    });
    return { otlp: result.otlp, pprof: result.pprof ?? undefined };
  }

  // The summary is made natively (core/src/summary.rs); the growth section (the watch's, made here)
  // is appended to it, in dump files as in memory. Undefined when the watch is off.
  #growthSection() {
    if (this.#watch === undefined) return undefined;
    const o = this.#options;
    const { formatSection } = require('./growth');
    return formatSection(this.#watch.growth(), {
      interval: o.watchInterval,
      periods: o.watchPeriods,
      minGrowth: o.watchMinGrowth,
      minGrowthPercent: o.watchMinGrowthPercent,
      tracked: this.#watch.stats().series,
    });
  }

  #checkRunning() {
    if (this.#stopped) throw new Error('heap-labels: the agent is stopped');
  }

  // With option retainers, after a signal dump: the retainers per label set (one heap snapshot,
  // the app paused for it), written as JSON beside the dump's pprof, atomically (a hidden temporary
  // file renamed into place, as the dump's own files). A refusal (no room, another snapshot, a stock
  // runtime) is said on stderr and leaves the dump as it is.
  async #writeRetainers(signal, pprofPath) {
    let result;
    try {
      this.#checkRunning();
      result = this.#handle.retainers();
    } catch (err) {
      log(`${signal}: no retainers: ${err.message}`);
      return;
    }
    // Beside the pprof, under the dump's name: the dumps' retention removes it with the dump.
    const file = retainersPathOf(pprofPath);
    const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
    try {
      await fs.promises.writeFile(temporary, `${JSON.stringify(result)}\n`);
      await fs.promises.rename(temporary, file);
      log(`wrote ${file} (${result.groups.length} label groups; app paused ${result.snapshot.pauseMs.toFixed(0)} ms for the heap snapshot)`);
    } catch (err) {
      await fs.promises.rm(temporary, { force: true }).catch(() => {});
      log(`${signal}: could not write ${file}: ${err.message}`);
    }
  }

  #onSignal(signal) {
    if (this.#dumping) return; // one in flight: this signal is served by it
    this.#dumping = this.dump({ reason: `signal ${signal}` })
      .then(
        (r) => {
          log(`wrote ${r.pprofPath} and ${r.summaryPath} (${r.samples} samples; main thread held ${r.pauseMs.toFixed(1)} ms)`);
          if (this.#options.retainers) return this.#writeRetainers(signal, r.pprofPath);
          return undefined;
        },
        (err) => log(`${signal}: no dump: ${err.message}`),
      )
      .finally(() => {
        this.#dumping = undefined;
      });
  }
}

// Starts the agent of this thread with `options` (see lib/config.js; the same values as the
// HEAP_LABELS_* variables). Resolves to the agent once its HTTP server (if any) listens.
// Throws (or rejects) on bad options or when a profiler already runs in this isolate.
async function startAgent(options) {
  const notes = [];
  const o = fromOptions(options, 'startAgent', notes);
  for (const note of notes) log(note);
  return startValidated(o);
}

async function startValidated(o) {
  if (currentAgent() !== undefined) {
    throw new Error('heap-labels: an agent is already running in this thread (stop it first)');
  }
  const agent = new Agent(o);
  setCurrentAgent(agent);
  if (o.http) {
    try {
      await listenOnFreePort(agent, o.http, o.token);
    } catch (err) {
      await agent.stop();
      throw new Error(`heap-labels: cannot serve heap profiles on ${err.where ?? `${o.http.host}:${o.http.port}`}: ${err.message}`);
    }
  }
  return agent;
}

// Listens on the configured port, or in a cluster or pm2 worker on the first free one of the
// ports lib/process-model.js gives it.
async function listenOnFreePort(agent, { host, port }, token) {
  const ports = endpointPorts(port);
  const where = ports.length === 1 ? `${host}:${ports[0]}` : `${host}:${port + 1}..${port + ports.length} (a worker's ports)`;
  if (ports.length === 0) throw Object.assign(new Error('no port above it is left for a worker'), { where: `${host}:${port}` });
  for (let i = 0; ; i++) {
    try {
      return await agent.listen({ host, port: ports[i] }, token);
    } catch (err) {
      if (err.code !== 'EADDRINUSE' || i === ports.length - 1) {
        err.where = where;
        throw err;
      }
    }
  }
}

function plain(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
  res.end(text);
}

module.exports = { startAgent, startValidated, currentAgent, Agent };
