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

use lockcast_parsers::event::{Event, Frame};
use lockcast_parsers::payload;

use super::events::{Append, ColumnBuilder, Str};
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

/// The caller perf would name for a call chain (`sym+0xoff` frames, innermost first): skip
/// [`STACK_SKIP`] frames, then lock text.
pub fn caller_of<'a>(stack: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    stack
        .into_iter()
        .skip(STACK_SKIP)
        .find(|s| !is_lock_function(s))
}

/// A call chain's frames as perf prints them, `sym+0xoff` ([`Frame::symbol_with_offset`]),
/// innermost first, in one string. A wait keeps its begin's frames until its end; a `String`
/// per frame made the frames' formatting and allocation ~14% of `report` on a recording with
/// call chains (~15 frames a wait).
#[derive(Debug, Default)]
pub struct Stack {
    text: String,
    /// Where each frame ends in `text`.
    ends: Vec<u32>,
}

impl Stack {
    /// The frames of `chain`.
    pub fn of(chain: &[Frame]) -> Stack {
        let mut st = Stack::default();
        st.set(chain);
        st
    }

    /// Now the frames of `chain`, in the buffers it has.
    pub fn set(&mut self, chain: &[Frame]) {
        self.text.clear();
        self.ends.clear();
        for f in chain {
            push_frame(&mut self.text, f);
            // frames past 4 GiB of text: the end stays where u32 saturates, never reached
            self.ends
                .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
        }
    }

    /// The frames, innermost first.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let end = (end as usize).min(self.text.len());
            let f = self.text.get(start..end).unwrap_or("");
            start = end;
            f
        })
    }
}

/// The frame [`caller_of`] names, found by its symbol: the lock-text test looks at what comes
/// before the first `+`, which the symbol and `sym+0xoff` share.
fn caller_frame(chain: &[Frame]) -> Option<&Frame> {
    chain
        .iter()
        .skip(STACK_SKIP)
        .find(|f| !is_lock_function(&f.symbol))
}

/// `f` as [`Frame::symbol_with_offset`] prints it, appended to `out`.
fn push_frame(out: &mut String, f: &Frame) {
    out.push_str(&f.symbol);
    if let Some(o) = f.offset {
        push_hex(out, o);
    }
}

