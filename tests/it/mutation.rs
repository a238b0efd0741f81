//! Mutation test: every fixture and corpus file, damaged the ways captures arrive damaged,
//! through the `lockcast parse` binary (issue 8).
//!
//! Each input is parsed clean once, then each mutation is parsed strict and `--lenient` with
//! `-o DIR/out.json`. For every run:
//! - no panic (exit 101 or "panicked"), no hang (a run is killed after [`TIMEOUT`]);
//! - exit 0 with exactly `out.json` in DIR, or exit 3/4 with DIR empty (no output, no temp
//!   file) and a message naming the file; a malformed-line message is `path:LINE:COL: format:
//!   expected …` with LINE a line of the damaged file.
//!
//! When strict mode succeeds, lenient mode must give the same JSON and skip nothing. When
//! lenient mode succeeds, its skipped-line count S must explain every difference from the
//! clean parse. With D = the original lines the mutation removed or changed and I = the lines
//! it inserted (duplicates, lines of another format):
//! - perf lock tables (one row per line, `-v` stack lines after it): every clean row whose
//!   extent (its line and stack lines) holds no line of D and no insertion, and whose table
//!   header is not in D, is in the lenient output unchanged at its new line number; every
//!   lenient row on an untouched line is a clean row; and the clean rows on changed lines that
//!   are missing from the lenient output number at most S (a damaged row is skipped and
//!   counted, never dropped silently). A damaged header may lose its table (the table count
//!   printed differs), and a blank line inserted inside a table ends it there, as perf's own
//!   tables end: the rows lost that way are counted and printed, not failed.
//! - traces (ftrace, trace-cmd, perf script: `lock_stats` aggregated from paired waits): the
//!   number of waits (sum of `contended`) changes by at most S + |D| + |I|: each damaged,
//!   inserted or skipped line changes at most one begin/end event, hence one wait.
//! - CRLF line endings change nothing at all (D and I are empty).
//! - a gzip stream cut short is an error in both modes: exit 4, "gzip stream damaged or cut
//!   short", naming the file.
//!
//! The RNG is a seeded xorshift, so a failure names a (file, mutation, seed) that reproduces.
//! `LOCKCAST_MUTATION_ROUNDS` (default 1) repeats every mutation kind per file with new seeds;
//! `LOCKCAST_MUTATION_ONLY=PATH-PART` runs only the matching files (same seeds as in a full
//! run). Failing damaged inputs are kept in `target/tmp/mutation-failed/`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// Longest a single run may take (the largest input here parses in well under a second).
const TIMEOUT: Duration = Duration::from_secs(60);

/// Inputs larger than this are cut to their first lines up to this size: the multi-MB trace
/// captures would make the test minutes long without exercising anything the prefix does not.
const MAX_INPUT: usize = 256 * 1024;

/// xorshift64*: tiny, seeded, good enough to pick positions.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform-ish in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

struct Input {
    name: String,
    fmt: Fmt,
    text: Vec<u8>,
}

fn read_text(p: &Path) -> Vec<u8> {
    let raw = std::fs::read(p).unwrap();
    let mut text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .take(MAX_INPUT as u64 * 2)
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        raw
    };
    if text.len() > MAX_INPUT {
        let cut = text[..MAX_INPUT]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(MAX_INPUT, |i| i + 1);
        text.truncate(cut);
    }
    text
}

/// Every capture-text fixture and corpus file ([`capture_files`]) but `perf report` files (the
/// CLI does not tabulate them into `lock_stats`; the parser is fuzzed instead), the replay
/// fixtures' multi-MB `script-ns` dumps beyond the one kept (same shape, 12 copies), and the
/// fbatch, lazyfree, samples and replay-partial captures (added after this test; not mutated
/// yet; replay-partial's dump has the replay fixtures' shape), and the perf.data recordings and
/// their text (the binary files have their own mutation test below; their text has the replay
/// dump's shape).
fn inputs() -> Vec<Input> {
    capture_files()
        .into_iter()
        .filter(|c| {
            c.fmt != Fmt::PerfReport
                && c.fmt != Fmt::PerfData
                && !(c.path.starts_with("fixtures/replay/")
                    && c.path.contains("/script")
                    && c.path != "fixtures/replay/micro-16K-r1/script-ns.txt.gz")
                && ![
                    "fixtures/fbatch/",
                    "fixtures/lazyfree/",
                    "fixtures/replay-partial/",
                    "fixtures/samples/",
                    "fixtures/perfdata/",
                ]
                .iter()
                .any(|d| c.path.starts_with(d))
        })
        .map(|c| Input {
            text: read_text(&repo().join(&c.path)),
            name: c.path,
            fmt: c.fmt,
        })
        .collect()
}

