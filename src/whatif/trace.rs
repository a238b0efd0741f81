//! The mm/lock events a replay needs, read from a `perf script`, raw ftrace or
//! `trace-cmd report` capture into a compact, time-ordered list (MODELS.md §2).
//!
//! Five tracepoints matter: `kmem:mm_page_alloc` (pfn → order), `pagemap:mm_lru_insertion`
//! (drain membership, emitted inside the `lru_lock` hold), `kmem:mm_page_free` (free-side
//! batches), and `lock:contention_begin` / `contention_end` (traced waits); when present,
//! `syscalls:sys_enter/exit_madvise` and `_munmap` say when a task's folios die. Everything
//! else is counted and ignored. Lock addresses are interned to small ids: they are identities within
//! one file, never numbers.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use lockcast_parsers::detect::Format;
use lockcast_parsers::event::{CaptureHeader, Event, Frames, Source};
use lockcast_parsers::payload;
use lockcast_parsers::perf_data::kallsyms::Recent;
use lockcast_parsers::perf_script;
use lockcast_parsers::prefault::{self, Prefault};

use super::survey::{Survey, Surveyor};
use super::time_range::{TimeCut, TimeRange, TimeSpec};
use crate::capture;
use crate::error::{Error, Result};
use crate::input::InputSpec;

/// One event the replay uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `kmem:mm_page_alloc`: a folio of `2^order` pages starts at `pfn`.
    Alloc { pfn: u64, order: u8 },
    /// `pagemap:mm_lru_insertion`: the folio at `pfn` is put on an LRU list (inside a hold).
    /// `site`: interned caller of `lru_add_drain*()` when the call chain shows one (an
    /// explicit drain), else `NO_SITE`.
    Insert { pfn: u64, site: u32 },
    /// `kmem:mm_page_free`: the folio at `pfn` (real order) goes back to the page allocator.
    Free { pfn: u64, order: u8 },
    /// `lock:contention_begin` on interned lock `lock`; `via`: the LRU path that asked, from
    /// the call chain when the capture has one.
    Begin { lock: u32, via: Via },
    /// `lock:contention_end` on interned lock `lock`.
    End { lock: u32 },
    /// The task starts (`enter`) or ends a call that unmaps its folios at once:
    /// `syscalls:sys_enter/exit_madvise` with MADV_DONTNEED, MADV_DONTNEED_LOCKED or MADV_REMOVE,
    /// `sys_enter/exit_munmap`. A folio still on a per-CPU batch has no event of its own when
    /// it dies; this is when it does.
    Discard { enter: bool },
    /// The task starts (`enter`) or ends `madvise(MADV_FREE)`: each of its anonymous folios in
    /// the range is marked lazyfree through the per-CPU `lru_lazyfree` batch, whose drain
    /// (`lru_lazyfree_fn`) moves it under `lru_lock` and emits nothing (MODELS.md §2.2).
    Lazyfree { enter: bool },
}

/// Which `lru_lock` path a hold or a traced wait belongs to (MODELS.md §1), the row
/// `perf lock contention` prints it under.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// `folio_batch_move_lru()`: a per-CPU batch drains onto the LRU.
    Drain,
    /// `__page_cache_release()` from the `folios_put()` right after a drain: folios that died
    /// while on the batch (the batch held the last reference).
    Release,
    /// `__page_cache_release()` from `folios_put_refs()` of an unmap (`free_pages_and_swap_cache`
    /// under `tlb_finish_mmu`: MADV_DONTNEED, munmap, exit).
    Zap,
    /// Not told by the capture (no call chain).
    Unknown,
    /// `folio_batch_move_lru()` of the `lru_lazyfree` batch: `madvise(MADV_FREE)` marking
    /// folios lazyfree (`folio_mark_lazyfree()`).
    Lazyfree,
}

impl Via {
    /// Every path, in `index` order.
    pub const ALL: [Via; 5] = [
        Via::Drain,
        Via::Release,
        Via::Zap,
        Via::Unknown,
        Via::Lazyfree,
    ];

    /// Position in [`Via::ALL`] (array slot in per-path tallies).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Name as printed in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Drain => "folio_batch_move_lru (drain)",
            Via::Release => "__page_cache_release (after drain)",
            Via::Zap => "__page_cache_release (unmap)",
            Via::Unknown => "unknown",
            Via::Lazyfree => "folio_batch_move_lru (lazyfree)",
        }
    }
}

/// The LRU path of a `contention_begin` call chain (innermost frame first).
fn via_of(chain: Chain) -> Via {
    let has = |p: &str| chain.symbols().any(|s| s.starts_with(p));
    if has("folio_mark_lazyfree") {
        Via::Lazyfree
    } else if has("__page_cache_release") {
        if has("folio_batch_move_lru") {
            Via::Release
        } else {
            Via::Zap
        }
    } else if has("folio_batch_move_lru") {
        Via::Drain
    } else {
        Via::Unknown
    }
}

/// `MADV_DONTNEED`, `MADV_REMOVE`, `MADV_DONTNEED_LOCKED` (include/uapi/asm-generic/mman-common.h).
const DISCARDING_ADVICE: [u32; 3] = [4, 9, 24];

/// `MADV_FREE` (include/uapi/asm-generic/mman-common.h).
const MADV_FREE: u32 = 8;

/// `Kind::Insert::site` when the insertion is not under an explicit drain or has no call chain.
pub const NO_SITE: u32 = u32::MAX;

/// One event: when, where, what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmEvent {
    /// Timestamp in ns as printed (resolution in [`Trace::ts_res_ns`]).
    pub ts: i64,
    /// CPU the event was recorded on.
    pub cpu: u32,
    /// Thread id.
    pub tid: i32,
    /// What happened.
    pub kind: Kind,
}

/// Which spinlock slowpath the capture's kernel runs; decides which waiters `contention_begin`
/// reports (MODELS.md §2 caveat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Observation {
    /// `__pv_queued_spin_lock_slowpath` (a paravirt guest, as on these VMs): every slowpath is
    /// traced, so any request that finds the lock held or queued counts as contended.
    Paravirt,
    /// Generic `queued_spin_lock_slowpath`: the first waiter spins on the pending bit untraced;
    /// only a request that finds another waiter already queued is traced.
    BareMetal,
}

/// A capture read for replay.
#[derive(Debug, Clone)]
pub struct Trace {
    /// File as given.
    pub path: String,
    /// The five event kinds, in file order (perf script and ftrace print time order).
    pub events: Vec<MmEvent>,
    /// Lock addresses as printed, indexed by the interned id.
    pub locks: Vec<String>,
    /// Drain sites (caller of `lru_add_drain*()`), indexed by `Kind::Insert::site`.
    pub sites: Vec<String>,
    /// Coarsest timestamp resolution seen (1 = ns, 1000 = µs).
    pub ts_res_ns: u32,
    /// Events of other kinds, ignored.
    pub other_events: u64,
    /// Slowpath seen in call chains, when the capture has them.
    pub slowpath_seen: Option<Observation>,
    /// `key=value` lines of the capture's `meta` file (written by fixtures/capture-replay.sh),
    /// when one sits beside the capture; keys the file lacks (or all, without a file) filled
    /// from the capture's own header when it has one (perf.data: [`header_meta`]).
    pub meta: HashMap<String, String>,
    /// The capture's own header (perf.data), with its lost-event counts.
    pub header: Option<CaptureHeader>,
    /// Lines skipped in lenient mode.
    pub skipped_lines: u64,
    /// How many events of each of [`TRACKED`] the capture has (before any filtering), so a
    /// policy's needs can be checked ([`super::checks`]).
    pub seen: [u64; TRACKED.len()],
    /// Events of [`TRACKED`] that carry a call chain.
    pub with_callchain: u64,
    /// `(start, len_in)` of every discarding `madvise` (MADV_DONTNEED and the like), in file
    /// order: the ranges whose refaults [`super::alignment`] sizes.
    pub discards: Vec<(u64, u64)>,
    /// What the rebuild needs of the whole trace, counted as the events were read; `None`
    /// when the read had to put them in order, or for a trace cut from another.
    pub survey: Option<Survey>,
    /// The `--time` range the read kept the events of ([`read_in`]), with what it saw of all
    /// of them; `None` when it kept every event.
    pub(crate) read_cut: Option<ReadCut>,
}

