// Per-isolate V8-side state of the addon, owned by the Rust per-isolate state
// (napi instance data) through a cxx UniquePtr and destroyed on environment
// teardown, on the isolate's thread.

#ifndef HEAP_LABELS_ISOLATE_STATE_H_
#define HEAP_LABELS_ISOLATE_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include <v8.h>

#include "heap_labels/counting_allocator.h"
#include "heap_labels/label_holder.h"
#include "heap_labels/near_heap_limit.h"
#include "heap_labels/sample_labels.h"
#include "heap_labels/sampling.h"
#include "rust/cxx.h"

namespace heap_labels {

struct HolderBinding;    // shared struct, defined by the cxx bridge
struct NewHolder;        // shared struct, defined by the cxx bridge
struct RawProfile;       // shared struct, defined by the cxx bridge
struct RawRetainers;     // shared struct, defined by the cxx bridge
struct RawSnapshotFile;  // shared struct, defined by the cxx bridge
struct StartOptions;     // shared struct, defined by the cxx bridge
enum class AllocationsRead : std::uint8_t;  // shared enum, cxx bridge

class IsolateState : public HeapLimitDumpSource {
 public:
  // `external_counters`: address of the isolate's ExternalCounters (Rust,
  // never freed), charged by the counting allocator.
  IsolateState(v8::Isolate* isolate, std::size_t external_counters);
  ~IsolateState();

  IsolateState(const IsolateState&) = delete;
  IsolateState& operator=(const IsolateState&) = delete;

  // Bridge methods (see src/bridge.rs for their contracts).
  bool start_sampling(const StartOptions& options);
  void stop_sampling();
  bool sampling() const override { return sampling_; }
  RawProfile read_profile(AllocationsRead read);
  void set_dead_sample_totals(std::size_t totals);
  bool reports_allocations() const {
    return reports_dead_samples_ || keeps_dead_samples_;
  }
  NewHolder create_label_holder(HolderBinding binding, std::size_t labels);
  NewHolder create_request_holder(std::size_t word, std::size_t labels);
  void set_request_labels(std::size_t holder, std::size_t labels);
  std::size_t request_labels(std::size_t holder) const;
  HolderBinding holder_binding(std::size_t holder) const;
  void rebind_label_holder(std::size_t holder, std::size_t word);
  rust::Vec<std::size_t> overflowed_holders() const;
  std::uint64_t label_holder_serial(std::size_t holder) const;
  std::size_t live_label_holder(std::uint64_t serial) const;
  std::size_t register_labels_key(std::size_t key);
  std::size_t frame_value(std::size_t key);
  std::size_t live_holders() const { return holders_.live(); }
  std::uint64_t collected_holders() const { return holders_.collected(); }
  std::size_t overflowed_holder_count() const { return holders_.overflowed(); }
  uint64_t external_memory() const override;
  // Whether the counting allocator is installed (a session tracks external
  // bytes per label).
  bool external_tracking() const { return external_tracking_; }

  // Operations support (see src/bridge.rs): the unlabeled-samples word, a
  // full GC, the used heap size, near-heap-limit dumps.
  void set_unlabeled_sample_word(std::size_t word);
  void collect_garbage();
  uint64_t used_heap_size() const;
  uint64_t heap_size_limit() const;

  // Retainers per label (see src/bridge.rs): heap snapshots held now, and
  // the snapshot joined to this state's session.
  int32_t heap_snapshots_held() const;
  RawRetainers read_retainers();
  // A heap snapshot written to `path`, with labels joined to the session.
  RawSnapshotFile write_snapshot_file(bool labels, rust::Str path);
  void arm_near_heap_limit(std::size_t dumper, uint32_t count);
  void disarm_near_heap_limit();
  // The profile for a dump (unlabeled-samples word mapped to 0); false when
  // no session of this state runs.
  bool ReadProfileForDump(RawProfile* out) override;

 private:
  ReadOptions ReadOptionsFor(AllocationsRead read) const;
  bool StartProfiler(const StartOptions& options);
  void StartExternalTracking();
  void StopExternalTracking();

  v8::Isolate* const isolate_;
  const std::size_t external_counters_;
  LabelHolders holders_;
  // The lib's AsyncLocalStorage instance: the key of the label holder in the
  // AsyncContextFrame map. The first one registered stays: every instance of
  // lib/ that shares this addon instance (e.g. one per vm context, as Jest
  // loads it) uses it, so the isolate has one set of labels. On the patched
  // runtime the capture callback and the counting allocator hand it to V8's
  // allocation-free CPED lookup.
  v8::Global<v8::Object> labels_key_;
  // Handed to V8 with a labeled session (points at labels_key_).
  SampleLabelsContext sample_context_;
  // Created on first arm; its destructor removes the callback.
  std::unique_ptr<NearHeapLimit> near_heap_limit_;
  // Made on the first session that tracks external bytes and never deleted:
  // backing stores it allocated free through it, possibly after teardown.
  CountingAllocator* counting_allocator_ = nullptr;
  // True while the profiler runs because this state started it.
  bool sampling_ = false;
  bool external_tracking_ = false;
  // True while the running session hands dead samples to
  // sample_context_.dead_sample_totals.
  bool reports_dead_samples_ = false;
  // True while the running session keeps every dead sample (both include-
  // collected flags) on a V8 that marks them (is_live): reads then take the
  // allocation window from the kept samples, with memory growing with them.
  bool keeps_dead_samples_ = false;
};

std::unique_ptr<IsolateState> new_isolate_state(std::size_t external_counters);

}  // namespace heap_labels

#endif  // HEAP_LABELS_ISOLATE_STATE_H_
