#include "heap_labels/isolate_state.h"

#include <stdexcept>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/js_value.h"
#include "heap_labels/sampling.h"
#include "heap_labels/v8_compat.h"

namespace heap_labels {

IsolateState::IsolateState(v8::Isolate* isolate)
    : isolate_(isolate), holders_(isolate) {}

IsolateState::~IsolateState() {
  // Environment teardown: a session left running would keep sampling into a
  // profile nobody reads.
  stop_sampling();
  labels_key_.Reset();
}

bool IsolateState::start_sampling(const StartOptions& options) {
  if (sampling_) return false;
  sampling_ = StartSamplingHeapProfiler(isolate_, options);
  return sampling_;
}

void IsolateState::stop_sampling() {
  // Never stop a profiler somebody else (the inspector, --heap-prof) owns.
  if (!sampling_) return;
  StopSamplingHeapProfiler(isolate_);
  sampling_ = false;
}

RawProfile IsolateState::read_profile() {
  RawProfile profile;
  if (!sampling_ || !ReadAllocationProfile(isolate_, &profile)) {
    throw std::runtime_error("no sampling heap profiler is running");
  }
  return profile;
}

std::size_t IsolateState::create_label_holder(std::size_t labels,
                                              std::size_t word) {
  v8::Local<v8::Object> holder;
  if (!holders_.Create(ToLocal(labels), word).ToLocal(&holder)) {
    throw std::runtime_error("could not create a label holder object");
  }
  return ToNapiValue(holder);
}

void IsolateState::register_labels_key(std::size_t key) {
  v8::Local<v8::Value> value = ToLocal(key);
  if (!value->IsObject()) {
    throw std::invalid_argument("the labels key must be an object");
  }
  labels_key_.Reset(isolate_, value.As<v8::Object>());
}

std::size_t IsolateState::frame_value(std::size_t key) {
  v8::Local<v8::Value> frame = GetContinuationData(isolate_);
  if (frame.IsEmpty() || !frame->IsMap()) return 0;
  v8::Local<v8::Context> context = isolate_->GetCurrentContext();
  v8::Local<v8::Value> value;
  if (!frame.As<v8::Map>()->Get(context, ToLocal(key)).ToLocal(&value) ||
      value->IsUndefined()) {
    return 0;
  }
  return ToNapiValue(value);
}

uint64_t IsolateState::external_memory() const {
  v8::HeapStatistics statistics;
  isolate_->GetHeapStatistics(&statistics);
  return statistics.external_memory();
}

std::unique_ptr<IsolateState> new_isolate_state() {
  return std::make_unique<IsolateState>(v8::Isolate::GetCurrent());
}

}  // namespace heap_labels
