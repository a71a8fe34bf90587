// Compile-only check of the production entry points' declarations (scripts/test.d/40-typescript.sh):
// startAgent / currentAgent / labelCounters in lib/index.d.ts, heap-labels/endpoint,
// heap-labels/prometheus, heap-labels/opentelemetry and heap-labels/register, used as the README
// shows, and misuse they must reject.
import * as http from 'node:http';
import { currentAgent, labelCounters, startAgent, type Agent, type GrowthEntry, type LabelCounters } from '../../lib/index.js';
import { createHeapProfileHandler, fastifyHeapProfile, koaHeapProfile, HEAP_PATH } from '../../lib/endpoint.js';
import { registerPrometheus } from '../../lib/prometheus.js';
import { registerOpenTelemetry } from '../../lib/opentelemetry.js';
import '../../lib/register.js';

async function production(): Promise<void> {
  const agent: Agent = await startAgent({
    sampleInterval: 256 * 1024,
    dir: '/var/tmp/heap',
    keep: 5,
    signal: 'SIGUSR2',
    http: '127.0.0.1:6060',
    nearHeapLimit: 1,
    watchInterval: 60,
    watchPeriods: 4,
    watchMinGrowth: 4 * 1024 * 1024,
    watchMinGrowthPercent: 10,
  });
  const flagged: GrowthEntry[] = agent.growth();
  for (const g of flagged) {
    const grown: number = g.heapBytes - g.fromBytes + g.periods + g.since;
    const first: number | undefined = g.series[0]?.heapBytes;
    const route: string | undefined = g.labels.route;
    void [grown, first, route];
  }
  const every: number = agent.options.watchInterval;
  void every;
  const dump = await agent.dump();
  const where: string = dump.pprofPath;
  const pause: number = dump.pauseMs;
  const pprof: Buffer = await agent.profile({ gc: true });
  const table: string = await agent.profile({ format: 'summary' });
  const url: string | undefined = agent.address?.url;
  const counters: LabelCounters = labelCounters();
  for (const g of counters.groups) {
    const bytes: number = g.heapBytes + g.externalBytes + g.externalPeakBytes + g.samples;
    const route: string | undefined = g.labels.route;
    void bytes;
    void route;
  }
  void [where, pause, pprof, table, url, currentAgent()?.options.dir];
  // @ts-expect-error: SIGUSR1 belongs to the inspector
  await startAgent({ signal: 'SIGUSR1' });
  // @ts-expect-error: sampleInterval is a number of bytes
  await startAgent({ sampleInterval: '512k' });
  // @ts-expect-error: watchInterval is a number of seconds
  await startAgent({ watchInterval: '1m' });
  const routesOn: boolean | undefined = (await startAgent({ routes: false })).options.routes;
  void routesOn;
  const operators: boolean = (await startAgent({ retainers: true })).options.retainers;
  const byRoute: number | undefined = agent.retainers({ key: 'route' }).groups[0]?.bytes;
  void [operators, byRoute, agent.retainers().snapshot.pauseMs];
  // @ts-expect-error: retainers is on or off (a boolean from code)
  await startAgent({ retainers: 'route' });
  // @ts-expect-error: the key goes in the options
  agent.retainers('route');
  // @ts-expect-error: routes is on or off (a boolean from code)
  await startAgent({ routes: 'express' });
  await agent.stop();
}

const handler = createHeapProfileHandler({ token: 'a-token-of-16-chars' });
http.createServer((req, res) => {
  if (req.url?.startsWith(HEAP_PATH)) void handler(req, res);
});
void fastifyHeapProfile();
void koaHeapProfile({ path: '/internal/heap' });
// @ts-expect-error: the token is a string
createHeapProfileHandler({ token: 42 });

const unregisterProm: () => void = registerPrometheus({ registerMetric() {}, removeSingleMetric() {} });
const unregisterOtel: () => void = registerOpenTelemetry({
  createObservableGauge: () => ({}),
  addBatchObservableCallback() {},
  removeBatchObservableCallback() {},
});
void [production, unregisterProm, unregisterOtel];
