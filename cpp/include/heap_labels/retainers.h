// Retainers per label (docs/architecture.md, "Retainers per label"): a heap
// snapshot joined to the samples of the running session by the heap snapshot
// object ids of the labeled runtime's API version 3, and the shortest strong
// retaining chain of each sampled object copied into the bridge's plain
// structs. The aggregation per label is the Rust core's
// (core/src/retainers.rs).

#ifndef HEAP_LABELS_RETAINERS_H_
#define HEAP_LABELS_RETAINERS_H_

#include <cstdint>

#include <v8.h>

namespace heap_labels {

struct RawRetainers;  // shared struct, defined by the cxx bridge

// Marks in RawRetainerNode::parent (snapshot indices stay far below them).
// The node is the snapshot's root.
inline constexpr uint32_t kRetainerRoot = UINT32_MAX;
// No strong path from the root reaches the node (weak references only).
inline constexpr uint32_t kRetainerUnreached = UINT32_MAX - 1;
// The chain was copied this far (kMaxChainSteps); it goes on in the snapshot.
inline constexpr uint32_t kRetainerTruncated = UINT32_MAX - 2;
// RawRetainers::sample_nodes of a sample without a node: its object is dead
// or the snapshot did not see it.
inline constexpr uint32_t kNoRetainerNode = UINT32_MAX;

// Takes a heap snapshot, then the running session's profile with object ids
// (API version 3), and fills `out`: the profile (label words as a read takes
// them; `unlabeled_word` becomes 0), each sample's object node and the nodes
// of their chains. The snapshot and the walk's tables are freed before it
// returns. False when no sampling heap profiler runs; throws when the runtime
// has no API version 3. Isolate thread, no JS runs.
bool ReadRetainers(v8::Isolate* isolate, uintptr_t unlabeled_word,
                   RawRetainers* out);

}  // namespace heap_labels

#endif  // HEAP_LABELS_RETAINERS_H_
