'use strict';
// The route label of a request to a plain node:http, https or http2 server, which has no router
// to name its route: the method and a normalised path, 'GET /users/:int'. Raw identifiers never
// become label values: a path segment that looks like one is replaced by a placeholder, and the
// query string and fragment are dropped. What is left (words, slugs) is bounded by the labeler's
// maxRoutes guard (lib/integrations/route-labels.js): past it, new values share the bucket.
//
// A segment is replaced when it
//   is all digits                                         -> :int   (/orders/1234)
//   is a UUID                                             -> :uuid
//   is hexadecimal with a digit, 6 characters or more     -> :hex   (hashes, ObjectIds)
//   is longer than 20 characters, or has a character outside
//     A-Z a-z 0-9 . _ ~ - (percent-encoding, @, :, +, =, ...) -> :str   (tokens, e-mails, names)
//   has any other digit, except an API version (v1, v2.1)  -> :id    (u_8f3k2, 2024-01-02, app.3f2a.js)
// Other segments (words and slugs: /users, /posts/hello-world) are kept. Empty segments (a
// trailing slash, '//') are kept as they are. Past MAX_SEGMENTS segments the rest is '/*'. The
// method is one of node:http's METHODS (HTTP/2 takes any token: others are '_OTHER'). A target
// not in origin form: '*' stays '*', an absolute URL is reduced to its path, anything else
// (CONNECT's host:port) is ':authority'.


const MAX_SEGMENTS = 8;
const MAX_PLAIN_SEGMENT = 20;
// node:http's METHODS, made a set at the first request (node:http is loaded by then; loading it
// here would cost every process that serves nothing its start-up instructions).
let knownMethods;

const ALL_DIGITS = /^[0-9]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX = /^(?=[a-f]*[0-9])[0-9a-f]{6,}$/i;
const PLAIN = /^[A-Za-z0-9._~-]*$/;
const DIGIT = /[0-9]/;
const API_VERSION = /^v[0-9]{1,3}(\.[0-9]{1,3})?$/i;
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

function normaliseSegment(segment) {
  if (segment === '') return segment;
  if (ALL_DIGITS.test(segment)) return ':int';
  if (segment.length === 36 && UUID.test(segment)) return ':uuid';
  if (HEX.test(segment)) return ':hex';
  if (segment.length > MAX_PLAIN_SEGMENT || !PLAIN.test(segment)) return ':str';
  if (DIGIT.test(segment) && !API_VERSION.test(segment)) return ':id';
  return segment;
}

// The path of a request target, normalised as above ('/users/:int').
function normalisePath(target) {
  if (typeof target !== 'string' || target === '') return '/';
  if (target === '*') return '*';
  let path = target;
  if (path[0] !== '/') {
    const absolute = ABSOLUTE.exec(path);
    if (absolute === null) return ':authority';
    path = path.slice(absolute[0].length) || '/';
    if (path[0] !== '/') path = `/${path}`;
  }
  const end = path.search(/[?#]/);
  if (end !== -1) path = path.slice(0, end);
  let out = '';
  let at = 1; // after the leading '/'
  for (let count = 0; ; count++) {
    if (count === MAX_SEGMENTS) return `${out}/*`;
    const next = path.indexOf('/', at);
    const segment = next === -1 ? path.slice(at) : path.slice(at, next);
    out += `/${normaliseSegment(segment)}`;
    if (next === -1) return out;
    at = next + 1;
  }
}

// The fallback route label value of a request: 'GET /users/:int'.
function fallbackRoute(method, target) {
  const name = typeof method === 'string' && (knownMethods ??= new Set(require('node:http').METHODS)).has(method) ? method : '_OTHER';
  return `${name} ${normalisePath(target)}`;
}

module.exports = { fallbackRoute, normalisePath, MAX_SEGMENTS };
