#include "heap_labels/counting_allocator.h"

#include <cstring>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/sample_labels.h"

namespace heap_labels {

namespace {

struct alignas(CountingAllocator::kHeaderSize) BlockHeader {
  uintptr_t word;  // labels charged (one strong reference), or 0
};
static_assert(sizeof(BlockHeader) == CountingAllocator::kHeaderSize);

BlockHeader* HeaderOf(void* data) {
  return reinterpret_cast<BlockHeader*>(static_cast<char*>(data) -
                                        CountingAllocator::kHeaderSize);
}

}  // namespace

CountingAllocator::CountingAllocator(v8::Isolate* isolate,
                                     v8::ArrayBuffer::Allocator* inner,
                                     std::size_t counters)
    : isolate_(isolate), inner_(inner), counters_(counters) {}

void* CountingAllocator::Allocate(std::size_t length) {
  return Charge(inner_->Allocate(length + kHeaderSize), length);
}

void* CountingAllocator::AllocateUninitialized(std::size_t length) {
  return Charge(inner_->AllocateUninitialized(length + kHeaderSize), length);
}

void* CountingAllocator::Charge(void* block, std::size_t length) {
  if (block == nullptr) return nullptr;
  uintptr_t word = 0;
  // Only the isolate's own thread may look at its async context.
  if (key_ != nullptr && v8::Isolate::TryGetCurrent() == isolate_) {
    word = CurrentLabelsWord(isolate_, *key_);
  }
  // The block keeps the set alive (and its bytes countable) until it is freed.
  if (word != 0) retain_label_word(word);
  static_cast<BlockHeader*>(block)->word = word;
  external_alloc(counters_, word, length);
  return static_cast<char*>(block) + kHeaderSize;
}

void CountingAllocator::Free(void* data, std::size_t length) {
  if (data == nullptr) return;
  BlockHeader* header = HeaderOf(data);
  const uintptr_t word = header->word;
  external_free(counters_, word, length);
  if (word != 0) release_label_word(word);
  inner_->Free(header, length + kHeaderSize);
}

}  // namespace heap_labels
