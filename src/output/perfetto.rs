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

use polars::prelude::DataFrame;
use serde_json::{Map, Value};

use crate::error::Result;
use crate::frames::schema::contention as c;
use crate::frames::{i64s, strs, u32s};
use crate::whatif::des::Grant;
use crate::whatif::reconstruct::{Reconstruction, Side};
use crate::whatif::trace::{Kind, Trace};

/// A span of time on a track.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Name shown on the slice.
    pub name: String,
    /// Category (`hold`, `wait`).
    pub cat: &'static str,
    /// Start, ns.
    pub ts_ns: i64,
    /// Length, ns (≥ 0).
    pub dur_ns: i64,
    /// Shown in the viewer's details pane.
    pub args: Map<String, Value>,
}

/// A point in time on a track.
#[derive(Debug, Clone, PartialEq)]
pub struct Instant {
    /// Event name (`kmem:mm_page_alloc`).
    pub name: &'static str,
    /// When, ns.
    pub ts_ns: i64,
    /// Payload.
    pub args: Map<String, Value>,
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

/// Integer ns as the format's µs with three fractional digits: `1234567` → `1234.567`.
pub fn micros(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
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

fn args(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    pairs
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.to_string(), v))
        .collect()
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
    let mut holds: BTreeMap<u32, Vec<Slice>> = BTreeMap::new();
    for h in &rec.holds {
        let side = match h.side {
            Side::Add => "add",
            Side::Free => "free",
            // measured: where the hold was placed (nothing inside it is traced)
            Side::Lazyfree => "lazyfree",
        };
        holds.entry(h.cpu).or_default().push(Slice {
            name: format!("lru_lock {side}: {} folios", h.folios),
            cat: "hold",
            ts_ns: h.first_ts,
            dur_ns: (h.last_ts - h.first_ts).max(0),
            args: args([
                ("side", side.into()),
                ("folios", h.folios.into()),
                ("pages", h.pages.into()),
                ("path", h.via.as_str().into()),
                ("lock", rec.lock_name.clone().into()),
                (
                    "traced_wait_ns",
                    h.traced
                        .get()
                        .map(|(b, e)| e - b)
                        .map_or(Value::Null, Value::from),
                ),
            ]),
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
        let lock_name = lock[i].clone().unwrap_or_default();
        let is_lru = lock_name == rec.lock_name;
        wait_slices.entry(cpu[i]).or_default().push(Slice {
            name: format!(
                "wait {}{}",
                caller[i].as_deref().unwrap_or(&lock_name),
                if is_lru { " (lru_lock)" } else { "" }
            ),
            cat: "wait",
            ts_ns: b,
            dur_ns: (e - b).max(0),
            args: args([
                ("lock", lock_name.into()),
                ("type", ty[i].clone().map_or(Value::Null, Value::from)),
                ("caller", caller[i].clone().map_or(Value::Null, Value::from)),
                ("tid", tid[i].map_or(Value::Null, Value::from)),
                ("comm", comm[i].clone().map_or(Value::Null, Value::from)),
            ]),
        });
    }
    let mut tasks: BTreeMap<i32, Vec<Instant>> = BTreeMap::new();
    for e in &t.events {
        let (name, a) = match e.kind {
            Kind::Alloc { pfn, order } => (
                "kmem:mm_page_alloc",
                args([("pfn", pfn.into()), ("order", order.into())]),
            ),
            Kind::Insert { pfn, .. } => ("pagemap:mm_lru_insertion", args([("pfn", pfn.into())])),
            Kind::Free { pfn, order } => (
                "kmem:mm_page_free",
                args([("pfn", pfn.into()), ("order", order.into())]),
            ),
            Kind::Discard { enter } => (
                if enter {
                    "discard enter (madvise/munmap)"
                } else {
                    "discard exit (madvise/munmap)"
                },
                Map::new(),
            ),
            Kind::Lazyfree { enter } => (
                if enter {
                    "lazyfree enter (madvise MADV_FREE)"
                } else {
                    "lazyfree exit (madvise MADV_FREE)"
                },
                Map::new(),
            ),
            // Waits are slices, from the contention table.
            Kind::Begin { .. } | Kind::End { .. } => continue,
        };
        let mut a = a;
        a.insert("cpu".into(), e.cpu.into());
        tasks.entry(e.tid).or_default().push(Instant {
            name,
            ts_ns: e.ts,
            args: a,
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
    let mut holds: BTreeMap<u32, Vec<Slice>> = BTreeMap::new();
    let mut waits: BTreeMap<u32, Vec<Slice>> = BTreeMap::new();
    for g in grants {
        let cpu = cpus.get(g.cpu).copied().unwrap_or(g.cpu as u32);
        let r = &g.request;
        let side = match r.side {
            Side::Add => "add",
            Side::Free => "free",
            // measured: where the hold was placed (nothing inside it is traced)
            Side::Lazyfree => "lazyfree",
        };
        holds.entry(cpu).or_default().push(Slice {
            name: format!("lru_lock {side}: {} folios", r.folios),
            cat: "hold",
            ts_ns: g.grant,
            dur_ns: g.hold.max(0),
            args: args([
                ("side", side.into()),
                ("folios", r.folios.into()),
                ("path", r.via.as_str().into()),
                ("lock", lock_name.into()),
            ]),
        });
        if g.grant > g.arrive {
            waits.entry(cpu).or_default().push(Slice {
                name: if g.traced {
                    "wait (lru_lock)".into()
                } else {
                    "wait (lru_lock, untraced)".into()
                },
                cat: "wait",
                ts_ns: g.arrive,
                dur_ns: g.grant - g.arrive,
                args: args([
                    ("lock", lock_name.into()),
                    ("traced", g.traced.into()),
                    ("path", r.via.as_str().into()),
                ]),
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
            match s.cat {
                "hold" => n.holds += 1,
                _ => n.waits += 1,
            }
        }
    }
    n
}

/// Write `procs` as one JSON object `{"traceEvents": [...], "displayTimeUnit": "ns"}`: first
/// the process and thread names (metadata events), then every slice and instant.
pub fn write(w: &mut dyn Write, procs: &[Process]) -> io::Result<()> {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    w.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let mut first = true;
    let mut sep = |w: &mut dyn Write| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            w.write_all(b",\n")?;
        }
        Ok(())
    };
    for (pi, p) in procs.iter().enumerate() {
        let pid = pi + 1;
        sep(w)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"name\":\"process_name\",\"args\":{{\"name\":{}}}}}",
            q(&p.name)
        )?;
        sep(w)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{pid}}}}}"
        )?;
        for (ti, t) in p.tracks.iter().enumerate() {
            let tid = ti + 1;
            sep(w)?;
            write!(
                w,
                "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":{}}}}}",
                q(&t.name)
            )?;
            sep(w)?;
            write!(
                w,
                "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{tid}}}}}"
            )?;
        }
    }
    for (pi, p) in procs.iter().enumerate() {
        let pid = pi + 1;
        for (ti, t) in p.tracks.iter().enumerate() {
            let tid = ti + 1;
            for s in &t.slices {
                sep(w)?;
                write!(
                    w,
                    "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"{}\",\"args\":{}}}",
                    micros(s.ts_ns),
                    micros(s.dur_ns),
                    q(&s.name),
                    s.cat,
                    Value::Object(s.args.clone())
                )?;
            }
            for i in &t.instants {
                sep(w)?;
                write!(
                    w,
                    "{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"name\":{},\"cat\":\"event\",\"args\":{}}}",
                    micros(i.ts_ns),
                    q(i.name),
                    Value::Object(i.args.clone())
                )?;
            }
        }
    }
    w.write_all(b"\n]}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ts: i64, dur: i64) -> Slice {
        Slice {
            name: String::new(),
            cat: "wait",
            ts_ns: ts,
            dur_ns: dur,
            args: Map::new(),
        }
    }

    #[test]
    fn micros_keep_every_ns() {
        assert_eq!(micros(114_368_504_523), "114368504.523");
        assert_eq!(micros(7), "0.007");
        assert_eq!(micros(0), "0.000");
        assert_eq!(micros(-1500), "-1.500");
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
