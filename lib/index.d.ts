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
  /**
   * Profiles report bytes allocated per label, not only the live heap (patched runtime whose
   * sample-labels API is version 2: V8 reports dead samples).
   */
  allocations: boolean;
  /**
   * `HeapProfileHandle.retainers()`: what retains each label's objects (labeled runtime whose
   * sample-labels API is version 3: the samples' heap snapshot object ids).
   */
  retainers: boolean;
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
  /**
   * Allocation figures besides the live heap (default false): allocated bytes and objects per
   * label set and site (`hasAllocations`, `allocatedBytes`, pprof's alloc_* types). The patched
   * runtime reports dead samples in memory bounded by sites and label sets; Node.js 26 needs both
   * include-collected flags too (V8's `is_live`, memory grows with samples); elsewhere
   * `hasAllocations` stays false and `capabilities()` says why.
   */
  trackAllocations?: boolean;
  /** Most distinct label sets; more go to one overflow set. Integer >= 1, default 10000. */
  maxLabelSets?: number;
  /** V8 collects garbage before each read (kSamplingForceGC; default false). */
  forceGC?: boolean;
  /**
   * Group counters (`getHeapStats()`) by these 1 to 8 distinct non-empty label keys of at most 255
   * bytes of UTF-8: every label set is projected onto them, and samples and ArrayBuffer bytes are
   * counted per projection as they are taken and freed.
   */
  groupBy?: string[];
  /**
   * Most groups of distinct projections, 1..65536 (default 256). A projection takes one at its
   * first charge in the session (sets merely alive from before take none); later ones go to the
   * overflow group.
   */
  maxGroups?: number;
}

/** A group of `getHeapStats()`: counters since the session started (BigInt). */
export interface HeapGroup {
  /**
   * 'unknown' (first: no groupBy key, or only empty values, and unlabeled memory), 'overflow'
   * (second: a value over 255 bytes, maxGroups reached at a projection's first charge, or
   * heap-labels' own overflow set), or 'labels' (one per distinct projection charged in the
   * session, in the order of their first charge).
   */
  kind: 'unknown' | 'overflow' | 'labels';
  /** The projection: groupBy keys in their order, empty values left out; {} for the first two. */
  labels: Labels;
  allocatedHeapSampleCount: bigint;
  currentHeapSampleCount: bigint;
  /** currentHeapSampleCount x sampleInterval. */
  currentHeapBytes: bigint;
  allocatedExternalBytes: bigint;
  allocatedExternalCount: bigint;
  /** Frees are credited to the group charged at allocation, also on V8's sweeper threads. */
  freedExternalBytes: bigint;
  freedExternalCount: bigint;
  /** Includes the group's live bytes from before the session started. */
  currentExternalBytes: bigint;
  /** The peak of the window the last `advancePeakWindow: true` read closed (0 before). */
  publishedPeakExternalBytes: bigint;
}

export interface HeapStats {
  sampleInterval: number;
  /** Windows closed by `advancePeakWindow: true` reads. */
  peakWindowId: bigint;
  /**
   * What this session's grouping put in the overflow group: label sets with a value over 255
   * bytes, and projections first charged when maxGroups groups already existed.
   */
  overflowCount: bigint;
  groups: HeapGroup[];
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
  /**
   * Estimated bytes allocated in the profile's allocation window, live or dead (sampled like
   * `bytes`). Present when `hasAllocations`.
   */
  allocatedBytes?: number;
  /** Estimated objects allocated in the window. Present when `hasAllocations`. */
  allocatedObjects?: number;
}

/** What an OTLP profile says about its sender (see `AllocationProfile.toOtlp`). */
export interface OtlpOptions {
  /** The resource's `service.name`; default `OTEL_SERVICE_NAME`, else `unknown_service:<executable>`. */
  serviceName?: string;
  /** More resource attributes (at most 64): strings or safe integers; they win over the defaults. */
  attributes?: Readonly<Record<string, string | number>>;
}

