//! Golden files: what the binary prints and writes for every capture in the repository, kept
//! in `tests/golden/` and compared byte for byte.
//!
//! For every capture-text file of `fixtures/` and `tests/corpus/` ([`capture_files`]):
//! - `tests/golden/<input>/<table>.csv`: each table of `lockcast parse INPUT --table all -o DIR
//!   --to csv`; a CSV over [`MAX_CSV`] bytes is kept as its header and first [`HEAD_ROWS`] rows,
//!   then `... N rows in all, sha256 HEX` (HEX of the whole CSV), so it still pins every byte.
//!   The tables with no rows (most typed tables of most traces) are one file,
//!   `tests/golden/<input>/empty-tables.txt`: a line `<table>.csv: <CSV header>` each;
//! - `tests/golden/<input>/parse.txt`: that run's stdout (tables and row counts, trace pairing
//!   counts), then its exit status and stderr (`OUT` for the output directory). Where the
//!   strict parse rejects the input (exit 3: a corpus file kept because it is malformed), the
//!   same again with `--lenient` under `tests/golden/<input>/lenient/`;
//! - `tests/golden/<input>/report.txt`: `lockcast report INPUT` as printed; where report
//!   refuses the input (perf report text has no `lock_stats`: exit 3) its exit status and
//!   stderr instead;
//! - `tests/golden/diff/<name>.txt`: `lockcast diff A B` for the before/after pairs in [`DIFFS`].
//!
//! The binary runs in the repository with repo-relative paths, so the paths printed in the
//! outputs do not depend on where the checkout is. A difference, a missing golden file and a
//! golden file no input produces any more all fail the test; a panic, or an exit status other
//! than 0, 3 (bad input) and 4 (I/O), fails it even when blessing. `LOCKCAST_BLESS=1 cargo test --test it golden`
//! rewrites the files (and removes stale ones); review the change with `git diff tests/golden`.
//! `LOCKCAST_GOLDEN_ONLY=PART` checks (or blesses) only the inputs and diffs whose path or name
//! contains PART, and skips the stale-file check: a quick loop while changing one format (the
//! whole run parses every trace fixture, the multi-MB `script-ns` dumps included).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::common::*;

/// CSVs larger than this are kept as a head and a hash (with 64 KiB the tree would be 4.3 MB,
/// with 32 KiB it is 3.5 MB: the traces' event tables are most of it).
const MAX_CSV: u64 = 32 * 1024;
/// Rows (after the header) kept of a CSV larger than [`MAX_CSV`].
const HEAD_ROWS: usize = 40;

const BLESS: &str = "LOCKCAST_BLESS=1 cargo test --test it golden";

/// `lockcast diff BASE PATCHED` pairs: (golden name, base, patched).
const DIFFS: &[(&str, &str, &str)] = &[
    // the RFC v3 cover letter's two w/o-w/ pairs
    (
        "seed-rfc-v3-1-vs-2",
        "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt#1",
        "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt#2",
    ),
    (
        "seed-rfc-v3-3-vs-4",
        "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt#3",
        "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt#4",
    ),
    // 16K vs 4K mTHP: perf lock contention (caller mode) and perf lock report (name mode)
    (
        "captures-micro-16K-r1-vs-4K-r1-contention",
        "fixtures/captures/micro-16K-r1/contention.txt",
        "fixtures/captures/micro-4K-r1/contention.txt",
    ),
    (
        "captures-micro-16K-r1-vs-4K-r1-report",
        "fixtures/captures/micro-16K-r1/report.txt",
        "fixtures/captures/micro-4K-r1/report.txt",
    ),
    // event traces: waits paired from contention_begin/end
    (
        "replay-micro-16K-r1-vs-64K-r1-script-ns",
        "fixtures/replay/micro-16K-r1/script-ns.txt.gz",
        "fixtures/replay/micro-64K-r1/script-ns.txt.gz",
    ),
    // the same numbers printed before and after perf's units change (v5.18 ns, v5.20 units)
    (
        "corpus-report-v5.18-before-vs-v5.20-after",
        "tests/corpus/perf-lock/report-v5.18-before-units-ns.txt",
        "tests/corpus/perf-lock/report-v5.20-after-units.txt",
    ),
    // a patch's Before/After blocks in one mail (minutes, overflowing hours, a blank name)
    (
        "corpus-report-minutes-hours-before-vs-after",
        "tests/corpus/perf-lock/report-minutes-hours-blank-name.txt#1",
        "tests/corpus/perf-lock/report-minutes-hours-blank-name.txt#2",
    ),
];

