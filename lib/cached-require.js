// @ts-check
'use strict';
// How the preload loads heap-labels' own modules: with V8's code cache (lib/code-cache.js).
//
// Node.js 22 has no code cache for chosen modules (its compile cache, module.enableCompileCache, is
// one switch for every module of the process, the app's included), so the preload loads the
// package's lib/ files itself, the way Node.js's CommonJS loader does: a Module registered in
// require.cache under the file's path before it runs (so `require('heap-labels')` from the app, or
// a cycle, finds the same exports), the same wrapper and arguments, a `require` that loads
// lib/ files the same way and hands everything else (node: modules, packages, JSON) to the
// module's own require. What differs is only where the compiled code comes from: a vm.Script with
// the cached data of the file, when the cache has an entry for this very source.
//
// After start-up (WRITE_AFTER_MS, or the process's exit if sooner), once the modules that start-up
// runs are compiled, the cache is written again if it lacked or could not use a module's entry
// (entries of modules this process did not load are kept), and released. The addon is loaded first, by Node.js's loader: its CRC-32 checks the
// cache before V8 sees it.

const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const Module = require('node:module');

/**
 * The parts of Node.js's CommonJS loader this file uses, which @types/node does not declare.
 * @typedef {typeof Module & {
 *   _cache: Record<string, Module | undefined>,
 *   _nodeModulePaths(dir: string): string[],
 *   _resolveFilename(id: string, parent: Module, isMain: boolean, options?: { paths?: string[] }): string,
 *   _resolveLookupPaths(id: string, parent: Module): string[] | null,
 * }} CommonJsLoader
 */
const Loader = /** @type {CommonJsLoader} */ (Module);
const codeCache = require('./code-cache');
const { published } = require('./instance-key');

const LIB = __dirname;
// Long enough for an app's start-up (its framework loading, which compiles the integrations),
// short enough to be written before most processes that start and stop (a CLI) end.
const WRITE_AFTER_MS = 1000;

// Two scripts of one length: V8 checks cached data against the source's length only, so data made
// from the first at start-up is accepted for the second (which is compiled, never run) exactly when
// V8's flags are still those of start-up. Two, because V8's own compilation cache would answer the
// first one's source without looking at the data.
const FLAGS_PROBE = ["void 'heap-labels flags probe A'", "void 'heap-labels flags probe B'"];
// The bytes of V8's cached data header that hold its version, source and flag hashes (after a
// 4-byte magic number; the same on V8 12.4, 13.6 and 14): what names the flags in the cache's key.
// Were a later V8 to move its flag hash, the key would only stop telling flag settings apart; the
// probe above still keeps data made under other flags out of the file.
const FLAGS_HASHES = [4, 16];

function wrap(source) {
  return `(function (exports, require, module, __filename, __dirname) { ${source}\n});`;
}

// Undoes a failed load as Node.js's loader does: the next require() of the file tries it again.
function forget(mod, parent) {
  delete Loader._cache[mod.filename];
  const children = parent?.children;
  const at = Array.isArray(children) ? children.indexOf(mod) : -1;
  if (at !== -1) children.splice(at, 1);
}

class CachedLoader {
  constructor(cache, crc32, flagsProbe) {
    this.cache = cache;
    this.crc32 = crc32;
    // relative path -> { size, crc, script } of the modules compiled during start-up.
    this.compiled = new Map();
    this.stale = false;
    // Start-up is over: the cache has been written if it needed to be, and what it held is
    // released (it is read once per process). Modules loaded later (the endpoint at its first
    // scrape) compile from source.
    this.settled = false;
    this.settle = () => this.finish();
    setTimeout(this.settle, WRITE_AFTER_MS).unref();
    // What happened, for tests and the benchmark: modules loaded with an accepted cache entry,
    // without one, and entries V8 rejected; whether a cache file was written.
    this.stats = { hits: 0, misses: 0, rejected: 0, written: false, flagsChanged: false };
    this.flagsProbe = flagsProbe;
  }

  // The exports of lib/ module `filename` (absolute), loaded as Node.js's require would.
  load(filename, parent) {
    // A module being loaded (a cycle) or only registered (Node.js's ESM loader registers every
    // CommonJS file of an app's import graph before it runs any) is Node.js's loader's to finish.
    const known = Loader._cache[filename];
    if (known !== undefined) return known.loaded ? known.exports : parent.require(filename);
    const mod = new Module(filename, parent);
    mod.filename = filename;
    mod.paths = Loader._nodeModulePaths(path.dirname(filename));
    Loader._cache[filename] = mod;
    let ok = false;
    try {
      this.run(mod);
      ok = true;
    } finally {
      if (!ok) forget(mod, parent);
    }
    mod.loaded = true;
    return mod.exports;
  }

  run(mod) {
    const filename = mod.filename;
    const bytes = fs.readFileSync(filename);
    // The entry is used only for this very source: its size and CRC-32 (an mtime proves nothing:
    // `cp -a`, Docker's COPY and Nix keep them), which V8 would not check (it compares lengths).
    const crc = this.crc32(bytes);
    const relative = filename.slice(LIB.length + 1);
    const entry = this.cache.entries.get(relative);
    const usable = entry !== undefined && entry.size === bytes.length && entry.crc === crc;
    const script = new vm.Script(wrap(bytes.toString('utf8')), { filename, cachedData: usable ? entry.data : undefined });
    if (!this.settled) {
      if (!usable) this.stats.misses++;
      else if (script.cachedDataRejected) this.stats.rejected++;
      else this.stats.hits++;
      if (!usable || script.cachedDataRejected) this.markStale();
      this.compiled.set(relative, { size: bytes.length, crc, script });
    }
    const fn = script.runInThisContext();
    fn.call(mod.exports, mod.exports, this.requireFor(mod), mod, filename, path.dirname(filename));
  }

