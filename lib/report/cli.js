'use strict';
// `heap-labels report|diff|export|retainers`: argument parsing and the commands. Bad input (usage, unreadable or
// non-pprof files) is a ReportError: one line on stderr and exit status 2, no stack trace.

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { readPprof, readPprofFile, readProfileBytes, ReportError, DEFAULT_MAX_INFLATED_BYTES } = require('./model');
const { summarizePprof, DEFAULT_GROUPS, DEFAULT_TOP } = require('./summary');
const { printable } = require('./format');
const { diffModels } = require('./diff');
const { reportText, diffText } = require('./text');
const { reportHtml, diffHtml } = require('./html');
const { exportOtlp } = require('./export');
const { retainersText, readRetainersFile } = require('./retainers');
const { retainersPathOf } = require('../dump-files');

const USAGE = `usage: heap-labels report <profile.pb.gz>... [--key KEY] [--top N] [--all] [--html OUT.html] [--json] [--retainers R.json]...
       heap-labels diff <base.pb.gz> <current.pb.gz> [--key KEY] [--top N] [--html OUT.html] [--json]
       heap-labels export --otlp <profile.pb.gz> [--out FILE] [--service-name NAME] [--attribute K=V]...
       heap-labels retainers <retainers.json>... [--depth N]

  report   per-label in-use (and allocated) bytes and objects, and the top allocation sites of each
           label; several profiles: one report each, and with --html live bytes per label over time
  diff     growth per label from base to current, and the top growing sites of each label
  --key KEY      group by the value of label KEY instead of by full label set
  --top N        sites listed per label (default ${DEFAULT_TOP}; 0: none)
  --all          report: list every label group (default: the ${DEFAULT_GROUPS} largest, and one line for
                 the rest)
  --html FILE    also write a self-contained HTML view (bars, flame graph, timeline)
  --json         print the figures as JSON instead of the text tables
  --retainers FILE
                 report: also show these retainers per label (the JSON of handle.retainers(), or of
                 the agent's /debug/heap-labels/retainers): after the tables, and as a section of
                 the HTML; a dump's own (<stem>.retainers.json beside <stem>.pb.gz) is shown too
  --max-inflated-mib N
                 largest profile read, in MiB once decompressed (default ${DEFAULT_MAX_INFLATED_BYTES / 1048576}): a
                 file beyond it is refused, not read
  retainers  what retains each label's objects: the JSON of handle.retainers(key) (labeled runtime)
           as trees, the objects' classes first, then their retainers, nearest first
  --depth N      retainers: retainer steps shown below each class (default: all, at most 12)
  export --otlp  write the profile as an OpenTelemetry profile (OTLP ProfilesData, protobuf; the
                 body of a POST to a collector's /v1development/profiles), by default beside the
                 input as .otlp.pb; --service-name and --attribute set the resource (needs the
                 native addon)`;

const OPTIONS = {
  key: { type: 'string' },
  top: { type: 'string' },
  html: { type: 'string' },
  json: { type: 'boolean' },
  all: { type: 'boolean' },
  otlp: { type: 'boolean' },
  out: { type: 'string', short: 'o' },
  'service-name': { type: 'string' },
  attribute: { type: 'string', multiple: true },
  'max-inflated-mib': { type: 'string' },
  depth: { type: 'string' },
  retainers: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
};

function parse(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    // node:util's messages carry a long hint after the first sentence; keep the first sentence.
    throw new ReportError(`${e.message.split(/\.\s/)[0].replace(/\.$/, '')} (heap-labels --help for usage)`);
  }
  const { values, positionals } = parsed;
  const o = { command: positionals[0], files: positionals.slice(1), key: values.key, html: values.html, json: Boolean(values.json), help: Boolean(values.help), top: DEFAULT_TOP };
  if (values.top !== undefined) {
    if (!/^\d+$/.test(values.top)) throw new ReportError(`--top must be a non-negative integer, got ${JSON.stringify(values.top)}`);
    o.top = Number(values.top);
  }
  o.maxInflatedBytes = DEFAULT_MAX_INFLATED_BYTES;
  if (values['max-inflated-mib'] !== undefined) {
    const mib = values['max-inflated-mib'];
    if (!/^\d+(\.\d+)?$/.test(mib) || Number(mib) <= 0 || Number(mib) > 1024 * 1024) {
      throw new ReportError(`--max-inflated-mib must be a number of MiB in (0, 1048576], got ${JSON.stringify(mib)}`);
    }
    o.maxInflatedBytes = Math.floor(Number(mib) * 1048576);
  }
  if (values.depth !== undefined) {
    if (o.command !== 'retainers') throw new ReportError('--depth is an option of retainers (heap-labels --help for usage)');
    if (!/^\d+$/.test(values.depth)) throw new ReportError(`--depth must be a non-negative integer, got ${JSON.stringify(values.depth)}`);
    o.depth = Number(values.depth);
  }
  o.retainers = values.retainers ?? [];
  if (o.retainers.length > 0 && o.command !== 'report') throw new ReportError('--retainers is an option of report (heap-labels --help for usage)');
  o.groups = values.all ? Infinity : DEFAULT_GROUPS;
  if (values.all && o.command !== 'report') throw new ReportError('--all is an option of report (heap-labels --help for usage)');
  if (o.key !== undefined && o.key === '') throw new ReportError('--key must not be empty');
  if (o.html !== undefined && o.html === '') throw new ReportError('--html needs a file name');
  o.otlp = Boolean(values.otlp);
  o.out = values.out;
  o.serviceName = values['service-name'];
  if (values.attribute !== undefined) {
    o.attributes = {};
    for (const a of values.attribute) {
      const eq = a.indexOf('=');
      if (eq <= 0) throw new ReportError(`--attribute must be KEY=VALUE, got ${JSON.stringify(a)}`);
      o.attributes[a.slice(0, eq)] = a.slice(eq + 1);
    }
  }
  const exportOnly = ['otlp', 'out', 'service-name', 'attribute'].filter((k) => values[k] !== undefined);
  if (o.command !== 'export' && exportOnly.length > 0) {
    throw new ReportError(`--${exportOnly[0]} is an option of export (heap-labels --help for usage)`);
  }
  return o;
}

