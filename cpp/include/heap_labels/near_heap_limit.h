// A labeled heap profile written when V8 nears the heap limit, the way
// --heapsnapshot-near-heap-limit writes a heap snapshot.
//
// V8 calls the registered v8::NearHeapLimitCallback when a full GC could not
// bring the old generation under its limit (or after several ineffective
// mark-compacts), just before it would fail with "JavaScript heap out of
// memory". The callback runs on the isolate's thread with garbage collection
// allowed; it may not run JavaScript (the isolate is inside an allocation or
// a GC epilogue). This one:
//   1. raises the limit by a young generation's worth (at least 16 MiB), so
//      that what it does itself (V8 internalizes the call tree's function
//      names while building the AllocationProfile; objects promoted by the GCs
//      this may trigger) has room, and returns that limit to V8;
//   2. copies the allocation profile (cpp/sampling.cc) and hands it to Rust
//      (write_near_heap_limit_dump), which builds the model, encodes the pprof
//      and the summary and writes both files with std::fs: native memory and
//      system calls only, nothing on the JS heap;
//   3. asks V8 to restore the initial limit once the heap falls to 95 % of it
//      (AutomaticallyRestoreInitialHeapLimit), as Node.js does;
//   4. after the configured number of dumps, removes itself: the next time the
//      heap is full V8 fails as usual (the app's out-of-memory crash), with
//      the profile already on disk.
// A nested invocation (a GC inside step 2 that again finds the heap full)
// only raises the limit. V8 calls only the most recently added callback, so
// while armed this one takes precedence over --heapsnapshot-near-heap-limit.

#ifndef HEAP_LABELS_NEAR_HEAP_LIMIT_H_
#define HEAP_LABELS_NEAR_HEAP_LIMIT_H_

#include <cstddef>
#include <cstdint>

#include <v8.h>

namespace heap_labels {

struct RawProfile;  // shared struct, defined by the cxx bridge

// What a dump reads from the isolate's state (IsolateState implements it): an
// interface, so that this file needs nothing of the state that owns it.
class HeapLimitDumpSource {
 public:
  // Whether a session runs (with none there is nothing to dump).
  virtual bool sampling() const = 0;
  // The profile for a dump; false when no session runs.
  virtual bool ReadProfileForDump(RawProfile* out) = 0;
  // V8's external memory, the dump's unlabeled external total.
  virtual uint64_t external_memory() const = 0;

 protected:
  ~HeapLimitDumpSource() = default;
};

class NearHeapLimit {
 public:
  NearHeapLimit(v8::Isolate* isolate, HeapLimitDumpSource* state)
      : isolate_(isolate), state_(state) {}
  ~NearHeapLimit() { Disarm(); }

  NearHeapLimit(const NearHeapLimit&) = delete;
  NearHeapLimit& operator=(const NearHeapLimit&) = delete;

  // Writes up to `count` profiles through the Rust dumper at address
  // `dumper` (which must stay valid until Disarm). Re-arming replaces both.
  void Arm(std::size_t dumper, uint32_t count);
  // Removes the callback (no-op when not armed).
  void Disarm();

 private:
  static size_t Callback(void* data, size_t current_heap_limit,
                         size_t initial_heap_limit);
  size_t OnNearHeapLimit(size_t current_heap_limit);
  size_t Headroom() const;

  v8::Isolate* const isolate_;
  HeapLimitDumpSource* const state_;
  std::size_t dumper_ = 0;
  uint32_t remaining_ = 0;
  bool armed_ = false;
  bool in_callback_ = false;
};

}  // namespace heap_labels

#endif  // HEAP_LABELS_NEAR_HEAP_LIMIT_H_
