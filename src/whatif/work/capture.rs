//! Files of a work-what-if capture directory (`fixtures/capture-lazyfree.sh`):
//! `meta.txt` and `workload.txt` (`key=value` lines), `vmstat-before.txt` /
//! `vmstat-after.txt` (`/proc/vmstat`), and `perf script --ns` text (`samples.txt[.gz]` with
//! call chains, `events.txt[.gz]` with tracepoints) or, in its place, the recording itself
//! (`perf.data[.gz]`, as `capture-lazyfree.sh --keep-perfdata` keeps it). Any of them may be
//! gzip or zstd.

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
/// else the recording it was printed from, `DIR/perf.data` (or `.gz` / `.zst`); either is read
/// by [`perf_events`], which detects the format from the bytes.
pub fn trace_file(dir: &str, name: &str) -> Result<String> {
    file(dir, name).or_else(|e| file(dir, "perf.data").map_err(|_| e))
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
        return Err(Error::Input(format!("{path}: no perf script events")));
    }
    Ok(out)
}
