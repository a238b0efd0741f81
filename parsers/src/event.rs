//! The record shared by every event-trace format (raw ftrace, `trace-cmd report`, `perf script`).
//!
//! The common prefix (task, cpu, time, event name) is parsed eagerly; the payload stays raw text
//! and is parsed on demand by [`crate::payload`], so unknown events cost nothing.

/// One stack frame of a call chain, as printed by `perf script`
/// (`<addr> <symbol>[+0xOFF] (<dso>)`, FORMATS.md §2.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frame {
    /// Instruction address (printed in hex without `0x`; may be 0 or garbage).
    pub addr: u64,
    /// Symbol without the `+0x..` offset; `[unknown]` kept as printed.
    pub symbol: String,
    /// Offset into the symbol, when printed (`symoff`).
    pub offset: Option<u64>,
    /// The DSO from the last parenthesised group, without the parentheses.
    pub dso: Option<String>,
}

/// Which text format an [`Event`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `/sys/kernel/tracing/trace` or `trace_pipe` text.
    Ftrace,
    /// `trace-cmd report` text.
    TraceCmd,
    /// `perf script` text (tracepoints and samples).
    PerfScript,
    /// A `perf.data` file (`perf record`), read by [`crate::perf_data`].
    PerfData,
}

impl Source {
    /// The format's name as error messages give it (`perf script: expected ...`).
    pub fn name(self) -> &'static str {
        match self {
            Source::Ftrace => "ftrace",
            Source::TraceCmd => "trace-cmd",
            Source::PerfScript => "perf script",
            Source::PerfData => "perf.data",
        }
    }

    /// Its records are perf samples, each a row of the `samples` table (with its call chain
    /// when recorded); ftrace and trace-cmd text print none.
    pub fn has_samples(self) -> bool {
        matches!(self, Source::PerfScript | Source::PerfData)
    }
}

/// One event line (plus its call chain for perf script).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// 1-based line of the event's header line in the input.
    pub line: u64,
    /// Timestamp in integer nanoseconds, when the format printed one.
    pub ts_ns: Option<i64>,
    /// Resolution of the printed timestamp in ns: 1000 for `secs.usecs`, 1 for `--ns` / `-t`.
    pub ts_res_ns: u32,
    /// CPU number, when printed.
    pub cpu: Option<u32>,
    /// Task name as printed (may contain spaces and dashes; `<...>` and `<idle>` kept).
    pub comm: String,
    /// Thread id (ftrace "PID", perf script tid).
    pub tid: i32,
    /// Thread group id / process id when printed (ftrace `(tgid)`, perf script `pid/tid`).
    pub pid: Option<i32>,
    /// Latency/irq flags as printed (`d..2.`), when the format has them.
    pub irq_flags: Option<String>,
    /// Event system, when printed (`lock` in `lock:contention_begin`); ftrace prints none.
    pub system: Option<String>,
    /// Event name without system and without trailing `:` (`contention_begin`, `cpu-clock`,
    /// `cycles:u` keeps its modifier).
    pub name: String,
    /// Sample period, when printed.
    pub period: Option<u64>,
    /// Everything after the event name, leading blanks removed. ftrace/trace-cmd keep trailing
    /// spaces, perf script trims them, so fixed-width fields at the end of a payload
    /// (`mm_lru_insertion flags=`) are padded back by [`crate::payload`]. Empty for samples
    /// with call chains.
    pub payload: String,
    /// Call chain, innermost frame first (perf script `-g`); empty otherwise.
    pub callchain: Vec<Frame>,
    /// Source format.
    pub source: Source,
}

impl Frame {
    /// `sym+0xoff` as perf prints it (just `sym` without an offset).
    pub fn symbol_with_offset(&self) -> String {
        match self.offset {
            Some(o) => format!("{}+{:#x}", self.symbol, o),
            None => self.symbol.clone(),
        }
    }
}

/// A [`Frame`] borrowed from the text it was printed in (same fields, no copies): what the
/// piece readers of `perf script` text hand out, so a call chain costs no allocation per frame.
/// Equality is the frame's (its [`FrameKey`] is left out).
#[derive(Debug, Clone, Copy)]
pub struct FrameRef<'a> {
    /// Instruction address.
    pub addr: u64,
    /// Symbol without the `+0x..` offset.
    pub symbol: &'a str,
    /// Offset into the symbol, when printed.
    pub offset: Option<u64>,
    /// The DSO, without the parentheses.
    pub dso: Option<&'a str>,
    /// The frame line this frame was read from, when the reader keeps track of them.
    pub key: FrameKey,
}