/// A damaged document: each line is the original line `Some(i)` (0-based) unchanged, or `None`
/// for a line the mutation changed or inserted.
struct Doc {
    lines: Vec<(Option<usize>, Vec<u8>)>,
    final_newline: bool,
    crlf: bool,
}

impl Doc {
    fn parse(text: &[u8]) -> Self {
        let final_newline = text.ends_with(b"\n");
        let body = if final_newline {
            &text[..text.len() - 1]
        } else {
            text
        };
        let lines = if text.is_empty() {
            Vec::new()
        } else {
            body.split(|&b| b == b'\n')
                .enumerate()
                .map(|(i, l)| (Some(i), l.to_vec()))
                .collect()
        };
        Doc {
            lines,
            final_newline,
            crlf: false,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let eol: &[u8] = if self.crlf { b"\r\n" } else { b"\n" };
        let mut out = Vec::new();
        for (k, (_, l)) in self.lines.iter().enumerate() {
            out.extend_from_slice(l);
            if k + 1 < self.lines.len() || self.final_newline {
                out.extend_from_slice(eol);
            }
        }
        out
    }

    /// Original 0-based line → new 1-based line number.
    fn map(&self) -> BTreeMap<usize, u64> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(j, (o, _))| o.map(|i| (i, j as u64 + 1)))
            .collect()
    }
}

/// What a mutation did, in terms of the original lines.
struct Damage {
    /// Original lines (0-based) removed or changed.
    damaged: BTreeSet<usize>,
    /// Original lines (0-based) changed in place (a subset of `damaged`).
    changed: BTreeSet<usize>,
    /// Original line (0-based) after which a line was inserted (`usize::MAX`: before line 0).
    inserted_after: Vec<usize>,
    /// Original lines (0-based) after which a blank line now stands (inserted or changed).
    blank_after: Vec<usize>,
}

impl Damage {
    fn of(doc: &Doc, n_orig: usize) -> Self {
        let kept: BTreeSet<usize> = doc.lines.iter().filter_map(|(o, _)| *o).collect();
        let damaged: BTreeSet<usize> = (0..n_orig).filter(|i| !kept.contains(i)).collect();
        let mut inserted_after = Vec::new();
        let mut changed = BTreeSet::new();
        let mut last: Option<usize> = None;
        // A `None` line either replaces the next missing original line (changed in place) or
        // is an insertion.
        let mut next_orig = 0usize;
        let mut blank_after = Vec::new();
        for (o, text) in &doc.lines {
            if o.is_none() && text.iter().all(u8::is_ascii_whitespace) {
                blank_after.push(last.unwrap_or(usize::MAX));
            }
            match o {
                Some(i) => {
                    last = Some(*i);
                    next_orig = i + 1;
                }
                None => {
                    if damaged.contains(&next_orig) && !changed.contains(&next_orig) {
                        changed.insert(next_orig);
                        last = Some(next_orig);
                        next_orig += 1;
                    } else {
                        inserted_after.push(last.unwrap_or(usize::MAX));
                    }
                }
            }
        }
        Damage {
            damaged,
            changed,
            inserted_after,
            blank_after,
        }
    }

    fn touches(&self, from: usize, to: usize) -> bool {
        self.damaged.range(from..=to).next().is_some()
            || self
                .inserted_after
                .iter()
                .any(|&a| a != usize::MAX && a >= from && a <= to)
    }

