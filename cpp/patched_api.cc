#include "heap_labels/patched_api.h"

#include <dlfcn.h>

#include <v8.h>

#include "heap-labels/src/bridge.rs.h"

namespace heap_labels {

namespace {

// Looks a symbol up in the global scope of the process (node exports V8's
// symbols with -rdynamic), never linking to it.
void* FindSymbol(const char* name) {
  return dlsym(RTLD_DEFAULT, name);
}

PatchedApi ResolvePatchedApi() {
  PatchedApi api;
  api.version = reinterpret_cast<PatchedApi::VersionFn>(
      FindSymbol(kVersionSymbol));
  if (api.version == nullptr) {
    std::string v8 = v8::V8::GetVersion();
    api.sample_labels_reason =
        "sampleLabels: this runtime's V8 " + v8 +
        " has no sample-labels API (symbol " + kVersionSymbol +
        " not found); per-sample labels need the patched Node.js 22.22.2 "
        "(tools/patched-node)";
    api.external_bytes_reason =
        "externalBytes: per-label ArrayBuffer/Buffer bytes need the patched "
        "runtime's allocator hook (symbol " +
        std::string(kVersionSymbol) +
        " not found); external memory is reported as one unlabeled total";
    return api;
  }
  // SEAM (patched runtime): resolve the remaining entry points here, check
  // api.version() against what this addon supports, and set the *_ready
  // flags. Until that half is written, a patched runtime is reported as
  // found but not wired.
  std::string found = "the patched sample-labels API (version " +
                      std::to_string(api.version()) + ") is present, but ";
  api.sample_labels_reason =
      "sampleLabels: " + found + "this addon build does not wire it yet";
  api.external_bytes_reason =
      "externalBytes: " + found + "this addon build does not wire it yet";
  return api;
}

}  // namespace

const PatchedApi& GetPatchedApi() {
  static const PatchedApi api = ResolvePatchedApi();
  return api;
}

PatchedApiStatus patched_api_status() {
  const PatchedApi& api = GetPatchedApi();
  PatchedApiStatus status;
  status.sample_labels = api.sample_labels_ready;
  status.external_bytes = api.external_bytes_ready;
  status.version = api.version != nullptr ? api.version() : 0;
  status.sample_labels_reason = api.sample_labels_reason;
  status.external_bytes_reason = api.external_bytes_reason;
  return status;
}

rust::String v8_version() {
  return rust::String(v8::V8::GetVersion());
}

}  // namespace heap_labels
