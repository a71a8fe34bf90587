//! The one cxx bridge between Rust and `cpp/` (everything that touches the V8 C++ API).
//!
//! Sections in cxx order: shared structs, `extern "Rust"`, `unsafe extern "C++"`. No `v8::Local`
//! crosses: JS values travel as raw `napi_value`s (`usize`), which C++ converts in exactly one place
//! (`cpp/include/heap_labels/js_value.h`), and profiles are copied into plain structs first.

#[cxx::bridge(namespace = "heap_labels")]
pub mod ffi {
    /// Which allocated figures a read takes (`core::AllocationsRead`; cpp/ passes it through to
    /// `take_dead_samples`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[repr(u8)]
    enum AllocationsRead {
        /// The allocation window so far.
        Window,
        /// The window, which then restarts after this read.
        RestartWindow,
        /// Everything since the session started (never restarted by a read).
        SinceStart,
        /// `SinceStart`, and the window restarts after this read (an owner that never reads the
        /// window lets its groups, and the label sets they hold, go).
        SinceStartRestartWindow,
    }

    /// Options for `HeapProfiler::StartSamplingHeapProfiler`.
    #[derive(Debug, Clone, Copy)]
    struct StartOptions {
        /// Average bytes between samples (Poisson sampling).
        sample_interval: u64,
        /// Maximum JS stack depth recorded per sample.
        stack_depth: i32,
        /// `kSamplingIncludeObjectsCollectedByMajorGC`.
        include_objects_collected_by_major_gc: bool,
        /// `kSamplingIncludeObjectsCollectedByMinorGC`.
        include_objects_collected_by_minor_gc: bool,
        /// Allocation figures (allocated bytes and objects per site and label set): the patched
        /// runtime's dead-sample reports, or V8's `Sample::is_live` with both include-collected
        /// flags where V8 has it. Off: V8 forgets dead samples, as without heap-labels.
        track_allocations: bool,
        /// `kSamplingForceGC`: V8 collects garbage before building each read's profile.
        force_gc: bool,
    }

