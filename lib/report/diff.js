'use strict';
// Growth between two profiles: per label group (as grouped by groupModel) the base, current and
// delta figures, and within each group the sites whose in-use bytes grew most.

const { groupModel, FIGURES } = require('./aggregate');
const { labelsText } = require('./format');
const { fromAllocationProfile, canonicalLabels } = require('./model');
const { DEFAULT_TOP } = require('./summary');

const pick = (o) => Object.fromEntries(FIGURES.map((f) => [f, o ? o[f] : 0]));
const minus = (a, b) => Object.fromEntries(FIGURES.map((f) => [f, a[f] - b[f]]));
// Percent growth of in-use bytes; null when the base had none (a new group or site).
const percentOf = (base, delta) => (base > 0 ? (delta / base) * 100 : delta === 0 ? 0 : null);

function diffRow(name, labels, base, current) {
  const b = pick(base);
  const c = pick(current);
  const delta = minus(c, b);
  return { name, labels, base: b, current: c, delta, percent: percentOf(b.inuseBytes, delta.inuseBytes) };
}

const byGrowth = (a, b) =>
  b.delta.inuseBytes - a.delta.inuseBytes || b.delta.allocBytes - a.delta.allocBytes || (a.name < b.name ? -1 : 1);

// Two models -> { total, groups: [{ name, labels, base, current, delta, percent, sites: [...] }] },
// most grown first; `top` sites per group (default DEFAULT_TOP), most grown first.
function diffModels(base, current, { key, top = DEFAULT_TOP } = {}) {
  const b = groupModel(base, key);
  const c = groupModel(current, key);
  const names = new Map();
  for (const g of b.groups) names.set(g.name, { labels: g.labels, base: g });
  for (const g of c.groups) names.set(g.name, { labels: g.labels, base: names.get(g.name)?.base, current: g });
  const groups = [...names.entries()].map(([name, { labels, base: bg, current: cg }]) => {
    const row = diffRow(name, labels, bg, cg);
    const sites = new Map();
    for (const s of bg?.sites ?? []) sites.set(s.name, { base: s });
    for (const s of cg?.sites ?? []) sites.set(s.name, { base: sites.get(s.name)?.base, current: s });
    row.sites = [...sites.entries()]
      .map(([siteName, { base: bs, current: cs }]) => diffRow(siteName, undefined, bs, cs))
      .sort(byGrowth)
      .slice(0, top);
    for (const s of row.sites) delete s.labels;
    return row;
  });
  groups.sort(byGrowth);
  const total = diffRow('total', undefined, b.total, c.total);
  delete total.labels;
  return {
    hasAllocations: base.hasAllocations && current.hasAllocations,
    base: { source: base.source, readNanos: base.readNanos },
    current: { source: current.source, readNanos: current.readNanos },
    total,
    groups,
  };
}

function checkOptions(options) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw new TypeError('heap-labels: diffProfiles: options must be an object');
  const { key, top } = options;
  if (key !== undefined && (typeof key !== 'string' || key.length === 0)) {
    throw new TypeError('heap-labels: diffProfiles: key must be a non-empty string or undefined');
  }
  if (top !== undefined && (!Number.isInteger(top) || top < 0)) {
    throw new TypeError('heap-labels: diffProfiles: top must be a non-negative integer');
  }
  return { key, top };
}

// In-process diff of two AllocationProfile reads (e.g. before and after a load test). Group
// figures come from the profiles' own byLabel(key) (exact estimates, allocated figures included
// when both have them); sites from their samples and call trees (in-use bytes).
function diffProfiles(base, current, options) {
  const o = checkOptions(options);
  const result = diffModels(fromAllocationProfile(base, 'base'), fromAllocationProfile(current, 'current'), o);
  // name -> { labels, figures } of one profile's byLabel(key).
  const groupsOf = (profile) => {
    const out = new Map();
    for (const g of profile.byLabel(o.key)) {
      const labels = canonicalLabels(Object.entries(g.labels));
      out.set(labelsText(labels), {
        labels,
        figures: { inuseBytes: g.bytes, inuseObjects: g.objects, allocBytes: g.allocatedBytes ?? 0, allocObjects: g.allocatedObjects ?? 0 },
      });
    }
    return out;
  };
  const [gb, gc] = [groupsOf(base), groupsOf(current)];
  // byLabel also has groups without live samples (external bytes only, or allocated only).
  const rows = new Map(result.groups.map((g) => [g.name, g]));
  for (const [name, { labels }] of [...gb, ...gc]) {
    if (!rows.has(name)) rows.set(name, { name, labels, sites: [] });
  }
  result.groups = [...rows.values()].map((g) => ({
    ...diffRow(g.name, g.labels, gb.get(g.name)?.figures, gc.get(g.name)?.figures),
    sites: g.sites,
  }));
  result.groups.sort(byGrowth);
  const sum = (groups) => {
    const t = pick(undefined);
    for (const { figures } of groups.values()) for (const k of FIGURES) t[k] += figures[k];
    return t;
  };
  result.total = diffRow('total', undefined, sum(gb), sum(gc));
  delete result.total.labels;
  result.hasAllocations = Boolean(base.hasAllocations && current.hasAllocations);
  return result;
}

module.exports = { diffModels, diffProfiles };