impl PartialEq for FrameRef<'_> {
    fn eq(&self, o: &Self) -> bool {
        (self.addr, self.symbol, self.offset, self.dso) == (o.addr, o.symbol, o.offset, o.dso)
    }
}

impl Eq for FrameRef<'_> {}

/// Names a frame line that a `perf script` piece reader keeps to look up when it comes again
/// (call chains repeat the same lines; a tab-led frame with a DSO and no `:`): two frames with
/// the same key, other than [`FrameKey::NONE`], are the same frame. Keys of different readers
/// never meet (each reader takes its own number), so a table builder can keep what it made of
/// a keyed frame (the string views of its symbol and DSO) instead of looking its strings up
/// again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FrameKey(u64);

impl FrameKey {
    /// No key: compare the frame's strings.
    pub const NONE: FrameKey = FrameKey(0);

    /// Bits of a key that number the line within its reader.
    const LINE_BITS: u32 = 24;

    /// The key of the `line`-th distinct frame line (from 1) of reader `reader`; `NONE` once
    /// either is past what a key holds (2^24 lines, 2^40 readers).
    pub fn new(reader: u64, line: u32) -> FrameKey {
        if line == 0 || line >= 1 << Self::LINE_BITS || reader >= 1 << (64 - Self::LINE_BITS) {
            return FrameKey::NONE;
        }
        FrameKey(reader << Self::LINE_BITS | u64::from(line))
    }

    /// The reader's number and the line's index (from 0), unless `NONE`.
    pub fn get(self) -> Option<(u64, usize)> {
        (self != FrameKey::NONE).then(|| {
            let line = self.0 & ((1 << Self::LINE_BITS) - 1);
            (self.0 >> Self::LINE_BITS, line as usize - 1)
        })
    }
}

impl FrameRef<'_> {
    /// The owned frame.
    pub fn to_frame(&self) -> Frame {
        Frame {
            addr: self.addr,
            symbol: self.symbol.to_string(),
            offset: self.offset,
            dso: self.dso.map(str::to_string),
        }
    }
}

impl Frame {
    /// This frame, borrowed.
    pub fn as_ref(&self) -> FrameRef<'_> {
        FrameRef {
            addr: self.addr,
            symbol: &self.symbol,
            offset: self.offset,
            dso: self.dso.as_deref(),
            key: FrameKey::NONE,
        }
    }
}

/// A call chain: an owned event's frames or borrowed ones.
#[derive(Debug, Clone, Copy)]
pub enum Frames<'a> {
    /// The frames of an [`Event`].
    Owned(&'a [Frame]),
    /// Frames borrowed from the text.
    Borrowed(&'a [FrameRef<'a>]),
}

impl<'a> Frames<'a> {
    /// Number of frames.
    pub fn len(&self) -> usize {
        match self {
            Frames::Owned(f) => f.len(),
            Frames::Borrowed(f) => f.len(),
        }
    }

    /// No frames.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frames, innermost first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = FrameRef<'a>> + 'a {
        let (owned, borrowed): (&'a [Frame], &'a [FrameRef<'a>]) = match *self {
            Frames::Owned(f) => (f, &[]),
            Frames::Borrowed(f) => (&[], f),
        };
        // one of the two is empty: chained, the iterator keeps an exact length
        FramesIter {
            owned: owned.iter(),
            borrowed: borrowed.iter(),
        }
    }
}

struct FramesIter<'a> {
    owned: std::slice::Iter<'a, Frame>,
    borrowed: std::slice::Iter<'a, FrameRef<'a>>,
}

