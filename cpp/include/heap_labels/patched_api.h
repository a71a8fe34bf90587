// Run-time probe of the patched-V8 sample-labels API.
//
// SEAM (patched runtime, issue 3): the patched Node.js 22.22.2 built from
// v8-patches/12.4/ exports extern "C" entry points; stock runtimes do not.
// The addon never links to them: it looks them up with
// dlsym(RTLD_DEFAULT, ...) once per process and reports on stock runtimes
// why the capabilities are unavailable (capabilities().reasons).
//
// Expected symbols (the patch defines the final list and signatures):
//   uint32_t v8_sample_labels_version(void);   // probe; > 0 when present
//   ... capture/release callback registration, the CPED lookup by key and
//       the ArrayBuffer allocator hook, added to PatchedApi below by the
//       patched-runtime half of cpp/.

#ifndef HEAP_LABELS_PATCHED_API_H_
#define HEAP_LABELS_PATCHED_API_H_

#include <cstdint>
#include <string>

#include "rust/cxx.h"

namespace heap_labels {

struct PatchedApiStatus;  // shared struct, defined by the cxx bridge

// Name of the version probe symbol exported by the patched runtime.
inline constexpr const char kVersionSymbol[] = "v8_sample_labels_version";

// Entry points of the patched runtime, resolved at run time. All null on a
// stock runtime.
struct PatchedApi {
  using VersionFn = uint32_t (*)();

  VersionFn version = nullptr;
  // SEAM: function pointers for the capture/release callbacks, the CPED
  // lookup and the allocator hook go here, resolved in ResolvePatchedApi().

  // True when every entry point this addon needs is present and wired.
  bool sample_labels_ready = false;
  bool external_bytes_ready = false;
  std::string sample_labels_reason;
  std::string external_bytes_reason;
};

// The process-wide probe result (computed once, thread-safe).
const PatchedApi& GetPatchedApi();

// cxx bridge entry point: the probe result as a shared struct.
PatchedApiStatus patched_api_status();

// cxx bridge entry point: v8::V8::GetVersion().
rust::String v8_version();

}  // namespace heap_labels

#endif  // HEAP_LABELS_PATCHED_API_H_
