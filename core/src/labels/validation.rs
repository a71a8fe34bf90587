//! What a label set may hold: the checks every new set passes before it is interned, their
//! order, and the key order of its pairs.

use super::limits::{MAX_KEY_BYTES, MAX_LABELS, MAX_VALUE_BYTES, RESERVED_KEYS};
use crate::error::{LabelError, LabelRule, Result};

/// Whether user labels may not use `key` (one of [`RESERVED_KEYS`]).
pub fn is_reserved_key(key: &str) -> bool {
    RESERVED_KEYS.iter().any(|r| {
        if r.prefix {
            key.starts_with(r.text)
        } else {
            key == r.text
        }
    })
}

/// The order of a set's keys: UTF-16 code units, JavaScript's string order, so that lib/ takes a
/// set's pairs as they come. It is UTF-8 byte order except where the first differing characters
/// are one in U+E000..=U+FFFF and one above U+FFFF (which UTF-16 writes as surrogates, below).
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The checks of one pair, in the order they are made: the first one a pair fails is its error.
/// lib/labels.js makes its up-front copies of them in this order too (it reads this list through
/// the addon's `labelRules()`), so that a pair breaking two rules gets the same error from both. A
/// reserved key is named as such whatever its length.
pub const PAIR_CHECKS: [LabelRule; 4] = [
    LabelRule::EmptyKey,
    LabelRule::ReservedKey,
    LabelRule::KeyTooLong,
    LabelRule::ValueTooLong,
];

/// `Err` when the pair breaks `rule` (a rule of [`PAIR_CHECKS`]; any other passes).
fn check_pair(rule: LabelRule, key: &str, value: &str) -> Result<()> {
    match rule {
        LabelRule::EmptyKey if key.is_empty() => Err(LabelError::EmptyKey),
        LabelRule::ReservedKey if is_reserved_key(key) => Err(LabelError::ReservedKey {
            key: preview(key, MAX_KEY_BYTES),
        }),
        LabelRule::KeyTooLong if key.len() > MAX_KEY_BYTES => Err(LabelError::KeyTooLong {
            key: preview(key, MAX_KEY_BYTES),
            len: key.len(),
            max: MAX_KEY_BYTES,
        }),
        LabelRule::ValueTooLong if value.len() > MAX_VALUE_BYTES => Err(LabelError::ValueTooLong {
            key: key.to_owned(),
            len: value.len(),
            max: MAX_VALUE_BYTES,
        }),
        _ => Ok(()),
    }
}

/// Checks the number of pairs, sorts them by key, checks each pair in key order (as lib/ walks a
/// label object's sorted keys) against [`PAIR_CHECKS`], then rejects duplicate keys.
pub(super) fn validate_and_sort(pairs: &mut [(String, String)]) -> Result<()> {
    if pairs.len() > MAX_LABELS {
        return Err(LabelError::TooManyLabels {
            count: pairs.len(),
            max: MAX_LABELS,
        });
    }
    pairs.sort_unstable_by(|a, b| key_order(&a.0, &b.0));
    for (key, value) in pairs.iter() {
        for rule in PAIR_CHECKS {
            check_pair(rule, key, value)?;
        }
    }
    if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(LabelError::DuplicateKey {
            key: w[0].0.clone(),
        });
    }
    Ok(())
}

