// @ts-check
'use strict';
// What this process can do: decided at run time, so one addon build lights up on the patched
// runtime and degrades on stock ones.

const fs = require('node:fs');
const path = require('node:path');
const { native } = require('./native');
const { asyncContextFrameEnabled } = require('./context');
const instance = require('./instance');
const { describeLines } = require('./supported-lines');

const ACF_REASON =
  'asyncContextFrame: AsyncLocalStorage is not backed by AsyncContextFrame in this process ' +
  '(a runtime where it is opt-in needs --experimental-async-context-frame; where it is the ' +
  'default, --no-async-context-frame turns it off); per-sample labels are read from the async ' +
  'context frame';

// The way out of a runtime without the patched V8 API, with the lines the recipe supports. The npm
// package carries the README (its "Install" section) but not the recipe, so the recipe is named only
// where it is: in a checkout of the repository.
const RECIPE = path.join(__dirname, '..', 'tools', 'patched-node', 'build.sh');
const wayOut = () =>
  `; a labeled runtime has it (${describeLines()}): run on heap-labels' labeled Node.js release, ` +
  'node-v<version>-labels-linux-x64.tar.xz unpacked like a nodejs.org tarball, or its container ' +
  '(the README of heap-labels, "Install", and docs/install.md of its repository)' +
  (fs.existsSync(RECIPE) ? '; this checkout builds one: tools/patched-node/build.sh' : '');

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
  const sampleLabels = capability('sampleLabels', nativeCaps.sampleLabels, nativeCaps.sampleLabelsReason + wayOut());
  const externalBytes = capability('externalBytes', nativeCaps.externalBytes, nativeCaps.externalBytesReason + wayOut());
  const allocations = capability('allocations', nativeCaps.allocations, nativeCaps.allocationsReason);
  const retainers = capability('retainers', nativeCaps.retainers, nativeCaps.retainersReason + wayOut());
  if (!asyncContextFrame) reasons.push(ACF_REASON);
  return {
    sampleLabels,
    externalBytes,
    allocations,
    retainers,
    asyncContextFrame,
    node: process.versions.node,
    v8: nativeCaps.v8,
    reasons,
  };
}

module.exports = { capabilities, wayOut };
