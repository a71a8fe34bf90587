'use strict';
// Automatic route labels: the preload (heap-labels/register) and startAgent() label every
// incoming request by its route template with no change to the app, as APM agents instrument
// frameworks. On by default; HEAP_LABELS_ROUTES=off (option `routes: false`) turns it off.
//
//   express 4, 5   module patched as it loads (module-loads.js, express.js)   route template
//   koa 2, 3       module patched as it loads (module-loads.js, koa.js)       @koa/router template
//   fastify 4, 5   each instance from 'fastify.initialization' (fastify.js)    route template
//   NestJS         through the express or fastify it runs on                  route template
//   node:http, https, http2 servers no framework serves (request-start.js)     'GET /users/:int'
//
// Framework requests start with the bucket value '(unmatched)' (every request starts under its
// own labels: request-start.js), then get the route template once routing knows it (the
// frameworks' own integrations, lib/integrations/, which heap-labels/express, /koa and /fastify
// share: an app that also calls them gets its options, nothing is installed twice). Plain
// servers get the method and normalised path (fallback-route.js). Both labelers have the
// integrations' defaults: key 'route', at most maxRoutes (1000) distinct values each, later ones
// share the bucket.
//
// Rules: a framework version outside the supported majors is left alone, with one stderr line
// saying so (its servers get the fallback label); nothing here throws into the app: every hook
// body is guarded, and a bug degrades to "not labeled" with one stderr line; responses are never
// touched. One stderr line at start says what is instrumented, and one line per framework version
// as it loads later. Instrumentation is per realm (one instance of the package, lib/instance.js)
// and starts once; stopping the agent stops it: the channels are unsubscribed and the frameworks
// already patched stop labeling (their hooks check `automatic.on`), though their patches stay.

const { createRouteLabeler } = require('../integrations/route-labels');
const { watchModuleLoads } = require('./module-loads');
const { watchRequestStarts } = require('./request-start');
const { packageOf, majorOf } = require('./package-of');
const servers = require('./servers');
const express = require('./express');
const koa = require('./koa');
const fastify = require('./fastify');

const WHERE = 'heap-labels (automatic route labels)';
const FRAMEWORKS = [express, koa, fastify];

let running; // this realm's Instrumentation, while it runs
let automatic; // what the patched frameworks' hooks read: one per realm, kept across restarts
let frameworkLabeler;
let fallbackLabeler;

class Instrumentation {
  #log;
  #said = new Set(); // 'express 5.3.0', ...: one line each
  #failed = false;
  #stops = [];
  #starting = true;
  #initial = []; // frameworks found loaded when it started

  constructor(log) {
    this.#log = log;
    const failed = (error) => this.#fail(error);
    // What the integrations' automatic hooks read (lib/integrations/*.js: instrument*()). A module
    // patched once keeps this object, so it is the realm's, switched on and off with the agent.
    // The labelers are made on first use (a framework's app or a request), when node:http is
    // loaded already (lib/integrations/route-labels.js).
    automatic ??= {
      on: false,
      get labeler() {
        return (frameworkLabeler ??= createRouteLabeler(undefined, WHERE, true));
      },
      failed: undefined,
      onApp: (app) => servers.markFrameworkListener(app, servers.EXPRESS),
      onListener: (listener) => servers.markFrameworkListener(listener, servers.KOA),
    };
    this.automatic = automatic;
    automatic.failed = failed;
    automatic.on = true;
    const labelers = {
      get framework() {
        return automatic.labeler;
      },
      get fallback() {
        return (fallbackLabeler ??= createRouteLabeler(undefined, `${WHERE}, node:http fallback`));
      },
    };
    try {
      this.#stops.push(
        watchModuleLoads({
          recognise: (exports) => FRAMEWORKS.find((framework) => framework.recognise(exports)),
          found: (framework, exports, filename) => this.#found(framework, exports, filename),
          failed,
        }),
      );
      this.#stops.push(
        fastify.watch(this.automatic, {
          admit: (version) => this.#admit(fastify, version, undefined),
          done: (version) => this.#instrumented(fastify, version),
        }),
      );
      this.#stops.push(watchRequestStarts({ labelers, failed }));
    } catch (error) {
      this.stop();
      throw error;
    }
    this.#starting = false;
    const now = this.#initial.length ? ` (loaded already: ${this.#initial.join(', ')})` : '';
    this.#say(
      'start',
      `labeling requests by route template: express 4-5, fastify 4-5, koa 2-3 with @koa/router, ` +
        `NestJS on express or fastify, as they load${now}; other node:http/https/http2 servers by ` +
        `method and normalised path ('GET /users/:int'); HEAP_LABELS_ROUTES=off (option routes: false) ` +
        'turns this off',
    );
  }

  // A framework module the app loaded (module-loads.js).
  #found(framework, exports, filename) {
    const pkg = packageOf(filename);
    // The shape matched, but another package (a fork, a look-alike) is not this framework.
    if (pkg !== undefined && pkg.name !== framework.name) return;
    const version = pkg === undefined ? undefined : pkg.version;
    if (!this.#admit(framework, version, pkg && pkg.dir)) return;
    framework.instrument(exports, this.automatic);
    this.#instrumented(framework, version);
  }

  // Whether `version` of `framework` is to be instrumented; when not, says so once.
  #admit(framework, version, dir) {
    const major = typeof version === 'string' ? majorOf(version) : NaN;
    if (framework.majors.includes(major)) return true;
    const name = `${framework.name} ${version ?? '(version unknown)'}`;
    const range = framework.majors.map((m) => `${m}.x`).join(', ');
    this.#say(
      name,
      `${name}${dir ? ` at ${dir}` : ''} is not a supported version (${range}): left alone, its ` +
        'servers get the node:http fallback label',
    );
    return false;
  }

  // Says once per version that `framework` is instrumented (in the start line while starting).
  #instrumented(framework, version) {
    const name = `${framework.name} ${version}`;
    if (this.#starting) {
      if (!this.#said.has(name)) this.#initial.push(name);
      this.#said.add(name);
    } else {
      this.#say(name, `labeling ${name} requests by route template`);
    }
  }

  #say(what, message) {
    if (this.#said.has(what)) return;
    this.#said.add(what);
    this.#log(message);
  }

  #fail(error) {
    if (this.#failed) return;
    this.#failed = true;
    const where = error && typeof error.stack === 'string' ? error.stack.split('\n').slice(0, 2).join(' ') : String(error);
    this.#log(`route labels: an instrumentation hook failed, some requests go unlabeled (please report): ${where}`);
  }

  stop() {
    this.automatic.on = false;
    for (const stop of this.#stops.splice(0)) {
      try {
        stop();
      } catch {
        // Unsubscribing cannot fail in a way the app should see.
      }
    }
    if (running === this) running = undefined;
  }
}

// Starts the automatic route labels of this realm (once: a second call while it runs returns
// the running one). `log(message)` writes one stderr line.
function startInstrumentation(log) {
  if (running === undefined) running = new Instrumentation(log);
  return running;
}

module.exports = { startInstrumentation };
