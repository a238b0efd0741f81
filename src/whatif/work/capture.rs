//! Files of a work-what-if capture directory (`fixtures/capture-lazyfree.sh`):
//! `meta.txt` and `workload.txt` (`key=value` lines), `vmstat-before.txt` /
//! `vmstat-after.txt` (`/proc/vmstat`), and `perf script --ns` text (`samples.txt[.gz]` with
//! call chains, `events.txt[.gz]` with tracepoints) or, in its place, the recording itself
//! (`perf.data[.gz]`, as `capture-lazyfree.sh --keep-perfdata` keeps it), or raw ftrace /
//! `trace-cmd report` text (`trace.txt`, `trace-cmd-report.txt`, as
//! `fixtures/capture-khugepaged-trace.sh` writes them). Any of them may be gzip or zstd. A
//! single trace file may stand for the directory ([`WorkInput`]). Events are read through
//! [`crate::capture::open`], so every event format lockcast reads works here.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use lockcast_parsers::event::Event;
use lockcast_parsers::payload;

use crate::error::{Error, Result};
use crate::input;

/// `DIR/NAME`, or `DIR/NAME.gz` / `.zst` when only a compressed copy exists.
pub fn file(dir: &str, name: &str) -> Result<String> {
    for ext in ["", ".gz", ".zst"] {
        let p = Path::new(dir).join(format!("{name}{ext}"));
        if p.is_file() {
            return Ok(p.to_string_lossy().into_owned());
        }
    }
    Err(Error::Input(format!(
        "{dir}: no {name} (a capture directory written by fixtures/capture-lazyfree.sh; \
         see `lockcast whatif --help`)"
    )))
}

/// The event trace of a capture directory: `DIR/NAME` (the `perf script` text) when present,
/// else the recording it was printed from, `DIR/perf.data` (or `.gz` / `.zst`), else the raw
/// ftrace text or `trace-cmd report` that fixtures/capture-khugepaged-trace.sh writes
/// (`trace.txt`, `trace-cmd-report.txt`); each is read by [`perf_events`], which detects the
/// format from the bytes.
pub fn trace_file(dir: &str, name: &str) -> Result<String> {
    file(dir, name).or_else(|e| {
        ["perf.data", "trace.txt", "trace-cmd-report.txt"]
            .iter()
            .find_map(|n| file(dir, n).ok())
            .ok_or(e)
    })
}

/// What a work what-if reads: a capture directory, or one event trace in any format lockcast
/// reads (perf script, raw ftrace, trace-cmd report, perf.data; gzip/zstd), whose side files
/// (`meta.txt`, `workload.txt`, `vmstat-*.txt`) are taken from its directory when they are
/// there. What neither gives comes from `--set` (each policy says which keys).
#[derive(Debug, Clone)]
pub struct WorkInput {
    /// As given on the command line.
    pub given: String,
    /// Where the side files are looked for.
    dir: String,
    /// The event trace when a file was given.
    trace: Option<String>,
}

impl WorkInput {
    /// `capture` as a directory or a trace file; neither is an error naming the path.
    pub fn new(capture: &str) -> Result<Self> {
        let p = Path::new(capture);
        if p.is_dir() {
            return Ok(WorkInput {
                given: capture.into(),
                dir: capture.into(),
                trace: None,
            });
        }
        if !p.is_file() {
            return Err(Error::Input(format!(
                "{capture}: no such capture directory or trace file"
            )));
        }
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_string_lossy().into_owned(),
            _ => ".".into(),
        };
        Ok(WorkInput {
            given: capture.into(),
            dir,
            trace: Some(capture.into()),
        })
    }

    /// The event trace: the file given, or the directory's `NAME` ([`trace_file`]).
    pub fn trace(&self, name: &str) -> Result<String> {
        match &self.trace {
            Some(t) => Ok(t.clone()),
            None => trace_file(&self.dir, name),
        }
    }

    /// A side file (`DIR/NAME` or its compressed copy), `None` when there is none.
    pub fn side(&self, name: &str) -> Option<String> {
        file(&self.dir, name).ok()
    }

    /// A side `key=value` file, read; `None` when there is none.
    pub fn kv(&self, name: &str) -> Result<Option<KvFile>> {
        match self.side(name) {
            Some(path) => Ok(Some(KvFile {
                pairs: kv_file(&path)?,
                path,
            })),
            None => Ok(None),
        }
    }

    /// A side file that must be there: the error says where it was looked for.
    pub fn need(&self, name: &str) -> Result<String> {
        file(&self.dir, name)
    }

    /// The directory the side files are read from.
    pub fn dir(&self) -> &str {
        &self.dir
    }
}

