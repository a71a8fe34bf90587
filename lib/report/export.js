// @ts-check
'use strict';
// `heap-labels export --otlp <profile.pb.gz>`: a pprof file (what toPprof() and the agent write)
// as an OpenTelemetry profile: a protobuf-encoded OTLP ProfilesData message, the body an OTLP/HTTP
// exporter POSTs to a collector's /v1development/profiles. The translation is the addon's
// (core/src/otlp.rs, the same code as toOtlp()), so unlike report and diff this command needs the
// native addon built for the running Node.js.

const fs = require('node:fs');
const path = require('node:path');
const { ReportError, readProfileBytes, inflateProfile } = require('./model');

// Where the OTLP file goes by default: beside the input, `.otlp.pb` for `.pb.gz`/`.pb`.
function defaultOutput(file) {
  const base = file.replace(/\.pb\.gz$|\.pb$|\.gz$/, '');
  return `${base}.otlp.pb`;
}

// Converts `file`; returns { out, bytes }. Bad input and a missing addon are ReportErrors.
/**
 * @param {string} file
 * @param {{ out?: string, serviceName?: string, attributes?: Readonly<Record<string, string | number>>, maxInflatedBytes?: number }} [options]
 */
function exportOtlp(file, { out = defaultOutput(file), serviceName, attributes, maxInflatedBytes } = {}) {
  let native;
  let otlpOptions;
  try {
    ({ native } = require('../native'));
    ({ nativeOtlpOptions: otlpOptions } = require('../otlp'));
  } catch (e) {
    throw new ReportError(`export --otlp needs the native addon: ${e.message}`);
  }
  const { checkOtlpOptions } = require('../otlp');
  let checked;
  try {
    checked = checkOtlpOptions({ serviceName, attributes }, 'export');
  } catch (e) {
    throw new ReportError(e.message.replace(/^heap-labels: /, ''));
  }
  // Bounded as the report's reads are, by the same limit (model.js): a device or a huge file is
  // refused, not read whole, and the profile is inflated here, so the addon gets raw
  // profile.proto bytes and its own gunzip (and its larger cap) is never reached from the CLI.
  const input = inflateProfile(readProfileBytes(file, { maxInflatedBytes }), file, { maxInflatedBytes });
  let encoded;
  try {
    encoded = native.pprofToOtlp(input, otlpOptions(checked, { thisProcess: false }));
  } catch (e) {
    throw new ReportError(`${file}: ${e.message.replace(/^heap-labels: /, '')}`);
  }
  try {
    fs.writeFileSync(out, encoded);
  } catch (e) {
    throw new ReportError(`${out}: cannot write: ${e.code ?? e.message}`);
  }
  return { out: path.resolve(out), bytes: encoded.length };
}

module.exports = { exportOtlp };