    fn size(&self) -> u64 {
        (self.damaged.len() + self.inserted_after.len()) as u64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Truncate,
    DropLine,
    DupLine,
    FlipByte,
    Crlf,
    Nul,
    InvalidUtf8,
    GzipCut,
    Interleave,
}

const KINDS: [Kind; 9] = [
    Kind::Truncate,
    Kind::DropLine,
    Kind::DupLine,
    Kind::FlipByte,
    Kind::Crlf,
    Kind::Nul,
    Kind::InvalidUtf8,
    Kind::GzipCut,
    Kind::Interleave,
];

/// Apply `kind` to `input`; `other` is a file of another format (for interleaving).
/// Returns the bytes to write and the damaged document (None for the gzip cut).
fn mutate(kind: Kind, input: &Input, other: &Input, rng: &mut Rng) -> (Vec<u8>, Option<Doc>) {
    let mut doc = Doc::parse(&input.text);
    let n = doc.lines.len().max(1);
    match kind {
        Kind::Truncate => {
            let len = input.text.len();
            let p = 1 + rng.below(len.saturating_sub(1).max(1));
            let mut doc = Doc::parse(&input.text[..p.min(len)]);
            // The line cut in the middle is changed, not original.
            if !input.text[..p.min(len)].ends_with(b"\n") {
                if let Some(last) = doc.lines.last_mut() {
                    last.0 = None;
                }
            }
            return (doc.bytes(), Some(doc));
        }
        Kind::DropLine => {
            if !doc.lines.is_empty() {
                doc.lines.remove(rng.below(n));
            }
        }
        Kind::DupLine => {
            if !doc.lines.is_empty() {
                let i = rng.below(n);
                let copy = doc.lines[i].1.clone();
                doc.lines.insert(i + 1, (None, copy));
            }
        }
        Kind::FlipByte | Kind::Nul | Kind::InvalidUtf8 => {
            // A line with something on it (flipping a byte of an empty line would be an insert).
            let candidates: Vec<usize> = (0..doc.lines.len())
                .filter(|&i| !doc.lines[i].1.is_empty())
                .collect();
            if !candidates.is_empty() {
                let i = candidates[rng.below(candidates.len())];
                let line = &mut doc.lines[i];
                let pos = rng.below(line.1.len());
                match kind {
                    Kind::FlipByte => {
                        // Never a line ending: that would split the line, another mutation.
                        let old = line.1[pos];
                        let mut b = (rng.next() & 0xff) as u8;
                        while b == b'\n' || b == b'\r' || b == old {
                            b = b.wrapping_add(1);
                        }
                        line.1[pos] = b;
                    }
                    Kind::Nul => line.1.insert(pos, 0),
                    _ => {
                        let bad: [&[u8]; 4] = [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80"];
                        let b = bad[rng.below(bad.len())];
                        line.1.splice(pos..pos, b.iter().copied());
                    }
                }
                line.0 = None;
            }
        }
        Kind::Crlf => doc.crlf = true,
        Kind::GzipCut => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(&input.text).unwrap();
            let gz = gz.finish().unwrap();
            // Keep the 10-byte header (so the input is recognised as gzip), lose at least the
            // last byte of the 8-byte trailer.
            let cut = 10 + rng.below(gz.len() - 11);
            return (gz[..cut].to_vec(), None);
        }
        Kind::Interleave => {
            let theirs = Doc::parse(&other.text);
            for _ in 0..1 + rng.below(3) {
                if theirs.lines.is_empty() {
                    break;
                }
                let from = rng.below(theirs.lines.len());
                let count = 1 + rng.below(4);
                let at = rng.below(doc.lines.len() + 1);
                for (k, (_, l)) in theirs.lines.iter().skip(from).take(count).enumerate() {
                    doc.lines.insert(at + k, (None, l.clone()));
                }
            }
        }
    }
    (doc.bytes(), Some(doc))
}

struct Run {
    code: i32,
    stderr: String,
    json: Option<Value>,
}

/// Run `lockcast parse FILE --input-format F [--lenient] -o DIR/out.json` and check the contract
/// every run must keep: no panic, no hang, output present iff success.
fn run(file: &Path, fmt: Fmt, lenient: bool, what: &str, failures: &mut Vec<String>) -> Run {
    run_with(file, fmt, lenient, what, failures, &[], None)
}

/// [`run`] with more `parse` arguments and a `PERF_BUILDID_DIR`.
fn run_with(
    file: &Path,
    fmt: Fmt,
    lenient: bool,
    what: &str,
    failures: &mut Vec<String>,
    extra: &[&str],
    buildid_dir: Option<&Path>,
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockcast"));
    if let Some(b) = buildid_dir {
        cmd.env("PERF_BUILDID_DIR", b);
    }
    cmd.arg("parse")
        .arg(file)
        .args(["--input-format", fmt.arg()])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if lenient {
        cmd.arg("--lenient");
    }
    let mut child = cmd.spawn().unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr_pipe.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stderr = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    let mode = if lenient { "lenient" } else { "strict" };
    let Some(status) = status else {
        failures.push(format!("{what} ({mode}): hang, killed after {TIMEOUT:?}"));
        return Run {
            code: -1,
            stderr,
            json: None,
        };
    };
    let code = status.code().unwrap_or(-1);
    if code == 101 || stderr.contains("panicked") {
        failures.push(format!("{what} ({mode}): panic: {stderr}"));
    }
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut json = None;
    if code == 0 {
        if left != ["out.json"] {
            failures.push(format!(
                "{what} ({mode}): exit 0 but the directory holds {left:?}"
            ));
        } else {
            match serde_json::from_slice::<Value>(&std::fs::read(&out).unwrap()) {
                Ok(v) => json = Some(v),
                Err(e) => failures.push(format!("{what} ({mode}): unreadable JSON: {e}")),
            }
        }
    } else {
        if !left.is_empty() {
            failures.push(format!("{what} ({mode}): exit {code} left {left:?} behind"));
        }
        if code != 3 && code != 4 {
            failures.push(format!(
                "{what} ({mode}): exit {code}, want 3 or 4: {stderr}"
            ));
        }
        let path = file.to_string_lossy();
        if !stderr.starts_with(&format!("lockcast: {path}")) {
            failures.push(format!(
                "{what} ({mode}): error does not name the file: {stderr}"
            ));
        }
        let rest = stderr.strip_prefix(&format!("lockcast: {path}:"));
        if let Some(rest) = rest.filter(|r| r.starts_with(|c: char| c.is_ascii_digit())) {
            // `LINE:COL: format: expected …`
            let mut parts = rest.splitn(3, ':');
            let line = parts.next().and_then(|l| l.parse::<u64>().ok());
            let col = parts.next().and_then(|c| c.parse::<u64>().ok());
            let msg = parts.next().unwrap_or("");
            if line.is_none() || col.is_none() || !msg.contains("expected") {
                failures.push(format!(
                    "{what} ({mode}): malformed-line error without LINE:COL: … expected: {stderr}"
                ));
            }
        }
    }
    Run { code, stderr, json }
}

fn skipped(stderr: &str) -> u64 {
    stderr
        .split("skipped ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Rows of a `lock_stats` JSON array, without the columns a damaged input may change
/// legitimately (`source`: the temp path; `block`, `label`: table numbering and the prose line
/// above it; `line`: compared through the line map).
fn rows(v: &Value) -> Vec<(u64, Value)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let o = r.as_object_mut().unwrap();
            let line = o.remove("line").and_then(|l| l.as_u64()).unwrap();
            for k in ["source", "block", "label"] {
                o.remove(k);
            }
            (line, r)
        })
        .collect()
}

