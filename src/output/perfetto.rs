//! `lockcast export perfetto`: a capture as Chrome trace-event JSON (the "JSON Array/Object
//! Format" of the Trace Event Format document, which ui.perfetto.dev and chrome://tracing
//! open).
//!
//! Layout: one process per timeline (the measured capture; a what-if replay would be a second
//! one). Per CPU a track of reconstructed `lru_lock` holds (complete events, `ph: "X"`, with
//! the folios of each hold) and a track of traced waits (with lock, type, caller, task); the
//! other replay events (`mm_page_alloc`, `mm_lru_insertion`, `mm_page_free`, discarding
//! syscalls) are instants (`ph: "i"`) on a track per task, named by the task's `comm`
//! (`thread_name` metadata). A viewer draws slices of one track nested by time, so slices
//! that would overlap on a track are put on a second lane (`CPU 0 waits (2)`).
//!
//! `ts` and `dur` are microseconds in the format; lockcast writes them from integer ns as
//! decimals with three fractional digits (`114368504.523`), so no ns is lost to float
//! rounding on the way out.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;

use polars::prelude::DataFrame;

use crate::error::Result;
use crate::frames::schema::contention as c;
use crate::frames::{i64s, strs, u32s};
use crate::whatif::des::Grant;
use crate::whatif::reconstruct::{Reconstruction, Side};
use crate::whatif::trace::{Kind, Trace, Via};

/// A span of time on a track.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Start, ns.
    pub ts_ns: i64,
    /// Length, ns (≥ 0).
    pub dur_ns: i64,
    /// What it shows: its name, category and args follow from it.
    pub what: What,
}

/// What a slice stands for. Typed, not a JSON map per slice: a 2 M-event recording has
/// ~6×10^5 holds, and a map of args each (owned keys and values) made the export's peak
/// memory ~1 KB per event (2.1 GB for a 195 MB perf.data).
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// An `lru_lock` hold (`hold`): its side, folios, the LRU path; reconstructed from the
    /// capture, also its pages and the traced wait before it when its holder waited; granted
    /// by the what-if replay, neither (`None`).
    Hold {
        side: Side,
        folios: u32,
        pages: Option<u64>,
        path: Via,
        lock: Arc<str>,
        traced_wait_ns: Option<i64>,
    },
    /// A traced wait of the `contention` table (`wait`): boxed, as such waits are few beside
    /// the holds and their strings would make every slice larger.
    Wait(Box<Wait>),
    /// A wait of the what-if replay (`wait`), traced or not under its observation rule.
    Queued {
        lock: Arc<str>,
        traced: bool,
        path: Via,
    },
}

/// A traced wait of the `contention` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Wait {
    /// Lock address or name.
    pub lock: String,
    /// Lock type.
    pub ty: Option<String>,
    /// Caller (the slice's name when there is one).
    pub caller: Option<String>,
    /// Waiting task.
    pub tid: Option<i64>,
    /// Its command name.
    pub comm: Option<String>,
    /// The wait is for the lock taken as `lru_lock`.
    pub lru: bool,
}

impl What {
    /// The category: `hold` or `wait`.
    pub fn cat(&self) -> &'static str {
        match self {
            What::Hold { .. } => "hold",
            What::Wait(_) | What::Queued { .. } => "wait",
        }
    }
}

/// A point in time on a task's track: one of the trace's other events (the replay's `Kind`,
/// never a wait) on `cpu`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instant {
    /// When, ns.
    pub ts_ns: i64,
    /// CPU it ran on.
    pub cpu: u32,
    /// The event.
    pub kind: Kind,
}

/// One track (a "thread" of the format): its name, slices and instants.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Track {
    /// Shown as the thread name.
    pub name: String,
    /// Slices, in time order, none overlapping another.
    pub slices: Vec<Slice>,
    /// Instants, in time order.
    pub instants: Vec<Instant>,
}

/// One process: a timeline.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Process {
    /// Shown as the process name.
    pub name: String,
    /// Its tracks, in display order.
    pub tracks: Vec<Track>,
}

