// Tests of the sample-labels patch series of every V8 line (v8-patches/<line>/),
// built against the patched V8 of the Node.js build tree
// (tools/patched-node/test-patch.sh, 12.4) or of the V8-only build tree
// (tools/v8-only/build.sh, 13.6 and later). What differs between lines is
// chosen by V8's version macros, so one file holds one set of expectations.
// They use only V8's public API, as an embedder does.

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "libplatform/libplatform.h"
#include "v8-sample-labels.h"
#include "v8-version.h"
#include "v8.h"

namespace {

// Label sets stand-ins: the embedder stores pointers to these in holders.
alignas(8) int kRouteA = 1;
alignas(8) int kRouteB = 2;
uintptr_t Word(int* label) { return reinterpret_cast<uintptr_t>(label); }

// Enters |isolate| and a fresh context for the object's lifetime (stack only).
struct Entered {
  explicit Entered(v8::Isolate* isolate)
      : isolate_scope(isolate),
        handle_scope(isolate),
        context(v8::Context::New(isolate)),
        context_scope(context) {}
  v8::Isolate::Scope isolate_scope;
  v8::HandleScope handle_scope;
  v8::Local<v8::Context> context;
  v8::Context::Scope context_scope;
};

// What the embedder's callbacks saw: refcounts per word. |key| is the labels
// key the capture callback looks up.
struct Recorder {
  Recorder(v8::Isolate* isolate, v8::Local<v8::Object> labels_key)
      : isolate(isolate), key(isolate, labels_key) {}
  v8::Isolate* isolate;
  v8::Global<v8::Value> key;
  int captured = 0;
  int labeled = 0;
  int released = 0;
  std::map<uintptr_t, int> live;
  std::vector<v8::HeapProfilerSampleLabels::DeadSample> deaths;
};

uintptr_t Capture(v8::Isolate* isolate, void* data) {
  auto* recorder = static_cast<Recorder*>(data);
  EXPECT_EQ(isolate, recorder->isolate);
  recorder->captured++;
  v8::HandleScope scope(isolate);
  void* labels =
      v8::HeapProfilerSampleLabels::FindInContinuationPreservedEmbedderData(
          isolate, recorder->key.Get(isolate), 0);
  uintptr_t word = reinterpret_cast<uintptr_t>(labels);
  if (word != 0) {
    recorder->labeled++;
    recorder->live[word]++;
  }
  return word;
}

void Release(uintptr_t word, void* data) {
  auto* recorder = static_cast<Recorder*>(data);
  EXPECT_NE(word, 0u);
  recorder->released++;
  recorder->live[word]--;
}

void Died(const v8::HeapProfilerSampleLabels::DeadSample* sample,
          void* data) {
  auto* recorder = static_cast<Recorder*>(data);
  recorder->deaths.push_back(*sample);
  if (sample->labels != 0) recorder->live[sample->labels]--;
}

// Allocates and keeps about 2000 small objects.
constexpr char kRetain[] =
    "globalThis.kept = globalThis.kept || [];"
    "for (let i = 0; i < 2000; i++) kept.push({i, pad: [i, i, i, i]});";

class SampleLabelsTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    v8::V8::SetFlagsFromString(
        "--sampling-heap-profiler-suppress-randomness --expose-gc");
    platform_ = v8::platform::NewDefaultPlatform();
    v8::V8::InitializePlatform(platform_.get());
    v8::V8::Initialize();
  }

 protected:
  void SetUp() override { isolate_ = NewIsolate(&allocator_); }
  void TearDown() override { isolate_->Dispose(); }

  static v8::Isolate* NewIsolate(
      std::unique_ptr<v8::ArrayBuffer::Allocator>* allocator) {
    allocator->reset(v8::ArrayBuffer::Allocator::NewDefaultAllocator());
    v8::Isolate::CreateParams params;
    params.array_buffer_allocator = allocator->get();
    return v8::Isolate::New(params);
  }

  static v8::Local<v8::Value> Run(v8::Local<v8::Context> context,
                                  const char* source) {
    v8::Isolate* isolate = v8::Isolate::GetCurrent();
    v8::Local<v8::String> code =
        v8::String::NewFromUtf8(isolate, source).ToLocalChecked();
    return v8::Script::Compile(context, code)
        .ToLocalChecked()
        ->Run(context)
        .ToLocalChecked();
  }

  // An API object with two embedder fields, field 0 holding |labels|.
  static v8::Local<v8::Object> Holder(v8::Local<v8::Context> context,
                                      void* labels) {
    v8::Isolate* isolate = v8::Isolate::GetCurrent();
    v8::Local<v8::ObjectTemplate> templ = v8::ObjectTemplate::New(isolate);
    templ->SetInternalFieldCount(2);
    v8::Local<v8::Object> holder =
        templ->NewInstance(context).ToLocalChecked();
#if V8_MAJOR_VERSION >= 14
    // From 14.x an aligned pointer is stored with a type tag; the C entry
    // point reads the default one.
    holder->SetAlignedPointerInInternalField(0, labels,
                                             v8::kEmbedderDataTypeTagDefault);
#else
    holder->SetAlignedPointerInInternalField(0, labels);
#endif
    return holder;
  }

  // A frame as Node.js's AsyncContextFrame makes it: a Map from keys to
  // stores, installed as continuation-preserved embedder data.
  static v8::Local<v8::Map> Frame(
      v8::Local<v8::Context> context,
      std::vector<std::pair<v8::Local<v8::Value>, v8::Local<v8::Value>>>
          entries) {
    v8::Local<v8::Map> map = v8::Map::New(v8::Isolate::GetCurrent());
    for (auto& [key, value] : entries) {
      map = map->Set(context, key, value).ToLocalChecked();
    }
    v8::Isolate::GetCurrent()->SetContinuationPreservedEmbedderData(map);
    return map;
  }

  static bool Start(v8::Isolate* isolate, Recorder* recorder,
                    v8::HeapProfiler::SamplingFlags flags =
                        v8::HeapProfiler::kSamplingNoFlags,
                    bool report_deaths = false) {
    v8::HeapProfilerSampleLabels::Callbacks callbacks;
    callbacks.capture = Capture;
    callbacks.release = Release;
    callbacks.data = recorder;
    if (report_deaths) callbacks.death = Died;
    return v8::HeapProfilerSampleLabels::StartSamplingHeapProfiler(
        isolate, callbacks, 256, 16, flags);
  }

  // Words of the current profile's samples, checked to be aligned.
  static std::vector<uintptr_t> SampleWords(v8::Isolate* isolate) {
    std::unique_ptr<v8::AllocationProfile> profile(
        isolate->GetHeapProfiler()->GetAllocationProfile());
    size_t count = 0;
    const uintptr_t* words =
        v8::HeapProfilerSampleLabels::GetSampleLabels(profile.get(), &count);
    EXPECT_EQ(count, profile->GetSamples().size());
    return std::vector<uintptr_t>(words, words + count);
  }

  static int Count(const std::vector<uintptr_t>& words, uintptr_t word) {
    int n = 0;
    for (uintptr_t w : words) n += w == word;
    return n;
  }

  // Starts a labeled session in |isolate| whose current frame carries
  // |labels|, and retains objects allocated under them.
  static std::unique_ptr<Recorder> StartAndRetain(v8::Isolate* isolate,
                                                  int* labels) {
    Entered entered(isolate);
    v8::Local<v8::Object> key = v8::Object::New(isolate);
    auto recorder = std::make_unique<Recorder>(isolate, key);
    Frame(entered.context, {{key, Holder(entered.context, labels)}});
    EXPECT_TRUE(Start(isolate, recorder.get()));
    Run(entered.context, kRetain);
    return recorder;
  }

  static void FullGC(v8::Isolate* isolate) {
    isolate->RequestGarbageCollectionForTesting(
        v8::Isolate::kFullGarbageCollection);
  }

  // Drops globalThis.kept (kRetain's array) and collects garbage until the
  // array is gone; false if it survives 100 more rounds of 100 ms each. Two
  // full GCs usually suffice. But an optimizing compile job of kRetain's loop
  // (a concurrent OSR compile) holds the constants it read, the array among
  // them, in persistent handles, strong GC roots, until the main thread
  // finalizes the job, and it does so only when the isolate next runs JS. In
  // a -O0 build on a busy machine the job can outlive kRetain; then no number
  // of GCs alone collects the array. So between collections this runs a
  // script, as an embedder's event loop would, and the tests check what the
  // profiler did with samples whose objects are known to be dead.
  static bool DropKeptAndCollect(v8::Local<v8::Context> context) {
    v8::Isolate* isolate = v8::Isolate::GetCurrent();
    v8::Global<v8::Value> kept;
    {
      v8::HandleScope scope(isolate);
      kept.Reset(isolate, Run(context, "globalThis.kept"));
    }
    kept.SetWeak();  // Emptied by the GC that collects the array.
    Run(context, "globalThis.kept = undefined;");
    FullGC(isolate);
    FullGC(isolate);
    for (int i = 0; i < 100 && !kept.IsEmpty(); i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      Run(context, "0");  // Finalizes compile jobs that have finished.
      FullGC(isolate);
    }
    return kept.IsEmpty();
  }

  static std::unique_ptr<v8::Platform> platform_;
  std::unique_ptr<v8::ArrayBuffer::Allocator> allocator_;
  v8::Isolate* isolate_ = nullptr;
};