impl<'a> Iterator for FramesIter<'a> {
    type Item = FrameRef<'a>;
    fn next(&mut self) -> Option<FrameRef<'a>> {
        match self.owned.next() {
            Some(f) => Some(f.as_ref()),
            None => self.borrowed.next().copied(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.owned.len() + self.borrowed.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for FramesIter<'_> {}

/// An [`Event`] whose text fields are borrowed: from an owned event ([`Event::view`]) or
/// straight from the input piece (`perf_script::PieceReader`). The table builders read
/// events through this, so either kind fills them the same way.
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a> {
    /// See [`Event::line`].
    pub line: u64,
    /// See [`Event::ts_ns`].
    pub ts_ns: Option<i64>,
    /// See [`Event::ts_res_ns`].
    pub ts_res_ns: u32,
    /// See [`Event::cpu`].
    pub cpu: Option<u32>,
    /// See [`Event::comm`].
    pub comm: &'a str,
    /// See [`Event::tid`].
    pub tid: i32,
    /// See [`Event::pid`].
    pub pid: Option<i32>,
    /// See [`Event::irq_flags`].
    pub irq_flags: Option<&'a str>,
    /// See [`Event::system`].
    pub system: Option<&'a str>,
    /// See [`Event::name`].
    pub name: &'a str,
    /// See [`Event::period`].
    pub period: Option<u64>,
    /// See [`Event::payload`].
    pub payload: &'a str,
    /// See [`Event::callchain`].
    pub callchain: Frames<'a>,
    /// See [`Event::source`].
    pub source: Source,
}

impl Event {
    /// An event with nothing in it yet, for a reader to fill
    /// ([`EventRead::next_event_into`]).
    pub fn empty(source: Source) -> Event {
        Event {
            line: 0,
            ts_ns: None,
            ts_res_ns: 0,
            cpu: None,
            comm: String::new(),
            tid: 0,
            pid: None,
            irq_flags: None,
            system: None,
            name: String::new(),
            period: None,
            payload: String::new(),
            callchain: Vec::new(),
            source,
        }
    }

    /// This event, borrowed.
    pub fn view(&self) -> EventRef<'_> {
        EventRef {
            line: self.line,
            ts_ns: self.ts_ns,
            ts_res_ns: self.ts_res_ns,
            cpu: self.cpu,
            comm: &self.comm,
            tid: self.tid,
            pid: self.pid,
            irq_flags: self.irq_flags.as_deref(),
            system: self.system.as_deref(),
            name: &self.name,
            period: self.period,
            payload: &self.payload,
            callchain: Frames::Owned(&self.callchain),
            source: self.source,
        }
    }
}

impl EventRef<'_> {
    /// The owned event.
    pub fn to_event(&self) -> Event {
        Event {
            line: self.line,
            ts_ns: self.ts_ns,
            ts_res_ns: self.ts_res_ns,
            cpu: self.cpu,
            comm: self.comm.to_string(),
            tid: self.tid,
            pid: self.pid,
            irq_flags: self.irq_flags.map(str::to_string),
            system: self.system.map(str::to_string),
            name: self.name.to_string(),
            period: self.period,
            payload: self.payload.to_string(),
            callchain: self.callchain.iter().map(|f| f.to_frame()).collect(),
            source: self.source,
        }
    }
}

/// How a capture was recorded, as its own header says (perf.data: the `HEADER_NRCPUS`,
/// `OSRELEASE`, `VERSION`, `HOSTNAME`, `ARCH`, `CMDLINE` feature sections and the event
/// attributes; tools/perf/Documentation/perf.data-file-format.txt), and the events it lost
/// (`PERF_RECORD_LOST` records from the kernel, `PERF_RECORD_LOST_SAMPLES` records perf record
/// writes per event at the end). Text formats carry none of this.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureHeader {
    /// CPUs online when recorded (`HEADER_NRCPUS`).
    pub nr_cpus_online: Option<u32>,
    /// CPUs the kernel could bring online (`HEADER_NRCPUS`).
    pub nr_cpus_avail: Option<u32>,
    /// `uname -r` of the recording's kernel (`HEADER_OSRELEASE`).
    pub os_release: Option<String>,
    /// perf's version (`HEADER_VERSION`, e.g. `6.1.187`).
    pub perf_version: Option<String>,
    /// `uname -n` (`HEADER_HOSTNAME`).
    pub hostname: Option<String>,
    /// `uname -m` (`HEADER_ARCH`).
    pub arch: Option<String>,
    /// perf's argument vector (`HEADER_CMDLINE`: the perf binary, then `record ...`).
    pub cmdline: Option<Vec<String>>,
    /// The recorded events as perf names them (`lock:contention_begin`, `cpu-clock`).
    pub events: Vec<String>,
    /// `PERF_RECORD_LOST` records read ("lost N chunks", as perf report says).
    pub lost_records: u64,
    /// Records the kernel dropped, summed over the `PERF_RECORD_LOST` records' counts.
    pub lost_kernel: u64,
    /// Samples lost, summed over the `PERF_RECORD_LOST_SAMPLES` records (what `perf report`
    /// prints as `Total Lost Samples`).
    pub lost_samples: u64,
    /// The records have been read to the end, so the lost counts are final.
    pub complete: bool,
}

