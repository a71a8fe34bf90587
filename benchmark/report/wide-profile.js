'use strict';
// Writes a heap pprof with many label groups, the input of the `heap-labels report` measurement in
// docs/performance.md ("Reports of wide profiles"):
//   node benchmark/report/wide-profile.js OUT.pb.gz [--groups 600000]
//   /usr/bin/time -v node bin/heap-labels.js report OUT.pb.gz > /dev/null
// One sample per label set { tenant, route } (600k sets by default), its stack three frames drawn
// from 40 functions, in-use bytes spread over four orders of magnitude. Written with pprof-format
// (a devDependency, not the reader under test).

const fs = require('node:fs');
const zlib = require('node:zlib');
const { parseArgs } = require('node:util');
const { Profile, StringTable, ValueType, Sample, Label, Location, Line, Function: PFunction } = require('pprof-format');

function wideProfile(groups) {
  const st = new StringTable();
  const functions = [];
  const locations = [];
  for (let i = 0; i < 40; i++) {
    const fn = new PFunction({ id: i + 1, name: st.dedup(`handler${i}`), filename: st.dedup(`/srv/app/mod${i % 7}.js`) });
    functions.push(fn);
    locations.push(new Location({ id: i + 1, line: [new Line({ functionId: fn.id, line: 10 + i })] }));
  }
  const [tenant, route] = [st.dedup('tenant'), st.dedup('route')];
  const routes = Array.from({ length: 64 }, (_, i) => st.dedup(`/api/v1/resource${i}/:id`));
  const sample = new Array(groups);
  for (let i = 0; i < groups; i++) {
    const bytes = 64 + ((i * 7919) % 10_000) * (1 + (i % 97));
    sample[i] = new Sample({
      locationId: [1 + (i % 40), 1 + ((i >> 3) % 40), 1 + ((i >> 6) % 40)],
      value: [1 + (i % 5), bytes],
      label: [new Label({ key: tenant, str: st.dedup(`tenant-${i >> 6}`) }), new Label({ key: route, str: routes[i % 64] })],
    });
  }
  const profile = new Profile({
    sampleType: [new ValueType({ type: st.dedup('inuse_objects'), unit: st.dedup('count') }), new ValueType({ type: st.dedup('inuse_space'), unit: st.dedup('bytes') })],
    sample,
    location: locations,
    function: functions,
    stringTable: st,
    periodType: new ValueType({ type: st.dedup('space'), unit: st.dedup('bytes') }),
    period: 524288,
    timeNanos: 1_700_000_000_000_000_000n,
  });
  return zlib.gzipSync(profile.encode());
}

if (require.main === module) {
  const { values, positionals } = parseArgs({ options: { groups: { type: 'string', default: '600000' } }, allowPositionals: true });
  if (positionals.length !== 1) throw new Error('usage: wide-profile.js OUT.pb.gz [--groups N]');
  const bytes = wideProfile(Number(values.groups));
  fs.writeFileSync(positionals[0], bytes);
  console.log(`${positionals[0]}: ${values.groups} label groups, ${bytes.length} bytes`);
}

module.exports = { wideProfile };
