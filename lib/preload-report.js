'use strict';
// What heap-labels says on stderr, the preload (heap-labels/register) and the agent alike: each
// report is one `heap-labels: ` line, except a list of configuration problems, one problem per
// indented line. The preload never throws; these lines are how the app's operator learns it runs
// unprofiled.

const fs = require('node:fs');

// Lines written while the preload runs (`during()`) go straight to file descriptor 2: the app has
// not run yet, so nothing can have replaced process.stderr, and making it (process.stderr is made
// on first use, with node:stream and its kin) would cost a process that never writes to stderr
// about 10M instructions, a tenth of `node -e 0`. Every later line goes through process.stderr,
// as the app's own do, also to whatever the app made of it.
let preloading = false;

function during(fn) {
  preloading = true;
  try {
    return fn();
  } finally {
    preloading = false;
  }
}

// Writes one line; throws only what process.stderr.write throws.
function writeLine(line) {
  if (preloading) {
    const bytes = Buffer.from(line);
    let written = 0;
    try {
      while (written < bytes.length) written += fs.writeSync(2, bytes, written);
      return;
    } catch {
      // A non-blocking pipe that is full (EAGAIN), a closed descriptor: the rest through the stream.
    }
    line = bytes.subarray(written).toString();
  }
  process.stderr.write(line);
}

function report(message) {
  writeLine(`heap-labels: ${message}\n`);
}

// `err` stopped the preload before the agent started: a bad HEAP_LABELS_* value (err.problems) or
// the library failing to load (no addon for this runtime, a damaged addon file), whose message
// already starts with `heap-labels: ` and is kept to one line here.
function reportNotProfiling(err) {
  const what = err?.problems
    ? `\n  ${err.problems.join('\n  ')}`
    : ` ${String(err?.message ?? err).replace(/^heap-labels: /, '').replace(/\s*\n\s*/g, ' ')}`;
  report(`not profiling, the app runs without heap profiling:${what}`);
}

module.exports = { report, reportNotProfiling, during };
