'use strict';
// Reads of the agent's profile in memory (agent.profile(), the HTTP endpoint): what one caller, or
// a hostile client on the endpoint, can cost the app's main thread.
//
// The part of a read that holds the main thread is the copy of V8's profile (and, for ?gc=1, the
// full GC before it): ~40 ms for 400k live objects sampled at 512 B, ~0.3 s for that GC. The rest
// (model, encoding) runs on a libuv worker thread. So:
//   - Copies are spaced by their own cost: after a read held the main thread h ms, the next one
//     starts no sooner than COPY_GAP_FACTOR x h ms after it ended, so reads hold the main thread at
//     most 1 / (1 + COPY_GAP_FACTOR) of the time (10 %) whatever the request rate.
//   - Callers share copies. A caller joins the read in flight that makes its format, or the last
//     read made while no new copy may start yet (its result is kept until then, and no longer),
//     else the next scheduled read; a read makes every format its callers asked for from one copy.
//     A caller that needs a copy made no sooner than some time (the second profile of a delta,
//     ?seconds=N) passes it as `notBefore`: only reads copied since then, or not yet, are shared.
//   - A forced GC runs at most once per GC_INTERVAL_MS. A GC caller within the interval shares
//     the GC read in flight or scheduled, else is refused (429, Retry-After).
//   - At most MAX_WAITING callers wait at once; more are refused (503, Retry-After): waiting
//     callers hold sockets and a share of the result, and nothing else bounds them.
// The longest single hold is one GC plus one copy, or one copy.


// The agent's method that resolves to the shared result itself (the endpoint sends one Buffer to
// all its clients); agent.profile() hands each caller a copy of its own.
const SHARED_PROFILE = Symbol('heap-labels shared profile read');

const COPY_GAP_FACTOR = 9;
const GC_INTERVAL_MS = 10_000;
const MAX_WAITING = 64;

// Why a read was refused: `status` is the HTTP answer (429 rate-limited GC, 503 too many waiting),
// `retryAfter` the seconds after which it may succeed.
class ReadRefusedError extends Error {
  constructor(message, status, retryAfter) {
    super(`heap-labels: ${message}`);
    this.name = 'ReadRefusedError';
    this.code = 'ERR_HEAP_LABELS_BUSY';
    this.status = status;
    this.retryAfter = Math.max(1, Math.ceil(retryAfter));
  }
}

// One read: the formats its callers want and why (the summary's reason line), whether a GC runs
// first, its callers; once copied, until when it may still be shared after it is done.
class Read {
  constructor(gc) {
    this.gc = gc;
    this.formats = new Set();
    this.reasons = new Set();
    this.done = false;
    this.copiedAt = undefined; // now() when its copy started
    this.freshUntil = 0;
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

class ProfileReads {
  #copy; // ({ pprof, summary, allocs, gc, reason }) => Promise<{ pprof, summary, allocs }>: holds the main thread, then encodes off it
  #now;
  #next; // the scheduled Read (not yet copied)
  #timer; // its setImmediate or setTimeout
  #recent = []; // Reads copied: being encoded, or done and still fresh
  #waiting = 0;
  #earliestCopy = 0; // now() (monotonic ms) before which no copy starts
  #lastGc = -Infinity;

  constructor(copy, { now = () => Number(process.hrtime.bigint()) / 1e6 } = {}) {
    this.#copy = copy;
    this.#now = now;
  }

  // Resolves to { pprof, summary, allocs } (the one asked for is set; the result may be shared with other
  // callers: do not modify it). Rejects with ReadRefusedError when refused. notBefore: the
  // earliest now() at which the caller's copy may have started (default: any shared copy).
  read(format, gc, reason, notBefore = -Infinity) {
    if (this.#waiting >= MAX_WAITING) {
      const wait = Math.max(this.#earliestCopy - this.#now(), 0) / 1000;
      return Promise.reject(new ReadRefusedError(`${MAX_WAITING} profile reads are already waiting; retry later`, 503, wait));
    }
    const read = this.#join(format, gc, reason, notBefore);
    if (read === undefined) {
      const wait = (this.#lastGc + GC_INTERVAL_MS - this.#now()) / 1000;
      return Promise.reject(
        new ReadRefusedError(`a full GC runs at most once per ${GC_INTERVAL_MS / 1000} s; retry later or read without gc`, 429, wait),
      );
    }
    read.formats.add(format);
    read.reasons.add(reason);
    this.#waiting++;
    return read.promise.finally(() => {
      this.#waiting--;
    });
  }

  // Refuses every caller still waiting for a copy (the agent stops).
  close(reason) {
    clearImmediate(this.#timer);
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#recent = [];
    const next = this.#next;
    this.#next = undefined;
    next?.reject(new Error(reason));
  }

  // The read the caller shares, undefined when a GC is asked for and not allowed now.
  #join(format, gc, reason, notBefore) {
    // The newest read in flight or still fresh that makes this format for this reason (with a
    // GC, when one is asked for).
    const now = this.#now();
    for (let i = this.#recent.length - 1; i >= 0; i--) {
      const read = this.#recent[i];
      const usable = (!read.done || now < read.freshUntil) && read.copiedAt >= notBefore;
      if (usable && read.formats.has(format) && read.reasons.has(reason) && (read.gc || !gc)) return read;
    }
    if (this.#next !== undefined && (this.#next.gc || !gc)) return this.#next;
    if (gc && now - this.#lastGc < GC_INTERVAL_MS) return undefined;
    if (this.#next === undefined) this.#schedule(new Read(gc));
    else this.#next.gc ||= gc;
    return this.#next;
  }

  #schedule(read) {
    this.#next = read;
    const delay = this.#earliestCopy - this.#now();
    // setImmediate: the callers whose requests arrive in this turn of the loop join it.
    if (delay <= 0) this.#timer = setImmediate(() => this.#run());
    else this.#timer = setTimeout(() => this.#run(), delay);
  }

  #run() {
    const read = this.#next;
    this.#next = undefined;
    this.#timer = undefined;
    if (read === undefined) return;
    const started = this.#now();
    read.copiedAt = started;
    let pending;
    try {
      if (read.gc) this.#lastGc = started;
      pending = this.#copy({
        pprof: read.formats.has('pprof'),
        summary: read.formats.has('summary'),
        allocs: read.formats.has('allocs'),
        gc: read.gc,
        reason: [...read.reasons].join(', '),
      });
    } catch (err) {
      pending = Promise.reject(err);
    }
    const ended = this.#now();
    const hold = ended - started;
    this.#earliestCopy = ended + COPY_GAP_FACTOR * hold;
    read.freshUntil = this.#earliestCopy;
    this.#recent.push(read);
    pending.then(read.resolve, read.reject).finally(() => this.#finished(read));
  }

  // A read is done: shared until no new copy may start (then a caller would get a new one), and
  // forgotten then, its result with it. A failed read is not shared.
  #finished(read) {
    read.done = true;
    const keep = read.freshUntil - this.#now();
    const forget = () => {
      const i = this.#recent.indexOf(read);
      if (i !== -1) this.#recent.splice(i, 1);
    };
    read.promise.then(
      () => {
        if (keep > 0) setTimeout(forget, keep).unref();
        else forget();
      },
      forget,
    );
  }
}

module.exports = { ProfileReads, SHARED_PROFILE, ReadRefusedError, COPY_GAP_FACTOR, GC_INTERVAL_MS };
