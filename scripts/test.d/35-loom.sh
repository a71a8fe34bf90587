#!/usr/bin/env bash
# Model checks of the lock-free tables with loom (a crates.io crate): core/src/block_words.rs's
# insert/remove/grow/clean, core/src/set_counters.rs's counters and chunk reference counting and
# core/src/group_counters.rs's first charges (a group slot taken per projection), run as the
# `loom_models` tests beside each, on the crate built with `--cfg loom` (which swaps in loom's
# atomics, core/src/sync.rs). Each model sets its preemption bound (LOOM_MAX_PREEMPTIONS
# overrides them all); docs/architecture.md ("Model checks of the lock-free tables") says what the
# models cover and what they do not.
# Its own target directory: the cfg changes every crate's build. -D warnings keeps the cfg(loom)
# code as clean as clippy keeps the rest (dependencies' lints are capped by cargo).
set -euo pipefail
cd "${REPO:?run through scripts/test.sh}"
RUSTFLAGS="--cfg loom -D warnings" CARGO_TARGET_DIR="${HEAP_LABELS_TARGET_BASE:-target}/loom" \
  nice -n 10 cargo test -p heap-labels-core --release --lib loom_models
