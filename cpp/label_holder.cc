#include "heap_labels/label_holder.h"

#include <utility>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/v8_compat.h"

namespace heap_labels {

namespace {

// Field 1 of a holder: its serial number as an even "aligned pointer".
// Serials stay below 2^53 (lib/ keeps them in doubles), so the shift loses
// nothing.
void* SerialField(std::uint64_t serial) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(serial << 1));
}

std::uint64_t SerialFromField(void* field) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(field)) >>
         1;
}

}  // namespace

LabelHolders::~LabelHolders() {
  // Isolate teardown: holders that are still alive will never be collected
  // by this addon instance, so release their words here.
  for (auto& [serial, record] : records_) {
    record.holder.Reset();
    Release(&record);
  }
}

// Gives back what a record owns (the caller frees the record): an atomic
// decrement and plain frees, so it may run inside GC weak processing.
void LabelHolders::Release(Record* record) {
  release_label_word(record->word);
  if (record->pending != 0) drop_pending_labels(record->pending);
  record->word = 0;
  record->pending = 0;
}

// Label holders come from one template with the `labels` property in place:
// V8 copies the template's first instance for the others, so that a new
// holder takes no map transition for its property (and its freeze one cached
// transition).
v8::Local<v8::ObjectTemplate> LabelHolders::Template() {
  if (template_.IsEmpty()) {
    v8::Local<v8::String> name = v8::String::NewFromUtf8Literal(
        isolate_, "labels", v8::NewStringType::kInternalized);
    labels_name_.Reset(isolate_, name);
    v8::Local<v8::ObjectTemplate> tmpl = v8::ObjectTemplate::New(isolate_);
    tmpl->SetInternalFieldCount(kHolderFieldCount);
    tmpl->Set(
        name, v8::Undefined(isolate_),
        static_cast<v8::PropertyAttribute>(v8::DontEnum | v8::DontDelete));
    template_.Reset(isolate_, tmpl);
  }
  return template_.Get(isolate_);
}

// Request holders: no properties, a third field for the labels object.
v8::Local<v8::ObjectTemplate> LabelHolders::RequestTemplate() {
  if (request_template_.IsEmpty()) {
    v8::Local<v8::ObjectTemplate> tmpl = v8::ObjectTemplate::New(isolate_);
    tmpl->SetInternalFieldCount(kRequestHolderFieldCount);
    request_template_.Reset(isolate_, tmpl);
  }
  return request_template_.Get(isolate_);
}

v8::MaybeLocal<v8::Object> LabelHolders::Create(std::size_t word,
                                                std::size_t pending,
                                                v8::Local<v8::Value> labels,
                                                std::uint64_t* serial) {
  v8::EscapableHandleScope scope(isolate_);
  v8::Local<v8::Context> context = isolate_->GetCurrentContext();
  v8::Local<v8::Object> holder;
  v8::MaybeLocal<v8::Object> made = Template()->NewInstance(context);
  if (made.ToLocal(&holder) &&
      !(holder->Set(context, labels_name_.Get(isolate_), labels)
            .FromMaybe(false) &&
        holder->SetIntegrityLevel(context, v8::IntegrityLevel::kFrozen)
            .FromMaybe(false))) {
    made = {};
  }
  if (!Track(made, word, pending, &holder, serial)) return {};
  return scope.Escape(holder);
}

v8::MaybeLocal<v8::Object> LabelHolders::CreateRequest(
    std::size_t word, v8::Local<v8::Value> labels, std::uint64_t* serial) {
  v8::EscapableHandleScope scope(isolate_);
  v8::Local<v8::Object> holder;
  if (!Track(RequestTemplate()->NewInstance(isolate_->GetCurrentContext()),
             word, 0, &holder, serial)) {
    return {};
  }
  holder->SetInternalField(kRequestLabelsField, labels);
  return scope.Escape(holder);
}

bool LabelHolders::Track(v8::MaybeLocal<v8::Object> made, std::size_t word,
                         std::size_t pending, v8::Local<v8::Object>* holder,
                         std::uint64_t* serial) {
  if (!made.ToLocal(holder)) {
    release_label_word(word);
    if (pending != 0) drop_pending_labels(pending);
    return false;
  }
  const std::uint64_t key = next_serial_++;
  Record* record =
      &records_
           .try_emplace(key,
                        Record{this, v8::Global<v8::Object>(isolate_, *holder),
                               word, pending, key})
           .first->second;
  // Arc<LabelSet> pointers (and request cells) are at least 8-byte aligned
  // and the serial field is even, as V8 requires (2).
  SetAlignedPointer(*holder, kHolderWordField, reinterpret_cast<void*>(word));
  SetAlignedPointer(*holder, kHolderRecordField, SerialField(key));
  record->holder.SetWeak(record, &LabelHolders::OnHolderCollected,
                         v8::WeakCallbackType::kParameter);
  if (pending != 0) overflowed_.insert(record);
  *serial = key;
  return true;
}

