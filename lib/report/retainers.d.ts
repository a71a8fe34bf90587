// Retainers per label as text (lib/report/retainers.js).
import type { Retainers } from '../index.js';

/**
 * The text of `handle.retainers()`'s result: per group its labels and figures, its tree of
 * retainers (share and bytes of each step, the objects' classes first, then their retainers,
 * nearest first) and its allocation sites. `depth`: retainer steps shown below each class.
 */
export function retainersText(result: Retainers, options?: { depth?: number }): string;
/** The JSON of a `handle.retainers()` result written to `file`, its shape checked; throws ReportError. */
export function readRetainersFile(file: string): Retainers;
/** The first lines of a result's view: what was grouped and what the snapshot cost; how to read the trees. */
export function retainersHeader(result: Retainers): [string, string];