/// Golden files checked (or written) by one worker, and what went wrong.
#[derive(Default)]
struct Tally {
    seen: BTreeSet<PathBuf>,
    failures: Vec<String>,
    written: usize,
    /// (seconds, input or diff name) per job, for the slowest ones in the summary
    times: Vec<(f64, String)>,
}

fn golden_root() -> PathBuf {
    repo().join("tests/golden")
}

/// Compare `actual` with the golden file `rel` (under `tests/golden/`), or write it when
/// blessing. `cmd` is the command that made it, for the failure message.
fn check(rel: &str, actual: &[u8], cmd: &str, bless: bool, t: &mut Tally) {
    let path = golden_root().join(rel);
    t.seen.insert(path.clone());
    let expected = std::fs::read(&path).ok();
    if expected.as_deref() == Some(actual) {
        return;
    }
    if bless {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        t.written += 1;
        return;
    }
    let Some(expected) = expected else {
        t.failures
            .push(format!("tests/golden/{rel}: missing (output of `{cmd}`)"));
        return;
    };
    t.failures.push(format!(
        "tests/golden/{rel}: differs from `{cmd}`\n{}",
        first_differences(&expected, actual)
    ));
}

/// The first lines where `expected` and `actual` differ, with their line numbers.
fn first_differences(expected: &[u8], actual: &[u8]) -> String {
    let e: Vec<&[u8]> = expected.split(|&b| b == b'\n').collect();
    let a: Vec<&[u8]> = actual.split(|&b| b == b'\n').collect();
    let mut out = String::new();
    let mut shown = 0;
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x == y {
            continue;
        }
        if shown == 3 {
            out.push_str("    ...\n");
            break;
        }
        let show = |l: Option<&&[u8]>| match l {
            Some(l) => format!("{:?}", String::from_utf8_lossy(l)),
            None => "(no line)".into(),
        };
        out.push_str(&format!(
            "    line {}:\n      golden: {}\n      now:    {}\n",
            i + 1,
            show(x),
            show(y)
        ));
        shown += 1;
    }
    out.push_str(&format!(
        "    (golden {} bytes, now {} bytes)",
        expected.len(),
        actual.len()
    ));
    out
}

/// A run's stdout as printed; then, when it failed or wrote to stderr, its exit status and
/// stderr (with `out_dir` written as `OUT`).
fn outcome(o: &Output, out_dir: Option<&Path>) -> Vec<u8> {
    let mut v = o.stdout.clone();
    let mut err = stderr(o);
    if let Some(d) = out_dir {
        err = err.replace(&*d.to_string_lossy(), "OUT");
    }
    if !o.status.success() || !err.is_empty() {
        let code = o
            .status
            .code()
            .map_or_else(|| "killed by a signal".to_string(), |c| c.to_string());
        v.extend_from_slice(format!("--- exit status {code}\n--- stderr\n{err}").as_bytes());
    }
    v
}

/// A run that panicked or failed internally is a bug, never a golden behaviour.
fn sane(o: &Output, cmd: &str, t: &mut Tally) -> bool {
    let code = o.status.code();
    if stderr(o).contains("panicked") || !matches!(code, Some(0 | 3 | 4)) {
        t.failures.push(format!(
            "`{cmd}`: exit {code:?}, not a golden behaviour:\n{}",
            stderr(o)
        ));
        return false;
    }
    true
}

