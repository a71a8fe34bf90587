// The isolate's sampling heap profiler: start, stop, and copying
// v8::AllocationProfile into the bridge's plain structs.

#ifndef HEAP_LABELS_SAMPLING_H_
#define HEAP_LABELS_SAMPLING_H_

#include <cstddef>
#include <cstdint>

#include <v8-profiler.h>
#include <v8.h>

namespace heap_labels {

struct RawProfile;    // shared struct, defined by the cxx bridge
struct StartOptions;  // shared struct, defined by the cxx bridge
enum class AllocationsRead : std::uint8_t;  // shared enum, cxx bridge

// V8's SamplingFlags for `options`.
int SamplingFlags(const StartOptions& options);

// Starts the sampling heap profiler of `isolate`. Returns false when one is
// already running (another session, the inspector, or --heap-prof): V8 keeps
// a single sampling heap profiler per isolate.
bool StartSamplingHeapProfiler(v8::Isolate* isolate,
                               const StartOptions& options);

void StopSamplingHeapProfiler(v8::Isolate* isolate);

// What a read copies besides V8's profile.
struct ReadOptions {
  // Samples whose word is this (see SampleLabelsContext) come out unlabeled
  // (word 0).
  uintptr_t unlabeled_word = 0;
  // The isolate's dead-sample totals when the session reports dead samples
  // (0: it does not), and which of their figures the read takes (the
  // window, restarting it, or since the start).
  std::size_t dead_sample_totals = 0;
  AllocationsRead allocations_read{};
};

// Copies the current allocation profile: nodes in pre-order with parent
// indices, then the samples, and the allocation window's dead samples.
// Returns false when no profiler is running.
bool ReadAllocationProfile(v8::Isolate* isolate, RawProfile* out,
                           const ReadOptions& options = {});

// Copies the nodes and samples of `profile` into `out` as a read does (each
// label word with a reference of its own; `unlabeled_word` becomes 0), without
// dead samples.
void CopyAllocationProfile(v8::Isolate* isolate, v8::AllocationProfile& profile,
                           uintptr_t unlabeled_word, RawProfile* out);

}  // namespace heap_labels

#endif  // HEAP_LABELS_SAMPLING_H_
