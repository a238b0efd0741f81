//! `lock:contention_begin` / `contention_end` events → the `contention` table: one interval per
//! traced wait, paired per (task, lock) as `perf lock contention` does (builtin-lock.c): a
//! nested begin keeps the first, an end without a begin is an orphan, a begin never ended is
//! unpaired. Every one of those is counted, none dropped silently.
//!
//! The pairing rule itself is [`OpenWaits`], shared with the what-if reconstruction
//! (`whatif::reconstruct`), which pairs the same events per CPU.

use std::collections::HashMap;
use std::hash::Hash;

use polars::prelude::*;

use lockcast_parsers::event::Event;
use lockcast_parsers::payload;

use super::schema::contention as c;
use crate::error::{Error, Result};

/// Frames perf skips before looking for the caller (`CONTENTION_STACK_SKIP` in perf 6.1's
/// builtin-lock.c: the slowpath, the lock wrapper and the lock helper).
pub const STACK_SKIP: usize = 3;

/// Lock-implementation functions perf treats as "lock text" when naming the caller.
fn is_lock_function(sym: &str) -> bool {
    let s = sym.split('+').next().unwrap_or(sym);
    s.starts_with("_raw_")
        || s.starts_with("__raw_")
        || s.contains("spin_lock")
        || s.starts_with("queued_")
        || s.starts_with("__pv_queued")
        || s.contains("mutex_lock")
        || s.starts_with("down_read")
        || s.starts_with("down_write")
        || s.starts_with("rwsem_down")
        || s.starts_with("percpu_down")
        // __sched_text: perf's machine__is_lock_function also covers the scheduler section
        || s == "schedule"
        || s.starts_with("schedule_")
        || s.starts_with("__schedule")
        || s.starts_with("preempt_schedule")
        || s.starts_with("io_schedule")
}

/// The caller perf would name for a call chain: skip [`STACK_SKIP`] frames, then lock text.
pub fn caller_of(stack: &[String]) -> Option<&str> {
    stack
        .iter()
        .skip(STACK_SKIP)
        .map(String::as_str)
        .find(|s| !is_lock_function(s))
}

/// perf's `get_type_str` from the tracepoint's flag names.
pub fn lock_type(flags: &str) -> &'static str {
    let has = |f: &str| flags.split('|').any(|x| x == f);
    match (
        has("SPIN"),
        has("READ"),
        has("WRITE"),
        has("MUTEX"),
        has("RT"),
        has("PERCPU"),
    ) {
        (_, _, _, true, _, _) => "mutex",
        (_, true, _, _, _, true) => "pcpu-sem:R",
        (_, _, true, _, _, true) => "pcpu-sem:W",
        (true, true, _, _, _, _) => "rwlock:R",
        (true, _, true, _, _, _) => "rwlock:W",
        (true, _, _, _, _, _) => "spinlock",
        (_, true, _, _, _, _) => "rwsem:R",
        (_, _, true, _, _, _) => "rwsem:W",
        (_, _, _, _, true, _) => "rt-mutex",
        _ if flags.is_empty() => "semaphore",
        _ => "unknown",
    }
}

/// What the table keeps of an open `contention_begin` until its end.
struct Pending {
    cpu: Option<u32>,
    line: u64,
    flags: String,
    stack: Vec<String>,
    comm: String,
}

/// What pairing could not use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PairingCounts {
    /// Intervals produced.
    pub intervals: u64,
    /// Begins inside an open wait of the same task and lock (kept the first).
    pub nested_begins: u64,
    /// Ends with no open begin.
    pub orphan_ends: u64,
    /// Begins never ended before the capture stopped.
    pub unpaired_begins: u64,
    /// Contention events without a timestamp or with an unreadable payload.
    pub unusable: u64,
    /// Ends stamped earlier than their begin (timestamps going backwards: per-CPU buffers
    /// merged out of order, a clock reset, a damaged line). Not turned into a wait: a negative
    /// wait is no wait, and treating it as 0 would hide it in the minimum.
    pub backwards: u64,
}