std::unique_ptr<v8::Platform> SampleLabelsTest::platform_;

TEST_F(SampleLabelsTest, ApiVersionIsExported) {
  EXPECT_EQ(v8_sample_labels_api_version(),
            v8::HeapProfilerSampleLabels::kApiVersion);
}

TEST_F(SampleLabelsTest, VersionTwoHasTheDeathCallbackEntryPoint) {
  EXPECT_GE(v8_sample_labels_api_version(), 2u);
  Entered entered(isolate_);
  Recorder recorder(isolate_, v8::Object::New(isolate_));
  ASSERT_TRUE(v8_sample_labels_start_sampling_v2(
      isolate_, Capture, Release, Died, &recorder, 256, 16,
      v8::HeapProfiler::kSamplingNoFlags));
  Run(entered.context, "for (let i = 0; i < 2000; i++) ({i});");
  FullGC(isolate_);
  EXPECT_GT(recorder.deaths.size(), 0u) << "the C entry point sets |death|";
  EXPECT_EQ(recorder.released, 0);
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
}

TEST_F(SampleLabelsTest, VersionThreeHasTheObjectIdEntryPoints) {
  EXPECT_GE(v8_sample_labels_api_version(), 3u);
  Entered entered(isolate_);
  Recorder recorder(isolate_, v8::Object::New(isolate_));
  ASSERT_TRUE(Start(isolate_, &recorder));
  Run(entered.context, kRetain);
  std::unique_ptr<v8::AllocationProfile> profile(
      v8_sample_labels_get_profile_with_object_ids(isolate_));
  size_t count = 0;
  ASSERT_NE(v8_sample_labels_get_object_ids(profile.get(), &count), nullptr);
  EXPECT_EQ(count, profile->GetSamples().size());
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
}