export interface AllocationProfile {
  /**
   * Whether the profile has allocation figures besides the live heap: a `trackAllocations`
   * session on the patched runtime (dead-sample reports, sample-labels API version 2) or on a V8
   * with `Sample::is_live` and both include-collected flags. The window runs from the session's
   * start, or from the last read with `resetAllocations`.
   */
  readonly hasAllocations: boolean;
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
  /**
   * OpenTelemetry profiles: a protobuf-encoded (uncompressed) OTLP `ProfilesData` message
   * (opentelemetry-proto v1.10.0, profiles v1development) with the same samples as `toPprof()`:
   * one profile per sample type (`inuse_space` first), each label a sample attribute keyed by the
   * label's key, and a resource with `service.name` (option `serviceName`, else
   * `OTEL_SERVICE_NAME`, else `unknown_service:node`), `process.*` and `host.name`, then
   * `attributes`. The bytes are also a valid `ExportProfilesServiceRequest` (OTLP/HTTP body).
   */
  toOtlp(options?: OtlpOptions): Buffer;
  /** DevTools `.heapprofile` JSON object. */
  toHeapProfile(): { head: Node; samples: { size: number; nodeId: number; ordinal: number }[] };
  /**
   * Frees this read's native copy now (otherwise the GC frees it with the object). Idempotent;
   * afterwards `byLabel`, `toPprof`, `toOtlp`, `toHeapProfile` and not yet converted `samples`/`head` throw.
   */
  [Symbol.dispose](): void;
}

export interface HeapProfileHandle {
  /**
   * Reads the profile now (after `stop()`: the last profile). `resetAllocations: true` starts a
   * new allocation window after this read, so that the next read's allocated figures cover only
   * what was allocated in between (delta profiles).
   */
  getAllocationProfile(options?: { resetAllocations?: boolean }): AllocationProfile;
  /** Stops the profiler; idempotent, returns the last profile. */
  stop(): AllocationProfile;
  /**
   * The group counters of a session started with `groupBy`, read without building a profile (at
   * most maxGroups + 2 rows); undefined without groupBy and after `stop()`. With
   * `advancePeakWindow: true` the read closes the external-peak window and publishes its peak.
   */
  getHeapStats(options?: { advancePeakWindow?: boolean }): HeapStats | undefined;
  /**
   * What retains the session's live sampled objects, per label group (by full label set, or by the
   * value of `key`, as `byLabel`): takes one heap snapshot, joins it to the samples and merges
   * each object's shortest strong retaining chain into a tree per group. Needs the labeled runtime
   * (`capabilities().retainers`; elsewhere it throws `ERR_HEAP_LABELS_UNSUPPORTED`). The app is
   * paused for the whole call (`snapshot.pauseMs`) and the snapshot needs memory of the order of
   * the used heap: it refuses (`ERR_HEAP_LABELS_NO_ROOM`) when less is free below the heap limit
   * or on the machine, and while another heap snapshot is held (`ERR_HEAP_LABELS_SNAPSHOT_BUSY`).
   * `force: true` skips the room check (an estimate for heaps of small objects; heaps of large
   * strings and arrays need less), never the busy one.
   */
  retainers(key?: string, options?: { force?: boolean }): Retainers;
  /**
   * Writes a heap snapshot file (`path`, default `heap-labels-<time>-<pid>-<seq>.heapsnapshot` in
   * the working directory; written under a temporary name and renamed: whole or absent). Without
   * `labels`: V8's snapshot, on any runtime. With `labels: true` (labeled runtime,
   * `capabilities().retainers`; a running session): one node per label group of the session (by
   * full label set, or by `key`'s value), `(heap-labels) route="/leak"`, with weak edges to the
   * group's sampled objects, for DevTools' Memory panel (Summary: filter by `heap-labels`); every
   * object keeps its retained size. Pauses the app for the whole call and refuses as `retainers()`
   * does (`ERR_HEAP_LABELS_NO_ROOM`, `ERR_HEAP_LABELS_SNAPSHOT_BUSY`, `ERR_HEAP_LABELS_UNSUPPORTED`).
   */
  writeHeapSnapshot(options?: { labels?: boolean; key?: string; path?: string }): HeapSnapshotFile;
  [Symbol.dispose](): void;
}