/// What went into an export, for the command's summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Hold slices.
    pub holds: usize,
    /// Wait slices.
    pub waits: usize,
    /// Instants.
    pub instants: usize,
    /// Tracks.
    pub tracks: usize,
}

/// Integer ns as the format's µs with three fractional digits, appended to `out`:
/// `1234567` → `1234.567` (no ns lost to float rounding).
fn micros(out: &mut Vec<u8>, ns: i64) {
    if ns < 0 {
        out.push(b'-');
    }
    let a = ns.unsigned_abs();
    out.extend_from_slice(itoa::Buffer::new().format(a / 1000).as_bytes());
    let f = a % 1000;
    let digit = |d: u64| b'0' + d as u8;
    out.extend_from_slice(&[b'.', digit(f / 100), digit(f / 10 % 10), digit(f % 10)]);
}

/// Split slices (sorted by start) into lanes where none overlaps the one before it: each
/// slice goes to the first lane whose last slice ended at or before its start.
pub fn lanes(mut slices: Vec<Slice>) -> Vec<Vec<Slice>> {
    slices.sort_by_key(|s| (s.ts_ns, s.dur_ns));
    let mut out: Vec<Vec<Slice>> = Vec::new();
    for s in slices {
        let free = out.iter().position(|l| {
            l.last()
                .is_none_or(|p: &Slice| p.ts_ns + p.dur_ns <= s.ts_ns)
        });
        match free {
            Some(i) => out[i].push(s),
            None => out.push(vec![s]),
        }
    }
    out
}

fn push_lanes(tracks: &mut Vec<Track>, name: &str, slices: Vec<Slice>) {
    for (i, lane) in lanes(slices).into_iter().enumerate() {
        tracks.push(Track {
            name: if i == 0 {
                name.to_string()
            } else {
                format!("{name} ({})", i + 1)
            },
            slices: lane,
            instants: Vec::new(),
        });
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Add => "add",
        Side::Free => "free",
        // measured: where the hold was placed (nothing inside it is traced)
        Side::Lazyfree => "lazyfree",
    }
}

/// The measured timeline of a capture: the replay's reconstructed `lru_lock` holds
/// ([`Reconstruction::holds`]), the traced waits of the `contention` table (every lock, as
/// `report` counts them) and the trace's other events; `comms` names the tasks (tid → comm),
/// the waits' own comm where it lacks one.
pub fn measured(
    name: &str,
    t: &Trace,
    rec: &Reconstruction,
    waits: &DataFrame,
    comms: &BTreeMap<i32, String>,
) -> Result<Process> {
    let lock_name: Arc<str> = Arc::from(rec.lock_name.as_str());
    let mut holds: BTreeMap<u32, Vec<Slice>> = BTreeMap::new();
    for h in &rec.holds {
        holds.entry(h.cpu).or_default().push(Slice {
            ts_ns: h.first_ts,
            dur_ns: (h.last_ts - h.first_ts).max(0),
            what: What::Hold {
                side: h.side,
                folios: h.folios,
                pages: Some(h.pages),
                path: h.via,
                lock: Arc::clone(&lock_name),
                traced_wait_ns: h.traced.get().map(|(b, e)| e - b),
            },
        });
    }
    let cpu = u32s(waits, c::CPU)?;
    let tid = i64s(waits, c::TID)?;
    let comm = strs(waits, c::COMM)?;
    let lock = strs(waits, c::LOCK)?;
    let ty = strs(waits, c::TYPE)?;
    let caller = strs(waits, c::CALLER)?;
    let begin = i64s(waits, c::BEGIN_NS)?;
    let end = i64s(waits, c::END_NS)?;
    let mut wait_slices: BTreeMap<Option<u32>, Vec<Slice>> = BTreeMap::new();
    let mut names: BTreeMap<i64, String> = comms
        .iter()
        .map(|(k, v)| (i64::from(*k), v.clone()))
        .collect();
    for i in 0..waits.height() {
        let (Some(b), Some(e)) = (begin[i], end[i]) else {
            continue;
        };
        if let (Some(t), Some(n)) = (tid[i], &comm[i]) {
            names.entry(t).or_insert_with(|| n.clone());
        }
        let lock = lock[i].clone().unwrap_or_default();
        let lru = lock == rec.lock_name;
        wait_slices.entry(cpu[i]).or_default().push(Slice {
            ts_ns: b,
            dur_ns: (e - b).max(0),
            what: What::Wait(Box::new(Wait {
                lock,
                ty: ty[i].clone(),
                caller: caller[i].clone(),
                tid: tid[i],
                comm: comm[i].clone(),
                lru,
            })),
        });
    }
    let mut tasks: BTreeMap<i32, Vec<Instant>> = BTreeMap::new();
    for e in &t.events {
        // Waits are slices, from the contention table.
        if matches!(e.kind, Kind::Begin { .. } | Kind::End { .. }) {
            continue;
        }
        tasks.entry(e.tid).or_default().push(Instant {
            ts_ns: e.ts,
            cpu: e.cpu,
            kind: e.kind,
        });
    }
    let cpus: std::collections::BTreeSet<u32> = holds
        .keys()
        .copied()
        .chain(wait_slices.keys().flatten().copied())
        .collect();
    let mut tracks = Vec::new();
    for cpu in cpus {
        push_lanes(
            &mut tracks,
            &format!("CPU {cpu} lru_lock holds"),
            holds.remove(&cpu).unwrap_or_default(),
        );
        push_lanes(
            &mut tracks,
            &format!("CPU {cpu} waits"),
            wait_slices.remove(&Some(cpu)).unwrap_or_default(),
        );
    }
    if let Some(w) = wait_slices.remove(&None) {
        push_lanes(&mut tracks, "waits (CPU not printed)", w);
    }
    for (tid, instants) in tasks {
        let comm = names
            .get(&i64::from(tid))
            .cloned()
            .unwrap_or_else(|| "task".into());
        tracks.push(Track {
            name: format!("{comm} {tid}"),
            slices: Vec::new(),
            instants,
        });
    }
    Ok(Process {
        name: name.to_string(),
        tracks,
    })
}