// The ids of |profile|'s samples, checked to be aligned with its samples.
std::vector<v8::SnapshotObjectId> SampleObjectIds(
    const v8::AllocationProfile* profile) {
  size_t count = 0;
  const v8::SnapshotObjectId* ids =
      v8::HeapProfilerSampleLabels::GetSampleObjectIds(profile, &count);
  return std::vector<v8::SnapshotObjectId>(ids, ids + count);
}

// The ids of the objects kRetain keeps in |snapshot|: every node with a
// "pad" property, its pad array and the array's elements.
std::set<v8::SnapshotObjectId> KRetainObjects(
    const v8::HeapSnapshot* snapshot) {
  std::set<v8::SnapshotObjectId> ids;
  for (int n = 0; n < snapshot->GetNodesCount(); n++) {
    const v8::HeapGraphNode* node = snapshot->GetNode(n);
    for (int e = 0; e < node->GetChildrenCount(); e++) {
      const v8::HeapGraphEdge* edge = node->GetChild(e);
      v8::String::Utf8Value name(v8::Isolate::GetCurrent(), edge->GetName());
      if (edge->GetType() != v8::HeapGraphEdge::kProperty ||
          std::string(*name) != "pad") {
        continue;
      }
      const v8::HeapGraphNode* pad = edge->GetToNode();
      ids.insert(node->GetId());
      ids.insert(pad->GetId());
      for (int c = 0; c < pad->GetChildrenCount(); c++) {
        v8::String::Utf8Value child(v8::Isolate::GetCurrent(),
                                    pad->GetChild(c)->GetName());
        if (std::string(*child) == "elements") {
          ids.insert(pad->GetChild(c)->GetToNode()->GetId());
        }
      }
    }
  }
  return ids;
}

TEST_F(SampleLabelsTest, ObjectIdsJoinSamplesToTheNodesOfASnapshot) {
  Entered entered(isolate_);
  Recorder recorder(isolate_, v8::Object::New(isolate_));
  v8::HeapProfiler* heap_profiler = isolate_->GetHeapProfiler();
  ASSERT_TRUE(Start(isolate_, &recorder));
  Run(entered.context, kRetain);

  // Ids only when asked for, and none before a snapshot has seen the objects.
  std::unique_ptr<v8::AllocationProfile> plain(
      heap_profiler->GetAllocationProfile());
  EXPECT_TRUE(SampleObjectIds(plain.get()).empty());
  std::unique_ptr<v8::AllocationProfile> early(
      v8::HeapProfilerSampleLabels::GetAllocationProfileWithObjectIds(
          isolate_));
  std::vector<v8::SnapshotObjectId> early_ids = SampleObjectIds(early.get());
  ASSERT_EQ(early_ids.size(), early->GetSamples().size());
  for (v8::SnapshotObjectId id : early_ids) {
    EXPECT_EQ(id, v8::HeapProfiler::kUnknownObjectId);
  }

  const v8::HeapSnapshot* snapshot = heap_profiler->TakeHeapSnapshot();
  ASSERT_NE(snapshot, nullptr);
  // A full GC after the snapshot can move the objects: their ids follow.
  FullGC(isolate_);
  std::unique_ptr<v8::AllocationProfile> profile(
      v8::HeapProfilerSampleLabels::GetAllocationProfileWithObjectIds(
          isolate_));
  const std::vector<v8::AllocationProfile::Sample>& samples =
      profile->GetSamples();
  std::vector<v8::SnapshotObjectId> ids = SampleObjectIds(profile.get());
  ASSERT_EQ(ids.size(), samples.size());
  ASSERT_GT(samples.size(), 10u);
  // What kRetain allocated, as the snapshot saw it: each {i, pad} object, its
  // pad array and that array's elements. A sample may stand for any of them
  // (optimized code folds the three allocations into one).
  std::set<v8::SnapshotObjectId> retained = KRetainObjects(snapshot);
  ASSERT_GE(retained.size(), 3 * 2000u);
  size_t joined = 0;
  for (size_t i = 0; i < samples.size(); i++) {
    if (ids[i] == v8::HeapProfiler::kUnknownObjectId) continue;
    const v8::HeapGraphNode* node = snapshot->GetNodeById(ids[i]);
    ASSERT_NE(node, nullptr) << "sample " << samples[i].sample_id;
    EXPECT_LE(node->GetShallowSize(), samples[i].size);
    joined += retained.count(ids[i]);
  }
  // kRetain keeps its objects: nearly every sample is one of them. Only
  // samples of the isolate's own allocations have another node or none.
  EXPECT_GE(joined, samples.size() * 9 / 10);
  heap_profiler->DeleteAllHeapSnapshots();
  heap_profiler->StopSamplingHeapProfiler();
}

