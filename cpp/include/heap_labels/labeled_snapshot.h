// Heap snapshots written to a file (docs/architecture.md, "The labeled
// .heapsnapshot"): V8's serialization of one snapshot, and with labels the
// running session's profile with each sample's node in that snapshot, for the
// Rust core to add the label nodes (core/src/labeled_snapshot.rs).

#ifndef HEAP_LABELS_LABELED_SNAPSHOT_H_
#define HEAP_LABELS_LABELED_SNAPSHOT_H_

#include <cstdint>

#include <v8.h>

#include "rust/cxx.h"

namespace heap_labels {

struct RawSnapshotFile;  // shared struct, defined by the cxx bridge

// Takes a heap snapshot and serializes it to `path` (created or truncated).
// With `labels`, then takes the running session's profile with object ids (API
// version 3) and fills `out->profile` (label words as a read takes them;
// `unlabeled_word` becomes 0) and `out->sample_nodes` (each sample's node
// ordinal in the file, kNoRetainerNode when none). The snapshot is deleted
// before it returns. False when `labels` and no sampling heap profiler runs;
// throws when the file cannot be written or the runtime lacks API version 3.
// Isolate thread, no JS runs.
bool WriteSnapshotFile(v8::Isolate* isolate, uintptr_t unlabeled_word,
                       bool labels, rust::Str path, RawSnapshotFile* out);

}  // namespace heap_labels

#endif  // HEAP_LABELS_LABELED_SNAPSHOT_H_