/// The begin/end pairing of traced waits, one rule for every reader of `contention_begin` /
/// `contention_end`: the [`Pairer`] of the `contention` table and the what-if reconstruction
/// (`whatif::reconstruct`). A begin opens a wait under `key`; a second begin under the same
/// key while it is open is nested and the first is kept (perf's builtin-lock.c: mutex
/// optimistic spinning traces a begin, then another when the waiter goes to sleep, and the
/// wait runs from the first); an end with nothing open is an orphan; an end stamped before its
/// begin is not a wait (`backwards`); begins still open at [`OpenWaits::close_all`] are
/// unpaired. `B` is what the caller keeps from the begin.
///
/// The key is the caller's, and the two callers differ on purpose. The table keys on
/// (task, lock), as perf does: a sleeping lock's waiter (mutex, rwsem) can move to another CPU
/// between its begin and its end, so only the task tells whose wait it is. The replay keys on
/// the CPU, after keeping only `lru_lock`'s events: a spinlock waiter spins with preemption
/// off, so its begin and end are on one CPU; the wait is attached to that CPU's next hold; and
/// waits taken in interrupt context on two CPUs both running their idle task (task 0 on every
/// CPU) stay apart instead of looking nested.
#[derive(Debug)]
pub struct OpenWaits<K, B> {
    open: HashMap<K, (i64, B)>,
    counts: PairingCounts,
}

impl<K, B> Default for OpenWaits<K, B> {
    fn default() -> Self {
        OpenWaits {
            open: HashMap::new(),
            counts: PairingCounts::default(),
        }
    }
}

impl<K: Hash + Eq, B> OpenWaits<K, B> {
    /// A `contention_begin` at `ts_ns`.
    pub fn begin(&mut self, key: K, ts_ns: i64, kept: B) {
        if self.open.contains_key(&key) {
            self.counts.nested_begins += 1;
            return;
        }
        self.open.insert(key, (ts_ns, kept));
    }

    /// A `contention_end` at `ts_ns`: the wait it ends, as (begin time, what the begin kept),
    /// or `None` (counted as an orphan end or as going backwards).
    pub fn end(&mut self, key: &K, ts_ns: i64) -> Option<(i64, B)> {
        let Some((begin_ns, kept)) = self.open.remove(key) else {
            self.counts.orphan_ends += 1;
            return None;
        };
        if ts_ns < begin_ns {
            self.counts.backwards += 1;
            return None;
        }
        self.counts.intervals += 1;
        Some((begin_ns, kept))
    }

    /// A contention event without a timestamp or with an unreadable payload.
    pub fn unusable(&mut self) {
        self.counts.unusable += 1;
    }

    /// The capture (or one input of it) ended: open waits become unpaired.
    pub fn close_all(&mut self) {
        self.counts.unpaired_begins += self.open.len() as u64;
        self.open.clear();
    }

    /// Counts so far.
    pub fn counts(&self) -> PairingCounts {
        self.counts
    }
}

/// Streaming builder of the `contention` table: waits paired by [`OpenWaits`] per
/// (task, lock), as perf does (why not per CPU: see [`OpenWaits`]).
#[derive(Default)]
pub struct Pairer {
    waits: OpenWaits<(i32, String), Pending>,
    source: Vec<String>,
    begin_line: Vec<u64>,
    cpu: Vec<Option<u32>>,
    tid: Vec<i64>,
    comm: Vec<String>,
    lock: Vec<String>,
    flags: Vec<String>,
    ty: Vec<&'static str>,
    begin_ns: Vec<i64>,
    end_ns: Vec<i64>,
    wait_ns: Vec<i64>,
    ret: Vec<i32>,
    caller: Vec<Option<String>>,
    /// Call chains, one list per wait: a list builder, not a `Series` per wait (a million
    /// waits spent ~800 MB on per-row Series).
    stack: Option<ListStringChunkedBuilder>,
    current_source: String,
}

