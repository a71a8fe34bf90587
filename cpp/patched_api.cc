#include "heap_labels/patched_api.h"

#include <dlfcn.h>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/v8_compat.h"

namespace heap_labels {

namespace {

constexpr char kVersionSymbol[] = "v8_sample_labels_api_version";
constexpr char kRetainersNeed[] =
    "retainers: what retains each label's objects needs the labeled runtime "
    "(sample-labels API version 3: the samples' heap snapshot object ids); ";

// Looks a symbol up in the global scope of the process (node exports V8's
// symbols with -rdynamic), never linking to it.
template <typename Fn>
Fn FindSymbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

void ExplainStock(PatchedApi* api) {
  const std::string v8 = v8::V8::GetVersion();
  api->sample_labels_reason = "sampleLabels: this runtime's V8 " + v8 +
                              " has no sample-labels API (symbol " +
                              kVersionSymbol + " not found)";
  api->allocations_reason =
      SamplesCarryLiveness()
          ? "allocations: this runtime's V8 " + v8 +
                " cannot report dead samples in bounded memory (the patched "
                "runtime's sample-labels API version 2 can); start with "
                "includeObjectsCollectedByMajorGC and "
                "includeObjectsCollectedByMinorGC to get allocated bytes from "
                "V8's is_live, keeping every sample for the session"
          : "allocations: allocated bytes per label need the patched "
            "runtime's dead-sample reports (sample-labels API version 2); "
            "this runtime's V8 " +
                v8 + " reports only the live heap";
  api->external_bytes_reason =
      "externalBytes: per-label ArrayBuffer/Buffer bytes need the patched "
      "runtime's allocator swap (symbol " +
      std::string(kVersionSymbol) +
      " not found); external memory is reported as one unlabeled total";
  api->retainers_reason = kRetainersNeed + ("this runtime's V8 " + v8) +
                          " has no sample-labels API";
}

// Version 3: the profile with the samples' heap snapshot object ids.
void ResolveObjectIds(uint32_t version, PatchedApi* api) {
  const std::string needs = kRetainersNeed;
  if (version < kObjectIdsApiVersion) {
    api->retainers_reason =
        needs + "this runtime's is version " + std::to_string(version);
    return;
  }
  api->profile_with_object_ids = FindSymbol<PatchedApi::ProfileWithObjectIdsFn>(
      "v8_sample_labels_get_profile_with_object_ids");
  api->object_ids_of =
      FindSymbol<PatchedApi::ObjectIdsFn>("v8_sample_labels_get_object_ids");
  api->retainers_ready =
      api->profile_with_object_ids != nullptr && api->object_ids_of != nullptr;
  if (!api->retainers_ready) {
    api->retainers_reason = needs + "this runtime says version " +
                            std::to_string(version) +
                            " but does not export its entry points";
  }
}

PatchedApi ResolvePatchedApi() {
  PatchedApi api;
  api.version = FindSymbol<PatchedApi::VersionFn>(kVersionSymbol);
  if (api.version == nullptr) {
    ExplainStock(&api);
    return api;
  }
  const uint32_t version = api.version();
  if (version < kMinApiVersion) {
    const std::string found = "the runtime's sample-labels API is version " +
                              std::to_string(version) +
                              ", this addon needs at least " +
                              std::to_string(kMinApiVersion);
    api.sample_labels_reason = "sampleLabels: " + found;
    api.allocations_reason = "allocations: " + found;
    api.external_bytes_reason = "externalBytes: " + found;
    api.retainers_reason = kRetainersNeed + found;
    return api;
  }
  api.start_sampling = FindSymbol<PatchedApi::StartSamplingFn>(
      "v8_sample_labels_start_sampling");
  if (version >= kDeadSamplesApiVersion) {
    api.start_sampling_v2 = FindSymbol<PatchedApi::StartSamplingV2Fn>(
        "v8_sample_labels_start_sampling_v2");
  }
  if (api.start_sampling_v2 == nullptr) {
    api.allocations_reason =
        "allocations: the runtime's sample-labels API is version " +
        std::to_string(version) +
        "; allocated bytes per label need version 2 (dead-sample reports), "
        "so only the live heap is reported";
  }
  api.sample_labels_of =
      FindSymbol<PatchedApi::SampleLabelsFn>("v8_sample_labels_get");
  api.find_in_cped =
      FindSymbol<PatchedApi::FindInCpedFn>("v8_sample_labels_find_in_cped");
  api.swap_allocator = FindSymbol<PatchedApi::SwapAllocatorFn>(
      "v8_sample_labels_swap_allocator");
  ResolveObjectIds(version, &api);
  api.sample_labels_ready = api.start_sampling != nullptr &&
                            api.sample_labels_of != nullptr &&
                            api.find_in_cped != nullptr;
  api.external_bytes_ready =
      api.swap_allocator != nullptr && api.find_in_cped != nullptr;
  if (!api.sample_labels_ready) {
    api.sample_labels_reason =
        "sampleLabels: the runtime exports the sample-labels version probe "
        "but not every entry point";
  }
  if (!api.external_bytes_ready) {
    api.external_bytes_reason =
        "externalBytes: the runtime exports no ArrayBuffer allocator swap";
  }
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
  status.sample_labels_reason = api.sample_labels_reason;
  status.allocations =
      api.sample_labels_ready && api.start_sampling_v2 != nullptr;
  status.allocations_reason = status.allocations ? "" : api.allocations_reason;
  status.external_bytes_reason = api.external_bytes_reason;
  status.retainers = api.retainers_ready;
  status.retainers_reason = api.retainers_ready ? "" : api.retainers_reason;
  return status;
}

rust::String v8_version() {
  return rust::String(v8::V8::GetVersion());
}

}  // namespace heap_labels
