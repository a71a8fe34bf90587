//! Dump files: a labeled pprof and its text summary written into an output directory.
//!
//! - Names: `heap-labels-<time>-<pid>-<seq>[-<tag>].pb.gz` and the same stem with `.txt`, where
//!   `<time>` is [`compact_time`](crate::summary::compact_time) (UTC, sorts chronologically), `<seq>`
//!   a per-process counter (two dumps in one millisecond) and `<tag>` says why when it is not an
//!   ordinary request (`oom` for near-heap-limit dumps).
//! - All or nothing: both files are written in full under hidden temporary names in the same
//!   directory before either is renamed into place, so a full disk (or any write error) leaves no
//!   file of the dump behind, and a reader never sees half a file. The summary is renamed first and
//!   the pprof last: a `.pb.gz` file means the dump is complete (a failed last rename takes the
//!   summary back out).
//! - Retention: [`prune`] keeps the newest `keep` complete dumps of the directory (by the time in
//!   the name, whatever the pid) and removes the files of older ones; a summary without its pprof
//!   (a process killed between the two renames) is not a dump: it is removed once older than the
//!   oldest kept dump. Files that do not follow the naming are never touched. A dump's retainers
//!   (`<stem>.retainers.json`, written after it by the agent when its option `retainers` is on:
//!   lib/agent.js) go with the dump, and are kept or removed as its summary is.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::summary::compact_time;

/// Prefix of every dump file name.
pub const PREFIX: &str = "heap-labels-";
/// Extension of the pprof file.
pub const PPROF_EXT: &str = ".pb.gz";
/// Extension of the summary file.
pub const SUMMARY_EXT: &str = ".txt";
/// Extension of a dump's retainers (lib/agent.js writes them; only retention knows them here).
pub const RETAINERS_EXT: &str = ".retainers.json";

/// The stem (name without extension) of a dump.
pub fn stem(time_nanos: i64, pid: u32, seq: u32, tag: Option<&str>) -> String {
    let mut stem = format!("{PREFIX}{}-{pid}-{seq}", compact_time(time_nanos));
    if let Some(tag) = tag {
        stem.push('-');
        stem.push_str(tag);
    }
    stem
}

/// Where a dump was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpPaths {
    pub pprof: PathBuf,
    pub summary: PathBuf,
}

/// Writes `<dir>/<stem>.txt` and `<dir>/<stem>.pb.gz`: both or neither.
pub fn write(dir: &Path, stem: &str, pprof: &[u8], summary: &str) -> io::Result<DumpPaths> {
    let summary_name = format!("{stem}{SUMMARY_EXT}");
    let pprof_name = format!("{stem}{PPROF_EXT}");
    let summary_tmp = write_temporary(dir, &summary_name, summary.as_bytes())?;
    let pprof_tmp = match write_temporary(dir, &pprof_name, pprof) {
        Ok(path) => path,
        Err(err) => {
            let _ = fs::remove_file(&summary_tmp);
            return Err(err);
        }
    };
    let summary_path = dir.join(&summary_name);
    let pprof_path = dir.join(&pprof_name);
    if let Err(err) = fs::rename(&summary_tmp, &summary_path) {
        let _ = fs::remove_file(&summary_tmp);
        let _ = fs::remove_file(&pprof_tmp);
        return Err(err);
    }
    if let Err(err) = fs::rename(&pprof_tmp, &pprof_path) {
        let _ = fs::remove_file(&pprof_tmp);
        let _ = fs::remove_file(&summary_path);
        return Err(err);
    }
    Ok(DumpPaths {
        pprof: pprof_path,
        summary: summary_path,
    })
}

/// Writes `bytes` to `<dir>/<name>` atomically (a temporary file renamed into place).
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let temporary = write_temporary(dir, name, bytes)?;
    let target = dir.join(name);
    if let Err(err) = fs::rename(&temporary, &target) {
        let _ = fs::remove_file(&temporary);
        return Err(err);
    }
    Ok(target)
}

