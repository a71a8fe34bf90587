'use strict';
// Growth between snapshots: which label sets' live heap grew over the last `periods` periodic
// reads of the per-label counters (lib/counters.js), without reading a profile. The agent feeds a
// GrowthWatch one counters() result per watch interval (lib/agent.js); this file only decides.
//
// The rule. A label set is flagged when its last `periods` + 1 snapshots are strictly increasing
// AND the growth from the first to the last of them is at least
//   - minGrowth bytes (what is worth an operator's attention),
//   - minGrowthPercent % of the first snapshot's bytes (relative to what the set already holds),
//   - NOISE_Z standard deviations of the sampling noise, where samples are counted per set.
// Why this is not fooled by sampling noise. On the patched runtime a set's estimate is its live
// samples x the sampling interval r. V8 places samples on allocated bytes as a Poisson process of
// rate 1/r, so the live samples of a set holding B bytes are Poisson with mean B/r: the estimate's
// relative error is 1/sqrt(samples). Between two snapshots the count changes by A - D, the samples
// on bytes allocated since and still alive (A) minus those on bytes that died since (D): two
// independent Poisson counts with A <= N_last and D <= N_first, so when nothing truly grows the
// difference has a standard deviation of at most sqrt(N_first + N_last) (reached when every object
// turned over; a set that keeps what it holds changes far less). Requiring
// N_last - N_first >= NOISE_Z * sqrt(N_first + N_last) with NOISE_Z = 4 leaves a one-sided normal
// tail of 3e-5 in that worst case, and implies a floor of NOISE_Z^2 = 16 samples for a set that
// started near nothing. On top of that the strict increase over k = `periods` steps: for
// independent snapshots of an unchanging set (the worst case above) k + 1 draws are in increasing
// order with probability 1/(k + 1)!, 1/120 for the default k = 4, and never more than about 2^-k
// (1/16) even for a random walk, whose total change is then far below the noise bound. Together:
// about 6e-6 per set and period in the worst case (the range of 5 normal draws exceeds 4*sqrt(2)
// sd with probability 6e-4, times 1/120; simulated with independent Poisson snapshots: 6e-6 at a
// mean of 200 samples, 2.5e-6 at 20, none in 2 million windows at 5), i.e. a few false lines a
// day for a thousand fully-churning sets watched every minute, and far fewer for sets that keep
// what they hold.
// A larger k is safer and slower: k periods of growth must pass before the first line.
// What the math does not cover: the counters see garbage not yet collected too, so a set's
// estimate also grows between GCs (young garbage until the next scavenge, promoted garbage until
// the next major GC). The byte and percentage floors are the guard there, and the interval should
// be long enough that GCs fall within each period (a minute in a loaded app). Measured on the
// patched runtime: snapshots every 0.2 s, a route allocating 3 MB/s of short-lived objects was
// flagged with a 1 MiB floor (1.8 MiB of garbage between two scavenges) and not with 4 MiB.
// On stock runtimes samples are not counted (perSetSamples false): the only group is the
// unlabeled one, whose bytes are V8's used heap size (exact, no sampling noise, garbage included),
// so only the strict increase and the byte and percentage floors apply.
//
// Episodes. A flagged set is reported once (observe() returns it) and stays flagged while its
// estimate does not decrease; the first decrease ends the episode, and a new one needs `periods`
// new increases in a row. Memory is bounded: at most `periods` + 1 points per tracked set, a set
// missing from a snapshot is dropped at once, and at most `maxSeries` sets are tracked (the
// counters have at most maxLabelSets + 2 groups anyway: the overflow and unlabeled groups).

const { labelsText, formatBytes } = require('./format');

const NOISE_Z = 4;

class GrowthWatch {
  #periods;
  #minGrowth;
  #minGrowthPercent;
  #maxSeries;
  #series = new Map(); // frozen interned labels -> { labels, bytes[], samples[], seen, episode }
  #times = []; // time of the last `periods` + 1 snapshots (ms since the epoch)
  #reads = 0;
  #skipped = 0;

  // periods: increases in a row (>= 1); minGrowth: bytes; minGrowthPercent: percent of the
  // window's first snapshot; maxSeries: most label sets tracked.
  constructor({ periods, minGrowth, minGrowthPercent, maxSeries = Infinity }) {
    if (!Number.isInteger(periods) || periods < 1) throw new RangeError('heap-labels: GrowthWatch: periods must be an integer >= 1');
    this.#periods = periods;
    this.#minGrowth = minGrowth;
    this.#minGrowthPercent = minGrowthPercent;
    this.#maxSeries = maxSeries;
  }

