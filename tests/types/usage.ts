// Compile-only check of lib/index.d.ts (scripts/test.d/40-typescript.sh): every export used the way
// the README shows, and misuse that the declarations must reject (@ts-expect-error lines).
import heapLabels, {
  capabilities,
  getHeapProfileLabels,
  limits,
  setHeapProfileLabels,
  startHeapProfile,
  stats,
  withHeapProfileLabels,
  type AllocationProfile,
  type Capabilities,
  type HeapProfileHandle,
  type LabelGroup,
  type Labels,
  type Stats,
} from '../../lib/index.js';

const labels: Labels = { route: '/api/search', tenant: 'acme' };
const n: number = withHeapProfileLabels(labels, () => 42);
const p: Promise<string> = withHeapProfileLabels({ job: 'reindex' }, async () => 'done');
setHeapProfileLabels(labels);
setHeapProfileLabels(null);
const current: Labels | undefined = getHeapProfileLabels();
const caps: Capabilities = capabilities();
const reasons: string[] = caps.reasons;
const handle: HeapProfileHandle = startHeapProfile({ sampleInterval: 512 * 1024, stackDepth: 64, maxLabelSets: 100 });
const profile: AllocationProfile = handle.getAllocationProfile();
const groups: LabelGroup[] = profile.byLabel('route');
const top: number = groups[0].bytes + groups[0].objects + groups[0].externalBytes;
const pprof: Buffer = profile.toPprof();
const devtools = profile.toHeapProfile();
const firstSample = profile.samples[0];
const sampleLabels: Labels | undefined = firstSample?.labels;
const external: number = profile.externalBytes.reduce((sum, e) => sum + e.bytes, 0);
const s: Stats = stats();
const overflowed: number = s.overflowLabelHolders;
profile[Symbol.dispose]();
const maxLabels: number = limits.maxLabels;
handle[Symbol.dispose]();
const last: AllocationProfile = handle.stop();
const sameApi: typeof withHeapProfileLabels = heapLabels.withHeapProfileLabels;

// @ts-expect-error label values are strings
withHeapProfileLabels({ route: 1 }, () => 0);
// @ts-expect-error options are checked
startHeapProfile({ sampleIntervall: 1 });
// @ts-expect-error labels are read-only
labels.route = '/other';

export { n, p, current, reasons, top, pprof, devtools, sampleLabels, external, s, overflowed, maxLabels, last, sameApi };
