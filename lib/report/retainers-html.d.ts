// The retainers section of the HTML report (lib/report/retainers-html.js).
import type { Retainers } from '../index.js';

/**
 * Static HTML (escaped) of retainers results: per result and label group, the tree of retainers
 * with share and bytes, the samples not in the snapshot, the allocation sites. '' for none.
 */
export function retainersSection(results: { source: string; result: Retainers }[]): string;
/** The section's CSS (the report page adds it to its own). */
export const RETAINERS_CSS: string;
