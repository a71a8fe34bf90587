'use strict';
// Pushes OTLP profiles to a collector: every `interval` seconds the agent reads a delta profile
// (its allocation window ends with the read) and this module POSTs it over OTLP/HTTP (protobuf,
// gzip) to the collector.
//
// It lives inside the user's service, so nothing here may block the event loop or throw into the
// app: the profile is encoded on a libuv worker thread (the agent's native read), sending is
// ordinary async I/O with a timeout, every error is caught and counted, and the timers and
// sockets are unref'd (a push never keeps the process alive). When the collector is down or slow
// the profiles wait in a bounded queue (the oldest is dropped when it is full, and counted) and
// sending is retried with exponential backoff; OTLP's retryable answers (429, 502, 503, 504, and
// network errors and timeouts) are retried, other answers drop that profile (counted as
// rejected), as the OTLP specification says. A line goes to stderr when pushing starts failing
// (or the collector starts refusing) and when it recovers, not for every attempt or profile.
//
// Every profile read ends as exactly one of: sent, or dropped with a reason (`dropReasons`: the
// queue was full, the collector refused it, the agent stopped with it queued, or the process
// exited before it went out); until then it is queued. Redirects (3xx) are refusals: a redirect
// would carry the OTLP headers (credentials) to wherever the collector points, so the endpoint must
// be the final URL; the first one says so on stderr. An explicit flush (agent.push(), the exit
// flush) keeps the process alive until it is done or its time is up, so `await push()` as the last
// thing a process does settles.

const http = require('node:http');
// node:https loads node:tls and initialises OpenSSL: only a push to an https collector needs it, so
// it is loaded then, never at require('heap-labels') or the preload's start.
let httpsModule;
const https = () => (httpsModule ??= require('node:https'));

const RETRYABLE = new Set([429, 502, 503, 504]);
// Response bodies are read (so that the connection can be reused) but never kept beyond this.
const MAX_RESPONSE_BYTES = 64 * 1024;
// Retries back off exponentially from the interval, but from at most FIRST_BACKOFF_MS, up to
// MAX_BACKOFF_MS (which also bounds a collector's Retry-After).
const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 60_000;

class OtlpPusher {
  #url;
  #headers;
  #intervalMs;
  #timeoutMs;
  #queueSize;
  #read; // ({ pprof }) => Promise<{ otlp, pprof? }>: the next window, otlp a gzip'd request body
  #log;
  #agent; // keep-alive connection pool of its own
  #timer;
  #retryTimer;
  #queue = [];
  #sending; // the request in flight
  #collecting; // the read in flight
  #failures = 0; // consecutive failed attempts
  #stopped = false;
  #stats = { collected: 0, sent: 0, failedAttempts: 0, dropped: 0, rejected: 0, readErrors: 0, bytesSent: 0 };
  #dropReasons = { queueFull: 0, rejected: 0, stopped: 0, exit: 0 };
  #refusing = false; // the last answer was a refusal (logged once until a success)
  #lastError;
  #lastSuccess;

  constructor({ url, headers = {}, interval, timeout, queueSize, read, log }) {
    this.#url = new URL(url);
    this.#headers = headers;
    this.#intervalMs = interval * 1000;
    this.#timeoutMs = timeout * 1000;
    this.#queueSize = queueSize;
    this.#read = read;
    this.#log = log;
    const Agent = this.#url.protocol === 'https:' ? https().Agent : http.Agent;
    this.#agent = new Agent({ keepAlive: true, maxSockets: 1 });
  }

  start() {
    this.#timer = setInterval(() => {
      if (!this.#collecting) this.collect();
    }, this.#intervalMs);
    this.#timer.unref();
  }