/// `s` cut to at most `max` bytes on a char boundary, with `...` appended when cut.
fn preview(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;
    use crate::labels::*;

    #[test]
    fn keys_sort_in_javascript_order() {
        // U+FF5E (one UTF-16 unit, 0xFF5E) against U+1F600 (surrogates 0xD83D 0xDE00): UTF-8 bytes
        // put U+FF5E first, JavaScript's `sort()` puts U+1F600 first; a set follows JavaScript.
        let reg = LabelRegistry::new(10);
        let set = reg
            .intern(p(&[
                ("\u{FF5E}", "wide"),
                ("\u{1F600}", "astral"),
                ("a", "ascii"),
            ]))
            .unwrap();
        let keys: Vec<&str> = set.pairs().iter().map(|(k, _)| &**k).collect();
        assert_eq!(keys, ["a", "\u{1F600}", "\u{FF5E}"]);
        assert_eq!(set.get("\u{FF5E}"), Some("wide"));
        assert_eq!(set.get("\u{1F600}"), Some("astral"));
        assert_eq!(set.get("b"), None);
    }

    #[test]
    fn limits_are_enforced_and_name_the_key() {
        let reg = LabelRegistry::new(10);
        let many: Vec<_> = (0..=MAX_LABELS)
            .map(|i| (format!("k{i}"), String::new()))
            .collect();
        assert_eq!(
            reg.intern(many).unwrap_err(),
            LabelError::TooManyLabels { count: 33, max: 32 }
        );
        let exactly: Vec<_> = (0..MAX_LABELS)
            .map(|i| (format!("k{i}"), String::new()))
            .collect();
        assert_eq!(reg.intern(exactly).unwrap().pairs().len(), 32);

        assert_eq!(
            reg.intern(p(&[("", "v")])).unwrap_err(),
            LabelError::EmptyKey
        );

        let long_key = "é".repeat(65); // 130 bytes
        let err = reg.intern(vec![(long_key, "v".into())]).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(
            err,
            LabelError::KeyTooLong {
                len: 130,
                max: 128,
                ..
            }
        ));
        assert!(
            msg.contains("ééé") && msg.contains("130") && msg.contains("128"),
            "{msg}"
        );
        reg.intern(vec![("k".repeat(128), String::new())]).unwrap();

        let err = reg
            .intern(vec![("big".into(), "x".repeat(1025))])
            .unwrap_err();
        assert_eq!(
            err,
            LabelError::ValueTooLong {
                key: "big".into(),
                len: 1025,
                max: 1024
            }
        );
        assert!(err.to_string().contains("\"big\""));
        reg.intern(vec![("big".into(), "x".repeat(1024))]).unwrap();

        let err = reg
            .intern(p(&[("a", "1"), ("dup", "1"), ("dup", "2")]))
            .unwrap_err();
        assert_eq!(err, LabelError::DuplicateKey { key: "dup".into() });
        assert!(err.to_string().contains("\"dup\""));
    }

    #[test]
    fn reserved_keys_are_rejected_naming_the_key() {
        let reg = LabelRegistry::new(10);
        for key in ["heap_labels.overflow", "heap_labels.x", "__proto__"] {
            let err = reg.intern(p(&[("route", "/a"), (key, "v")])).unwrap_err();
            assert_eq!(err, LabelError::ReservedKey { key: key.into() });
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("\"{key}\"")) && msg.contains("reserved"),
                "{msg}"
            );
        }
        assert!(is_reserved_key(OVERFLOW_KEY));
        // Only the dotted namespace and the exact `__proto__` are reserved.
        for key in ["heap_labels", "heap_labelsX.y", "__proto__x", "proto"] {
            reg.intern(p(&[(key, "v")])).unwrap();
        }
        assert_eq!(reg.len(), 4);
        assert!(!reg.live_sets().iter().any(|s| s.is_overflow()));
    }

    #[test]
    fn a_pair_breaking_two_rules_gets_the_first_check_s_error() {
        let reg = LabelRegistry::new(10);
        // 212 bytes and reserved: the reserved check comes first (a TypeError, not a RangeError).
        let long_reserved = format!("{RESERVED_KEY_PREFIX}{}", "k".repeat(200));
        let err = reg.intern(vec![(long_reserved, "v".into())]).unwrap_err();
        assert!(matches!(err, LabelError::ReservedKey { .. }), "{err:?}");
        assert_eq!(err.rule().error_class(), ErrorClass::TypeError);
        // A long key with a long value: the key's error.
        let err = reg
            .intern(vec![("k".repeat(200), "v".repeat(2000))])
            .unwrap_err();
        assert!(matches!(err, LabelError::KeyTooLong { .. }), "{err:?}");
        // Pairs are checked in key order, whatever order they come in.
        let err = reg
            .intern(p(&[("b", &"v".repeat(2000)), ("__proto__", "x")]))
            .unwrap_err();
        assert_eq!(
            err,
            LabelError::ReservedKey {
                key: "__proto__".into()
            }
        );
        assert_eq!(
            PAIR_CHECKS.map(LabelRule::name),
            ["emptyKey", "reservedKey", "keyTooLong", "valueTooLong"]
        );
    }

    #[test]
    fn every_error_names_its_rule_and_every_rule_has_a_class() {
        let errors = [
            LabelError::TooManyLabels { count: 33, max: 32 },
            LabelError::EmptyKey,
            LabelError::ReservedKey {
                key: "__proto__".into(),
            },
            LabelError::KeyTooLong {
                key: "k".into(),
                len: 129,
                max: 128,
            },
            LabelError::ValueTooLong {
                key: "k".into(),
                len: 1025,
                max: 1024,
            },
            LabelError::DuplicateKey { key: "k".into() },
        ];
        assert_eq!(errors.map(|e| e.rule()), LabelRule::ALL);
        let type_errors: Vec<_> = LabelRule::ALL
            .into_iter()
            .filter(|r| r.error_class() == ErrorClass::TypeError)
            .map(LabelRule::name)
            .collect();
        assert_eq!(type_errors, ["reservedKey", "duplicateKey"]);
    }
}