    /// What a label holder owns: `word`, one strong reference of its set (0 = no labels), and
    /// `pending`, 0 or a `PendingLabels` box while `word` is the overflow set (the pairs it will
    /// be rebound to once the registry has room).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct HolderBinding {
        word: usize,
        pending: usize,
    }

    /// A label holder just made: the holder (a napi_value) and its serial number.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct NewHolder {
        holder: usize,
        serial: u64,
    }

    /// One node of `v8::AllocationProfile`, flattened in pre-order.
    #[derive(Debug, Clone)]
    struct RawNode {
        /// Index of the parent in `RawProfile::nodes`; `u32::MAX` for the root.
        parent: u32,
        /// V8's node id (what samples refer to).
        node_id: u32,
        function_name: String,
        script_name: String,
        script_id: i32,
        /// 1-based as V8 reports it; 0 when unknown.
        line_number: i32,
        /// 1-based as V8 reports it; 0 when unknown.
        column_number: i32,
    }

    /// One entry of `AllocationProfile::GetSamples()`.
    #[derive(Debug, Clone, Copy, Default)]
    struct RawSample {
        node_id: u32,
        size: u64,
        /// V8's count, already scaled by 1 / (1 - exp(-size / interval)) and rounded.
        count: u32,
        sample_id: u64,
        /// Label word V8 stored with the sample; 0 when unlabeled or on a stock runtime. Like
        /// every word of a `RawProfile`, it owns one strong reference: whoever fills a
        /// `RawProfile` takes it (cpp/sampling.cc `CopySamples`, while V8's sample still holds its
        /// own), and the model adopts it (`model::labels_of_word`), on whichever thread it is built.
        label_word: usize,
        /// False for a sample of a collected object that the include-collected flags kept, on
        /// runtimes whose V8 says so (`Sample::is_live`, Node.js 26); true otherwise.
        live: bool,
    }

    /// One (node, label set) group of dead samples (`core::AllocatedGroup`), handed out by
    /// `take_dead_samples`.
    #[derive(Debug, Clone)]
    struct RawAllocatedGroup {
        /// V8's node id, or `core::OTHER_SITES_NODE`.
        node_id: u32,
        /// Label word owning one strong reference (taken over by the model); 0 when unlabeled.
        label_word: usize,
        objects: f64,
        bytes: f64,
    }

    /// The dead samples of the allocation window: reported by V8's death callback (patched
    /// runtime, API version 2), or kept by the include-collected flags and marked not live
    /// (`RawSample::live`, Node.js 26).
    #[derive(Debug, Clone, Default)]
    struct RawAllocations {
        /// Whether the read has allocation figures; false when neither source exists.
        reported: bool,
        groups: Vec<RawAllocatedGroup>,
        /// Live samples with greater ids were allocated in the window.
        window_start: u64,
    }

    #[derive(Debug, Clone, Default)]
    struct RawProfile {
        nodes: Vec<RawNode>,
        samples: Vec<RawSample>,
        allocations: RawAllocations,
    }

    /// One node of a heap snapshot on the retaining chain of a sampled object (`cpp/retainers.cc`),
    /// with the edge from its first retainer (`core::retainers::ChainNode`).
    #[derive(Debug, Clone)]
    struct RawRetainerNode {
        /// Index of its first retainer in `RawRetainers::nodes`, or a mark (`core::retainers`:
        /// the snapshot's root, not strongly reachable, chain not copied further).
        parent: u32,
        /// `v8::HeapGraphEdge::Type` of the edge from the retainer (0 for the marks).
        edge_type: u8,
        /// The edge's name: a property or variable name, or an index in decimal.
        edge_name: String,
        /// `v8::HeapGraphNode::Type`.
        node_type: u8,
        /// The node's name (a constructor, a function, `system / Context`, ...); empty for strings,
        /// whose name is their contents.
        name: String,
        self_size: u64,
        /// The heap snapshot object id.
        id: u32,
    }

    /// A heap snapshot joined to the running session's samples (sample-labels API version 3).
    #[derive(Debug, Clone, Default)]
    struct RawRetainers {
        /// The session's profile (no dead samples), index-aligned with `sample_nodes`.
        profile: RawProfile,
        /// The snapshot nodes on the samples' chains, each once.
        nodes: Vec<RawRetainerNode>,
        /// Per sample: index in `nodes` of its object, `u32::MAX` when it has none (a dead object,
        /// or one the snapshot did not see).
        sample_nodes: Vec<u32>,
        /// Nodes of the snapshot.
        snapshot_nodes: u64,
        /// Milliseconds for the snapshot and the profile.
        snapshot_ms: f64,
        /// Milliseconds for the walk and the copy of the chains.
        walk_ms: f64,
        /// Native bytes of the walk's tables (freed before the call returns).
        walk_bytes: u64,
    }

    /// A heap snapshot written to a file (`cpp/labeled_snapshot.cc`), with labels joined to the
    /// running session's samples (sample-labels API version 3).
    #[derive(Debug, Clone, Default)]
    struct RawSnapshotFile {
        /// With labels: the session's profile (no dead samples), index-aligned with
        /// `sample_nodes`; empty without.
        profile: RawProfile,
        /// Per sample: its object's node ordinal in the file, `u32::MAX` when it has none.
        sample_nodes: Vec<u32>,
        /// Nodes of the snapshot.
        snapshot_nodes: u64,
        /// Milliseconds for the snapshot (and the profile).
        snapshot_ms: f64,
        /// Milliseconds for V8's serialization to the file.
        serialize_ms: f64,
    }

    /// Result of probing the patched-V8 sample-labels API (`cpp/patched_api.cc`).
    #[derive(Debug, Clone)]
    struct PatchedApiStatus {
        /// The sample-labels capture path is usable in this process.
        sample_labels: bool,
        /// The counting ArrayBuffer allocator can be installed in this process.
        external_bytes: bool,
        /// Labeled sessions can report dead samples (API version 2): allocation figures.
        allocations: bool,
        /// Why `sample_labels` is false (empty when true).
        sample_labels_reason: String,
        /// Why `allocations` is false (empty when true).
        allocations_reason: String,
        /// Why `external_bytes` is false (empty when true).
        external_bytes_reason: String,
        /// The samples' heap snapshot object ids (API version 3): retainers per label.
        retainers: bool,
        /// Why `retainers` is false (empty when true).
        retainers_reason: String,
    }

    extern "Rust" {
        /// Drops the strong `LabelSet` reference that a label word owns. Called from V8 weak
        /// callbacks during GC, from V8 dropping a sample, at isolate teardown and from ArrayBuffer
        /// frees on any thread: an atomic decrement (and at most a free), nothing else.
        fn release_label_word(word: usize);

        /// Frees the `PendingLabels` box at address `pending` (made by `labels::bind_new_holder`).
        /// Called when a holder is rebound, from V8 weak callbacks during GC and at isolate
        /// teardown: a plain free, nothing else.
        fn drop_pending_labels(pending: usize);

        /// Takes one more strong reference for `word`. Called inside V8's allocation path (the
        /// sample-labels capture callback) and by the counting allocator: one atomic increment.
        fn retain_label_word(word: usize);

        /// Appends `count` default samples to `out` and hands them to cpp/sampling.cc
        /// `CopySamples` to fill in place: a read's samples are written once, into the vector
        /// the model reads (staged in a C++ vector first, they cost two fresh buffers of ~4 MB
        /// at 100k samples, whose page faults were a third of a dump's hold of the main thread).
        /// The label words it writes are V8's, borrowed, until `adopt_sample_words`.
        fn sample_slots(out: &mut Vec<RawSample>, count: usize) -> &mut [RawSample];

        /// Turns each `label_word` of `samples` (V8's, borrowed; filled by `CopySamples` with no V8
        /// call in between) into a reference of its own to the set that word stands for now (a
        /// request cell resolves to its current set). One call per read: the references are
        /// taken in a loop the compiler sees whole.
        fn adopt_sample_words(samples: &mut [RawSample]);

        /// Charges `bytes` of the new backing-store block at address `block` to `word`'s set (0:
        /// unlabeled) in the `ExternalCounters` at address `counters`, and records the word
        /// beside the block (a reference of its own; `word` is only borrowed). Usually the isolate
        /// thread; another thread (a worker resizing a buffer this isolate made) passes word 0.
        /// No lock, no JS heap.
        fn external_alloc(counters: usize, block: usize, word: usize, bytes: usize);

        /// Gives back what `external_alloc` charged for `block`. Any thread, including V8's
        /// ArrayBuffer sweeper threads: atomics only. Call before the block's memory is freed
        /// (its address may be handed out again right after).
        fn external_free(counters: usize, block: usize, bytes: usize);

        /// `retain_label_word` for a sampled allocation (capture callback, inside V8's allocation
        /// path): also counts one live sample for the set. Atomics only.
        fn capture_sample_word(word: usize);

        /// `release_label_word` for a sample V8 drops (GC weak callback or session end): also
        /// uncounts the live sample. Atomics only.
        fn release_sample_word(word: usize);

        /// Adds a sample V8 reports dead (death callback, GC weak processing) to the
        /// `Mutex<DeadSampleTotals>` at address `totals`; `word` (0 or a sample's reference) is
        /// consumed. Native memory only, never V8.
        fn record_dead_sample(totals: usize, word: usize, node_id: u32, size: u64, sample_id: u64);

        /// The dead samples of the view `read` asks for, read right after
        /// `GetAllocationProfile()` with no V8 call in between (so no GC); `RestartWindow` starts
        /// a new window after `highest_live_sample_id`, the highest id among that profile's
        /// samples.
        fn take_dead_samples(
            totals: usize,
            read: AllocationsRead,
            highest_live_sample_id: u64,
        ) -> RawAllocations;

        /// Writes the near-heap-limit dump of `profile` through the `NearHeapLimitHook` at address
        /// `dumper` (armed by `src/near_heap_limit.rs`). Called from V8's near-heap-limit callback
        /// on the isolate thread: native memory and file I/O only, never the JS heap.
        fn write_near_heap_limit_dump(dumper: usize, profile: RawProfile, external_memory: u64);
    }

    unsafe extern "C++" {
        include!("heap_labels/isolate_state.h");
        include!("heap_labels/patched_api.h");

        /// Per-isolate V8-side state: holder template, registered labels key, profiler ownership.
        type IsolateState;

        /// Creates the state for the isolate of the calling thread (`v8::Isolate::GetCurrent()`);
        /// `external_counters` is the address of the isolate's never-freed `ExternalCounters`.
        fn new_isolate_state(external_counters: usize) -> UniquePtr<IsolateState>;

        /// Starts the isolate's sampling heap profiler; false when one is already running.
        fn start_sampling(self: Pin<&mut IsolateState>, options: &StartOptions) -> bool;
        /// Stops the profiler if this state started it; a no-op otherwise.
        fn stop_sampling(self: Pin<&mut IsolateState>);
        /// Whether this state's session samples (false once a read found V8's sampler stopped
        /// outside heap-labels).
        fn sampling(self: &IsolateState) -> bool;
        /// Copies the current allocation profile with the dead samples of the view `read` asks
        /// for; fails when no profiler runs.
        fn read_profile(self: Pin<&mut IsolateState>, read: AllocationsRead) -> Result<RawProfile>;

        /// Sets the address of the isolate's `Mutex<DeadSampleTotals>` (valid for the state's
        /// lifetime): labeled sessions hand dead samples to it when the runtime can report them.
        fn set_dead_sample_totals(self: Pin<&mut IsolateState>, totals: usize);

        /// Makes a label holder: an object whose field 0 is the aligned pointer `binding.word`
        /// (released by a weak callback when the holder dies). The holder owns `binding` from now
        /// on, also on failure. `labels` (a napi_value, not 0) becomes its read-only `labels`
        /// property and the holder is frozen. Returns the
        /// holder as a napi_value and its serial number.
        ///
        /// # Safety
        /// Must run inside a napi callback on the isolate's thread; `binding` came from
        /// `labels::bind_new_holder`; `labels` is a napi_value of that callback.
        unsafe fn create_label_holder(
            self: Pin<&mut IsolateState>,
            binding: HolderBinding,
            labels: usize,
        ) -> Result<NewHolder>;

        /// Makes a request holder (late binding): an object whose field 0 is the aligned pointer
        /// `word`, a request cell's (released by a weak callback when the holder dies; owned by
        /// the holder from now on, also on failure), and whose field 2 is `labels` (a
        /// napi_value), its labels object. Returns the holder as a napi_value and its serial
        /// number.
        ///
        /// # Safety
        /// As for `create_label_holder`; `word` came from `RequestCell::into_word`.
        unsafe fn create_request_holder(
            self: Pin<&mut IsolateState>,
            word: usize,
            labels: usize,
        ) -> Result<NewHolder>;

        /// Makes `labels` (a napi_value) the labels object of the request holder `holder` (a
        /// napi_value). Fails when `holder` is not a live request holder of this isolate.
        ///
        /// # Safety
        /// As for `create_label_holder`.
        unsafe fn set_request_labels(
            self: Pin<&mut IsolateState>,
            holder: usize,
            labels: usize,
        ) -> Result<()>;

        /// The labels object of the request holder `holder` (napi_values of the current call).
        /// Fails when `holder` is not a live request holder of this isolate.
        ///
        /// # Safety
        /// As for `create_label_holder`.
        unsafe fn request_labels(self: &IsolateState, holder: usize) -> Result<usize>;

        /// What `holder` (a napi_value) owns, not transferred. Fails when `holder` is not a live
        /// holder of this isolate.
        ///
        /// # Safety
        /// As for `create_label_holder`; the result is valid while the holder is bound to it (the
        /// word and the pending box are released by `rebind_label_holder` or the holder's death).
        unsafe fn holder_binding(self: &IsolateState, holder: usize) -> Result<HolderBinding>;

        /// Binds `holder` to `word` (taking its reference), releasing its previous word and its
        /// pending labels. Fails (releasing `word`) when `holder` is not a live holder.
        ///
        /// # Safety
        /// As for `create_label_holder`.
        unsafe fn rebind_label_holder(
            self: Pin<&mut IsolateState>,
            holder: usize,
            word: usize,
        ) -> Result<()>;

        /// The holders bound to the overflow set, as napi_values of the current napi callback.
        ///
        /// # Safety
        /// Must run inside a napi callback on the isolate's thread.
        unsafe fn overflowed_holders(self: &IsolateState) -> Vec<usize>;

        /// How many live holders are bound to the overflow set.
        fn overflowed_holder_count(self: &IsolateState) -> usize;

        /// The serial number of `holder` (a napi_value), never reused within the isolate: what
        /// lib/ keeps to find the holder again with `live_label_holder`. Fails when `holder` is
        /// not a live holder of this isolate.
        ///
        /// # Safety
        /// As for `create_label_holder`.
        unsafe fn label_holder_serial(self: &IsolateState, holder: usize) -> Result<u64>;

        /// The live holder with serial number `serial` as a napi_value of the current napi
        /// callback, 0 when it was collected. Unlike a JS WeakRef's deref(), keeps nothing alive
        /// beyond that callback's scope.
        ///
        /// # Safety
        /// Must run inside a napi callback on the isolate's thread.
        unsafe fn live_label_holder(self: &IsolateState, serial: u64) -> usize;

        /// Registers the lib's AsyncLocalStorage instance (a napi_value) as the labels key unless
        /// one is registered already; returns the registered key (a napi_value).
        ///
        /// # Safety
        /// As for `create_label_holder`.
        unsafe fn register_labels_key(self: Pin<&mut IsolateState>, key: usize) -> Result<usize>;

        /// The value stored under `key` in the current continuation-preserved embedder data when
        /// that is an AsyncContextFrame (a Map), as a napi_value; 0 when CPED is not a Map or
        /// holds no such key. Probes whether AsyncLocalStorage is backed by AsyncContextFrame.
        ///
        /// # Safety
        /// As for `create_label_holder`.
        unsafe fn frame_value(self: Pin<&mut IsolateState>, key: usize) -> usize;

        /// Live label holders (created and not yet collected).
        fn live_holders(self: &IsolateState) -> usize;

        /// Label holders collected so far (a count that only grows).
        fn collected_holders(self: &IsolateState) -> u64;

        /// `HeapStatistics::external_memory()` of the isolate.
        fn external_memory(self: &IsolateState) -> u64;

        /// Whether the counting ArrayBuffer allocator is installed (patched runtime, session
        /// running).
        fn external_tracking(self: &IsolateState) -> bool;

        /// Sets the word that unlabeled samples of the next labeled session carry (the isolate's
        /// unlabeled-samples set, which owns a reference for the state's lifetime).
        fn set_unlabeled_sample_word(self: Pin<&mut IsolateState>, word: usize);

        /// A full garbage collection (`Isolate::LowMemoryNotification`).
        fn collect_garbage(self: Pin<&mut IsolateState>);

        /// `HeapStatistics::used_heap_size()` of the isolate.
        fn used_heap_size(self: &IsolateState) -> u64;

        /// `HeapStatistics::heap_size_limit()` of the isolate.
        fn heap_size_limit(self: &IsolateState) -> u64;

        /// Heap snapshots V8 holds now (`HeapProfiler::GetSnapshotCount`): one being streamed
        /// (`v8.getHeapSnapshot()`, the inspector's) is still held.
        fn heap_snapshots_held(self: &IsolateState) -> i32;

        /// Takes a heap snapshot, then the session's profile with its samples' object ids, and
        /// copies each sample's shortest strong retaining chain; the snapshot is deleted before it
        /// returns. Pauses the isolate for the whole walk. Fails when the runtime has no API
        /// version 3 or no profiler runs. Each sample's label word owns a reference (as in
        /// `read_profile`).
        fn read_retainers(self: Pin<&mut IsolateState>) -> Result<RawRetainers>;

        /// Takes a heap snapshot and writes V8's serialization of it to `path`; with `labels`,
        /// also the session's profile with each sample's node in the file. The snapshot is
        /// deleted before it returns. Pauses the isolate throughout. Fails when the file cannot be
        /// written, or with `labels` when the runtime has no API version 3 or no profiler runs.
        /// Each sample's label word owns a reference (as in `read_profile`).
        fn write_snapshot_file(
            self: Pin<&mut IsolateState>,
            labels: bool,
            path: &str,
        ) -> Result<RawSnapshotFile>;

        /// Registers the near-heap-limit callback: up to `count` dumps through the
        /// `NearHeapLimitHook` at address `dumper`, which must stay valid until
        /// `disarm_near_heap_limit`.
        fn arm_near_heap_limit(self: Pin<&mut IsolateState>, dumper: usize, count: u32);

        /// Removes the near-heap-limit callback (no-op when not armed).
        fn disarm_near_heap_limit(self: Pin<&mut IsolateState>);

        /// The V8 version string of the running process.
        fn v8_version() -> String;

        /// Probes the running process for the patched-V8 sample-labels API (dlsym).
        fn patched_api_status() -> PatchedApiStatus;
    }
}

