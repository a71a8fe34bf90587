// Compile-only check of lib/index.d.ts and the framework integrations' declarations
// (scripts/test.d/40-typescript.sh): every export used the way the README shows, against the real
// frameworks' types, and misuse that the declarations must reject (@ts-expect-error lines). The
// integrations are imported by their package paths, so the exports map's "types" are checked too.
import http from 'node:http';
import Router from '@koa/router';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { expressRouteLabels, type ExpressApplication } from 'heap-labels/express';
import { fastifyRouteLabels } from 'heap-labels/fastify';
import { httpRouteLabels, type LabelRequest, type RouteLabelOptions } from 'heap-labels/http';
import { koaRouteLabels, type KoaApplication } from 'heap-labels/koa';
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
  type HeapSnapshotFile,
  type LabelGroup,
  type Labels,
  type RetainerPath,
  type Retainers,
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
// Allocated vs in use: trackAllocations, windows, the allocated figures of a group.
const tracked: HeapProfileHandle = startHeapProfile({ trackAllocations: true });
const windowed: AllocationProfile = tracked.getAllocationProfile({ resetAllocations: true });
const allocated: number | undefined = windowed.hasAllocations ? windowed.byLabel()[0]?.allocatedBytes : undefined;
const canAllocate: boolean = caps.allocations;
// Retainers per label (labeled runtime): a tree per group, the objects' classes first.
if (caps.retainers) {
  const kept: Retainers = tracked.retainers('route');
  const pause: number = kept.snapshot.pauseMs + kept.moreGroups.bytes;
  const firstGroup = kept.groups[0];
  const route: string | undefined = firstGroup?.labels.route;
  const step: RetainerPath | undefined = firstGroup?.paths[0]?.children[0];
  const held: string = `${step?.kind}: ${step?.text} ${step?.share} ${step?.edge ?? ''} ${firstGroup?.sites[0]?.functionName}`;
  console.log(pause, route, held, tracked.retainers().key);
  // @ts-expect-error the key is a string
  tracked.retainers(5);
  const forced: Retainers = tracked.retainers(undefined, { force: true });
  void forced;
  // @ts-expect-error force is a boolean
  tracked.retainers('route', { force: 'yes' });
  // A labeled .heapsnapshot for DevTools: a node per label group.
  const file: HeapSnapshotFile = tracked.writeHeapSnapshot({ labels: true, key: 'route', path: 'leak.heapsnapshot' });
  const linked: number | undefined = file.groups?.[0]?.linkedBytes;
  console.log(file.path, file.pauseMs, linked, file.groups?.[0]?.labels.route, file.groups?.[0]?.node);
  // @ts-expect-error labels is a boolean
  tracked.writeHeapSnapshot({ labels: 'route' });
}
const plainFile: string = tracked.writeHeapSnapshot().path;

// @ts-expect-error label values are strings
withHeapProfileLabels({ route: 1 }, () => 0);
// @ts-expect-error options are checked
startHeapProfile({ sampleIntervall: 1 });
// @ts-expect-error trackAllocations is a boolean
startHeapProfile({ trackAllocations: 'yes' });
// @ts-expect-error labels are read-only
labels.route = '/other';

// Framework integrations.
const app = express();
const sameApp: typeof app = expressRouteLabels(app, {
  key: 'route',
  unmatched: '(unmatched)',
  maxRoutes: 500,
  labels: (req) => ({ tenant: req.get('x-tenant') ?? 'none' }),
});
const asApp: ExpressApplication = app;
const koa = new Koa();
koaRouteLabels(koa, { labels: (ctx) => ({ tenant: ctx.get('x-tenant') || 'none' }) });
koa.use(new Router().get('/users/:id', (ctx) => { ctx.body = ctx.params.id; }).routes());
const asKoa: KoaApplication = koa;
const fastify = Fastify();
fastify.register(fastifyRouteLabels, { labels: (request) => ({ tenant: String(request.headers['x-tenant'] ?? 'none') }) });
const labelRequest: LabelRequest<http.IncomingMessage> = httpRouteLabels({ labels: (req) => ({ method: req.method ?? 'GET' }) });
const options: RouteLabelOptions<http.IncomingMessage> = { unmatched: '(other)' };
const labelOther: LabelRequest<http.IncomingMessage> = httpRouteLabels(options);
http.createServer((req, res) => {
  const routeLabels: Labels = labelRequest(req, '/users/:id');
  labelRequest(req);
  labelOther(req, null);
  // @ts-expect-error a template is a string
  labelRequest(req, 42);
  res.end(routeLabels.route);
});
// @ts-expect-error extra labels are string-valued
expressRouteLabels(app, { labels: () => ({ tenant: 1 }) });
// @ts-expect-error options are checked
httpRouteLabels({ unmatch: '(none)' });
// @ts-expect-error a koa app is needed
koaRouteLabels({ use() {} });

export { sameApp, asApp, asKoa, labelOther };
export { n, p, current, reasons, top, pprof, devtools, sampleLabels, external, s, overflowed, maxLabels, last, sameApi };