function writeHtml(file, html) {
  try {
    fs.writeFileSync(file, html);
  } catch (e) {
    throw new ReportError(`${file}: cannot write: ${e.code ?? e.message}`);
  }
}

// JSON view of one summary (summary.js): the figures the text table shows, unrounded; `moreGroups`
// the groups not listed (null when every group is).
function summaryJson(summary) {
  const { rest, groups, ...head } = summary;
  return {
    ...head,
    groups: groups.map(({ sites, ...g }) => ({ ...g, sites: sites.map(({ frame, ...s }) => ({ ...s, function: frame.name, file: frame.file, line: frame.line })) })),
    moreGroups: rest,
  };
}

// What the reader noticed about a profile's values (model.js ValueCheck): one line each on stderr.
function warn(io, warnings) {
  for (const w of warnings) io.stderr.write(`heap-labels: warning: ${printable(w)}\n`);
}

// The retainers a report shows: those given with --retainers, then each profile's own (a dump's
// <stem>.retainers.json beside its <stem>.pb.gz, written by the agent with option retainers), each
// once, as [{ source, result }].
function reportRetainers(o, io) {
  const files = [...o.retainers];
  for (const profile of o.files) {
    const own = retainersPathOf(profile);
    if (own !== undefined && !files.includes(own) && fs.existsSync(own)) {
      io.stderr.write(`heap-labels: with the dump's retainers ${printable(own)}\n`);
      files.push(own);
    }
  }
  return files.map((file) => ({ source: file, result: readRetainersFile(file) }));
}

// Runs one command line; returns the exit status. `io` is where output goes (tests pass buffers).
function main(argv, io = { stdout: process.stdout, stderr: process.stderr }) {
  try {
    const o = parse(argv);
    if (o.help || o.command === undefined) {
      (o.help ? io.stdout : io.stderr).write(`${USAGE}\n`);
      return o.help ? 0 : 2;
    }
    if (o.command === 'report') {
      if (o.files.length === 0) throw new ReportError('report: no profile given (heap-labels report <profile.pb.gz>...)');
      // The tables and JSON come from a bounded one-pass summary of each file; the HTML page
      // (call trees per label) needs the whole model, read only with --html.
      const inputs = o.files.map((f) => ({ file: f, bytes: readProfileBytes(f, o) }));
      const summaries = inputs.map(({ file, bytes }) => summarizePprof(bytes, file, o));
      for (const s of summaries) warn(io, s.warnings);
      const retainers = reportRetainers(o, io);
      if (o.json) {
        // The profiles' figures only: the retainers' JSON is their own file.
        io.stdout.write(`${JSON.stringify(summaries.map(summaryJson), null, 2)}\n`);
      } else {
        io.stdout.write([...summaries.map((s) => reportText(s, o)), ...retainers.map((r) => retainersText(r.result))].join('\n'));
      }
      if (o.html) {
        const models = inputs.map(({ file, bytes }) => readPprof(bytes, file, o));
        writeHtml(o.html, reportHtml(models, { ...o, retainers }));
        io.stderr.write(`wrote ${o.html}\n`);
      }
      return 0;
    }
    if (o.command === 'diff') {
      if (o.files.length !== 2) throw new ReportError(`diff: needs two profiles (base and current), got ${o.files.length}`);
      const [base, current] = o.files.map((f) => readPprofFile(f, o));
      warn(io, [...base.warnings, ...current.warnings]);
      const diff = diffModels(base, current, o);
      io.stdout.write(o.json ? `${JSON.stringify(diff, null, 2)}\n` : diffText(diff, o));
      if (o.html) {
        writeHtml(o.html, diffHtml(base, current, diff, o));
        io.stderr.write(`wrote ${o.html}\n`);
      }
      return 0;
    }
    if (o.command === 'export') {
      if (!o.otlp) throw new ReportError('export: say which format: --otlp (the only one)');
      if (o.files.length !== 1) throw new ReportError(`export: needs one profile, got ${o.files.length}`);
      const { out, bytes } = exportOtlp(o.files[0], { out: o.out, serviceName: o.serviceName, attributes: o.attributes, maxInflatedBytes: o.maxInflatedBytes });
      io.stderr.write(`wrote ${out} (${bytes} bytes)\n`);
      return 0;
    }
    if (o.command === 'retainers') {
      if (o.files.length === 0) throw new ReportError('retainers: no file given (heap-labels retainers <retainers.json>...)');
      const results = o.files.map((f) => readRetainersFile(f));
      io.stdout.write(results.map((r) => retainersText(r, { depth: o.depth })).join('\n'));
      return 0;
    }
    throw new ReportError(`unknown command ${JSON.stringify(o.command)} (expected report, diff, export or retainers; heap-labels --help for usage)`);
  } catch (e) {
    if (!(e instanceof ReportError)) throw e;
    io.stderr.write(`heap-labels: ${e.message}\n`);
    return 2;
  }
}

module.exports = { main };
