// heap-labels/http: route labels for a plain node:http server.
import type { IncomingMessage } from 'node:http';
import type { Labels } from '../index.js';
import type { RouteLabelOptions } from './route-labels.js';

export type { RouteLabelOptions } from './route-labels.js';

/**
 * Labels the current request (enterWith semantics: the rest of the listener and everything it
 * starts) with the route `template` (undefined or null: the unmatched bucket) and the request's
 * extra labels; returns the interned label object.
 */
export type LabelRequest<Request> = (request: Request, template?: string | null) => Labels;

/** A labeler for a node:http server: one interned label object per template, no validation per request. */
export function httpRouteLabels<Request = IncomingMessage>(
  options?: RouteLabelOptions<Request>,
): LabelRequest<Request>;
