//! Label sets at the napi boundary: binding label holders to interned sets and rebinding the
//! holders that got the overflow set once the registry has room. (The holders' weak callbacks
//! give their words and pending boxes back through `v8_callbacks`.)
//!
//! A holder made while the registry is full is bound to the overflow set and keeps its labels as
//! pending labels (a `PendingLabels` box owned by the holder's record in cpp/). Rebinding happens
//! on the isolate thread only, inside napi calls: when lib/ uses the holder again
//! ([`bind_holder`]) and when a session starts, a profile is read or stats are taken
//! ([`rebind_overflowed`]). Never from V8's allocation path: the capture callback only reads the
//! holder's word.

use std::sync::Arc;

use heap_labels_core::{Interned, LabelRegistry, LabelSet, PendingLabels, RequestCell};

use crate::bridge::ffi::HolderBinding;
use crate::error::{Error, Result};
use crate::state::IsolateAddon;

/// How lib/ names an interned set in its id -> labels cache: the set's id and that id's
/// generation (`LabelSet::generation`), never the same for two sets of one registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetKey {
    pub id: u32,
    pub generation: u64,
}

impl SetKey {
    pub fn of(set: &LabelSet) -> Self {
        SetKey {
            id: set.id(),
            generation: set.generation(),
        }
    }
}

/// What a holder's binding is bound to, as lib/ is told (`setKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A set of its own.
    Set(SetKey),
    /// No labels (the empty set), or a request cell (which names no set).
    NoLabels,
    /// The overflow set, its pairs pending.
    Overflow,
}

/// What `binding` is bound to.
pub fn bound_to(binding: &HolderBinding) -> Bound {
    if binding.pending != 0 {
        return Bound::Overflow;
    }
    if binding.word == 0 || RequestCell::is_cell_word(binding.word) {
        return Bound::NoLabels;
    }
    // SAFETY: a non-zero binding word owns a reference (held by the caller's holder, or by the
    // binding itself before the holder takes it) for the duration of this call.
    Bound::Set(SetKey::of(unsafe { LabelSet::word_as_ref(binding.word) }))
}

/// The pairs of lib/labels.js's canonical key of a label set (`canonicalKey`): for each pair, the
/// key's length, `:`, the key, the value's length, `:`, the value, lengths in UTF-16 code units
/// (JavaScript's string length). A new set's pairs cross from lib/ as this one string, which lib/
/// has made anyway, instead of two arrays of strings (two napi conversions per string and two per
/// array). The pairs come out as lib/ wrote them; the registry checks and sorts them.
pub fn parse_pairs(text: &str) -> Result<Vec<(String, String)>> {
    let mut fields = CanonicalFields { rest: text, at: 0 };
    // Most sets have a few pairs: no reallocation for them.
    let mut pairs = Vec::with_capacity(4);
    while !fields.rest.is_empty() {
        let key = fields.next()?;
        let value = fields.next()?;
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// The length-prefixed fields of a canonical key, one after the other.
struct CanonicalFields<'a> {
    rest: &'a str,
    /// The UTF-16 offset of `rest` in the whole string, for errors.
    at: usize,
}

impl CanonicalFields<'_> {
    fn next(&mut self) -> Result<String> {
        let malformed = Error::MalformedPairs { at: self.at };
        let Some(colon) = self.rest.find(':') else {
            return Err(malformed);
        };
        let digits = &self.rest[..colon];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed);
        }
        let Ok(units) = digits.parse::<usize>() else {
            return Err(malformed);
        };
        let body = &self.rest[colon + 1..];
        // ASCII (the usual label) is one byte per UTF-16 unit; otherwise count by character.
        let end = match body.get(..units) {
            Some(ascii) if ascii.is_ascii() => units,
            _ => {
                let (mut seen, mut end) = (0, 0);
                for c in body.chars() {
                    if seen >= units {
                        break;
                    }
                    seen += c.len_utf16();
                    end += c.len_utf8();
                }
                if seen != units {
                    return Err(malformed);
                }
                end
            }
        };
        self.at += colon + 1 + units;
        self.rest = &body[end..];
        Ok(body[..end].to_owned())
    }
}