/// The tracepoints a replay reads, by full name (`system:event`); [`Trace::seen`] counts them.
pub const TRACKED: [&str; 9] = [
    "lock:contention_begin",
    "lock:contention_end",
    "pagemap:mm_lru_insertion",
    "kmem:mm_page_alloc",
    "kmem:mm_page_free",
    "syscalls:sys_enter_madvise",
    "syscalls:sys_exit_madvise",
    "syscalls:sys_enter_munmap",
    "syscalls:sys_exit_munmap",
];

// Indices in [`TRACKED`]: an event's index there is found once per event type of a perf.data
// file, and `add_event` dispatches on it rather than comparing names for every event. Each is
// looked up in `TRACKED` when compiling, so the two cannot drift apart.
const T_BEGIN: usize = tracked_at("lock:contention_begin");
const T_END: usize = tracked_at("lock:contention_end");
const T_INSERT: usize = tracked_at("pagemap:mm_lru_insertion");
const T_ALLOC: usize = tracked_at("kmem:mm_page_alloc");
const T_FREE: usize = tracked_at("kmem:mm_page_free");
const T_ENTER_MADVISE: usize = tracked_at("syscalls:sys_enter_madvise");
const T_EXIT_MADVISE: usize = tracked_at("syscalls:sys_exit_madvise");
const T_ENTER_MUNMAP: usize = tracked_at("syscalls:sys_enter_munmap");
const T_EXIT_MUNMAP: usize = tracked_at("syscalls:sys_exit_munmap");

/// The place of the full name `name` in [`TRACKED`]; a name not there fails the build.
const fn tracked_at(name: &str) -> usize {
    let want = name.as_bytes();
    let mut i = 0;
    while i < TRACKED.len() {
        let have = TRACKED[i].as_bytes();
        if have.len() == want.len() {
            let mut k = 0;
            while k < have.len() && have[k] == want[k] {
                k += 1;
            }
            if k == have.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a TRACKED event")
}

/// The index in [`TRACKED`] of an event by its bare name (`mm_page_alloc`): `system:name`
/// ends with `:` + the name.
fn tracked_of(name: &str) -> Option<usize> {
    TRACKED
        .iter()
        .position(|n| n.strip_suffix(name).is_some_and(|sys| sys.ends_with(':')))
}

/// A `--time` range applied while reading ([`read_in`]): only the replayed events it holds
/// are kept, and every replayed event is counted, so [`Trace::keep_time`] reports the
/// capture's own span and count as it does after a whole read. A `START,STOP` range is
/// `exact`: what it keeps is the part. A percent range's ends are of the replayed events'
/// span, known only once all are read: what is kept while reading is a range sure to hold the
/// part ([`percent_bounds`]), cut to it afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadCut {
    range: TimeRange,
    exact: bool,
    /// Replayed events read, and the first and last stamp among them.
    events: u64,
    first: i64,
    last: i64,
}

impl ReadCut {
    fn new(range: TimeRange, exact: bool) -> Self {
        ReadCut {
            range,
            exact,
            events: 0,
            first: i64::MAX,
            last: i64::MIN,
        }
    }

    /// Counts a replayed event stamped `ts`; whether it is kept.
    #[inline]
    fn keeps(&mut self, ts: i64) -> bool {
        self.events += 1;
        self.first = self.first.min(ts);
        self.last = self.last.max(ts);
        self.range.holds(ts)
    }
}

/// Whether the read keeps a replayed event (counting it when it reads in a range).
#[inline]
fn kept(cut: &mut Option<ReadCut>, e: &MmEvent) -> bool {
    cut.as_mut().is_none_or(|c| c.keeps(e.ts))
}

/// What reading needs to remember between events, and only then.
#[derive(Default)]
struct ReadState {
    /// Lock address → interned id.
    locks: HashMap<String, u32>,
    /// Drain site name → interned id.
    sites: HashMap<String, u32>,
    /// Tasks inside a discarding madvise/munmap (pairs an exit with its enter).
    discard_open: super::IntSet<i32>,
    /// Tasks inside madvise(MADV_FREE).
    lazyfree_open: super::IntSet<i32>,
    /// Lock address (typed perf.data fields) → interned id, so its text is built once.
    lock_addrs: super::IntMap<u64, u32>,
    /// The events kept so far, counted for the rebuild.
    survey: Surveyor,
    /// The range kept, when the read keeps one ([`read_in`]).
    cut: Option<ReadCut>,
}

/// The integer fields each replayed tracepoint needs, asked of readers that decode them from
/// the binary payload (perf.data) instead of giving perf script's text, which
/// [`payload`] would parse again: the same values, as the format description lays them out.
const TYPED: [(&str, &[&str]); 6] = [
    ("mm_page_alloc", &["pfn", "order"]),
    ("mm_lru_insertion", &["pfn"]),
    ("mm_page_free", &["pfn", "order"]),
    ("contention_begin", &["lock_addr"]),
    ("contention_end", &["lock_addr"]),
    ("sys_enter_madvise", &["behavior", "start", "len_in"]),
];

impl Trace {
    /// No events yet, read from `path`.
    pub(crate) fn empty(path: &str) -> Trace {
        Trace {
            path: path.to_string(),
            events: Vec::new(),
            locks: Vec::new(),
            sites: Vec::new(),
            ts_res_ns: 1,
            other_events: 0,
            slowpath_seen: None,
            meta: Default::default(),
            header: None,
            skipped_lines: 0,
            seen: [0; TRACKED.len()],
            with_callchain: 0,
            discards: Vec::new(),
            survey: None,
            read_cut: None,
        }
    }

    /// Observation rule: from the call chains if the capture has them, else from the meta
    /// file's `spin_slowpath=`, else `None` (the caller must choose).
    pub fn observation(&self) -> Option<Observation> {
        self.slowpath_seen.or_else(|| {
            self.meta.get("spin_slowpath").and_then(|s| {
                if s.contains("__pv_queued") {
                    Some(Observation::Paravirt)
                } else if s.contains("queued_spin_lock_slowpath") {
                    Some(Observation::BareMetal)
                } else {
                    None
                }
            })
        })
    }

    /// The capture cut to each of `ranges` (`from <= ts < to`), as if it had been recorded
    /// over that time only ([`super::sample`]); everything else (locks, sites, meta, counts)
    /// as the whole. The events are in time order ([`read_with`] sorts them), so each window
    /// is one run of them, found by binary search.
    pub fn windows(&self, ranges: &[(i64, i64)]) -> Vec<Trace> {
        ranges
            .iter()
            .map(|&(from, to)| {
                let a = self.events.partition_point(|e| e.ts < from);
                let b = self.events.partition_point(|e| e.ts < to).max(a);
                self.with_events(self.events[a..b].to_vec())
            })
            .collect()
    }

    /// This capture's everything but its events.
    fn with_events(&self, events: Vec<MmEvent>) -> Trace {
        Trace {
            path: self.path.clone(),
            events,
            locks: self.locks.clone(),
            sites: self.sites.clone(),
            ts_res_ns: self.ts_res_ns,
            other_events: self.other_events,
            slowpath_seen: self.slowpath_seen,
            meta: self.meta.clone(),
            header: self.header.clone(),
            skipped_lines: self.skipped_lines,
            seen: self.seen,
            with_callchain: self.with_callchain,
            discards: self.discards.clone(),
            survey: None,
            read_cut: None,
        }
    }

    /// Makes [`Trace::survey`] the survey of the events: counted now when the read could not
    /// (events it had to sort, a trace cut from another).
    pub fn ensure_survey(&mut self) {
        if !self.survey.as_ref().is_some_and(|s| s.covers(&self.events)) {
            self.survey = Some(Survey::of(&self.events));
        }
    }

    /// Events of `name` (one of [`TRACKED`]) in the capture.
    pub fn count(&self, name: &str) -> u64 {
        TRACKED
            .iter()
            .position(|n| *n == name)
            .map_or(0, |i| self.seen[i])
    }

    /// Keeps only the events `spec` selects (`whatif --time`, [`super::time_range`]): the
    /// rebuild, the calibration and the replays then see that part of the capture alone. The
    /// counts of what the capture holds ([`Trace::seen`], [`Trace::discards`]) stay the whole
    /// capture's: they say which events it was recorded with, not how many fell in the range.
    /// An error when no event is left, naming the capture's own span. A trace read with
    /// [`read_in`] is cut with the spec it was read with.
    pub fn keep_time(&mut self, spec: TimeSpec) -> Result<TimeCut> {
        // cut while reading (`read_in`): what the read counted of every replayed event
        let read = self.read_cut.filter(|c| c.events > 0);
        let of_events = read.map_or(self.events.len() as u64, |c| c.events);
        let span = read.map(|c| (c.first, c.last)).or_else(|| {
            self.events.iter().fold(None, |acc: Option<(i64, i64)>, e| {
                Some(acc.map_or((e.ts, e.ts), |(a, b)| (a.min(e.ts), b.max(e.ts))))
            })
        });
        let Some((first, last)) = span else {
            return Err(Error::Input(format!(
                "{}: --time {spec}: the capture has no event to replay",
                self.path
            )));
        };
        let range = spec.resolve(first, last);
        // kept while reading: the part itself, or a range around it
        let exact = read.is_some_and(|c| c.exact);
        if !exact {
            self.events.retain(|e| range.holds(e.ts));
        }
        debug_assert!(
            self.events.iter().all(|e| range.holds(e.ts)),
            "read with another range than {spec}"
        );
        if self.events.is_empty() {
            return Err(Error::Usage(format!(
                "{}: --time {spec}: no event to replay in {range}; the capture's events span {}",
                self.path,
                TimeRange {
                    from_ns: first,
                    to_ns: last
                }
            )));
        }
        // the rest of the run holds what is kept, not the whole read's capacity
        self.events.shrink_to_fit();
        if !exact {
            // counted over the events the read kept, not the part's
            self.survey = None;
        }
        Ok(TimeCut {
            spec: spec.to_string(),
            range,
            capture_from_ns: first,
            capture_to_ns: last,
            events: self.events.len() as u64,
            of_events,
        })
    }

    /// A number from the meta file.
    pub fn meta_f64(&self, key: &str) -> Option<f64> {
        self.meta.get(key).and_then(|v| v.trim().parse().ok())
    }

    /// Events the recording lost: counted in the file itself when it is a perf.data (its
    /// `PERF_RECORD_LOST`/`LOST_SAMPLES` records are the truth, whatever a meta file says),
    /// else the meta file's `lost_events`.
    pub fn lost_events(&self) -> u64 {
        match &self.header {
            Some(h) if h.complete => h.lost_events(),
            _ => self
                .meta
                .get("lost_events")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0),
        }
    }
}

