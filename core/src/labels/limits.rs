//! The limits and fixed names of label sets: what one set may hold, how many sets a registry
//! holds by default, the overflow set's pair and id, and when the registry prunes.

/// Most pairs in one label set.
pub const MAX_LABELS: usize = 32;
/// Longest key, in bytes of UTF-8. Keys must also be non-empty.
pub const MAX_KEY_BYTES: usize = 128;
/// Longest value, in bytes of UTF-8. Values may be empty.
pub const MAX_VALUE_BYTES: usize = 1024;
/// Default cap on distinct label sets per registry (`maxLabelSets`).
pub const DEFAULT_MAX_SETS: usize = 10_000;
/// Key of the single pair of the overflow set.
pub const OVERFLOW_KEY: &str = "heap_labels.overflow";
/// Value of the single pair of the overflow set.
pub const OVERFLOW_VALUE: &str = "true";
/// Id of every registry's overflow set; interned sets are numbered from 1.
pub const OVERFLOW_ID: u32 = 0;
/// Highest id of an interned set. `u32::MAX` is never an id, so that the boundary can use it for
/// "no set".
pub const MAX_ID: u32 = u32::MAX - 1;
/// The reserved namespace's prefix, as a literal (for the reason text below).
macro_rules! reserved_key_prefix {
    () => {
        "heap_labels."
    };
}
/// Keys starting with this are reserved for heap-labels' own labels (the overflow set's key).
pub const RESERVED_KEY_PREFIX: &str = reserved_key_prefix!();

/// Keys user labels may not have, each with the reason its error gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReservedKey {
    /// The key, or the start of the keys, that is reserved.
    pub text: &'static str,
    /// Whether every key starting with `text` is reserved (else only `text` itself).
    pub prefix: bool,
    /// Why, as the error message says it after "is reserved: ".
    pub reason: &'static str,
}

/// The reserved keys: the [`RESERVED_KEY_PREFIX`] namespace (so that no user set can look like the
/// overflow set) and `__proto__` (assigning it to an object sets the prototype instead of a
/// label, so the key would vanish from the JS label object). lib/ reads this list through the
/// addon (`labelRules()`).
pub const RESERVED_KEYS: [ReservedKey; 2] = [
    ReservedKey {
        text: RESERVED_KEY_PREFIX,
        prefix: true,
        reason: concat!(
            "keys starting with \"",
            reserved_key_prefix!(),
            "\" are heap-labels' own (the overflow set's key)"
        ),
    },
    ReservedKey {
        text: "__proto__",
        prefix: false,
        reason: "assigning it to an object sets the prototype instead of a label",
    },
];
/// [`LabelRegistry::prune_if_due`](super::LabelRegistry::prune_if_due) prunes after at least this
/// many new sets...
pub const PRUNE_MIN_CREATED: usize = 64;
/// ...or after this many interns answered with the overflow set.
pub const PRUNE_OVERFLOWED: usize = 256;