TEST_F(SampleLabelsTest, ObjectIdsOfDeadSamplesAreUnknown) {
  Entered entered(isolate_);
  Recorder recorder(isolate_, v8::Object::New(isolate_));
  v8::HeapProfiler* heap_profiler = isolate_->GetHeapProfiler();
  ASSERT_TRUE(
      Start(isolate_, &recorder,
            v8::HeapProfiler::kSamplingIncludeObjectsCollectedByMajorGC));
  Run(entered.context, kRetain);
  ASSERT_NE(heap_profiler->TakeHeapSnapshot(), nullptr);
  ASSERT_TRUE(DropKeptAndCollect(entered.context));
  std::unique_ptr<v8::AllocationProfile> profile(
      v8::HeapProfilerSampleLabels::GetAllocationProfileWithObjectIds(
          isolate_));
  std::vector<v8::SnapshotObjectId> ids = SampleObjectIds(profile.get());
  ASSERT_EQ(ids.size(), profile->GetSamples().size());
  size_t unknown = 0;
  for (v8::SnapshotObjectId id : ids) {
    unknown += id == v8::HeapProfiler::kUnknownObjectId;
  }
  EXPECT_GE(unknown, ids.size() * 9 / 10)
      << "kept samples of collected objects have no object";
  heap_profiler->DeleteAllHeapSnapshots();
  heap_profiler->StopSamplingHeapProfiler();
}

TEST_F(SampleLabelsTest, CapturesTheLabelsOfTheCurrentFrame) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  v8::Local<v8::Object> key = v8::Object::New(isolate_);
  Recorder recorder(isolate_, key);
  Frame(context, {{key, Holder(context, &kRouteA)}});

  ASSERT_TRUE(Start(isolate_, &recorder));
  Run(context, kRetain);
  std::vector<uintptr_t> words = SampleWords(isolate_);
  ASSERT_GT(words.size(), 10u);
  EXPECT_GT(recorder.captured, 10);
  // Every sample of this script was allocated under route A.
  EXPECT_GE(Count(words, Word(&kRouteA)), static_cast<int>(words.size()) - 2);
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
  EXPECT_EQ(recorder.live[Word(&kRouteA)], 0) << "stop releases every word";
}

TEST_F(SampleLabelsTest, SeveralLabelSetsAndUnrelatedFrameChanges) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  v8::Local<v8::Object> key = v8::Object::New(isolate_);
  v8::Local<v8::Object> tracer_key = v8::Object::New(isolate_);
  Recorder recorder(isolate_, key);
  v8::Local<v8::Object> a = Holder(context, &kRouteA);
  v8::Local<v8::Object> b = Holder(context, &kRouteB);
  ASSERT_TRUE(Start(isolate_, &recorder));

  Frame(context, {{key, a}});
  Run(context, kRetain);
  Frame(context, {{key, b}});
  Run(context, kRetain);
  // A tracer's AsyncLocalStorage.run() copies the frame and adds its own key:
  // the labels key still finds route B's holder.
  Frame(context, {{key, b}, {tracer_key, v8::Object::New(isolate_)}});
  Run(context, kRetain);
  // No frame at all: unlabeled.
  isolate_->SetContinuationPreservedEmbedderData(v8::Undefined(isolate_));
  Run(context, kRetain);

  std::vector<uintptr_t> words = SampleWords(isolate_);
  int a_count = Count(words, Word(&kRouteA));
  int b_count = Count(words, Word(&kRouteB));
  int none = Count(words, 0);
  EXPECT_GT(a_count, 10);
  EXPECT_GT(b_count, a_count) << "B ran twice as long as A";
  EXPECT_GT(none, 10);
  EXPECT_EQ(recorder.live[Word(&kRouteA)], a_count);
  EXPECT_EQ(recorder.live[Word(&kRouteB)], b_count);
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
}