/// Read a trace capture (format detected, gzip/zstd transparent, `-` for stdin).
pub fn read(path: &str, lenient: bool) -> Result<Trace> {
    let opts = capture::OpenOptions {
        lenient,
        ..capture::OpenOptions::default()
    };
    read_with(path, &opts)
}

/// [`read`] with the capture's open options (`--kallsyms` for perf.data call chains).
pub fn read_with(path: &str, opts: &capture::OpenOptions) -> Result<Trace> {
    read_in(path, opts, None)
}

/// [`read_with`] for a `--time` replay: the range keeps only its events while the capture is
/// read, so the events outside it never take memory (a 1 GB recording's events are ~340 MiB,
/// a fifth of it ~70); [`Trace::keep_time`] then reports the cut. A percent range, whose ends
/// are of the replayed events' span, is kept so while reading a perf.data file walked in one
/// pass (its samples give bounds of that span first); read any other way, its events are all
/// read and cut after.
pub fn read_in(path: &str, opts: &capture::OpenOptions, time: Option<TimeSpec>) -> Result<Trace> {
    let path = &crate::input::resolve_dir(path);
    let spec = InputSpec {
        path: path.to_string(),
        block: None,
    };
    // what is kept of a part is small beside the file: its pages are let go as soon as passed
    let opts = capture::OpenOptions {
        let_go_checked: time.is_some(),
        ..opts.clone()
    };
    read_opened(
        path,
        capture::open(&spec, &opts)?,
        Some(SCRIPT_PIECE_BYTES),
        time,
    )
}

/// A range sure to hold the replayed events a percent `spec` selects, from the samples before
/// they are turned into events: every replayed event is a sample of a tracked event, and
/// those of an insertion, a free, a contention or a munmap always are one (an allocation, an
/// madvise and a syscall exit may not be). So the span's first event is between the first
/// tracked sample and the first sure one, its last between the last sure one and the last
/// tracked one, and a percent range's ends grow with both: resolved with the low pair and
/// the high pair, they bound the part. `None` without a sure sample. (A `START,STOP` spec
/// needs no bounds: [`TimeSpec::absolute`].)
fn percent_bounds(
    all: &lockcast_parsers::perf_data::TypedParts,
    tracked: &[Option<usize>],
    spec: TimeSpec,
) -> Option<TimeRange> {
    let sure = |i: usize| matches!(i, T_INSERT | T_FREE | T_BEGIN | T_END | T_ENTER_MUNMAP);
    let (mut any, mut certain) = ((i64::MAX, i64::MIN), (i64::MAX, i64::MIN));
    for s in all.unordered() {
        let Some(Some(i)) = tracked.get(s.event as usize) else {
            continue;
        };
        any = (any.0.min(s.ts_ns), any.1.max(s.ts_ns));
        if sure(*i) {
            certain = (certain.0.min(s.ts_ns), certain.1.max(s.ts_ns));
        }
    }
    if certain.0 > certain.1 {
        return None;
    }
    Some(TimeRange {
        from_ns: spec.resolve(any.0, certain.1).from_ns,
        to_ns: spec.resolve(certain.0, any.1).to_ns,
    })
}

/// How many samples the one-pass read turns into events between looks for a walked part it
/// has passed and can let go of
/// ([`lockcast_parsers::perf_data::TypedParts::let_go_passed`]): a look costs a few compares.
const LET_GO_EVERY: usize = 1 << 16;

