// Self-contained HTML views (lib/report/html.js).
import type { ProfileDiff, Retainers } from '../index.js';
import type { HeapModel } from './model.js';

/**
 * One page: label bars and flame graph of the latest model; several models: a timeline too.
 * `retainers`: retainers results (`handle.retainers()`, a dump's `.retainers.json`) and where each
 * came from, shown as a section of their trees.
 */
export function reportHtml(
  models: HeapModel[],
  options?: { key?: string; retainers?: { source: string; result: Retainers }[] },
): string;
/** One page of a diff (diffModels(base, current)): growth bars and growth flame graphs. */
export function diffHtml(base: HeapModel, current: HeapModel, diff: ProfileDiff, options?: { key?: string }): string;