fn waits(v: &Value) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["contended"].as_u64().unwrap_or(0))
        .sum()
}

/// Table header lines (1-based) of a clean perf lock file, from `lockcast parse`'s summary.
fn header_lines(file: &Path) -> Vec<u64> {
    let o = lockcast(&[
        "parse",
        &file.to_string_lossy(),
        "--input-format",
        "perf-lock",
    ]);
    stdout(&o)
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?;
            let rest = rest.split_once(" line ")?.1;
            rest.split(':').next()?.parse().ok()
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    runs: u64,
    mutations: BTreeMap<Kind, u64>,
    strict_errors: u64,
    lenient_ok: u64,
    lenient_errors: u64,
    skipped_lines: u64,
    /// Rows lost because their table's header was damaged or a blank line ended it early.
    rows_lost_to_damaged_header: u64,
}

/// The clean parse of one input, which each of its mutations is compared with.
struct Clean {
    json: Value,
    /// Lines (1-based) of the perf lock table headers of the clean input; empty for traces.
    headers: Vec<u64>,
}

/// One mutation of one input.
struct Case<'a> {
    input: &'a Input,
    clean: &'a Clean,
    kind: Kind,
    /// `<file> <kind> seed <seed>`: what every failure of this case starts with.
    what: String,
}

/// Check one lenient perf lock result against the clean parse.
fn check_perf_lock(
    case: &Case,
    doc: &Doc,
    damage: &Damage,
    got: &[(u64, Value)],
    s: u64,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    let clean = rows(&case.clean.json);
    let headers = &case.clean.headers[..];
    let what = &case.what;
    let map = doc.map();
    let got_by_line: BTreeMap<u64, &Value> = got.iter().map(|(l, r)| (*l, r)).collect();
    let mut clean_by_orig: BTreeMap<usize, &Value> = BTreeMap::new();
    let mut lost_changed = 0u64;
    for (line, row) in &clean {
        let i = (*line - 1) as usize;
        clean_by_orig.insert(i, row);
        let header = headers.iter().rev().find(|&&h| h <= *line).copied();
        let header_damaged = header.is_some_and(|h| damage.damaged.contains(&((h - 1) as usize)));
        let stack = row["stack"].as_array().map_or(0, Vec::len);
        // perf's tables end at a blank line: one inserted between the header and this row
        // ends the table there, and the rows after it read as prose.
        let blank_above = header.is_some_and(|h| {
            damage
                .blank_after
                .iter()
                .any(|&a| a != usize::MAX && a + 1 >= h as usize && a < i)
        });
        if header_damaged || blank_above {
            if map.get(&i).and_then(|j| got_by_line.get(j)) != Some(&row) {
                tally.rows_lost_to_damaged_header += 1;
            }
            continue;
        }
        if damage.touches(i, i + stack) {
            if damage.changed.contains(&i) {
                lost_changed += 1;
            }
            continue;
        }
        let j = map[&i];
        match got_by_line.get(&j) {
            Some(r) if *r == row => {}
            Some(r) => failures.push(format!(
                "{what}: row at clean line {line} (now {j}) changed though its lines are intact: {row} -> {r}"
            )),
            None => failures.push(format!(
                "{what}: row at clean line {line} (now {j}) lost though its lines are intact (skipped {s}): {row}"
            )),
        }
    }
    // Lenient rows on changed lines stand for rows that were not lost.
    let mut on_changed = 0u64;
    for (j, row) in got {
        match doc.lines.get((*j - 1) as usize) {
            Some((Some(i), _)) => {
                if clean_by_orig.get(i) != Some(&row) {
                    let header_damaged = headers
                        .iter()
                        .any(|&h| damage.damaged.contains(&((h - 1) as usize)));
                    // A row whose own stack lines were damaged differs for that reason.
                    let stack = row["stack"].as_array().map_or(0, Vec::len);
                    let clean_stack = clean_by_orig
                        .get(i)
                        .and_then(|r| r["stack"].as_array())
                        .map_or(0, Vec::len);
                    if !header_damaged && !damage.touches(*i, i + stack.max(clean_stack)) {
                        failures.push(format!(
                            "{what}: row at line {j} (clean line {}) is not in the clean parse: {row}",
                            i + 1
                        ));
                    }
                }
            }
            Some((None, _)) => on_changed += 1,
            None => failures.push(format!(
                "{what}: row at line {j} beyond the end of the input"
            )),
        }
    }
    let lost = lost_changed.saturating_sub(on_changed);
    if lost > s {
        failures.push(format!(
            "{what}: {lost} row(s) on damaged lines lost but only {s} line(s) skipped"
        ));
    }
}

