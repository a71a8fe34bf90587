// `heap-labels export --otlp` (lib/report/export.js).

/** Writes the pprof file `file` as an OTLP ProfilesData message; throws a ReportError on bad input. */
export function exportOtlp(
  file: string,
  options?: {
    out?: string;
    serviceName?: string;
    attributes?: Readonly<Record<string, string | number>>;
    /** Largest input read, in bytes (default 64 MiB; `--max-inflated-mib`). */
    maxInflatedBytes?: number;
  },
): { out: string; bytes: number };
