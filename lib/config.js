'use strict';
// Options of the production agent, from code (startAgent(options)) or from the environment
// (heap-labels/register): one table, so both accept the same values and say the same things.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const session = require('./session-options');

const MAX_U32 = 2 ** 32 - 1;

// Signals a dump may be bound to: catchable, not SIGUSR1 (the inspector's), not SIGINT/SIGTERM
// (a listener would stop them from ending the process).
const SIGNALS = Object.freeze(['SIGUSR2', 'SIGHUP', 'SIGWINCH', 'SIGURG', 'SIGPWR']);
// Bearer token: RFC 6750's token68 characters, long enough not to be guessed.
const TOKEN_RE = /^[A-Za-z0-9\-._~+/]+=*$/;
const MIN_TOKEN = 16;
const MAX_TOKEN = 1024;

// What a value check throws: completes "<name> ...".
class Problem {
  constructor(message) {
    this.message = message;
  }
}

class ConfigError extends Error {
  constructor(problems) {
    super(problems.join('; '));
    this.name = 'ConfigError';
    this.code = 'ERR_HEAP_LABELS_CONFIG';
    this.problems = problems;
  }
}

// parse(text) for the environment, check(value) for code; both return the value or throw a
// Problem.
function integer(min, max) {
  const range = `an integer in ${min}..${max}`;
  const check = (value) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new Problem(`must be ${range}`);
    }
    return value;
  };
  return {
    range,
    bounds: { min, max },
    check,
    parse: (text) => {
      if (!/^\d+$/.test(text)) throw new Problem(`must be ${range}`);
      return check(Number(text));
    },
  };
}

// A session option's integer rule (lib/session-options.js, which startHeapProfile() checks too).
function sessionInteger(name) {
  const rule = session.RULES[name];
  return integer(rule.min, rule.max);
}

// A number of seconds, or 0 for off. Decimals are accepted (a test watches every 0.2 s); below
// `min` a timer would mostly measure itself.
function seconds(min, max) {
  const range = `0 (off) or ${min}..${max} seconds`;
  const problem = `must be 0 (off) or a number of seconds in ${min}..${max}`;
  const check = (value) => {
    if (typeof value !== 'number' || !Number.isFinite(value) || (value !== 0 && (value < min || value > max))) {
      throw new Problem(problem);
    }
    return value;
  };
  return {
    range,
    bounds: { min, max, off: 0 },
    check,
    parse: (text) => {
      if (!/^\d+(\.\d+)?$/.test(text)) throw new Problem(problem);
      return check(Number(text));
    },
  };
}

// A number of seconds in min..max (no off).
function positiveSeconds(min, max) {
  const problem = `must be a number of seconds in ${min}..${max}`;
  const check = (value) => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) throw new Problem(problem);
    return value;
  };
  return {
    range: `${min}..${max} seconds`,
    bounds: { min, max },
    check,
    parse: (text) => {
      if (!/^\d+(\.\d+)?$/.test(text)) throw new Problem(problem);
      return check(Number(text));
    },
  };
}

// Path components a dump directory may have to be created (mkdir -p is bounded by it: Node's
// recursive mkdirSync never returns on some paths, e.g. /proc/self/x).
const MAX_CREATED_COMPONENTS = 64;

