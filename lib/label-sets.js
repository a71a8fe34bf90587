'use strict';
// Which interned frozen label object each label set of the addon's registry stands for: the one
// id -> labels cache of lib/, for profile reads and counters alike.
//
// The registry (core/src/labels.rs) owns label sets and their ids; lib/labels.js owns the frozen
// objects the API hands out. A set is named here by its key (id, generation): the registry gives
// the ids of pruned sets to later sets, but never the same key twice, so an entry is either right
// or ignored, never stale. lib/labels.js remembers the key of every set it makes a holder for, so
// reads (which carry ids and generations; labelsOfSets() in lib/labels.js) fetch label strings
// only for the sets this cache does not know:
// sets bound natively (a holder rebound from the overflow set at a read), sets whose label
// objects another realm made, and, after a restart of lib/, all of them once.
//
// Bounded: one entry per id, and ids are compact (the registry hands out the lowest free ones), so
// the cache is as long as the most sets held at once (maxLabelSets and the overflow set). An entry
// of a pruned set stays until its id goes to another set; it keeps its frozen label object alive
// (neither its holder nor its set: a frozen object reaches its holder only weakly).

let labelsById = new Array(64);
// 0 is no generation (the registry counts them from 1): an id never seen matches nothing.
let generationById = new Float64Array(64);

function ensureRoom(id) {
  if (id < generationById.length) return;
  const length = Math.max(id + 1, generationById.length * 2);
  const generations = new Float64Array(length);
  generations.set(generationById);
  // A new pre-sized array rather than a longer length: stores in id order stay in fast elements.
  const labels = new Array(length);
  for (let i = 0; i < labelsById.length; i++) labels[i] = labelsById[i];
  generationById = generations;
  labelsById = labels;
}

// Records that the set with key (id, generation) has the labels `labels` (a frozen object made by
// lib/labels.js). Returns the labels that id named before (undefined: none), which lib/labels.js
// stops holding as the object of their content.
function rememberSet(id, generation, labels) {
  ensureRoom(id);
  const before = labelsById[id];
  labelsById[id] = labels;
  generationById[id] = generation;
  return before;
}

// The labels of the set with this key, if known.
function knownLabels(id, generation) {
  return generationById[id] === generation ? labelsById[id] : undefined;
}

module.exports = { rememberSet, knownLabels };
