#include "heap_labels/counting_allocator.h"

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/sample_labels.h"

namespace heap_labels {

CountingAllocator::CountingAllocator(v8::Isolate* isolate,
                                     v8::ArrayBuffer::Allocator* inner,
                                     std::size_t counters)
    : isolate_(isolate), inner_(inner), counters_(counters) {}

// Exactly the length asked for, through the inner allocator's own entry
// point: Node's allocator then counts the true length in
// process.memoryUsage().arrayBuffers and applies its zero-fill toggle
// (Buffer.allocUnsafe, --zero-fill-buffers) to Allocate() as it always does.
void* CountingAllocator::Allocate(std::size_t length) {
  return Charge(inner_->Allocate(length), length);
}

void* CountingAllocator::AllocateUninitialized(std::size_t length) {
  return Charge(inner_->AllocateUninitialized(length), length);
}

void* CountingAllocator::Charge(void* data, std::size_t length) {
  if (data == nullptr) return nullptr;
  uintptr_t word = 0;
  // Only the isolate's own thread may look at its async context (another
  // thread gets here when a worker resizes a buffer this isolate made:
  // ArrayBuffer.prototype.transfer() reallocates with the store's allocator).
  if (v8::Isolate::TryGetCurrent() == isolate_ && key_ != nullptr) {
    word = CurrentLabelsWord(isolate_, *key_);
  }
  external_alloc(counters_, reinterpret_cast<std::size_t>(data), word, length);
  return data;
}

void CountingAllocator::Free(void* data, std::size_t length) {
  // The charge is released before the memory: once freed, the address may be
  // handed out (and charged) again on another thread.
  if (data != nullptr) {
    external_free(counters_, reinterpret_cast<std::size_t>(data), length);
  }
  inner_->Free(data, length);
}

}  // namespace heap_labels