TEST_F(SampleLabelsTest, GarbageCollectedSamplesReleaseTheirLabels) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  v8::Local<v8::Object> key = v8::Object::New(isolate_);
  Recorder recorder(isolate_, key);
  Frame(context, {{key, Holder(context, &kRouteA)}});
  ASSERT_TRUE(Start(isolate_, &recorder));
  Run(context, kRetain);
  int before = recorder.live[Word(&kRouteA)];
  ASSERT_GT(before, 10);

  isolate_->SetContinuationPreservedEmbedderData(v8::Undefined(isolate_));
  ASSERT_TRUE(DropKeptAndCollect(context)) << "kRetain's objects died";
  EXPECT_LT(recorder.live[Word(&kRouteA)], before / 10)
      << "dead samples give their word back from the GC weak callback";
  EXPECT_GT(recorder.released, before * 9 / 10);
  EXPECT_EQ(Count(SampleWords(isolate_), Word(&kRouteA)),
            recorder.live[Word(&kRouteA)]);
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
  EXPECT_EQ(recorder.live[Word(&kRouteA)], 0);
}

// All node ids of |node|'s subtree.
void CollectNodeIds(const v8::AllocationProfile::Node* node,
                    std::set<uint32_t>* ids) {
  ids->insert(node->node_id);
  for (const v8::AllocationProfile::Node* child : node->children) {
    CollectNodeIds(child, ids);
  }
}

TEST_F(SampleLabelsTest, DeadSamplesGoToTheDeathCallbackOnceWithTheirNode) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  v8::Local<v8::Object> key = v8::Object::New(isolate_);
  Recorder recorder(isolate_, key);
  Frame(context, {{key, Holder(context, &kRouteA)}});
  ASSERT_TRUE(Start(isolate_, &recorder, v8::HeapProfiler::kSamplingNoFlags,
                    /*report_deaths=*/true));
  Run(context, kRetain);
  // What V8 reported for each live sample before it died.
  std::map<uint64_t, std::tuple<uint32_t, size_t, unsigned int>> before;
  {
    std::unique_ptr<v8::AllocationProfile> profile(
        isolate_->GetHeapProfiler()->GetAllocationProfile());
    for (const auto& sample : profile->GetSamples()) {
      before[sample.sample_id] = {sample.node_id, sample.size, sample.count};
    }
  }
  ASSERT_GT(before.size(), 10u);

  isolate_->SetContinuationPreservedEmbedderData(v8::Undefined(isolate_));
  ASSERT_TRUE(DropKeptAndCollect(context)) << "kRetain's objects died";
  EXPECT_EQ(recorder.released, 0) << "dead samples go to |death| only";
  std::set<uint64_t> dead_ids;
  int dead_labeled = 0;
  for (const auto& dead : recorder.deaths) {
    EXPECT_TRUE(dead_ids.insert(dead.sample_id).second)
        << "sample " << dead.sample_id << " reported twice";
    if (dead.labels == Word(&kRouteA)) dead_labeled++;
    auto it = before.find(dead.sample_id);
    if (it == before.end()) continue;  // Allocated after the read above.
    EXPECT_EQ(std::get<0>(it->second), dead.node_id);
    EXPECT_EQ(std::get<1>(it->second), dead.size);
    EXPECT_EQ(std::get<2>(it->second), dead.count);
  }
  EXPECT_GT(dead_labeled, static_cast<int>(before.size()) * 9 / 10);

  // Dead samples' nodes stay in the tree, so their ids resolve later.
  std::unique_ptr<v8::AllocationProfile> after(
      isolate_->GetHeapProfiler()->GetAllocationProfile());
  std::set<uint32_t> node_ids;
  CollectNodeIds(after->GetRootNode(), &node_ids);
  for (const auto& dead : recorder.deaths) {
    EXPECT_EQ(node_ids.count(dead.node_id), 1u) << "node " << dead.node_id;
  }
  // Live samples are those not reported dead; stop releases exactly them.
  for (const auto& sample : after->GetSamples()) {
    EXPECT_EQ(dead_ids.count(sample.sample_id), 0u);
  }
  int labeled_live = recorder.live[Word(&kRouteA)];
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
  EXPECT_EQ(recorder.released, labeled_live);
  EXPECT_EQ(recorder.live[Word(&kRouteA)], 0);
}

