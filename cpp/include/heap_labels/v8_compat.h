// Version gates for the V8 C++ API differences between the supported runtimes:
// Node 22 (V8 12.4), Node 24 (V8 13.6) and Node 26 (V8 14.6). Every #if on
// V8_MAJOR_VERSION, and every test for a member that only some of them have,
// lives in this header.

#ifndef HEAP_LABELS_V8_COMPAT_H_
#define HEAP_LABELS_V8_COMPAT_H_

#include <v8-profiler.h>
#include <v8.h>

namespace heap_labels {

// Sample::is_live where V8 has it (V8 13.x / Node.js 26 on); true elsewhere.
template <typename S>
auto SampleIsLive(const S& sample, int) -> decltype(bool{sample.is_live}) {
  return sample.is_live;
}
template <typename S>
bool SampleIsLive(const S&, long) {
  return true;
}

// Whether this V8 marks samples of collected objects that the include-
// collected flags keep (AllocationProfile::Sample::is_live, Node.js 26): a
// zero-initialized sample (is_live == false) reads as dead exactly when the
// field exists.
inline bool SamplesCarryLiveness() {
  return !SampleIsLive(v8::AllocationProfile::Sample{}, 0);
}

// V8 14 added a type tag to aligned pointers in internal fields.
inline void SetAlignedPointer(v8::Local<v8::Object> object, int index,
                              void* value) {
#if V8_MAJOR_VERSION >= 14
  object->SetAlignedPointerInInternalField(index, value,
                                           v8::kEmbedderDataTypeTagDefault);
#else
  object->SetAlignedPointerInInternalField(index, value);
#endif
}

inline void* GetAlignedPointer(v8::Local<v8::Object> object, int index) {
#if V8_MAJOR_VERSION >= 14
  return object->GetAlignedPointerFromInternalField(
      index, v8::kEmbedderDataTypeTagDefault);
#else
  return object->GetAlignedPointerFromInternalField(index);
#endif
}

// The continuation-preserved embedder data (CPED) of the current continuation
// as a value; empty when it is unset or not a JS value. Node stores its
// AsyncContextFrame (a Map) there when AsyncLocalStorage is backed by it.
inline v8::Local<v8::Value> GetContinuationData(v8::Isolate* isolate) {
#if V8_MAJOR_VERSION >= 14
  v8::Local<v8::Data> data = isolate->GetContinuationPreservedEmbedderDataV2();
  if (data.IsEmpty() || !data->IsValue()) return {};
  return data.As<v8::Value>();
#else
  return isolate->GetContinuationPreservedEmbedderData();
#endif
}

}  // namespace heap_labels

#endif  // HEAP_LABELS_V8_COMPAT_H_
