'use strict';
// The OTLP tests' reference decoder (not a test file itself): the official generated code of
// opentelemetry-proto from PyPI, in a venv created once under $HEAP_LABELS_CACHE (the package
// version pinned here has the profiles v1development protos of opentelemetry-proto v1.10.0).
// Concurrent test files may race to create it: each builds a private venv and renames it into
// place; the loser drops its copy.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const PACKAGE = 'opentelemetry-proto==1.45.2';
const cache = process.env.HEAP_LABELS_CACHE || path.join(os.homedir(), '.cache', 'heap-labels');
const venv = path.join(cache, `otlp-venv-${PACKAGE.replace('==', '-')}`);
const python = path.join(venv, 'bin', 'python');
const script = path.join(__dirname, 'fixtures', 'otlp_decode.py');

function run(cmd, args) {
  // A decoded window of the labeled runtime runs to several MiB of JSON (spawnSync's default
  // maxBuffer is 1 MiB and fails with ENOBUFS past it).
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 600_000, maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `status ${r.status}`}): ${r.stderr}`);
  }
  return r.stdout;
}

// The venv's python, created when missing (pip from PyPI, a minute at most).
function ensureVenv() {
  if (fs.existsSync(python)) return python;
  fs.mkdirSync(cache, { recursive: true });
  const tmp = `${venv}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  run('python3', ['-m', 'venv', tmp]);
  run(path.join(tmp, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', PACKAGE]);
  try {
    fs.renameSync(tmp, venv);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(python)) throw err;
  }
  return python;
}

// Decodes `bytes` as a ProfilesData ('data') or ExportProfilesServiceRequest ('request') with
// the official code; returns the resolved JSON (tests/fixtures/otlp_decode.py), or throws with
// the rule the message breaks.
function decodeOtlp(bytes, kind = 'data') {
  const py = ensureVenv();
  const file = path.join(os.tmpdir(), `heap-labels-otlp-${process.pid}-${Math.random().toString(36).slice(2)}.pb`);
  fs.writeFileSync(file, bytes);
  try {
    return JSON.parse(run(py, [script, kind, file]));
  } finally {
    fs.rmSync(file, { force: true });
  }
}

// { [type]: { [value of `key`, '' when absent]: total } } of a decoded message's first scope.
function otlpTotals(decoded, key) {
  const out = {};
  for (const p of decoded.resourceProfiles[0].scopes[0].profiles) {
    const byValue = (out[p.type] ??= {});
    for (const s of p.samples) {
      const v = s.attributes[key] ?? '';
      byValue[v] = (byValue[v] ?? 0) + s.value;
    }
  }
  return out;
}

module.exports = { decodeOtlp, otlpTotals, ensureVenv, PACKAGE };
