//! The short text per-label summary written next to every dump (and served as `?debug=1`).
//!
//! One line per label set, largest estimated heap first, with the unlabeled group and the overflow
//! set like any other row, under a commented header that says what was measured. Plain text on
//! purpose: an operator reads it with `cat`, `sort` or `grep` before opening the pprof file.

use std::fmt::Write;

use crate::profile::{GroupLabels, Profile};

/// What the header says about the dump.
#[derive(Debug, Clone, Default)]
pub struct SummaryInfo<'a> {
    /// Why the profile was written: `signal SIGUSR2`, `http`, `near-heap-limit`, `api`.
    pub reason: &'a str,
    pub pid: u32,
    /// When the profile was read, nanoseconds since the Unix epoch.
    pub time_nanos: i64,
    /// Whether samples can carry labels in this process (patched runtime); the header says so.
    pub labeled: bool,
}

/// The summary of `profile`.
pub fn render(profile: &Profile, info: &SummaryInfo<'_>) -> String {
    let groups = profile.by_label(None);
    let total_bytes: f64 = groups.iter().map(|g| g.bytes).sum();
    let total_external: i64 = groups.iter().map(|g| g.external_bytes).sum();
    let labeled_samples = profile
        .samples
        .iter()
        .filter(|s| s.labels.is_some())
        .count();
    let mut out = String::with_capacity(256 + groups.len() * 64);
    // Writing into a String cannot fail.
    let _ = writeln!(out, "# heap-labels per-label summary");
    let _ = writeln!(out, "# reason: {}", info.reason);
    let _ = writeln!(out, "# pid: {}", info.pid);
    let _ = writeln!(out, "# time: {}", rfc3339(info.time_nanos));
    let _ = writeln!(
        out,
        "# sample interval: {} bytes; live samples: {} ({} labeled)",
        profile.sample_interval,
        profile.samples.len(),
        labeled_samples
    );
    if !info.labeled {
        let _ = writeln!(
            out,
            "# samples carry no labels on this runtime (per-label heap needs the patched runtime)"
        );
    }
    let _ = writeln!(
        out,
        "# estimated live heap: {:.0} bytes; external (ArrayBuffer) bytes: {}",
        total_bytes, total_external
    );
    let _ = writeln!(
        out,
        "# {:>14} {:>6} {:>12} {:>14} {:>8}  labels",
        "heap_bytes", "share", "objects", "external_bytes", "samples"
    );
    for group in &groups {
        let share = if total_bytes > 0.0 {
            100.0 * group.bytes / total_bytes
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "  {:>14.0} {:>5.1}% {:>12.0} {:>14} {:>8}  {}",
            group.bytes,
            share,
            group.objects,
            group.external_bytes,
            group.samples,
            labels_text(&group.labels)
        );
    }
    out
}

/// The one text of a label set wherever heap-labels writes one for people (this summary, the
/// growth watch's lines, the report's groups): `key="value", other="x"`, keys in the set's order,
/// values as JSON strings with every character unsafe on a terminal escaped (see [`json_string`]),
/// keys as they are unless they hold such a character or one that would make the text ambiguous
/// (`"`, `\`, `=`, `,`, space; then as values are); `(unlabeled)` for no labels. No control
/// character reaches a terminal, and two different sets never share a text. This function owns
/// the format; lib/'s `labelsText` (lib/format.js) follows it, and
/// tests/fixtures/label-text.json holds both to the same cases.
pub fn labels_text(labels: &GroupLabels) -> String {
    match labels {
        GroupLabels::Unlabeled => "(unlabeled)".to_owned(),
        GroupLabels::Value { key, value } => format!("{}={}", key_text(key), json_string(value)),
        GroupLabels::Set(set) => {
            let mut text = String::new();
            for (i, (k, v)) in set.pairs().iter().enumerate() {
                if i > 0 {
                    text.push_str(", ");
                }
                let _ = write!(text, "{}={}", key_text(k), json_string(v));
            }
            if text.is_empty() {
                text.push_str("{}");
            }
            text
        }
    }
}

/// Characters that must not reach a terminal as they are: C0 and C1 controls and DEL (newlines
/// forge rows; ESC and CSI start ANSI/OSC sequences), line and paragraph separators, and the
/// bidirectional marks, overrides and isolates.
fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `value` as a JSON string (what JavaScript's `JSON.stringify` writes for it), with the unsafe
/// characters JSON leaves as they are escaped as `\uXXXX` too: still a JSON string of `value`.
fn json_string(value: &str) -> String {
    // Serializing a str cannot fail.
    let json = serde_json::to_string(value).unwrap_or_default();
    if !json.chars().any(is_unsafe) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_unsafe(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// A key as it is when that is unambiguous and safe, else as a JSON string.
fn key_text(key: &str) -> std::borrow::Cow<'_, str> {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| !is_unsafe(c) && !matches!(c, '"' | '\\' | '=' | ',' | ' '));
    if plain {
        key.into()
    } else {
        json_string(key).into()
    }
}

/// `2026-12-01T05:30:00.123Z` for nanoseconds since the Unix epoch (UTC, millisecond precision).
pub fn rfc3339(time_nanos: i64) -> String {
    let (date, time) = utc_parts(time_nanos);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        date.0, date.1, date.2, time.0, time.1, time.2, time.3
    )
}

/// `20261201T053000.123Z`: the same instant in a form that sorts and fits in a file name.
pub fn compact_time(time_nanos: i64) -> String {
    let (date, time) = utc_parts(time_nanos);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}.{:03}Z",
        date.0, date.1, date.2, time.0, time.1, time.2, time.3
    )
}