// The callbacks of the `extern "Rust"` block: all in `v8_callbacks` (its top comment states their
// contract), but for the two that speak the bridge's own types.
use crate::v8_callbacks::{
    capture_sample_word, drop_pending_labels, external_alloc, external_free, record_dead_sample,
    release_label_word, release_sample_word, retain_label_word,
};

/// See `ffi::sample_slots`.
fn sample_slots(out: &mut Vec<ffi::RawSample>, count: usize) -> &mut [ffi::RawSample] {
    let start = out.len();
    out.resize(start + count, ffi::RawSample::default());
    &mut out[start..]
}

/// See `ffi::adopt_sample_words`.
fn adopt_sample_words(samples: &mut [ffi::RawSample]) {
    for sample in samples {
        sample.label_word = crate::v8_callbacks::resolve_label_word(sample.label_word);
    }
}

/// See `ffi::take_dead_samples`: `v8_callbacks::take_dead_samples` as the bridge's struct, each
/// group's label set as a word that owns its reference.
fn take_dead_samples(
    totals: usize,
    read: ffi::AllocationsRead,
    highest_live_sample_id: u64,
) -> ffi::RawAllocations {
    use heap_labels_core::AllocationsRead as Read;
    let read = match read {
        ffi::AllocationsRead::RestartWindow => Read::RestartWindow {
            highest_live: highest_live_sample_id,
        },
        ffi::AllocationsRead::SinceStart => Read::SinceStart {
            restart_window_after: None,
        },
        ffi::AllocationsRead::SinceStartRestartWindow => Read::SinceStart {
            restart_window_after: Some(highest_live_sample_id),
        },
        // `Window`, and any value C++ could pass that the enum does not name: the read that
        // changes nothing.
        _ => Read::Window,
    };
    let snapshot = crate::v8_callbacks::take_dead_samples(totals, read);
    ffi::RawAllocations {
        reported: true,
        groups: snapshot
            .groups
            .into_iter()
            .map(|group| ffi::RawAllocatedGroup {
                node_id: group.node_id,
                label_word: group
                    .labels
                    .map_or(0, heap_labels_core::LabelSet::into_word),
                objects: group.objects,
                bytes: group.bytes,
            })
            .collect(),
        window_start: snapshot.window_start,
    }
}

/// What V8's near-heap-limit callback runs with the copied profile and the isolate's external
/// memory: made by `near_heap_limit` when it arms, boxed in the isolate state, its address held by
/// cpp/ until disarmed. It runs inside that callback on the isolate thread (native memory and
/// system calls only; never the JS heap, never JS).
pub struct NearHeapLimitHook(pub Box<dyn Fn(ffi::RawProfile, u64) + Send + Sync>);

impl NearHeapLimitHook {
    /// The address cpp/ holds while armed.
    pub fn address(&self) -> usize {
        self as *const NearHeapLimitHook as usize
    }
}

/// See `ffi::write_near_heap_limit_dump`.
fn write_near_heap_limit_dump(hook: usize, profile: ffi::RawProfile, external_memory: u64) {
    // SAFETY: cpp/ passes the address armed by `near_heap_limit`, whose box the isolate state keeps
    // until the callback is removed (`IsolateAddon::disarm_near_heap_limit` removes it first); the
    // hook is never mutated, so a shared reference is sound.
    let hook = unsafe { &*(hook as *const NearHeapLimitHook) };
    (hook.0)(profile, external_memory);
}
