// The one place where N-API values and V8 handles meet.

#ifndef HEAP_LABELS_JS_VALUE_H_
#define HEAP_LABELS_JS_VALUE_H_

#include <cstddef>
#include <cstring>

#include <v8.h>

namespace heap_labels {

// Inside Node.js a napi_value IS a v8::Local<v8::Value>: both are one pointer
// to a handle slot, and Node converts between them by reinterpreting the bits
// (v8impl::V8LocalValueFromJsValue / JsValueFromV8LocalValue in
// src/js_native_api_v8.h). The bridge carries napi_values as size_t, so this
// is the only conversion in the addon. A handle made in C++ during a napi
// callback lives in that callback's HandleScope, so it is valid to return.
static_assert(sizeof(v8::Local<v8::Value>) == sizeof(std::size_t),
              "a v8::Local must be one pointer, as napi_value is");

inline v8::Local<v8::Value> ToLocal(std::size_t napi_value) {
  v8::Local<v8::Value> local;
  std::memcpy(static_cast<void*>(&local), &napi_value, sizeof(napi_value));
  return local;
}

inline std::size_t ToNapiValue(v8::Local<v8::Value> local) {
  std::size_t napi_value;
  std::memcpy(&napi_value, static_cast<void*>(&local), sizeof(napi_value));
  return napi_value;
}

}  // namespace heap_labels

#endif  // HEAP_LABELS_JS_VALUE_H_