type Date = (i64, u32, u32);
type Time = (u32, u32, u32, u32);

fn utc_parts(time_nanos: i64) -> (Date, Time) {
    let millis = time_nanos.div_euclid(1_000_000);
    let days = millis.div_euclid(86_400_000);
    let ms_of_day = millis.rem_euclid(86_400_000) as u32;
    let time = (
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000,
    );
    (civil_from_days(days), time)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> Date {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate;
    use crate::labels::LabelRegistry;
    use crate::profile::{CallFrame, Sample};
    use crate::test_support::labels;

    /// The cases lib/format.js's `labelsText` is held to as well (tests/report.test.js).
    #[test]
    fn label_text_follows_the_shared_cases() {
        let cases: Vec<(Vec<(String, String)>, String)> =
            serde_json::from_str(include_str!("../../tests/fixtures/label-text.json")).unwrap();
        let reg = LabelRegistry::new(100);
        for (pairs, text) in cases {
            let labels = if pairs.is_empty() {
                GroupLabels::Unlabeled
            } else {
                GroupLabels::Set(reg.intern(pairs).unwrap())
            };
            assert_eq!(labels_text(&labels), text);
        }
        let value = GroupLabels::Value {
            key: "route".into(),
            value: "/a\"b".into(),
        };
        assert_eq!(labels_text(&value), r#"route="/a\"b""#);
    }

    #[test]
    fn times_format_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        // 2024-02-29T23:59:59.999Z, a leap day.
        let t = 1_709_251_199_999i64 * 1_000_000;
        assert_eq!(rfc3339(t), "2024-02-29T23:59:59.999Z");
        assert_eq!(compact_time(t), "20240229T235959.999Z");
        assert_eq!(rfc3339(-1_000_000), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn rows_are_per_set_largest_first_with_unlabeled_and_overflow() {
        let reg = LabelRegistry::new(1);
        let leak = labels(&reg, &[("route", "/leak")]);
        let overflow = labels(&reg, &[("route", "/x")]);
        assert!(overflow.is_overflow());
        let mut p = Profile::new(1024);
        p.add_node(None, 1, CallFrame::default());
        let sample = |size, labels: Option<&std::sync::Arc<_>>| Sample {
            node_id: 1,
            size,
            count: 1,
            sample_id: 1,
            labels: labels.cloned(),
        };
        p.samples.push(sample(4096, Some(&leak)));
        p.samples.push(sample(4096, Some(&leak)));
        p.samples.push(sample(100, None));
        p.samples.push(sample(50, Some(&overflow)));
        p.unlabeled_external = 7;
        let text = render(
            &p,
            &SummaryInfo {
                reason: "signal SIGUSR2",
                pid: 42,
                time_nanos: 0,
                labeled: true,
            },
        );
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[0].ends_with("route=\"/leak\""), "{text}");
        assert!(rows[1].ends_with("(unlabeled)"), "{text}");
        assert!(rows[2].ends_with("heap_labels.overflow=\"true\""), "{text}");
        assert!(text.contains("# reason: signal SIGUSR2"));
        assert!(text.contains("# pid: 42"));
        assert!(text.contains("live samples: 4 (3 labeled)"));
        let leak_bytes = 2.0 * estimate::bytes(4096, 1, 1024);
        assert!(rows[0]
            .trim_start()
            .starts_with(&format!("{leak_bytes:.0}")));
        assert!(!text.contains("carry no labels"));
    }

    #[test]
    fn label_keys_and_values_reach_the_text_escaped() {
        let reg = LabelRegistry::new(10);
        let hostile = labels(
            &reg,
            &[
                ("k\u{1b}[31m", "v\nforged row\u{1b}]8;;x\u{7}"),
                ("bidi\u{202e}", "\u{9b}c\u{2028}"),
            ],
        );
        let text = labels_text(&GroupLabels::Set(hostile));
        assert!(!text.chars().any(is_unsafe), "{text:?}");
        assert_eq!(
            text,
            r#""bidi\u202e"="\u009bc\u2028", "k\u001b[31m"="v\nforged row\u001b]8;;x\u0007""#
        );
        let one = labels_text(&GroupLabels::Value {
            key: "t\u{1b}".into(),
            value: "\r".into(),
        });
        assert_eq!(one, r#""t\u001b"="\r""#);
    }

    #[test]
    fn unlabeled_runtimes_say_so() {
        let text = render(&Profile::new(512), &SummaryInfo::default());
        assert!(text.contains("carry no labels"));
    }
}