fn check_mutation(
    case: &Case,
    other: &Input,
    seed: u64,
    dir: &Path,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    let (input, kind, what) = (case.input, case.kind, case.what.as_str());
    let mut rng = Rng::new(seed);
    let (bytes, doc) = mutate(kind, input, other, &mut rng);
    let file = dir.join(format!("m-{seed}-{}", input.name.replace('/', "_")));
    std::fs::write(&file, &bytes).unwrap();
    let failures_before = failures.len();
    *tally.mutations.entry(kind).or_default() += 1;
    let strict = run(&file, input.fmt, false, what, failures);
    let lenient = run(&file, input.fmt, true, what, failures);
    tally.runs += 2;
    if kind == Kind::GzipCut {
        for (mode, r) in [("strict", &strict), ("lenient", &lenient)] {
            if r.code != 4 || !r.stderr.contains("gzip stream damaged or cut short") {
                failures.push(format!(
                    "{what} ({mode}): want exit 4 and \"gzip stream damaged or cut short\", got {}: {}",
                    r.code, r.stderr
                ));
            }
        }
    }
    if strict.code != 0 {
        tally.strict_errors += 1;
    }
    if strict.code > 0 {
        // The error names a line of the damaged input.
        let n_lines = bytes.split(|&b| b == b'\n').count() as u64;
        let path = file.to_string_lossy();
        if let Some(rest) = strict.stderr.strip_prefix(&format!("lockcast: {path}:")) {
            if let Some(l) = rest.split(':').next().and_then(|l| l.parse::<u64>().ok()) {
                if l == 0 || l > n_lines {
                    failures.push(format!(
                        "{what}: error at line {l} of a {n_lines}-line input"
                    ));
                }
            }
        }
    }
    check_results(case, doc, strict, lenient, tally, failures);
    if failures.len() > failures_before {
        // Keep the damaged input for a rerun by hand (`lockcast parse FILE --lenient`).
        let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mutation-failed");
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&file, keep.join(file.file_name().unwrap())).unwrap();
    }
}

