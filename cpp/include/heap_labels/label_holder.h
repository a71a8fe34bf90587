// Label holder objects: the AsyncLocalStorage store that carries a label set.
//
// A holder is a JS object with two internal fields:
//   field 0: aligned pointer to the LabelSet (the label word). The holder
//            owns one strong reference, released by a weak callback when the
//            holder is collected.
//   field 1: the frozen labels object that lib/ interned.
// On the patched runtime, V8's allocation-free CPED lookup finds the holder
// under the labels key and reads field 0 (see docs/architecture.md).

#ifndef HEAP_LABELS_LABEL_HOLDER_H_
#define HEAP_LABELS_LABEL_HOLDER_H_

#include <cstddef>
#include <unordered_set>

#include <v8.h>

namespace heap_labels {

// Field indices of a label holder.
inline constexpr int kHolderWordField = 0;
inline constexpr int kHolderLabelsField = 1;
inline constexpr int kHolderFieldCount = 2;

// Makes and tracks the label holders of one isolate.
class LabelHolders {
 public:
  explicit LabelHolders(v8::Isolate* isolate) : isolate_(isolate) {}
  ~LabelHolders();

  LabelHolders(const LabelHolders&) = delete;
  LabelHolders& operator=(const LabelHolders&) = delete;

  // Creates a holder in the current context. Takes ownership of the strong
  // reference `word` stands for, also on failure (empty result).
  v8::MaybeLocal<v8::Object> Create(v8::Local<v8::Value> labels,
                                    std::size_t word);

  // Holders created and not yet collected.
  std::size_t live() const { return records_.size(); }

 private:
  struct Record;

  v8::Local<v8::ObjectTemplate> Template();
  static void OnHolderCollected(const v8::WeakCallbackInfo<Record>& info);

  v8::Isolate* const isolate_;
  v8::Global<v8::ObjectTemplate> template_;
  // Owned; removed by the weak callback or freed by the destructor.
  std::unordered_set<Record*> records_;
};

}  // namespace heap_labels

#endif  // HEAP_LABELS_LABEL_HOLDER_H_