/// The pieces [`read_script`] cuts `perf script` text into: a quarter of the ingest's, as
/// two are in memory at a time beside the capture's events. With the ingest's 8 MiB the peak
/// of a what-if of a 248 k-line capture rose from 31 to 43 MiB; with 2 MiB to 33-35 MiB, and
/// the read is as fast.
const SCRIPT_PIECE_BYTES: usize = 2 << 20;

/// The survey's fold ([`Surveyor`]) on a thread of its own, following the events `fill` appends
/// to `t.events` (reserved beforehand for all of them). On the 2 M-event recording the fold
/// took ~9 ms of the one-pass read's ~54 ms loop, with the other CPU mostly idle (the
/// prefault helper aside). Returns the fold over every event `fill` appended; with no thread
/// to be had, the fold over them afterwards.
fn follow_survey(
    t: &mut Trace,
    fill: impl FnOnce(&mut Trace, &Follow) -> Result<()>,
) -> Result<Surveyor> {
    let follow = Follow {
        base: t.events.as_ptr() as usize,
        from: t.events.len(),
        cap: t.events.capacity(),
        len: std::sync::atomic::AtomicUsize::new(t.events.len()),
        done: std::sync::atomic::AtomicBool::new(false),
        helper: std::sync::OnceLock::new(),
    };
    std::thread::scope(|sc| {
        let helper = std::thread::Builder::new()
            .name("survey".into())
            .spawn_scoped(sc, || follow.fold());
        let Ok(helper) = helper else {
            // the same fold on this thread, once the events are all there
            fill(t, &follow)?;
            follow.at(&t.events);
            drop(StopOnDrop(&follow));
            return Ok(follow.fold());
        };
        let _ = follow.helper.set(helper.thread().clone());
        // the helper stops even when `fill` fails or unwinds
        let stop = StopOnDrop(&follow);
        let filled = fill(t, &follow);
        follow.at(&t.events);
        drop(stop);
        let s = helper
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        filled.map(|()| s)
    })
}

/// [`follow_survey`]'s shared state: where the events' buffer is (it never moves while
/// followed: [`Follow::push`] refuses to grow it), how many are written, whether the writer is
/// done.
struct Follow {
    base: usize,
    from: usize,
    cap: usize,
    len: std::sync::atomic::AtomicUsize,
    done: std::sync::atomic::AtomicBool,
    /// The helper, woken at each [`Follow::at`].
    helper: std::sync::OnceLock<std::thread::Thread>,
}

impl Follow {
    /// Appends `e`, inside the capacity reserved (one event per sample: never more).
    fn push(&self, events: &mut Vec<MmEvent>, e: MmEvent) -> Result<()> {
        if events.len() == self.cap || events.as_ptr() as usize != self.base {
            return Err(Error::Input(
                "internal: more replayed events than samples read".to_string(),
            ));
        }
        events.push(e);
        Ok(())
    }

    /// The events written so far are `events` (the followed vector).
    fn at(&self, events: &[MmEvent]) {
        self.len
            .store(events.len(), std::sync::atomic::Ordering::Release);
        self.wake();
    }

    /// Wakes the helper (when there is one) to read what was published.
    fn wake(&self) {
        if let Some(h) = self.helper.get() {
            h.unpark();
        }
    }

    /// The fold over the events as they are published, to the last.
    fn fold(&self) -> Surveyor {
        use std::sync::atomic::Ordering::Acquire;
        let mut s = Surveyor::default();
        let mut at = self.from;
        loop {
            let done = self.done.load(Acquire);
            let n = self.len.load(Acquire);
            // SAFETY: `base` is the followed vector's buffer, which does not move or shrink
            // while followed (`push` never grows it past the capacity it had, and nothing else
            // touches it until `follow_survey` has joined this thread); its first `n` events
            // were written before `n` was stored (Release, read here with Acquire), and the
            // writer only writes past them.
            let new = unsafe {
                std::slice::from_raw_parts((self.base as *const MmEvent).add(at), n - at)
            };
            for e in new {
                s.add(e);
            }
            at = n;
            if done {
                return s;
            }
            std::thread::park();
        }
    }
}

/// Marks [`Follow`] done (after its last length) and wakes its helper.
struct StopOnDrop<'a>(&'a Follow);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0
            .done
            .store(true, std::sync::atomic::Ordering::Release);
        self.0.wake();
    }
}

/// [`read_with`] of an opened capture; `pieces`: `perf script` text is read in pieces of
/// about this many bytes ([`read_script`]), `None`: with its event reader, as every other
/// format (the two agree; a test compares them).
fn read_opened(
    path: &str,
    opened: capture::Opened,
    pieces: Option<usize>,
    time: Option<TimeSpec>,
) -> Result<Trace> {
    let mut t = Trace::empty(path);
    t.meta = read_meta(path);
    let mut st = ReadState {
        cut: time
            .and_then(|t| t.absolute())
            .map(|r| ReadCut::new(r, true)),
        ..ReadState::default()
    };
    if let (Format::PerfScript, Some(bytes)) = (opened.format, pieces) {
        t.skipped_lines = read_script(path, opened, bytes, &mut t, &mut st)?;
        t.read_cut = st.cut;
        return finish(t, st.survey, false);
    }
    let mut rd = opened.events("a replay")?;
    rd.typed_fields(&TYPED);
    let one_pass = rd.typed_samples().map_err(|e| Error::parse(path, e))?;
    // the typed samples come in time order, and the events are some of them
    let in_order = one_pass.is_some();
    match one_pass {
        // a perf.data file read in one pass: no `Event` per sample
        Some(all) => {
            t.events.reserve(all.len());
            // A helper faults in the events' pages a little ahead of this pass (57 -> 40 ms on
            // the 2 M-event recording), only as far as the events go: samples of events not
            // replayed make none.
            let (prefault, progress) =
                Prefault::follow(vec![prefault::spare(&t.events, all.len())], prefault::AHEAD);
            let tracked: Vec<Option<usize>> =
                all.events.iter().map(|(_, n)| tracked_of(n)).collect();
            if let (None, Some(spec)) = (st.cut, time) {
                st.cut = percent_bounds(&all, &tracked, spec).map(|r| ReadCut::new(r, false));
            }
            let mut all = all;
            let mut recent = Recent::default();
            st.survey = follow_survey(&mut t, |t, survey| {
                // The samples are let go of part by part as this pass leaves each behind
                // (`let_go_passed`, looked at every `LET_GO_EVERY` samples), so the walk's
                // output and the events are not both whole at the end of the read.
                let (mut i, mut place) = (0usize, None);
                loop {
                    let mut it = match place.take() {
                        None => all.iter(),
                        Some(p) => all.resume(p),
                    };
                    // each sample's frames' symbols, into one vector again and again
                    let mut symbols = Vec::new();
                    let stop = i + LET_GO_EVERY;
                    while i < stop {
                        let Some(x) = it.next() else {
                            return Ok(());
                        };
                        if i % 4096 == 0 {
                            progress[0].at(&t.events);
                            survey.at(&t.events);
                        }
                        i += 1;
                        let s = x.sample;
                        let (_, name) = &all.events[s.event as usize];
                        all.chain_symbols(x.chain(), &mut recent, &mut symbols);
                        let ev = Ev {
                            tracked: tracked[s.event as usize],
                            line: x.line,
                            ts_ns: Some(s.ts_ns),
                            ts_res_ns: 1,
                            cpu: s.cpu(),
                            tid: s.tid,
                            name,
                            payload: x.payload(),
                            callchain: Chain::Symbols(&symbols),
                        };
                        let typed = all.typed[s.event as usize].then(|| x.values());
                        if let Some(e) = event_of(path, &ev, typed, t, &mut st)? {
                            if kept(&mut st.cut, &e) {
                                survey.push(&mut t.events, e)?;
                            }
                        }
                    }
                    let p = it.place();
                    all.let_go_passed(&p);
                    place = Some(p);
                }
            })?;
            prefault.finish();
            prefault::trim(&t.events);
            // Unmapping the samples' ~100 MB (2 M-event recording) took 4-6 ms before the
            // rebuild could start; on a thread of its own it overlaps the rebuild's main pass,
            // which leaves the other CPU mostly idle (whole runs 5 ms shorter, medians of 25).
            // Without a thread to be had, the samples are dropped here.
            let _ = std::thread::Builder::new()
                .name("drop-samples".into())
                .spawn(move || drop(all));
        }
        None => {
            // one event read into again and again: the reader reuses its strings and chain
            let mut e = Event::empty(Source::PerfData);
            while rd
                .next_event_into(&mut e)
                .map_err(|e| Error::parse(path, e))?
            {
                let ev = Ev {
                    tracked: tracked_of(&e.name),
                    line: e.line,
                    ts_ns: e.ts_ns,
                    ts_res_ns: e.ts_res_ns,
                    cpu: e.cpu,
                    tid: e.tid,
                    name: &e.name,
                    payload: &e.payload,
                    callchain: Chain::Frames(Frames::Owned(&e.callchain)),
                };
                add_event(path, &ev, rd.fields(), &mut t, &mut st)?;
            }
        }
    }
    t.skipped_lines = rd.diagnostics().skipped;
    if let Some(h) = rd.header() {
        for (k, v) in header_meta(h) {
            t.meta.entry(k.to_string()).or_insert(v);
        }
        t.header = Some(h.clone());
    }
    t.read_cut = st.cut;
    finish(t, st.survey, in_order)
}