fn check_results(
    case: &Case,
    doc: Option<Doc>,
    strict: Run,
    lenient: Run,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    let (input, clean, kind, what) = (case.input, &case.clean.json, case.kind, &case.what);
    let Some(got) = lenient.json else {
        tally.lenient_errors += 1;
        return;
    };
    tally.lenient_ok += 1;
    let s = skipped(&lenient.stderr);
    tally.skipped_lines += s;
    if let Some(strict_json) = &strict.json {
        if s != 0 || rows(strict_json) != rows(&got) {
            failures.push(format!(
                "{what}: strict succeeded but lenient differs (skipped {s})"
            ));
        }
    }
    let Some(doc) = doc else {
        failures.push(format!(
            "{what}: a gzip stream cut short was read without error"
        ));
        return;
    };
    let damage = Damage::of(&doc, Doc::parse(&input.text).lines.len());
    if kind == Kind::Crlf {
        if s != 0 || rows(&got) != rows(clean) {
            failures.push(format!("{what}: CRLF line endings changed the result"));
        }
        return;
    }
    match input.fmt {
        Fmt::PerfLock => check_perf_lock(case, &doc, &damage, &rows(&got), s, tally, failures),
        Fmt::Ftrace | Fmt::PerfScript | Fmt::PerfReport | Fmt::PerfData => {
            let (w0, w1) = (waits(clean), waits(&got));
            if w0.abs_diff(w1) > s + damage.size() {
                failures.push(format!(
                    "{what}: waits {w0} -> {w1}, more than skipped {s} + damaged {}",
                    damage.size()
                ));
            }
        }
    }
}

