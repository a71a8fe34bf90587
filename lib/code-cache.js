'use strict';
// The preload's code cache: V8's compiled code of heap-labels' own modules, kept in one file per
// runtime so that the next start of the app deserializes it instead of parsing and compiling
// ~230 KB of JavaScript (docs/performance.md, "Start-up": about 28M instructions of an express
// app's start). It holds the package's code only, never the app's, and only the preload uses it
// (lib/cached-require.js).
//
// Trust. V8 deserializes a code cache without checking it (release builds verify no checksum), so
// a cache is code: it is read only from a directory that this process's user owns and nobody else
// can write to, from a regular file of that user, and only when its CRC-32 (computed by the addon)
// matches. The file also names the runtime it was made by (version, executable, flags): a cache of
// another runtime is never offered to V8, which would reject it on a version or flag mismatch
// anyway, but not when a patched and a stock executable of one version differ, and the package's
// version and location. Each module's entry names the source it was compiled from (its size and
// CRC-32); V8 itself checks only the source's length.
//
// Where: HEAP_LABELS_CODE_CACHE, an absolute directory, or `off`; by default
// <os.tmpdir()>/heap-labels-code-cache-<uid>, made with mode 0700. Off under coverage
// (NODE_V8_COVERAGE, --experimental-test-coverage): V8 collects block coverage only for code it
// compiles itself, not for code it deserializes. Nothing here throws into the
// app: a missing, foreign, damaged or stale file means compiling from source, as without a cache,
// and the file is written again after start-up.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ENV = 'HEAP_LABELS_CODE_CACHE';
const MAGIC = 0x43434c48; // 'HLCC' little-endian
const FORMAT = 2; // 2: entries name their source by size and CRC-32
const HEADER = 16; // magic, format, crc32 of the rest, index length
// Bounds of what is read: the whole lib/ compiles to about 1 MB of cache.
const MAX_FILE = 32 * 1024 * 1024;
const MAX_INDEX = 1024 * 1024;
// Cache files kept per directory (one per runtime and flags, e.g. a Node.js upgrade's old one and
// its new one); past it the least recently written go. Leftovers of interrupted writes go after
// an hour.
const MAX_FILES = 16;
const STALE_TMP_MS = 60 * 60 * 1000;
const NAME = /^code-cache-[0-9a-f]{8}\.bin(\.\d+\.[0-9a-f]{8}\.tmp)?$/;

// Where the cache lives: { dir } or { off: true } or { problem } (a value the preload reports).
function location(env) {
  const value = env[ENV];
  if (value === 'off' || underCoverage(env)) return { off: true };
  if (value !== undefined && value !== '') {
    if (!path.isAbsolute(value)) return { problem: `${ENV}=${JSON.stringify(value)} is neither an absolute directory nor off: the code cache is not used` };
    return { dir: value, chosen: true };
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  const tmp = os.tmpdir();
  // A relative TMPDIR would put the cache wherever the app was started.
  if (!path.isAbsolute(tmp)) return { off: true };
  return { dir: path.join(tmp, `heap-labels-code-cache-${uid}`) };
}

function underCoverage(env) {
  return (env.NODE_V8_COVERAGE ?? '') !== '' || process.execArgv.includes('--experimental-test-coverage');
}

// Why `stats` (of the cache directory or file) is not this user's own, or undefined.
function notOwn(stats) {
  if (typeof process.getuid === 'function' && stats.uid !== process.getuid()) return `owned by uid ${stats.uid}`;
  if ((stats.mode & 0o022) !== 0) return `writable by others (mode ${(stats.mode & 0o777).toString(8)})`;
  return undefined;
}

// Makes `dir` if missing; why it cannot hold a cache, or undefined.
function dirProblem(dir) {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    if (err.code !== 'EEXIST') return `cannot be made (${err.code ?? err.message})`;
  }
  let stats;
  try {
    stats = fs.lstatSync(dir);
  } catch (err) {
    return `cannot be read (${err.code ?? err.message})`;
  }
  if (!stats.isDirectory()) return 'is not a directory';
  return notOwn(stats);
}

// FNV-1a of a short string: the file's name from its key (the key itself is inside the file).
function fnv1a(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}

// What a cache is valid for: this package (`pkg`: its version and lib/ directory), the runtime's
// executable and its flags: execArgv and NODE_OPTIONS, and V8's effective flags (`pkg.flags`, the
// hashes V8's cached data carries, which also see what an earlier preload set), which V8 compares
// only in part.
function runtimeKey(pkg) {
  let exe = '';
  try {
    const s = fs.statSync(process.execPath);
    exe = `${s.size}:${s.mtimeMs}:${s.ino}`;
  } catch {
    // An executable that cannot be read: the path and version still name it.
  }
  return [
    pkg.version,
    pkg.lib,
    process.version,
    process.versions.v8,
    process.arch,
    process.execPath,
    exe,
    process.execArgv.join(' '),
    process.env.NODE_OPTIONS ?? '',
    pkg.flags ?? '',
  ].join('\n');
}

