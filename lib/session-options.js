'use strict';
// The options of a heap profile session: their defaults and ranges, for startHeapProfile() and
// the agent (startAgent() and the HEAP_LABELS_* variables) alike. The ranges and the default cap
// on label sets come from the addon (src/js_types.rs), which guards the same ranges.

const { native } = require('./native');

const LIMITS = Object.freeze(native.sessionLimits());

const DEFAULTS = Object.freeze({
  sampleInterval: 512 * 1024,
  stackDepth: 64,
  includeObjectsCollectedByMajorGC: false,
  includeObjectsCollectedByMinorGC: false,
  forceGC: false,
  trackAllocations: false,
  maxLabelSets: LIMITS.defaultMaxLabelSets,
  // Group counters (getHeapStats()): the label keys to group by, none by default.
  groupBy: undefined,
  maxGroups: LIMITS.defaultMaxGroups,
});

module.exports = { DEFAULTS, LIMITS };