/// `perf script` text, read a piece at a time (the pieces cut on their own thread while this
/// one decodes the last; a plain file mapped and cut in place, as `parse` reads it), each event
/// borrowed from its piece ([`perf_script::PieceReader`]):
/// the same events, lines, errors and skipped lines as its event reader, without an owned
/// `Event` per line (on a 248 k-line capture the read took 0.15 -> 0.12 s with the whole
/// `whatif --bootstrap 0`). Returns the lines skipped (lenient).
fn read_script(
    path: &str,
    opened: capture::Opened,
    piece_bytes: usize,
    t: &mut Trace,
    st: &mut ReadState,
) -> Result<u64> {
    let starts = Format::PerfScript
        .info()
        .starts_record
        .ok_or_else(|| Error::Input(format!("{path}: perf script text cannot be cut")))?;
    let ro = opened.opts.reader();
    let input = crate::ingest::Input {
        reader: opened.reader,
        plain: opened.plain,
    };
    let mut chunker = crate::ingest::Pieces::of(input, path, piece_bytes, starts);
    let mut skipped = 0;
    std::thread::scope(|sc| -> Result<()> {
        // one piece ahead: two in memory at a time
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        sc.spawn(move || loop {
            let piece = chunker.next_piece();
            let end = !matches!(piece, Ok(Some(_)));
            if tx.send(piece).is_err() || end {
                return;
            }
        });
        for piece in rx {
            let Some((text, line_offset)) = piece.map_err(|e| Error::io(path, e))? else {
                break;
            };
            let mut o = ro.clone();
            o.line_offset = line_offset;
            let mut rd = perf_script::PieceReader::new(&text, &o);
            while let Some(s) = rd.next_sample().map_err(|e| Error::parse(path, e))? {
                let e = s.view();
                let ev = Ev {
                    tracked: tracked_of(e.name),
                    line: e.line,
                    ts_ns: e.ts_ns,
                    ts_res_ns: e.ts_res_ns,
                    cpu: e.cpu,
                    tid: e.tid,
                    name: e.name,
                    payload: e.payload,
                    callchain: Chain::Frames(e.callchain),
                };
                add_event(path, &ev, None, t, st)?;
                rd.recycle(s);
            }
            skipped += rd.diagnostics().skipped;
        }
        Ok(())
    })?;
    Ok(skipped)
}

/// The checks and the order every reading of a capture ends with; `survey`: the events
/// counted as they were read; `in_order`: the events are known to be in time order already.
fn finish(mut t: Trace, survey: Surveyor, in_order: bool) -> Result<Trace> {
    let path = &t.path;
    // a range that kept none of the events read: `Trace::keep_time` says so, with their span
    let counted = t.read_cut.is_some_and(|c| c.events > 0);
    if t.events.is_empty() && !counted {
        return Err(Error::Input(format!(
            "{path}: no kmem:mm_page_alloc, pagemap:mm_lru_insertion, kmem:mm_page_free or lock:contention_* events; \
             see `lockcast whatif --help` for the capture recipe"
        )));
    }
    // The replay walks events in time order; perf script sorts them, ftrace per-CPU buffers
    // can interleave slightly out of order. A stable sort keeps file order for equal stamps.
    debug_assert!(!in_order || t.events.is_sorted_by_key(|e| e.ts));
    if !in_order && t.events.windows(2).any(|w| w[1].ts < w[0].ts) {
        // counted out of order: the rebuild surveys them again
        t.events.sort_by_key(|e| e.ts);
    } else {
        t.survey = Some(survey.finish());
    }
    Ok(t)
}

/// What [`add_event`] reads of an event, from an [`lockcast_parsers::event::Event`] or a perf.data file's
/// [`lockcast_parsers::perf_data::TypedSample`].
struct Ev<'a> {
    /// Its event's index in [`TRACKED`] ([`tracked_of`] its name).
    tracked: Option<usize>,
    line: u64,
    ts_ns: Option<i64>,
    ts_res_ns: u32,
    cpu: Option<u32>,
    tid: i32,
    name: &'a str,
    payload: &'a str,
    callchain: Chain<'a>,
}

/// A call chain as the what-if reads it: the symbols of its frames, innermost first.
#[derive(Clone, Copy)]
enum Chain<'a> {
    /// An event's frames.
    Frames(Frames<'a>),
    /// The symbols of a sample's frames, as a perf.data file read in one pass names them
    /// ([`lockcast_parsers::perf_data::TypedParts::chain_symbols`]).
    Symbols(&'a [&'a str]),
}

impl<'a> Chain<'a> {
    fn symbols(self) -> impl Iterator<Item = &'a str> {
        let (frames, symbols) = match self {
            Chain::Frames(f) => (Some(f.iter().map(|f| f.symbol)), None),
            Chain::Symbols(s) => (None, Some(s.iter().copied())),
        };
        frames
            .into_iter()
            .flatten()
            .chain(symbols.into_iter().flatten())
    }

    fn is_empty(self) -> bool {
        match self {
            Chain::Frames(f) => f.is_empty(),
            Chain::Symbols(s) => s.is_empty(),
        }
    }
}

/// `typed`: the event's [`TYPED`] fields when the reader decoded them, else its payload text
/// is parsed.
fn add_event(
    path: &str,
    e: &Ev,
    typed: Option<&[i64]>,
    t: &mut Trace,
    st: &mut ReadState,
) -> Result<()> {
    if let Some(ev) = event_of(path, e, typed, t, st)? {
        if kept(&mut st.cut, &ev) {
            st.survey.add(&ev);
            t.events.push(ev);
        }
    }
    Ok(())
}

