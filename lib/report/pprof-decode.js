'use strict';
// A reader of pprof's profile.proto for files from anywhere (the CLI reads untrusted input): one
// pass over the bytes, no copies of them, every length checked against what is left, at most
// `maxElements` repeated elements (samples, locations, lines, functions, strings, labels, values,
// location ids) so that memory stays proportional to the input, and int64 fields read as signed
// (a negative sample value stays negative). Only the fields the report uses are kept; unknown
// fields are skipped, as protobuf requires.
//
// Why not a generic protobuf library: the reader must bound elements, sign int64 values and read
// 2M strings in a second or two (a generic decoder allocated a TextDecoder per string).

class DecodeError extends Error {}

class Reader {
  constructor(buf, budget) {
    this.buf = buf;
    this.budget = budget; // { left: elements still allowed }
    this.next = 0;
  }

  // One element of a repeated field: counts against the budget.
  element() {
    if (--this.budget.left < 0) throw new DecodeError(`more than ${this.budget.max} repeated elements`);
  }

  // A varint at `pos` (< end): its value as a Number (int64 two's complement read as signed); the
  // position after it in `this.next` (no array per varint: a profile has millions of them).
  varint(pos, end) {
    const buf = this.buf;
    let lo = 0;
    let shift = 0;
    // Low 28 bits in plain arithmetic (the usual case: ids, counts, string indices).
    for (; shift < 28; shift += 7) {
      if (pos >= end) throw new DecodeError('truncated varint');
      const b = buf[pos++];
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.next = pos;
        return lo >>> 0;
      }
    }
    // Longer: the rest in BigInt, up to 10 bytes (64 bits).
    let value = BigInt(lo >>> 0);
    let big = 28n;
    for (let i = 4; ; i++) {
      if (i >= 10) throw new DecodeError('varint longer than 10 bytes');
      if (pos >= end) throw new DecodeError('truncated varint');
      const b = buf[pos++];
      value |= BigInt(b & 0x7f) << big;
      big += 7n;
      if (b < 0x80) break;
    }
    // int64 is two's complement on the wire; beyond 2^53 a Number is the nearest value.
    this.next = pos;
    return Number(BigInt.asIntN(64, value));
  }

  // Calls field(number, wireType, valueOrStart, end) for each field of the message in [pos, end);
  // for length-delimited fields the value is the start of the bytes and `end` their end; for
  // varints the value itself.
  message(pos, end, field) {
    while (pos < end) {
      const key = this.varint(pos, end);
      pos = this.next;
      const number = Math.floor(key / 8);
      const wire = key & 7;
      if (number <= 0) throw new DecodeError(`field number ${number}`);
      switch (wire) {
        case 0: {
          const v = this.varint(pos, end);
          pos = this.next;
          field(number, 0, v, pos);
          break;
        }
        case 1:
          if (end - pos < 8) throw new DecodeError('truncated fixed64');
          pos += 8;
          break;
        case 2: {
          const length = this.varint(pos, end);
          pos = this.next;
          if (length < 0 || length > end - pos) throw new DecodeError('length beyond the end of its message');
          field(number, 2, pos, pos + length);
          pos += length;
          break;
        }
        case 5:
          if (end - pos < 4) throw new DecodeError('truncated fixed32');
          pos += 4;
          break;
        default:
          throw new DecodeError(`wire type ${wire} (groups or invalid)`);
      }
    }
    if (pos !== end) throw new DecodeError('message overruns its length');
  }

  // A repeated integer field, packed (wire 2) or not (wire 0), appended to `list`.
  integers(wire, value, end, list) {
    if (wire === 0) {
      this.element();
      list.push(value);
      return;
    }
    let pos = value;
    while (pos < end) {
      this.element();
      const v = this.varint(pos, end);
      pos = this.next;
      list.push(v);
    }
  }

  // A single integer field (wire 0), 0 when sent with another wire type (ignored, as protobuf does
  // for mismatched types it cannot read).
  static scalar(wire, value) {
    return wire === 0 ? value : 0;
  }
}

function decodeValueType(r, start, end) {
  const out = { type: 0, unit: 0 };
  r.message(start, end, (n, w, v) => {
    if (n === 1) out.type = Reader.scalar(w, v);
    else if (n === 2) out.unit = Reader.scalar(w, v);
  });
  return out;
}

function decodeLabel(r, start, end) {
  const out = { key: 0, str: 0, num: 0 };
  r.message(start, end, (n, w, v) => {
    if (n === 1) out.key = Reader.scalar(w, v);
    else if (n === 2) out.str = Reader.scalar(w, v);
    else if (n === 3) out.num = Reader.scalar(w, v);
  });
  return out;
}