bool LabelHolders::IsRequestHolder(v8::Local<v8::Value> holder) const {
  return RecordOf(holder) != nullptr &&
         holder.As<v8::Object>()->InternalFieldCount() ==
             kRequestHolderFieldCount;
}

bool LabelHolders::SetRequestLabels(v8::Local<v8::Value> holder,
                                    v8::Local<v8::Value> labels) {
  if (!IsRequestHolder(holder)) return false;
  holder.As<v8::Object>()->SetInternalField(kRequestLabelsField, labels);
  return true;
}

v8::MaybeLocal<v8::Value> LabelHolders::RequestLabels(
    v8::Local<v8::Value> holder) const {
  if (!IsRequestHolder(holder)) return {};
  return holder.As<v8::Object>()
      ->GetInternalField(kRequestLabelsField)
      .As<v8::Value>();
}

std::uint64_t LabelHolders::SerialOf(v8::Local<v8::Value> holder) const {
  const Record* record = RecordOf(holder);
  return record == nullptr ? 0 : record->serial;
}

v8::MaybeLocal<v8::Object> LabelHolders::Find(std::uint64_t serial) const {
  auto found = records_.find(serial);
  if (found == records_.end() || found->second.holder.IsEmpty()) return {};
  return found->second.holder.Get(isolate_);
}

// Only objects made by Create() with a record that is still ours count: a
// value from anywhere else is refused. Its field 1 is only a key: the record
// found under it must hold this very object.
const LabelHolders::Record* LabelHolders::RecordOf(
    v8::Local<v8::Value> value) const {
  if (value.IsEmpty() || !value->IsObject()) return nullptr;
  v8::Local<v8::Object> object = value.As<v8::Object>();
  const int fields = object->InternalFieldCount();
  if (fields != kHolderFieldCount && fields != kRequestHolderFieldCount) {
    return nullptr;
  }
  auto found = records_.find(
      SerialFromField(GetAlignedPointer(object, kHolderRecordField)));
  if (found == records_.end()) return nullptr;
  if (found->second.holder.Get(isolate_) != object) return nullptr;
  return &found->second;
}

LabelHolders::Record* LabelHolders::RecordOf(v8::Local<v8::Value> value) {
  return const_cast<Record*>(std::as_const(*this).RecordOf(value));
}

bool LabelHolders::Binding(v8::Local<v8::Value> holder, std::size_t* word,
                           std::size_t* pending) const {
  const Record* record = RecordOf(holder);
  if (record == nullptr) return false;
  *word = record->word;
  *pending = record->pending;
  return true;
}

bool LabelHolders::Rebind(v8::Local<v8::Value> holder, std::size_t word) {
  Record* record = RecordOf(holder);
  if (record == nullptr) {
    release_label_word(word);
    return false;
  }
  // Samples and blocks captured so far took references of their own: giving
  // the holder's back does not change what they carry.
  SetAlignedPointer(holder.As<v8::Object>(), kHolderWordField,
                    reinterpret_cast<void*>(word));
  release_label_word(record->word);
  record->word = word;
  if (record->pending != 0) {
    drop_pending_labels(record->pending);
    record->pending = 0;
    overflowed_.erase(record);
  }
  return true;
}

std::vector<v8::Local<v8::Object>> LabelHolders::Overflowed() const {
  std::vector<v8::Local<v8::Object>> holders;
  holders.reserve(overflowed_.size());
  for (Record* record : overflowed_) {
    holders.push_back(record->holder.Get(isolate_));
  }
  return holders;
}

// Runs inside GC weak processing (first pass): it may only reset the handle
// and free C++/Rust memory. It must not allocate on the JS heap, call into
// JS or V8 APIs other than Reset, or block.
void LabelHolders::OnHolderCollected(const v8::WeakCallbackInfo<Record>& info) {
  Record* record = info.GetParameter();
  LabelHolders* owner = record->owner;
  const std::uint64_t serial = record->serial;
  record->holder.Reset();
  Release(record);
  owner->overflowed_.erase(record);
  owner->collected_++;
  owner->records_.erase(serial);  // frees `record`
}

}  // namespace heap_labels
