'use strict';
// What the preload (heap-labels/register) says on stderr: each report is one `heap-labels: ` line,
// except a list of configuration problems, one problem per indented line. The preload never
// throws; these lines are how the app's operator learns it runs unprofiled.

function report(message) {
  process.stderr.write(`heap-labels: ${message}\n`);
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

module.exports = { report, reportNotProfiling };
