'use strict';
// ESLint (flat config) for the JS of the package and its tests: the recommended rules, which
// today's code passes, with the project's environments. `npm test` runs it (scripts/test.d/30-lint.sh).

const js = require('@eslint/js');
const globals = require('globals');

module.exports = [
  { ignores: ['build/', 'target/', 'node_modules/', 'tools/', 'v8-patches/'] },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { ecmaVersion: 2024, sourceType: 'commonjs', globals: { ...globals.node } },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { ecmaVersion: 2024, sourceType: 'module', globals: { ...globals.node } },
  },
  {
    // The HTML report's page script runs in the browser; the browser tests drive a page.
    files: ['lib/report/html.js', 'tests/browser.js'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  {
    rules: {
      // `catch {}` and `void x` are deliberate here (best-effort cleanup, keeping a value alive).
      'no-empty': ['error', { allowEmptyCatch: true }],
      'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none' }],
    },
  },
];
