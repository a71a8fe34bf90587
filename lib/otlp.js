'use strict';
// What heap-labels adds to an OpenTelemetry profile (OTLP profiles, v1development): the resource
// that says who sent it. The encoding itself is native (core/src/otlp.rs translates the pprof
// message of the same read); this module validates the caller's resource options and fills in
// OpenTelemetry's usual defaults.
//
// Resource: service.name (option serviceName, else OTEL_SERVICE_NAME, else
// "unknown_service:<executable>" as OpenTelemetry SDKs name it), process.pid,
// process.executable.name, process.runtime.name/version/description, host.name, then the
// caller's attributes (which win over the defaults of the same key).

const os = require('node:os');
const path = require('node:path');
const { version } = require('../package.json');

// Attribute bounds: resources are small, and nothing unbounded goes into every push.
const MAX_ATTRIBUTES = 64;
const MAX_KEY_LENGTH = 256;
const MAX_VALUE_LENGTH = 4096;

function checkText(where, what, value, max) {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new TypeError(`heap-labels: ${where}: ${what} must be a string of 1..${max} characters`);
  }
  return value;
}

// Validated { serviceName?, attributes? } (undefined: defaults only).
function checkOtlpOptions(options, where) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`heap-labels: ${where}: options must be an object`);
  }
  for (const key of Object.keys(options)) {
    if (key !== 'serviceName' && key !== 'attributes') {
      throw new TypeError(`heap-labels: ${where}: unknown option ${JSON.stringify(key)}`);
    }
  }
  const out = {};
  if (options.serviceName !== undefined) {
    out.serviceName = checkText(where, 'option serviceName', options.serviceName, MAX_VALUE_LENGTH);
  }
  if (options.attributes !== undefined) {
    const attributes = options.attributes;
    if (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes)) {
      throw new TypeError(`heap-labels: ${where}: option attributes must be an object of strings and integers`);
    }
    const entries = Object.entries(attributes);
    if (entries.length > MAX_ATTRIBUTES) {
      throw new RangeError(`heap-labels: ${where}: option attributes has ${entries.length} entries, more than ${MAX_ATTRIBUTES}`);
    }
    out.attributes = entries.map(([key, value]) => {
      checkText(where, `attribute key ${JSON.stringify(key.slice(0, 64))}`, key, MAX_KEY_LENGTH);
      if (typeof value === 'string' && value.length <= MAX_VALUE_LENGTH) return { key, stringValue: value };
      if (Number.isSafeInteger(value)) return { key, intValue: value };
      throw new TypeError(
        `heap-labels: ${where}: attribute ${JSON.stringify(key)} must be a string of at most ${MAX_VALUE_LENGTH} characters or a safe integer`,
      );
    });
  }
  return out;
}

function defaultServiceName(env = process.env) {
  const fromEnv = env.OTEL_SERVICE_NAME;
  if (typeof fromEnv === 'string' && fromEnv.length > 0 && fromEnv.length <= MAX_VALUE_LENGTH) return fromEnv;
  return `unknown_service:${path.basename(process.execPath)}`;
}

// The native options ({ resource, scopeVersion }) of validated options. `thisProcess`: the
// profile is this process's (false for a file converted by the CLI: its process is another).
function nativeOtlpOptions(checked = {}, { thisProcess = true } = {}) {
  const resource = new Map([['service.name', { stringValue: checked.serviceName ?? defaultServiceName() }]]);
  if (thisProcess) {
    resource.set('process.pid', { intValue: process.pid });
    resource.set('process.executable.name', { stringValue: path.basename(process.execPath) });
    resource.set('process.runtime.name', { stringValue: 'nodejs' });
    resource.set('process.runtime.version', { stringValue: process.versions.node });
    resource.set('process.runtime.description', { stringValue: 'Node.js' });
    resource.set('host.name', { stringValue: os.hostname() });
  }
  for (const { key, ...value } of checked.attributes ?? []) resource.set(key, value);
  return {
    resource: [...resource].map(([key, value]) => ({ key, ...value })),
    scopeVersion: version,
  };
}

// Validated and filled in, in one step (toOtlp(options)).
function otlpOptions(options, where) {
  return nativeOtlpOptions(checkOtlpOptions(options, where));
}

module.exports = { checkOtlpOptions, nativeOtlpOptions, otlpOptions };