  // Takes one counters() result ({ sampleInterval, perSetSamples, groups }) read at `time`; returns
  // the episodes that start with it (each as growth() describes them).
  observe(snapshot, time = Date.now()) {
    const read = ++this.#reads;
    const points = this.#periods + 1;
    this.#times.push(time);
    if (this.#times.length > points) this.#times.shift();
    const started = [];
    for (const group of snapshot.groups) {
      let s = this.#series.get(group.labels);
      if (s === undefined) {
        if (this.#series.size >= this.#maxSeries) {
          this.#skipped++;
          continue;
        }
        s = { labels: group.labels, bytes: [], samples: [], seen: read, episode: null };
        this.#series.set(group.labels, s);
      }
      s.seen = read;
      s.bytes.push(group.heapBytes);
      s.samples.push(group.samples);
      if (s.bytes.length > points) {
        s.bytes.shift();
        s.samples.shift();
      }
      if (this.#step(s, snapshot.perSetSamples)) started.push(this.#describe(s));
    }
    // Sets gone from this snapshot (pruned, or no live samples any more) are forgotten.
    for (const [labels, s] of this.#series) if (s.seen !== read) this.#series.delete(labels);
    return started;
  }

  // Updates the episode of `s` after its newest point; true when an episode starts.
  #step(s, perSetSamples) {
    // Samples are the estimate where they are counted; bytes (V8's used heap size) where not.
    const values = perSetSamples ? s.samples : s.bytes;
    const n = values.length;
    if (s.episode !== null) {
      if (values[n - 1] < values[n - 2]) {
        s.episode = null;
      } else if (values[n - 1] > values[n - 2]) {
        s.episode.periods++;
      }
      return false;
    }
    if (n < this.#periods + 1) return false;
    for (let i = 1; i < n; i++) if (!(values[i] > values[i - 1])) return false;
    const first = s.bytes[0];
    const grown = s.bytes[n - 1] - first;
    if (grown < this.#minGrowth) return false;
    if (grown * 100 < first * this.#minGrowthPercent) return false;
    if (perSetSamples) {
      const a = s.samples[0];
      const b = s.samples[n - 1];
      if (b - a < NOISE_Z * Math.sqrt(a + b)) return false;
    }
    s.episode = { since: this.#times[this.#times.length - 1], fromBytes: first, periods: this.#periods };
    return true;
  }

  #describe(s) {
    const times = this.#times.slice(this.#times.length - s.bytes.length);
    return Object.freeze({
      labels: s.labels,
      periods: s.episode.periods,
      since: s.episode.since,
      fromBytes: s.episode.fromBytes,
      heapBytes: s.bytes[s.bytes.length - 1],
      series: Object.freeze(
        s.bytes.map((heapBytes, i) => Object.freeze({ time: times[i], heapBytes, samples: s.samples[i] })),
      ),
    });
  }

  // The label sets flagged now: [{ labels, periods (increases so far in this episode), since
  // (time it was flagged), fromBytes (first point of the window that flagged it), heapBytes
  // (latest), series: [{ time, heapBytes, samples }] (the last periods + 1 snapshots) }], largest
  // growth first.
  growth() {
    const out = [];
    for (const s of this.#series.values()) if (s.episode !== null) out.push(this.#describe(s));
    return out.sort((a, b) => b.heapBytes - b.fromBytes - (a.heapBytes - a.fromBytes));
  }

  // { series: tracked sets, points: stored points, skipped: sets not tracked for the cap }.
  stats() {
    let points = 0;
    for (const s of this.#series.values()) points += s.bytes.length;
    return { series: this.#series.size, points, skipped: this.#skipped };
  }
}

// The stderr line of an episode that starts (without the "heap-labels: " prefix).
function formatEpisode(entry, intervalSeconds) {
  return (
    `live heap of ${labelsText(entry.labels)} grew ${entry.periods} periods in a row ` +
    `(a snapshot every ${intervalSeconds} s): ${formatBytes(entry.fromBytes)} -> ${formatBytes(entry.heapBytes)}`
  );
}

// The growth section appended to the text summary ('#' lines, so table readers skip it).
function formatSection(entries, { interval, periods, minGrowth, minGrowthPercent, tracked }) {
  const lines = [
    `# growth: a snapshot every ${interval} s, flagged after ${periods} increases in a row of at least ` +
      `${minGrowth} bytes and ${minGrowthPercent} % in total (and beyond sampling noise); ${tracked} label sets watched`,
  ];
  if (entries.length === 0) lines.push('# growth: none flagged');
  for (const e of entries) {
    lines.push(
      `# growth: ${labelsText(e.labels)} grew ${e.periods} periods in a row since ${new Date(e.since).toISOString()}: ` +
        `${formatBytes(e.fromBytes)} -> ${formatBytes(e.heapBytes)} (${e.series.map((p) => p.heapBytes).join(' ')})`,
    );
  }
  return `${lines.join('\n')}\n`;
}

module.exports = { GrowthWatch, NOISE_Z, formatEpisode, formatSection };
