// Per-label and per-site rows of a model (lib/report/aggregate.js).
import type { Labels, ReportFigures } from '../index.js';
import type { Frame, HeapModel, ModelSample } from './model.js';

export interface SiteRow extends ReportFigures {
  /** "function file:line" (a builtin without a file: its name). */
  name: string;
  frame: Frame;
}

export interface GroupRow extends ReportFigures {
  /** "k=v,k2=v2", or "(unlabeled)". */
  name: string;
  labels: Labels;
  /** Share of the profile's in-use bytes (0..1). */
  share: number;
  /** Share of the profile's allocated bytes (0..1; 0 without allocations). */
  allocShare: number;
  /** Every leaf site of the group, largest first. */
  sites: SiteRow[];
  /** The group's samples. */
  samples: ModelSample[];
}

export interface GroupedModel {
  total: ReportFigures;
  /** Largest in-use bytes first. */
  groups: GroupRow[];
}

export interface CallTreeNode {
  name: string;
  value: number;
  children: CallTreeNode[];
}

/** Groups as byLabel(key) groups them: by full set, or by `key`'s value; overflow stays apart. */
export function groupModel(model: HeapModel, key?: string): GroupedModel;
/** The call tree (root "all" first) of samples, weighted by `field` (default inuseBytes). */
export function callTree(samples: ModelSample[], field?: keyof ReportFigures): CallTreeNode;
/** "function file:line" of a frame. */
export function siteText(frame: Frame): string;
/** byLabel's order of rows: in-use bytes, then allocated bytes, largest first, then by name. */
export function byFigures(a: ReportFigures & { name: string }, b: ReportFigures & { name: string }): number;
/** The group rule of byLabel(key) for a set's keys: ALL (the whole set), the index of `key`, or NONE (unlabeled). */
export function groupedBy(keys: readonly string[], key: string | undefined): number;
export const ALL: -1;
export const NONE: -2;
export const FIGURES: readonly (keyof ReportFigures)[];
export const UNLABELED: Labels;
