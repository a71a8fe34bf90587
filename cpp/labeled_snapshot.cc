#include "heap_labels/labeled_snapshot.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <v8-profiler.h>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/patched_api.h"
#include "heap_labels/retainers.h"
#include "heap_labels/sampling.h"

namespace heap_labels {

namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

struct SnapshotDeleter {
  void operator()(const v8::HeapSnapshot* snapshot) const {
    const_cast<v8::HeapSnapshot*>(snapshot)->Delete();
  }
};
using SnapshotPtr = std::unique_ptr<const v8::HeapSnapshot, SnapshotDeleter>;

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// V8's serializer writes through this, in chunks, to a file; the first
// failure aborts the serialization and is kept to be thrown.
class FileStream : public v8::OutputStream {
 public:
  explicit FileStream(const std::string& path)
      : path_(path), file_(std::fopen(path.c_str(), "wb")) {
    if (!file_) Fail("cannot create");
  }

  int GetChunkSize() override { return 1 << 16; }

  WriteResult WriteAsciiChunk(char* data, int size) override {
    if (!error_.empty()) return kAbort;
    if (std::fwrite(data, 1, static_cast<std::size_t>(size), file_.get()) !=
        static_cast<std::size_t>(size)) {
      Fail("cannot write");
      return kAbort;
    }
    return kContinue;
  }

  void EndOfStream() override { ended_ = true; }

  // Closes the file; throws the first failure.
  void Finish() {
    if (error_.empty() && !ended_) error_ = "V8 did not finish " + path_;
    if (file_ && std::fclose(file_.release()) != 0 && error_.empty()) {
      Fail("cannot write");
    }
    if (!error_.empty()) throw std::runtime_error(error_);
  }

 private:
  void Fail(const char* what) {
    if (error_.empty()) {
      error_ = std::string(what) + " " + path_ + ": " + std::strerror(errno);
    }
  }

  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::string error_;
  bool ended_ = false;
};

// Each sample's node ordinal: the snapshot's ids sorted with their ordinals
// (the public API has no id-to-node lookup). GetNode(i) is the i-th node of
// the serialized file: both are V8's entries in order.
void SampleNodes(const v8::HeapSnapshot& snapshot,
                 const v8::SnapshotObjectId* ids, std::size_t count,
                 rust::Vec<uint32_t>* out) {
  const uint32_t nodes = static_cast<uint32_t>(snapshot.GetNodesCount());
  std::vector<std::pair<v8::SnapshotObjectId, uint32_t>> by_id;
  by_id.reserve(nodes);
  for (uint32_t i = 0; i < nodes; i++) {
    by_id.emplace_back(snapshot.GetNode(static_cast<int>(i))->GetId(), i);
  }
  std::sort(by_id.begin(), by_id.end());
  out->reserve(count);
  for (std::size_t i = 0; i < count; i++) {
    uint32_t node = kNoRetainerNode;
    if (ids[i] != v8::HeapProfiler::kUnknownObjectId) {
      auto it = std::lower_bound(by_id.begin(), by_id.end(),
                                 std::make_pair(ids[i], uint32_t{0}));
      if (it != by_id.end() && it->first == ids[i]) node = it->second;
    }
    out->push_back(node);
  }
}

bool Write(v8::Isolate* isolate, uintptr_t unlabeled_word, bool labels,
           const std::string& path, RawSnapshotFile* out) {
  const PatchedApi& api = GetPatchedApi();
  v8::HandleScope scope(isolate);
  Clock::time_point start = Clock::now();
  SnapshotPtr snapshot(isolate->GetHeapProfiler()->TakeHeapSnapshot());
  if (!snapshot) throw std::runtime_error("V8 took no heap snapshot");
  // As for retainers: the snapshot first gives objects their ids, then the
  // profile names its samples' objects by them.
  std::unique_ptr<v8::AllocationProfile> profile;
  if (labels) {
    profile.reset(api.profile_with_object_ids(isolate));
    if (!profile) return false;
  }
  out->snapshot_ms = MillisecondsSince(start);
  out->snapshot_nodes = static_cast<uint64_t>(snapshot->GetNodesCount());

  start = Clock::now();
  {
    FileStream stream(path);
    snapshot->Serialize(&stream, v8::HeapSnapshot::kJSON);
    stream.Finish();
  }
  out->serialize_ms = MillisecondsSince(start);
  if (!labels) return true;

  std::size_t count = 0;
  const v8::SnapshotObjectId* ids = api.object_ids_of(profile.get(), &count);
  if (count != profile->GetSamples().size()) {
    throw std::runtime_error(
        "the runtime's profile has no object id for every sample");
  }
  SampleNodes(*snapshot, ids, count, &out->sample_nodes);
  // Takes the samples' label references: nothing throws after this.
  CopyAllocationProfile(isolate, *profile, unlabeled_word, &out->profile);
  return true;
}

}  // namespace

bool WriteSnapshotFile(v8::Isolate* isolate, uintptr_t unlabeled_word,
                       bool labels, rust::Str path, RawSnapshotFile* out) {
  const PatchedApi& api = GetPatchedApi();
  if (labels && !api.retainers_ready) {
    throw std::runtime_error(api.retainers_reason);
  }
  const bool written =
      Write(isolate, unlabeled_word, labels, std::string(path), out);
  // As after retainers: give the snapshot's freed pages back to the system.
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  return written;
}

}  // namespace heap_labels
