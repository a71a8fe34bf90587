#include "heap_labels/label_holder.h"

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/v8_compat.h"

namespace heap_labels {

// A weak handle to one holder and the label word it owns.
struct LabelHolders::Record {
  LabelHolders* owner;
  v8::Global<v8::Object> holder;
  std::size_t word;
};

LabelHolders::~LabelHolders() {
  // Isolate teardown: holders that are still alive will never be collected
  // by this addon instance, so release their words here.
  for (Record* record : records_) {
    record->holder.Reset();
    release_label_word(record->word);
    delete record;
  }
}

v8::Local<v8::ObjectTemplate> LabelHolders::Template() {
  if (template_.IsEmpty()) {
    v8::Local<v8::ObjectTemplate> tmpl = v8::ObjectTemplate::New(isolate_);
    tmpl->SetInternalFieldCount(kHolderFieldCount);
    template_.Reset(isolate_, tmpl);
  }
  return template_.Get(isolate_);
}

v8::MaybeLocal<v8::Object> LabelHolders::Create(v8::Local<v8::Value> labels,
                                                std::size_t word) {
  v8::EscapableHandleScope scope(isolate_);
  v8::Local<v8::Context> context = isolate_->GetCurrentContext();
  v8::Local<v8::Object> holder;
  if (!Template()->NewInstance(context).ToLocal(&holder)) {
    release_label_word(word);
    return {};
  }
  // Arc<LabelSet> pointers are at least 8-byte aligned, as V8 requires (2).
  SetAlignedPointer(holder, kHolderWordField, reinterpret_cast<void*>(word));
  holder->SetInternalField(kHolderLabelsField, labels);

  auto* record = new Record{this, v8::Global<v8::Object>(isolate_, holder),
                            word};
  record->holder.SetWeak(record, &LabelHolders::OnHolderCollected,
                         v8::WeakCallbackType::kParameter);
  records_.insert(record);
  return scope.Escape(holder);
}

// Runs inside GC weak processing (first pass): it may only reset the handle
// and free C++/Rust memory. It must not allocate on the JS heap, call into
// JS or V8 APIs other than Reset, or block.
void LabelHolders::OnHolderCollected(
    const v8::WeakCallbackInfo<Record>& info) {
  Record* record = info.GetParameter();
  record->holder.Reset();
  record->owner->records_.erase(record);
  release_label_word(record->word);
  delete record;
}

}  // namespace heap_labels