/// A what-if replay as a timeline: per CPU the holds the replay granted (grant to release)
/// and the waits (arrival to grant) of requests that found the lock taken, traced or not
/// under the observation rule (`traced` in the args; only traced ones count in the totals,
/// as in `perf lock contention`). `cpus[i]` is the CPU of stream `i`.
pub fn predicted(name: &str, cpus: &[u32], grants: &[Grant], lock_name: &str) -> Process {
    let lock: Arc<str> = Arc::from(lock_name);
    let mut holds: BTreeMap<u32, Vec<Slice>> = BTreeMap::new();
    let mut waits: BTreeMap<u32, Vec<Slice>> = BTreeMap::new();
    for g in grants {
        let cpu = cpus.get(g.cpu).copied().unwrap_or(g.cpu as u32);
        let r = &g.request;
        holds.entry(cpu).or_default().push(Slice {
            ts_ns: g.grant,
            dur_ns: g.hold.max(0),
            what: What::Hold {
                side: r.side,
                folios: r.folios,
                pages: None,
                path: r.via,
                lock: Arc::clone(&lock),
                traced_wait_ns: None,
            },
        });
        if g.grant > g.arrive {
            waits.entry(cpu).or_default().push(Slice {
                ts_ns: g.arrive,
                dur_ns: g.grant - g.arrive,
                what: What::Queued {
                    lock: Arc::clone(&lock),
                    traced: g.traced,
                    path: r.via,
                },
            });
        }
    }
    let mut tracks = Vec::new();
    let all: std::collections::BTreeSet<u32> = holds.keys().chain(waits.keys()).copied().collect();
    for cpu in all {
        push_lanes(
            &mut tracks,
            &format!("CPU {cpu} lru_lock holds"),
            holds.remove(&cpu).unwrap_or_default(),
        );
        push_lanes(
            &mut tracks,
            &format!("CPU {cpu} waits"),
            waits.remove(&cpu).unwrap_or_default(),
        );
    }
    Process {
        name: name.to_string(),
        tracks,
    }
}

