// @ts-check
'use strict';
// The options of a heap profile session: each one's rule (type, range) and default, written once
// here for startHeapProfile() (lib/profile.js) and the agent (lib/config.js: startAgent() and the
// HEAP_LABELS_* variables) alike. The ranges and the default caps come from the addon
// (sessionLimits(), src/js_types.rs), whose own check of the same ranges only guards its surface for
// direct callers; tests/session-options.test.js holds the two together.

const { native } = require('./native');

const LIMITS = Object.freeze(native.sessionLimits());

const integer = (min, max) => Object.freeze({ type: 'integer', min, max });
const boolean = Object.freeze({ type: 'boolean' });

// option -> { type: 'integer', min, max } | { type: 'boolean' } | { type: 'keys' } (groupBy: 1 to
// maxKeys distinct non-empty label keys of at most maxKeyBytes bytes of UTF-8).
const RULES = Object.freeze({
  sampleInterval: integer(1, LIMITS.maxSampleInterval),
  stackDepth: integer(1, LIMITS.maxStackDepth),
  includeObjectsCollectedByMajorGC: boolean,
  includeObjectsCollectedByMinorGC: boolean,
  forceGC: boolean,
  trackAllocations: boolean,
  maxLabelSets: integer(1, LIMITS.maxLabelSets),
  // Group counters (getHeapStats()): the label keys to group by.
  groupBy: Object.freeze({ type: 'keys', maxKeys: LIMITS.maxGroupByKeys, maxKeyBytes: LIMITS.maxGroupKeyBytes }),
  maxGroups: integer(1, LIMITS.maxGroups),
});

const DEFAULTS = Object.freeze({
  sampleInterval: 512 * 1024,
  stackDepth: 64,
  includeObjectsCollectedByMajorGC: false,
  includeObjectsCollectedByMinorGC: false,
  forceGC: false,
  trackAllocations: false,
  maxLabelSets: LIMITS.defaultMaxLabelSets,
  // None by default: a session without groupBy keeps no group counters.
  groupBy: undefined,
  maxGroups: LIMITS.defaultMaxGroups,
});

// The defaults of node:v8's startHeapProfile (lib/internal/v8/heap_profile.js of Node.js 26), which
// heap-labels/v8 (lib/v8.js) keeps where they differ from heap-labels' own, and the proposal's
// `labels` (samples unlabeled unless asked).
const NODE_V8_DEFAULTS = Object.freeze({ sampleInterval: 512 * 1024, stackDepth: 16, labels: false });

module.exports = { RULES, DEFAULTS, LIMITS, NODE_V8_DEFAULTS };
