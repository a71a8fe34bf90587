'use strict';
// The HTML view: one self-contained file (inline CSS, script and data; nothing fetched) with
// per-label bars, an icicle (flame graph, root on top) of the selected label, and, for several
// snapshots, live bytes per label over time; given retainers per label, a static section of their
// trees (lib/report/retainers-html.js). The page builds its DOM with textContent only, so label
// values and function names cannot inject markup; the retainers section is escaped where it is made.

const { groupModel, callTree, siteText } = require('./aggregate');
const { retainersSection, RETAINERS_CSS } = require('./retainers-html');

// Nodes under this fraction of their tree's total are left out (bounded file size; invisible anyway).
const MIN_FRACTION = 1 / 2000;
// Call trees are kept for the largest groups only: a profile near maxLabelSets (10000 sets) would
// otherwise make a page of tens of MB. The rest still have their bars and timeline points.
const MAX_TREES = 200;

// A call tree without its nodes under MIN_FRACTION, flat for the page: { name, value, parent }
// columns in depth-first order (parent: index of the parent, -1 for the root; children keep their
// order). Flat because trees can be thousands of frames deep, and JSON.stringify (and any
// recursive walk) of a nested tree that deep overflows the stack.
function prune(tree) {
  const min = tree.value * MIN_FRACTION;
  const flat = { name: [], value: [], parent: [] };
  const work = [[tree, -1]];
  while (work.length) {
    const [node, parent] = work.pop();
    const index = flat.name.length;
    flat.name.push(node.name);
    flat.value.push(node.value);
    flat.parent.push(parent);
    for (let i = node.children.length - 1; i >= 0; i--) {
      if (node.children[i].value >= min) work.push([node.children[i], index]);
    }
  }
  return flat;
}

function snapshotData(model, key) {
  const { total, groups } = groupModel(model, key);
  return {
    source: model.source,
    readNanos: model.readNanos,
    hasAllocations: model.hasAllocations,
    total,
    groups: groups.map((g, i) => ({
      name: g.name,
      inuseBytes: g.inuseBytes,
      inuseObjects: g.inuseObjects,
      allocBytes: g.allocBytes,
      allocObjects: g.allocObjects,
      share: g.share,
      tree: i < MAX_TREES ? prune(callTree(g.samples)) : null,
    })),
  };
}

// Growth tree of one group: per full stack, the in-use bytes it gained (losses are left out: a
// flame graph shows what grew).
function growthTree(baseSamples, currentSamples) {
  const pathKey = (s) => s.stack.map(siteText).join('\n');
  const before = new Map();
  for (const s of baseSamples) before.set(pathKey(s), (before.get(pathKey(s)) ?? 0) + s.inuseBytes);
  const after = new Map();
  const stacks = new Map();
  for (const s of currentSamples) {
    const k = pathKey(s);
    after.set(k, (after.get(k) ?? 0) + s.inuseBytes);
    stacks.set(k, s.stack);
  }
  const grown = [];
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) grown.push({ stack: stacks.get(k), inuseBytes: d });
  }
  return prune(callTree(grown));
}

// Safe inside <script>: no "</script", no "<!--", no U+2028/9 surprises.
const embed = (data) => JSON.stringify(data).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');

// `extra`: static sections after the flame graph (escaped by their maker), with their CSS.
function page(title, data, extra = { html: '', css: '' }) {
  const escapeHtml = (s) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(title)}</title>
<style>${CSS}${extra.css}</style>
</head>
<body>
<h1 id="title"></h1>
<p id="sources"></p>
<section id="labels-section"><h2 id="labels-heading">Labels</h2><table id="labels"></table></section>
<section id="timeline-section" hidden><h2>Live bytes per label over time</h2><svg id="timeline" role="img"></svg><div id="legend"></div></section>
<section id="flame-section"><h2>Call tree of <select id="label-select"></select></h2><p class="hint">Widths are <span id="flame-measure">in-use bytes</span>; click a frame to zoom, the top bar to zoom out.</p><div id="flame"></div><div id="flame-detail"></div></section>
${extra.html}
<script type="application/json" id="heap-labels-data">${embed(data)}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

