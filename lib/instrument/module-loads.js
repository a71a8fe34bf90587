'use strict';
// Framework modules as the app loads them, CommonJS and ESM apps alike, from the tracing channel
// Node.js publishes around every CommonJS load: 'module.require' (diagnostics_channel; its `end`
// event carries the loaded module's exports as `result`). No loader hook, no wrapper module, no
// change to how anything loads: the framework's own exports object is patched in place
// (frameworks.js says how), so a copy that another tool (OpenTelemetry's require-in-the-middle
// or import-in-the-middle) patches as well keeps both patches.
//
// Why this channel (measured on Node.js 22.22.2, 24.22.3 and 26.12.1; docs/architecture.md,
// "Automatic route labels", has the table):
// - It fires for `require('express')` and for an ESM app's `import express from 'express'` alike:
//   Node.js loads a CommonJS module imported from ESM through the same traced CommonJS loader
//   (then `id` is the module's absolute path). Every framework covered here is CommonJS
//   (koa 3's ESM entry imports its CommonJS lib/application.js), and NestJS loads them too.
// - module.registerHooks() (synchronous, in-thread) sees both as well, but only as source text:
//   getting at the exports means rewriting the framework's source, and on 22.22.2 merely
//   registering a pass-through load hook breaks an ESM app that imports express
//   (ERR_VM_MODULE_LINK_FAILURE; nodejs/node#59929, fixed in 22.22.3).
// - require-in-the-middle hooks Module.prototype.require: it never sees an ESM app's imports.
//   import-in-the-middle sees them, but needs module.register()'s loader thread on 22.22.2
//   (+~19 MB, ~0.1-0.3 s per start; deprecated on 26, with a warning printed to the app's stderr)
//   and replaces each hooked module by a generated wrapper.
//
// Frameworks loaded before the watch starts (startAgent() called after the app's imports) are
// found in require.cache. Recognition is by the shape of the exports (frameworks.js), then the
// package.json above the file names the package and its version: the alias an app installs it
// under ("express4": npm:express@4) does not matter. A given exports object is considered once.

const dc = require('node:diagnostics_channel');
const path = require('node:path');

// `recognise(exports)`: the framework whose exports these are, or undefined (cheap: called for
// every function a module exports). `found(framework, exports, filename)`: called once per
// recognised exports object (filename undefined when the file is not known). `failed(error)`:
// reports a bug here (the module is then left alone). Returns the function that stops watching.
function watchModuleLoads({ recognise, found, failed }) {
  const seen = new WeakSet();

  function consider(exports, filename) {
    // Frameworks export a function (a factory or a class); most modules export an object.
    if (typeof exports !== 'function' || seen.has(exports)) return;
    seen.add(exports);
    const framework = recognise(exports);
    if (framework !== undefined) found(framework, exports, filename ?? filenameOf(exports));
  }

  const handlers = {
    end(context) {
      try {
        const id = context.id;
        consider(context.result, typeof id === 'string' && path.isAbsolute(id) ? id : undefined);
      } catch (error) {
        failed(error);
      }
    },
  };

  for (const filename of Object.keys(require.cache)) {
    try {
      const module = require.cache[filename];
      if (module !== undefined && module.loaded) consider(module.exports, filename);
    } catch (error) {
      failed(error);
    }
  }
  const channel = dc.tracingChannel('module.require');
  channel.subscribe(handlers);
  return function unwatch() {
    channel.unsubscribe(handlers);
  };
}

// The file of a loaded CommonJS module whose exports are `exports` (once per framework copy).
function filenameOf(exports) {
  for (const filename of Object.keys(require.cache)) {
    if (require.cache[filename]?.exports === exports) return filename;
  }
  return undefined;
}

module.exports = { watchModuleLoads };