/// Writes `bytes` in full to `<dir>/.<name>.<pid>.tmp`; on error nothing is left behind.
fn write_temporary(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.flush()
    });
    match written {
        Ok(()) => Ok(temporary),
        Err(err) => {
            let _ = fs::remove_file(&temporary);
            Err(err)
        }
    }
}

/// The sort key of a dump stem: (time, pid, seq, rest), or `None` for names that are not dumps.
fn dump_key(stem: &str) -> Option<(&str, u64, u64, &str)> {
    let rest = stem.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(4, '-');
    let time = parts.next()?;
    let well_formed_time = time.len() == 20
        && time.ends_with('Z')
        && time
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'T' || b == b'.' || b == b'Z');
    if !well_formed_time {
        return None;
    }
    let pid = parts.next()?.parse().ok()?;
    let seq = parts.next()?.parse().ok()?;
    Some((time, pid, seq, parts.next().unwrap_or("")))
}

/// Removes all but the newest `keep` complete dumps in `dir` (and summaries or retainers without
/// their pprof older than the oldest kept dump); returns the files removed. Files that are not named like
/// dumps stay. A file that vanished meanwhile (another process pruning) is no error.
pub fn prune(dir: &Path, keep: usize) -> io::Result<Vec<PathBuf>> {
    let mut complete: Vec<String> = Vec::new();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let (stem, is_pprof) = match name.strip_suffix(PPROF_EXT) {
            Some(stem) => (stem, true),
            None => match name
                .strip_suffix(SUMMARY_EXT)
                .or_else(|| name.strip_suffix(RETAINERS_EXT))
            {
                Some(stem) => (stem, false),
                None => continue,
            },
        };
        if dump_key(stem).is_none() {
            continue;
        }
        if is_pprof {
            complete.push(stem.to_owned());
        }
        files.push((stem.to_owned(), entry.path()));
    }
    if complete.len() <= keep {
        return Ok(Vec::new());
    }
    complete.sort_by(|a, b| dump_key(b).cmp(&dump_key(a))); // newest first
    let kept = &complete[..keep];
    let oldest_kept = kept.last();
    let mut removed = Vec::new();
    for (stem, path) in files {
        let old = match oldest_kept {
            Some(oldest) => dump_key(&stem) < dump_key(oldest),
            None => true,
        };
        if old && !kept.contains(&stem) {
            match fs::remove_file(&path) {
                Ok(()) => removed.push(path),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("heap-labels-dump-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn stems_sort_by_time_then_pid_then_seq() {
        let t = 1_700_000_000_000_000_000i64;
        assert_eq!(stem(t, 7, 1, None), "heap-labels-20231114T221320.000Z-7-1");
        assert_eq!(
            stem(t, 7, 2, Some("oom")),
            "heap-labels-20231114T221320.000Z-7-2-oom"
        );
        let a = stem(t, 10, 1, None);
        let b = stem(t, 9, 2, None);
        let c = stem(t + 1_000_000, 1, 1, None);
        assert!(dump_key(&a) > dump_key(&b));
        assert!(dump_key(&c) > dump_key(&a));
        assert_eq!(dump_key("heap-labels-notatime-1-1"), None);
        assert_eq!(dump_key("other-20231114T221320.000Z-7-1"), None);
    }

    #[test]
    fn writes_both_files_atomically_and_keeps_the_newest() {
        let dir = tmpdir("keep");
        fs::write(dir.join("unrelated.txt"), "x").unwrap();
        fs::write(dir.join("heap-labels-garbage.pb.gz"), "x").unwrap();
        let base = 1_700_000_000_000_000_000i64;
        let mut written = Vec::new();
        for i in 0..5 {
            let s = stem(base + i * 1_000_000, 1, i as u32, None);
            let paths = write(&dir, &s, b"pprof", "summary").unwrap();
            assert_eq!(fs::read(&paths.pprof).unwrap(), b"pprof");
            assert_eq!(fs::read_to_string(&paths.summary).unwrap(), "summary");
            written.push(paths);
        }
        let removed = prune(&dir, 2).unwrap();
        assert_eq!(removed.len(), 6);
        for paths in &written[..3] {
            assert!(!paths.pprof.exists() && !paths.summary.exists());
        }
        for paths in &written[3..] {
            assert!(paths.pprof.exists() && paths.summary.exists());
        }
        assert!(dir.join("unrelated.txt").exists());
        assert!(dir.join("heap-labels-garbage.pb.gz").exists());
        // No temporary file is left behind.
        let hidden = fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count();
        assert_eq!(hidden, 0);
        assert!(prune(&dir, 2).unwrap().is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failed_write_leaves_no_file_of_the_dump() {
        let dir = tmpdir("nothing");
        let t = 1_700_000_000_000_000_000i64;
        // The pprof's temporary file cannot be created (a directory holds its name): the summary,
        // already written, goes too.
        let s = stem(t, 1, 1, None);
        let blocker = dir.join(format!(".{s}{PPROF_EXT}.{}.tmp", std::process::id()));
        fs::create_dir(&blocker).unwrap();
        assert!(write(&dir, &s, b"pprof", "summary").is_err());
        fs::remove_dir(&blocker).unwrap();
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
        // The pprof cannot be renamed into place (a non-empty directory holds its name): the
        // summary, already renamed, is taken back out.
        let s = stem(t, 1, 2, None);
        let blocker = dir.join(format!("{s}{PPROF_EXT}"));
        fs::create_dir_all(blocker.join("x")).unwrap();
        assert!(write(&dir, &s, b"pprof", "summary").is_err());
        fs::remove_dir_all(&blocker).unwrap();
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_summary_without_its_pprof_is_not_a_dump_for_retention() {
        let dir = tmpdir("orphans");
        let t = 1_700_000_000_000_000_000i64;
        let at = |i: i64| stem(t + i * 1_000_000, 1, i as u32, None);
        // An orphan summary older than every dump, one between them, one newer.
        for i in [0, 2, 9] {
            fs::write(dir.join(format!("{}{SUMMARY_EXT}", at(i))), "orphan").unwrap();
        }
        for i in [1, 3, 4] {
            write(&dir, &at(i), b"pprof", "summary").unwrap();
        }
        let removed = prune(&dir, 2).unwrap();
        // Kept: dumps 3 and 4 (complete), and the orphan newer than the oldest kept (9: a dump
        // being written). Gone: dump 1 and the orphans 0 and 2.
        assert_eq!(removed.len(), 4, "{removed:?}");
        let mut expected = Vec::new();
        for i in [3, 4] {
            expected.push(format!("{}{PPROF_EXT}", at(i)));
            expected.push(format!("{}{SUMMARY_EXT}", at(i)));
        }
        expected.push(format!("{}{SUMMARY_EXT}", at(9)));
        expected.sort();
        assert_eq!(names(&dir), expected);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_dumps_retainers_go_with_it() {
        let dir = tmpdir("retainers");
        let t = 1_700_000_000_000_000_000i64;
        let at = |i: i64| stem(t + i * 1_000_000, 1, i as u32, None);
        for i in 0..3 {
            write(&dir, &at(i), b"pprof", "summary").unwrap();
            fs::write(dir.join(format!("{}{RETAINERS_EXT}", at(i))), "{}").unwrap();
        }
        fs::write(dir.join("retainers.json"), "{}").unwrap();
        let removed = prune(&dir, 2).unwrap();
        assert_eq!(removed.len(), 3, "{removed:?}");
        let mut expected = vec!["retainers.json".to_owned()];
        for i in [1, 2] {
            for ext in [PPROF_EXT, SUMMARY_EXT, RETAINERS_EXT] {
                expected.push(format!("{}{ext}", at(i)));
            }
        }
        expected.sort();
        assert_eq!(names(&dir), expected);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        let dir = std::env::temp_dir().join("heap-labels-dump-missing/none");
        assert!(write(&dir, "heap-labels-x", b"", "").is_err());
        assert!(prune(&dir, 1).is_err());
    }
}