  requireFor(mod) {
    const dir = path.dirname(mod.filename);
    const require = (id) => {
      if (typeof id === 'string' && id.startsWith('.')) {
        // lib/ holds no file without an extension, so a module loaded already under `<id>.js` is
        // what Node.js's resolution finds first; anything else is resolved the whole way.
        const known = Loader._cache[path.resolve(dir, `${id}.js`)];
        if (known?.loaded) return known.exports;
        const filename = Loader._resolveFilename(id, mod, false);
        if (filename.endsWith('.js') && filename.startsWith(LIB + path.sep)) return this.load(filename, mod);
      }
      return mod.require(id);
    };
    require.resolve = (id, options) => Loader._resolveFilename(id, mod, false, options);
    require.resolve.paths = (id) => Loader._resolveLookupPaths(id, mod);
    require.cache = Loader._cache;
    require.main = process.mainModule;
    return require;
  }

  markStale() {
    if (this.stale) return;
    this.stale = true;
    // A process that ends before start-up is over (a CLI, a test) writes it as it exits.
    process.once('exit', this.settle);
  }

  finish() {
    if (this.settled) return;
    this.settled = true;
    process.removeListener('exit', this.settle);
    if (this.stale) {
      // Data made after the app changed V8's flags (v8.setFlagsFromString) would be rejected at
      // every next start, each one compiling and writing it again: written only while they hold.
      this.stats.flagsChanged = new vm.Script(FLAGS_PROBE[1], { cachedData: this.flagsProbe }).cachedDataRejected === true;
      if (!this.stats.flagsChanged) this.write();
    }
    this.cache.entries = new Map();
    this.compiled.clear();
  }

  // Writes the cache: this process's modules as compiled now, the other entries as they were.
  write() {
    try {
      // Entries of files that are gone (a checkout's renamed module) are dropped.
      const entries = new Map([...this.cache.entries].filter(([relative]) => fs.existsSync(path.join(LIB, relative))));
      for (const [relative, m] of this.compiled) {
        entries.set(relative, { size: m.size, crc: m.crc, data: m.script.createCachedData() });
      }
      this.stats.written = codeCache.write(this.cache, entries, this.crc32);
    } catch {
      // The cache is an optimization: whatever fails here leaves the app as it is.
    }
  }
}

let loader;
let problem;

// Whether this load may go through the cache: a copy of the package loaded after the realm's
// instance (lib/instance.js) uses that instance and must not load an addon of its own, and a
// module system other than Node.js's own (Jest's sandbox: `parent` is its own object, the code runs
// in another realm) keeps its own registry, which this loader, running code in the main context
// and registering it in Node.js's require.cache, would bypass.
function cacheable(parent) {
  return (
    published() === undefined &&
    Object.getPrototypeOf(Module.prototype) === Object.prototype &&
    parent instanceof Module &&
    Loader._cache[parent.filename] === parent
  );
}

// The loader of this process, or undefined when the code cache is off or unusable (problem() says
// why when it is something the operator set).
function loaderFor(env) {
  if (loader !== undefined || problem !== undefined) return loader;
  const where = codeCache.location(env);
  if (where.off) return undefined;
  if (where.problem !== undefined) {
    problem = where.problem;
    return undefined;
  }
  const dirProblem = codeCache.dirProblem(where.dir);
  if (dirProblem !== undefined) {
    // The default directory being unusable (a read-only /tmp) is not the operator's doing.
    if (where.chosen) problem = `${codeCache.ENV}: ${where.dir} ${dirProblem}: the code cache is not used`;
    return undefined;
  }
  // Loaded by Node.js's loader: the addon (for its CRC-32) checks the cache before V8 sees it. If
  // it cannot load, the preload loads without the cache and reports the addon's error itself.
  const { native } = require('./native');
  // An addon built before crc32 (a stale build/, an older prebuild named by HEAP_LABELS_PREBUILD).
  if (typeof native.crc32 !== 'function') return undefined;
  const crc32 = (bytes) => native.crc32(bytes);
  const { version } = require('../package.json');
  // V8's flags as they are now (the hash its cached data carries): a preload before this one that
  // changes them on some starts and not others gets a file per setting, instead of rejecting and
  // rewriting one file at each switch.
  const flagsProbe = new vm.Script(FLAGS_PROBE[0]).createCachedData();
  const flags = flagsProbe.subarray(FLAGS_HASHES[0], FLAGS_HASHES[1]).toString('hex');
  loader = new CachedLoader(codeCache.open(where.dir, { version, lib: LIB, flags }, crc32), crc32, flagsProbe);
  return loader;
}

// The exports of lib/ module `relative` for the preload, whose module and require() are `parent`
// and `parentRequire`: through the code cache when it is on and can be used, else through
// `parentRequire` (the module system that loaded the preload), with the same result.
function requireLib(relative, parent, parentRequire, env = process.env) {
  const filename = path.join(LIB, relative);
  let cached;
  try {
    cached = cacheable(parent) ? loaderFor(env) : undefined;
  } catch {
    // No addon, an unreadable cache: the cache is an optimization.
  }
  return cached !== undefined ? cached.load(filename, parent) : parentRequire(filename);
}

module.exports = {
  requireLib,
  problem: () => problem,
  stats: () => loader?.stats,
};
