//! Retainers per label (`retainers(session, key)`): one call on the isolate thread, with no JS in
//! between, that refuses when a heap snapshot would not fit or another one is held, takes the
//! snapshot joined to the session's samples (cpp/retainers.cc, the labeled runtime's API version
//! 3), and aggregates the retaining chains per label group (`heap_labels_core::retainers`). The
//! app is paused for the whole call; everything it allocates is freed before it returns.

use std::time::Instant;

use heap_labels_core::retainers::{self, ChainNode, Chains, EdgeType, Limits, NodeType};
use napi::Env;
use napi_derive::napi;

use crate::bridge::ffi;
use crate::error::{self, Error};
use crate::js_profile::NativeLabelSet;
use crate::model::{self, ExternalInput};
use crate::session;
use crate::state::{isolate_state, IsolateAddon};

/// The answer: the groups as JSON (`heap_labels_core::retainers::Retainers`; a group names its
/// label set by id, `labelSet`), and the pairs of those sets.
#[napi(object)]
pub struct NativeRetainers {
    pub json: String,
    pub label_sets: Vec<NativeLabelSet>,
}

/// Signature: `(session: number, key?: string, force?: boolean) => NativeRetainers` - what retains
/// the live sampled objects of each label group of the running session (by full set, or by `key`'s
/// value). `force` skips the room check (`check_room`: an estimate), never the busy one.
#[napi]
pub fn retainers(
    env: Env,
    session: u32,
    key: Option<String>,
    force: Option<bool>,
) -> napi::Result<NativeRetainers> {
    let run = || -> error::Result<NativeRetainers> {
        let started = Instant::now();
        let state = isolate_state(&env)?;
        let sample_interval = session::running_session(state, session)?
            .options
            .sample_interval;
        let status = ffi::patched_api_status();
        if !status.retainers {
            return Err(Error::Unsupported(status.retainers_reason));
        }
        check_snapshot_fits(state, "retainers", force == Some(true))?;
        let raw = session::read_retainers(state, session)?;
        let facts = retainers::SnapshotFacts {
            nodes: raw.snapshot_nodes,
            snapshot_ms: raw.snapshot_ms,
            walk_ms: raw.walk_ms,
            walk_bytes: raw.walk_bytes,
            pause_ms: 0.0,
        };
        let chains = Chains {
            nodes: raw.nodes.into_iter().map(chain_node).collect(),
            sample_nodes: raw.sample_nodes,
        };
        let read = model::build_profile(raw.profile, sample_interval, ExternalInput::default());
        let mut result =
            retainers::by_label(&read.profile, &chains, key.as_deref(), &Limits::default());
        let label_sets = result
            .groups
            .iter()
            .filter_map(|group| match &group.labels {
                heap_labels_core::GroupLabels::Set(set) => Some(NativeLabelSet::of(set)),
                _ => None,
            })
            .collect();
        result.snapshot = retainers::SnapshotFacts {
            pause_ms: started.elapsed().as_secs_f64() * 1000.0,
            ..facts
        };
        Ok(NativeRetainers {
            json: result.to_json(),
            label_sets,
        })
    };
    run().map_err(|e| e.throw(&env))
}

/// Refuses a heap snapshot (for `op`) while V8 holds another, or, unless `force` (the caller's
/// explicit override: `retainers(key, { force: true })`), when it would not fit ([`check_room`]).
pub(crate) fn check_snapshot_fits(
    state: &IsolateAddon,
    op: &'static str,
    force: bool,
) -> error::Result<()> {
    let held = state.v8.heap_snapshots_held();
    if held > 0 {
        return Err(Error::SnapshotBusy { op, held });
    }
    if force {
        return Ok(());
    }
    check_room(
        state.v8.used_heap_size(),
        state.v8.heap_size_limit(),
        machine_available(),
    )
    .map_err(|reason| Error::NoRoom { op, reason })
}