/// The CSV as kept: whole up to [`MAX_CSV`] bytes; else its header and first [`HEAD_ROWS`]
/// records, then `... N rows in all, sha256 HEX`. Records end at newlines outside quotes (a
/// quoted field may hold a newline).
fn condensed_csv(path: &Path) -> Vec<u8> {
    let len = std::fs::metadata(path).unwrap().len();
    if len <= MAX_CSV {
        return std::fs::read(path).unwrap();
    }
    let mut f = std::fs::File::open(path).unwrap();
    let mut hash = Sha256::new();
    let mut head = Vec::new();
    let mut records = 0usize; // complete records, header included
    let mut in_quote = false;
    let mut head_done = false;
    let mut last = b'\n';
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        hash.update(chunk);
        let mut head_end = None;
        for i in memchr::memchr2_iter(b'"', b'\n', chunk) {
            if chunk[i] == b'"' {
                in_quote = !in_quote;
            } else if !in_quote {
                records += 1;
                if !head_done && head_end.is_none() && records == HEAD_ROWS + 1 {
                    head_end = Some(i + 1);
                }
            }
        }
        if !head_done {
            head.extend_from_slice(&chunk[..head_end.unwrap_or(n)]);
            head_done = head_end.is_some();
        }
        last = chunk[n - 1];
    }
    if last != b'\n' {
        records += 1;
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    head.extend_from_slice(
        format!(
            "... {} rows in all, sha256 {hex}\n",
            records.saturating_sub(1)
        )
        .as_bytes(),
    );
    head
}

/// The tables of `lockcast parse INPUT --table all -o DIR --to csv [--lenient]` and its
/// stdout, under `tests/golden/<prefix>/`; returns the exit status (None: not a sane run).
fn check_tables(
    c: &CaptureFile,
    lenient: bool,
    prefix: &str,
    bless: bool,
    t: &mut Tally,
) -> Option<i32> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tables");
    let out_s = out.to_string_lossy().into_owned();
    let mut args = vec![
        "parse", &c.path, "--table", "all", "-o", &out_s, "--to", "csv",
    ];
    if lenient {
        args.push("--lenient");
    }
    let cmd = format!("lockcast {}", args.join(" ").replace(&out_s, "DIR"));
    let o = run_input(c, &args);
    if !sane(&o, &cmd, t) {
        return None;
    }
    check(
        &format!("{prefix}/parse.txt"),
        &outcome(&o, Some(&out)),
        &cmd,
        bless,
        t,
    );
    let mut tables: Vec<PathBuf> = match std::fs::read_dir(&out) {
        Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    tables.sort();
    if o.status.success() == tables.is_empty() {
        t.failures.push(format!(
            "`{cmd}`: exit {:?} but {} table(s) written",
            o.status.code(),
            tables.len()
        ));
    }
    let mut empty = String::new();
    for p in tables {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".csv") {
            t.failures.push(format!("`{cmd}`: wrote {name}, not a CSV"));
            continue;
        }
        let csv = condensed_csv(&p);
        // a header line and nothing else: no rows
        if csv.ends_with(b"\n") && csv.iter().filter(|&&b| b == b'\n').count() == 1 {
            empty.push_str(&format!("{name}: {}", String::from_utf8_lossy(&csv)));
            continue;
        }
        check(&format!("{prefix}/{name}"), &csv, &cmd, bless, t);
    }
    if !empty.is_empty() {
        check(
            &format!("{prefix}/empty-tables.txt"),
            empty.as_bytes(),
            &cmd,
            bless,
            t,
        );
    }
    o.status.code()
}

/// lockcast on one input. A perf.data names its kernel frames from the kallsyms kept beside it
/// (a build-id cache made for the run, written `BUILDID_DIR` in stderr), never from the
/// machine's own ~/.debug or /proc/kallsyms.
fn run_input(c: &CaptureFile, args: &[&str]) -> Output {
    if c.fmt != Fmt::PerfData {
        return lockcast(args);
    }
    let dir = Path::new(&c.path)
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let cache = perfdata_buildid_dir(&dir);
    let mut o = std::process::Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(args)
        .current_dir(repo())
        .env("PERF_BUILDID_DIR", &cache)
        .output()
        .expect("run lockcast");
    o.stderr = stderr(&o)
        .replace(&*cache.to_string_lossy(), "BUILDID_DIR")
        .into_bytes();
    let _ = std::fs::remove_dir_all(&cache);
    o
}

/// Every golden file of one input: its tables (and, when the strict parse rejects the input,
/// what `--lenient` makes of it, under `lenient/`) and its report.
fn check_input(c: &CaptureFile, bless: bool, t: &mut Tally) {
    if check_tables(c, false, &c.path, bless, t) == Some(3) {
        check_tables(c, true, &format!("{}/lenient", c.path), bless, t);
    }
    let cmd = format!("lockcast report {}", c.path);
    let o = run_input(c, &["report", &c.path]);
    if sane(&o, &cmd, t) {
        check(
            &format!("{}/report.txt", c.path),
            &outcome(&o, None),
            &cmd,
            bless,
            t,
        );
    }
}

