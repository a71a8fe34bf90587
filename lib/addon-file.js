'use strict';
// Whether an addon file is a whole shared object for this process, checked before it is loaded.
//
// dlopen() maps the file's segments with mmap(): a file cut short (a partial download, a copy onto
// a full disk) maps without complaint, and the first touch of a page past its end raises SIGBUS,
// which kills the process before any JS error can be thrown. So the loader reads the ELF headers
// first and refuses a file whose headers describe more bytes than it has: every program header's
// file extent (the segments dlopen maps), every section's, and the section header table itself,
// which linkers write at the end of the file, so that any truncation of a linked file is caught.
// Class, byte order, type and machine are checked too, for a message that says what the file is.
//
// A few dozen lines over node:fs rather than an ELF package: the package's one dependency is
// node-gyp-build (5 KB, none of its own), and the fields read here are fixed by the ELF spec.
// Platforms whose addons are not ELF (macOS, Windows) are not checked.

const fs = require('node:fs');
const os = require('node:os');

const ELF_PLATFORMS = new Set(['linux', 'android', 'freebsd', 'openbsd', 'netbsd', 'sunos']);

// e_machine of each process.arch.
const MACHINES = { x64: 62, arm64: 183, ia32: 3, arm: 40, ppc64: 21, s390x: 22, riscv64: 243, loong64: 258 };

const ET_DYN = 3;
const SHT_NOBITS = 8;
const PN_XNUM = 0xffff;

// Field offsets per ELF class (1: 32-bit, 2: 64-bit): file header, program and section headers.
const LAYOUTS = {
  1: {
    word: 4,
    ehsize: 52,
    phoff: 28, shoff: 32, phentsize: 42, phnum: 44, shentsize: 46, shnum: 48,
    phdr: { size: 32, offset: 4, filesz: 16 },
    shdr: { size: 40, type: 4, offset: 16, bytes: 20, info: 28 },
  },
  2: {
    word: 8,
    ehsize: 64,
    phoff: 32, shoff: 40, phentsize: 54, phnum: 56, shentsize: 58, shnum: 60,
    phdr: { size: 56, offset: 8, filesz: 32 },
    shdr: { size: 64, type: 4, offset: 24, bytes: 32, info: 44 },
  },
};

class DamagedAddon extends Error {}

function reader(buf, littleEndian, word) {
  const u16 = (at) => (littleEndian ? buf.readUInt16LE(at) : buf.readUInt16BE(at));
  const u32 = (at) => (littleEndian ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
  // Offsets and sizes past 2^53 do not fit any real file: Infinity fails every extent check.
  const addr = (at) => {
    if (word === 4) return u32(at);
    const v = littleEndian ? buf.readBigUInt64LE(at) : buf.readBigUInt64BE(at);
    return v > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(v);
  };
  return { u16, u32, addr };
}

// Reads `length` bytes at `position`, which the caller has checked lie inside the file.
function readAt(fd, position, length) {
  const buf = Buffer.alloc(length);
  const n = fs.readSync(fd, buf, 0, length, position);
  if (n !== length) throw new DamagedAddon(`it changed while being read (${n} of ${length} bytes at ${position})`);
  return buf;
}

function checkElf(fd, size) {
  const need = (end, what) => {
    if (end > size) {
      throw new DamagedAddon(
        `it is cut short: ${size} bytes, but its ${what} reaches byte ${end} ` +
          '(a partial download or a full disk leaves such a file)',
      );
    }
  };
  need(16, 'ELF identification');
  const ident = readAt(fd, 0, 16);
  if (ident.readUInt32BE(0) !== 0x7f454c46) throw new DamagedAddon('it is not an ELF shared object (no ELF magic)');
  const layout = LAYOUTS[ident[4]];
  if (layout === undefined) throw new DamagedAddon(`it has an unknown ELF class ${ident[4]}`);
  if (ident[5] !== 1 && ident[5] !== 2) throw new DamagedAddon(`it has an unknown ELF byte order ${ident[5]}`);
  const littleEndian = ident[5] === 1;
  if (littleEndian !== (os.endianness() === 'LE')) {
    throw new DamagedAddon(`it is ${littleEndian ? 'little' : 'big'}-endian; this process is not`);
  }
  need(layout.ehsize, 'ELF header');
  const header = readAt(fd, 0, layout.ehsize);
  const h = reader(header, littleEndian, layout.word);
  if (h.u16(16) !== ET_DYN) throw new DamagedAddon(`it is not a shared object (ELF type ${h.u16(16)})`);
  const machine = MACHINES[process.arch];
  if (machine !== undefined && h.u16(18) !== machine) {
    throw new DamagedAddon(`it is built for ELF machine ${h.u16(18)}, this process is ${process.arch} (machine ${machine})`);
  }

  // The section header table, and through its entry 0 the counts that overflow the header's fields.
  const shoff = h.addr(layout.shoff);
  const shentsize = h.u16(layout.shentsize);
  let shnum = h.u16(layout.shnum);
  let phnum = h.u16(layout.phnum);
  let sections;
  if (shoff !== 0) {
    if (shentsize < layout.shdr.size) throw new DamagedAddon(`its section header size ${shentsize} is too small`);
    need(shoff + shentsize, 'section header table');
    const first = reader(readAt(fd, shoff, shentsize), littleEndian, layout.word);
    if (shnum === 0) shnum = first.addr(layout.shdr.bytes);
    if (phnum === PN_XNUM) phnum = first.u32(layout.shdr.info);
    need(shoff + shnum * shentsize, 'section header table');
    sections = readAt(fd, shoff, shnum * shentsize);
  }

  const phoff = h.addr(layout.phoff);
  const phentsize = h.u16(layout.phentsize);
  if (phnum === 0) throw new DamagedAddon('it has no program headers, so nothing to load');
  if (phentsize < layout.phdr.size) throw new DamagedAddon(`its program header size ${phentsize} is too small`);
  need(phoff + phnum * phentsize, 'program header table');
  const p = reader(readAt(fd, phoff, phnum * phentsize), littleEndian, layout.word);
  for (let i = 0; i < phnum; i++) {
    const at = i * phentsize;
    need(p.addr(at + layout.phdr.offset) + p.addr(at + layout.phdr.filesz), `segment ${i} (program header)`);
  }
  if (sections !== undefined) {
    const s = reader(sections, littleEndian, layout.word);
    for (let i = 0; i < shnum; i++) {
      const at = i * shentsize;
      if (s.u32(at + layout.shdr.type) === SHT_NOBITS) continue; // .bss and the like: no bytes in the file
      need(s.addr(at + layout.shdr.offset) + s.addr(at + layout.shdr.bytes), `section ${i}`);
    }
  }
}

// undefined when `file` can be handed to dlopen(); otherwise what is wrong with it, as a clause
// ("it is cut short: ...").
function addonFileProblem(file) {
  if (!ELF_PLATFORMS.has(process.platform)) return undefined;
  let fd;
  try {
    fd = fs.openSync(file, 'r');
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return 'it is not a regular file';
    checkElf(fd, stat.size);
    return undefined;
  } catch (err) {
    if (err instanceof DamagedAddon) return err.message;
    return `it cannot be read (${err.code ?? err.message})`;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

module.exports = { addonFileProblem };