/// How many slices of each category and instants `procs` hold.
pub fn counts(procs: &[Process]) -> Counts {
    let mut n = Counts::default();
    for t in procs.iter().flat_map(|p| &p.tracks) {
        n.tracks += 1;
        n.instants += t.instants.len();
        for s in &t.slices {
            match s.what {
                What::Hold { .. } => n.holds += 1,
                What::Wait(_) | What::Queued { .. } => n.waits += 1,
            }
        }
    }
    n
}

/// The JSON text, built in a byte buffer that goes to the writer a block at a time. A 2 M-event
/// recording's file is 404 MB of ~10^8 small pieces; written with `write!` into a `dyn Write`,
/// each piece cost a formatter call and a dynamic dispatch, and the formatting machinery
/// (`core::fmt::write`, its `Write` adapter, integer `Display`, padding) was ~20% of the
/// export's CPU time in a profile of that recording.
struct Out<'w> {
    w: &'w mut dyn Write,
    buf: Vec<u8>,
}

/// What the buffer holds before it is written out.
const BLOCK: usize = 1 << 20;

impl<'w> Out<'w> {
    fn new(w: &'w mut dyn Write) -> Self {
        Out {
            w,
            buf: Vec::with_capacity(BLOCK + (BLOCK >> 4)),
        }
    }

    fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    fn int<I: itoa::Integer>(&mut self, v: I) {
        self.raw(itoa::Buffer::new().format(v).as_bytes());
    }

    fn micros(&mut self, ns: i64) {
        micros(&mut self.buf, ns);
    }

    /// A JSON string, escaped as `serde_json` escapes (control characters, `"` and `\`; the
    /// rest of UTF-8 as it is).
    fn str(&mut self, s: &str) {
        if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            // into a Vec: cannot fail
            let _ = serde_json::to_writer(&mut self.buf, s);
        } else {
            self.buf.push(b'"');
            self.raw(s.as_bytes());
            self.buf.push(b'"');
        }
    }

    /// After each event: write the buffer out once it holds a block.
    fn event_done(&mut self) -> io::Result<()> {
        if self.buf.len() >= BLOCK {
            self.w.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        self.w.write_all(&self.buf)
    }
}

/// The `"key":value` pairs of one event's `args` object, in order, `,`-separated.
struct Args<'o, 'w> {
    o: &'o mut Out<'w>,
    first: bool,
}

impl<'o, 'w> Args<'o, 'w> {
    /// After an event's name: its category, then the opening of its `args`.
    fn open(o: &'o mut Out<'w>, cat: &str) -> Self {
        o.raw(b",\"cat\":\"");
        o.raw(cat.as_bytes());
        o.raw(b"\",\"args\":{");
        Args { o, first: true }
    }
    fn key(&mut self, k: &str) -> &mut Out<'w> {
        if !std::mem::take(&mut self.first) {
            self.o.raw(b",");
        }
        self.o.raw(b"\"");
        self.o.raw(k.as_bytes());
        self.o.raw(b"\":");
        self.o
    }
    fn str(&mut self, k: &str, v: &str) {
        self.key(k).str(v);
    }
    fn opt_str(&mut self, k: &str, v: Option<&str>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }
    fn int<I: itoa::Integer>(&mut self, k: &str, v: I) {
        self.key(k).int(v);
    }
    fn close(self) {
        self.o.raw(b"}");
    }
}

