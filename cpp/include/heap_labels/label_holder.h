// Label holder objects: the AsyncLocalStorage store that carries a label set.
//
// A holder is a JS object with two internal fields:
//   field 0: aligned pointer to the LabelSet it is bound to (the label word;
//            null for the empty set, which is no labels). The holder owns one
//            strong reference, released by a weak callback when the holder is
//            collected.
//   field 1: the holder's serial number, shifted left by one (an even value,
//            as an aligned pointer must be): the key of its Record (below).
// A label holder's frozen labels object is its read-only property `labels`
// (a property read is what getHeapProfileLabels() needs; no native call): it
// has the property from its template, gets its labels at creation and is
// frozen. A request holder (late binding) changes its labels as routing
// decides them, one per request: it comes from another template with a third
// field instead, holding its labels object, so that it is 48 bytes with no
// property array (80 with one).
// On the patched runtime, V8's allocation-free CPED lookup finds the holder
// under the labels key and reads field 0 (see docs/architecture.md).
//
// A holder made while the registry was full is bound to the overflow set and
// keeps its labels as "pending labels" (a Rust PendingLabels box). Rust rebinds
// it on the isolate thread, in a napi call, once the registry has room again:
// field 0 then points at the holder's own set. Field 0 changes only there,
// never from a V8 callback; the capture callback only reads it.
//
// lib/ finds the holder of a label object again by the holder's serial number
// (Find), not through a JS WeakRef: a WeakRef's target is kept alive until the
// end of the current job once it was created or dereferenced, so a synchronous
// batch that labels many items would keep every item's holder, and so its label
// set, until the event loop turns. Find keeps nothing alive beyond the caller's
// HandleScope.

#ifndef HEAP_LABELS_LABEL_HOLDER_H_
#define HEAP_LABELS_LABEL_HOLDER_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <v8.h>

namespace heap_labels {

// Field indices of a label holder.
inline constexpr int kHolderWordField = 0;
inline constexpr int kHolderRecordField = 1;
inline constexpr int kHolderFieldCount = 2;
// A request holder's third field: its labels object (a JS value).
inline constexpr int kRequestLabelsField = 2;
inline constexpr int kRequestHolderFieldCount = 3;

// Makes and tracks the label holders of one isolate.
class LabelHolders {
 public:
  explicit LabelHolders(v8::Isolate* isolate) : isolate_(isolate) {}
  ~LabelHolders();

  LabelHolders(const LabelHolders&) = delete;
  LabelHolders& operator=(const LabelHolders&) = delete;

  // Creates a holder in the current context bound to `word` (0: no labels).
  // Takes ownership of the strong reference `word` stands for and of
  // `pending` (a PendingLabels box, 0 when `word` is the holder's own set),
  // also on failure (empty result). `labels` becomes its `labels` and the
  // holder is frozen. `*serial` receives its serial number.
  v8::MaybeLocal<v8::Object> Create(std::size_t word, std::size_t pending,
                                    v8::Local<v8::Value> labels,
                                    std::uint64_t* serial);

  // Creates a request holder bound to `word` (a request cell's, taken over
  // also on failure) whose labels object is `labels`.
  v8::MaybeLocal<v8::Object> CreateRequest(std::size_t word,
                                           v8::Local<v8::Value> labels,
                                           std::uint64_t* serial);

  // Makes `labels` the labels object of the request holder `holder`. False
  // when `holder` is not a live request holder of this isolate.
  bool SetRequestLabels(v8::Local<v8::Value> holder,
                        v8::Local<v8::Value> labels);

  // The labels object of the request holder `holder`; empty when `holder` is
  // not a live request holder of this isolate.
  v8::MaybeLocal<v8::Value> RequestLabels(v8::Local<v8::Value> holder) const;

  // The word and the pending labels of `holder` (not transferred; pending is
  // 0 when it is bound to its own set). False when `holder` is not a live
  // holder of this isolate.
  bool Binding(v8::Local<v8::Value> holder, std::size_t* word,
               std::size_t* pending) const;

  // Binds `holder` to `word` (taking its reference), releasing the previous
  // word and the pending labels. Isolate thread, outside V8 callbacks. False
  // (and `word` released) when `holder` is not a live holder of this isolate.
  bool Rebind(v8::Local<v8::Value> holder, std::size_t word);

  // The serial number of `holder` (never reused within the isolate), 0 when
  // it is not a live holder of this isolate.
  std::uint64_t SerialOf(v8::Local<v8::Value> holder) const;

  // The live holder with serial number `serial`, as a handle in the current
  // HandleScope; empty when it was collected (or never existed).
  v8::MaybeLocal<v8::Object> Find(std::uint64_t serial) const;

  // The holders bound to the overflow set, as handles in the current
  // HandleScope.
  std::vector<v8::Local<v8::Object>> Overflowed() const;

  // Holders created and not yet collected.
  std::size_t live() const { return records_.size(); }
  // Of those, the ones bound to the overflow set.
  std::size_t overflowed() const { return overflowed_.size(); }
  // Holders collected so far (counted by the weak callback): whether a GC
  // may have left label sets that only the registry still holds.
  std::uint64_t collected() const { return collected_; }

 private:
  // A weak handle to one holder, the label word it owns and, while it is
  // bound to the overflow set, its pending labels.
  struct Record {
    LabelHolders* owner;
    v8::Global<v8::Object> holder;
    std::size_t word;
    std::size_t pending;
    std::uint64_t serial;
  };

  v8::Local<v8::ObjectTemplate> Template();
  v8::Local<v8::ObjectTemplate> RequestTemplate();
  // Whether `holder` is a live request holder of this isolate.
  bool IsRequestHolder(v8::Local<v8::Value> holder) const;
  // Gives a new holder its fields and a record; false (and `word` and
  // `pending` released) when `made` is empty.
  bool Track(v8::MaybeLocal<v8::Object> made, std::size_t word,
             std::size_t pending, v8::Local<v8::Object>* holder,
             std::uint64_t* serial);
  Record* RecordOf(v8::Local<v8::Value> holder);
  const Record* RecordOf(v8::Local<v8::Value> holder) const;
  static void Release(Record* record);
  static void OnHolderCollected(const v8::WeakCallbackInfo<Record>& info);

  v8::Isolate* const isolate_;
  v8::Global<v8::ObjectTemplate> template_;
  v8::Global<v8::ObjectTemplate> request_template_;
  v8::Global<v8::String> labels_name_;
  // The records of live holders by serial number, in the map's nodes (one
  // allocation per holder; nodes do not move): erased by the weak callback,
  // released by the destructor.
  std::unordered_map<std::uint64_t, Record> records_;
  // The records with pending labels (a subset of records_).
  std::unordered_set<Record*> overflowed_;
  std::uint64_t next_serial_ = 1;
  std::uint64_t collected_ = 0;
};

}  // namespace heap_labels

#endif  // HEAP_LABELS_LABEL_HOLDER_H_