// Creates `dir` and its missing parents, one mkdir each: ends after at most one step per missing
// component, whatever the file system answers.
function makeDirectory(dir) {
  const missing = [];
  let at = dir;
  for (;;) {
    let stat;
    try {
      stat = fs.statSync(at);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
    if (stat !== undefined) {
      if (!stat.isDirectory()) throw Object.assign(new Error(`${at} is not a directory`), { code: 'ENOTDIR' });
      break;
    }
    const parent = path.dirname(at);
    if (parent === at) break;
    missing.push(at);
    if (missing.length > MAX_CREATED_COMPONENTS) {
      throw Object.assign(new Error(`more than ${MAX_CREATED_COMPONENTS} missing directories`), { code: 'ENOENT' });
    }
    at = parent;
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    try {
      fs.mkdirSync(missing[i]);
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
  }
}

// Whether files can be made in `dir`: a probe file is created and removed (access(2) says yes
// for root on read-only directories like /proc, and knows nothing of quotas or ACLs).
function probeWritable(dir) {
  const probe = path.join(dir, `.heap-labels-probe-${process.pid}-${Date.now()}`);
  fs.closeSync(fs.openSync(probe, 'wx'));
  fs.unlinkSync(probe);
}

// The checked directory (absolute), or a Problem.
function writableDirectory(value) {
  const dir = path.resolve(value);
  try {
    makeDirectory(dir);
    if (!fs.statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    probeWritable(dir);
  } catch (err) {
    const problem = new Problem(`must be a writable directory (created if missing): ${err.code || err.message}`);
    problem.cause = err.code || err.message;
    throw problem;
  }
  return dir;
}

// A writable directory, created when missing (dumps must be writable when they are needed, not
// only found unwritable then).
const directory = {
  range: 'a writable directory (created if missing)',
  check: (value) => {
    if (typeof value !== 'string' || value.length === 0 || value.includes('\0')) {
      throw new Problem('must be a writable directory path (created if missing)');
    }
    return writableDirectory(value);
  },
};
directory.parse = directory.check;

// The default dump directory: the working directory, checked as an explicit one is; when dumps
// cannot be written there, the OS temp directory, and a note saying so.
function defaultDirectory(notes) {
  let cwd;
  let why;
  try {
    cwd = process.cwd();
    return writableDirectory(cwd);
  } catch (problem) {
    why = problem instanceof Problem ? `is not writable (${problem.cause})` : `is unknown (${problem.code || problem.message})`;
  }
  const dir = writableDirectory(os.tmpdir());
  notes.push(`dumps go to ${dir}: the working directory${cwd ? ` ${cwd}` : ''} ${why}`);
  return dir;
}

const signal = {
  range: `one of ${SIGNALS.join(', ')} or off`,
  check: (value) => {
    if (value === null || value === 'off') return null;
    if (!SIGNALS.includes(value)) throw new Problem(`must be one of ${SIGNALS.join(', ')} or off`);
    return value;
  },
};
signal.parse = signal.check;

// "host:port" / "[v6]:port" -> { host, port }. The host is an IP address or localhost: a name
// that resolves elsewhere would make "is it loopback" a guess.
const listen = {
  range: 'host:port with an IP address or localhost and a port in 0..65535, or off',
  check: (value) => {
    if (value === null || value === 'off') return null;
    const bad = 'must be host:port with an IP address or localhost and a port in 0..65535 (e.g. 127.0.0.1:6060), or off';
    if (typeof value !== 'string') throw new Problem(bad);
    const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
    if (!m) throw new Problem(bad);
    const host = m[1] ?? m[2];
    const port = Number(m[3]);
    if (port > 65535) throw new Problem(bad);
    // node:net is loaded here, by the configurations that name a host only: its bindings cost
    // start-up instructions.
    const net = require('node:net');
    if (host !== 'localhost' && net.isIP(host) === 0) throw new Problem(bad);
    if (m[1] !== undefined && net.isIP(host) !== 6) throw new Problem(bad);
    return { host, port };
  },
};
listen.parse = listen.check;

const onOff = {
  range: 'on or off',
  check: (value) => {
    if (value === true || value === 'on') return true;
    if (value === false || value === 'off') return false;
    throw new Problem('must be on or off (true or false from code)');
  },
};
onOff.parse = onOff.check;

// A collector's URL: http or https, no credentials in it (they go in headers).
const collectorUrl = {
  range: 'an http:// or https:// URL (a base URL gets /v1development/profiles), or off',
  check: (value) => {
    if (value === null || value === 'off') return null;
    const bad = 'must be an http:// or https:// URL without user:password (e.g. http://127.0.0.1:4318), or off';
    if (typeof value !== 'string' || value.length > 2048) throw new Problem(bad);
    let url;
    try {
      url = new URL(value);
    } catch {
      throw new Problem(bad);
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) throw new Problem(bad);
    return url.toString();
  },
};
collectorUrl.parse = collectorUrl.check;

// Request headers for the collector (auth): OpenTelemetry's OTEL_EXPORTER_OTLP_HEADERS format in
// the environment (`key=value,key2=value2`, values percent-decoded), an object of strings from
// code. Names are HTTP tokens; values have no control characters; bounded in count and size.
const HEADER_NAME_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MAX_HEADERS = 32;
const MAX_HEADER_BYTES = 8192;
function checkHeaders(entries) {
  const bad = `must be at most ${MAX_HEADERS} headers (name: an HTTP token; value: no control characters), ${MAX_HEADER_BYTES} bytes in all`;
  if (entries.length > MAX_HEADERS) throw new Problem(bad);
  let bytes = 0;
  const out = {};
  for (const [name, value] of entries) {
    // Control characters are what this check refuses (header injection, CR/LF).
    // eslint-disable-next-line no-control-regex
    if (typeof name !== 'string' || !HEADER_NAME_RE.test(name) || typeof value !== 'string' || /[\x00-\x1f\x7f]/.test(value)) {
      throw new Problem(bad);
    }
    bytes += name.length + value.length;
    out[name.toLowerCase()] = value;
  }
  if (bytes > MAX_HEADER_BYTES) throw new Problem(bad);
  return out;
}
const headers = {
  range: 'key=value pairs separated by commas (values percent-encoded), e.g. authorization=Bearer%20abc',
  bounds: { max: MAX_HEADERS, maxBytes: MAX_HEADER_BYTES },
  check: (value) => {
    if (value === null) return {};
    if (typeof value !== 'object' || Array.isArray(value)) throw new Problem('must be an object of header names to strings');
    return checkHeaders(Object.entries(value));
  },
  parse: (text) => {
    const entries = [];
    for (const part of text.split(',')) {
      if (part.trim() === '') continue;
      const eq = part.indexOf('=');
      if (eq <= 0) throw new Problem('must be key=value pairs separated by commas (OTEL_EXPORTER_OTLP_HEADERS format)');
      let value;
      try {
        value = decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        throw new Problem('has a value that is not valid percent-encoding');
      }
      entries.push([part.slice(0, eq).trim(), value]);
    }
    return checkHeaders(entries);
  },
};

const MAX_SERVICE_NAME = 4096;
const serviceName = {
  range: `a name of 1..${MAX_SERVICE_NAME} characters`,
  bounds: { min: 1, max: MAX_SERVICE_NAME },
  check: (value) => {
    if (value === null) return null;
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SERVICE_NAME) {
      throw new Problem(`must be a string of 1..${MAX_SERVICE_NAME} characters`);
    }
    return value;
  },
};
serviceName.parse = serviceName.check;

const token = {
  range: `${MIN_TOKEN}..${MAX_TOKEN} characters of A-Z a-z 0-9 - . _ ~ + / (then =)`,
  bounds: { min: MIN_TOKEN, max: MAX_TOKEN },
  check: (value) => {
    if (value === null) return null;
    if (typeof value !== 'string' || value.length < MIN_TOKEN || value.length > MAX_TOKEN || !TOKEN_RE.test(value)) {
      throw new Problem(`must be ${MIN_TOKEN}..${MAX_TOKEN} characters of A-Z a-z 0-9 - . _ ~ + / (optionally ending in =)`);
    }
    return value;
  },
};
token.parse = token.check;

// option name -> { env, kind, default (a function of the notes list: the cwd is read at start) }
const OPTIONS = Object.freeze({
  // The session's options, with startHeapProfile()'s defaults and ranges.
  sampleInterval: {
    env: 'HEAP_LABELS_SAMPLE_INTERVAL',
    kind: sessionInteger('sampleInterval'),
    default: () => session.DEFAULTS.sampleInterval,
  },
  stackDepth: {
    env: 'HEAP_LABELS_STACK_DEPTH',
    kind: sessionInteger('stackDepth'),
    default: () => session.DEFAULTS.stackDepth,
  },
  maxLabelSets: {
    env: 'HEAP_LABELS_MAX_LABEL_SETS',
    kind: sessionInteger('maxLabelSets'),
    default: () => session.DEFAULTS.maxLabelSets,
  },
  dir: { env: 'HEAP_LABELS_DIR', kind: directory, default: defaultDirectory },
  keep: { env: 'HEAP_LABELS_KEEP', kind: integer(1, 100000), default: () => 10 },
  signal: { env: 'HEAP_LABELS_SIGNAL', kind: signal, default: () => 'SIGUSR2' },
  http: { env: 'HEAP_LABELS_HTTP', kind: listen, default: () => null },
  token: { env: 'HEAP_LABELS_TOKEN', kind: token, default: () => null, secret: true },
  nearHeapLimit: { env: 'HEAP_LABELS_NEAR_HEAP_LIMIT', kind: integer(0, 1000), default: () => 1 },
  // The growth watch (lib/growth.js explains the rule and the noise math behind the defaults).
  // Off by default: each snapshot is a counters() read, which also starts a new externalPeakBytes
  // period for every other reader (the metrics adapters), and it writes to stderr.
  watchInterval: { env: 'HEAP_LABELS_WATCH_INTERVAL', kind: seconds(0.1, 86400), default: () => 0 },
  // Increases in a row before a label set is flagged. 4: for an unchanging set, 5 snapshots come
  // in increasing order by chance with probability 1/120 (independent) to 1/16 (a random walk);
  // with the noise bound that is ~6e-6 per set and period. At most 50: points kept per set are
  // periods + 1, for up to maxLabelSets sets.
  watchPeriods: { env: 'HEAP_LABELS_WATCH_PERIODS', kind: integer(1, 50), default: () => 4 },
  // Least total growth worth a line, in bytes: 4 MiB, 8 default sampling intervals. The sampling
  // noise bound (4 sd, at least 16 samples) applies on top of it whatever the interval.
  watchMinGrowth: { env: 'HEAP_LABELS_WATCH_MIN_GROWTH', kind: integer(0, MAX_U32), default: () => 4 * 1024 * 1024 },
  // Least total growth relative to the first snapshot of the window: 10 %, so that a large set
  // drifting slowly (a cache filling up) is not reported, and the unlabeled group on stock
  // runtimes (V8's used heap, uncollected garbage included) needs a real rise.
  watchMinGrowthPercent: { env: 'HEAP_LABELS_WATCH_MIN_GROWTH_PERCENT', kind: integer(0, 10000), default: () => 10 },
  // Allocated figures per window (trackAllocations): what /debug/pprof/allocs and pushes report.
  // On by default: no measurable cost per request (benchmark/results/), memory bounded by sites x
  // label sets; reads count since the agent's start, each push sends its window (docs/otlp.md).
  allocations: { env: 'HEAP_LABELS_ALLOCATIONS', kind: onOff, default: () => true },
  // Without pushes, the agent ends the allocation window (which only pushes read) at least this
  // often: its groups hold the label sets allocated in it, so with rotating sets they would count
  // against maxLabelSets for the session's life. Pushes, when on, own the window instead.
  allocationWindow: { env: 'HEAP_LABELS_ALLOCATION_WINDOW', kind: positiveSeconds(1, 86400), default: () => 60 },
  // Pushing OTLP profiles to a collector (lib/push.js): on when an endpoint is set.
  otlpEndpoint: { env: 'HEAP_LABELS_OTLP_ENDPOINT', kind: collectorUrl, default: () => null },
  // Secret: a bad value is reported without the value (it may hold credentials).
  otlpHeaders: { env: 'HEAP_LABELS_OTLP_HEADERS', kind: headers, default: () => ({}), secret: true },
  pushInterval: { env: 'HEAP_LABELS_PUSH_INTERVAL', kind: positiveSeconds(0.1, 86400), default: () => 60 },
  pushTimeout: { env: 'HEAP_LABELS_PUSH_TIMEOUT', kind: positiveSeconds(0.1, 600), default: () => 10 },
  // Profiles waiting while the collector is unreachable; past it the oldest is dropped (counted).
  pushQueue: { env: 'HEAP_LABELS_PUSH_QUEUE', kind: integer(1, 1000), default: () => 8 },
  // The pushed resource's service.name; unset: OpenTelemetry's OTEL_SERVICE_NAME, else
  // unknown_service:<executable> (lib/otlp.js).
  serviceName: { env: 'HEAP_LABELS_SERVICE_NAME', kind: serviceName, default: () => null },
  // Automatic route labels (lib/instrument/): every request of express, fastify, koa (NestJS on
  // express or fastify) labeled by its route template, other node:http/https/http2 servers' by
  // method and normalised path, with no change to the app.
  routes: { env: 'HEAP_LABELS_ROUTES', kind: onOff, default: () => true },
  // Retainers per label for operators (labeled runtime): the endpoint's retainers route and a
  // retainers file with each signal dump. Off by default: each read is a heap snapshot, which
  // pauses the app for its whole walk (176 s for a 1,174 MiB heap) and needs several times the used
  // heap in memory (docs/performance.md); an operator turns it on knowing that.
  retainers: { env: 'HEAP_LABELS_RETAINERS', kind: onOff, default: () => false },
});

function isLoopback(host) {
  if (host === 'localhost' || host === '::1') return true;
  return require('node:net').isIPv4(host) && host.startsWith('127.');
}

// Rules between options.
function crossCheck(o, name) {
  if (o.http && !isLoopback(o.http.host) && !o.token) {
    return [
      `${name('http')} listens on ${o.http.host}, which is not a loopback address: ` +
        `serving heap profiles there requires ${name('token')} (clients send Authorization: Bearer <token>)`,
    ];
  }
  return [];
}

// A default that cannot be had (no writable directory for dumps at all) is a problem of the
// option's own.
function defaultOf(spec, notes, problems, name) {
  try {
    return spec.default(notes);
  } catch (problem) {
    if (!(problem instanceof Problem)) throw problem;
    problems.push(`${name} (default) ${problem.message}`);
    return undefined;
  }
}

// How an error shows a value it refused: never a secret's (the token, the OTLP headers), never the
// user:password of something that parses as a URL, and at most MAX_SHOWN characters of the rest (an
// error line stays one readable line whatever was passed).
const MAX_SHOWN = 120;
function shown(spec, value) {
  if (spec.secret) return '(value not shown)';
  const quoted = typeof value === 'string';
  let text = quoted ? value : safeStringify(value);
  text = text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/gi, '$1(credentials not shown)@');
  const cut = text.length > MAX_SHOWN ? text.slice(0, MAX_SHOWN) : text;
  const out = quoted ? JSON.stringify(cut) : cut;
  return text.length > MAX_SHOWN ? `${out}... (${text.length} characters)` : out;
}

function safeStringify(value) {
  try {
    return typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function'
      ? String(value)
      : (JSON.stringify(value) ?? String(value));
  } catch {
    return Object.prototype.toString.call(value);
  }
}

// Options from the environment; throws one ConfigError naming every bad variable. What the caller
// should say once on stderr (a default replaced) is pushed onto `notes`.
function fromEnv(env = process.env, notes = []) {
  const problems = [];
  const out = {};
  for (const [key, spec] of Object.entries(OPTIONS)) {
    const text = env[spec.env];
    if (text === undefined || text === '') {
      out[key] = defaultOf(spec, notes, problems, spec.env);
      continue;
    }
    try {
      out[key] = spec.kind.parse(text);
    } catch (problem) {
      if (!(problem instanceof Problem)) throw problem;
      problems.push(`${spec.env}${spec.secret ? ' (value not shown)' : `=${shown(spec, text)}`}: ${problem.message}`);
    }
  }
  if (problems.length === 0) problems.push(...crossCheck(out, (key) => OPTIONS[key].env));
  if (problems.length) throw new ConfigError(problems);
  return out;
}

// Options from code (startAgent): the same values, named by option; notes as fromEnv's.
function fromOptions(options, where = 'startAgent', notes = []) {
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`heap-labels: ${where}: options must be an object`);
  }
  for (const key of Object.keys(options)) {
    if (!Object.hasOwn(OPTIONS, key)) {
      throw new TypeError(`heap-labels: ${where}: unknown option ${JSON.stringify(key)}`);
    }
  }
  const problems = [];
  const out = {};
  for (const [key, spec] of Object.entries(OPTIONS)) {
    const value = options[key];
    if (value === undefined) {
      out[key] = defaultOf(spec, notes, problems, `option ${key}`);
      continue;
    }
    try {
      out[key] = spec.kind.check(value);
    } catch (problem) {
      if (!(problem instanceof Problem)) throw problem;
      problems.push(`option ${key} ${problem.message}${spec.secret ? '' : `, got ${shown(spec, value)}`}`);
    }
  }
  if (problems.length === 0) problems.push(...crossCheck(out, (key) => `option ${key}`));
  if (problems.length) {
    const err = new RangeError(`heap-labels: ${where}: ${problems.join('; ')}`);
    err.code = 'ERR_HEAP_LABELS_CONFIG';
    throw err;
  }
  return out;
}

// The table for documentation and tests: [{ option, env, accepts, bounds, default }]. `bounds`: the
// numbers of the rule ({ min, max } of an integer, seconds or a length; `off`: the value that turns
// it off besides the range; `max`/`maxBytes` of the headers), undefined for the others; `default`:
// the value an unset option takes, undefined where it depends on the process (`dir`).
function describeOptions() {
  return Object.entries(OPTIONS).map(([option, spec]) => ({
    option,
    env: spec.env,
    accepts: spec.kind.range,
    bounds: spec.kind.bounds,
    default: spec.default === defaultDirectory ? undefined : spec.default([]),
  }));
}

module.exports = { fromEnv, fromOptions, describeOptions, MIN_TOKEN };
