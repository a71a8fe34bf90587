'use strict';
// The app of benchmark/endpoint/load.js: started with the preload of the heap-labels under test
// (`-r <lib>/register.js`, HEAP_LABELS_HTTP set), it keeps OBJECTS (default 400000) small objects
// alive and measures its own main thread. Its own server (port printed as {"port"} on stdout):
//   GET /start  starts a measurement window
//   GET /stop   ends it: {"maxStallMs"} (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and
//               {"maxBusyMsPerSecond"}: the most main-thread time used in any 1-s step of the window
//               (eventLoopUtilization: everything the loop ran, the profiler's reads and the
//               requests' parsing and sending alike)

const http = require('node:http');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');

const retained = [];
const count = Number(process.env.OBJECTS || 400_000);
for (let i = 0; i < count; i++) retained.push({ i, name: `object-${i}`, tags: [i] });

let window;

function startWindow() {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let last = performance.eventLoopUtilization();
  let maxBusy = 0;
  const step = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const d = performance.eventLoopUtilization(now, last);
    maxBusy = Math.max(maxBusy, d.active);
    last = now;
  }, 1000);
  return {
    stop() {
      clearInterval(step);
      delay.disable();
      // The last, partial step counts as it is.
      const d = performance.eventLoopUtilization(performance.eventLoopUtilization(), last);
      return { maxStallMs: delay.max / 1e6, maxBusyMsPerSecond: Math.max(maxBusy, d.active) };
    },
  };
}

const server = http.createServer((req, res) => {
  let body = '{}';
  if (req.url === '/start') window = startWindow();
  else if (req.url === '/stop') body = JSON.stringify(window.stop());
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port, retained: retained.length })}\n`));