/** `HeapProfileHandle.writeHeapSnapshot()`: what was written and what it cost. */
export interface HeapSnapshotFile {
  /** Absolute path of the file. */
  path: string;
  /** Bytes of the file. */
  bytes: number;
  /** Nodes of V8's snapshot (the label nodes not counted). */
  nodes: number;
  /** Milliseconds for the snapshot (and the profile). */
  snapshotMs: number;
  /** Milliseconds for V8's serialization to the file. */
  serializeMs: number;
  /** Milliseconds for the two passes that add the label nodes (0 without labels). */
  labelMs: number;
  /** Milliseconds the app was paused: the whole call. */
  pauseMs: number;
  /** With labels and `key`: the grouping key. */
  key?: string;
  /** With labels: one per label group with samples, largest first. */
  groups?: HeapSnapshotLabelGroup[];
}

export interface HeapSnapshotLabelGroup {
  /** As `byLabel`: a full set, `{ [key]: value }`, or `{}` for unlabeled samples. */
  labels: Labels;
  /** The label node's name in the file: `(heap-labels) route="/leak"`. */
  node: string;
  /** Estimated live bytes of the group's samples (as `byLabel`'s `bytes`). */
  bytes: number;
  samples: number;
  /** Of those, the samples whose object is in the snapshot (linked by a weak edge), and their bytes. */
  linkedBytes: number;
  linkedSamples: number;
  /** Distinct objects the label node has edges to. */
  objects: number;
}

/** `HeapProfileHandle.retainers()`: what keeps each label group's sampled objects alive. */
export interface Retainers {
  /** What the snapshot cost. */
  snapshot: {
    /** Nodes of the heap snapshot. */
    nodes: number;
    /** Milliseconds for the snapshot and the profile. */
    snapshotMs: number;
    /** Milliseconds for the walk of the snapshot and the copy of the chains. */
    walkMs: number;
    /** Native bytes of the walk's tables (freed before the call returned). */
    walkBytes: number;
    /** Milliseconds the app was paused: the whole call. */
    pauseMs: number;
  };
  sampleInterval: number;
  /** The grouping key, absent when grouped by full label set. */
  key?: string;
  /** Largest first; at most 50. */
  groups: RetainerGroup[];
  /** The groups not listed. */
  moreGroups: { groups: number; bytes: number; samples: number };
}

export interface RetainerGroup {
  /** As `byLabel`: a full set, `{ [key]: value }`, or `{}` for unlabeled samples. */
  labels: Labels;
  /** Estimated live bytes of the group's samples (as `byLabel`'s `bytes`). */
  bytes: number;
  samples: number;
  /** Of those, samples whose object the snapshot has no node for (dead, or allocated after it). */
  unmatchedBytes: number;
  unmatchedSamples: number;
  /**
   * The tree: the objects' classes first, under each its retainers, nearest first (DevTools'
   * Retainers view). At most 12 retainer steps deep (a step repeated right away counts once) and
   * 8 children per node; children under 1 % of the group's bytes and those beyond the 8 largest
   * are one `(other)` node, under which their retainers go on, merged.
   */
  paths: RetainerPath[];
  /** The group's largest allocation sites (leaf frames). */
  sites: RetainerSite[];
}

