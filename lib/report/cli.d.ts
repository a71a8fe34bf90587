// `heap-labels report|diff|export` (lib/report/cli.js).

/** Runs one command line (without `node` and the script); returns the exit status (2: bad input). */
export function main(argv: string[], io?: { stdout: { write(s: string): unknown }; stderr: { write(s: string): unknown } }): number;