function isEntry(e) {
  return (
    Array.isArray(e) &&
    e.length === 4 &&
    typeof e[0] === 'string' &&
    Number.isSafeInteger(e[1]) &&
    Number.isInteger(e[2]) &&
    e[2] >= 0 &&
    e[2] <= 0xffffffff &&
    Number.isSafeInteger(e[3]) &&
    e[3] > 0
  );
}

// The entries of a cache file's bytes: Map<relative path, { size, crc, data }>, or undefined
// when the bytes are not a whole, intact cache of `key`.
function parse(bytes, key, crc32) {
  if (bytes.length < HEADER || bytes.readUInt32LE(0) !== MAGIC || bytes.readUInt32LE(4) !== FORMAT) return undefined;
  if (crc32(bytes.subarray(12)) !== bytes.readUInt32LE(8)) return undefined;
  const indexLength = bytes.readUInt32LE(12);
  if (indexLength > MAX_INDEX || HEADER + indexLength > bytes.length) return undefined;
  let index;
  try {
    index = JSON.parse(bytes.toString('utf8', HEADER, HEADER + indexLength));
  } catch {
    return undefined;
  }
  if (index === null || index.key !== key || !Array.isArray(index.entries) || !index.entries.every(isEntry)) return undefined;
  const entries = new Map();
  let offset = HEADER + indexLength;
  for (const [file, size, crc, length] of index.entries) {
    if (offset + length > bytes.length) return undefined;
    entries.set(file, { size, crc, data: bytes.subarray(offset, offset + length) });
    offset += length;
  }
  return offset === bytes.length ? entries : undefined;
}

// The bytes of a cache file for `key` holding `entries` (as parse() returns them).
function serialize(entries, key, crc32) {
  const list = [...entries];
  const index = Buffer.from(JSON.stringify({ key, entries: list.map(([file, e]) => [file, e.size, e.crc, e.data.length]) }));
  const bytes = Buffer.concat([Buffer.alloc(HEADER), index, ...list.map(([, e]) => e.data)]);
  bytes.writeUInt32LE(MAGIC, 0);
  bytes.writeUInt32LE(FORMAT, 4);
  bytes.writeUInt32LE(index.length, 12);
  bytes.writeUInt32LE(crc32(bytes.subarray(12)), 8);
  return bytes;
}

// Reads `file` if it is a regular file of this user's, at most MAX_FILE bytes; else undefined.
function readOwnFile(file) {
  let fd;
  try {
    // Not following a link, and not waiting on a FIFO put in its place.
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0));
    const stats = fs.fstatSync(fd);
    if (!stats.isFile() || stats.size > MAX_FILE || notOwn(stats) !== undefined) return undefined;
    const bytes = Buffer.allocUnsafe(stats.size);
    let read = 0;
    while (read < bytes.length) {
      const n = fs.readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) return undefined;
      read += n;
    }
    return bytes;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

// The cache of this runtime and package (`pkg`: { version, lib }) in `dir`: { file, key, entries }
// (entries empty when there is none yet or it cannot be used).
function open(dir, pkg, crc32) {
  const key = runtimeKey(pkg);
  const file = path.join(dir, `code-cache-${fnv1a(key)}.bin`);
  const bytes = readOwnFile(file);
  const entries = (bytes !== undefined && parse(bytes, key, crc32)) || new Map();
  return { file, key, entries };
}

// Replaces the cache file atomically (a reader sees the old file or the new one, never part of
// one); false when it could not be written (a full disk, a read-only directory).
function write(cache, entries, crc32) {
  const bytes = serialize(entries, cache.key, crc32);
  if (bytes.length > MAX_FILE) return false;
  // Processes of containers sharing the directory can have one pid (1): the random part keeps
  // their temporary files apart, and a file is removed only by the process that made it.
  const suffix = Math.floor(Math.random() * 0x100000000)
    .toString(16)
    .padStart(8, '0');
  const tmp = `${cache.file}.${process.pid}.${suffix}.tmp`;
  let made = false;
  try {
    fs.writeFileSync(tmp, '', { mode: 0o600, flag: 'wx' });
    made = true;
    fs.writeFileSync(tmp, bytes);
    fs.renameSync(tmp, cache.file);
  } catch {
    try {
      if (made) fs.unlinkSync(tmp);
    } catch {
      // Gone already, or the directory stopped being writable: prune() removes it later.
    }
    return false;
  }
  try {
    prune(path.dirname(cache.file));
  } catch {
    // Pruning is housekeeping: the cache just written stands.
  }
  return true;
}

// Removes the directory's cache files past MAX_FILES (oldest first) and old temporary files; only
// files of this module's own names.
function prune(dir) {
  const now = Date.now();
  const caches = [];
  for (const name of fs.readdirSync(dir)) {
    if (!NAME.test(name)) continue;
    const file = path.join(dir, name);
    let stats;
    try {
      stats = fs.lstatSync(file);
    } catch {
      continue;
    }
    if (name.endsWith('.tmp')) {
      if (now - stats.mtimeMs > STALE_TMP_MS) fs.rmSync(file, { force: true });
    } else {
      caches.push({ file, mtimeMs: stats.mtimeMs });
    }
  }
  caches.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const { file } of caches.slice(MAX_FILES)) fs.rmSync(file, { force: true });
}

module.exports = { ENV, MAX_FILES, location, dirProblem, runtimeKey, open, write, parse, serialize };
