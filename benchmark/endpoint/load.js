'use strict';
// What a hostile client on loopback costs an app through the heap-labels HTTP endpoint.
//
//   node benchmark/endpoint/load.js [--lib DIR] [--objects 400000] [--interval 512] [--reads 200]
//        [--gcs 20] [--seconds 10] [--clients 32]
//
// Starts benchmark/endpoint/app.js (OBJECTS live objects) with `-r DIR/register.js` (default: this
// tree's lib/; point it at another tree's lib/ to measure that version), the agent's server on
// 127.0.0.1:0 and sampling every `interval` bytes, then, each in a measurement window of the app:
//   burst reads   `reads` GET /debug/pprof/heap written at once on connections opened beforehand
//   burst gc      `gcs` GET /debug/pprof/heap?gc=1 the same way
//   sustained     for `seconds`, `clients` clients each asking again as soon as answered, and one
//                 client asking ?gc=1 in a loop
// and prints a markdown table: answers by status, wall time, the app's longest event-loop stall and
// the most main-thread time it used in any 1-s step (see app.js).

const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');
const { parseArgs } = require('../inprocess/common');
const { appServing } = require('./common');

const args = parseArgs(process.argv.slice(2));
const lib = path.resolve(args.lib ?? path.join(__dirname, '..', '..', 'lib'));
const objects = Number(args.objects ?? 400_000);
const interval = Number(args.interval ?? 512);
const reads = Number(args.reads ?? 200);
const gcs = Number(args.gcs ?? 20);
const seconds = Number(args.seconds ?? 10);
const clients = Number(args.clients ?? 32);

function startApp() {
  const child = spawn(process.execPath, ['-r', path.join(lib, 'register.js'), path.join(__dirname, 'app.js')], {
    env: { ...process.env, OBJECTS: String(objects), HEAP_LABELS_HTTP: '127.0.0.1:0', HEAP_LABELS_SAMPLE_INTERVAL: String(interval), HEAP_LABELS_SIGNAL: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // app.js prints one JSON line with its port once it listens.
  return appServing(child, (stdout) => (stdout.includes('\n') ? JSON.parse(stdout.split('\n')[0]).port : undefined));
}

function connect(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

// The status of the response on `socket` (0: closed without one), once the server closes it.
function statusOf(socket) {
  return new Promise((resolve) => {
    let head = '';
    socket.setTimeout(300_000, () => socket.destroy());
    socket.on('data', (d) => {
      if (head.length < 16) head += d.toString('latin1', 0, 16);
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
  });
}

const request = (target) => `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;

async function ask(port, target) {
  const s = await connect(port);
  const status = statusOf(s);
  s.write(request(target));
  return status;
}

async function burst(port, n, target) {
  const sockets = await Promise.all(Array.from({ length: n }, () => connect(port)));
  const statuses = sockets.map(statusOf);
  for (const s of sockets) s.write(request(target));
  return Promise.all(statuses);
}

async function sustained(port) {
  const deadline = Date.now() + seconds * 1000;
  const statuses = [];
  const loop = async (target) => {
    while (Date.now() < deadline) statuses.push(await ask(port, target).catch(() => 0));
  };
  await Promise.all([...Array.from({ length: clients }, () => loop('/debug/pprof/heap')), loop('/debug/pprof/heap?gc=1')]);
  return statuses;
}

async function appGet(app, route) {
  const s = await connect(app.port);
  let body = '';
  s.setEncoding('utf8').on('data', (d) => (body += d));
  s.write(request(route));
  await new Promise((resolve) => s.on('close', resolve));
  return JSON.parse(body.slice(body.indexOf('\r\n\r\n') + 4));
}

async function main() {
  const app = await startApp();
  const rows = [];
  try {
    for (const [name, run] of [
      [`burst: ${reads} reads`, () => burst(app.agentPort, reads, '/debug/pprof/heap')],
      [`burst: ${gcs} ?gc=1`, () => burst(app.agentPort, gcs, '/debug/pprof/heap?gc=1')],
      [`sustained ${seconds} s: ${clients} read loops + 1 ?gc=1 loop`, () => sustained(app.agentPort)],
    ]) {
      await appGet(app, '/start');
      const t0 = Date.now();
      const statuses = await run();
      const wallMs = Date.now() - t0;
      const m = await appGet(app, '/stop');
      const counts = {};
      for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
      rows.push({ name, counts, wallMs, ...m });
      process.stderr.write(`${name}: ${JSON.stringify(rows.at(-1))}\n`);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  } finally {
    app.child.kill('SIGKILL');
  }
  console.log(`#### HTTP endpoint under load (${objects} live objects, sampleInterval ${interval} B, ${process.version})\n`);
  console.log(`heap-labels lib: \`${path.relative(process.cwd(), lib) || '.'}\`\n`);
  console.log('| scenario | answers (status: count) | wall time | longest event-loop stall | most main-thread time in a 1-s step |');
  console.log('| --- | --- | ---: | ---: | ---: |');
  for (const r of rows) {
    const counts = Object.entries(r.counts).map(([s, n]) => `${s === '0' ? 'closed' : s}: ${n}`).join(', ');
    console.log(`| ${r.name} | ${counts} | ${(r.wallMs / 1000).toFixed(1)} s | ${r.maxStallMs.toFixed(0)} ms | ${r.maxBusyMsPerSecond.toFixed(0)} ms |`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
