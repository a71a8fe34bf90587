// The report's bounded figures (lib/report/summary.js).
import type { Labels, ReportFigures } from '../index.js';
import type { HeapModel, ReadOptions } from './model.js';
import type { SiteRow } from './aggregate.js';

export interface SummaryGroup extends ReportFigures {
  /** "k=v,k2=v2", or "(unlabeled)". */
  name: string;
  labels: Labels;
  /** Share of the profile's in-use bytes (0..1). */
  share: number;
  /** Share of the profile's allocated bytes (0..1; 0 without allocations). */
  allocShare: number;
  /** The group's top `top` leaf sites, largest first. */
  sites: SiteRow[];
}

export interface ProfileSummary {
  source: string;
  timeNanos: number;
  readNanos: number;
  period: number;
  hasAllocations: boolean;
  /** What the reader noticed about the values (negative ones, ones beyond 2^53 - 1): one line each. */
  warnings: string[];
  total: ReportFigures;
  /** How many groups the profile has (shown or not). */
  groupCount: number;
  /** The `groups` largest, in-use bytes first. */
  groups: SummaryGroup[];
  /** The groups not shown, added up; null when every group is shown. */
  rest: (ReportFigures & { count: number; share: number; allocShare: number }) | null;
}

export interface SummaryOptions {
  /** Group by this key's value instead of by full label set. */
  key?: string;
  /** Sites per shown group (default 10, `DEFAULT_TOP`). */
  top?: number;
  /** Groups shown (default 50, `DEFAULT_GROUPS`; Infinity: all). */
  groups?: number;
}

/** gzip'd (or plain) pprof bytes -> summary, reading the samples one at a time; throws ReportError. */
export function summarizePprof(bytes: Uint8Array, source?: string, options?: SummaryOptions & ReadOptions): ProfileSummary;
/** A model (readPprof, fromAllocationProfile) -> summary. */
export function summarizeModel(model: HeapModel, options?: SummaryOptions): ProfileSummary;
/** 50. */
export const DEFAULT_GROUPS: number;
/** 10: sites per group (`top`). */
export const DEFAULT_TOP: number;
