//! Label sets at the napi boundary: interning pairs into the per-isolate registry and turning a
//! set into the word a label holder owns.

use heap_labels_core::{LabelRegistry, LabelSet};

use crate::error::{Error, Result};

/// Interns `keys[i] = values[i]` and returns a word that owns one strong reference to the set
/// (the registry's overflow set once `maxLabelSets` is reached).
pub fn intern_word(
    registry: &LabelRegistry,
    keys: Vec<String>,
    values: Vec<String>,
) -> Result<usize> {
    if keys.len() != values.len() {
        return Err(Error::LabelArity {
            keys: keys.len(),
            values: values.len(),
        });
    }
    // Sets that lost their last holder go away here, on the isolate thread (never in V8 callbacks);
    // amortized, so that interning stays O(1).
    registry.prune_if_due();
    let set = registry.intern(keys.into_iter().zip(values).collect())?;
    Ok(LabelSet::into_word(set))
}

/// Gives back the reference a word owns.
///
/// Runs inside V8 GC weak callbacks and at isolate teardown: one atomic decrement (and a heap free
/// when it was the last reference); no lock, no V8 call.
pub fn release_word(word: usize) {
    if word == 0 {
        return;
    }
    // SAFETY: cpp/ calls this exactly once per word it received from `intern_word` (holder weak
    // callback or teardown), so the word still owns its reference.
    unsafe { LabelSet::release_word(word) }
}

/// Takes one more reference for `word` (0 is ignored).
///
/// Runs inside V8's allocation path (the sample-labels capture callback) and in the counting
/// allocator: one atomic increment, nothing else.
pub fn retain_word(word: usize) {
    if word == 0 {
        return;
    }
    // SAFETY: cpp/ passes words read from a live label holder (which owns a reference for as long
    // as it is reachable, and it is: it is the current async context's store) or from V8's
    // per-sample storage (which owns one until the release callback), so the set is alive.
    unsafe { LabelSet::retain_word(word) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_word_owns_one_reference_until_released() {
        let registry = LabelRegistry::new(10);
        let word = intern_word(&registry, vec!["route".into()], vec!["/a".into()]).unwrap();
        let set = registry.live_sets().pop().unwrap();
        assert_eq!(Arc::strong_count(&set), 3); // registry, word, `set`
        release_word(word);
        assert_eq!(Arc::strong_count(&set), 2);
        drop(set);
        assert_eq!(registry.prune(), 1);
    }

    #[test]
    fn mismatched_arrays_are_rejected() {
        let registry = LabelRegistry::new(10);
        let err = intern_word(&registry, vec!["a".into()], vec![]).unwrap_err();
        assert!(matches!(err, Error::LabelArity { keys: 1, values: 0 }));
    }
}