/// The replayed event `e` is, if it is one (else it is counted as another event); what
/// [`add_event`] keeps. Inlined: returned from a call, the event went through memory and was
/// read back wider than it was written, and the one-pass read's loop took 65-70 ms, not ~48.
#[inline(always)]
fn event_of(
    path: &str,
    e: &Ev,
    typed: Option<&[i64]>,
    t: &mut Trace,
    st: &mut ReadState,
) -> Result<Option<MmEvent>> {
    if t.slowpath_seen.is_none() {
        for symbol in e.callchain.symbols() {
            if symbol.starts_with("__pv_queued_spin_lock_slowpath") {
                t.slowpath_seen = Some(Observation::Paravirt);
            } else if symbol.starts_with("queued_spin_lock_slowpath")
                || symbol.starts_with("native_queued_spin_lock_slowpath")
            {
                t.slowpath_seen = Some(Observation::BareMetal);
            }
        }
    }
    if let Some(i) = e.tracked {
        t.seen[i] += 1;
        if !e.callchain.is_empty() {
            t.with_callchain += 1;
        }
    }
    let bad = |what: &str, err: lockcast_parsers::LineError| {
        Error::Input(format!(
            "{path}:{}: {what} payload: {err}\n  | {}",
            e.line, e.payload
        ))
    };
    // the typed fields, in TYPED's order (the reader gives exactly those asked)
    let field = |i: usize| -> Result<i64> {
        typed.and_then(|v| v.get(i).copied()).ok_or_else(|| {
            Error::Input(format!(
                "{path}:{}: {}: the reader gave no field {i} of those asked",
                e.line, e.name
            ))
        })
    };
    let kind = match e.tracked {
        Some(T_ALLOC) => {
            let (pfn, order) = match typed {
                // print fmt: `REC->pfn != -1UL ? REC->pfn : 0`
                Some(_) => (
                    Some(field(0)? as u64)
                        .filter(|&p| p != u64::MAX)
                        .unwrap_or(0),
                    typed_order(path, e, field(1)?)?,
                ),
                None => {
                    let p = payload::page_alloc(e.payload).map_err(|x| bad("mm_page_alloc", x))?;
                    (p.pfn, p.order)
                }
            };
            if pfn == 0 {
                // failed allocation: no folio
                t.other_events += 1;
                return Ok(None);
            }
            Kind::Alloc {
                pfn,
                order: order_u8(order),
            }
        }
        Some(T_INSERT) => {
            let pfn = match typed {
                Some(_) => field(0)? as u64,
                None => {
                    payload::lru_insertion(e.payload)
                        .map_err(|x| bad("mm_lru_insertion", x))?
                        .pfn
                }
            };
            let site = match drain_site(e.callchain) {
                Some(name) => intern(&mut st.sites, &mut t.sites, &name),
                None => NO_SITE,
            };
            Kind::Insert { pfn, site }
        }
        Some(T_FREE) => {
            let (pfn, order) = match typed {
                Some(_) => (field(0)? as u64, typed_order(path, e, field(1)?)?),
                None => {
                    let p = payload::page_free(e.payload).map_err(|x| bad("mm_page_free", x))?;
                    (p.pfn, p.order)
                }
            };
            Kind::Free {
                pfn,
                order: order_u8(order),
            }
        }
        Some(T_BEGIN | T_END) => {
            let begin = e.tracked == Some(T_BEGIN);
            let lock = match typed {
                Some(_) => intern_addr(st, t, field(0)? as u64),
                None => {
                    let printed = if begin {
                        payload::contention_begin(e.payload).map(|p| p.lock)
                    } else {
                        payload::contention_end(e.payload).map(|p| p.lock)
                    };
                    let printed = printed.map_err(|x| bad(e.name, x))?;
                    intern(&mut st.locks, &mut t.locks, printed)
                }
            };
            if begin {
                Kind::Begin {
                    lock,
                    via: via_of(e.callchain),
                }
            } else {
                Kind::End { lock }
            }
        }
        Some(T_ENTER_MADVISE) => {
            // print fmt: `start: 0x%08lx, len_in: 0x%08lx, behavior: 0x%08lx`
            let (behavior, start, len) = match typed {
                Some(_) => (field(0)? as u32, field(1)? as u64, field(2)? as u64),
                None => {
                    let p = payload::madvise(e.payload).map_err(|x| bad("sys_enter_madvise", x))?;
                    (p.behavior, p.start, p.len)
                }
            };
            if behavior == MADV_FREE {
                st.lazyfree_open.insert(e.tid);
                Kind::Lazyfree { enter: true }
            } else if DISCARDING_ADVICE.contains(&behavior) {
                st.discard_open.insert(e.tid);
                t.discards.push((start, len));
                Kind::Discard { enter: true }
            } else {
                t.other_events += 1;
                return Ok(None);
            }
        }
        Some(T_ENTER_MUNMAP) => {
            st.discard_open.insert(e.tid);
            Kind::Discard { enter: true }
        }
        Some(T_EXIT_MADVISE) if st.lazyfree_open.remove(&e.tid) => Kind::Lazyfree { enter: false },
        Some(T_EXIT_MADVISE | T_EXIT_MUNMAP) => {
            // only the exits of calls whose enter was a discarding one
            if !st.discard_open.remove(&e.tid) {
                t.other_events += 1;
                return Ok(None);
            }
            Kind::Discard { enter: false }
        }
        _ => {
            t.other_events += 1;
            return Ok(None);
        }
    };
    let (Some(ts), Some(cpu)) = (e.ts_ns, e.cpu) else {
        return Err(Error::Input(format!(
            "{path}:{}: event without a timestamp or CPU column; a replay needs both \
             (perf script prints them by default; do not pass -F without time,cpu)",
            e.line
        )));
    };
    t.ts_res_ns = t.ts_res_ns.max(e.ts_res_ns);
    let ev = MmEvent {
        ts,
        cpu,
        tid: e.tid,
        kind,
    };
    Ok(Some(ev))
}

/// The caller of the outermost `lru_add_drain*()` frame: `zap_page_range_single_batched`,
/// `lru_add_drain_per_cpu` (a drain_all work item), `__folio_batch_release`, ... `None` when no
/// such frame is in the chain (a drain because the batch filled or the folio is large).
fn drain_site(chain: Chain) -> Option<String> {
    let is_drain = |s: &str| s.starts_with("lru_add_drain") || s.starts_with("__lru_add_drain");
    let (last, drain) = chain
        .symbols()
        .enumerate()
        .filter(|(_, s)| is_drain(s))
        .last()?;
    // lru_add_drain_per_cpu is itself the work item: name it, its caller is the worker thread
    if drain.starts_with("lru_add_drain_per_cpu") {
        return Some("lru_add_drain_per_cpu".to_string());
    }
    let caller = chain.symbols().nth(last + 1);
    Some(caller.unwrap_or(drain).to_string())
}

fn order_u8(order: u32) -> u8 {
    // MAX_PAGE_ORDER is 10..12 on every architecture; clamp so a corrupt value cannot make
    // `1 << order` overflow later.
    order.min(30) as u8
}

/// An order field (`unsigned int`, printed `%d`): the text path refuses what `%d` prints
/// negative, so this does too.
fn typed_order(path: &str, e: &Ev, v: i64) -> Result<u32> {
    let o = v as u32;
    if (o as i32) < 0 {
        return Err(Error::Input(format!(
            "{path}:{}: {} payload: expected an order, got {o}",
            e.line, e.name
        )));
    }
    Ok(o)
}

