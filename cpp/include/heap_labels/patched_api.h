// Run-time probe of the patched-V8 sample-labels API.
//
// A labeled runtime (Node.js built by tools/patched-node/ with the V8 patch
// series of its line, v8-patches/<V8 major.minor>/) exports the extern "C"
// entry points declared in its include/node/v8-sample-labels.h; stock runtimes
// do not. One addon build per Node.js ABI serves both, found here at run time.
// The addon never links to them: it looks them up with dlsym(RTLD_DEFAULT, ...)
// once per process and reports on stock runtimes why the capabilities are
// unavailable (capabilities().reasons).

#ifndef HEAP_LABELS_PATCHED_API_H_
#define HEAP_LABELS_PATCHED_API_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include <v8-profiler.h>
#include <v8.h>

#include "rust/cxx.h"

namespace heap_labels {

struct PatchedApiStatus;  // shared struct, defined by the cxx bridge

// The API versions of the patch series this addon speaks: version 1 (labels,
// external bytes), from version 2 on dead samples, from version 3 on the
// samples' heap snapshot object ids (retainers per label). A runtime of
// version N provides every entry point of the versions before it.
inline constexpr uint32_t kMinApiVersion = 1;
inline constexpr uint32_t kDeadSamplesApiVersion = 2;
inline constexpr uint32_t kObjectIdsApiVersion = 3;

// v8::HeapProfilerSampleLabels::DeadSample of API version 2, field for field:
// the addon builds against stock headers, which do not declare it.
struct DeadSample {
  uintptr_t labels;
  uint32_t node_id;
  std::size_t size;
  unsigned int count;
  uint64_t sample_id;
};

// Entry points of the patched runtime (v8-sample-labels.h), resolved at run
// time. All null on a stock runtime.
struct PatchedApi {
  using CaptureFn = uintptr_t (*)(v8::Isolate*, void*);
  using ReleaseFn = void (*)(uintptr_t, void*);
  using VersionFn = uint32_t (*)();
  using StartSamplingFn = bool (*)(v8::Isolate*, CaptureFn, ReleaseFn, void*,
                                   uint64_t, int, int);
  using DeathFn = void (*)(const DeadSample*, void*);
  using StartSamplingV2Fn = bool (*)(v8::Isolate*, CaptureFn, ReleaseFn,
                                     DeathFn, void*, uint64_t, int, int);
  using SampleLabelsFn = const uintptr_t* (*)(const v8::AllocationProfile*,
                                              std::size_t*);
  using FindInCpedFn = void* (*)(v8::Isolate*, v8::Value*, int);
  using SwapAllocatorFn =
      v8::ArrayBuffer::Allocator* (*)(v8::Isolate*,
                                      v8::ArrayBuffer::Allocator*);
  using ProfileWithObjectIdsFn = v8::AllocationProfile* (*)(v8::Isolate*);
  using ObjectIdsFn =
      const v8::SnapshotObjectId* (*)(const v8::AllocationProfile*,
                                      std::size_t*);

  VersionFn version = nullptr;
  StartSamplingFn start_sampling = nullptr;
  // Null before API version 2.
  StartSamplingV2Fn start_sampling_v2 = nullptr;
  SampleLabelsFn sample_labels_of = nullptr;
  FindInCpedFn find_in_cped = nullptr;
  SwapAllocatorFn swap_allocator = nullptr;
  // Null before API version 3.
  ProfileWithObjectIdsFn profile_with_object_ids = nullptr;
  ObjectIdsFn object_ids_of = nullptr;

  // True when every entry point the capability needs is present.
  bool sample_labels_ready = false;
  bool external_bytes_ready = false;
  bool retainers_ready = false;
  std::string sample_labels_reason;
  std::string external_bytes_reason;
  std::string allocations_reason;
  std::string retainers_reason;
};

// The process-wide probe result (computed once, thread-safe).
const PatchedApi& GetPatchedApi();

// cxx bridge entry point: the probe result as a shared struct.
PatchedApiStatus patched_api_status();

// cxx bridge entry point: v8::V8::GetVersion().
rust::String v8_version();

}  // namespace heap_labels

#endif  // HEAP_LABELS_PATCHED_API_H_
