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
// and when it recovers, not for every attempt.

const http = require('node:http');
const https = require('node:https');

const RETRYABLE = new Set([429, 502, 503, 504]);
// Response bodies are read (so that the connection can be reused) but never kept beyond this.
const MAX_RESPONSE_BYTES = 64 * 1024;
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
    const Agent = this.#url.protocol === 'https:' ? https.Agent : http.Agent;
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
      queued: this.#queue.length,
      consecutiveFailures: this.#failures,
      lastError: this.#lastError,
      lastSuccess: this.#lastSuccess,
    };
  }

  // Reads a window now and queues its profile; resolves to what the read returned ({ otlp,
  // pprof? }) once it is queued (not sent), or undefined when the read failed. Never rejects.
  // One read at a time: a call during another's read waits for it, then reads its own window.
  async collect({ pprof = false } = {}) {
    while (this.#collecting) await this.#collecting;
    if (this.#stopped) return undefined;
    const reading = (async () => {
      try {
        const window = await this.#read({ pprof });
        if (this.#stopped) return window;
        this.#stats.collected++;
        this.#queue.push(window.otlp);
        while (this.#queue.length > this.#queueSize) {
          this.#queue.shift();
          this.#stats.dropped++;
        }
        this.#drain();
        return window;
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
  async flush(timeoutMs = this.#timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    if (this.#retryTimer && !this.#sending) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = undefined;
      this.#drain();
    }
    while ((this.#queue.length > 0 || this.#sending || this.#collecting) && Date.now() < deadline && !this.#stopped) {
      await new Promise((resolve) => setTimeout(resolve, 10).unref());
    }
    return this.#queue.length === 0;
  }

  stop() {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#retryTimer);
    this.#sending?.destroy();
    this.#agent.destroy();
    this.#queue = [];
  }

  // Sends the queue's head unless a request is in flight or a retry is scheduled.
  #drain() {
    if (this.#stopped || this.#sending || this.#retryTimer || this.#queue.length === 0) return;
    const body = this.#queue[0];
    this.#send(body, (outcome) => {
      this.#sending = undefined;
      if (this.#stopped) return;
      if (outcome.ok || !outcome.retryable) {
        if (this.#queue[0] === body) this.#queue.shift();
        if (outcome.ok) this.#succeeded(body.length);
        else this.#rejected(outcome);
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
    if (this.#failures > 0) {
      this.#log(`push: the collector takes profiles again (${this.#failures} failed attempts; ${this.#stats.dropped} profiles dropped so far)`);
    }
    this.#failures = 0;
  }

  #rejected(outcome) {
    this.#stats.rejected++;
    this.#lastError = outcome.error;
    this.#log(`push: the collector rejected a profile (${outcome.error}); it is dropped`);
  }

  #failed(outcome) {
    this.#stats.failedAttempts++;
    this.#failures++;
    this.#lastError = outcome.error;
    if (this.#failures === 1) this.#log(`push: cannot send profiles to ${this.#url.origin}: ${outcome.error}; retrying with backoff`);
    // Exponential from the interval (at most 1 s), +-20 % jitter, at most a minute; a collector's
    // Retry-After is honoured up to the same bound.
    const base = Math.min(this.#intervalMs, 1000) * 2 ** Math.min(this.#failures - 1, 16);
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
    const transport = this.#url.protocol === 'https:' ? https : http;
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
        finish({
          ok: false,
          retryable: RETRYABLE.has(status),
          error: `HTTP ${status}`,
          retryAfterMs: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : undefined,
        });
      };
      res.on('end', settle);
      res.on('close', settle);
      res.on('error', () => {});
    });
    req.end(body);
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

module.exports = { OtlpPusher, profilesUrl, PROFILES_PATH, RETRYABLE };