/// A slice's name and args (`args` keys in the order the viewer lists them).
fn write_slice(o: &mut Out, what: &What) {
    let cat = what.cat();
    match what {
        What::Hold {
            side,
            folios,
            pages,
            path,
            lock,
            traced_wait_ns,
        } => {
            // nothing to escape: a fixed word and a number
            let side = side_name(*side);
            o.raw(b"\"lru_lock ");
            o.raw(side.as_bytes());
            o.raw(b": ");
            o.int(*folios);
            o.raw(b" folios\"");
            let mut a = Args::open(o, cat);
            a.str("side", side);
            a.int("folios", *folios);
            if let Some(p) = pages {
                a.int("pages", *p);
            }
            a.str("path", path.as_str());
            a.str("lock", lock);
            if let Some(t) = traced_wait_ns {
                a.int("traced_wait_ns", *t);
            }
            a.close();
        }
        What::Wait(wait) => {
            let Wait {
                lock,
                ty,
                caller,
                tid,
                comm,
                lru,
            } = wait.as_ref();
            let on = caller.as_deref().unwrap_or(lock);
            o.str(&format!(
                "wait {on}{}",
                if *lru { " (lru_lock)" } else { "" }
            ));
            let mut a = Args::open(o, cat);
            a.str("lock", lock);
            a.opt_str("type", ty.as_deref());
            a.opt_str("caller", caller.as_deref());
            if let Some(t) = tid {
                a.int("tid", *t);
            }
            a.opt_str("comm", comm.as_deref());
            a.close();
        }
        What::Queued { lock, traced, path } => {
            o.str(match traced {
                true => "wait (lru_lock)",
                false => "wait (lru_lock, untraced)",
            });
            let mut a = Args::open(o, cat);
            a.str("lock", lock);
            a.key("traced")
                .raw(if *traced { b"true" } else { b"false" });
            a.str("path", path.as_str());
            a.close();
        }
    }
}

/// An instant's name and args: the event's fields, then its CPU.
fn write_instant(o: &mut Out, i: &Instant) {
    let (name, pfn, order) = match i.kind {
        Kind::Alloc { pfn, order } => ("kmem:mm_page_alloc", Some(pfn), Some(order)),
        Kind::Insert { pfn, .. } => ("pagemap:mm_lru_insertion", Some(pfn), None),
        Kind::Free { pfn, order } => ("kmem:mm_page_free", Some(pfn), Some(order)),
        Kind::Discard { enter: true } => ("discard enter (madvise/munmap)", None, None),
        Kind::Discard { enter: false } => ("discard exit (madvise/munmap)", None, None),
        Kind::Lazyfree { enter: true } => ("lazyfree enter (madvise MADV_FREE)", None, None),
        Kind::Lazyfree { enter: false } => ("lazyfree exit (madvise MADV_FREE)", None, None),
        // never made into instants (`measured` leaves them out)
        Kind::Begin { .. } | Kind::End { .. } => ("", None, None),
    };
    o.str(name);
    let mut a = Args::open(o, "event");
    if let Some(p) = pfn {
        a.int("pfn", p);
    }
    if let Some(n) = order {
        a.int("order", n);
    }
    a.int("cpu", i.cpu);
    a.close();
}

