'use strict';
// S3rver 3.7.1, an S3 stand-in: koa 2 (2.16.4 as its lockfile resolves) with @koa/router 9.4.0;
// app-level middleware before routing (its request logger, a vhost rewrite of the path for
// bucket-in-the-host requests), router.use() layers by path ahead of the routes (CORS,
// authentication, the bucket check), and routes that dispatch on the query string. Run by its CLI
// as `npm start` of a deployment project (s3rver/package.json), its data in the run directory.
// Requests are path-style and unsigned (S3rver accepts anonymous requests). Objects are written
// under uploads/ and read under photos/: S3rver's file store answers a read racing a rewrite of the
// same object with a 500 or a cut response.
//
// Templates, from S3rver's source (lib/routes.js):
//   GET  /                   the buckets
//   GET  /:bucket            the objects (404 NoSuchBucket from the route when there is none)
//   POST /:bucket            ?delete: delete objects (XML body, parsed)
//   GET, HEAD, PUT /:bucket/:key+   an object (PUT: the body is the object; GET: 404 NoSuchKey)
// and a method no route takes on '/' (koa's 404): the unrouted bucket. S3rver's CORS layer,
// router.all('/:bucket/:key*') ahead of these routes, passes every request of the traffic on to its
// route: it is router middleware, never a template here (heap-labels/koa, lib/integrations/koa.js).

const path = require('node:path');
const { realAppTest } = require('./harness');

const BUCKET = 'assets';
const OBJECTS = 200;
// An object body of 8 KiB, different per object.
const objectBody = (n) => Buffer.from(`object ${n % OBJECTS}\n`.padEnd(8192, `line of object ${n % OBJECTS} `));
const text = { 'content-type': 'text/plain' };
const xml = { 'content-type': 'application/xml' };

function deleteRequest(n) {
  const keys = Array.from({ length: 10 }, (_, i) => `<Object><Key>gone/${n}/${i}</Key></Object>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>false</Quiet>${keys}</Delete>`;
}

realAppTest({
  name: 's3rver',
  version: '3.7.1',
  project: path.join(__dirname, 's3rver'),
  frameworks: ['koa', '@koa/router'],
  async setup(call) {
    const res = await call({ method: 'PUT', path: `/${BUCKET}` });
    if (res.status !== 200) throw new Error(`creating the bucket: ${res.status} ${res.body}`);
    for (let n = 0; n < OBJECTS; n++) {
      const put = await call({ method: 'PUT', path: `/${BUCKET}/photos/${n}.txt`, headers: text, body: objectBody(n) });
      if (put.status !== 200) throw new Error(`storing object ${n}: ${put.status} ${put.body}`);
    }
  },
  rate: 150,
  kinds: [
    { name: 'get object', weight: 28, path: (n) => `/${BUCKET}/photos/${(n * 7) % OBJECTS}.txt`, status: [200], template: '/:bucket/:key+' },
    { name: 'head object', weight: 6, method: 'HEAD', path: (n) => `/${BUCKET}/photos/${n % OBJECTS}.txt`, status: [200], template: '/:bucket/:key+' },
    { name: 'put object (body)', weight: 18, method: 'PUT', path: (n) => `/${BUCKET}/uploads/${n % OBJECTS}.txt`, headers: text, body: objectBody, status: [200], template: '/:bucket/:key+' },
    { name: 'list objects', weight: 10, path: `/${BUCKET}?prefix=photos/&max-keys=100`, status: [200], template: '/:bucket' },
    { name: 'list buckets', weight: 6, path: '/', status: [200], template: '/' },
    { name: 'delete objects (XML body)', weight: 8, method: 'POST', path: `/${BUCKET}?delete`, headers: xml, body: deleteRequest, status: [200], template: '/:bucket' },
    { name: 'unknown key (404)', weight: 10, path: (n) => `/${BUCKET}/missing/${n % 50}.txt`, status: [404], template: '/:bucket/:key+' },
    { name: 'unknown bucket (404)', weight: 6, path: (n) => `/no-such-bucket-${n % 50}`, status: [404], template: '/:bucket' },
    { name: 'no route (404)', weight: 8, method: 'PATCH', path: '/', headers: text, body: 'x', status: [404], template: null },
  ],
});
