'use strict';
// What `heap-labels report` prints, bounded: the total, the `groups` largest label groups (50 by
// default; Infinity for all) with the top `top` sites of each, and one row for the rest. A
// profile can have hundreds of thousands of groups (one per label set near a high maxLabelSets):
// the table of all of them is long to make and unreadable, so the default shows the largest and
// says how many more there are.
//
// pprof files are summarized straight from their bytes (summarizePprof): the tables are decoded,
// the samples are then read one at a time (pprof-decode.js forEachSample) and added to their
// group's figures, keyed by the label set's string ids; nothing per sample and nothing per group
// beyond four figures and a key is kept, and groups get their label object and name only when they
// are shown (or to order groups whose figures tie). A second pass over the samples collects the
// sites of the shown groups. In-process models (AllocationProfile reads, and the HTML view's
// model) are summarized from groupModel (summarizeModel): both group by aggregate.js's rule and
// order by its byFigures.

const { forEachSample, DecodeError } = require('./pprof-decode');
const { inflateProfile, profileHeader, ValueCheck, isStringLabel, canonicalLabels, ReportError, OTHER_SITES, DEFAULT_MAX_INFLATED_BYTES } = require('./model');
const { groupModel, siteText, byFigures, groupedBy, ALL, NONE } = require('./aggregate');
const { labelsText } = require('./format');

const DEFAULT_GROUPS = 50;
// Sites listed per group: of report, diff and their text, the CLI's --top.
const DEFAULT_TOP = 10;

// [inuseBytes, inuseObjects, allocBytes, allocObjects] at 4 * i of a flat array -> figures object.
const figuresAt = (a, i) => ({ inuseBytes: a[4 * i], inuseObjects: a[4 * i + 1], allocBytes: a[4 * i + 2], allocObjects: a[4 * i + 3] });
const shareOf = (part, whole) => (whole > 0 ? part / whole : 0);

// The part of a summary that does not depend on where the figures came from.
function finish(meta, warnings, total, groupCount, shown, rest) {
  const withShares = (g) => ({ ...g, share: shareOf(g.inuseBytes, total.inuseBytes), allocShare: shareOf(g.allocBytes, total.allocBytes) });
  return {
    source: meta.source,
    timeNanos: meta.timeNanos,
    readNanos: meta.readNanos,
    period: meta.period,
    hasAllocations: meta.hasAllocations,
    warnings,
    total,
    groupCount,
    groups: shown.map(withShares),
    rest: rest && rest.count > 0 ? withShares(rest) : null,
  };
}

function checkGroups(groups) {
  if (groups !== Infinity && (!Number.isInteger(groups) || groups < 0)) {
    throw new TypeError('heap-labels: groups must be a non-negative integer or Infinity');
  }
}

// The first `count` of `groupCount` groups (figures at 4 * index of `figs`) in byFigures's order:
// in-use bytes, then allocated bytes, largest first, then by name (nameOf, called only for groups
// whose figures tie). Without a full sort when few are shown: the count-th largest figures are
// found with a heap of `count` entries, and only the groups at or above them are sorted.
function orderGroups(figs, groupCount, count, nameOf) {
  const byNumbers = (a, b) => figs[4 * b] - figs[4 * a] || figs[4 * b + 2] - figs[4 * a + 2];
  let candidates;
  if (count === 0) return new Uint32Array(0);
  if (count * 4 >= groupCount) {
    candidates = new Uint32Array(groupCount);
    for (let i = 0; i < groupCount; i++) candidates[i] = i;
  } else {
    // A heap of the `count` largest so far, its smallest at the root.
    const heap = new Uint32Array(count);
    let size = 0;
    const down = (i) => {
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < size && byNumbers(heap[l], heap[m]) > 0) m = l;
        if (r < size && byNumbers(heap[r], heap[m]) > 0) m = r;
        if (m === i) return;
        [heap[i], heap[m]] = [heap[m], heap[i]];
        i = m;
      }
    };
    for (let gi = 0; gi < groupCount; gi++) {
      if (size < count) {
        let i = size++;
        heap[i] = gi;
        while (i > 0 && byNumbers(heap[i], heap[(i - 1) >> 1]) > 0) {
          const up = (i - 1) >> 1;
          [heap[i], heap[up]] = [heap[up], heap[i]];
          i = up;
        }
      } else if (byNumbers(gi, heap[0]) < 0) {
        heap[0] = gi;
        down(0);
      }
    }
    // Every group at or above the boundary (ties with it included: names order them).
    const boundary = heap[0];
    const list = [];
    for (let gi = 0; gi < groupCount; gi++) if (byNumbers(gi, boundary) <= 0) list.push(gi);
    candidates = Uint32Array.from(list);
  }
  candidates.sort(byNumbers);
  // Names within runs of equal figures that reach into the shown part.
  for (let i = 0; i < count; ) {
    let end = i + 1;
    while (end < candidates.length && byNumbers(candidates[i], candidates[end]) === 0) end++;
    if (end - i > 1) {
      const run = Array.from(candidates.subarray(i, end)).sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0));
      candidates.set(run, i);
    }
    i = end;
  }
  return candidates.subarray(0, count);
}

