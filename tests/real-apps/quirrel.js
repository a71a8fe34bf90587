'use strict';
// Quirrel 1.14.1, a job-queue server: fastify 4 (4.29.1 as its lockfile resolves), with
// encapsulated plugins registered under prefixes ('/queues', '/health', '/documentation' of
// @fastify/swagger-ui), JSON schema validation of bodies and params, @fastify/rate-limit and
// @fastify/cors before routing, and an in-memory Redis (ioredis-mock) when no REDIS_URL is set. Run
// by its CLI as `npm start` of a deployment project (quirrel/package.json: the development server on
// loopback, cron detection off) with DISABLE_TELEMETRY=1, its own switch for the Sentry and usage
// reports that would reach out to the network. Jobs are enqueued for 30 days ahead, so none runs.
//
// Templates, from Quirrel's source (dist/cjs/src/api/scheduler/index.js registers the plugins and
// their prefixes, routes/*.js their routes):
//   POST /queues/:endpoint          enqueue (JSON body, validated; a bad one: 400 from the schema)
//   GET  /queues/:endpoint          the queue's jobs
//   GET  /queues/:endpoint/:id      one job (404 when there is none)
//   GET  /queues/stats, /health     (the plugins' '/' and '/stats' under their prefix)
//   GET  /documentation/json        the OpenAPI document (@fastify/swagger-ui)
// and requests no route takes (fastify's 404 handler): the unrouted bucket.

const path = require('node:path');
const { realAppTest } = require('./harness');

// The queue: a job's endpoint is the URL Quirrel would call, URL-encoded into the path (the
// discard port: never called, the jobs are not due).
const QUEUE = encodeURIComponent('http://127.0.0.1:9/api/jobs/email');
const JOBS = 300;
const json = { 'content-type': 'application/json' };
const DAY = 24 * 3600 * 1000;

function job(n) {
  return JSON.stringify({
    id: `job-${n % JOBS}`,
    override: true,
    delay: 30 * DAY,
    retry: [1000, 10000],
    body: JSON.stringify({ to: `user${n}@example.invalid`, template: 'welcome', vars: { name: `User ${n}`, items: Array.from({ length: 20 }, (_, i) => `item-${i}`) } }),
  });
}

realAppTest({
  name: 'quirrel',
  version: '1.14.1',
  project: path.join(__dirname, 'quirrel'),
  frameworks: ['fastify'],
  env: { DISABLE_TELEMETRY: '1' },
  async setup(call) {
    for (let n = 0; n < JOBS; n++) {
      const res = await call({ method: 'POST', path: `/queues/${QUEUE}`, headers: json, body: job(n) });
      if (res.status !== 201) throw new Error(`enqueueing job ${n}: ${res.status} ${res.body}`);
    }
  },
  // Below Quirrel's own @fastify/rate-limit (10,000 requests a minute per client, its default):
  // at 200 a second an app that keeps up answers 429 to the rest of the minute.
  rate: 140,
  kinds: [
    { name: 'enqueue (JSON body)', weight: 30, method: 'POST', path: `/queues/${QUEUE}`, headers: json, body: job, status: [201], template: '/queues/:endpoint' },
    {
      name: 'enqueue, invalid body (400)',
      weight: 4,
      method: 'POST',
      path: `/queues/${QUEUE}`,
      headers: json,
      body: '{"delay":-1,"body":"x"}',
      status: [400],
      template: '/queues/:endpoint',
    },
    { name: 'job', weight: 20, path: (n) => `/queues/${QUEUE}/job-${(n * 7) % JOBS}`, status: [200], template: '/queues/:endpoint/:id' },
    { name: 'unknown job (404)', weight: 6, path: (n) => `/queues/${QUEUE}/missing-${n % 50}`, status: [404], template: '/queues/:endpoint/:id' },
    { name: 'queue', weight: 8, path: `/queues/${QUEUE}`, status: [200], template: '/queues/:endpoint' },
    { name: 'stats', weight: 6, path: '/queues/stats', status: [200], template: '/queues/stats' },
    { name: 'health', weight: 10, path: '/health', status: [200], template: '/health' },
    { name: 'OpenAPI document', weight: 4, path: '/documentation/json', status: [200], template: '/documentation/json' },
    { name: 'no route (404)', weight: 8, path: (n) => `/api/v2/no-such-route/${n % 50}`, status: [404], template: null },
    { name: 'no route, POST with a body (404)', weight: 4, method: 'POST', path: '/jobs', headers: json, body: job, status: [404], template: null },
  ],
});
