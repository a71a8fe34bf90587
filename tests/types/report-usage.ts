// Compile-only check of the report declarations (scripts/test.d/40-typescript.sh): diffProfiles in
// lib/index.d.ts and heap-labels/report (lib/report/*.d.ts), used as the README shows, and misuse
// they must reject.
import heapLabels, { diffProfiles, startHeapProfile, type ProfileDiff } from '../../lib/index.js';
import {
  diffHtml,
  diffModels,
  diffText,
  fromAllocationProfile,
  groupModel,
  readPprof,
  readPprofFile,
  ReportError,
  reportHtml,
  reportText,
  readRetainersFile,
  retainersText,
  summarizePprof,
  summarizeModel,
  type HeapModel,
  type ProfileSummary,
} from 'heap-labels/report';
import { main } from '../../lib/report/cli.js';
import { formatBytes, table } from '../../lib/report/format.js';

const handle = startHeapProfile();
const before = handle.getAllocationProfile();
const after = handle.stop();
const diff: ProfileDiff = diffProfiles(before, after, { key: 'route', top: 5 });
for (const g of diff.groups) {
  const pct: number | null = g.percent;
  const route: string | undefined = g.labels.route;
  const grown: number = g.delta.inuseBytes + g.sites[0].delta.allocBytes;
  console.log(pct, route, grown, g.sites.map((s) => s.name));
}
heapLabels.diffProfiles(before, after);

const a: HeapModel = readPprofFile('a.pb.gz');
const b: HeapModel = readPprof(new Uint8Array(0), 'b.pb.gz');
const inProcess: HeapModel = fromAllocationProfile(after);
const fileDiff: ProfileDiff = diffModels(a, b, { key: 'route' });
const text: string = reportText(a, { top: 3 }) + diffText(fileDiff);
const html: string = reportHtml([a, b, inProcess], { key: 'route' }) + diffHtml(a, b, fileDiff);
const share: number = groupModel(a, 'route').groups[0].share;
const bounded: ProfileSummary = summarizePprof(new Uint8Array(0), 'c.pb.gz', { key: 'route', top: 3, groups: 20, maxInflatedBytes: 1 << 20 });
const rest: number = (bounded.rest?.count ?? 0) + summarizeModel(a, { groups: Infinity }).groupCount;
console.log(reportText(bounded, { groups: 20 }), rest, bounded.warnings.join('\n'), a.warnings.length);
const status: number = main(['report', 'a.pb.gz', '--json']);
console.log(text, html, share, status, formatBytes(1536), table(['a'], [['b']]));
const retainers: string = retainersText(readRetainersFile('retainers.json'), { depth: 4 });
// @ts-expect-error depth is a number
retainersText(readRetainersFile('retainers.json'), { depth: '4' });
console.log(retainers);
const withRetainers: string = reportHtml([a], { key: 'route', retainers: [{ source: 'r.json', result: readRetainersFile('r.json') }] });
// @ts-expect-error retainers are results with their source
reportHtml([a], { retainers: [readRetainersFile('r.json')] });
console.log(withRetainers);
try {
  readPprofFile('missing');
} catch (e) {
  if (e instanceof ReportError) console.log(e.message);
}

// @ts-expect-error the key is a string
diffProfiles(before, after, { key: 1 });
// @ts-expect-error two profiles are needed
diffProfiles(before);
// @ts-expect-error a model is not an AllocationProfile
diffProfiles(a, b);
// @ts-expect-error reportHtml takes a list of models
reportHtml(a);
// @ts-expect-error groups is a number
summarizeModel(a, { groups: 'all' });