impl Pairer {
    /// The events [`Pairer::push`] reads; it ignores every other.
    pub const EVENTS: [&'static str; 2] = ["contention_begin", "contention_end"];

    /// Start a new input; pending waits of the previous input become unpaired.
    pub fn set_source(&mut self, source: &str) {
        self.waits.close_all();
        self.current_source = source.to_string();
    }

    /// Feed one event; events other than `contention_begin`/`_end` are ignored.
    pub fn push(&mut self, e: &Event) {
        match e.name.as_str() {
            "contention_begin" => {
                let (Some(ts), Ok(b)) = (e.ts_ns, payload::contention_begin(&e.payload)) else {
                    self.waits.unusable();
                    return;
                };
                self.waits.begin(
                    (e.tid, b.lock.to_string()),
                    ts,
                    Pending {
                        cpu: e.cpu,
                        line: e.line,
                        flags: b.flags.to_string(),
                        stack: e.callchain.iter().map(|f| f.symbol_with_offset()).collect(),
                        comm: e.comm.clone(),
                    },
                );
            }
            "contention_end" => {
                let (Some(ts), Ok(end)) = (e.ts_ns, payload::contention_end(&e.payload)) else {
                    self.waits.unusable();
                    return;
                };
                let Some((begin_ns, p)) = self.waits.end(&(e.tid, end.lock.to_string()), ts) else {
                    return;
                };
                self.source.push(self.current_source.clone());
                self.begin_line.push(p.line);
                self.cpu.push(p.cpu);
                self.tid.push(i64::from(e.tid));
                self.comm.push(p.comm);
                self.ty.push(lock_type(&p.flags));
                self.lock.push(end.lock.to_string());
                self.flags.push(p.flags);
                self.begin_ns.push(begin_ns);
                self.end_ns.push(ts);
                self.wait_ns.push(ts - begin_ns);
                self.ret.push(end.ret);
                self.caller.push(caller_of(&p.stack).map(str::to_string));
                self.stack
                    .get_or_insert_with(|| ListStringChunkedBuilder::new(c::STACK.into(), 0, 0))
                    .append_values_iter(p.stack.iter().map(String::as_str));
            }
            _ => {}
        }
    }

    /// Counts so far.
    pub fn counts(&self) -> PairingCounts {
        self.waits.counts()
    }

    /// Finish: the `contention` frame (the waits since the last [`Pairer::take`]) and the
    /// final counts.
    pub fn finish(mut self) -> Result<(DataFrame, PairingCounts)> {
        self.waits.close_all();
        let df = self.take()?;
        Ok((df, self.waits.counts()))
    }

    /// Waits paired since the last [`Pairer::take`].
    pub fn len(&self) -> usize {
        self.tid.len()
    }

    /// No wait paired since the last [`Pairer::take`].
    pub fn is_empty(&self) -> bool {
        self.tid.is_empty()
    }

    /// The waits paired so far as a frame, in pairing order, and start a new one; the open
    /// begins and the counts stay. A trace streamed through `take` every so many waits gives
    /// the same rows, in the same order, as one [`Pairer::finish`].
    pub fn take(&mut self) -> Result<DataFrame> {
        let height = self.tid.len();
        let stack = match self.stack.take() {
            None => Series::new_empty(c::STACK.into(), &DataType::List(Box::new(DataType::String))),
            Some(mut b) => b.finish().into_series(),
        };

        let cols = vec![
            Column::new(c::SOURCE.into(), std::mem::take(&mut self.source)),
            Column::new(c::BEGIN_LINE.into(), std::mem::take(&mut self.begin_line)),
            Column::new(c::CPU.into(), std::mem::take(&mut self.cpu)),
            Column::new(c::TID.into(), std::mem::take(&mut self.tid)),
            Column::new(c::COMM.into(), std::mem::take(&mut self.comm)),
            Column::new(c::LOCK.into(), std::mem::take(&mut self.lock)),
            Column::new(c::FLAGS.into(), std::mem::take(&mut self.flags)),
            Column::new(c::TYPE.into(), std::mem::take(&mut self.ty)),
            Column::new(c::BEGIN_NS.into(), std::mem::take(&mut self.begin_ns)),
            Column::new(c::END_NS.into(), std::mem::take(&mut self.end_ns)),
            Column::new(c::WAIT_NS.into(), std::mem::take(&mut self.wait_ns)),
            Column::new(c::RET.into(), std::mem::take(&mut self.ret)),
            Column::new(c::CALLER.into(), std::mem::take(&mut self.caller)),
            stack.into(),
        ];
        DataFrame::new(height, cols).map_err(|e| Error::polars("building contention", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_waits_keep_the_first_begin_and_count_what_they_drop() {
        let mut w: OpenWaits<u32, &str> = OpenWaits::default();
        w.begin(0, 100, "first");
        w.begin(0, 150, "nested");
        w.begin(1, 120, "other cpu");
        assert_eq!(w.end(&0, 200), Some((100, "first")));
        assert_eq!(w.end(&0, 210), None); // orphan
        w.begin(2, 300, "backwards");
        assert_eq!(w.end(&2, 290), None);
        w.close_all(); // key 1 never ended
        let c = w.counts();
        assert_eq!(
            (
                c.intervals,
                c.nested_begins,
                c.orphan_ends,
                c.backwards,
                c.unpaired_begins
            ),
            (1, 1, 1, 1, 1)
        );
    }
}
