'use strict';
// Growth between two profiles: per label group (as grouped by groupModel) the base, current and
// delta figures, and within each group the sites whose in-use bytes grew most.

const { groupModel, labelText, FIGURES } = require('./aggregate');
const { fromAllocationProfile, canonicalLabels } = require('./model');

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
// most grown first; `top` sites per group (default 10), most grown first.
function diffModels(base, current, { key, top = 10 } = {}) {
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
  const models = [base, current].map((p, i) => fromAllocationProfile(p, i === 0 ? 'base' : 'current'));
  const result = diffModels(models[0], models[1], o);
  const figuresOf = (profile) => {
    const out = new Map();
    for (const g of profile.byLabel(o.key)) {
      out.set(labelText(canonicalLabels(Object.entries(g.labels))), {
        inuseBytes: g.bytes,
        inuseObjects: g.objects,
        allocBytes: g.allocatedBytes ?? 0,
        allocObjects: g.allocatedObjects ?? 0,
      });
    }
    return out;
  };
  const [fb, fc] = [figuresOf(base), figuresOf(current)];
  const hasAllocations = Boolean(base.hasAllocations && current.hasAllocations);
  // byLabel also lists groups with external bytes only, and allocated-only groups: add them.
  const seen = new Set(result.groups.map((g) => g.name));
  for (const [name, figures] of [...fb, ...fc]) {
    if (!seen.has(name)) {
      seen.add(name);
      const labels = [base, current].flatMap((p) => p.byLabel(o.key)).find((g) => labelText(canonicalLabels(Object.entries(g.labels))) === name).labels;
      result.groups.push({ ...diffRow(name, canonicalLabels(Object.entries(labels)), figures, figures), sites: [] });
    }
  }
  for (const g of result.groups) {
    Object.assign(g, diffRow(g.name, g.labels, fb.get(g.name), fc.get(g.name)));
  }
  const sum = (m) => {
    const t = pick(undefined);
    for (const f of m.values()) for (const k of FIGURES) t[k] += f[k];
    return t;
  };
  result.total = diffRow('total', undefined, sum(fb), sum(fc));
  delete result.total.labels;
  result.groups.sort(byGrowth);
  result.hasAllocations = hasAllocations;
  return result;
}

module.exports = { diffModels, diffProfiles };
