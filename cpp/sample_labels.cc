#include "heap_labels/sample_labels.h"

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/label_holder.h"
#include "heap_labels/patched_api.h"

namespace heap_labels {

namespace {

// V8 calls this for every sampled allocation, inside SampleObject: GC is
// disallowed, so no JS-heap allocation, no JS, no locks. It opens a
// HandleScope (C++ memory only), looks the holder up without allocating, and
// takes one strong reference for the sample and counts it as live (atomic
// increments). Unlabeled samples get the isolate's unlabeled word.
uintptr_t CaptureSampleLabels(v8::Isolate* isolate, void* data) {
  const auto* context = static_cast<const SampleLabelsContext*>(data);
  uintptr_t word = CurrentLabelsWord(isolate, *context->key);
  if (word == 0) word = context->unlabeled_word;
  if (word != 0) capture_sample_word(word);
  return word;
}

// V8 drops a sample: from GC weak processing or when the session ends. Gives
// the sample's reference back and uncounts it (atomics, never a V8 call).
void ReleaseSampleLabels(uintptr_t word, void* /* data */) {
  release_sample_word(word);
}

// V8 reports a dead sample (GC weak processing; API version 2): its word and
// what the allocation totals need go to Rust, which adds them up in native
// memory. The unlabeled word is given back here and counted as no labels.
void SampleDied(const DeadSample* sample, void* data) {
  const auto* context = static_cast<const SampleLabelsContext*>(data);
  uintptr_t word = sample->labels;
  if (word != 0 && word == context->unlabeled_word) {
    release_sample_word(word);
    word = 0;
  }
  record_dead_sample(context->dead_sample_totals, word, sample->node_id,
                     sample->size, sample->sample_id);
}

}  // namespace

bool CanReportDeadSamples() {
  return GetPatchedApi().start_sampling_v2 != nullptr;
}

uintptr_t CurrentLabelsWord(v8::Isolate* isolate,
                            const v8::Global<v8::Object>& key) {
  const PatchedApi& api = GetPatchedApi();
  if (api.find_in_cped == nullptr || key.IsEmpty()) return 0;
  v8::HandleScope scope(isolate);
  v8::Local<v8::Object> local = key.Get(isolate);
  return reinterpret_cast<uintptr_t>(
      api.find_in_cped(isolate, *local, kHolderWordField));
}

bool StartLabeledSampling(v8::Isolate* isolate,
                          const SampleLabelsContext* context,
                          bool report_deaths, uint64_t sample_interval,
                          int stack_depth, int flags) {
  const PatchedApi& api = GetPatchedApi();
  auto* data = const_cast<SampleLabelsContext*>(context);
  if (report_deaths) {
    return api.start_sampling_v2(isolate, CaptureSampleLabels,
                                 ReleaseSampleLabels, SampleDied, data,
                                 sample_interval, stack_depth, flags);
  }
  return api.start_sampling(isolate, CaptureSampleLabels, ReleaseSampleLabels,
                            data, sample_interval, stack_depth, flags);
}

const uintptr_t* SampleLabelsOf(const v8::AllocationProfile* profile,
                                std::size_t* count) {
  *count = 0;
  const PatchedApi& api = GetPatchedApi();
  if (api.sample_labels_of == nullptr) return nullptr;
  return api.sample_labels_of(profile, count);
}

}  // namespace heap_labels
