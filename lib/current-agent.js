'use strict';
// The running agent of this thread: set by lib/agent.js while an agent runs, read by the HTTP
// handler (lib/endpoint.js) when it is mounted without an agent of its own. Apart from both, so
// that the agent (which serves through the handler) and the handler do not import each other.

let current;

// The running agent of this thread, if any.
function currentAgent() {
  return current;
}

function setCurrentAgent(agent) {
  current = agent;
}

module.exports = { currentAgent, setCurrentAgent };
