// What heap-labels keeps per labeled request, beside the request in a table (request-context.js),
// and the labels its own event listeners run under. Internal to the integrations.

/** One object per labeled request (or HTTP/2 stream); each field is written by the module named in request-context.js. */
export interface RequestState {
  /** route-labels.js: the request holder the request was started under (late binding). */
  holder: object | undefined;
  /** route-labels.js: the labels entered last for the request. */
  labels: object | undefined;
  /** The label holder the request's own listeners run under (bindRequest). */
  listeners: object | undefined;
  /** The integrations: the request's interned extra labels. */
  extras: object | undefined;
}

/** The state of a request a koa app serves. */
export interface KoaRequestState extends RequestState {
  /** koa.js: the route behind ctx._matchedRoute's accessor. */
  koaMatchedRoute: unknown;
}

/** The state of a request an express app serves: express's routing keeps more per request. */
export interface ExpressRequestState extends RequestState {
  /** express.js: the route behind req.route's accessor. */
  expressRoute: unknown;
  /** express-templates.js: the Mount the request is in and req.baseUrl when it entered it. */
  mount: object | undefined;
  base: string | undefined;
  /** express-templates.js: how the request leaves the first router mount it is in. */
  exitNext: unknown;
  exitParent: object | undefined;
  exitBase: string | undefined;
  exitEntered: boolean;
}

/** The state of `request`, undefined if it has none. */
export function stateOf(request: object): RequestState | undefined;

/** The state of `request`, made if it has none. */
export function ensureState(request: object): RequestState;

/**
 * The same for a request an express app serves: made as an ExpressRequestState. A state made
 * before as another class is returned as it is: its express fields may be missing.
 */
export function ensureExpressState(request: object): RequestState & Partial<ExpressRequestState>;

/** The same for a request a koa app serves: made as a KoaRequestState (as above, if made before). */
export function ensureKoaState(request: object): RequestState & Partial<KoaRequestState>;

/**
 * Records `holder`, the label holder the caller just entered (current now), as `request`'s own: its
 * and its response's listeners run under it from now on. `request`: node:http's IncomingMessage or
 * an Http2ServerRequest; anything else is left alone.
 */
export function bindRequest(request: unknown, state: RequestState, holder: object | undefined): void;

/** The same for an HTTP/2 server stream: its listeners and those of its compatibility-API request and response. */
export function bindStream(stream: unknown): void;
