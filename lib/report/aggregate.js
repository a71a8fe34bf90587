'use strict';
// Per-label rows and per-site rows of a model (lib/report/model.js), grouped as byLabel() groups:
// by full label set, or by one key's value; unlabeled samples (and, with a key, samples without
// it) form the unlabeled group `{}`; the overflow set stays a group of its own.

const { OVERFLOW_KEY } = require('./model');
const { labelsText, printable } = require('./format');

const FIGURES = ['inuseBytes', 'inuseObjects', 'allocBytes', 'allocObjects'];
const UNLABELED = Object.freeze({});

// The rule of byLabel(key), for a label set given by its keys (any order): ALL when its group is
// the whole set (no key given, or the overflow set, which stays a group of its own), the index of
// `key` among them (the group of that key's value), or NONE (no labels, or no such key: the
// unlabeled group `{}`). The one owner of the rule: groupModel applies it to label objects,
// summary.js to the label ids of a pprof file.
const ALL = -1;
const NONE = -2;
function groupedBy(keys, key) {
  if (keys.length === 0) return NONE;
  if (key === undefined || keys.includes(OVERFLOW_KEY)) return ALL;
  const i = keys.indexOf(key);
  return i < 0 ? NONE : i;
}

// The labels of the group a label set falls in. How a group is named in tables, the HTML and diff
// rows: labelsText (format.js), which no two label sets share and which holds no control character.
function groupLabelsOf(labels, key) {
  const g = groupedBy(Object.keys(labels), key);
  if (g === ALL) return labels;
  if (g === NONE) return UNLABELED;
  return Object.freeze({ [key]: labels[key] });
}

const zero = () => ({ inuseBytes: 0, inuseObjects: 0, allocBytes: 0, allocObjects: 0 });
function add(into, from) {
  for (const f of FIGURES) into[f] += from[f];
}

const siteText = (frame) => (frame.file ? `${printable(frame.name)} ${printable(frame.file)}:${frame.line}` : printable(frame.name));

// Largest in-use first, then allocated, then by name (stable output for equal figures).
function byFigures(a, b) {
  return b.inuseBytes - a.inuseBytes || b.allocBytes - a.allocBytes || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

// Groups of `model`: [{ name, labels, ...figures, share, sites: [{ name, frame, ...figures }] }],
// largest first; `share` is of the profile's total in-use bytes. `sites` are every leaf site of the
// group (callers trim to their top N), keyed by function file:line.
function groupModel(model, key) {
  const groups = new Map();
  const total = zero();
  // Samples share their frozen label objects: the group of each is looked up once.
  const groupOf = new Map();
  for (const s of model.samples) {
    add(total, s);
    let named = groupOf.get(s.labels);
    if (named === undefined) {
      const labels = groupLabelsOf(s.labels, key);
      groupOf.set(s.labels, (named = { labels, name: labelsText(labels) }));
    }
    const { labels, name } = named;
    let g = groups.get(name);
    if (g === undefined) groups.set(name, (g = { name, labels, ...zero(), sites: new Map(), samples: [] }));
    add(g, s);
    g.samples.push(s);
    const leaf = s.stack[0];
    const site = siteText(leaf);
    let row = g.sites.get(site);
    if (row === undefined) g.sites.set(site, (row = { name: site, frame: leaf, ...zero() }));
    add(row, s);
  }
  const rows = [...groups.values()].map((g) => ({
    ...g,
    share: total.inuseBytes > 0 ? g.inuseBytes / total.inuseBytes : 0,
    allocShare: total.allocBytes > 0 ? g.allocBytes / total.allocBytes : 0,
    sites: [...g.sites.values()].sort(byFigures),
  }));
  rows.sort(byFigures);
  return { total, groups: rows };
}

// A call tree (root first) of some samples, for flame graphs: { name, value, children[] } with the
// in-use bytes (or allocated bytes with `field`) of each path.
function callTree(samples, field = 'inuseBytes') {
  const root = { name: 'all', value: 0, children: new Map() };
  for (const s of samples) {
    const v = s[field];
    if (!v) continue;
    root.value += v;
    let node = root;
    for (let i = s.stack.length - 1; i >= 0; i--) {
      const name = siteText(s.stack[i]);
      let child = node.children.get(name);
      if (child === undefined) node.children.set(name, (child = { name, value: 0, children: new Map() }));
      child.value += v;
      node = child;
    }
  }
  return finishTree(root);
}

// { name, value, children: Map } -> { name, value, children: [] } largest first; iterative, for
// stacks of any depth.
function finishTree(root) {
  const out = { name: root.name, value: root.value, children: [] };
  const work = [[root, out]];
  while (work.length) {
    const [node, into] = work.pop();
    for (const child of [...node.children.values()].sort((a, b) => b.value - a.value)) {
      const done = { name: child.name, value: child.value, children: [] };
      into.children.push(done);
      work.push([child, done]);
    }
  }
  return out;
}

module.exports = { groupModel, callTree, siteText, byFigures, groupedBy, ALL, NONE, FIGURES, UNLABELED };
