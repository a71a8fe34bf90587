// Terminal views (lib/report/text.js).
import type { DiffOptions, ProfileDiff } from '../index.js';
import type { HeapModel } from './model.js';

/** The per-label table and the top `top` sites of each label. */
export function reportText(model: HeapModel, options?: DiffOptions): string;
/** The growth table of a diff and the top growing sites of each label. */
export function diffText(diff: ProfileDiff, options?: DiffOptions): string;
