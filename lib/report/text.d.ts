// Terminal views (lib/report/text.js).
import type { DiffOptions, ProfileDiff } from '../index.js';
import type { HeapModel } from './model.js';
import type { ProfileSummary } from './summary.js';

/**
 * The per-label table of the `groups` largest groups (default 50; Infinity: all) with a line for
 * the rest, and the top `top` sites of each shown group. A model is summarized first.
 */
export function reportText(profile: HeapModel | ProfileSummary, options?: DiffOptions & { groups?: number }): string;
/** The growth table of a diff and the top growing sites of each label. */
export function diffText(diff: ProfileDiff, options?: DiffOptions): string;