TEST_F(SampleLabelsTest, KeepFlagsHoldLabelsUntilStop) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  v8::Local<v8::Object> key = v8::Object::New(isolate_);
  Recorder recorder(isolate_, key);
  Frame(context, {{key, Holder(context, &kRouteA)}});
  auto keep = static_cast<v8::HeapProfiler::SamplingFlags>(
      v8::HeapProfiler::kSamplingIncludeObjectsCollectedByMajorGC |
      v8::HeapProfiler::kSamplingIncludeObjectsCollectedByMinorGC);
  ASSERT_TRUE(Start(isolate_, &recorder, keep));
  Run(context, kRetain);
  int before = recorder.live[Word(&kRouteA)];
  isolate_->SetContinuationPreservedEmbedderData(v8::Undefined(isolate_));
  ASSERT_TRUE(DropKeptAndCollect(context)) << "kRetain's objects died";
  EXPECT_EQ(recorder.released, 0);
  EXPECT_GE(Count(SampleWords(isolate_), Word(&kRouteA)), before);
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
  EXPECT_EQ(recorder.live[Word(&kRouteA)], 0);
  EXPECT_EQ(recorder.released, recorder.labeled);
}

TEST_F(SampleLabelsTest, SecondStartFailsAndPlainStartCapturesNothing) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  Recorder recorder(isolate_, v8::Object::New(isolate_));
  ASSERT_TRUE(isolate_->GetHeapProfiler()->StartSamplingHeapProfiler(256, 16));
  EXPECT_FALSE(Start(isolate_, &recorder));
  Run(context, kRetain);
  EXPECT_EQ(recorder.captured, 0);
  for (uintptr_t w : SampleWords(isolate_)) EXPECT_EQ(w, 0u);
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
  // The callbacks of the failed start must not leak into the next session.
  ASSERT_TRUE(isolate_->GetHeapProfiler()->StartSamplingHeapProfiler(256, 16));
  Run(context, kRetain);
  EXPECT_EQ(recorder.captured, 0);
  isolate_->GetHeapProfiler()->StopSamplingHeapProfiler();
}

TEST_F(SampleLabelsTest, LookupReturnsNullForEveryUnusableFrame) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  v8::Local<v8::Object> key = v8::Object::New(isolate_);
  auto find = [&](int index = 0) {
    return v8::HeapProfilerSampleLabels::FindInContinuationPreservedEmbedderData(
        isolate_, key, index);
  };
  // Not a Map.
  isolate_->SetContinuationPreservedEmbedderData(v8::Undefined(isolate_));
  EXPECT_EQ(find(), nullptr);
  isolate_->SetContinuationPreservedEmbedderData(v8::Object::New(isolate_));
  EXPECT_EQ(find(), nullptr);
  // Missing key, and a key that never had an identity hash.
  Frame(context, {{v8::Object::New(isolate_), Holder(context, &kRouteA)}});
  EXPECT_EQ(find(), nullptr);
  // Wrong holder shapes: plain object, primitive, index out of range.
  Frame(context, {{key, v8::Object::New(isolate_)}});
  EXPECT_EQ(find(), nullptr);
  Frame(context, {{key, v8::Number::New(isolate_, 42)}});
  EXPECT_EQ(find(), nullptr);
  Frame(context, {{key, Holder(context, &kRouteA)}});
  EXPECT_EQ(find(2), nullptr);
  EXPECT_EQ(find(-1), nullptr);
  // Field 1 holds no aligned pointer (it is undefined).
  EXPECT_EQ(find(1), nullptr);
  // Empty key.
  EXPECT_EQ(v8::HeapProfilerSampleLabels::FindInContinuationPreservedEmbedderData(
                isolate_, v8::Local<v8::Value>(), 0),
            nullptr);
  EXPECT_EQ(v8_sample_labels_find_in_cped(isolate_, nullptr, 0), nullptr);
  // The good case, through both entry points.
  EXPECT_EQ(find(), &kRouteA);
  EXPECT_EQ(v8_sample_labels_find_in_cped(isolate_, *key, 0), &kRouteA);
}

// Embedder code that runs around a GC: a prologue callback and a first-pass
// weak callback. V8 12.4 runs both with a consistent heap and gc_state()
// already (or still) NOT_IN_GC, so the lookup reads the frame normally there;
// its "empty while gc_state() is not NOT_IN_GC" guard protects internal callers
// and cannot be reached through the public API. What this test pins down is
// that the lookup is safe from both places and creates no handles (the key is
// passed as the raw slot of a handle that outlives the GC).
void* lookup_in_prologue = nullptr;
void* lookup_in_weak_callback = nullptr;
v8::Value* gc_key_slot = nullptr;

void LookupInPrologue(v8::Isolate* isolate, v8::GCType, v8::GCCallbackFlags) {
  lookup_in_prologue = v8_sample_labels_find_in_cped(isolate, gc_key_slot, 0);
}

void LookupInWeakCallback(
    const v8::WeakCallbackInfo<v8::Global<v8::Object>>& info) {
  lookup_in_weak_callback =
      v8_sample_labels_find_in_cped(info.GetIsolate(), gc_key_slot, 0);
  info.GetParameter()->Reset();
}

