'use strict';
// heap-labels/http: route labels for a plain node:http server, which has no router: the
// application names the route template it dispatched the request to.
//
//   const { httpRouteLabels } = require('heap-labels/http');
//   const labelRequest = httpRouteLabels({ labels: (req) => ({ tenant: tenantOf(req) }) });
//   http.createServer((req, res) => {
//     const route = routeOf(req);          // '/users/:id', or undefined when nothing matches
//     labelRequest(req, route);            // enterWith: the rest of this request carries it
//     ...
//   });
//
// labelRequest(req, template) sets the labels with setHeapProfileLabels (enterWith semantics), so
// call it in the request listener (or a middleware it calls synchronously): everything after it in
// that listener, and everything it starts or awaits, carries them; the next request starts from
// its own listener call. The request's and its response's event listeners ('data', 'end',
// 'close', 'finish', ...) run under them too, wherever they were added (request-context.js). It
// returns the interned label object. An undefined or null template is
// the unmatched bucket; bad extra labels or a template that cannot be a label value throw the
// library's TypeError/RangeError naming the key (the caller decides how the request fails; the
// labels are then the bucket without extra labels, so the error path does not run with the
// previous request's labels).

const { createRouteLabeler } = require('./route-labels');

const WHERE = 'heap-labels/http';

function httpRouteLabels(options) {
  const labeler = createRouteLabeler(options, WHERE);
  return function labelRequest(request, template) {
    if (template === null) template = undefined;
    if (template !== undefined && typeof template !== 'string') {
      throw new TypeError(
        `heap-labels: ${WHERE}: the route template must be a string (or undefined when no route ` +
          `matched), got a ${typeof template}`,
      );
    }
    try {
      return labeler.enter(request, template, labeler.extrasOf(request));
    } catch (error) {
      // The request still gets its own labels (the bucket) before the caller handles the error.
      labeler.enter(request, undefined, undefined);
      throw error;
    }
  };
}

module.exports = { httpRouteLabels };
