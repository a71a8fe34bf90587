// heap-labels/v8 as code written for node:v8's heap-profile-labels API uses it (type check only).
import * as v8 from 'heap-labels/v8';
import type { HeapStats, HeapGroup } from 'heap-labels/v8';

const n: number = v8.withHeapProfileLabels({ 'task.type': 'email' }, () => 1);
const p: Promise<string> = v8.withHeapProfileLabels({ route: '/x' }, async () => 'done');
v8.setHeapProfileLabels({});

const handle = v8.startHeapProfile({ labels: true, groupBy: ['task.type'], maxGroups: 256, sampleInterval: 64 * 1024 });
const profile = handle.getAllocationProfile();
if (profile !== undefined) {
  const labels: Readonly<Record<string, string>> = profile.samples[0].labels;
  const external: number | undefined = profile.externalBytes?.[0]?.bytes;
  void labels;
  void external;
}
const stats: HeapStats | undefined = handle.getHeapStats({ advancePeakWindow: true });
const group: HeapGroup | undefined = stats?.groups[0];
const current: bigint | undefined = group?.currentExternalBytes;
const kind: 'unknown' | 'overflow' | 'labels' | undefined = group?.kind;
const json: string | undefined = handle.stop();
handle[Symbol.dispose]();

// Node.js 26's positional form.
v8.startHeapProfile(512 * 1024, 16, v8.heapProfilerConstants.kSamplingIncludeObjectsCollectedByMajorGC).stop();

// @ts-expect-error labels are string values
v8.withHeapProfileLabels({ n: 1 }, () => 1);
// @ts-expect-error groupBy takes label keys
v8.startHeapProfile({ labels: true, groupBy: 'task.type' });

void [n, p, current, kind, json];