  // Counters since start: profiles collected, sent, dropped (queue full), rejected (a
  // non-retryable answer), failed attempts, failed reads; what waits; the last error and success.
  stats() {
    return {
      ...this.#stats,
      dropReasons: { ...this.#dropReasons },
      queued: this.#queue.length,
      consecutiveFailures: this.#failures,
      lastError: this.#lastError,
      lastSuccess: this.#lastSuccess,
    };
  }

  // Reads a window now and queues its profile; resolves to what the read returned ({ otlp,
  // pprof? }) and `entry`, whose `outcome` becomes 'sent' or the reason it was dropped, once it is
  // queued (not sent), or undefined when the read failed. Never rejects.
  // One read at a time: a call during another's read waits for it, then reads its own window.
  async collect({ pprof = false } = {}) {
    while (this.#collecting) await this.#collecting;
    if (this.#stopped) return undefined;
    const reading = (async () => {
      try {
        const window = await this.#read({ pprof });
        if (this.#stopped) return window;
        this.#stats.collected++;
        // What becomes of this profile: 'sent' or the reason it was dropped (push() reports it).
        const entry = { body: window.otlp, outcome: undefined };
        this.#queue.push(entry);
        // The oldest waiting profile goes, never the one in flight (it ends as sent or refused).
        while (this.#queue.length > this.#queueSize) {
          const [dropped] = this.#queue.splice(this.#sending ? 1 : 0, 1);
          this.#drop('queueFull', dropped);
        }
        this.#drain();
        return { ...window, entry };
      } catch (err) {
        this.#stats.readErrors++;
        this.#lastError = `read: ${err.message}`;
        this.#log(`push: could not read the profile: ${err.message}`);
        return undefined;
      }
    })();
    this.#collecting = reading;
    try {
      return await reading;
    } finally {
      this.#collecting = undefined;
    }
  }

  // Resolves to whether the queue emptied within `timeoutMs` (agent.push()). A backoff in
  // progress is cut short once, so that what was just collected goes out now; later retries keep
  // their backoff (a collector that is down is not hammered).
  // The wait is ref'd: it keeps the process alive until the queue is out or the time is up.
  async flush(timeoutMs = this.#timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    if (this.#retryTimer && !this.#sending) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = undefined;
      this.#drain();
    }
    while ((this.#queue.length > 0 || this.#sending || this.#collecting) && Date.now() < deadline && !this.#stopped) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.#queue.length === 0;
  }

  // Stops pushing; what is still queued is counted dropped (`reason`: 'stopped', or 'exit' when
  // the process ends) and returned.
  stop(reason = 'stopped') {
    if (this.#stopped) return 0;
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#retryTimer);
    this.#sending?.destroy();
    this.#agent.destroy();
    const lost = this.#queue.length;
    for (const entry of this.#queue) this.#drop(reason, entry);
    this.#queue = [];
    return lost;
  }

  #drop(reason, entry) {
    this.#stats.dropped++;
    this.#dropReasons[reason]++;
    entry.outcome = reason;
  }

  // Sends the queue's head unless a request is in flight or a retry is scheduled.
  #drain() {
    if (this.#stopped || this.#sending || this.#retryTimer || this.#queue.length === 0) return;
    const entry = this.#queue[0];
    this.#send(entry.body, (outcome) => {
      this.#sending = undefined;
      if (this.#stopped) return;
      if (outcome.ok || !outcome.retryable) {
        if (this.#queue[0] === entry) this.#queue.shift();
        if (outcome.ok) {
          entry.outcome = 'sent';
          this.#succeeded(entry.body.length);
        } else {
          this.#rejected(outcome, entry);
        }
        this.#drain();
        return;
      }
      this.#failed(outcome);
    });
  }

  #succeeded(bytes) {
    this.#stats.sent++;
    this.#stats.bytesSent += bytes;
    this.#lastSuccess = new Date().toISOString();
    if (this.#failures > 0 || this.#refusing) {
      this.#log(`push: the collector takes profiles again (${this.#failures} failed attempts; ${this.#stats.dropped} profiles dropped so far)`);
    }
    this.#failures = 0;
    this.#refusing = false;
  }

  #rejected(outcome, entry) {
    this.#stats.rejected++;
    this.#drop('rejected', entry);
    this.#lastError = outcome.error;
    if (this.#refusing) return;
    this.#refusing = true;
    const redirect = outcome.redirect ? `; a redirect is not followed (it would carry the OTLP headers elsewhere): set the endpoint to the final URL${outcome.location ? ` (${outcome.location})` : ''}` : '';
    this.#log(`push: the collector refuses profiles (${outcome.error}); they are dropped until it takes one again${redirect}`);
  }

  #failed(outcome) {
    this.#stats.failedAttempts++;
    this.#failures++;
    this.#lastError = outcome.error;
    if (this.#failures === 1) this.#log(`push: cannot send profiles to ${this.#url.origin}: ${outcome.error}; retrying with backoff`);
    // +-20 % jitter.
    const base = Math.min(this.#intervalMs, FIRST_BACKOFF_MS) * 2 ** Math.min(this.#failures - 1, 16);
    let delay = Math.min(MAX_BACKOFF_MS, base) * (0.8 + 0.4 * Math.random());
    if (outcome.retryAfterMs !== undefined) delay = Math.min(MAX_BACKOFF_MS, Math.max(delay, outcome.retryAfterMs));
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#drain();
    }, delay);
    this.#retryTimer.unref();
  }

  // One POST; `done({ ok, retryable, error, retryAfterMs })` exactly once.
  #send(body, done) {
    let finished = false;
    const finish = (outcome) => {
      if (finished) return;
      finished = true;
      done(outcome);
    };
    const transport = this.#url.protocol === 'https:' ? https() : http;
    let req;
    try {
      req = transport.request(this.#url, {
        method: 'POST',
        agent: this.#agent,
        timeout: this.#timeoutMs,
        headers: {
          ...this.#headers,
          'content-type': 'application/x-protobuf',
          'content-encoding': 'gzip',
          'content-length': String(body.length),
        },
      });
    } catch (err) {
      finish({ ok: false, retryable: false, error: err.message });
      return;
    }
    this.#sending = req;
    // The whole exchange, not only socket inactivity, is bounded by the timeout.
    const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${this.#timeoutMs / 1000} s`)), this.#timeoutMs);
    deadline.unref();
    req.on('socket', (socket) => socket.unref());
    req.on('timeout', () => req.destroy(new Error(`no answer within ${this.#timeoutMs / 1000} s`)));
    req.on('error', (err) => {
      clearTimeout(deadline);
      finish({ ok: false, retryable: true, error: err.message });
    });
    req.on('response', (res) => {
      let received = 0;
      res.on('data', (chunk) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) res.destroy();
      });
      const settle = () => {
        clearTimeout(deadline);
        const status = res.statusCode;
        if (status >= 200 && status < 300) {
          finish({ ok: true });
          return;
        }
        const retryAfter = Number(res.headers['retry-after']);
        const redirect = status >= 300 && status < 400;
        finish({
          ok: false,
          retryable: RETRYABLE.has(status),
          error: `HTTP ${status}`,
          retryAfterMs: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : undefined,
          redirect,
          location: redirect ? originOf(res.headers.location, this.#url) : undefined,
        });
      };
      res.on('end', settle);
      res.on('close', settle);
      res.on('error', () => {});
    });
    req.end(body);
  }
}

// The origin and path of a redirect's Location (never its credentials or query), or undefined.
function originOf(location, base) {
  if (typeof location !== 'string') return undefined;
  try {
    const url = new URL(location, base);
    return `${url.origin}${url.pathname}`.slice(0, 200);
  } catch {
    return undefined;
  }
}

// The URL profiles are POSTed to: a collector's base URL (no path, or `/`) gets OTLP/HTTP's
// profiles path appended, as OpenTelemetry exporters do with OTEL_EXPORTER_OTLP_ENDPOINT; a URL
// with a path is used as it is.
const PROFILES_PATH = '/v1development/profiles';
function profilesUrl(endpoint) {
  const url = new URL(endpoint);
  if (url.pathname === '/' || url.pathname === '') url.pathname = PROFILES_PATH;
  return url.toString();
}

module.exports = { OtlpPusher, profilesUrl };
