// Reading profiles into the report model (lib/report/model.js).
import type { AllocationProfile, Labels } from '../index.js';

/** A stack frame of a sample: function name, file (URL) and 1-based line. */
export interface Frame {
  readonly name: string;
  readonly file: string;
  readonly line: number;
}

/** One pprof sample (one per site and label set), or one sampled object of an AllocationProfile. */
export interface ModelSample {
  /** Frozen, keys sorted; `{}` when unlabeled. */
  labels: Labels;
  /** Leaf first, without (root); the one frame `(other sites)` for allocated figures that lost their site. */
  stack: Frame[];
  inuseBytes: number;
  inuseObjects: number;
  allocBytes: number;
  allocObjects: number;
}

export interface HeapModel {
  /** The file name (or what the caller named the input). */
  source: string;
  /** pprof time_nanos: when the session started (ns since the epoch; 0: unset). */
  timeNanos: number;
  /** pprof duration_nanos: how long the session had run at the read. */
  durationNanos: number;
  /** When the read was made: timeNanos + durationNanos (0: unknown). */
  readNanos: number;
  /** The sampling interval in bytes. */
  period: number;
  /** Whether the profile has alloc_objects/alloc_space besides the in-use types. */
  hasAllocations: boolean;
  sampleTypes: { type: string; unit: string }[];
  samples: ModelSample[];
  /**
   * What the reader noticed about the values, one line each: negative values (summed as they are:
   * net figures) and values or sums beyond 2^53 - 1 (rounded: approximate). Empty for in-process reads.
   */
  warnings: string[];
}

/** Bad input (unreadable file, not a heap pprof, bad options): the CLI prints it and exits 2. */
export class ReportError extends Error {}

/** gzip'd (or plain) profile.proto bytes -> model; throws ReportError naming `source`. */
export function readPprof(bytes: Uint8Array, source?: string, options?: ReadOptions): HeapModel;
/** Reads and decodes a pprof file; throws ReportError naming the file. */
export function readPprofFile(file: string, options?: ReadOptions): HeapModel;
/**
 * gzip'd (or plain) profile.proto bytes -> the plain bytes, at most `maxInflatedBytes` (the one
 * limit of report, diff and export --otlp); a ReportError naming `source` and the limit otherwise.
 */
export function inflateProfile(bytes: Uint8Array, source?: string, options?: ReadOptions): Buffer;
/** A profile file's bytes, refused (ReportError) beyond `maxInflatedBytes` before more is read. */
export function readProfileBytes(file: string, options?: ReadOptions): Buffer;

/**
 * Bounds of a read: `maxInflatedBytes` is the largest profile read once decompressed (default
 * `DEFAULT_MAX_INFLATED_BYTES`, 64 MiB); larger input, and more repeated elements than one per
 * 16 bytes of it, are refused with a ReportError.
 */
export interface ReadOptions {
  maxInflatedBytes?: number;
}

/** 64 MiB. */
export const DEFAULT_MAX_INFLATED_BYTES: number;
/** An in-process read -> model (in-use figures; per-site allocated figures are not in `samples`). */
export function fromAllocationProfile(profile: AllocationProfile, source?: string): HeapModel;
/** A frozen label object with sorted keys. */
export function canonicalLabels(pairs: Iterable<[string, string]>): Labels;

/** The overflow set's key ('heap_labels.overflow'). */
export const OVERFLOW_KEY: string;

/** The frame of samples without a location: '(other sites)'. */
export const OTHER_SITES: Frame;
/** Whether a pprof label is a string label (numeric ones are not label sets). */
export function isStringLabel(label: { str: number; num: number }): boolean;

/** What every reader of a heap pprof needs before its samples (see model.js). */
export function profileHeader(
  raw: Buffer,
  source: string,
  options?: ReadOptions & { samples?: boolean },
): {
  p: import('./pprof-decode.js').DecodedProfile;
  str(index: number): string;
  types: { type: string; unit: string }[];
  /** Index of each figure among a sample's values (-1: the profile has no such type). */
  at: { inuseBytes: number; inuseObjects: number; allocBytes: number; allocObjects: number };
  frames: Map<number, Frame>;
  meta: Omit<HeapModel, 'samples' | 'warnings'>;
};

/** Notices negative sample values and values or sums beyond 2^53 - 1 while a profile is read. */
export class ValueCheck {
  constructor(types: { type: string; unit: string }[]);
  /** One sample's values, in sample-type order. */
  note(values: number[]): void;
  /** One line per kind noticed, naming `source`, the types and the counts. */
  warnings(source: string): string[];
}
