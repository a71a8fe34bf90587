#!/usr/bin/env bash
# The ecosystems' checkers: ESLint (eslint.config.js, an npm devDependency) over the JS, and
# clang-format (.clang-format, V8's Google style; a Debian package scripts/test.sh installs) over cpp/.
# Rust's own (cargo fmt, clippy) run in the rust step.
set -uo pipefail
cd "${REPO:?run through scripts/test.sh}"
export PATH="$(bash scripts/runtimes.sh bin primary):$PATH"
status=0
node node_modules/eslint/bin/eslint.js lib tests bin benchmark demo scripts eslint.config.js && echo "eslint: passed" || status=1
clang-format --dry-run --Werror cpp/*.cc cpp/include/heap_labels/*.h && echo "clang-format: cpp/ passed" || status=1
exit $status
