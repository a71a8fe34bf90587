#include "heap_labels/sampling.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <v8-profiler.h>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/sample_labels.h"
#include "heap_labels/v8_compat.h"

namespace heap_labels {

namespace {

constexpr uint32_t kNoParent = std::numeric_limits<uint32_t>::max();

rust::String ToRustString(v8::Isolate* isolate, v8::Local<v8::String> text) {
  if (text.IsEmpty()) return rust::String();
  v8::String::Utf8Value utf8(isolate, text);
  if (*utf8 == nullptr) return rust::String();
  return rust::String::lossy(*utf8, utf8.length());
}

RawNode CopyNode(v8::Isolate* isolate, const v8::AllocationProfile::Node& node,
                 uint32_t parent) {
  RawNode raw;
  raw.parent = parent;
  raw.node_id = node.node_id;
  raw.function_name = ToRustString(isolate, node.name);
  raw.script_name = ToRustString(isolate, node.script_name);
  raw.script_id = node.script_id;
  raw.line_number = node.line_number;
  raw.column_number = node.column_number;
  return raw;
}

// Pre-order walk with an explicit stack: profiles can be deep (stackDepth up
// to 1024), so no recursion.
void CopyNodes(v8::Isolate* isolate, v8::AllocationProfile::Node* root,
               rust::Vec<RawNode>* out) {
  std::vector<std::pair<v8::AllocationProfile::Node*, uint32_t>> stack;
  stack.emplace_back(root, kNoParent);
  while (!stack.empty()) {
    auto [node, parent] = stack.back();
    stack.pop_back();
    uint32_t index = static_cast<uint32_t>(out->size());
    out->push_back(CopyNode(isolate, *node, parent));
    // Push children in reverse so that they are emitted in V8's order.
    for (auto it = node->children.rbegin(); it != node->children.rend(); ++it) {
      stack.emplace_back(*it, index);
    }
  }
}

// Copies the samples with their label words (patched runtime; 0 on stock)
// straight into the model's vector (sample_slots), then adopt_sample_words
// gives each copied word its own reference (to the set a request cell stands
// for now) while V8's sample still holds one, so the Rust model owns what it
// reads even if V8 drops the sample later. No V8 call in between. Two calls
// per read: per sample, a rust::Vec push_back crosses the bridge several
// times.
void CopySamples(v8::AllocationProfile& profile, rust::Vec<RawSample>* out,
                 uintptr_t unlabeled_word) {
  const std::vector<v8::AllocationProfile::Sample>& samples =
      profile.GetSamples();
  std::size_t word_count = 0;
  const uintptr_t* words = SampleLabelsOf(&profile, &word_count);
  if (word_count != samples.size()) words = nullptr;
  rust::Slice<RawSample> slots = sample_slots(*out, samples.size());
  for (std::size_t i = 0; i < samples.size(); i++) {
    const v8::AllocationProfile::Sample& sample = samples[i];
    RawSample& raw = slots[i];
    raw.node_id = sample.node_id;
    raw.size = sample.size;
    raw.count = sample.count;
    raw.sample_id = sample.sample_id;
    raw.live = SampleIsLive(sample, 0);
    uintptr_t word = words != nullptr ? words[i] : 0;
    raw.label_word = word == unlabeled_word ? 0 : word;
  }
  adopt_sample_words(slots);
}

uint64_t HighestSampleId(const v8::AllocationProfile& profile) {
  uint64_t highest = 0;
  for (const v8::AllocationProfile::Sample& sample :
       const_cast<v8::AllocationProfile&>(profile).GetSamples()) {
    if (sample.sample_id > highest) highest = sample.sample_id;
  }
  return highest;
}

}  // namespace

int SamplingFlags(const StartOptions& options) {
  int flags = v8::HeapProfiler::kSamplingNoFlags;
  if (options.force_gc) flags |= v8::HeapProfiler::kSamplingForceGC;
  if (options.include_objects_collected_by_major_gc) {
    flags |= v8::HeapProfiler::kSamplingIncludeObjectsCollectedByMajorGC;
  }
  if (options.include_objects_collected_by_minor_gc) {
    flags |= v8::HeapProfiler::kSamplingIncludeObjectsCollectedByMinorGC;
  }
  return flags;
}

bool StartSamplingHeapProfiler(v8::Isolate* isolate,
                               const StartOptions& options) {
  return isolate->GetHeapProfiler()->StartSamplingHeapProfiler(
      options.sample_interval, options.stack_depth,
      static_cast<v8::HeapProfiler::SamplingFlags>(SamplingFlags(options)));
}

void StopSamplingHeapProfiler(v8::Isolate* isolate) {
  isolate->GetHeapProfiler()->StopSamplingHeapProfiler();
}

bool ReadAllocationProfile(v8::Isolate* isolate, RawProfile* out,
                           const ReadOptions& options) {
  v8::HandleScope scope(isolate);
  // GetAllocationProfile allocates strings for the nodes, which can itself
  // add samples; the copy below only reads the finished snapshot.
  std::unique_ptr<v8::AllocationProfile> profile(
      isolate->GetHeapProfiler()->GetAllocationProfile());
  if (!profile) return false;
  // Before any other V8 call, so before any GC: every sample is then either
  // live in `profile` or among the dead samples, never both, never neither.
  if (options.dead_sample_totals != 0) {
    out->allocations =
        take_dead_samples(options.dead_sample_totals, options.allocations_read,
                          HighestSampleId(*profile));
  }
  CopyAllocationProfile(isolate, *profile, options.unlabeled_word, out);
  return true;
}

void CopyAllocationProfile(v8::Isolate* isolate, v8::AllocationProfile& profile,
                           uintptr_t unlabeled_word, RawProfile* out) {
  CopyNodes(isolate, profile.GetRootNode(), &out->nodes);
  CopySamples(profile, &out->samples, unlabeled_word);
}

}  // namespace heap_labels