/// Write `procs` as one JSON object `{"traceEvents": [...], "displayTimeUnit": "ns"}`: first
/// the process and thread names (metadata events), then every slice and instant.
pub fn write(w: &mut dyn Write, procs: &[Process]) -> io::Result<()> {
    let mut o = Out::new(w);
    o.raw(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut first = true;
    let mut sep = |o: &mut Out| {
        if !std::mem::take(&mut first) {
            o.raw(b",\n");
        }
    };
    // `{"ph":PH,"pid":P,"tid":T` (PH as given, with what goes before `pid`)
    let event = |o: &mut Out, ph: &[u8], pid: usize, tid: usize| {
        o.raw(b"{\"ph\":");
        o.raw(ph);
        o.raw(b",\"pid\":");
        o.int(pid);
        o.raw(b",\"tid\":");
        o.int(tid);
    };
    // `{"ph":"M","pid":P,"tid":T,"name":"NAME","args":{"KEY":`
    let meta = |o: &mut Out, pid: usize, tid: usize, name: &str, key: &str| {
        event(o, b"\"M\"", pid, tid);
        o.raw(b",\"name\":\"");
        o.raw(name.as_bytes());
        o.raw(b"\",\"args\":{\"");
        o.raw(key.as_bytes());
        o.raw(b"\":");
    };
    for (pi, p) in procs.iter().enumerate() {
        let pid = pi + 1;
        sep(&mut o);
        meta(&mut o, pid, 0, "process_name", "name");
        o.str(&p.name);
        o.raw(b"}}");
        sep(&mut o);
        meta(&mut o, pid, 0, "process_sort_index", "sort_index");
        o.int(pid);
        o.raw(b"}}");
        for (ti, t) in p.tracks.iter().enumerate() {
            let tid = ti + 1;
            sep(&mut o);
            meta(&mut o, pid, tid, "thread_name", "name");
            o.str(&t.name);
            o.raw(b"}}");
            sep(&mut o);
            meta(&mut o, pid, tid, "thread_sort_index", "sort_index");
            o.int(tid);
            o.raw(b"}}");
        }
        o.event_done()?;
    }
    for (pi, p) in procs.iter().enumerate() {
        let pid = pi + 1;
        for (ti, t) in p.tracks.iter().enumerate() {
            let tid = ti + 1;
            for s in &t.slices {
                sep(&mut o);
                event(&mut o, b"\"X\"", pid, tid);
                o.raw(b",\"ts\":");
                o.micros(s.ts_ns);
                o.raw(b",\"dur\":");
                o.micros(s.dur_ns);
                o.raw(b",\"name\":");
                write_slice(&mut o, &s.what);
                o.raw(b"}");
                o.event_done()?;
            }
            for i in &t.instants {
                sep(&mut o);
                event(&mut o, b"\"i\",\"s\":\"t\"", pid, tid);
                o.raw(b",\"ts\":");
                o.micros(i.ts_ns);
                o.raw(b",\"name\":");
                write_instant(&mut o, i);
                o.raw(b"}");
                o.event_done()?;
            }
        }
    }
    o.raw(b"\n]}\n");
    o.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ts: i64, dur: i64) -> Slice {
        Slice {
            ts_ns: ts,
            dur_ns: dur,
            what: What::Queued {
                lock: Arc::from("l"),
                traced: true,
                path: Via::Drain,
            },
        }
    }

    #[test]
    fn micros_keep_every_ns() {
        let m = |ns| {
            let mut out = Vec::new();
            micros(&mut out, ns);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(m(114_368_504_523), "114368504.523");
        assert_eq!(m(7), "0.007");
        assert_eq!(m(0), "0.000");
        assert_eq!(m(-1500), "-1.500");
        assert_eq!(m(i64::MIN), "-9223372036854775.808");
        assert_eq!(m(i64::MAX), "9223372036854775.807");
    }

    /// Names are written as `serde_json` writes them: quotes, backslashes and control
    /// characters escaped, the rest of UTF-8 as it is; the text is one JSON object.
    #[test]
    fn names_are_escaped_as_serde_json_escapes_them() {
        let names = [
            "plain",
            "a \"quoted\" \\ name",
            "tab\tand\nnewline\u{1}",
            "größe ✓",
        ];
        let procs: Vec<Process> = names
            .iter()
            .map(|n| Process {
                name: n.to_string(),
                tracks: vec![Track {
                    name: format!("{n} 7"),
                    slices: vec![s(1_500, 2_000)],
                    instants: Vec::new(),
                }],
            })
            .collect();
        let mut out = Vec::new();
        write(&mut out, &procs).unwrap();
        let text = String::from_utf8(out).unwrap();
        for n in names {
            assert!(
                text.contains(&serde_json::to_string(n).unwrap()),
                "{n:?} in {text}"
            );
        }
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 4 * (2 + 2 + 1));
        let got: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "process_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(got, names);
        let slice = events.iter().find(|e| e["ph"] == "X").unwrap();
        assert_eq!(slice["ts"].as_f64(), Some(1.5));
        assert_eq!(slice["dur"].as_f64(), Some(2.0));
        assert_eq!(slice["args"]["traced"], true);
    }

    #[test]
    fn overlapping_slices_go_to_a_second_lane() {
        let l = lanes(vec![s(0, 10), s(5, 2), s(10, 1), s(8, 1)]);
        assert_eq!(l.len(), 2);
        assert_eq!(
            l[0].iter().map(|x| x.ts_ns).collect::<Vec<_>>(),
            vec![0, 10]
        );
        assert_eq!(l[1].iter().map(|x| x.ts_ns).collect::<Vec<_>>(), vec![5, 8]);
    }
}
