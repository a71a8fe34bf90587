'use strict';
// The retainers section of the HTML report (`heap-labels report --html` given retainers, or a
// dump with its `.retainers.json`): per result, per label group, the merged tree of retainers as
// table rows (share, bytes and a bar, the step indented under the one it retains from), the
// samples not in the snapshot, and the allocation sites. Rendered here as static HTML, readable
// without the page's script: every name from the snapshot (classes, property and variable names,
// which can come from request data) and every label goes through printable() (control and
// bidirectional characters shown escaped, as in the text view) and then escapeHtml().

const f = require('./format');
const { retainersHeader: header } = require('./retainers');

const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const shown = (text) => escapeHtml(f.printable(text));

// A figure cell and the share's bar.
function figures(share, bytes) {
  const width = Math.min(Math.max(share, 0), 1) * 100;
  return `<td class="share">${f.formatPercent(share)}</td><td class="bytes">${f.formatBytes(bytes)}</td><td class="bar"><div style="width: ${width.toFixed(2)}%"></div></td>`;
}

// The rows of one group's tree, depth first (iteratively: files are untrusted, and readRetainersFile
// bounds the depth at 64).
function treeRows(paths) {
  const rows = [];
  const stack = paths.map((p) => [p, 0]).reverse();
  while (stack.length > 0) {
    const [p, depth] = stack.pop();
    const more = p.deeper ? ' \u2026' : '';
    const kind = typeof p.kind === 'string' ? ` data-kind="${escapeHtml(p.kind)}"` : '';
    rows.push(
      `<tr class="step"${kind} data-depth="${depth}" data-bytes="${Number(p.bytes)}">${figures(p.share, p.bytes)}` +
        `<td class="step-text" style="padding-left: ${(depth * 1.4 + 0.5).toFixed(1)}em">${shown(p.text)}${more}</td></tr>`,
    );
    for (const c of [...(p.children ?? [])].reverse()) stack.push([c, depth + 1]);
  }
  return rows;
}

function groupHtml(g) {
  const name = f.labelsText(g.labels);
  const rows = treeRows(g.paths);
  if (g.unmatchedBytes > 0) {
    const share = g.bytes > 0 ? g.unmatchedBytes / g.bytes : 0;
    rows.push(`<tr class="step" data-kind="unmatched" data-depth="0" data-bytes="${Number(g.unmatchedBytes)}">${figures(share, g.unmatchedBytes)}<td class="step-text">(not in the snapshot: dead, or allocated after it)</td></tr>`);
  }
  const out = [
    `<details class="retainer-group" open data-label="${shown(name)}" data-bytes="${Number(g.bytes)}">`,
    `<summary><span class="group-name">${shown(name)}</span>: ${f.formatBytes(g.bytes)} in ${f.formatCount(g.samples)} sample${g.samples === 1 ? '' : 's'}</summary>`,
    '<table class="retainer-tree"><tr><th>share</th><th>bytes</th><th></th><th>retained by</th></tr>',
    ...rows,
    '</table>',
  ];
  if ((g.sites ?? []).length > 0) {
    out.push('<table class="retainer-sites"><tr><th>allocated at</th><th>bytes</th><th>share</th></tr>');
    for (const s of g.sites) {
      out.push(
        `<tr><td>${shown(s.functionName || '(anonymous)')} ${shown(s.url)}:${Number(s.lineNumber)}</td>` +
          `<td>${f.formatBytes(s.bytes)}</td><td>${f.formatPercent(s.share)}</td></tr>`,
      );
    }
    out.push('</table>');
  }
  out.push('</details>');
  return out.join('\n');
}

// The section for `results` ([{ source, result }]: a retainers result, checked by readRetainersFile,
// and where it came from); '' without any.
function retainersSection(results) {
  if (results.length === 0) return '';
  const out = ['<section id="retainers-section"><h2>Retainers per label</h2>'];
  for (const { source, result } of results) {
    const [facts, howToRead] = header(result);
    out.push(`<div class="retainers" data-source="${shown(source)}">`);
    // header() has made the key printable already.
    out.push(`<p class="retainers-head">${escapeHtml(facts)}<br><span class="source">${shown(source)}</span></p>`);
    out.push(`<p class="hint">${escapeHtml(howToRead)}</p>`);
    for (const g of result.groups) out.push(groupHtml(g));
    const more = result.moreGroups;
    if (more && more.groups > 0) {
      out.push(`<p class="hint">${f.formatCount(more.groups)} more group${more.groups === 1 ? '' : 's'} not shown (${f.formatBytes(more.bytes)} in ${f.formatCount(more.samples)} samples)</p>`);
    }
    out.push('</div>');
  }
  out.push('</section>');
  return out.join('\n');
}

const RETAINERS_CSS = `
#retainers-section .source { color: #555; }
.retainer-group { margin: .6em 0 1em; }
.retainer-group summary { cursor: pointer; font-weight: 600; }
.retainer-tree td.step-text, .retainer-tree th:last-child { text-align: left; }
.retainer-tree td.step-text { font-family: monospace; white-space: pre; }
.retainer-tree td.bar { width: 120px; }
.retainer-sites { margin-top: .4em; font-family: monospace; }
`;

module.exports = { retainersSection, RETAINERS_CSS };
