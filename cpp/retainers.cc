#include "heap_labels/retainers.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <v8-profiler.h>

#include "heap-labels/src/bridge.rs.h"
#include "heap_labels/patched_api.h"
#include "heap_labels/sampling.h"

namespace heap_labels {

namespace {

// Raw steps copied per chain: the core shows 12 steps from the object, with
// runs of V8-internal nodes as one step, so this leaves room for such runs.
constexpr std::size_t kMaxChainSteps = 64;
// Longest node or edge name copied, in bytes of UTF-8.
constexpr int kMaxNameBytes = 256;
constexpr uint32_t kNoIndex = UINT32_MAX;

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

rust::String CopyName(v8::Isolate* isolate, v8::Local<v8::Value> name) {
  if (name.IsEmpty()) return rust::String();
  if (name->IsNumber()) {
    return rust::String(
        std::to_string(static_cast<int64_t>(name.As<v8::Number>()->Value())));
  }
  if (!name->IsString()) return rust::String();
  v8::String::Utf8Value utf8(isolate, name);
  if (*utf8 == nullptr) return rust::String();
  // lossy: a cut in the middle of a character becomes U+FFFD. length() is an
  // int before V8 13 and a size_t since.
  const size_t length = static_cast<size_t>(utf8.length());
  return rust::String::lossy(
      *utf8, std::min(length, static_cast<size_t>(kMaxNameBytes)));
}

// A string node's name is the string's contents: user data, never copied
// (the core shows strings by their type).
bool NameIsContents(v8::HeapGraphNode::Type type) {
  return type == v8::HeapGraphNode::kString ||
         type == v8::HeapGraphNode::kConsString ||
         type == v8::HeapGraphNode::kSlicedString;
}

// The first strong retainer of every node of a snapshot: a breadth-first walk
// from the root, so each node's chain is a shortest one. Weak edges and
// shortcuts are not followed (as DevTools' distances), except the root's
// shortcuts to the global objects, V8's "user roots". Two u32 per node, and
// the id-to-index table (two u32 per node) to find an edge's target.
class RetainerTree {
 public:
  explicit RetainerTree(const v8::HeapSnapshot& snapshot);

  // The index of the node with snapshot id `id`; kNoIndex when none.
  uint32_t IndexOf(v8::SnapshotObjectId id) const;
  const v8::HeapGraphNode* Node(uint32_t index) const {
    return snapshot_.GetNode(static_cast<int>(index));
  }
  // The first retainer's index, kRetainerRoot or kRetainerUnreached.
  uint32_t Parent(uint32_t index) const { return parent_[index]; }
  // The edge from Parent(index) to the node, or null for the root and
  // unreached nodes.
  const v8::HeapGraphEdge* ParentEdge(uint32_t index) const;
  std::size_t NativeBytes() const { return native_bytes_; }

 private:
  void IndexIds();
  void Walk();
  static bool Followed(v8::HeapGraphEdge::Type type, bool from_root);

  const v8::HeapSnapshot& snapshot_;
  // (id, index), sorted by id.
  std::vector<std::pair<v8::SnapshotObjectId, uint32_t>> by_id_;
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> parent_edge_;
  std::size_t native_bytes_ = 0;
};

RetainerTree::RetainerTree(const v8::HeapSnapshot& snapshot)
    : snapshot_(snapshot) {
  IndexIds();
  Walk();
}

void RetainerTree::IndexIds() {
  const uint32_t count = static_cast<uint32_t>(snapshot_.GetNodesCount());
  by_id_.reserve(count);
  for (uint32_t i = 0; i < count; i++) by_id_.emplace_back(Node(i)->GetId(), i);
  std::sort(by_id_.begin(), by_id_.end());
}

uint32_t RetainerTree::IndexOf(v8::SnapshotObjectId id) const {
  auto it = std::lower_bound(by_id_.begin(), by_id_.end(),
                             std::make_pair(id, uint32_t{0}));
  return it != by_id_.end() && it->first == id ? it->second : kNoIndex;
}

bool RetainerTree::Followed(v8::HeapGraphEdge::Type type, bool from_root) {
  if (type == v8::HeapGraphEdge::kWeak) return false;
  return type != v8::HeapGraphEdge::kShortcut || from_root;
}

void RetainerTree::Walk() {
  const uint32_t count = static_cast<uint32_t>(by_id_.size());
  parent_.assign(count, kRetainerUnreached);
  parent_edge_.assign(count, 0);
  const uint32_t root = IndexOf(snapshot_.GetRoot()->GetId());
  if (root == kNoIndex) return;
  parent_[root] = kRetainerRoot;
  std::vector<uint32_t> queue;
  queue.reserve(count);
  queue.push_back(root);
  for (std::size_t head = 0; head < queue.size(); head++) {
    const uint32_t index = queue[head];
    const v8::HeapGraphNode* node = Node(index);
    const int edges = node->GetChildrenCount();
    for (int i = 0; i < edges; i++) {
      const v8::HeapGraphEdge* edge = node->GetChild(i);
      if (!Followed(edge->GetType(), index == root)) continue;
      const uint32_t child = IndexOf(edge->GetToNode()->GetId());
      if (child == kNoIndex || parent_[child] != kRetainerUnreached) continue;
      parent_[child] = index;
      parent_edge_[child] = static_cast<uint32_t>(i);
      queue.push_back(child);
    }
  }
  native_bytes_ =
      by_id_.capacity() * sizeof(by_id_[0]) +
      (parent_.capacity() + parent_edge_.capacity() + queue.capacity()) *
          sizeof(uint32_t);
}

const v8::HeapGraphEdge* RetainerTree::ParentEdge(uint32_t index) const {
  const uint32_t parent = parent_[index];
  if (parent == kRetainerRoot || parent == kRetainerUnreached) return nullptr;
  return Node(parent)->GetChild(static_cast<int>(parent_edge_[index]));
}

// Copies the chains of sampled objects into RawRetainers::nodes, each
// snapshot node once: chains that meet share the rest of their way.
class ChainCopier {
 public:
  ChainCopier(v8::Isolate* isolate, const RetainerTree& tree,
              rust::Vec<RawRetainerNode>* out)
      : isolate_(isolate), tree_(tree), out_(out) {}

