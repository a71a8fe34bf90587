'use strict';
// The "database" of the HTTP benchmark: a node:http server that answers
//   GET /rows?table=users|orders|products&page=N
// with a JSON array of 100 rows. Pages are encoded once at start, so this server stays cheap and the
// app server (the one measured) is the bottleneck.
//
//   node benchmark/http/db-server.js [--port 0]   (prints "LISTENING <port>" when ready)

const http = require('node:http');

const PAGE_SIZE = 100;
const STATUSES = ['new', 'paid', 'shipped', 'delivered', 'returned'];
const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu'.split(' ');

function makeRows(table, count) {
  const rows = [];
  for (let i = 0; i < count; i++) {
    if (table === 'users') {
      rows.push({
        id: i,
        name: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]}`,
        email: `user${i}@example${i % 13}.com`,
        active: i % 5 !== 0,
        createdAt: new Date(1_700_000_000_000 + i * 86_400_000).toISOString(),
        tags: [WORDS[i % 12], WORDS[(i + 3) % 12]],
      });
    } else if (table === 'orders') {
      rows.push({
        id: i,
        userId: (i * 31) % 1000,
        status: STATUSES[i % STATUSES.length],
        total: Math.round(((i * 7919) % 100_000) / 7) / 100,
        items: Array.from({ length: 1 + (i % 4) }, (_, k) => ({ sku: `sku-${(i + k) % 500}`, qty: 1 + ((i + k) % 3) })),
      });
    } else {
      rows.push({
        id: i,
        sku: `sku-${i}`,
        title: `${WORDS[i % 12]} ${WORDS[(i * 5) % 12]} ${WORDS[(i * 11) % 12]}`,
        price: Math.round(((i * 104729) % 50_000) / 3) / 100,
        stock: (i * 17) % 200,
        description: `${WORDS.join(' ')} #${i}`,
      });
    }
  }
  return rows;
}

const TABLES = { users: 1000, orders: 5000, products: 500 };
const pages = new Map(); // "table:page" -> Buffer
for (const [table, count] of Object.entries(TABLES)) {
  const rows = makeRows(table, count);
  for (let p = 0; p * PAGE_SIZE < count; p++) {
    pages.set(`${table}:${p}`, Buffer.from(JSON.stringify(rows.slice(p * PAGE_SIZE, (p + 1) * PAGE_SIZE))));
  }
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const url = new URL(req.url, 'http://db');
  const table = url.searchParams.get('table');
  const count = TABLES[table];
  const page = Number(url.searchParams.get('page')) || 0;
  const body = count === undefined ? undefined : pages.get(`${table}:${page % Math.ceil(count / PAGE_SIZE)}`);
  if (body === undefined) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});

const portArg = process.argv.indexOf('--port');
server.listen(portArg > 0 ? Number(process.argv[portArg + 1]) : 0, '127.0.0.1', () => {
  console.log(`LISTENING ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
