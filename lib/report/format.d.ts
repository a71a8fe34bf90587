// Number and label formatting and text tables (lib/report/format.js).

/** `route="/a", tenant="t1"` (the dump summary's label text), or "(unlabeled)" for `{}`. */
export function labelsText(labels: Readonly<Record<string, string>>): string;
/** 1536 -> "1.5 KiB". */
export function formatBytes(n: number): string;
/** 12345.6 -> "12,346". */
export function formatCount(n: number): string;
/** 0.5 -> "50.0%". */
export function formatPercent(fraction: number): string;
/** Signed bytes: "+1.5 KiB". */
export function formatDeltaBytes(n: number): string;
/** Signed count: "+12". */
export function formatDeltaCount(n: number): string;
/** A percent growth, or "new" for null. */
export function formatGrowth(percent: number | null): string;
/** Aligned columns: the first left-aligned, the others right-aligned. */
/**
 * Text from a profile as printable text: C0/C1 controls, DEL, line separators and bidirectional
 * controls as `\n`, `\t`, `\r`, `\xNN` or `\u{NNNN}`, and `\` as `\\` (distinct inputs stay distinct).
 */
export function printable(text: string): string;
export function table(header: string[], rows: (string | number)[][], indent?: string): string;