/// Interns `pairs` for a new holder. The empty set is no labels: word 0, nothing interned (so it
/// never counts against `maxLabelSets`). Past `maxLabelSets` the holder gets the overflow set and
/// keeps its pairs pending.
pub fn bind_new_holder(
    registry: &LabelRegistry,
    pairs: Vec<(String, String)>,
) -> Result<HolderBinding> {
    if pairs.is_empty() {
        return Ok(HolderBinding {
            word: 0,
            pending: 0,
        });
    }
    // Sets that lost their last holder go away here, on the isolate thread (never in V8 callbacks);
    // amortized, so that interning stays O(1).
    registry.prune_if_due();
    Ok(match registry.try_intern(pairs)? {
        Interned::Set(set) => HolderBinding {
            word: LabelSet::into_word(set),
            pending: 0,
        },
        Interned::Full(pending) => HolderBinding {
            word: LabelSet::into_word(registry.overflow()),
            pending: Box::into_raw(Box::new(pending)) as usize,
        },
    })
}

/// Prunes when the registry is full and label holders were collected since the last such prune:
/// the sets of the collected holders may be free to go, and without this a full registry would
/// hand out the overflow set until the amortized prune (`prune_if_due`, after 256 overflowed
/// interns) found them, e.g. right after a GC in a synchronous batch. At most one walk over the
/// sets per GC that collected holders, however many interns meet the cap. Isolate thread, inside
/// napi calls only.
pub fn make_room(state: &mut IsolateAddon) {
    if state.registry.len() < state.registry.max_sets() {
        return;
    }
    let collected = state.v8.collected_holders();
    if collected == state.pruned_at_collected {
        return;
    }
    state.pruned_at_collected = collected;
    state.registry.prune();
}

/// A word (one strong reference) of the set `pending` stands for, if the registry has room for it
/// now.
fn retry(registry: &LabelRegistry, pending: usize) -> Option<usize> {
    // SAFETY: `pending` was read from the record of a holder that a napi_value of the current
    // call keeps alive, and only `rebind_label_holder` (not called before this returns) or the
    // holder's death frees it.
    let pending = unsafe { &*(pending as *const PendingLabels) };
    registry.retry(pending).map(LabelSet::into_word)
}

/// Binds `holder` (a napi_value of the current call) to its own set if it is bound to the overflow
/// set and there is room now. Returns its binding when it is bound to its own set (or to no
/// labels), `None` while it stays on the overflow set.
pub fn bind_holder(state: &mut IsolateAddon, holder: usize) -> Result<Option<HolderBinding>> {
    // SAFETY: inside a napi callback on the isolate thread; `holder` is one of its napi_values.
    let binding = unsafe { state.v8.holder_binding(holder)? };
    if binding.pending == 0 {
        return Ok(Some(binding));
    }
    // A failed retry counts as an overflowed intern: a label object used again and again while
    // the registry is full drives the amortized prune that finds released sets.
    make_room(state);
    state.registry.prune_if_due();
    let Some(word) = retry(&state.registry, binding.pending) else {
        return Ok(None);
    };
    // SAFETY: as above; `word` came from `retry` and its reference goes to the holder.
    unsafe { state.v8_mut().rebind_label_holder(holder, word)? };
    Ok(Some(HolderBinding { word, pending: 0 }))
}