TEST_F(SampleLabelsTest, LookupIsSafeFromGCCallbacks) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  v8::Local<v8::Object> key = v8::Object::New(isolate_);
  gc_key_slot = *key;
  Frame(context, {{key, Holder(context, &kRouteA)}});
  v8::Global<v8::Object> dying;
  {
    v8::HandleScope inner(isolate_);
    dying.Reset(isolate_, v8::Object::New(isolate_));
  }
  dying.SetWeak(&dying, LookupInWeakCallback,
                v8::WeakCallbackType::kParameter);
  isolate_->AddGCPrologueCallback(LookupInPrologue);
  FullGC(isolate_);
  isolate_->RemoveGCPrologueCallback(LookupInPrologue);
  ASSERT_TRUE(dying.IsEmpty()) << "the weak callback ran";
  EXPECT_EQ(lookup_in_prologue, &kRouteA);
  EXPECT_EQ(lookup_in_weak_callback, &kRouteA);
  gc_key_slot = nullptr;
}

TEST_F(SampleLabelsTest, TwoIsolatesAreIndependent) {
  std::unique_ptr<v8::ArrayBuffer::Allocator> other_allocator;
  v8::Isolate* other = NewIsolate(&other_allocator);
  std::unique_ptr<Recorder> first = StartAndRetain(isolate_, &kRouteA);
  std::unique_ptr<Recorder> second = StartAndRetain(other, &kRouteB);
  for (auto [isolate, mine, theirs] :
       {std::tuple{isolate_, &kRouteA, &kRouteB},
        std::tuple{other, &kRouteB, &kRouteA}}) {
    v8::Isolate::Scope isolate_scope(isolate);
    v8::HandleScope scope(isolate);
    std::vector<uintptr_t> words = SampleWords(isolate);
    EXPECT_EQ(Count(words, Word(theirs)), 0);
    EXPECT_GT(Count(words, Word(mine)), 10);
    isolate->GetHeapProfiler()->StopSamplingHeapProfiler();
  }
  EXPECT_EQ(first->live[Word(&kRouteB)], 0);
  EXPECT_EQ(second->live[Word(&kRouteA)], 0);
  first.reset();
  second.reset();  // Its Global must go before its isolate.
  other->Dispose();
}

// Counts bytes through the swapped allocator; frees may come from any thread.
class CountingAllocator : public v8::ArrayBuffer::Allocator {
 public:
  explicit CountingAllocator(v8::ArrayBuffer::Allocator* inner)
      : inner_(inner) {}
  void* Allocate(size_t length) override {
    bytes_ += length;
    return inner_->Allocate(length);
  }
  void* AllocateUninitialized(size_t length) override {
    bytes_ += length;
    return inner_->AllocateUninitialized(length);
  }
  void Free(void* data, size_t length) override {
    bytes_ -= length;
    if (std::this_thread::get_id() != owner_) foreign_frees_++;
    inner_->Free(data, length);
  }
  std::atomic<int64_t> bytes_{0};
  std::atomic<int> foreign_frees_{0};

 private:
  v8::ArrayBuffer::Allocator* const inner_;
  const std::thread::id owner_ = std::this_thread::get_id();
};

TEST_F(SampleLabelsTest, SwappedAllocatorSeesAllocationsAndForeignFrees) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  // Made before the swap: freed through the original allocator.
  std::shared_ptr<v8::BackingStore> early =
      v8::ArrayBuffer::NewBackingStore(isolate_, 1000);

  auto* counting = new CountingAllocator(allocator_.get());
  EXPECT_EQ(v8::HeapProfilerSampleLabels::SwapArrayBufferAllocator(isolate_,
                                                                   counting),
            allocator_.get());
  EXPECT_EQ(isolate_->GetArrayBufferAllocator(), counting);
  Run(context, "globalThis.buf = new ArrayBuffer(1 << 20); 0;");
  EXPECT_EQ(counting->bytes_.load(), 1 << 20);

  std::unique_ptr<v8::BackingStore> store =
      v8::ArrayBuffer::NewBackingStore(isolate_, 4096);
  EXPECT_EQ(counting->bytes_.load(), (1 << 20) + 4096);
  std::thread([s = std::move(store)]() mutable { s.reset(); }).join();
  EXPECT_EQ(counting->foreign_frees_.load(), 1);
  EXPECT_EQ(counting->bytes_.load(), 1 << 20);

  early.reset();
  EXPECT_EQ(counting->bytes_.load(), 1 << 20) << "pre-swap store not counted";

  // Swap back: new stores bypass the counter, old ones still free through it.
  EXPECT_EQ(v8_sample_labels_swap_allocator(isolate_, allocator_.get()),
            counting);
  Run(context, "globalThis.other = new ArrayBuffer(4096); 0;");
  EXPECT_EQ(counting->bytes_.load(), 1 << 20);
  Run(context, "globalThis.buf = undefined; globalThis.other = undefined;");
  FullGC(isolate_);
  FullGC(isolate_);
  // The ArrayBufferSweeper may free on a background thread; wait for it.
  for (int i = 0; i < 200 && counting->bytes_.load() != 0; i++) {
    FullGC(isolate_);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(counting->bytes_.load(), 0);
  // |counting| is intentionally leaked: stores may outlive this test.
}