export interface RetainerPath {
  /**
   * 'object': the group's objects of one class; 'retainer': an edge from a retainer (or from a run
   * of V8-internal nodes) to the node above; 'unreachable': held by weak references only;
   * 'truncated': the chain goes on, not followed; 'other': the smaller children, merged.
   */
  kind: 'object' | 'retainer' | 'unreachable' | 'truncated' | 'other';
  /** As the text report shows it: `Object`, `table in Map`, `[*] in (internal array)`. */
  text: string;
  /** The object's or the retainer's class (strings, numbers and the like by their type). */
  name?: string;
  /** The node type of the object or the retainer (DevTools' names: 'object', 'closure', ...). */
  nodeType?: string;
  /** The edge's name: a property, a variable, `[12]` for an index, `[*]` for several. */
  edge?: string;
  edgeType?: 'context' | 'element' | 'property' | 'internal' | 'hidden' | 'shortcut' | 'weak' | 'unknown';
  /** The step stands for V8-internal nodes (`system / ...`, backing stores); see `through`. */
  internal?: true;
  /** The last node's class when the internal run is longer than one. */
  through?: string;
  /** Estimated bytes of the samples whose chain passes here. */
  bytes: number;
  samples: number;
  /** `bytes` over the group's `bytes`. */
  share: number;
  /** Some chains go on beyond the depth limit. */
  deeper?: true;
  /**
   * The fewest and most times in a row the chains took this step (a linked list's
   * `next in Link`), when more than once; the text shows `×3` or `×3-30`.
   */
  repeat?: [number, number];
  /** 'other': how many steps it merges; its children are theirs, merged by step. */
  merged?: number;
  children: RetainerPath[];
}

