#include "heap_labels/isolate_state.h"

#include <stdexcept>

#include <v8-profiler.h>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/js_value.h"
#include "heap_labels/labeled_snapshot.h"
#include "heap_labels/patched_api.h"
#include "heap_labels/retainers.h"
#include "heap_labels/sample_labels.h"
#include "heap_labels/sampling.h"
#include "heap_labels/v8_compat.h"

namespace heap_labels {

IsolateState::IsolateState(v8::Isolate* isolate, std::size_t external_counters)
    : isolate_(isolate),
      external_counters_(external_counters),
      holders_(isolate) {
  sample_context_.key = &labels_key_;
}

IsolateState::~IsolateState() {
  // Environment teardown: a session left running would keep sampling into a
  // profile nobody reads.
  near_heap_limit_.reset();
  stop_sampling();
  labels_key_.Reset();
}

bool IsolateState::start_sampling(const StartOptions& options) {
  if (sampling_) {
    // Our session may have been stopped underneath us (the inspector's
    // HeapProfiler.stopSampling): V8 then starts a new one, which supersedes
    // it. If V8 still samples, it refuses, and the running session's state
    // stays as it was.
    const bool reports = reports_dead_samples_;
    const bool keeps = keeps_dead_samples_;
    if (!StartProfiler(options)) {
      reports_dead_samples_ = reports;
      keeps_dead_samples_ = keeps;
      return false;
    }
    StopExternalTracking();
    StartExternalTracking();
    return true;
  }
  sampling_ = StartProfiler(options);
  if (sampling_) StartExternalTracking();
  return sampling_;
}

// A labeled session on the patched runtime once lib/ registered its key; a
// plain one otherwise.
bool IsolateState::StartProfiler(const StartOptions& options) {
  reports_dead_samples_ = false;
  keeps_dead_samples_ = options.track_allocations &&
                        options.include_objects_collected_by_major_gc &&
                        options.include_objects_collected_by_minor_gc &&
                        SamplesCarryLiveness();
  if (!GetPatchedApi().sample_labels_ready || labels_key_.IsEmpty()) {
    return StartSamplingHeapProfiler(isolate_, options);
  }
  const bool report_deaths = options.track_allocations &&
                             sample_context_.dead_sample_totals != 0 &&
                             CanReportDeadSamples();
  if (!StartLabeledSampling(isolate_, &sample_context_, report_deaths,
                            options.sample_interval, options.stack_depth,
                            SamplingFlags(options))) {
    return false;
  }
  reports_dead_samples_ = report_deaths;
  return true;
}

void IsolateState::StartExternalTracking() {
  const PatchedApi& api = GetPatchedApi();
  if (!api.external_bytes_ready || labels_key_.IsEmpty()) return;
  if (counting_allocator_ == nullptr) {
    counting_allocator_ = new CountingAllocator(
        isolate_, isolate_->GetArrayBufferAllocator(), external_counters_);
  }
  counting_allocator_->set_labels_key(&labels_key_);
  api.swap_allocator(isolate_, counting_allocator_);
  external_tracking_ = true;
}

// New backing stores bypass the counter again; blocks it made still free
// through it, so their bytes keep being subtracted.
void IsolateState::StopExternalTracking() {
  if (!external_tracking_) return;
  counting_allocator_->set_labels_key(nullptr);
  GetPatchedApi().swap_allocator(isolate_, counting_allocator_->inner());
  external_tracking_ = false;
}

void IsolateState::stop_sampling() {
  // Never stop a profiler somebody else (the inspector, --heap-prof) owns.
  if (!sampling_) return;
  StopExternalTracking();
  StopSamplingHeapProfiler(isolate_);
  sampling_ = false;
}

ReadOptions IsolateState::ReadOptionsFor(AllocationsRead read) const {
  ReadOptions options;
  options.unlabeled_word = sample_context_.unlabeled_word;
  if (reports_allocations()) {
    options.dead_sample_totals = sample_context_.dead_sample_totals;
    options.allocations_read = read;
  }
  return options;
}

RawProfile IsolateState::read_profile(AllocationsRead read) {
  RawProfile profile;
  if (!sampling_) {
    throw std::runtime_error("no sampling heap profiler is running");
  }
  if (!ReadAllocationProfile(isolate_, &profile, ReadOptionsFor(read))) {
    // V8 has no profile: its sampler was stopped outside heap-labels (the
    // inspector's HeapProfiler.stopSampling). The session is over.
    StopExternalTracking();
    sampling_ = false;
    throw std::runtime_error(
        "the sampling heap profiler was stopped elsewhere");
  }
  return profile;
}

NewHolder IsolateState::create_label_holder(HolderBinding binding,
                                            std::size_t labels) {
  if (labels == 0) {
    // The holder would have owned the binding: it is given back here.
    release_label_word(binding.word);
    if (binding.pending != 0) drop_pending_labels(binding.pending);
    throw std::invalid_argument("a label holder needs its labels object");
  }
  v8::Local<v8::Object> holder;
  std::uint64_t serial = 0;
  if (!holders_.Create(binding.word, binding.pending, ToLocal(labels), &serial)
           .ToLocal(&holder)) {
    throw std::runtime_error("could not create a label holder object");
  }
  return NewHolder{ToNapiValue(holder), serial};
}

NewHolder IsolateState::create_request_holder(std::size_t word,
                                              std::size_t labels) {
  v8::Local<v8::Object> holder;
  std::uint64_t serial = 0;
  if (!holders_.CreateRequest(word, ToLocal(labels), &serial)
           .ToLocal(&holder)) {
    throw std::runtime_error("could not create a request holder object");
  }
  return NewHolder{ToNapiValue(holder), serial};
}

void IsolateState::set_request_labels(std::size_t holder, std::size_t labels) {
  if (!holders_.SetRequestLabels(ToLocal(holder), ToLocal(labels))) {
    throw std::invalid_argument("not a request holder of this isolate");
  }
}

std::size_t IsolateState::request_labels(std::size_t holder) const {
  v8::Local<v8::Value> labels;
  if (!holders_.RequestLabels(ToLocal(holder)).ToLocal(&labels)) {
    throw std::invalid_argument("not a request holder of this isolate");
  }
  return ToNapiValue(labels);
}

HolderBinding IsolateState::holder_binding(std::size_t holder) const {
  HolderBinding binding{};
  if (!holders_.Binding(ToLocal(holder), &binding.word, &binding.pending)) {
    throw std::invalid_argument("not a label holder of this isolate");
  }
  return binding;
}

void IsolateState::rebind_label_holder(std::size_t holder, std::size_t word) {
  if (!holders_.Rebind(ToLocal(holder), word)) {
    throw std::invalid_argument("not a label holder of this isolate");
  }
}

rust::Vec<std::size_t> IsolateState::overflowed_holders() const {
  rust::Vec<std::size_t> out;
  for (v8::Local<v8::Object> holder : holders_.Overflowed()) {
    out.push_back(ToNapiValue(holder));
  }
  return out;
}

std::uint64_t IsolateState::label_holder_serial(std::size_t holder) const {
  std::uint64_t serial = holders_.SerialOf(ToLocal(holder));
  if (serial == 0) {
    throw std::invalid_argument("not a label holder of this isolate");
  }
  return serial;
}

std::size_t IsolateState::live_label_holder(std::uint64_t serial) const {
  v8::Local<v8::Object> holder;
  if (!holders_.Find(serial).ToLocal(&holder)) return 0;
  return ToNapiValue(holder);
}

std::size_t IsolateState::register_labels_key(std::size_t key) {
  v8::Local<v8::Value> value = ToLocal(key);
  if (!value->IsObject()) {
    throw std::invalid_argument("the labels key must be an object");
  }
  if (labels_key_.IsEmpty())
    labels_key_.Reset(isolate_, value.As<v8::Object>());
  return ToNapiValue(labels_key_.Get(isolate_));
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

// ---- operations support -------------------------------------------------

void IsolateState::set_unlabeled_sample_word(std::size_t word) {
  // Takes effect with the next labeled session (V8 keeps the context pointer,
  // whose fields it reads on each capture: only change it between sessions).
  if (!sampling_) sample_context_.unlabeled_word = word;
}

void IsolateState::set_dead_sample_totals(std::size_t totals) {
  // Like the unlabeled word: V8 keeps the context pointer for the session.
  if (!sampling_) sample_context_.dead_sample_totals = totals;
}

void IsolateState::collect_garbage() {
  // A full, non-forced GC that also clears caches: what ?gc=1 asks for, and
  // available without --expose-gc.
  isolate_->LowMemoryNotification();
}

uint64_t IsolateState::used_heap_size() const {
  v8::HeapStatistics statistics;
  isolate_->GetHeapStatistics(&statistics);
  return statistics.used_heap_size();
}

uint64_t IsolateState::heap_size_limit() const {
  v8::HeapStatistics statistics;
  isolate_->GetHeapStatistics(&statistics);
  return statistics.heap_size_limit();
}

int32_t IsolateState::heap_snapshots_held() const {
  return isolate_->GetHeapProfiler()->GetSnapshotCount();
}

RawRetainers IsolateState::read_retainers() {
  RawRetainers retainers;
  if (!sampling_) {
    throw std::runtime_error("no sampling heap profiler is running");
  }
  if (!ReadRetainers(isolate_, sample_context_.unlabeled_word, &retainers)) {
    // As in read_profile: V8's sampler was stopped outside heap-labels.
    StopExternalTracking();
    sampling_ = false;
    throw std::runtime_error(
        "the sampling heap profiler was stopped elsewhere");
  }
  return retainers;
}

RawSnapshotFile IsolateState::write_snapshot_file(bool labels, rust::Str path) {
  RawSnapshotFile file;
  if (labels && !sampling_) {
    throw std::runtime_error("no sampling heap profiler is running");
  }
  if (!WriteSnapshotFile(isolate_, sample_context_.unlabeled_word, labels, path,
                         &file)) {
    // As in read_profile: V8's sampler was stopped outside heap-labels.
    StopExternalTracking();
    sampling_ = false;
    throw std::runtime_error(
        "the sampling heap profiler was stopped elsewhere");
  }
  return file;
}

void IsolateState::arm_near_heap_limit(std::size_t dumper, uint32_t count) {
  if (!near_heap_limit_) {
    near_heap_limit_ = std::make_unique<NearHeapLimit>(isolate_, this);
  }
  near_heap_limit_->Arm(dumper, count);
}

void IsolateState::disarm_near_heap_limit() {
  if (near_heap_limit_) near_heap_limit_->Disarm();
}

bool IsolateState::ReadProfileForDump(RawProfile* out) {
  return sampling_ &&
         ReadAllocationProfile(isolate_, out,
                               ReadOptionsFor(AllocationsRead::Window));
}

std::unique_ptr<IsolateState> new_isolate_state(std::size_t external_counters) {
  return std::make_unique<IsolateState>(v8::Isolate::GetCurrent(),
                                        external_counters);
}

}  // namespace heap_labels