/// A lock address interned under the text perf prints for it (print_fmt's `%p`: `0x…` in
/// lower-case hex, `(nil)` for 0), the same id the text path gives it.
fn intern_addr(st: &mut ReadState, t: &mut Trace, addr: u64) -> u32 {
    if let Some(&id) = st.lock_addrs.get(&addr) {
        return id;
    }
    let name = if addr == 0 {
        "(nil)".to_string()
    } else {
        format!("0x{addr:x}")
    };
    let id = intern(&mut st.locks, &mut t.locks, &name);
    st.lock_addrs.insert(addr, id);
    id
}

/// The number of `name` among `names` (`map` finds it), added when new: the lock and drain-site
/// tables here, the frame names of a flame graph.
pub(crate) fn intern(map: &mut HashMap<String, u32>, names: &mut Vec<String>, name: &str) -> u32 {
    if let Some(&id) = map.get(name) {
        return id;
    }
    let id = names.len() as u32;
    names.push(name.to_string());
    map.insert(name.to_string(), id);
    id
}

/// A capture header as `meta` file entries, under the keys fixtures/capture-replay.sh writes:
/// `nproc` (CPUs online), `kernel` (`uname -r`), `perf_version` (`perf version X`, as
/// `perf version` prints it), `cmd_record` (perf's command line), `lost_events`
/// ([`CaptureHeader::lost_events`]), and `event_list` (the recorded events, comma-separated).
pub fn header_meta(h: &CaptureHeader) -> Vec<(&'static str, String)> {
    let mut m = Vec::new();
    if let Some(n) = h.nr_cpus_online {
        m.push(("nproc", n.to_string()));
    }
    if let Some(k) = &h.os_release {
        m.push(("kernel", k.clone()));
    }
    if let Some(v) = &h.perf_version {
        m.push(("perf_version", format!("perf version {v}")));
    }
    if let Some(c) = &h.cmdline {
        m.push(("cmd_record", c.join(" ")));
    }
    if !h.events.is_empty() {
        m.push(("event_list", h.events.join(",")));
    }
    if h.complete {
        m.push(("lost_events", h.lost_events().to_string()));
    }
    m
}