  // The out index of the node at snapshot index `index`, its chain copied.
  uint32_t Copy(uint32_t index);

 private:
  uint32_t CopyNode(uint32_t index, uint32_t parent);

  v8::Isolate* const isolate_;
  const RetainerTree& tree_;
  rust::Vec<RawRetainerNode>* const out_;
  // Snapshot index -> out index.
  std::unordered_map<uint32_t, uint32_t> copied_;
};

uint32_t ChainCopier::Copy(uint32_t index) {
  // Up to the root, an unreached node, a copied node or the step limit; then
  // copied from the top down, so each node's parent is in `out_` first.
  std::vector<uint32_t> chain;
  uint32_t above = kRetainerTruncated;
  for (uint32_t at = index;;) {
    auto it = copied_.find(at);
    if (it != copied_.end()) {
      above = it->second;
      break;
    }
    chain.push_back(at);
    const uint32_t parent = tree_.Parent(at);
    if (parent == kRetainerRoot || parent == kRetainerUnreached) {
      above = parent;
      break;
    }
    if (chain.size() == kMaxChainSteps) break;
    at = parent;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    above = CopyNode(*it, above);
  }
  return above;
}

uint32_t ChainCopier::CopyNode(uint32_t index, uint32_t parent) {
  v8::HandleScope scope(isolate_);
  const v8::HeapGraphNode* node = tree_.Node(index);
  RawRetainerNode raw;
  raw.parent = parent;
  raw.id = node->GetId();
  raw.node_type = static_cast<uint8_t>(node->GetType());
  raw.self_size = node->GetShallowSize();
  if (!NameIsContents(node->GetType())) {
    raw.name = CopyName(isolate_, node->GetName());
  }
  raw.edge_type = 0;
  if (const v8::HeapGraphEdge* edge = tree_.ParentEdge(index)) {
    raw.edge_type = static_cast<uint8_t>(edge->GetType());
    raw.edge_name = CopyName(isolate_, edge->GetName());
  }
  out_->push_back(std::move(raw));
  const uint32_t copied = static_cast<uint32_t>(out_->size() - 1);
  copied_.emplace(index, copied);
  return copied;
}

// Each sample's object node (kNoRetainerNode when it has no id or the
// snapshot has no node for it), with its chain copied.
void CopyChains(v8::Isolate* isolate, const RetainerTree& tree,
                const v8::SnapshotObjectId* ids, std::size_t count,
                RawRetainers* out) {
  ChainCopier copier(isolate, tree, &out->nodes);
  out->sample_nodes.reserve(count);
  for (std::size_t i = 0; i < count; i++) {
    const uint32_t index = ids[i] == v8::HeapProfiler::kUnknownObjectId
                               ? kNoIndex
                               : tree.IndexOf(ids[i]);
    out->sample_nodes.push_back(index == kNoIndex ? kNoRetainerNode
                                                  : copier.Copy(index));
  }
}

}  // namespace

namespace {

// Everything that needs the snapshot, which is deleted when this returns.
bool JoinSnapshot(v8::Isolate* isolate, uintptr_t unlabeled_word,
                  RawRetainers* out) {
  const PatchedApi& api = GetPatchedApi();
  v8::HandleScope scope(isolate);
  Clock::time_point start = Clock::now();
  // First the snapshot: it gives objects their ids and makes V8 follow them
  // as they move, so the profile after it can name its samples' objects.
  SnapshotPtr snapshot(isolate->GetHeapProfiler()->TakeHeapSnapshot());
  if (!snapshot) throw std::runtime_error("V8 took no heap snapshot");
  std::unique_ptr<v8::AllocationProfile> profile(
      api.profile_with_object_ids(isolate));
  if (!profile) return false;
  out->snapshot_ms = MillisecondsSince(start);
  out->snapshot_nodes = static_cast<uint64_t>(snapshot->GetNodesCount());

  start = Clock::now();
  std::size_t count = 0;
  const v8::SnapshotObjectId* ids = api.object_ids_of(profile.get(), &count);
  if (count != profile->GetSamples().size()) {
    throw std::runtime_error(
        "the runtime's profile has no object id for every sample");
  }
  // Takes the samples' label references: nothing throws after this.
  CopyAllocationProfile(isolate, *profile, unlabeled_word, &out->profile);
  {
    RetainerTree tree(*snapshot);
    CopyChains(isolate, tree, ids, count, out);
    out->walk_bytes = tree.NativeBytes();
  }
  out->walk_ms = MillisecondsSince(start);
  return true;
}

// The snapshot took several times the used heap from malloc, now free:
// glibc keeps freed pages in its arenas (the process's RSS would stay at the
// snapshot's peak) unless asked to give them back.
void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace

bool ReadRetainers(v8::Isolate* isolate, uintptr_t unlabeled_word,
                   RawRetainers* out) {
  const PatchedApi& api = GetPatchedApi();
  if (!api.retainers_ready) throw std::runtime_error(api.retainers_reason);
  const bool read = JoinSnapshot(isolate, unlabeled_word, out);
  ReleaseFreedMemory();
  return read;
}

}  // namespace heap_labels
