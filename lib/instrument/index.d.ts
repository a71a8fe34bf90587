// lib/instrument/: the automatic route labels the agent starts (option `routes`). Internal to the
// package (no subpath entry); declared for the agent and the tests.

/** The running instrumentation of this realm. */
export interface Instrumentation {
  /** Unsubscribes its channels; frameworks it patched stop labeling (their patches stay). */
  stop(): void;
}

/**
 * Starts the automatic route labels of this realm, once: a second call while it runs returns the
 * running one. `log(message)` writes one stderr line (the start line, one line per framework
 * version, a failed hook).
 */
export function startInstrumentation(log: (message: string) => void): Instrumentation;
