'use strict';
// What this process can do: decided at run time, so one addon build lights up on the patched
// runtime and degrades on stock ones.

const { native } = require('./native');
const { asyncContextFrameEnabled } = require('./context');
const instance = require('./instance');

const ACF_REASON =
  'asyncContextFrame: AsyncLocalStorage is not backed by AsyncContextFrame in this process ' +
  '(stock Node.js 22 needs --experimental-async-context-frame; 24 and later and the patched ' +
  '22.22.2 runtime have it unless --no-async-context-frame is given); per-sample labels are read ' +
  'from the async context frame';

// Both per-label capabilities read the labels from the async context frame: on a patched runtime
// without it they are off too, and say so under their own name.
const NEEDS_ACF =
  'the runtime supports it, but AsyncLocalStorage is not backed by AsyncContextFrame here, and ' +
  'labels are read from the frame (see asyncContextFrame)';

function capabilities() {
  const nativeCaps = native.nativeCapabilities();
  const asyncContextFrame = asyncContextFrameEnabled();
  const reasons = [];
  const capability = (name, available, reason) => {
    if (instance.conflict !== undefined) {
      reasons.push(`${name}: ${instance.conflict}`);
      return false;
    }
    if (!available) reasons.push(reason);
    else if (!asyncContextFrame) reasons.push(`${name}: ${NEEDS_ACF}`);
    return available && asyncContextFrame;
  };
  const sampleLabels = capability('sampleLabels', nativeCaps.sampleLabels, nativeCaps.sampleLabelsReason);
  const externalBytes = capability('externalBytes', nativeCaps.externalBytes, nativeCaps.externalBytesReason);
  const allocations = capability('allocations', nativeCaps.allocations, nativeCaps.allocationsReason);
  if (!asyncContextFrame) reasons.push(ACF_REASON);
  return {
    sampleLabels,
    externalBytes,
    allocations,
    asyncContextFrame,
    node: process.versions.node,
    v8: nativeCaps.v8,
    reasons,
  };
}

module.exports = { capabilities };
