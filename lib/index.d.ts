// Type declarations of the heap-labels package.

/**
 * A label set: a plain object (of any realm) of string values. At most 32 labels; keys 1..128
 * bytes and values 0..1024 bytes of UTF-8; keys starting with `heap_labels.` and `__proto__` are
 * reserved. `{}` means no labels. Equal sets are interned: the API hands out one frozen object per
 * set.
 */
export type Labels = Readonly<Record<string, string>>;

/** Runs `fn` with `labels` as the heap-profile labels of its async context (sync or async `fn`). */
export function withHeapProfileLabels<T>(labels: Labels, fn: () => T): T;

/**
 * Sets the labels of the current async context and everything it starts from now on
 * (`AsyncLocalStorage.enterWith` semantics, for middleware). `null` clears them.
 */
export function setHeapProfileLabels(labels: Labels | null): void;

/** The labels of the current async context (the interned frozen object), if any. */
export function getHeapProfileLabels(): Labels | undefined;

export interface Capabilities {
  /** Sampled allocations carry labels (patched runtime with AsyncContextFrame). */
  sampleLabels: boolean;
  /** ArrayBuffer/Buffer bytes are counted per label set (patched runtime). */
  externalBytes: boolean;
  /** AsyncLocalStorage is backed by AsyncContextFrame in this process. */
  asyncContextFrame: boolean;
  node: string;
  v8: string;
  /** One reason for every capability that is false. */
  reasons: string[];
}

/** What this runtime can do, probed at run time. */
export function capabilities(): Capabilities;

export interface HeapProfileOptions {
  /** Mean bytes between samples; integer 1..2^32-1, default 524288 (512 KiB). */
  sampleInterval?: number;
  /** Deepest JS stack recorded per sample; integer 1..1024, default 64. */
  stackDepth?: number;
  /** Keep samples of objects collected by major GCs (default false). */
  includeObjectsCollectedByMajorGC?: boolean;
  /** Keep samples of objects collected by minor GCs (default false). */
  includeObjectsCollectedByMinorGC?: boolean;
  /** Most distinct label sets; more go to one overflow set. Integer >= 1, default 10000. */
  maxLabelSets?: number;
}

/** A DevTools-shaped call-tree node (as in `.heapprofile` files). */
export interface Node {
  callFrame: {
    functionName: string;
    scriptId: string;
    url: string;
    lineNumber: number;
    columnNumber: number;
  };
  selfSize: number;
  id: number;
  children: Node[];
}

export interface Sample {
  nodeId: number;
  /** Size of the sampled object in bytes. */
  size: number;
  /** V8's count: 1 / (1 - exp(-size / sampleInterval)), rounded. */
  count: number;
  sampleId: number;
  /** The labels current when the object was allocated (patched runtime only). */
  labels?: Labels;
}

export interface LabelGroup {
  /** The group's labels: a full set, `{ [key]: value }` for `byLabel(key)`, or `{}` unlabeled. */
  labels: Labels;
  /** Estimated live bytes: sum of size / (1 - exp(-size / sampleInterval)) over the samples. */
  bytes: number;
  /** Estimated live objects. */
  objects: number;
  externalBytes: number;
}

export interface AllocationProfile {
  readonly head: Node;
  readonly samples: Sample[];
  /** External bytes per label set; on stock runtimes one unlabeled (`{}`) isolate total. */
  readonly externalBytes: { labels: Labels; bytes: number }[];
  /** Mean bytes between samples of the session. */
  readonly sampleInterval: number;
  /** Estimates grouped by full label set, or by the value of `key`; largest first. */
  byLabel(key?: string): LabelGroup[];
  /** gzip-compressed pprof profile.proto. */
  toPprof(): Buffer;
  /** DevTools `.heapprofile` JSON object. */
  toHeapProfile(): { head: Node; samples: { size: number; nodeId: number; ordinal: number }[] };
  /**
   * Frees this read's native copy now (otherwise the GC frees it with the object). Idempotent;
   * afterwards `byLabel`, `toPprof`, `toHeapProfile` and not yet converted `samples`/`head` throw.
   */
  [Symbol.dispose](): void;
}

export interface HeapProfileHandle {
  /** Reads the profile now (after `stop()`: the last profile). */
  getAllocationProfile(): AllocationProfile;
  /** Stops the profiler; idempotent, returns the last profile. */
  stop(): AllocationProfile;
  [Symbol.dispose](): void;
}

/**
 * Starts the isolate's sampling heap profiler. Throws when one is already running in this isolate
 * (another session, the inspector, or `--heap-prof`).
 */
export function startHeapProfile(options?: HeapProfileOptions): HeapProfileHandle;

export interface Stats {
  /** Label sets still referenced (by a label holder, a live sample or live external bytes). */
  labelSets: number;
  /** Label holder objects (async-context stores) not yet garbage collected. */
  liveLabelHolders: number;
  /**
   * Of those, the ones whose labels did not fit under `maxLabelSets`: their samples carry the
   * overflow set until there is room again (they rebind then).
   */
  overflowLabelHolders: number;
  /** Whether a heap-labels session runs in this isolate. */
  profiling: boolean;
  /** Path of the native addon file this process loaded. */
  addon: string;
}

/** Bookkeeping of this isolate (label cardinality, holders); cheap enough to poll. */
export function stats(): Stats;

export const limits: Readonly<{ maxLabels: number; maxKeyBytes: number; maxValueBytes: number }>;

declare const heapLabels: {
  withHeapProfileLabels: typeof withHeapProfileLabels;
  setHeapProfileLabels: typeof setHeapProfileLabels;
  getHeapProfileLabels: typeof getHeapProfileLabels;
  capabilities: typeof capabilities;
  startHeapProfile: typeof startHeapProfile;
  stats: typeof stats;
  limits: typeof limits;
};
export default heapLabels;