// One or more snapshots of a report (oldest first by time_nanos for the timeline). `retainers`:
// [{ source, result }], retainers results (handle.retainers()) shown in a section of their own.
function reportHtml(models, { key, retainers = [] } = {}) {
  const snapshots = models.map((m) => snapshotData(m, key)).sort((a, b) => a.readNanos - b.readNanos);
  const extra = retainers.length > 0 ? { html: retainersSection(retainers), css: RETAINERS_CSS } : undefined;
  return page('heap-labels report', { kind: 'report', key: key ?? null, snapshots }, extra);
}

// A diff of two models (diff is diffModels' result for them).
function diffHtml(base, current, diff, { key } = {}) {
  const b = groupModel(base, key);
  const c = groupModel(current, key);
  const byName = (grouped) => new Map(grouped.groups.map((g) => [g.name, g.samples]));
  const [bs, cs] = [byName(b), byName(c)];
  const groups = diff.groups.map((g, i) => ({
    name: g.name,
    base: g.base,
    current: g.current,
    delta: g.delta,
    percent: g.percent,
    tree: i < MAX_TREES ? growthTree(bs.get(g.name) ?? [], cs.get(g.name) ?? []) : null,
  }));
  return page('heap-labels diff', {
    kind: 'diff',
    key: key ?? null,
    base: diff.base,
    current: diff.current,
    hasAllocations: diff.hasAllocations,
    total: diff.total,
    groups,
  });
}

const CSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.1em; margin: 1.4em 0 .5em; }
#sources { color: #555; margin: 0; white-space: pre-line; }
table { border-collapse: collapse; }
th, td { padding: 3px 8px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { border-bottom: 1px solid #999; font-weight: 600; }
tr.label-row { cursor: pointer; } tr.label-row:hover { background: #f3f3f3; }
tr.label-row.selected { background: #fff4d6; }
tr.total td { border-top: 1px solid #999; font-weight: 600; }
td.bar { width: 260px; text-align: left; }
.bar > div { height: 12px; background: #e8743b; min-width: 1px; }
.bar > div.shrink { background: #4c9f70; }
.hint { color: #666; margin: 0 0 .4em; font-size: .9em; }
#flame { position: relative; width: 100%; border: 1px solid #ddd; overflow: hidden; }
.frame { position: absolute; height: 17px; box-sizing: border-box; border: 1px solid #fff; overflow: hidden;
  font: 11px/15px monospace; padding: 0 3px; white-space: nowrap; cursor: pointer; color: #000; }
#flame-detail { font: 12px monospace; min-height: 1.4em; margin-top: .3em; }
#timeline { width: 100%; max-width: 900px; height: 260px; border: 1px solid #ddd; }
#legend span { display: inline-block; margin-right: 1em; }
#legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
`;

// The page's script (plain ES2020, runs in any current browser).
const SCRIPT = String.raw`
'use strict';
(function () {
  const data = JSON.parse(document.getElementById('heap-labels-data').textContent);
  // Flat trees (see prune() in lib/report/html.js) back to nodes { name, value, children }.
  const unflatten = (flat) => {
    if (!flat) return null;
    const nodes = flat.name.map((name, i) => ({ name, value: flat.value[i], children: [] }));
    flat.parent.forEach((p, i) => { if (p >= 0) nodes[p].children.push(nodes[i]); });
    return nodes[0];
  };
  for (const s of data.snapshots || []) for (const g of s.groups) g.tree = unflatten(g.tree);
  for (const g of data.groups || []) g.tree = unflatten(g.tree);
  const el = (tag, props, children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k === 'style') Object.assign(e.style, v);
      else e.setAttribute(k, v);
    }
    for (const c of children || []) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    return e;
  };
  const bytes = (n) => {
    const sign = n < 0 ? '-' : '';
    let v = Math.abs(n), u = 0;
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return sign + (u === 0 ? Math.round(v) : v.toFixed(v >= 100 ? 0 : 1)) + ' ' + units[u];
  };
  const count = (n) => Math.round(n).toLocaleString('en-US');
  const pct = (f) => (f * 100).toFixed(1) + '%';
  const plus = (t, n) => (n > 0 ? '+' + t : t);
  const when = (ns) => (ns > 0 ? new Date(ns / 1e6).toISOString() : 'time unknown');
  const colors = ['#e8743b', '#19a979', '#ed4a7b', '#945ecf', '#13a4b4', '#525df4', '#bf399e', '#6c8893', '#ee6868', '#2f6497'];
  const frameColor = (name) => {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return 'hsl(' + (10 + (h % 40)) + ',' + (70 + (h % 20)) + '%,' + (60 + (h % 15)) + '%)';
  };

  const labelsTable = document.getElementById('labels');
  const select = document.getElementById('label-select');
  let groups;

  if (data.kind === 'report') {
    const last = data.snapshots[data.snapshots.length - 1];
    groups = last.groups;
    document.getElementById('title').textContent = 'heap-labels report' + (data.key ? ' by ' + data.key : '');
    document.getElementById('sources').textContent = data.snapshots.map((s) => s.source + ' (' + when(s.readNanos) + ')').join('\n');
    document.getElementById('labels-heading').textContent = 'Labels' + (data.snapshots.length > 1 ? ' (latest snapshot: ' + last.source + ')' : '');
    const alloc = last.hasAllocations;
    const head = ['label', 'in-use bytes', 'share', '', 'in-use objects'].concat(alloc ? ['alloc bytes', 'alloc objects'] : []);
    labelsTable.appendChild(el('tr', {}, head.map((h) => el('th', { text: h }))));
    for (const g of groups) {
      const tr = el('tr', { class: 'label-row', 'data-label': g.name, 'data-bytes': String(g.inuseBytes), 'data-objects': String(g.inuseObjects),
        'data-alloc-bytes': String(g.allocBytes), 'data-alloc-objects': String(g.allocObjects), 'data-share': String(g.share) }, [
        el('td', { class: 'name', text: g.name }),
        el('td', { class: 'bytes', text: bytes(g.inuseBytes) }),
        el('td', { class: 'share', text: pct(g.share) }),
        el('td', { class: 'bar' }, [el('div', { style: { width: (g.share * 100).toFixed(2) + '%' } })]),
        el('td', { class: 'objects', text: count(g.inuseObjects) }),
      ].concat(alloc ? [el('td', { text: bytes(g.allocBytes) }), el('td', { text: count(g.allocObjects) })] : []));
      tr.addEventListener('click', () => selectLabel(g.name));
      labelsTable.appendChild(tr);
    }
    labelsTable.appendChild(el('tr', { class: 'total', 'data-bytes': String(last.total.inuseBytes), 'data-objects': String(last.total.inuseObjects) }, [
      el('td', { text: 'total' }), el('td', { text: bytes(last.total.inuseBytes) }), el('td', { text: last.total.inuseBytes > 0 ? '100.0%' : '0.0%' }),
      el('td'), el('td', { text: count(last.total.inuseObjects) }),
    ].concat(alloc ? [el('td', { text: bytes(last.total.allocBytes) }), el('td', { text: count(last.total.allocObjects) })] : [])));
    if (data.snapshots.length > 1) timeline(data.snapshots);
  } else {
    groups = data.groups;
    document.getElementById('title').textContent = 'heap-labels diff' + (data.key ? ' by ' + data.key : '');
    document.getElementById('sources').textContent = 'base: ' + data.base.source + ' (' + when(data.base.readNanos) + ')\ncurrent: ' + data.current.source + ' (' + when(data.current.readNanos) + ')';
    document.getElementById('labels-heading').textContent = 'Growth per label';
    document.getElementById('flame-measure').textContent = 'in-use bytes gained since the base';
    const maxDelta = groups.reduce((m, g) => Math.max(m, Math.abs(g.delta.inuseBytes)), 1);
    const head = ['label', 'base bytes', 'current bytes', 'delta', 'growth', '', 'objects delta'].concat(data.hasAllocations ? ['alloc bytes delta'] : []);
    labelsTable.appendChild(el('tr', {}, head.map((h) => el('th', { text: h }))));
    for (const g of groups) {
      const tr = el('tr', { class: 'label-row', 'data-label': g.name, 'data-delta-bytes': String(g.delta.inuseBytes), 'data-delta-objects': String(g.delta.inuseObjects),
        'data-bytes': String(g.current.inuseBytes), 'data-base-bytes': String(g.base.inuseBytes) }, [
        el('td', { class: 'name', text: g.name }),
        el('td', { text: bytes(g.base.inuseBytes) }),
        el('td', { class: 'bytes', text: bytes(g.current.inuseBytes) }),
        el('td', { class: 'delta', text: plus(bytes(g.delta.inuseBytes), g.delta.inuseBytes) }),
        el('td', { class: 'growth', text: g.percent === null ? 'new' : plus(g.percent.toFixed(1) + '%', g.percent) }),
        el('td', { class: 'bar' }, [el('div', { class: g.delta.inuseBytes < 0 ? 'shrink' : '', style: { width: (Math.abs(g.delta.inuseBytes) / maxDelta * 100).toFixed(2) + '%' } })]),
        el('td', { text: plus(count(g.delta.inuseObjects), g.delta.inuseObjects) }),
      ].concat(data.hasAllocations ? [el('td', { text: plus(bytes(g.delta.allocBytes), g.delta.allocBytes) })] : []));
      tr.addEventListener('click', () => selectLabel(g.name));
      labelsTable.appendChild(tr);
    }
    const t = data.total;
    labelsTable.appendChild(el('tr', { class: 'total', 'data-delta-bytes': String(t.delta.inuseBytes), 'data-bytes': String(t.current.inuseBytes) }, [
      el('td', { text: 'total' }), el('td', { text: bytes(t.base.inuseBytes) }), el('td', { text: bytes(t.current.inuseBytes) }),
      el('td', { text: plus(bytes(t.delta.inuseBytes), t.delta.inuseBytes) }),
      el('td', { text: t.percent === null ? 'new' : plus(t.percent.toFixed(1) + '%', t.percent) }), el('td'),
      el('td', { text: plus(count(t.delta.inuseObjects), t.delta.inuseObjects) }),
    ].concat(data.hasAllocations ? [el('td', { text: plus(bytes(t.delta.allocBytes), t.delta.allocBytes) })] : [])));
  }

  for (const g of groups) select.appendChild(el('option', { value: g.name, text: g.name }));
  select.addEventListener('change', () => selectLabel(select.value));

  // Icicle: the root on top, children below, widths proportional to bytes; click zooms.
  const flame = document.getElementById('flame');
  const detail = document.getElementById('flame-detail');
  let current;
  function selectLabel(name) {
    const g = groups.find((x) => x.name === name);
    if (!g) return;
    select.value = name;
    for (const tr of labelsTable.querySelectorAll('tr.label-row')) tr.classList.toggle('selected', tr.getAttribute('data-label') === name);
    current = g;
    if (!g.tree) {
      flame.textContent = '';
      flame.setAttribute('data-label', g.name);
      detail.textContent = 'no call tree in this page for ' + g.name + ': only the ' + groups.filter((x) => x.tree).length + ' largest labels have one';
      return;
    }
    drawFlame(g.tree, [g.tree]);
  }
  function drawFlame(focus, path) {
    flame.textContent = '';
    flame.setAttribute('data-label', current.name);
    const rowHeight = 17;
    let depth = 0;
    const place = (node, level, left, width, clickable) => {
      depth = Math.max(depth, level + 1);
      const div = el('div', { class: 'frame', title: node.name + ' - ' + bytes(node.value), 'data-name': node.name, 'data-value': String(node.value),
        style: { left: (left * 100) + '%', width: (width * 100) + '%', top: (level * rowHeight) + 'px', background: level < path.length ? '#ddd' : frameColor(node.name) } });
      if (width > 0.03) div.textContent = node.name;
      div.addEventListener('mouseenter', () => { detail.textContent = node.name + '  ' + bytes(node.value) + '  ' + pct(focus.value ? node.value / focus.value : 0) + ' of view'; });
      div.addEventListener('click', () => clickable(node));
      flame.appendChild(div);
    };
    // The path from the root to the focus as full-width bars (click: zoom back out to it).
    path.forEach((n, i) => { if (i < path.length - 1) place(n, i, 0, 1, () => drawFlame(n, path.slice(0, i + 1))); });
    const base = path.length - 1;
    // Iterative (trees can be thousands of frames deep); a frame's path to the root is made when
    // it is clicked.
    const parents = new Map();
    const pathTo = (node) => {
      const up = [];
      for (let n = node; n !== focus; n = parents.get(n)) up.push(n);
      return path.concat(up.reverse());
    };
    const work = [[focus, base, 0, 1]];
    while (work.length) {
      const [node, level, left, width] = work.pop();
      place(node, level, left, width, () => drawFlame(node, pathTo(node)));
      let x = left;
      for (const c of node.children) {
        const w = node.value ? (width * c.value) / node.value : 0;
        if (w >= 0.002) {
          parents.set(c, node);
          work.push([c, level + 1, x, w]);
        }
        x += w;
      }
    }
    flame.style.height = Math.max(depth, 1) * rowHeight + 2 + 'px';
    if (!focus.value) detail.textContent = 'nothing to show for ' + current.name;
  }

  // Live bytes per label over time: one polyline per label, x = time_nanos of each snapshot.
  function timeline(snapshots) {
    document.getElementById('timeline-section').hidden = false;
    const svgNS = 'http://www.w3.org/2000/svg';
    const svg = document.getElementById('timeline');
    const W = 900, H = 260, L = 70, R = 40, T = 10, B = 30;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const seen = new Set();
    let maxBytes = 1;
    for (const s of snapshots) for (const g of s.groups) { seen.add(g.name); maxBytes = Math.max(maxBytes, g.inuseBytes); }
    const names = [...seen];
    const t0 = snapshots[0].readNanos, t1 = snapshots[snapshots.length - 1].readNanos;
    const x = (t, i) => L + (t1 > t0 ? (t - t0) / (t1 - t0) : i / Math.max(1, snapshots.length - 1)) * (W - L - R);
    const y = (b) => T + (1 - b / maxBytes) * (H - T - B);
    const mk = (tag, attrs, text) => {
      const e = document.createElementNS(svgNS, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
      if (text !== undefined) e.textContent = text;
      svg.appendChild(e);
      return e;
    };
    mk('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' });
    mk('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' });
    for (const f of [0, 0.5, 1]) mk('text', { x: L - 6, y: y(maxBytes * f) + 4, 'text-anchor': 'end', 'font-size': 11 }, bytes(maxBytes * f));
    snapshots.forEach((s, i) => mk('text', { x: x(s.readNanos, i), y: H - B + 16, 'text-anchor': 'middle', 'font-size': 11 },
      t1 > t0 ? '+' + ((s.readNanos - t0) / 1e9).toFixed(1) + ' s' : '#' + (i + 1)));
    const legend = document.getElementById('legend');
    const byName = snapshots.map((s) => new Map(s.groups.map((g) => [g.name, g])));
    names.forEach((name, k) => {
      const color = colors[k % colors.length];
      const points = snapshots.map((s, i) => {
        const g = byName[i].get(name);
        return { t: s.readNanos, i, b: g ? g.inuseBytes : 0 };
      });
      const line = mk('polyline', { fill: 'none', stroke: color, 'stroke-width': 2, 'data-label': name,
        'data-bytes': points.map((p) => p.b).join(' '), points: points.map((p) => x(p.t, p.i).toFixed(1) + ',' + y(p.b).toFixed(1)).join(' ') });
      line.appendChild(document.createElementNS(svgNS, 'title')).textContent = name;
      for (const p of points) mk('circle', { cx: x(p.t, p.i), cy: y(p.b), r: 3, fill: color });
      legend.appendChild(el('span', { 'data-label': name }, [el('i', { style: { background: color } }), name]));
    });
  }

  if (groups.length) selectLabel(groups[0].name);
})();
`;

module.exports = { reportHtml, diffHtml };