function decodeSample(r, start, end) {
  const out = { locationId: [], value: [], label: [] };
  r.message(start, end, (n, w, v, e) => {
    if (n === 1) r.integers(w, v, e, out.locationId);
    else if (n === 2) r.integers(w, v, e, out.value);
    else if (n === 3 && w === 2) {
      r.element();
      out.label.push(decodeLabel(r, v, e));
    }
  });
  return out;
}

function decodeLine(r, start, end) {
  const out = { functionId: 0, line: 0 };
  r.message(start, end, (n, w, v) => {
    if (n === 1) out.functionId = Reader.scalar(w, v);
    else if (n === 2) out.line = Reader.scalar(w, v);
  });
  return out;
}

function decodeLocation(r, start, end) {
  const out = { id: 0, line: [] };
  r.message(start, end, (n, w, v, e) => {
    if (n === 1) out.id = Reader.scalar(w, v);
    else if (n === 4 && w === 2) {
      r.element();
      out.line.push(decodeLine(r, v, e));
    }
  });
  return out;
}

function decodeFunction(r, start, end) {
  const out = { id: 0, name: 0, filename: 0 };
  r.message(start, end, (n, w, v) => {
    if (n === 1) out.id = Reader.scalar(w, v);
    else if (n === 2) out.name = Reader.scalar(w, v);
    else if (n === 4) out.filename = Reader.scalar(w, v);
  });
  return out;
}

const newScratch = () => ({ locationId: [], value: [], label: [], labelCount: 0 });

// A sample decoded into `out` (reused from sample to sample by forEachSample): its arrays are
// truncated and refilled, its label objects reused; `out.labelCount` of `out.label` are this
// sample's. Checked as decodeSample is, without counting elements: nothing is kept.
function decodeSampleInto(r, start, end, out) {
  out.locationId.length = 0;
  out.value.length = 0;
  out.labelCount = 0;
  r.message(start, end, (n, w, v, e) => {
    if (n === 1) r.integers(w, v, e, out.locationId);
    else if (n === 2) r.integers(w, v, e, out.value);
    else if (n === 3 && w === 2) {
      const label = out.label[out.labelCount] ?? (out.label[out.labelCount] = { key: 0, str: 0, num: 0 });
      out.labelCount++;
      label.key = label.str = label.num = 0;
      r.message(v, e, (ln, lw, lv) => {
        if (ln === 1) label.key = Reader.scalar(lw, lv);
        else if (ln === 2) label.str = Reader.scalar(lw, lv);
        else if (ln === 3) label.num = Reader.scalar(lw, lv);
      });
    }
  });
}

// profile.proto bytes (a Buffer) -> { sampleType, sample, sampleCount, location, function,
// stringTable, timeNanos, durationNanos, period }; throws DecodeError on malformed input or beyond
// `maxElements` repeated elements. With `samples: false` the samples are checked and counted (one
// element each) but not kept (`sample` stays empty): forEachSample reads them afterwards, one at a
// time, so a profile's memory is its tables, not its samples.
function decodeProfile(buf, { maxElements, samples = true }) {
  const budget = { left: maxElements, max: maxElements };
  const r = new Reader(buf, budget);
  const scratch = newScratch();
  const p = { sampleType: [], sample: [], sampleCount: 0, location: [], function: [], stringTable: [], timeNanos: 0, durationNanos: 0, period: 0 };
  r.message(0, buf.length, (n, w, v, e) => {
    if (w === 2) {
      switch (n) {
        case 1:
          r.element();
          p.sampleType.push(decodeValueType(r, v, e));
          return;
        case 2:
          r.element();
          p.sampleCount++;
          if (samples) p.sample.push(decodeSample(r, v, e));
          else decodeSampleInto(r, v, e, scratch);
          return;
        case 4:
          r.element();
          p.location.push(decodeLocation(r, v, e));
          return;
        case 5:
          r.element();
          p.function.push(decodeFunction(r, v, e));
          return;
        case 6:
          r.element();
          p.stringTable.push(buf.toString('utf8', v, e));
          return;
        default:
          return;
      }
    }
    if (n === 9) p.timeNanos = Reader.scalar(w, v);
    else if (n === 10) p.durationNanos = Reader.scalar(w, v);
    else if (n === 12) p.period = Reader.scalar(w, v);
  });
  return p;
}

// Calls visit(sample) for each sample of a profile decodeProfile has read (and so checked) with
// `samples: false`, in file order; `sample` is one object reused for every call ({ locationId, value, label,
// labelCount }: read it, do not keep it). Throws DecodeError on a malformed sample.
function forEachSample(buf, visit) {
  const r = new Reader(buf, { left: Infinity, max: Infinity });
  const scratch = newScratch();
  r.message(0, buf.length, (n, w, v, e) => {
    if (n === 2 && w === 2) {
      decodeSampleInto(r, v, e, scratch);
      visit(scratch);
    }
  });
}

module.exports = { decodeProfile, forEachSample, DecodeError };
