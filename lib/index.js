'use strict';
// heap-labels: label-aware heap profiling for Node.js.
//
//   withHeapProfileLabels / setHeapProfileLabels / getHeapProfileLabels   labels of async contexts
//   startHeapProfile(options) -> handle { getAllocationProfile(), stop(), [Symbol.dispose]() }
//   capabilities()                                                        what this runtime can do

const {
  withHeapProfileLabels,
  setHeapProfileLabels,
  getHeapProfileLabels,
} = require('./context');
const { capabilities } = require('./capabilities');
const { startHeapProfile } = require('./profile');
const { MAX_LABELS, MAX_KEY_BYTES, MAX_VALUE_BYTES } = require('./labels');

module.exports = {
  withHeapProfileLabels,
  setHeapProfileLabels,
  getHeapProfileLabels,
  capabilities,
  startHeapProfile,
  limits: Object.freeze({
    maxLabels: MAX_LABELS,
    maxKeyBytes: MAX_KEY_BYTES,
    maxValueBytes: MAX_VALUE_BYTES,
  }),
};