/// Rebinds the holders bound to the overflow set while the registry has room (after a full prune);
/// returns how many. For the isolate thread at session start, read and stats time: the holders of
/// long-lived async contexts are rebound in place, so their later samples carry their own labels.
pub fn rebind_overflowed(state: &mut IsolateAddon) -> Result<usize> {
    if state.v8.overflowed_holder_count() == 0 {
        return Ok(0);
    }
    state.registry.prune();
    if state.registry.len() >= state.registry.max_sets() {
        return Ok(0);
    }
    // SAFETY: inside a napi callback on the isolate thread; the napi_values live in its scope and
    // keep the holders (and so their pending labels) alive until it returns.
    let holders = unsafe { state.v8.overflowed_holders() };
    let mut rebound = 0;
    for holder in holders {
        // SAFETY: as above.
        let pending = unsafe { state.v8.holder_binding(holder)? }.pending;
        if pending == 0 {
            continue;
        }
        // Full again: the remaining holders stay on the overflow set until the next chance.
        let Some(word) = retry(&state.registry, pending) else {
            break;
        };
        // SAFETY: as above; the reference of `word` goes to the holder.
        unsafe { state.v8_mut().rebind_label_holder(holder, word)? };
        rebound += 1;
    }
    Ok(rebound)
}

// ---- request cells (late binding; docs/architecture.md "Late binding") ---------------------------

/// The set `holder` (a napi_value of the current call: a label holder with labels of its own) is
/// bound to, after rebinding it if it overflowed and there is room now (else the overflow set).
/// A holder of no labels, or a request holder, names no set: an error.
fn set_of_holder(state: &mut IsolateAddon, holder: usize, what: &str) -> Result<Arc<LabelSet>> {
    let word = match bind_holder(state, holder)? {
        Some(binding) => binding.word,
        // SAFETY: inside a napi callback on the isolate thread; `holder` is one of its values.
        None => unsafe { state.v8.holder_binding(holder)? }.word,
    };
    if word == 0 || RequestCell::is_cell_word(word) {
        return Err(Error::Native(format!(
            "{what} must be a label holder with labels of its own"
        )));
    }
    // SAFETY: `holder`, a napi_value of this call, owns a reference to `word`'s set for the
    // call; the new reference is the returned `Arc`'s.
    unsafe {
        LabelSet::retain_word(word);
        Ok(LabelSet::from_word(word))
    }
}

/// The word of a new request holder: a new request cell bound to `bucket`'s set.
pub fn new_request_word(state: &mut IsolateAddon, bucket: usize) -> Result<usize> {
    let set = set_of_holder(state, bucket, "the bucket")?;
    Ok(RequestCell::into_word(RequestCell::new(set)))
}

