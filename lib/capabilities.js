'use strict';
// What this process can do: decided at run time, so one addon build lights up on the patched
// runtime and degrades on stock ones.

const { native } = require('./native');
const { asyncContextFrameEnabled } = require('./context');

const ACF_REASON =
  'asyncContextFrame: AsyncLocalStorage is not backed by AsyncContextFrame in this process ' +
  '(Node.js 22 needs --experimental-async-context-frame; 24 and later have it unless ' +
  '--no-async-context-frame is given); per-sample labels are read from the async context frame';

function capabilities() {
  const nativeCaps = native.nativeCapabilities();
  const asyncContextFrame = asyncContextFrameEnabled();
  const reasons = [];
  if (!nativeCaps.sampleLabels) reasons.push(nativeCaps.sampleLabelsReason);
  if (!nativeCaps.externalBytes) reasons.push(nativeCaps.externalBytesReason);
  if (!asyncContextFrame) reasons.push(ACF_REASON);
  return {
    sampleLabels: nativeCaps.sampleLabels && asyncContextFrame,
    externalBytes: nativeCaps.externalBytes,
    asyncContextFrame,
    node: process.versions.node,
    v8: nativeCaps.v8,
    reasons,
  };
}

module.exports = { capabilities };