// gzip'd (or raw) pprof bytes -> summary (see the module comment); ReportError on bad input.
function summarizePprof(bytes, source = 'profile', { key, top = DEFAULT_TOP, groups = DEFAULT_GROUPS, maxInflatedBytes = DEFAULT_MAX_INFLATED_BYTES } = {}) {
  checkGroups(groups);
  const raw = inflateProfile(bytes, source, { maxInflatedBytes });
  const { p, types, at, frames, meta } = profileHeader(raw, source, { maxInflatedBytes, samples: false });
  const strings = p.stringTable;

  // One id per distinct string (a file may repeat strings): label sets compare by ids.
  const idOf = new Map();
  const canon = new Int32Array(strings.length);
  for (let i = 0; i < strings.length; i++) {
    let id = idOf.get(strings[i]);
    if (id === undefined) idOf.set(strings[i], (id = i));
    canon[i] = id;
  }
  // An index outside the table reads as '' (as readPprof's does).
  const emptyId = idOf.get('') ?? -1;
  const sid = (i) => (i >= 0 && i < strings.length ? canon[i] : emptyId);
  const text = (id) => (id < 0 ? '' : strings[id]);

  // Sites by leaf location: one index per distinct "function file:line".
  const siteIndex = new Map();
  const siteFrames = [];
  const siteOf = (frame) => {
    const name = siteText(frame);
    let i = siteIndex.get(name);
    if (i === undefined) {
      siteIndex.set(name, (i = siteFrames.length));
      siteFrames.push({ name, frame });
    }
    return i;
  };
  const otherSite = siteOf(OTHER_SITES);
  const siteOfLocation = new Map();
  for (const [id, frame] of frames) siteOfLocation.set(id, siteOf(frame));
  const leafSite = (s) => (s.locationId.length === 0 ? otherSite : siteOfLocation.get(s.locationId[0]) ?? otherSite);

  const check = new ValueCheck(types);
  const value = (s, i) => (i < 0 ? 0 : s.value[i] ?? 0);
  const groupIndex = new Map(); // "keyId:valueId,..." of the group's pairs (ids sorted by key text) -> group index
  const groupIds = []; // group index -> that text
  const figs = []; // group index -> its four figures at 4 * index
  const total = { inuseBytes: 0, inuseObjects: 0, allocBytes: 0, allocObjects: 0 };
  const sampleGroup = new Int32Array(p.sampleCount);
  let sampleAt = 0;
  // Per sample, reused: its string labels' ids and key texts, sorted by key.
  const ks = [];
  const vs = [];
  const keyTexts = [];

  const pass = (visit) => {
    try {
      forEachSample(raw, visit);
    } catch (e) {
      if (!(e instanceof DecodeError)) throw e;
      throw new ReportError(`${source}: not a pprof profile (${e.message})`);
    }
  };

  pass((s) => {
    // The set's pairs sorted by key text (stable: of equal keys the last one wins, as in
    // canonicalLabels), by insertion: sets have a handful of labels.
    let n = 0;
    for (let j = 0; j < s.labelCount; j++) {
      const l = s.label[j];
      if (!isStringLabel(l)) continue;
      const k = sid(l.key);
      const v = sid(l.str);
      const kt = text(k);
      let i = n;
      while (i > 0 && keyTexts[i - 1] > kt) i--;
      if (i > 0 && keyTexts[i - 1] === kt) {
        vs[i - 1] = v;
        continue;
      }
      for (let m = n; m > i; m--) {
        ks[m] = ks[m - 1];
        vs[m] = vs[m - 1];
        keyTexts[m] = keyTexts[m - 1];
      }
      ks[i] = k;
      vs[i] = v;
      keyTexts[i] = kt;
      n++;
    }
    ks.length = vs.length = keyTexts.length = n;
    const g = groupedBy(keyTexts, key);
    let id = '';
    if (g === ALL) {
      for (let j = 0; j < ks.length; j++) id += `${j ? ',' : ''}${ks[j]}:${vs[j]}`;
    } else if (g !== NONE) {
      id = `${ks[g]}:${vs[g]}`;
    }
    let gi = groupIndex.get(id);
    if (gi === undefined) {
      groupIndex.set(id, (gi = groupIds.length));
      groupIds.push(id);
      figs.push(0, 0, 0, 0);
    }
    check.note(s.value);
    const ib = value(s, at.inuseBytes);
    const io = value(s, at.inuseObjects);
    const ab = value(s, at.allocBytes);
    const ao = value(s, at.allocObjects);
    figs[4 * gi] += ib;
    figs[4 * gi + 1] += io;
    figs[4 * gi + 2] += ab;
    figs[4 * gi + 3] += ao;
    total.inuseBytes += ib;
    total.inuseObjects += io;
    total.allocBytes += ab;
    total.allocObjects += ao;
    sampleGroup[sampleAt++] = gi;
  });

  const groupCount = groupIds.length;
  const labelsOf = (gi) =>
    canonicalLabels(groupIds[gi] === '' ? [] : groupIds[gi].split(',').map((pair) => pair.split(':').map((id) => text(Number(id)))));
  const names = new Map();
  const nameOf = (gi) => {
    let n = names.get(gi);
    if (n === undefined) names.set(gi, (n = labelsText(labelsOf(gi))));
    return n;
  };
  const shownCount = Math.min(groups, groupCount);
  const order = orderGroups(figs, groupCount, shownCount, nameOf);
  // The shown groups' sites: a second pass, adding each of their samples to its leaf site.
  const rank = new Int32Array(groupCount).fill(-1);
  for (let i = 0; i < shownCount; i++) rank[order[i]] = i;
  const siteFigs = Array.from({ length: shownCount }, () => new Map());
  if (top > 0 && shownCount > 0) {
    sampleAt = 0;
    pass((s) => {
      const r = rank[sampleGroup[sampleAt++]];
      if (r < 0) return;
      const site = leafSite(s);
      let f = siteFigs[r].get(site);
      if (f === undefined) siteFigs[r].set(site, (f = [0, 0, 0, 0]));
      f[0] += value(s, at.inuseBytes);
      f[1] += value(s, at.inuseObjects);
      f[2] += value(s, at.allocBytes);
      f[3] += value(s, at.allocObjects);
    });
  }
  const shown = [];
  for (let i = 0; i < shownCount; i++) {
    const gi = order[i];
    const sites = [...siteFigs[i]].map(([site, f]) => ({ ...siteFrames[site], ...figuresAt(f, 0) })).sort(byFigures);
    shown.push({ name: nameOf(gi), labels: labelsOf(gi), ...figuresAt(figs, gi), sites: sites.slice(0, top) });
  }
  const rest = { count: groupCount - shownCount, inuseBytes: 0, inuseObjects: 0, allocBytes: 0, allocObjects: 0 };
  const isShown = new Uint8Array(groupCount);
  for (let i = 0; i < shownCount; i++) isShown[order[i]] = 1;
  for (let gi = 0; gi < groupCount; gi++) {
    if (isShown[gi]) continue;
    rest.inuseBytes += figs[4 * gi];
    rest.inuseObjects += figs[4 * gi + 1];
    rest.allocBytes += figs[4 * gi + 2];
    rest.allocObjects += figs[4 * gi + 3];
  }
  return finish(meta, check.warnings(source), total, groupCount, shown, rest);
}

// A model (lib/report/model.js) -> summary, through groupModel.
function summarizeModel(model, { key, top = DEFAULT_TOP, groups = DEFAULT_GROUPS } = {}) {
  checkGroups(groups);
  const grouped = groupModel(model, key);
  const strip = ({ name, labels, inuseBytes, inuseObjects, allocBytes, allocObjects, sites }) => ({
    name,
    labels,
    inuseBytes,
    inuseObjects,
    allocBytes,
    allocObjects,
    sites: sites.slice(0, top),
  });
  const shown = grouped.groups.slice(0, groups).map(strip);
  const rest = { count: grouped.groups.length - shown.length, inuseBytes: 0, inuseObjects: 0, allocBytes: 0, allocObjects: 0 };
  for (const g of grouped.groups.slice(shown.length)) {
    for (const f of ['inuseBytes', 'inuseObjects', 'allocBytes', 'allocObjects']) rest[f] += g[f];
  }
  return finish(model, model.warnings ?? [], grouped.total, grouped.groups.length, shown, rest);
}

module.exports = { summarizePprof, summarizeModel, DEFAULT_GROUPS, DEFAULT_TOP };
