// The counting ArrayBuffer allocator: attributes external (backing-store)
// bytes to the labels of the async context that allocated them.
//
// Installed with the patched runtime's SwapArrayBufferAllocator while a
// session that tracks external bytes runs, and swapped out again at stop, so
// nothing is paid outside sessions. It delegates every call to the isolate's
// previous allocator with the exact length, so that allocator's bookkeeping
// (Node's process.memoryUsage().arrayBuffers, its zero-fill toggle) is
// unchanged. The labels word a block was charged to (a strong reference) is
// recorded beside the block, in a lock-free table keyed by its address
// (core's BlockWords): Free() may run on V8's ArrayBufferSweeper threads and
// uses atomics only.
//
// Reallocate() is not overridden: V8's default (AllocateUninitialized(new),
// copy, Free(old), all through this class) charges the new length to the
// labels current at the reallocation and releases the old block from the
// labels it was charged to, exactly once. V8 reallocates with the allocator
// that made the store (v8-patches/12.4/0003), so a store made before a swap
// never reaches this class.
//
// Backing stores keep the allocator that made them, so an instance must
// outlive every block it handed out: instances are never deleted (one per
// isolate that ever tracked external bytes).

#ifndef HEAP_LABELS_COUNTING_ALLOCATOR_H_
#define HEAP_LABELS_COUNTING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

#include <v8.h>

namespace heap_labels {

class CountingAllocator final : public v8::ArrayBuffer::Allocator {
 public:
  // `counters` is the address of the isolate's (never freed) ExternalCounters.
  CountingAllocator(v8::Isolate* isolate, v8::ArrayBuffer::Allocator* inner,
                    std::size_t counters);

  // v8::ArrayBuffer::Allocator. Allocate*() run on the isolate's thread (or,
  // rarely, another thread: then the block is charged as unlabeled).
  void* Allocate(std::size_t length) override;
  void* AllocateUninitialized(std::size_t length) override;
  // Any thread, including V8's sweeper threads: atomics only, no V8 calls.
  void Free(void* data, std::size_t length) override;

  // Which labels key new blocks are charged by; null charges nothing.
  // Isolate thread only.
  void set_labels_key(const v8::Global<v8::Object>* key) { key_ = key; }

  v8::ArrayBuffer::Allocator* inner() const { return inner_; }

 private:
  void* Charge(void* data, std::size_t length);

  v8::Isolate* const isolate_;
  v8::ArrayBuffer::Allocator* const inner_;
  const std::size_t counters_;
  const v8::Global<v8::Object>* key_ = nullptr;
};

}  // namespace heap_labels

#endif  // HEAP_LABELS_COUNTING_ALLOCATOR_H_
