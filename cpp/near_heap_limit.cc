#include "heap_labels/near_heap_limit.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "heap-labels/src/bridge.rs.h"

namespace heap_labels {

namespace {

constexpr size_t kMinHeadroom = 16u << 20;

}  // namespace

void NearHeapLimit::Arm(std::size_t dumper, uint32_t count) {
  Disarm();
  if (count == 0 || dumper == 0) return;
  dumper_ = dumper;
  remaining_ = count;
  isolate_->AddNearHeapLimitCallback(Callback, this);
  armed_ = true;
}

void NearHeapLimit::Disarm() {
  if (!armed_) return;
  // 0: leave the heap limit as it is (a raised limit stays raised until V8
  // restores it automatically, see OnNearHeapLimit).
  isolate_->RemoveNearHeapLimitCallback(Callback, 0);
  armed_ = false;
  dumper_ = 0;
  remaining_ = 0;
}

size_t NearHeapLimit::Callback(void* data, size_t current_heap_limit,
                               size_t /* initial_heap_limit */) {
  return static_cast<NearHeapLimit*>(data)->OnNearHeapLimit(current_heap_limit);
}

// What the young generation occupies now (its semi-spaces and large objects):
// a GC during the dump may promote up to that much into the old generation.
size_t NearHeapLimit::Headroom() const {
  size_t young = 0;
  v8::HeapSpaceStatistics stats;
  for (size_t i = 0; i < isolate_->NumberOfHeapSpaces(); ++i) {
    if (!isolate_->GetHeapSpaceStatistics(&stats, i)) continue;
    if (std::strcmp(stats.space_name(), "new_space") == 0 ||
        std::strcmp(stats.space_name(), "new_large_object_space") == 0) {
      young += stats.space_size();
    }
  }
  return std::max(young, kMinHeadroom);
}

size_t NearHeapLimit::OnNearHeapLimit(size_t current_heap_limit) {
  // The new limit must be higher than the current one or V8 fails at once.
  const size_t new_limit = current_heap_limit + Headroom();
  if (in_callback_) return new_limit;  // a GC inside our own dump
  if (!armed_ || remaining_ == 0 || !state_->sampling()) {
    // Nothing to write (no session runs): do not keep a full heap alive.
    return current_heap_limit;
  }
  in_callback_ = true;
  RawProfile profile;
  if (state_->ReadProfileForDump(&profile)) {
    write_near_heap_limit_dump(dumper_, std::move(profile),
                               state_->external_memory());
  }
  remaining_--;
  if (remaining_ == 0) Disarm();
  // As Node.js does after its near-heap-limit snapshot: go back to the
  // initial limit once the heap has shrunk to 95 % of it.
  isolate_->AutomaticallyRestoreInitialHeapLimit(0.95);
  in_callback_ = false;
  return new_limit;
}

}  // namespace heap_labels
