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
}

/** Bad input (unreadable file, not a heap pprof, bad options): the CLI prints it and exits 2. */
export class ReportError extends Error {}

/** gzip'd (or plain) profile.proto bytes -> model; throws ReportError naming `source`. */
export function readPprof(bytes: Uint8Array, source?: string, options?: ReadOptions): HeapModel;
/** Reads and decodes a pprof file; throws ReportError naming the file. */
export function readPprofFile(file: string, options?: ReadOptions): HeapModel;
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