/// The `meta` file fixtures/capture-replay.sh writes beside each capture (`key=value` lines).
fn read_meta(path: &str) -> HashMap<String, String> {
    let mut m = HashMap::new();
    if path == "-" {
        return m;
    }
    let Some(dir) = Path::new(path).parent() else {
        return m;
    };
    let Ok(f) = std::fs::File::open(dir.join("meta")) else {
        return m;
    };
    for line in std::io::BufReader::new(f).lines().map_while(|l| l.ok()) {
        if let Some((k, v)) = line.split_once('=') {
            m.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range kept while reading ([`read_in`]) gives what the whole read cut after it gives:
    /// the same events, interned names, counts, survey and [`TimeCut`] (the capture's span and
    /// event count included), or the same error; `START,STOP` and percent ranges. For each way
    /// a capture is read: `perf script` text in pieces, a perf.data file walked in one pass
    /// (gzip; it keeps percent ranges while reading too), one of compressed records and a
    /// pipe-mode one (both the record reader's).
    #[test]
    fn a_range_kept_while_reading_is_the_range_cut_after_the_read() {
        let root = env!("CARGO_MANIFEST_DIR");
        for rel in [
            "fixtures/replay/micro-16K-r1",
            "fixtures/perfdata/micro-16K-replay",
            "fixtures/perfdata/micro-16K-z",
            "fixtures/perfdata/micro-16K-pipe",
        ] {
            let path = format!("{root}/{rel}");
            let whole = read(&path, false).expect("bundled capture reads");
            let (first, last) = (whole.events[0].ts, whole.events[whole.events.len() - 1].ts);
            let q = (last - first) / 4;
            let between = [
                (Some(first + q), Some(first + 2 * q)),
                (None, Some(first + q)),
                (Some(last - q), None),
                (Some(first), Some(last)),
                (None, None),
                // none kept: the error names the capture's span
                (Some(last + 1), None),
            ]
            .map(|(from, to)| TimeSpec::Between { from, to });
            let percent = [
                (25.0, 50.0),
                (0.0, 100.0),
                (90.0, 100.0),
                (0.0, 0.0),
                (40.0, 60.0),
            ]
            .map(|(from, to)| TimeSpec::Percent { from, to });
            for spec in between.into_iter().chain(percent) {
                let mut after = read(&path, false).expect("bundled capture reads");
                let want = after.keep_time(spec);
                let opts = capture::OpenOptions::default();
                let during = read_in(&path, &opts, Some(spec));
                let (mut during, want) = match (during, want) {
                    (Ok(t), w) => (t, w),
                    (Err(e), w) => panic!("{rel} --time {spec}: {e} (after the read: {w:?})"),
                };
                let got = during.keep_time(spec);
                match (&want, &got) {
                    (Ok(w), Ok(g)) => {
                        assert_eq!(w, g, "{rel} --time {spec}");
                        assert_eq!(g.of_events, whole.events.len() as u64);
                    }
                    (Err(w), Err(g)) => {
                        assert_eq!(w.to_string(), g.to_string(), "{rel} --time {spec}");
                        continue;
                    }
                    _ => panic!("{rel} --time {spec}: {want:?} after the read, {got:?} while"),
                }
                let one_pass = rel.ends_with("micro-16K-replay");
                if spec.absolute().is_some() || one_pass {
                    assert!(during.read_cut.is_some(), "{rel}: the read kept the range");
                }
                assert_eq!(after.events, during.events, "{rel} --time {spec}");
                let range = got.as_ref().map(|g| g.range).expect("checked above");
                let kept = whole.events.iter().filter(|e| range.holds(e.ts));
                assert_eq!(during.events.len(), kept.count(), "{rel} --time {spec}");
                assert_eq!(after.locks, during.locks);
                assert_eq!(after.sites, during.sites);
                assert_eq!(after.seen, during.seen);
                assert_eq!(after.discards, during.discards);
                assert_eq!(after.other_events, during.other_events);
                assert_eq!(after.slowpath_seen, during.slowpath_seen);
                after.ensure_survey();
                during.ensure_survey();
                assert_eq!(after.survey, during.survey, "{rel} --time {spec}");
            }
        }
    }

    /// Events of every kind the survey tells apart, on a few CPUs and tasks, in time order.
    fn made_up_events(n: usize) -> Vec<MmEvent> {
        let mut rng = crate::stats::Rng::new(7);
        let mut ts = 0i64;
        (0..n)
            .map(|_| {
                let r = rng.next_u64();
                ts += (r % 50) as i64;
                let pfn = (r >> 8) % 64;
                let kind = match (r >> 16) % 8 {
                    0 | 1 => Kind::Insert { pfn, site: NO_SITE },
                    2 => Kind::Free { pfn, order: 0 },
                    3 => Kind::End {
                        lock: ((r >> 24) % 3) as u32,
                    },
                    4 => Kind::Begin {
                        lock: ((r >> 24) % 3) as u32,
                        via: Via::Unknown,
                    },
                    5 => Kind::Discard {
                        enter: (r >> 30) % 2 == 0,
                    },
                    6 => Kind::Lazyfree {
                        enter: (r >> 30) % 2 == 0,
                    },
                    _ => Kind::Alloc { pfn, order: 2 },
                };
                MmEvent {
                    ts,
                    cpu: ((r >> 32) % 3) as u32,
                    tid: ((r >> 40) % 4) as i32,
                    kind,
                }
            })
            .collect()
    }

    /// The survey folded on the helper, as the writer publishes at uneven steps (none, one
    /// event, many; the last events never published before the end), is the fold over all the
    /// events; a writer that fails stops the helper and its error is returned.
    #[test]
    fn the_followed_survey_is_the_fold_over_every_event() {
        let events = made_up_events(50_000);
        let want = Survey::of(&events);
        for step in [1usize, 7, 4096, 49_999, 100_000] {
            let mut t = Trace::empty("");
            t.events.reserve(events.len());
            let got = follow_survey(&mut t, |t, f| {
                for (i, e) in events.iter().enumerate() {
                    if i % step == 0 {
                        f.at(&t.events);
                    }
                    f.push(&mut t.events, *e)?;
                }
                Ok(())
            })
            .expect("fills");
            assert_eq!(t.events, events);
            assert_eq!(got.finish(), want, "published every {step}");
        }
        let mut t = Trace::empty("");
        t.events.reserve(10);
        let failed = follow_survey(&mut t, |t, f| {
            for e in &events[..5] {
                f.push(&mut t.events, *e)?;
            }
            f.at(&t.events);
            Err(Error::Input("stop".to_string()))
        });
        assert!(matches!(failed, Err(Error::Input(m)) if m == "stop"));
        // pushing past the reserved capacity is refused: the helper's view cannot move
        let mut t = Trace::empty("");
        t.events.reserve_exact(3);
        let cap = t.events.capacity();
        let over = follow_survey(&mut t, |t, f| {
            for e in events.iter().take(cap + 1) {
                f.push(&mut t.events, *e)?;
            }
            Ok(())
        });
        assert!(over.is_err());
        assert_eq!(t.events.len(), cap);
    }

    /// Events the read had to put in time order were counted out of order: the trace keeps
    /// no survey, and the rebuild (which then surveys the sorted events) is the one of the
    /// capture read in order. A survey whose events were changed since is not used either.
    #[test]
    fn a_survey_speaks_only_for_the_events_it_counted() {
        use crate::whatif::reconstruct::{reconstruct, Options};
        let path = format!(
            "{}/fixtures/fbatch/churn-4K-r1/script-ns.txt.gz",
            env!("CARGO_MANIFEST_DIR")
        );
        let t = read(&path, false).expect("bundled capture reads");
        assert!(t.survey.is_some(), "read in time order: surveyed");
        let rebuilt = |t: &Trace| format!("{:?}", reconstruct(t, &Options::default()));
        let want = rebuilt(&t);
        // two neighbours with different stamps swapped, as per-CPU buffers can interleave
        let k = t
            .events
            .windows(2)
            .position(|w| w[0].ts < w[1].ts)
            .expect("distinct stamps");
        let mut shuffled = t.with_events(t.events.clone());
        shuffled.events.swap(k, k + 1);
        let mut counted = Surveyor::default();
        shuffled.events.iter().for_each(|e| counted.add(e));
        let sorted = finish(shuffled, counted, false).expect("events");
        assert!(sorted.survey.is_none(), "counted out of order: no survey");
        assert_eq!(sorted.events, t.events);
        assert_eq!(rebuilt(&sorted), want);
        // the last event dropped after the read: its survey no longer covers the events
        let mut cut = t.clone();
        cut.events.pop();
        let s = cut.survey.as_ref().expect("kept");
        assert!(!s.covers(&cut.events));
        let mut fresh = cut.clone();
        fresh.survey = None;
        assert_eq!(rebuilt(&cut), rebuilt(&fresh));
        assert_ne!(rebuilt(&cut), want, "one event fewer changes the rebuild");
    }

    /// `perf script` text read in pieces gives the trace its event reader gives, whatever the
    /// piece size: events, locks, drain sites (from call chains), counts, the slowpath seen,
    /// and in lenient mode the lines skipped; strict, the same first error.
    #[test]
    fn script_text_in_pieces_reads_as_its_event_reader() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let bad = std::env::temp_dir().join(format!("lockcast-pieces-{}.txt", std::process::id()));
        // a bundled capture with two of its header lines broken (the time's colon)
        let text = {
            let mut s = String::new();
            std::io::Read::read_to_string(
                &mut crate::input::open(&format!(
                    "{dir}/fixtures/replay/micro-16K-r1/script-ns.txt.gz"
                ))
                .expect("bundled capture opens"),
                &mut s,
            )
            .expect("reads");
            let mut lines: Vec<String> = s.lines().map(str::to_string).collect();
            for n in [20_000, 41_234] {
                lines[n - 1] = lines[n - 1].replacen(": ", "; ", 1);
            }
            lines.join("\n") + "\n"
        };
        std::fs::write(&bad, text).expect("temp file");
        let bad = bad.to_string_lossy().to_string();
        for (path, lenient) in [
            (
                format!("{dir}/fixtures/replay/micro-16K-r1/script-ns.txt.gz"),
                false,
            ),
            // call chains: the drain sites and the slowpath come from them
            (
                format!("{dir}/fixtures/fbatch/churn-4K-g/script-ns.txt.gz"),
                false,
            ),
            (bad.clone(), true),
            (bad.clone(), false),
        ] {
            let opts = capture::OpenOptions {
                lenient,
                ..Default::default()
            };
            let read = |pieces: Option<usize>| {
                let spec = InputSpec {
                    path: path.clone(),
                    block: None,
                };
                let opened = capture::open(&spec, &opts).expect("opens");
                assert_eq!(opened.format, Format::PerfScript);
                // the meta file's keys in order (a HashMap's Debug order is random)
                read_opened(&path, opened, pieces, None).map(|mut t| {
                    let meta: std::collections::BTreeMap<_, _> =
                        std::mem::take(&mut t.meta).into_iter().collect();
                    format!("{t:?} {meta:?}")
                })
            };
            let whole = read(None);
            match &whole {
                Ok(t) => assert!(t.len() > 100_000, "{path}"),
                Err(e) => assert!(e.to_string().contains(":20000:"), "{e}"),
            }
            if lenient {
                let t = read(None).expect("lenient reads");
                assert!(t.contains("skipped_lines: 2,"), "{path}");
            }
            for bytes in [
                1 << 10,
                100_000,
                SCRIPT_PIECE_BYTES,
                crate::ingest::PIECE_BYTES,
            ] {
                let got = read(Some(bytes));
                match (&got, &whole) {
                    (Ok(g), Ok(w)) => assert!(g == w, "{path}: pieces of {bytes} bytes"),
                    (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string()),
                    _ => panic!("{path}: pieces of {bytes}: {got:?}"),
                }
            }
        }
        std::fs::remove_file(&bad).ok();
    }

    /// `add_event` dispatches on these indices: each must be its event's place in `TRACKED`,
    /// found from the bare name as a perf.data file or `perf script` gives it.
    #[test]
    fn dispatch_indices_are_the_events_places_in_tracked() {
        let named = [
            (T_BEGIN, "contention_begin"),
            (T_END, "contention_end"),
            (T_INSERT, "mm_lru_insertion"),
            (T_ALLOC, "mm_page_alloc"),
            (T_FREE, "mm_page_free"),
            (T_ENTER_MADVISE, "sys_enter_madvise"),
            (T_EXIT_MADVISE, "sys_exit_madvise"),
            (T_ENTER_MUNMAP, "sys_enter_munmap"),
            (T_EXIT_MUNMAP, "sys_exit_munmap"),
        ];
        assert_eq!(named.len(), TRACKED.len());
        for (i, name) in named {
            assert_eq!(tracked_of(name), Some(i), "{name}");
            assert_eq!(TRACKED[i].split_once(':').map(|p| p.1), Some(name));
        }
        for other in [
            "mm_page_alloc_zone_locked",
            "page_alloc",
            "lru_insertion",
            "",
            ":",
        ] {
            assert_eq!(tracked_of(other), None, "{other}");
        }
    }
}
