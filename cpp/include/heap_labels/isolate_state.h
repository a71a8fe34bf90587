// Per-isolate V8-side state of the addon, owned by the Rust per-isolate state
// (napi instance data) through a cxx UniquePtr and destroyed on environment
// teardown, on the isolate's thread.

#ifndef HEAP_LABELS_ISOLATE_STATE_H_
#define HEAP_LABELS_ISOLATE_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include <v8.h>

#include "heap_labels/label_holder.h"
#include "rust/cxx.h"

namespace heap_labels {

struct RawProfile;    // shared struct, defined by the cxx bridge
struct StartOptions;  // shared struct, defined by the cxx bridge

class IsolateState {
 public:
  explicit IsolateState(v8::Isolate* isolate);
  ~IsolateState();

  IsolateState(const IsolateState&) = delete;
  IsolateState& operator=(const IsolateState&) = delete;

  // Bridge methods (see src/bridge.rs for their contracts).
  bool start_sampling(const StartOptions& options);
  void stop_sampling();
  bool sampling() const { return sampling_; }
  RawProfile read_profile();
  std::size_t create_label_holder(std::size_t labels, std::size_t word);
  void register_labels_key(std::size_t key);
  std::size_t frame_value(std::size_t key);
  std::size_t live_holders() const { return holders_.live(); }
  uint64_t external_memory() const;

 private:
  v8::Isolate* const isolate_;
  LabelHolders holders_;
  // The lib's AsyncLocalStorage instance: the key of the label holder in the
  // AsyncContextFrame map.
  // SEAM (patched runtime): the capture callback hands this key to V8's
  // allocation-free CPED lookup; register the callbacks with the heap
  // profiler in start_sampling() when GetPatchedApi().sample_labels_ready.
  v8::Global<v8::Object> labels_key_;
  // True while the profiler runs because this state started it.
  bool sampling_ = false;
};

std::unique_ptr<IsolateState> new_isolate_state();

}  // namespace heap_labels

#endif  // HEAP_LABELS_ISOLATE_STATE_H_