fn chain_node(raw: ffi::RawRetainerNode) -> ChainNode {
    ChainNode {
        parent: raw.parent,
        edge_type: EdgeType::from_v8(raw.edge_type),
        edge_name: raw.edge_name,
        node_type: NodeType::from_v8(raw.node_type),
        name: raw.name,
        self_size: raw.self_size,
        id: raw.id,
    }
}

/// Peak memory of a heap snapshot (V8's, walked and dropped by this call) over the used heap,
/// measured for heaps of small objects (`benchmark/inprocess/retainers-cost.js`: 5.8-6.0x, and
/// 6.5x for a plain `v8.writeHeapSnapshot`); heaps of large strings and arrays need less.
const MACHINE_NEED_PER_USED_BYTE: u64 = 6;

/// Whether a heap snapshot fits: the used heap again must be free below the heap limit (where
/// services size their memory), and the machine (`available`: `None` when unknown) must have the
/// measured need of a snapshot. The error says what is missing.
fn check_room(used: u64, limit: u64, available: Option<u64>) -> Result<(), String> {
    let below_limit = limit.saturating_sub(used);
    if below_limit < used {
        return Err(format!(
            "a heap snapshot needs about the used heap again ({}), and only {} are left below \
             the heap limit ({}); not taken",
            mib(used),
            mib(below_limit),
            mib(limit)
        ));
    }
    let need = used.saturating_mul(MACHINE_NEED_PER_USED_BYTE);
    match available {
        Some(available) if available < need => Err(format!(
            "a heap snapshot takes memory of about {MACHINE_NEED_PER_USED_BYTE} times the used \
             heap ({} for {}), and the machine has {} available; not taken",
            mib(need),
            mib(used),
            mib(available)
        )),
        _ => Ok(()),
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
}

/// Memory available to this process: the machine's `MemAvailable`, and no more than the room left
/// in its cgroup (v2 or v1) when that has a limit. `None` when neither can be read.
fn machine_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let machine = meminfo.as_deref().and_then(mem_available);
    let cgroup =
        cgroup_room("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current").or_else(|| {
            cgroup_room(
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "/sys/fs/cgroup/memory/memory.usage_in_bytes",
            )
        });
    match (machine, cgroup) {
        (Some(m), Some(c)) => Some(m.min(c)),
        (m, c) => m.or(c),
    }
}

/// `MemAvailable` of /proc/meminfo, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The limit minus the usage of a cgroup; `None` without a limit ("max", or v1's huge value).
fn cgroup_room(limit_file: &str, usage_file: &str) -> Option<u64> {
    let read =
        |file: &str| -> Option<u64> { std::fs::read_to_string(file).ok()?.trim().parse().ok() };
    let limit = read(limit_file)?;
    if limit >= 1 << 60 {
        return None;
    }
    Some(limit.saturating_sub(read(usage_file)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn room_is_the_used_heap_again_below_the_limit_and_six_times_it_on_the_machine() {
        assert_eq!(check_room(100 * MIB, 200 * MIB, Some(600 * MIB)), Ok(()));
        assert_eq!(check_room(100 * MIB, 200 * MIB, None), Ok(()));
        let limit = check_room(101 * MIB, 200 * MIB, None).unwrap_err();
        assert!(
            limit.contains("only 99.0 MiB are left below the heap limit (200.0 MiB)"),
            "{limit}"
        );
        let machine = check_room(100 * MIB, 4096 * MIB, Some(599 * MIB)).unwrap_err();
        assert!(
            machine.contains(
                "about 6 times the used heap (600.0 MiB for 100.0 MiB), and the machine has \
                 599.0 MiB available"
            ),
            "{machine}"
        );
    }

    #[test]
    fn meminfo_gives_mem_available_in_bytes() {
        let text = "MemTotal:       16315428 kB\nMemFree:  1 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(mem_available(text), Some(8_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
    }
}
