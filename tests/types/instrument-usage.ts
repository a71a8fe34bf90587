// Compile-only check of lib/instrument/'s internal declarations (scripts/test.d/40-typescript.sh),
// used as lib/agent.js and tests/zero-code.test.js use them.
import { startInstrumentation, type Instrumentation } from '../../lib/instrument/index.js';
import { fallbackRoute, normalisePath, MAX_SEGMENTS } from '../../lib/instrument/fallback-route.js';
import { kindOf, markOwnServer, claim, FRAMEWORK } from '../../lib/instrument/servers.js';
import * as http from 'node:http';

const running: Instrumentation = startInstrumentation((message) => process.stderr.write(`${message}\n`));
const label: string = fallbackRoute('GET', '/users/7');
const path: string = normalisePath(undefined);
const server = http.createServer();
markOwnServer(server);
const framework: boolean = kindOf(server) === FRAMEWORK;
claim({}, {});
void [label, path, framework, MAX_SEGMENTS];
running.stop();
// @ts-expect-error: log takes a message
startInstrumentation(42);
