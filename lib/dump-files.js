// @ts-check
'use strict';
// The files of a dump, as JS reads and writes them: core/src/dump.rs names a dump
// (`heap-labels-<time>-<pid>-<n>[-<tag>]`, its pprof `.pb.gz` and summary `.txt`) and owns their
// retention, which also removes a dump's retainers (RETAINERS_EXT there, the same text): the agent
// writes them beside a signal dump's pprof (option retainers), `heap-labels report` finds them there.

const PPROF_EXT = '.pb.gz';
const RETAINERS_EXT = '.retainers.json';

// The retainers file of the dump whose pprof is `pprofPath`; undefined for a file not named so.
function retainersPathOf(pprofPath) {
  return pprofPath.endsWith(PPROF_EXT) ? `${pprofPath.slice(0, -PPROF_EXT.length)}${RETAINERS_EXT}` : undefined;
}

module.exports = { retainersPathOf };