/// `+0x` and `v` in lower-case hex, as `format!("+{v:#x}")` writes it.
fn push_hex(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push_str("+0x");
    let digits = (64 - (v | 1).leading_zeros()).div_ceil(4);
    for i in (0..digits).rev() {
        out.push(char::from(DIGITS[((v >> (4 * i)) & 0xf) as usize]));
    }
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

/// What the table keeps of an open `contention_begin` until its end (its strings' buffers
/// then serve a later begin).
#[derive(Default)]
struct Pending {
    cpu: Option<u32>,
    line: u64,
    flags: String,
    stack: Stack,
    /// Without stacks ([`Pairer::without_stacks`]): the caller perf would name, when there is
    /// one (`has_caller`), as `sym+0xoff`.
    caller: String,
    has_caller: bool,
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
    /// The key an end is looked up with, its buffers reused ([`OpenWaits::end_of`]).
    probe: K,
}

impl<K: Default, B> Default for OpenWaits<K, B> {
    fn default() -> Self {
        OpenWaits {
            open: HashMap::new(),
            counts: PairingCounts::default(),
            probe: K::default(),
        }
    }
}

impl<B> OpenWaits<(i32, String), B> {
    /// [`OpenWaits::end`] of task `tid`'s wait on `lock` as printed (the table's and the flame
    /// graph's key), looked up without a new string.
    pub fn end_of(&mut self, tid: i32, lock: &str, ts_ns: i64) -> Option<(i64, B)> {
        let mut key = std::mem::take(&mut self.probe);
        key.0 = tid;
        key.1.clear();
        key.1.push_str(lock);
        let ended = self.end(&key, ts_ns);
        self.probe = key;
        ended
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

/// The string column `b` so far, and a new one started in its place.
fn take_strings(b: &mut Str, name: &'static str) -> Column {
    std::mem::replace(b, Str::new(name)).finish()
}

/// Streaming builder of the `contention` table: waits paired by [`OpenWaits`] per
/// (task, lock), as perf does (why not per CPU: see [`OpenWaits`]).
pub struct Pairer {
    waits: OpenWaits<(i32, String), Pending>,
    /// Text columns: each value copied into arrow's buffers as its row comes (a `String` per
    /// row and column, turned into a `Series` at the end, was 0.658 -> 0.573 s of `report` on
    /// the fbatch-drain recording).
    source: Str,
    begin_line: Vec<u64>,
    cpu: Vec<Option<u32>>,
    tid: Vec<i64>,
    comm: Str,
    lock: Str,
    flags: Str,
    ty: Vec<&'static str>,
    begin_ns: Vec<i64>,
    end_ns: Vec<i64>,
    wait_ns: Vec<i64>,
    ret: Vec<i32>,
    caller: Str,
    /// Call chains, one list per wait: a list builder, not a `Series` per wait (a million
    /// waits spent ~800 MB on per-row Series).
    stack: Option<ListStringChunkedBuilder>,
    current_source: String,
    /// Ended waits' [`Pending`]s, their buffers reused by the next begins: no allocation per
    /// wait once there are enough.
    spare: Vec<Pending>,
    /// Each wait keeps its frames and the table has them ([`Pairer::without_stacks`]).
    stacks: bool,
}

impl Default for Pairer {
    fn default() -> Self {
        Pairer {
            waits: OpenWaits::default(),
            source: Str::new(c::SOURCE),
            begin_line: Vec::new(),
            cpu: Vec::new(),
            tid: Vec::new(),
            comm: Str::new(c::COMM),
            lock: Str::new(c::LOCK),
            flags: Str::new(c::FLAGS),
            ty: Vec::new(),
            begin_ns: Vec::new(),
            end_ns: Vec::new(),
            wait_ns: Vec::new(),
            ret: Vec::new(),
            caller: Str::new(c::CALLER),
            stack: None,
            current_source: String::new(),
            spare: Vec::new(),
            stacks: true,
        }
    }
}

impl Pairer {
    /// The events [`Pairer::push`] reads; it ignores every other.
    pub const EVENTS: [&'static str; 2] = ["contention_begin", "contention_end"];

    /// For readers of a wait's caller but not its frames (the `lock_stats` rows of
    /// [`crate::frames::lock_stats::ContentionAgg`], the export's wait slices): each wait keeps
    /// the caller perf names, not its frames, and the `stack` column is null.
    /// The frames, formatted and kept in the table, were ~13% of `report` and a third of its
    /// peak memory on a recording with call chains.
    pub fn without_stacks() -> Pairer {
        Pairer {
            stacks: false,
            ..Pairer::default()
        }
    }

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
                let mut p = self.spare.pop().unwrap_or_default();
                (p.cpu, p.line) = (e.cpu, e.line);
                p.flags.clear();
                p.flags.push_str(b.flags);
                p.comm.clear();
                p.comm.push_str(&e.comm);
                if self.stacks {
                    p.stack.set(&e.callchain);
                } else {
                    let caller = caller_frame(&e.callchain);
                    p.has_caller = caller.is_some();
                    p.caller.clear();
                    if let Some(f) = caller {
                        push_frame(&mut p.caller, f);
                    }
                }
                self.waits.begin((e.tid, b.lock.to_string()), ts, p);
            }
            "contention_end" => {
                let (Some(ts), Ok(end)) = (e.ts_ns, payload::contention_end(&e.payload)) else {
                    self.waits.unusable();
                    return;
                };
                let Some((begin_ns, p)) = self.waits.end_of(e.tid, end.lock, ts) else {
                    return;
                };
                self.source.append(&self.current_source);
                self.begin_line.push(p.line);
                self.cpu.push(p.cpu);
                self.tid.push(i64::from(e.tid));
                self.comm.append(&p.comm);
                self.ty.push(lock_type(&p.flags));
                self.lock.append(end.lock);
                self.flags.append(&p.flags);
                self.begin_ns.push(begin_ns);
                self.end_ns.push(ts);
                self.wait_ns.push(ts - begin_ns);
                self.ret.push(end.ret);
                let stack = self
                    .stack
                    .get_or_insert_with(|| ListStringChunkedBuilder::new(c::STACK.into(), 0, 0));
                if self.stacks {
                    self.caller.append(caller_of(p.stack.iter()));
                    stack.append_values_iter(p.stack.iter());
                } else {
                    let caller = p.has_caller.then_some(p.caller.as_str());
                    self.caller.append(caller);
                    // (not `Series::full_null`, which makes polars allocate 8 MiB of zeros)
                    stack.append_null();
                }
                self.spare.push(p);
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
            take_strings(&mut self.source, c::SOURCE),
            Column::new(c::BEGIN_LINE.into(), std::mem::take(&mut self.begin_line)),
            Column::new(c::CPU.into(), std::mem::take(&mut self.cpu)),
            Column::new(c::TID.into(), std::mem::take(&mut self.tid)),
            take_strings(&mut self.comm, c::COMM),
            take_strings(&mut self.lock, c::LOCK),
            take_strings(&mut self.flags, c::FLAGS),
            Column::new(c::TYPE.into(), std::mem::take(&mut self.ty)),
            Column::new(c::BEGIN_NS.into(), std::mem::take(&mut self.begin_ns)),
            Column::new(c::END_NS.into(), std::mem::take(&mut self.end_ns)),
            Column::new(c::WAIT_NS.into(), std::mem::take(&mut self.wait_ns)),
            Column::new(c::RET.into(), std::mem::take(&mut self.ret)),
            take_strings(&mut self.caller, c::CALLER),
            stack.into(),
        ];
        DataFrame::new(height, cols).map_err(|e| Error::polars("building contention", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A [`Stack`] gives each frame as [`Frame::symbol_with_offset`] prints it, in order:
    /// offsets at every hex width, none, 0, and frames with empty symbols.
    #[test]
    fn a_stack_keeps_the_frames_as_printed() {
        let frame = |symbol: &str, offset| Frame {
            addr: 0,
            symbol: symbol.to_string(),
            offset,
            dso: None,
        };
        let mut chain = vec![
            frame("[unknown]", None),
            frame("", Some(0)),
            frame("", None),
        ];
        for bits in 0..64 {
            chain.push(frame("folio_batch_move_lru", Some(1u64 << bits)));
            chain.push(frame("x", Some((1u64 << bits) - 1)));
        }
        chain.push(frame("lru_add_drain", Some(u64::MAX)));
        let st = Stack::of(&chain);
        let want: Vec<String> = chain.iter().map(Frame::symbol_with_offset).collect();
        assert_eq!(st.iter().collect::<Vec<_>>(), want);
        assert_eq!(want[4], "x+0x0");
        assert_eq!(want[131], "lru_add_drain+0xffffffffffffffff");
        assert_eq!(Stack::of(&[]).iter().count(), 0);
    }

    /// A wait's row has its own begin's CPU, line, command, flags and frames, none of an
    /// earlier wait's whose buffers its begin reused: a long chain, then a shorter one, then
    /// none; a nested begin is dropped whole.
    #[test]
    fn each_wait_has_what_its_own_begin_kept() {
        let frame = |symbol: &str, offset| Frame {
            addr: 0,
            symbol: symbol.to_string(),
            offset: Some(offset),
            dso: None,
        };
        let ev = |line, ts, cpu, comm: &str, name: &str, payload: &str, chain: Vec<Frame>| {
            let mut e = Event::empty(lockcast_parsers::event::Source::PerfData);
            (e.line, e.ts_ns, e.cpu, e.tid) = (line, Some(ts), Some(cpu), 7);
            e.comm = comm.to_string();
            e.name = name.to_string();
            e.payload = payload.to_string();
            e.callchain = chain;
            e
        };
        let long = vec![
            frame("queued_spin_lock_slowpath", 0x1f),
            frame("_raw_spin_lock_irqsave", 0x3d),
            frame("folio_lruvec_lock_irqsave", 0x5a),
            frame("folio_batch_move_lru", 0x1c8),
        ];
        let short = vec![frame("rwsem_down_read_slowpath", 0x375)];
        let (lock, rwsem) = ("0xffff888100000000", "0xffff88810006f778");
        let events = [
            ev(
                1,
                100,
                0,
                "one",
                "contention_begin",
                &format!("{lock} (flags=SPIN)"),
                long,
            ),
            ev(
                2,
                150,
                0,
                "one",
                "contention_end",
                &format!("{lock} (ret=0)"),
                vec![],
            ),
            ev(
                3,
                200,
                1,
                "two",
                "contention_begin",
                &format!("{rwsem} (flags=READ)"),
                short,
            ),
            ev(
                4,
                210,
                1,
                "two",
                "contention_begin",
                &format!("{rwsem} (flags=WRITE)"),
                vec![],
            ),
            ev(
                5,
                260,
                1,
                "two",
                "contention_end",
                &format!("{rwsem} (ret=0)"),
                vec![],
            ),
            ev(
                6,
                300,
                0,
                "three",
                "contention_begin",
                &format!("{lock} (flags=SPIN)"),
                vec![],
            ),
            ev(
                7,
                340,
                0,
                "three",
                "contention_end",
                &format!("{lock} (ret=0)"),
                vec![],
            ),
        ];
        let pair = |mut p: Pairer| {
            p.set_source("t");
            events.iter().for_each(|e| p.push(e));
            p.finish().unwrap()
        };
        let (df, counts) = pair(Pairer::default());
        // without stacks: the same rows and callers, the frames left out
        let (lean, lean_counts) = pair(Pairer::without_stacks());
        assert_eq!(lean_counts, counts);
        assert_eq!(lean.drop(c::STACK).unwrap(), df.drop(c::STACK).unwrap());
        let (stack, full) = (lean.column(c::STACK).unwrap(), df.column(c::STACK).unwrap());
        assert_eq!((stack.null_count(), stack.dtype()), (3, full.dtype()));
        assert_eq!((counts.intervals, counts.nested_begins), (3, 1));
        let text = |n: &str| crate::frames::strs(&df, n).unwrap();
        let s = |v: &str| Some(v.to_string());
        assert_eq!(text(c::COMM), [s("one"), s("two"), s("three")]);
        assert_eq!(text(c::FLAGS), [s("SPIN"), s("READ"), s("SPIN")]);
        assert_eq!(
            text(c::CALLER),
            [s("folio_batch_move_lru+0x1c8"), None, None]
        );
        let lines: Vec<_> = df
            .column(c::BEGIN_LINE)
            .unwrap()
            .u64()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(lines, [Some(1), Some(3), Some(6)]);
        let stacks: Vec<Vec<String>> = df
            .column(c::STACK)
            .unwrap()
            .list()
            .unwrap()
            .amortized_iter()
            .map(|l| {
                let l = l.unwrap();
                let l = l.as_ref().str().unwrap();
                l.iter()
                    .map(|v| v.unwrap_or_default().to_string())
                    .collect()
            })
            .collect();
        assert_eq!(stacks[0].len(), 4);
        assert_eq!(stacks[0][3], "folio_batch_move_lru+0x1c8");
        assert_eq!(stacks[1], ["rwsem_down_read_slowpath+0x375"]);
        assert!(stacks[2].is_empty(), "{:?}", stacks[2]);
    }

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
