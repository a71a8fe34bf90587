// Type declarations of heap-labels/v8: the heap-profile-labels API of node:v8 (the Node.js proposal,
// nodejs/node PR 62649), on any runtime; on the patched runtime `require('node:v8')` has the
// same three functions.

import type { HeapStats, Labels } from './index';

export type { HeapStats, HeapGroup, Labels } from './index';

/**
 * Runs `fn` with `labels` as the heap-profile labels of its async context and returns fn's value.
 * A nested call replaces the outer labels (no merging). Throws ERR_INVALID_ARG_TYPE for a
 * non-object `labels`, a non-string value or a missing `fn`.
 */
export function withHeapProfileLabels<T>(labels: Labels, fn: () => T): T;

/** Sets the labels of the current async context (`{}` clears them). */
export function setHeapProfileLabels(labels: Labels): void;

export interface StartHeapProfileOptions {
  /** Mean bytes between samples; default 524288 (512 KiB). */
  sampleInterval?: number;
  /** Deepest JS stack recorded per sample; default 16 (as node:v8). */
  stackDepth?: number;
  /** V8 collects garbage before each read (kSamplingForceGC). */
  forceGC?: boolean;
  includeObjectsCollectedByMajorGC?: boolean;
  includeObjectsCollectedByMinorGC?: boolean;
  /** Samples carry the labels of the context that allocated them (default false: a frozen {}). */
  labels?: boolean;
  /**
   * Group counters (`getHeapStats()`) by these 1 to 8 distinct non-empty label keys of at most 255
   * bytes; requires `labels: true`.
   */
  groupBy?: string[];
  /**
   * Most groups of distinct projections, 1 to 65536 (default 256). A projection takes one at its
   * first charge in the session (sets merely alive from before take none); later ones go to the
   * overflow group.
   */
  maxGroups?: number;
  /** heap-labels: most distinct label sets (default 10000). */
  maxLabelSets?: number;
  /** heap-labels: allocation figures besides the live heap (see heap-labels' startHeapProfile). */
  trackAllocations?: boolean;
}

export interface ProfileSample {
  nodeId: number;
  size: number;
  count: number;
  sampleId: number;
  /** The labels of the set that allocated it (frozen), or a frozen {} (unlabeled, or no `labels`). */
  labels: Labels;
}

export interface HeapProfileNode {
  callFrame: { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  id: number;
  children: HeapProfileNode[];
}

export interface HeapProfile {
  head: HeapProfileNode;
  samples: ProfileSample[];
  /** Per label set with live ArrayBuffer bytes (no unlabeled entry); undefined without `labels`. */
  externalBytes: { labels: Labels; bytes: number }[] | undefined;
}

/** What startHeapProfile returns (the module exports the class too; it is not constructed directly). */
export declare class HeapProfileHandle {
  private constructor();
  /** The profile so far (the session goes on); undefined once the session is over. */
  getAllocationProfile(): HeapProfile | undefined;
  /** The group counters; undefined without groupBy and once the session is over. */
  getHeapStats(options?: { advancePeakWindow?: boolean }): HeapStats | undefined;
  /** Stops the session and returns the profile as JSON text (a .heapprofile); then undefined. */
  stop(): string | undefined;
  [Symbol.dispose](): void;
}

/**
 * Starts V8's sampling heap profiler. A second start while one runs (from this API, heap-labels'
 * own, the inspector or --heap-prof) throws ERR_HEAP_PROFILE_HAVE_BEEN_STARTED.
 */
export function startHeapProfile(options?: StartHeapProfileOptions): HeapProfileHandle;
/** Node.js 26's positional form; `flags` from `heapProfilerConstants`. */
export function startHeapProfile(sampleInterval?: number, stackDepth?: number, flags?: number): HeapProfileHandle;

/** V8's HeapProfiler::SamplingFlags, for the positional form's `flags`. */
export const heapProfilerConstants: Readonly<{
  kSamplingNoFlags: 0;
  kSamplingForceGC: 1;
  kSamplingIncludeObjectsCollectedByMajorGC: 2;
  kSamplingIncludeObjectsCollectedByMinorGC: 4;
}>;