export interface RetainerSite {
  functionName: string;
  url: string;
  /** 1-based; 0 when unknown. */
  lineNumber: number;
  bytes: number;
  samples: number;
  share: number;
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

// ---- production agent -------------------------------------------------------------------------

/**
 * Options of `startAgent`; each has a `HEAP_LABELS_*` environment variable of the same meaning for
 * `heap-labels/register` (docs/operations.md).
 */
export interface AgentOptions {
  /** Mean bytes between samples; integer 1..2^32-1, default 524288. HEAP_LABELS_SAMPLE_INTERVAL. */
  sampleInterval?: number;
  /** Deepest JS stack per sample; 1..1024, default 64. HEAP_LABELS_STACK_DEPTH. */
  stackDepth?: number;
  /** Most distinct label sets; default 10000. HEAP_LABELS_MAX_LABEL_SETS. */
  maxLabelSets?: number;
  /** Where dumps go (created if missing); default the working directory. HEAP_LABELS_DIR. */
  dir?: string;
  /** Dumps kept in `dir` (older ones removed); 1..100000, default 10. HEAP_LABELS_KEEP. */
  keep?: number;
  /** Signal that writes a dump, or 'off'/null; default 'SIGUSR2'. HEAP_LABELS_SIGNAL. */
  signal?: 'SIGUSR2' | 'SIGHUP' | 'SIGWINCH' | 'SIGURG' | 'SIGPWR' | 'off' | null;
  /** 'host:port' of the agent's own HTTP server (port 0: any free port), or 'off'/null. HEAP_LABELS_HTTP. */
  http?: string | null;
  /** Bearer token for the HTTP server (required off loopback); 16..1024 characters. HEAP_LABELS_TOKEN. */
  token?: string | null;
  /** Profiles written near the heap limit (0: off); 0..1000, default 1. HEAP_LABELS_NEAR_HEAP_LIMIT. */
  nearHeapLimit?: number;
  /**
   * Seconds between the growth watch's counter snapshots (0: off); 0 or 0.1..86400, default 0.
   * HEAP_LABELS_WATCH_INTERVAL.
   */
  watchInterval?: number;
  /** Increases in a row before a label set is flagged; 1..50, default 4. HEAP_LABELS_WATCH_PERIODS. */
  watchPeriods?: number;
  /** Least total growth (bytes) over those periods; 0..2^32-1, default 4194304. HEAP_LABELS_WATCH_MIN_GROWTH. */
  watchMinGrowth?: number;
  /**
   * Least total growth in percent of the window's first snapshot; 0..10000, default 10.
   * HEAP_LABELS_WATCH_MIN_GROWTH_PERCENT.
   */
  watchMinGrowthPercent?: number;
  /**
   * Allocated figures per window (trackAllocations), served as /debug/pprof/allocs and pushed;
   * default true. HEAP_LABELS_ALLOCATIONS (on/off).
   */
  allocations?: boolean;
  /**
   * Without pushes, the agent ends the allocation window (which only pushes read) at least this
   * often, so that its groups do not hold label sets; 1..86400 seconds, default 60.
   * HEAP_LABELS_ALLOCATION_WINDOW.
   */
  allocationWindow?: number;
  /**
   * Collector to push OTLP profiles to (http/https; a base URL gets /v1development/profiles), or
   * 'off'/null (default). HEAP_LABELS_OTLP_ENDPOINT.
   */
  otlpEndpoint?: string | null;
  /** Request headers of each push (auth); at most 32. HEAP_LABELS_OTLP_HEADERS (`k=v,k2=v2`, percent-encoded). */
  otlpHeaders?: Readonly<Record<string, string>>;
  /** Seconds between pushes; 0.1..86400, default 60. HEAP_LABELS_PUSH_INTERVAL. */
  pushInterval?: number;
  /** Seconds a push may take; 0.1..600, default 10. HEAP_LABELS_PUSH_TIMEOUT. */
  pushTimeout?: number;
  /** Profiles kept while the collector is unreachable (the oldest is dropped); 1..1000, default 8. HEAP_LABELS_PUSH_QUEUE. */
  pushQueue?: number;
  /**
   * The pushed resource's service.name; default OTEL_SERVICE_NAME, else
   * unknown_service:<executable>. HEAP_LABELS_SERVICE_NAME.
   */
  serviceName?: string | null;
  /**
   * Automatic route labels, default on: every request of express 4-5, fastify 4-5, koa 2-3 with
   * @koa/router (and NestJS on express or fastify) labeled `route` by its route template, other
   * node:http/https/http2 servers' by method and normalised path ('GET /users/:int'), with no
   * change to the app. HEAP_LABELS_ROUTES (on/off).
   */
  routes?: boolean;
  /**
   * Retainers per label for operators (labeled runtime): the HTTP server's
   * /debug/heap-labels/retainers and, with each signal dump, its `<stem>.retainers.json`. Each is a
   * heap snapshot: the app is paused for all of it and needs several times the used heap; default
   * off. `agent.retainers()` from code works either way. HEAP_LABELS_RETAINERS (on/off).
   */
  retainers?: boolean;
}

/** Options after validation: defaults filled in, `dir` absolute, `http` parsed. */
export interface ResolvedAgentOptions {
  sampleInterval: number;
  stackDepth: number;
  maxLabelSets: number;
  dir: string;
  keep: number;
  signal: string | null;
  http: { host: string; port: number } | null;
  token: string | null;
  nearHeapLimit: number;
  watchInterval: number;
  watchPeriods: number;
  watchMinGrowth: number;
  watchMinGrowthPercent: number;
  allocations: boolean;
  allocationWindow: number;
  otlpEndpoint: string | null;
  otlpHeaders: Record<string, string>;
  pushInterval: number;
  pushTimeout: number;
  pushQueue: number;
  serviceName: string | null;
  routes: boolean;
  retainers: boolean;
}

/** What the agent's pusher has done since it started (`Agent.pushStats()`). */
export interface PushStats {
  /** Windows read. */
  collected: number;
  /** Profiles the collector took (2xx). */
  sent: number;
  /** Attempts that failed and will be retried (network errors, timeouts, 429/502/503/504). */
  failedAttempts: number;
  /** Profiles dropped, for any of the reasons in `dropReasons` (collected = sent + dropped + queued). */
  dropped: number;
  /** Why: the queue was full (oldest waiting first), the collector refused it (non-retryable answer or a redirect), `agent.stop()` with it queued, the process exited first. */
  dropReasons: { queueFull: number; rejected: number; stopped: number; exit: number };
  /** Profiles the collector refused with another status (not retried, as OTLP says). */
  rejected: number;
  /** Reads that failed. */
  readErrors: number;
  bytesSent: number;
  /** Profiles waiting. */
  queued: number;
  consecutiveFailures: number;
  lastError: string | undefined;
  /** ISO time of the last profile the collector took. */
  lastSuccess: string | undefined;
}

/** One snapshot of a watched label set. */
export interface GrowthPoint {
  /** When the counters were read (ms since the epoch). */
  time: number;
  /** The set's `heapBytes` then (on stock runtimes, for the unlabeled group: V8's used heap size). */
  heapBytes: number;
  /** Its live samples then (0 on stock runtimes, where samples are not counted). */
  samples: number;
}

/** A label set whose live heap grew `watchPeriods` snapshots in a row beyond the thresholds. */
export interface GrowthEntry {
  /** The label set; `{}` for the unlabeled group (the only one on stock runtimes). */
  labels: Labels;
  /** Increases in this episode so far (at least `watchPeriods`). */
  periods: number;
  /** When the set was flagged (ms since the epoch). */
  since: number;
  /** Bytes at the first snapshot of the window that flagged it. */
  fromBytes: number;
  /** Bytes at the latest snapshot. */
  heapBytes: number;
  /** The last `watchPeriods` + 1 snapshots, oldest first. */
  series: readonly GrowthPoint[];
}

export interface DumpResult {
  pprofPath: string;
  summaryPath: string;
  /** Files removed to keep the newest `keep` dumps. */
  removed: string[];
  /** Live samples in the profile. */
  samples: number;
  /** How long the main thread was held (copying V8's profile); the rest ran on a worker thread. */
  pauseMs: number;
}

export interface Agent {
  readonly options: ResolvedAgentOptions;
  /** Whether samples carry labels in this process (the patched runtime). */
  readonly labeled: boolean;
  /** The agent's own HTTP server, once it listens. */
  readonly address: { host: string; port: number; url: string } | undefined;
  readonly running: boolean;
  /** Writes a labeled pprof and a text per-label summary into `dir` (atomically). */
  dump(options?: { reason?: string }): Promise<DumpResult>;
  /**
   * The current profile in memory: gzip'd pprof or the text summary; `gc` runs a full GC first;
   * `allocs`: Go's allocs profile (`alloc_space` the default type). Allocated figures count
   * from the agent's start, as in Go (no read restarts them; pushes keep their own windows).
   * Concurrent callers share one copy of V8's profile,
   * copies are spaced (they hold the main thread at most 10 % of the time) and a full GC runs at
   * most once per 10 s: a read that cannot be served rejects with an error whose `code` is
   * `ERR_HEAP_LABELS_BUSY` and whose `retryAfter` says in how many seconds to try again.
   */
  profile(options?: { format?: 'pprof'; gc?: boolean; reason?: string; allocs?: boolean }): Promise<Buffer>;
  profile(options: { format: 'summary'; gc?: boolean; reason?: string; allocs?: boolean }): Promise<string>;
  /**
   * Pushes a window now (it ends with this read) and waits until the queue is sent or the push
   * timeout passes: `sent` whether it emptied; `pprof` the same window as pprof when asked.
   * Rejects when pushing is off.
   */
  push(options?: { pprof?: boolean }): Promise<{ sent: boolean; pprof: Buffer | undefined }>;
  /** The pusher's counters; undefined when pushing is off. */
  pushStats(): PushStats | undefined;
  /** Per-label counters (see `labelCounters`). */
  counters(): LabelCounters;
  /**
   * What retains the session's live sampled objects, per label group (by full set, or by `key`'s
   * value): `HeapProfileHandle.retainers(key)` on the agent's session, with its refusals
   * (`ERR_HEAP_LABELS_UNSUPPORTED`, `ERR_HEAP_LABELS_NO_ROOM`, `ERR_HEAP_LABELS_SNAPSHOT_BUSY`).
   * One heap snapshot: the app is paused for the whole call. Available from code whatever the
   * option `retainers`, which opens it to operators (the endpoint, signal dumps).
   */
  retainers(options?: { key?: string }): Retainers;
  /**
   * The label sets the growth watch flags now, largest growth first; `[]` when `watchInterval` is 0.
   * A set stays flagged until its estimate decreases.
   */
  growth(): GrowthEntry[];
  /** Stops the signal listener, the server, the near-heap-limit callback and the session. */
  stop(): Promise<void>;
}

/**
 * Starts the production agent of this thread: an always-on session, dumps on `signal`, an HTTP
 * server when `http` is set, a profile near the heap limit. Rejects on bad options (naming them),
 * when an agent or another profiler already runs, or when the server cannot listen.
 */
export function startAgent(options?: AgentOptions): Promise<Agent>;

/** The running agent of this thread (started by `startAgent` or `heap-labels/register`). */
export function currentAgent(): Agent | undefined;

export interface LabelCounterGroup {
  /** The label set; `{}` for unlabeled samples and bytes; the overflow set for sets past the cap. */
  labels: Labels;
  /** Estimated live heap bytes: live samples x sampling interval. */
  heapBytes: number;
  /** Live heap samples. */
  samples: number;
  /** ArrayBuffer/Buffer bytes currently charged to the set. */
  externalBytes: number;
  /** Highest `externalBytes` since this reader's previous read (each metrics adapter, the growth watch and `labelCounters()` have their own periods). */
  externalPeakBytes: number;
}

export interface LabelCounters {
  /** Sampling interval of the running session (0: none runs). */
  sampleInterval: number;
  /** Whether samples are counted per label set (patched runtime); else only the unlabeled group. */
  perSetSamples: boolean;
  /** One group per label set with live samples or external bytes, and always the unlabeled group. */
  groups: LabelCounterGroup[];
}

/** Per-label counters without reading a profile (no call tree); cheap enough for every scrape. */
export function labelCounters(): LabelCounters;

// ---- diffs ------------------------------------------------------------------------------------

/** The four figures of a group or site; allocated ones are 0 where the profile has none. */
export interface ReportFigures {
  inuseBytes: number;
  inuseObjects: number;
  allocBytes: number;
  allocObjects: number;
}

/** Base, current and current - base of one group or site. */
export interface GrowthFigures {
  /** The group's or site's name: "route=/a,tenant=t1", "(unlabeled)", or "function file:line". */
  name: string;
  base: ReportFigures;
  current: ReportFigures;
  delta: ReportFigures;
  /** Growth of in-use bytes in percent of the base's; null when the base had none (new). */
  percent: number | null;
}

export interface LabelGrowth extends GrowthFigures {
  /** The group's labels (equal to its byLabel() group's): a full set, `{ [key]: value }`, or `{}`. */
  labels: Labels;
  /** The sites (leaf function file:line) whose in-use bytes grew most, most first. */
  sites: GrowthFigures[];
}

export interface ProfileDiff {
  /** Whether both profiles have allocated figures (else the alloc* figures are 0). */
  hasAllocations: boolean;
  /** Where the profiles came from and when they were read (ns since the epoch; 0: unknown). */
  base: { source: string; readNanos: number };
  current: { source: string; readNanos: number };
  total: GrowthFigures;
  /** One row per group of either profile, most grown (in-use bytes) first. */
  groups: LabelGrowth[];
}

export interface DiffOptions {
  /** Group by this label key's value (as byLabel(key)); default: by full label set. */
  key?: string;
  /** Sites listed per group, default 10. */
  top?: number;
}

/**
 * Growth from `base` to `current` (two reads, e.g. before and after a load test): per label group
 * the profiles' own byLabel(key) figures and their delta, and the sites (leaf frames of the
 * samples' stacks) whose in-use bytes grew most. `heap-labels diff` does the same for pprof files.
 */
export function diffProfiles(base: AllocationProfile, current: AllocationProfile, options?: DiffOptions): ProfileDiff;

declare const heapLabels: {
  withHeapProfileLabels: typeof withHeapProfileLabels;
  setHeapProfileLabels: typeof setHeapProfileLabels;
  getHeapProfileLabels: typeof getHeapProfileLabels;
  capabilities: typeof capabilities;
  startHeapProfile: typeof startHeapProfile;
  stats: typeof stats;
  startAgent: typeof startAgent;
  currentAgent: typeof currentAgent;
  labelCounters: typeof labelCounters;
  diffProfiles: typeof diffProfiles;
  limits: typeof limits;
};
export default heapLabels;