fn check_diff(name: &str, a: &str, b: &str, bless: bool, t: &mut Tally) {
    let cmd = format!("lockcast diff {a} {b}");
    let o = lockcast(&["diff", a, b]);
    if !o.status.success() {
        t.failures.push(format!(
            "`{cmd}`: exit {:?}\n{}",
            o.status.code(),
            stderr(&o)
        ));
        return;
    }
    check(
        &format!("diff/{name}.txt"),
        &outcome(&o, None),
        &cmd,
        bless,
        t,
    );
}

fn golden_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            golden_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Remove empty directories under `dir` (after stale files went).
fn prune(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                prune(&p);
                let _ = std::fs::remove_dir(&p); // fails when not empty: kept
            }
        }
    }
}

#[test]
fn golden() {
    let bless = std::env::var("LOCKCAST_BLESS").is_ok_and(|v| v == "1");
    let started = Instant::now();
    let only = std::env::var("LOCKCAST_GOLDEN_ONLY").ok();
    let mut inputs = capture_files();
    assert!(inputs.len() > 200, "only {} inputs found", inputs.len());
    let diffs: Vec<_> = DIFFS
        .iter()
        .filter(|(name, ..)| only.as_ref().is_none_or(|o| name.contains(o.as_str())))
        .collect();
    if let Some(o) = &only {
        inputs.retain(|c| c.path.contains(o.as_str()));
    }
    // largest first, so the two workers finish together
    inputs
        .sort_by_key(|c| std::cmp::Reverse(std::fs::metadata(repo().join(&c.path)).unwrap().len()));
    let next = AtomicUsize::new(0);
    let total = Mutex::new(Tally::default());
    // Two workers: CI has two cores, and each run is a process (the traces parse in it).
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                let mut t = Tally::default();
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let start = Instant::now();
                    let what = if let Some((name, a, b)) = diffs.get(k) {
                        check_diff(name, a, b, bless, &mut t);
                        format!("diff {name}")
                    } else if let Some(c) = inputs.get(k - diffs.len()) {
                        check_input(c, bless, &mut t);
                        c.path.clone()
                    } else {
                        break;
                    };
                    t.times.push((start.elapsed().as_secs_f64(), what));
                }
                let mut all = total.lock().unwrap();
                all.seen.extend(t.seen);
                all.failures.extend(t.failures);
                all.written += t.written;
                all.times.extend(t.times);
            });
        }
    });
    let mut t = total.into_inner().unwrap();
    let mut on_disk = Vec::new();
    if only.is_none() {
        golden_files(&golden_root(), &mut on_disk);
    }
    for p in on_disk {
        if t.seen.contains(&p) {
            continue;
        }
        let rel = p.strip_prefix(repo()).unwrap().display().to_string();
        if bless {
            std::fs::remove_file(&p).unwrap();
            t.written += 1;
        } else {
            t.failures.push(format!(
                "{rel}: stale: no input or diff produces it any more"
            ));
        }
    }
    if bless {
        prune(&golden_root());
    }
    t.failures.sort();
    t.times.sort_by(|a, b| b.0.total_cmp(&a.0));
    let slowest: Vec<String> = t
        .times
        .iter()
        .take(5)
        .map(|(s, w)| format!("{w} {s:.1}s"))
        .collect();
    println!("golden: slowest: {}", slowest.join(", "));
    println!(
        "golden: {} inputs, {} diffs, {} golden files, {} written or removed, {} failure(s) in {:.1?}",
        inputs.len(),
        diffs.len(),
        t.seen.len(),
        t.written,
        t.failures.len(),
        started.elapsed()
    );
    for f in t.failures.iter().take(20) {
        println!("FAIL {f}");
    }
    assert!(
        t.failures.is_empty(),
        "{} golden failure(s), first:\n{}\nIf the change is intended: {BLESS}, then review `git diff tests/golden`",
        t.failures.len(),
        t.failures[0]
    );
}
