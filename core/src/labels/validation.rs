//! What a label set may hold: the checks every new set passes before it is interned, and the key
//! order of its pairs.

use super::limits::{MAX_KEY_BYTES, MAX_LABELS, MAX_VALUE_BYTES, RESERVED_KEY_PREFIX};
use crate::error::{LabelError, Result};

/// Whether user labels may not use `key`: the [`RESERVED_KEY_PREFIX`] namespace (so that no user
/// set can look like the overflow set) and `__proto__` (assigning it to an object sets the
/// prototype instead of a label, so the key would vanish from the JS label object).
pub fn is_reserved_key(key: &str) -> bool {
    key.starts_with(RESERVED_KEY_PREFIX) || key == "__proto__"
}

/// The order of a set's keys: UTF-16 code units, JavaScript's string order, so that lib/ takes a
/// set's pairs as they come. It is UTF-8 byte order except where the first differing characters
/// are one in U+E000..=U+FFFF and one above U+FFFF (which UTF-16 writes as surrogates, below).
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Checks the limits, then sorts by key and rejects duplicate keys.
pub(super) fn validate_and_sort(pairs: &mut [(String, String)]) -> Result<()> {
    if pairs.len() > MAX_LABELS {
        return Err(LabelError::TooManyLabels {
            count: pairs.len(),
            max: MAX_LABELS,
        });
    }
    for (key, value) in pairs.iter() {
        if key.is_empty() {
            return Err(LabelError::EmptyKey);
        }
        if is_reserved_key(key) {
            return Err(LabelError::ReservedKey {
                key: preview(key, MAX_KEY_BYTES),
            });
        }
        if key.len() > MAX_KEY_BYTES {
            return Err(LabelError::KeyTooLong {
                key: preview(key, MAX_KEY_BYTES),
                len: key.len(),
                max: MAX_KEY_BYTES,
            });
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(LabelError::ValueTooLong {
                key: key.clone(),
                len: value.len(),
                max: MAX_VALUE_BYTES,
            });
        }
    }
    pairs.sort_unstable_by(|a, b| key_order(&a.0, &b.0));
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
}
