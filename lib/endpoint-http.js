// @ts-check
'use strict';
// What the agent's HTTP routes share (lib/endpoint.js: the profiles; lib/retainers-endpoint.js:
// retainers per label): the bearer token check, the query of a request target, and the answers.
// With a token, requests must send `Authorization: Bearer <token>`; tokens are compared as SHA-256
// digests with crypto.timingSafeEqual (constant time, whatever the lengths).

// Loaded when a token is first digested (creating a handler with a token), not with the package:
// a Node.js built without crypto can still profile, and a token there fails when it is configured.
let crypto;
const cryptoModule = () => (crypto ??= require('node:crypto'));

// The header that says which process answered (a service runs as several: launcher, primary,
// workers).
const PID_HEADER = 'x-heap-labels-pid';

function digest(text) {
  return cryptoModule().createHash('sha256').update(text, 'utf8').digest();
}

// Whether the request carries the token (constant-time comparison of digests).
function authorized(req, tokenDigest) {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return false;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  const given = digest(m ? m[1] : '');
  // Compare even when the header is malformed, so timing does not tell which check failed.
  return cryptoModule().timingSafeEqual(given, tokenDigest) && m !== null;
}

// '1'/'true' -> true, '0'/'false'/absent -> false, anything else: an error message.
function flag(params, name) {
  const value = params.get(name);
  if (value === null || value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new RangeError(`query parameter ${name} must be 0 or 1, got ${JSON.stringify(value)}`);
}

// The query of a request target ('' when none). URLSearchParams never throws, whatever the text
// (new URL() does, on "//" and other targets it reads as an authority).
function queryOf(target) {
  const url = typeof target === 'string' ? target : '';
  const start = url.indexOf('?');
  if (start === -1) return new URLSearchParams();
  const end = url.indexOf('#', start);
  return new URLSearchParams(end === -1 ? url.slice(start + 1) : url.slice(start + 1, end));
}

function send(res, status, body, headers = {}) {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store', ...headers });
  res.end(body);
}

function sendText(res, status, text, headers) {
  send(res, status, text, { 'content-type': 'text/plain; charset=utf-8', ...headers });
}

// The answers before any work: 405 for other methods than GET and HEAD, 401 without the token.
// Returns whether the request may go on.
function admitted(req, res, tokenDigest) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendText(res, 405, 'heap-labels: use GET\n', { allow: 'GET, HEAD' });
    return false;
  }
  if (tokenDigest !== undefined && !authorized(req, tokenDigest)) {
    sendText(res, 401, 'heap-labels: missing or wrong bearer token\n', { 'www-authenticate': 'Bearer' });
    return false;
  }
  return true;
}

module.exports = { PID_HEADER, digest, flag, queryOf, send, sendText, admitted };