impl CaptureHeader {
    /// Events the capture lost: the per-event sample count perf record wrote when there is one
    /// (it counts every sample dropped, which the kernel's `PERF_RECORD_LOST` also counts, so
    /// the two are not added), else the kernel's count.
    pub fn lost_events(&self) -> u64 {
        if self.lost_samples > 0 {
            self.lost_samples
        } else {
            self.lost_kernel
        }
    }

    /// One line saying how the capture was recorded (for a note on stderr), `None` when the
    /// header says nothing: `recorded by perf 6.1.187 on 6.18.44 (x86_64), 2 of 2 CPUs online:
    /// perf record -e ...; events: lock:contention_begin, ...`.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        let mut by = String::from("recorded");
        if let Some(v) = &self.perf_version {
            by.push_str(&format!(" by perf {v}"));
        }
        if let Some(k) = &self.os_release {
            by.push_str(&format!(" on {k}"));
        }
        if let Some(a) = &self.arch {
            by.push_str(&format!(" ({a})"));
        }
        if let (Some(on), Some(av)) = (self.nr_cpus_online, self.nr_cpus_avail) {
            by.push_str(&format!(", {on} of {av} CPUs online"));
        }
        if by != "recorded" {
            parts.push(by);
        }
        if let Some(c) = &self.cmdline {
            parts.push(format!("command: {}", c.join(" ")));
        }
        if !self.events.is_empty() {
            parts.push(format!("events: {}", self.events.join(", ")));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A streaming reader of [`Event`]s, whatever text (or binary) format it reads: the readers of
/// [`crate::ftrace`] and [`crate::perf_script`] implement it, and
/// [`crate::detect::Format::open_events`] hands one out for any event format.
pub trait EventRead {
    /// The next event, `Ok(None)` at the end of input (strict mode: the first malformed line is
    /// an error naming it; lenient mode: it is counted in [`EventRead::diagnostics`]).
    fn next_event(&mut self) -> Result<Option<Event>, crate::Error>;
    /// [`EventRead::next_event`] into `out` (`false` at the end, `out` then unspecified); a
    /// reader that can reuses `out`'s strings (perf.data:
    /// [`crate::perf_data::Reader::next_event_into`]).
    fn next_event_into(&mut self, out: &mut Event) -> Result<bool, crate::Error> {
        Ok(match self.next_event()? {
            Some(e) => {
                *out = e;
                true
            }
            None => false,
        })
    }
    /// Malformed lines skipped so far (lenient mode).
    fn diagnostics(&self) -> &crate::Diagnostics;
    /// What the capture's own header says about the recording (perf.data), `None` for text
    /// formats or before the first event was asked for. Its lost counts are final once
    /// [`EventRead::next_event`] returned `Ok(None)` ([`CaptureHeader::complete`]).
    fn header(&self) -> Option<&CaptureHeader> {
        None
    }
    /// Give only the events named in `names` (`contention_begin`, any system), when the reader
    /// can pass over the others for less than decoding them (perf.data: a sample of another
    /// event is neither decoded nor rendered); a reader that cannot ignores this and gives
    /// every event, so the caller still filters. Call before the first
    /// [`EventRead::next_event`]. Skipped events are counted in [`EventRead::skipped`].
    fn only(&mut self, _names: &[&str]) {}
    /// Events passed over because of [`EventRead::only`].
    fn skipped(&self) -> u64 {
        0
    }
    /// Ask for the integer fields `fields` of the tracepoints named, decoded from the binary
    /// payload by the event's format description instead of given as payload text (perf.data:
    /// [`crate::perf_data::Reader::typed_fields`]); `false` when the reader has no binary
    /// payload (the text formats), which then give the text as before. Call before the first
    /// [`EventRead::next_event`].
    fn typed_fields(&mut self, _want: &[(&str, &[&str])]) -> bool {
        false
    }
    /// The typed fields of the event [`EventRead::next_event`] gave last, in the order asked,
    /// `None` when it came as text.
    fn fields(&self) -> Option<&[i64]> {
        None
    }
    /// Every event at once, typed, when the reader can give them for less than one
    /// [`Event`] each (perf.data: [`crate::perf_data::Reader::typed_samples`]); `Ok(None)`:
    /// read them with [`EventRead::next_event`]. Call after [`EventRead::typed_fields`] and
    /// instead of the first [`EventRead::next_event`].
    fn typed_samples(&mut self) -> Result<Option<crate::perf_data::TypedParts>, crate::Error> {
        Ok(None)
    }
    /// Each task's command name at its first event (tid → the `comm` of that event), when
    /// the reader can find them for less than reading every event (perf.data:
    /// [`crate::perf_data::Reader::task_names`]); `Ok(None)`: read the events. Call instead of
    /// the first [`EventRead::next_event`].
    fn task_names(
        &mut self,
    ) -> Result<Option<std::collections::BTreeMap<i32, String>>, crate::Error> {
        Ok(None)
    }
    /// Give events without the payload text a reader renders from binary data, for the caller
    /// to render on another thread (perf.data: [`crate::perf_data::Reader::defer_payloads`]);
    /// `false` when the reader has none to defer (the text formats), which then give every
    /// payload as before. Call before the first [`EventRead::next_event`].
    fn defer_payloads(&mut self) -> bool {
        false
    }
    /// Give events with an empty payload where the reader would render it from binary data
    /// (perf.data: [`crate::perf_data::Reader::leave_payloads`]), for a caller that reads no
    /// payload; `false` when the reader renders none (the text formats, whose payloads are
    /// given as read). Call before the first [`EventRead::next_event`].
    fn leave_payloads(&mut self) -> bool {
        false
    }
    /// The payloads deferred since the last call, to render into the events given since then
    /// ([`crate::perf_data::Deferred::render_into`]).
    fn take_deferred(&mut self) -> Option<crate::perf_data::Deferred> {
        None
    }
    /// Every deferred payload was rendered, `unparsed` of them raw (for the notes).
    fn deferred_done(&mut self, _unparsed: u64) {}
}

/// Characteristic lines of the event-trace text formats (and of `perf lock`, which must not be
/// taken for either), for the sniffers' tests: each format's `sniff` accepts its own lines and
/// rejects the others'.
#[cfg(test)]
pub(crate) mod sample_lines {
    /// Raw ftrace (`trace`, `trace_pipe`) and `trace-cmd report`.
    pub const FTRACE: &[&str] = &[
        "# tracer: nop",
        "# entries-in-buffer/entries-written: 128/128   #P:4",
        "cpus=8",
        "version = 6",
        "          <idle>-0     [000] d..2  1136.097253: cpu_idle: state=0 cpu_id=0",
        "           <...>-882   (  882) [003] .... 10852.771186: event: x",
        "    bash-14587     1...1. 533074110us : contention_begin: 00000000f4ba7c5b (flags=SPIN|MUTEX)",
        "             cat-117     [002] ...1.     1.602243: __bio_try_merge_page <-bio_add_page",
        "           sleep-89142 [001] ...1. 162573.215752: function:             mutex_unlock",
        "       <unknown>-200   (-----) [000] .... 0.090000: cpu_frequency_limits: x",
    ];

    /// `perf script` sample headers, with and without a time column.
    pub const PERF_SCRIPT: &[&str] = &[
        "dd 29776 666709.771979:   10101010 cpu-clock: ",
        "sched-messaging    3409 [001]  7152.904029: lock:contention_begin: 0xc00000c80904ef00 (flags=SPIN)",
        "            perf 12345 [001] 12345.678901: sched:sched_switch: prev_comm=perf",
        "            perf 12345/12345 [001] 12345.678901:          1 cycles: ",
        // no time column (old perf, `-F comm,tid,event`): known event names only
        "java  3244 cpu-clock:",
        "func_ab 15294 cpu-clock: ",
        "java 19983 cycles:",
        "lrufault 13199 lock:contention_begin: 0xffff888102abc698 (flags=SPIN)",
    ];

    /// A `perf lock contention` header.
    pub const PERF_LOCK: &[&str] =
        &[" contended   total wait     max wait     avg wait         type   caller"];
}
