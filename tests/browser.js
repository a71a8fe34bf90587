'use strict';
// Headless Chromium for the tests (not a test file itself): Debian's chromium package driven by
// playwright-core (a devDependency). Playwright's own browser download does not work on these
// machines, so the system binary is launched with a fresh profile and everything that would reach
// the network turned off.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_MISSING =
  `${CHROMIUM} is missing: the test setup installs the Debian package chromium (scripts/test.sh; ` +
  'by hand: apt-get install chromium)';

// Starts the browser with a fresh profile; returns { context, close() } (close also removes the
// profile directory). Playwright takes the profile directory as launchPersistentContext's argument
// (it refuses a --user-data-dir flag).
async function launchChromium() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(CHROMIUM_MISSING);
  const { chromium } = require('playwright-core');
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'heap-labels-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    timeout: 60_000,
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

// Where screenshots go: test-artifacts/ at the repository root (git-ignored).
function artifactPath(name) {
  const dir = path.join(__dirname, '..', 'test-artifacts');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, name);
}

module.exports = { launchChromium, artifactPath, CHROMIUM };
