'use strict';
// What the endpoint benchmarks share: waiting for an app started with the agent's server on
// 127.0.0.1:0 (HEAP_LABELS_HTTP) to serve.

const AGENT_LINE = /serving heap profiles at http:\/\/127\.0\.0\.1:(\d+)\//;

// Waits until `child` (spawned with stdout and stderr piped) serves: its own port, which
// `appPort(stdout)` reads from what it printed (undefined until it is there), and the agent's, from
// the agent's line on stderr. Resolves to { child, port, agentPort, stderr() }; rejects, killing the
// child, when it exits first or the agent reports that it is not profiling.
function appServing(child, appPort) {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const poll = setInterval(() => {
      const port = appPort(stdout);
      const agent = AGENT_LINE.exec(stderr);
      if (port !== undefined && agent) {
        clearInterval(poll);
        resolve({ child, port, agentPort: Number(agent[1]), stderr: () => stderr });
      } else if (child.exitCode !== null || /not profiling/.test(stderr)) {
        clearInterval(poll);
        child.kill('SIGKILL');
        reject(new Error(`the app did not start:\n${stderr}`));
      }
    }, 20);
  });
}

module.exports = { appServing };
