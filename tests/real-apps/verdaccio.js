'use strict';
// verdaccio 6.10.4, the private npm registry of issue 26: express 4 (4.22.3 as its lockfile
// resolves), app-level middleware before routing (cors, logging, compression, JWT auth, JSON body
// parsing), an API router mounted at '/', the web UI's API router mounted at '/-/verdaccio/' whose
// routes are written with their full path (wrapPath: '/-/verdaccio/data' + path), a route with two
// paths (the sidebar) and a catch-all GET '/*'. Its bin runs its ESM build (build/lib/cli.mjs),
// which imports express through the ESM loader: instrumentation that only hooks require() misses
// it. Run by its CLI as `npm start` of a deployment project (verdaccio/package.json) with a config
// written here: no uplinks (offline), anonymous publishing, the per-IP rate limits raised above the
// traffic's rate.
//
// Templates, from verdaccio's source (build/api/endpoint/*.js, build/api/web/api/*.js and
// @verdaccio/middleware's api_urls.js / web-urls.js):
//   GET  /:package/:version?                     package metadata (PACKAGE_API_ENDPOINTS)
//   GET  /:package/-/:filename                   tarball
//   PUT  /:package/:_rev?/:revision?             publish (JSON body; an existing version: 409)
//   PUT  /-/package/:package/dist-tags/:tag      dist-tag (JSON body)
//   GET  /-/ping, /-/v1/search
//   GET  /-/verdaccio/data/packages              web API (mounted router, full-path routes)
//   GET  /-/verdaccio/data/sidebar/:package      one route of two paths (['.../:scope/:package', '.../:package'])
//   GET  /                                       the web UI (renderWebMiddleware)
//   GET  /*                                      the catch-all 404 of the app
// and a POST no route takes (404 from express's final handler): the unrouted bucket.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { realAppTest } = require('./harness');

const PKG = 'demo-pkg';
// A tarball of some size (its content is not read by the registry, its digest is).
const tarball = zlib.gzipSync(Buffer.from(JSON.stringify({ name: PKG, readme: 'x'.repeat(4096), data: Array.from({ length: 400 }, (_, i) => i * 7919) })));

function publishDocument(port, version) {
  const data = tarball.toString('base64');
  const file = `${PKG}-${version}.tgz`;
  return JSON.stringify({
    _id: PKG,
    name: PKG,
    description: 'a package of the real-apps traffic',
    'dist-tags': { latest: version },
    versions: {
      [version]: {
        name: PKG,
        version,
        description: 'a package of the real-apps traffic',
        readme: `# ${PKG}\n\n${'Some words. '.repeat(200)}`,
        dependencies: { lodash: '^4.17.21', express: '^4.22.0' },
        dist: {
          tarball: `http://127.0.0.1:${port}/${PKG}/-/${file}`,
          shasum: crypto.createHash('sha1').update(tarball).digest('hex'),
          integrity: `sha512-${crypto.createHash('sha512').update(tarball).digest('base64')}`,
        },
      },
    },
    readme: `# ${PKG}`,
    _attachments: { [file]: { content_type: 'application/octet-stream', data, length: tarball.length } },
  });
}

let appPort;
const json = { 'content-type': 'application/json' };

realAppTest({
  name: 'verdaccio',
  version: '6.10.4',
  project: path.join(__dirname, 'verdaccio'),
  frameworks: ['express'],
  prepare(runDir, port) {
    appPort = port;
    const limits = '{ windowMs: 1000, max: 1000000 }';
    fs.writeFileSync(
      path.join(runDir, 'config.yaml'),
      [
        `storage: ${path.join(runDir, 'storage')}`,
        'auth:',
        '  htpasswd:',
        `    file: ${path.join(runDir, 'htpasswd')}`,
        '    max_users: -1',
        'uplinks: {}',
        'packages:',
        "  '**':",
        '    access: $all',
        '    publish: $anonymous',
        '    unpublish: $anonymous',
        `userRateLimit: ${limits}`,
        `web: { rateLimit: ${limits} }`,
        'log: { type: stdout, format: pretty, level: http }',
        '',
      ].join('\n'),
    );
  },
  async setup(call) {
    for (const version of ['1.0.0', '1.1.0']) {
      const res = await call({ method: 'PUT', path: `/${PKG}`, headers: json, body: publishDocument(appPort, version) });
      if (res.status !== 201) throw new Error(`publishing ${PKG}@${version}: ${res.status} ${res.body}`);
    }
  },
  rate: 200,
  kinds: [
    { name: 'package metadata', weight: 22, path: `/${PKG}`, status: [200], template: '/:package/:version?' },
    { name: 'package version', weight: 5, path: `/${PKG}/1.1.0`, status: [200], template: '/:package/:version?' },
    { name: 'tarball', weight: 10, path: `/${PKG}/-/${PKG}-1.0.0.tgz`, status: [200], template: '/:package/-/:filename' },
    { name: 'ping', weight: 8, path: '/-/ping', status: [200], template: '/-/ping' },
    { name: 'search', weight: 8, path: `/-/v1/search?text=${PKG}&size=20`, status: [200], template: '/-/v1/search' },
    { name: 'web packages', weight: 8, path: '/-/verdaccio/data/packages', status: [200], template: '/-/verdaccio/data/packages' },
    { name: 'web sidebar', weight: 5, path: `/-/verdaccio/data/sidebar/${PKG}`, status: [200], template: '/-/verdaccio/data/sidebar/:package' },
    {
      name: 'dist-tag (JSON body)',
      weight: 8,
      method: 'PUT',
      path: (n) => `/-/package/${PKG}/dist-tags/tag${n % 20}`,
      headers: json,
      body: '"1.0.0"',
      status: [201],
      template: '/-/package/:package/dist-tags/:tag',
    },
    {
      name: 'publish an existing version (JSON body)',
      weight: 5,
      method: 'PUT',
      path: `/${PKG}`,
      headers: json,
      body: () => publishDocument(appPort, '1.0.0'),
      status: [409],
      template: '/:package/:_rev?/:revision?',
    },
    { name: 'unknown package (404)', weight: 7, path: (n) => `/no-such-package-${n % 50}`, status: [404], template: '/:package/:version?' },
    { name: 'unknown path (catch-all 404)', weight: 4, path: (n) => `/-/no/such/${n % 50}/path`, status: [404], template: '/*' },
    { name: 'no route (404)', weight: 6, method: 'POST', path: (n) => `/-/no-route/${n % 50}`, headers: json, body: '{"a":1}', status: [404], template: null },
    { name: 'web UI', weight: 4, path: '/', status: [200], template: '/' },
  ],
});