fn lines(path: &str) -> Result<Vec<String>> {
    let r = input::open(path)?;
    r.lines()
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::io(path, e))
}

/// All `key=value` pairs of a file, first occurrence of a key wins (lines of `workload.txt`
/// that repeat keys, such as per-interval samples, are read with [`kv_lines`]).
pub fn kv_file(path: &str) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for l in lines(path)? {
        // meta lines hold one pair whose value may contain spaces and '='
        // (`record=perf record ... -e x`); split at the first '='
        if let Some((k, v)) = l.split_once('=') {
            if !k.contains(' ') {
                m.entry(k.to_string()).or_insert_with(|| v.to_string());
            }
        }
    }
    Ok(m)
}

/// Every line of a file as its `key=value` pairs, with its 1-based line number.
pub fn kv_lines(path: &str) -> Result<Vec<(u64, BTreeMap<String, String>)>> {
    Ok(lines(path)?
        .iter()
        .enumerate()
        .map(|(i, l)| {
            (
                i as u64 + 1,
                payload::kv_line(l)
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        })
        .collect())
}

/// A `key=value` file of a capture directory (`meta.txt`, `workload.txt`), with its path for
/// messages.
pub struct KvFile {
    /// Where it was read from.
    pub path: String,
    /// Its pairs (first occurrence of a key wins).
    pub pairs: BTreeMap<String, String>,
}

impl KvFile {
    /// `DIR/NAME` (or its `.gz` / `.zst`), read.
    pub fn open(dir: &str, name: &str) -> Result<Self> {
        let path = file(dir, name)?;
        let pairs = kv_file(&path)?;
        Ok(KvFile { path, pairs })
    }

    /// A required integer; the error names the file and the key.
    pub fn int(&self, key: &str) -> Result<i64> {
        int(&self.pairs, key, &self.path)
    }
}

/// A required integer from a `key=value` map.
pub fn int(m: &BTreeMap<String, String>, key: &str, path: &str) -> Result<i64> {
    let v = m
        .get(key)
        .ok_or_else(|| Error::Input(format!("{path}: no {key}= line")))?;
    v.trim()
        .parse()
        .map_err(|_| Error::Input(format!("{path}: {key}={v}: expected an integer")))
}

/// `/proc/vmstat` snapshot.
pub fn vmstat(path: &str) -> Result<BTreeMap<String, u64>> {
    let mut m = BTreeMap::new();
    for (i, l) in lines(path)?.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let (k, v) = payload::vmstat_line(l)
            .map_err(|e| Error::Input(format!("{path}:{}:1: /proc/vmstat: {e}", i + 1)))?;
        m.insert(k.to_string(), v);
    }
    Ok(m)
}

/// after − before for every counter in both snapshots of `dir`.
pub fn vmstat_delta(dir: &str) -> Result<BTreeMap<String, i64>> {
    let b = vmstat(&file(dir, "vmstat-before.txt")?)?;
    let a = vmstat(&file(dir, "vmstat-after.txt")?)?;
    Ok(a.iter()
        .filter_map(|(k, av)| b.get(k).map(|bv| (k.clone(), *av as i64 - *bv as i64)))
        .collect())
}

/// Every event of an event trace (strict: a malformed line is an error naming it).
pub fn perf_events(path: &str) -> Result<Vec<Event>> {
    let spec = input::InputSpec {
        path: path.to_string(),
        block: None,
    };
    let mut rd = crate::capture::open(&spec, &Default::default())?.events("a work what-if")?;
    let mut out = Vec::new();
    while let Some(e) = rd.next_event().map_err(|e| Error::parse(path, e))? {
        out.push(e);
    }
    if out.is_empty() {
        return Err(Error::Input(format!("{path}: no events")));
    }
    Ok(out)
}
