// Per-sample labels on the patched runtime: the capture, release and death
// callbacks handed to V8's sampling heap profiler, and reading the words back.
//
// The word of a sample is a LabelSet pointer that owns one strong reference
// (docs/architecture.md). The capture callback takes the reference, the
// release callback (V8 dropping the sample) gives it back.

#ifndef HEAP_LABELS_SAMPLE_LABELS_H_
#define HEAP_LABELS_SAMPLE_LABELS_H_

#include <cstddef>
#include <cstdint>

#include <v8-profiler.h>
#include <v8.h>

namespace heap_labels {

// The current labels word (not retained) of `isolate`: the aligned pointer in
// field 0 of the holder stored under `key` in the AsyncContextFrame; 0 when
// there is none. Allocation-free; callable inside V8's allocation path.
// Must run on the isolate's thread.
uintptr_t CurrentLabelsWord(v8::Isolate* isolate,
                            const v8::Global<v8::Object>& key);

// What the capture callback of a labeled session reads: the labels key and
// the word that unlabeled samples get (see SampleLabelsContext users).
struct SampleLabelsContext {
  // The lib's AsyncLocalStorage instance (owned by IsolateState).
  const v8::Global<v8::Object>* key = nullptr;
  // Word of the isolate's "unlabeled samples" set (0: none). Samples taken
  // without labels carry it so that their release is seen too: the per-label
  // counters count live unlabeled samples the same way as labeled ones. It
  // never leaves cpp/: ReadAllocationProfile turns it back into 0.
  uintptr_t unlabeled_word = 0;
  // Address of the isolate's dead-sample totals (src/allocations.rs); 0: the
  // session does not ask V8 for dead samples.
  std::size_t dead_sample_totals = 0;
};

// Whether labeled sessions of this runtime can report dead samples (the
// patched runtime's API version 2).
bool CanReportDeadSamples();

// Starts a labeled sampling session whose samples carry the labels found
// under `context->key` (`context` must outlive the session). With
// `report_deaths` (requires CanReportDeadSamples() and
// `context->dead_sample_totals`), V8 hands dead samples to those totals
// instead of releasing them. Returns false when a sampling heap profiler
// already runs.
bool StartLabeledSampling(v8::Isolate* isolate,
                          const SampleLabelsContext* context,
                          bool report_deaths, uint64_t sample_interval,
                          int stack_depth, int flags);

// The labels words of `profile`, aligned with profile->GetSamples(); null
// (and *count == 0) when the runtime has no sample-labels API.
const uintptr_t* SampleLabelsOf(const v8::AllocationProfile* profile,
                                std::size_t* count);

}  // namespace heap_labels

#endif  // HEAP_LABELS_SAMPLE_LABELS_H_