/// Binds the cell of `request` (a request holder) to `route`'s set and makes `labels` (route's
/// labels object) the holder's labels: true when the binding changed, false when the cell is
/// bound to that set already or has used its bindings. The labels object changes only with the
/// binding: a cell that refused keeps the labels its samples carry, which is what
/// getHeapProfileLabels() must say under it. All three are napi_values of the current call.
pub fn bind_request(
    state: &mut IsolateAddon,
    request: usize,
    route: usize,
    labels: usize,
) -> Result<bool> {
    // SAFETY: inside a napi callback on the isolate thread; `request` is one of its values.
    let word = unsafe { state.v8.holder_binding(request)? }.word;
    if !RequestCell::is_cell_word(word) {
        return Err(Error::Native("not a request holder".into()));
    }
    let set = set_of_holder(state, route, "the route")?;
    // SAFETY: `request`, a napi_value of this call, keeps its cell alive for the call.
    let cell = unsafe { RequestCell::word_as_ref(word) };
    if !cell.can_bind(&set) {
        return Ok(false);
    }
    // The labels object first: it cannot fail for a holder `holder_binding` accepted with a cell
    // word (only request holders have one), and the binding after it cannot fail.
    // SAFETY: inside a napi callback on the isolate thread; both are values of this call.
    unsafe { state.v8_mut().set_request_labels(request, labels)? };
    Ok(cell.bind(set))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v8_callbacks::{
        drop_pending_labels as drop_pending, release_label_word as release_word,
    };
    use std::sync::Arc;

    fn bind(registry: &LabelRegistry, route: &str) -> HolderBinding {
        bind_new_holder(registry, vec![("route".into(), route.into())]).unwrap()
    }

    #[test]
    fn a_word_owns_one_reference_until_released() {
        let registry = LabelRegistry::new(10);
        let binding = bind(&registry, "/a");
        assert_eq!(binding.pending, 0);
        let set = registry.live_sets().pop().unwrap();
        assert_eq!(Arc::strong_count(&set), 3); // registry, word, `set`
        release_word(binding.word);
        assert_eq!(Arc::strong_count(&set), 2);
        drop(set);
        assert_eq!(registry.prune(), 1);
    }

    #[test]
    fn the_empty_set_is_no_labels_and_interns_nothing() {
        let registry = LabelRegistry::new(1);
        let binding = bind_new_holder(&registry, vec![]).unwrap();
        assert_eq!(
            binding,
            HolderBinding {
                word: 0,
                pending: 0
            }
        );
        assert!(registry.is_empty());
        let a = bind(&registry, "/a");
        assert_eq!(a.pending, 0, "the cap's one set is still free");
        release_word(a.word);
    }

    #[test]
    fn a_holder_past_the_cap_keeps_its_labels_pending_until_there_is_room() {
        let registry = LabelRegistry::new(1);
        let a = bind(&registry, "/a");
        let b = bind(&registry, "/b");
        assert_eq!(b.word, LabelSet::as_word(&registry.overflow()));
        assert_ne!(b.pending, 0);
        assert!(retry(&registry, b.pending).is_none(), "still full");

        release_word(a.word);
        registry.prune();
        let word = retry(&registry, b.pending).unwrap();
        // SAFETY: `word` owns a reference until released below.
        assert_eq!(
            unsafe { LabelSet::word_as_ref(word) }.get("route"),
            Some("/b")
        );
        release_word(word);
        release_word(b.word);
        drop_pending(b.pending);
    }

    #[test]
    fn a_holder_names_its_own_set_only() {
        let registry = LabelRegistry::new(1);
        let a = bind(&registry, "/a");
        let set = registry.live_sets().pop().unwrap();
        assert_eq!(
            bound_to(&a),
            Bound::Set(SetKey {
                id: set.id(),
                generation: 1
            })
        );
        let overflowed = bind(&registry, "/b");
        assert_eq!(
            bound_to(&overflowed),
            Bound::Overflow,
            "the overflow set, its pairs pending"
        );
        let none = bind_new_holder(&registry, vec![]).unwrap();
        assert_eq!(bound_to(&none), Bound::NoLabels, "no labels");
        release_word(a.word);
        release_word(overflowed.word);
        drop_pending(overflowed.pending);
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn canonical_keys_give_back_their_pairs() {
        // As lib/labels.js's canonicalKey writes them: lengths in UTF-16 units, so an astral
        // character counts 2 and a BMP one 1, whatever its UTF-8 length; colons and digits in
        // the text are text.
        assert_eq!(parse_pairs("").unwrap(), pairs(&[]));
        assert_eq!(
            parse_pairs("5:route3:/:x").unwrap(),
            pairs(&[("route", "/:x")])
        );
        assert_eq!(
            parse_pairs("1:a0:2:\u{1F600}4:\u{20AC}1:2").unwrap(),
            pairs(&[("a", ""), ("\u{1F600}", "\u{20AC}1:2")])
        );
    }

    #[test]
    fn malformed_pairs_are_rejected() {
        for text in [
            "5:route",                      // a key without a value
            "5:rout",                       // shorter than its length
            "x:a1:b",                       // no length
            ":a1:b",                        // an empty length
            "1:a1",                         // no colon
            "1:\u{1F600}1:b",               // a length that splits a character
            "99999999999999999999999:a1:b", // a length that overflows
        ] {
            assert!(
                matches!(parse_pairs(text), Err(Error::MalformedPairs { .. })),
                "{text:?}"
            );
        }
    }
}