#if V8_MAJOR_VERSION == 12
// ArrayBuffer.prototype.transfer() reallocates with the allocator that made
// the store, whichever allocator is current: it used to CHECK-fail for stores
// made before a swap (and after a swap back).
TEST_F(SampleLabelsTest, TransferResizesWithTheAllocatorThatMadeTheStore) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  Run(context,
      "globalThis.early = new ArrayBuffer(1000);"
      "new Uint8Array(early)[999] = 7; 0;");
  auto* counting = new CountingAllocator(allocator_.get());
  v8::HeapProfilerSampleLabels::SwapArrayBufferAllocator(isolate_, counting);

  // Made before the swap: grown and shrunk by the original allocator.
  EXPECT_EQ(Run(context,
                "globalThis.early = early.transfer(5000);"
                "new Uint8Array(early)[999] + early.byteLength;")
                ->Int32Value(context)
                .FromJust(),
            5007);
  Run(context, "globalThis.early = early.transferToFixedLength(10); 0;");
  EXPECT_EQ(counting->bytes_.load(), 0);

  // Made under the swapped allocator, resized after swapping back: the
  // counting allocator resizes it (allocate, copy, free), so it stays exact.
  Run(context,
      "globalThis.mine = new ArrayBuffer(100);"
      "new Uint8Array(mine)[99] = 9; 0;");
  EXPECT_EQ(counting->bytes_.load(), 100);
  v8::HeapProfilerSampleLabels::SwapArrayBufferAllocator(isolate_,
                                                         allocator_.get());
  EXPECT_EQ(Run(context,
                "globalThis.mine = mine.transfer(300);"
                "new Uint8Array(mine)[99] + mine.byteLength;")
                ->Int32Value(context)
                .FromJust(),
            309);
  EXPECT_EQ(counting->bytes_.load(), 300);
  Run(context, "globalThis.mine = mine.transfer(300); 0;");  // same length
  EXPECT_EQ(counting->bytes_.load(), 300);

  Run(context, "globalThis.early = undefined; globalThis.mine = undefined;");
  for (int i = 0; i < 200 && counting->bytes_.load() != 0; i++) {
    FullGC(isolate_);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(counting->bytes_.load(), 0);
  // |counting| is intentionally leaked: stores may outlive this test.
}

#else
// ArrayBuffer.prototype.transfer() to a new length copies into a new store
// made by the isolate's current allocator (this V8 has no
// BackingStore::Reallocate); the old store is freed by the allocator that
// made it, before or after a swap, and nothing aborts.
TEST_F(SampleLabelsTest, TransferFreesWithTheAllocatorThatMadeTheStore) {
  Entered entered(isolate_);
  v8::Local<v8::Context> context = entered.context;
  Run(context,
      "globalThis.early = new ArrayBuffer(1000);"
      "new Uint8Array(early)[999] = 7; 0;");
  auto* counting = new CountingAllocator(allocator_.get());
  v8::HeapProfilerSampleLabels::SwapArrayBufferAllocator(isolate_, counting);
  // Frees of detached stores may wait for the ArrayBufferSweeper (possibly on
  // a background thread): collects garbage until |counting| holds |expected|.
  auto settled = [&](int64_t expected) {
    for (int i = 0; i < 200 && counting->bytes_.load() != expected; i++) {
      FullGC(isolate_);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return counting->bytes_.load();
  };

  // Made before the swap: its copy is made by the counting allocator, the
  // original is freed by the allocator that made it.
  EXPECT_EQ(Run(context,
                "globalThis.early = early.transfer(5000);"
                "new Uint8Array(early)[999] + early.byteLength;")
                ->Int32Value(context)
                .FromJust(),
            5007);
  EXPECT_EQ(counting->bytes_.load(), 5000);
  Run(context, "globalThis.early = early.transferToFixedLength(10); 0;");
  EXPECT_EQ(settled(10), 10);

  // Made under the swapped allocator, transferred after swapping back: the
  // counting allocator frees what it made and sees nothing of the copy.
  Run(context,
      "globalThis.mine = new ArrayBuffer(100);"
      "new Uint8Array(mine)[99] = 9; 0;");
  EXPECT_EQ(counting->bytes_.load(), 110);
  v8::HeapProfilerSampleLabels::SwapArrayBufferAllocator(isolate_,
                                                         allocator_.get());
  EXPECT_EQ(Run(context,
                "globalThis.mine = mine.transfer(300);"
                "new Uint8Array(mine)[99] + mine.byteLength;")
                ->Int32Value(context)
                .FromJust(),
            309);
  EXPECT_EQ(settled(10), 10);

  Run(context, "globalThis.early = undefined; globalThis.mine = undefined;");
  EXPECT_EQ(settled(0), 0);
  // |counting| is intentionally leaked: stores may outlive this test.
}

#endif  // V8_MAJOR_VERSION == 12

}  // namespace