#[test]
fn mutation_damaged_inputs_error_or_explain_every_difference() {
    let rounds: u64 = std::env::var("LOCKCAST_MUTATION_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let mut inputs = inputs();
    assert!(inputs.len() > 150, "only {} inputs found", inputs.len());
    // Reproduce one file's failures: LOCKCAST_MUTATION_ONLY=part-of-its-path.
    if let Ok(only) = std::env::var("LOCKCAST_MUTATION_ONLY") {
        for (k, i) in inputs.iter_mut().enumerate() {
            if !i.name.contains(&only) {
                i.name = format!("(skipped {k}) {}", i.name);
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // Two workers: CI has two cores, and each run is a process start plus a small parse.
    let workers = 2;
    let results: Vec<(Tally, Vec<String>, u64)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let inputs = &inputs;
                let dir = dir.path();
                sc.spawn(move || {
                    let mut tally = Tally::default();
                    let mut failures = Vec::new();
                    let mut clean_inputs = 0u64;
                    for (k, input) in inputs.iter().enumerate().skip(w).step_by(workers) {
                        if input.name.starts_with("(skipped") {
                            continue;
                        }
                        let file = dir.join(format!("clean-{k}"));
                        std::fs::write(&file, &input.text).unwrap();
                        let what = format!("{} clean", input.name);
                        let clean = run(&file, input.fmt, false, &what, &mut failures);
                        tally.runs += 1;
                        // A file perf lock or the trace readers reject as a whole (e.g. a
                        // corpus file kept because it is broken) is mutated from its lenient
                        // reading instead.
                        let clean = match clean.json {
                            Some(j) => j,
                            None => {
                                let l = run(&file, input.fmt, true, &what, &mut failures);
                                tally.runs += 1;
                                match l.json {
                                    Some(j) if skipped(&l.stderr) == 0 => j,
                                    _ => continue,
                                }
                            }
                        };
                        clean_inputs += 1;
                        let clean = Clean {
                            json: clean,
                            headers: if input.fmt == Fmt::PerfLock {
                                header_lines(&file)
                            } else {
                                Vec::new()
                            },
                        };
                        let other = inputs
                            .iter()
                            .cycle()
                            .skip(k * 7 + 3)
                            .find(|o| o.fmt != input.fmt)
                            .unwrap();
                        for round in 0..rounds {
                            for (n, kind) in KINDS.iter().enumerate() {
                                let seed = (k as u64) << 20 | round << 8 | n as u64;
                                let case = Case {
                                    input,
                                    clean: &clean,
                                    kind: *kind,
                                    what: format!("{} {kind:?} seed {seed}", input.name),
                                };
                                check_mutation(&case, other, seed, dir, &mut tally, &mut failures);
                            }
                        }
                    }
                    (tally, failures, clean_inputs)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut total = Tally::default();
    let mut failures = Vec::new();
    let mut clean_inputs = 0;
    for (t, f, c) in results {
        total.runs += t.runs;
        for (k, n) in t.mutations {
            *total.mutations.entry(k).or_default() += n;
        }
        total.strict_errors += t.strict_errors;
        total.lenient_ok += t.lenient_ok;
        total.lenient_errors += t.lenient_errors;
        total.skipped_lines += t.skipped_lines;
        total.rows_lost_to_damaged_header += t.rows_lost_to_damaged_header;
        failures.extend(f);
        clean_inputs += c;
    }
    let n_mut: u64 = total.mutations.values().sum();
    println!(
        "mutation: {} inputs ({} usable clean), {n_mut} mutations {:?}, {} runs in {:.1?}",
        inputs.len(),
        clean_inputs,
        total.mutations,
        total.runs,
        started.elapsed()
    );
    println!(
        "mutation: strict errors {}, lenient ok {} (skipped {} lines), lenient errors {}, rows lost to a damaged header or an inserted blank line {}, failures {}",
        total.strict_errors,
        total.lenient_ok,
        total.skipped_lines,
        total.lenient_errors,
        total.rows_lost_to_damaged_header,
        failures.len()
    );
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mutation-failures.txt");
    std::fs::write(&log, failures.join("\n")).unwrap();
    println!("mutation: failures listed in {}", log.display());
    for f in failures.iter().take(40) {
        println!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "{} failure(s), first: {}",
        failures.len(),
        failures[0]
    );
}

/// How a perf.data arrives damaged: a copy cut short, bytes flipped in each part of the file
/// (header, attrs, a record's header, a record's body, the feature sections), a range zeroed.
#[derive(Debug, Clone, Copy)]
enum BinKind {
    Cut,
    FlipHeader,
    FlipAttrs,
    FlipRecordHeader,
    FlipRecordBody,
    FlipFeatures,
    ZeroRange,
}

const BIN_KINDS: &[BinKind] = &[
    BinKind::Cut,
    BinKind::FlipHeader,
    BinKind::FlipAttrs,
    BinKind::FlipRecordHeader,
    BinKind::FlipRecordBody,
    BinKind::FlipFeatures,
    BinKind::ZeroRange,
];

fn le64(b: &[u8], i: usize) -> usize {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap()) as usize
}

/// Record starts of the data section.
fn record_starts(b: &[u8]) -> Vec<usize> {
    let (off, end) = (le64(b, 40), le64(b, 40) + le64(b, 48));
    let mut v = Vec::new();
    let mut pos = off;
    while pos + 8 <= end {
        v.push(pos);
        let n = u16::from_le_bytes([b[pos + 6], b[pos + 7]]) as usize;
        if n < 8 {
            break;
        }
        pos += n;
    }
    v
}

fn mutate_bin(kind: BinKind, f: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = f.to_vec();
    let (attr, attr_len) = (le64(f, 24), le64(f, 32));
    let data_end = le64(f, 40) + le64(f, 48);
    let recs = record_starts(f);
    let flip = |b: &mut Vec<u8>, from: usize, len: usize, rng: &mut Rng| {
        let i = from + rng.below(len.max(1));
        b[i] ^= 1 << rng.below(8);
    };
    match kind {
        BinKind::Cut => b.truncate(16 + rng.below(f.len() - 17)),
        BinKind::FlipHeader => flip(&mut b, 8, 96, rng),
        BinKind::FlipAttrs => flip(&mut b, attr, attr_len, rng),
        BinKind::FlipRecordHeader => {
            let r = recs[rng.below(recs.len())];
            flip(&mut b, r, 8, rng)
        }
        BinKind::FlipRecordBody => {
            for _ in 0..8 {
                let r = recs[rng.below(recs.len())];
                let n = u16::from_le_bytes([f[r + 6], f[r + 7]]) as usize;
                flip(&mut b, r + 8, n - 8, rng)
            }
        }
        BinKind::FlipFeatures => flip(&mut b, data_end, f.len() - data_end, rng),
        BinKind::ZeroRange => {
            let at = le64(f, 40) + rng.below(data_end - le64(f, 40) - 4096);
            b[at..at + 4096].fill(0);
        }
    }
    b
}

/// perf.data recordings of `fixtures/perfdata/` (the ones up to ~1 MB: the multi-MB ones are
/// the same recipes), each damaged every way of [`BinKind`] with seeded positions, parsed with
/// `--table events`. Every run keeps the contract of [`run`] (no panic or hang, output iff
/// exit 0, an error naming the file); an exit 3 also names the byte offset; a cut copy is exit 3
/// strictly. Lenient mode runs on the cpu-clock recordings only (a tracepoint recording cut
/// before its formats would be decoded from the machine's tracefs): a cut copy is read with
/// exit 0 and said to be cut short, and where strict mode reads a damaged copy lenient mode
/// gives the same rows.
#[test]
fn mutation_damaged_perf_data_errors_or_says_what_it_lost() {
    let rounds: u64 = std::env::var("LOCKCAST_MUTATION_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let files: Vec<CaptureFile> = capture_files()
        .into_iter()
        .filter(|c| c.fmt == Fmt::PerfData)
        .collect();
    assert!(files.len() >= 7, "{} perf.data files", files.len());
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut runs = 0;
    let mut checked = 0;
    for (k, c) in files.iter().enumerate() {
        let mut f = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(repo().join(&c.path)).unwrap())
            .read_to_end(&mut f)
            .unwrap();
        if f.len() > 1_300_000 {
            continue;
        }
        checked += 1;
        let rec_dir = Path::new(&c.path)
            .parent()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let cache = perfdata_buildid_dir(&rec_dir);
        let samples_only = !repo().join(&rec_dir).join("contention.txt").exists()
            && !c.path.contains("khugepaged");
        for round in 0..rounds {
            for (n, kind) in BIN_KINDS.iter().enumerate() {
                let seed = (k as u64) << 20 | round << 8 | n as u64;
                let mut rng = Rng::new(seed);
                let bytes = mutate_bin(*kind, &f, &mut rng);
                let file = dir.path().join(format!("bin-{k}-{n}-{round}"));
                std::fs::write(&file, &bytes).unwrap();
                let what = format!("{} {kind:?} seed {seed}", c.path);
                let args = ["--table", "events"];
                let strict = run_with(
                    &file,
                    Fmt::PerfData,
                    false,
                    &what,
                    &mut failures,
                    &args,
                    Some(&cache),
                );
                runs += 1;
                if strict.code == 3 && !strict.stderr.contains("byte ") {
                    failures.push(format!(
                        "{what} (strict): exit 3 without a byte offset: {}",
                        strict.stderr
                    ));
                }
                if matches!(kind, BinKind::Cut) && strict.code != 3 {
                    failures.push(format!(
                        "{what} (strict): a cut copy read with exit {}: {}",
                        strict.code, strict.stderr
                    ));
                }
                if !samples_only {
                    continue;
                }
                let lenient = run_with(
                    &file,
                    Fmt::PerfData,
                    true,
                    &what,
                    &mut failures,
                    &args,
                    Some(&cache),
                );
                runs += 1;
                if matches!(kind, BinKind::Cut)
                    && (lenient.code != 0 || !lenient.stderr.contains("file cut short"))
                {
                    failures.push(format!(
                        "{what} (lenient): a cut copy: exit {}: {}",
                        lenient.code, lenient.stderr
                    ));
                }
                if let (Some(s), Some(l)) = (&strict.json, &lenient.json) {
                    if s != l {
                        failures.push(format!(
                            "{what}: strict and lenient read the same copy differently"
                        ));
                    }
                }
                if strict.code == 0 && lenient.code != 0 {
                    failures.push(format!(
                        "{what}: strict read it, lenient failed: {}",
                        lenient.stderr
                    ));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&cache);
    }
    println!(
        "mutation perf.data: {checked} files, {runs} runs, {} failure(s)",
        failures.len()
    );
    for f in failures.iter().take(20) {
        println!("FAIL {f}");
    }
    assert!(checked >= 4, "{checked} perf.data files small enough");
    assert!(
        failures.is_empty(),
        "{} failure(s), first: {}",
        failures.len(),
        failures[0]
    );
}
