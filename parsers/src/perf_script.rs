//! `perf script` default text output (FORMATS.md §2): tracepoints and samples, with and without
//! call chains, read into [`Event`]s with `source` [`Source::PerfScript`].
//!
//! A sample is one header line, optionally followed by call-chain frames, ended by a blank line
//! (perf 6.1 indents frames with a TAB, shown here as spaces):
//!
//! ```text
//! lrufault 13199 [001]   477.553533:    lock:contention_begin: 0xffff888102abc698 (flags=SPIN)
//!         ffffffff82203efe __pv_queued_spin_lock_slowpath+0x10e ([kernel.kallsyms])
//!         ffffffff8220319d _raw_spin_lock_irqsave+0x4d ([kernel.kallsyms])
//!
//! ```
//!
//! [`Reader::next_event`] yields one [`Event`] per sample. It holds at most one event (the one
//! whose frames are still being read) and one line, never the whole input.
//!
//! ```
//! use lockcast_parsers::perf_script::{Options, Reader};
//! let text = "dd 29776 666709.771979:   10101010 cpu-clock: \n\
//!             \t          414b3b fsnotify (/lib/modules/4.1.0-virtual/build/vmlinux)\n\n";
//! let mut r = Reader::new(text.as_bytes(), &Options::default());
//! let ev = r.next_event().unwrap().unwrap();
//! assert_eq!((ev.comm.as_str(), ev.tid, ev.ts_ns), ("dd", 29776, Some(666_709_771_979_000)));
//! assert_eq!(ev.callchain[0].symbol, "fsnotify");
//! assert!(r.next_event().unwrap().is_none());
//! ```
//!
//! # Decisions
//!
//! * **Header line.** Fields are optional but come in a fixed order (comm, `pid/tid` or `tid`,
//!   `[cpu]`, `time:`, period, `event:`, then the rest of the line). The comm is never split on
//!   spaces: the reader looks for the first token that is `tid` or `pid/tid`, followed by an
//!   optional `[cpu]` and a `secs.frac:` time, and takes everything before it as the comm
//!   (`Web Content`, `CPU 0/KVM`, `:-1`, `<...>` all work). Without a time on the line
//!   (`java  3244 cpu-clock:`, old perf) the first `tid` token followed by an event token is
//!   taken, and the comm must then be non-empty.
//! * **Time.** `secs.usecs` gives `ts_res_ns` 1000, `--ns` (9 digits) gives 1; other digit counts
//!   give `10^(9 - digits)`. Integer arithmetic only. Without a time, `ts_ns` is `None` and
//!   `ts_res_ns` is 0.
//! * **Event name.** `lock:contention_begin:` → system `lock`, name `contention_begin`;
//!   `cpu-clock:` → no system; modifiers stay in the name (`cycles:u`, `cpu-clock:uhH`).
//!   Names left-padded by newer perf (several events recorded) are found all the same.
//! * **Payload** is the rest of the header line, trimmed (empty for `-g` samples). For events
//!   without a system (HW/SW samples recorded without `-g`) whose payload is `ip sym (dso)`,
//!   that frame is also put in `callchain`, so a no-`-g` sample has its one-frame stack. A
//!   payload that does not end in `(dso)` (e.g. cut in an e-mail) stays payload only.
//! * **Frames**: any leading whitespace, `<hex addr without 0x> <symbol>[+0xOFF] (<dso>)`. The dso
//!   is the last parenthesised group at the end of the line (nested parentheses allowed, it must
//!   be preceded by a space); the symbol is everything between, spaces and parentheses included.
//!   `(inlined)` is kept as dso `inlined`, as printed.
//! * **Blank lines.** A blank (or whitespace-only) line ends a sample that has frames. A blank
//!   line after a header that has no frames yet does not end it: frames that follow are attached
//!   to it (inferno `empty-line.txt`, `invalid-perf-with-empty-line-after-event-line.txt` are read
//!   without error). Other stray blank lines are ignored.
//! * **Malformed lines** (a line that is neither a header, nor a frame, nor blank, nor `#...`:
//!   inferno `weird-stack-line.txt`; a frame after the blank line that ended its sample; invalid
//!   UTF-8; a line over `max_line_len`): strict mode returns [`Error::Malformed`] naming the line
//!   (after yielding the event that was in progress); lenient mode skips the line, counts it in
//!   [`Reader::diagnostics`] and goes on (the sample keeps the frames read so far).
//! * Lines starting with `#` (`perf script --header`, perf 3.x) are skipped anywhere.

use std::collections::HashMap;
use std::io::BufRead;

use crate::error::{cut, Diagnostic, Diagnostics, Error, LineError, Location};
use crate::event::{Event, EventRef, FrameKey, FrameRef, Frames, Source};
use crate::lines::{Line, LineReader, SliceLines};

/// Format name used in errors.
const FORMAT: &str = "perf script";

/// What a malformed line was expected to be.
const EXPECTED_LINE: &str =
    "a sample header (comm tid [cpu] time: event:) or a call-chain frame (addr symbol (dso))";

/// What a frame found outside a sample was expected to be preceded by.
const EXPECTED_HEADER_FIRST: &str =
    "a sample header before call-chain frames (a blank line ended the previous sample)";

/// Modifier letters perf appends to event names (`cycles:u`, `cycles:uppp`, `cpu-clock:uhH`).
const MODIFIERS: &str = "ukhIGHpPSDWebR";

/// Reader options, shared by every format: see [`crate::lines::ReaderOptions`].
pub use crate::lines::ReaderOptions as Options;

/// Streaming reader of `perf script` text.
pub struct Reader<R> {
    lines: LineReader<R>,
    st: Assembly<Event>,
}

/// The sample-assembly state both readers share: the sample whose frames are being read, a
/// strict-mode error held back until that sample is returned, and whether the input is done.
struct Assembly<T> {
    lenient: bool,
    diagnostics: Diagnostics,
    /// The sample whose frames are being read, with the number of frame lines seen.
    pending: Option<(T, usize)>,
    /// A strict-mode error found while a sample was pending; returned by the next call.
    deferred: Option<Error>,
    finished: bool,
}

impl<T> Assembly<T> {
    fn new(lenient: bool) -> Self {
        Assembly {
            lenient,
            diagnostics: Diagnostics::default(),
            pending: None,
            deferred: None,
            finished: false,
        }
    }

    /// What a call returns before reading a line: the held-back error, or the end after one.
    fn resume(&mut self) -> Option<Result<Option<T>, Error>> {
        if let Some(e) = self.deferred.take() {
            self.finished = true;
            return Some(Err(e));
        }
        self.finished.then_some(Ok(None))
    }

    /// The input failed (I/O, decoding): nothing more after this error.
    fn fail(&mut self, e: Error) -> Result<Option<T>, Error> {
        self.finished = true;
        Err(e)
    }

    /// End of input: the sample in progress, if any.
    fn end(&mut self) -> Option<T> {
        self.finished = true;
        self.pending.take().map(|(t, _)| t)
    }

    /// A blank line ends a sample that has frames.
    fn blank(&mut self) -> Option<T> {
        if matches!(self.pending, Some((_, n)) if n > 0) {
            self.pending.take().map(|(t, _)| t)
        } else {
            None
        }
    }

    /// A header starts `next`; the sample it ends, if any.
    fn header(&mut self, next: T) -> Option<T> {
        self.pending.replace((next, 0)).map(|(t, _)| t)
    }

    /// A frame line: the sample it belongs to (none before the first header).
    fn frame(&mut self) -> Option<&mut T> {
        self.pending.as_mut().map(|(t, n)| {
            *n += 1;
            t
        })
    }

    /// A malformed line: `None` to go on (lenient), else what the reader returns now (the
    /// pending sample first, the error on the next call).
    fn bad(&mut self, d: Diagnostic) -> Option<Result<Option<T>, Error>> {
        if self.lenient {
            self.diagnostics.push(d);
            return None;
        }
        let err = Error::malformed(FORMAT, d);
        match self.pending.take() {
            Some((t, _)) => {
                self.deferred = Some(err);
                Some(Ok(Some(t)))
            }
            None => {
                self.finished = true;
                Some(Err(err))
            }
        }
    }
}

/// What one input line is (borrowed from the line).
enum Class<'a> {
    Blank,
    Comment,
    Header(Head<'a>),
    Frame(FrameRef<'a>),
    Bad(Diagnostic),
}

impl<R: BufRead> Reader<R> {
    /// Wrap a reader of `perf script` text.
    pub fn new(inner: R, opts: &Options) -> Self {
        Reader {
            lines: LineReader::with_options(inner, opts),
            st: Assembly::new(opts.lenient),
        }
    }

    /// Lines skipped so far (lenient mode).
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.st.diagnostics
    }

    /// Bytes consumed so far, for progress reporting.
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }

    /// The next sample, `Ok(None)` at end of input.
    ///
    /// In strict mode the first malformed line gives [`Error::Malformed`] (format
    /// `"perf script"`); the event in progress at that point is returned first. After an error
    /// the reader returns `Ok(None)`.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        if let Some(r) = self.st.resume() {
            return r;
        }
        loop {
            let line_no = self.lines.line_no() + 1;
            let class = match self.lines.next_line() {
                Err(e) => return self.st.fail(e),
                Ok(None) => return Ok(self.st.end()),
                Ok(Some(Line::Bad(d))) => Class::Bad(d),
                Ok(Some(Line::Text(s))) => classify(s, line_no, self.st.pending.is_some()),
            };
            let done = match class {
                Class::Comment => None,
                Class::Blank => self.st.blank(),
                Class::Header(h) => self.st.header(h.to_event()),
                Class::Frame(f) => {
                    if let Some(ev) = self.st.frame() {
                        ev.callchain.push(f.to_frame());
                    }
                    None
                }
                Class::Bad(d) => match self.st.bad(d) {
                    Some(r) => return r,
                    None => None,
                },
            };
            if done.is_some() {
                return Ok(done);
            }
        }
    }
}

/// One sample read by [`PieceReader`]: the header's fields and the frames, borrowed from the
/// text.
#[derive(Debug, Clone)]
pub struct Sample<'a> {
    event: EventRef<'a>,
    frames: Vec<FrameRef<'a>>,
}

impl Sample<'_> {
    /// The sample as an event (its call chain borrowed from this sample).
    pub fn view(&self) -> EventRef<'_> {
        EventRef {
            callchain: Frames::Borrowed(&self.frames),
            ..self.event
        }
    }
}

/// [`Reader`] over text already in memory (a piece of a larger input, as the parallel
/// ingest cuts them): the same samples, line numbers, diagnostics and errors, with every text
/// field and frame borrowed from the piece instead of copied into an owned [`Event`].
pub struct PieceReader<'a> {
    lines: SliceLines<'a>,
    st: Assembly<Sample<'a>>,
    /// A finished sample's frame list, reused by the next header.
    spare: Vec<FrameRef<'a>>,
    /// Every frame line read so far in this piece (`addr sym+off (dso)`, no `:`) and its
    /// frame: a capture's call chains repeat the same lines (the same address in the same
    /// function; 720 distinct lines of 31 570 in the bundled cpu-clock capture), and looking
    /// a line up costs less than parsing it again.
    seen: HashMap<&'a str, FrameRef<'a>, foldhash::fast::FixedState>,
    /// Lookups and hits in the current window of [`SEEN_WINDOW`] frame lines; the lookups
    /// stop for the rest of the piece after a window of fewer hits than misses. On a text
    /// whose every frame address is new, each insert cost more than the parse it would save:
    /// `parse --table samples` took 1.60× as long with lookups throughout, 1.02× with them
    /// stopped (85 MB, 9 alternating runs each).
    window: (u32, u32),
    /// False once a window had fewer hits than misses: the rest of the piece is parsed line
    /// by line.
    seen_on: bool,
    /// This reader's number in its frames' [`FrameKey`]s (a line's index is its place in
    /// `seen`).
    reader: u64,
}

/// The next [`PieceReader`]'s number (its frames' keys never meet another reader's).
static NEXT_READER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Frame lines per window of [`PieceReader`]'s hit count.
const SEEN_WINDOW: u32 = 8192;

impl<'a> PieceReader<'a> {
    /// Read `text` (one piece, cut at a line where a sample starts).
    pub fn new(text: &'a [u8], opts: &Options) -> Self {
        PieceReader {
            lines: SliceLines::new(text, opts),
            st: Assembly::new(opts.lenient),
            spare: Vec::new(),
            seen: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0)),
            window: (0, 0),
            seen_on: true,
            reader: NEXT_READER.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Lines skipped so far (lenient mode).
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.st.diagnostics
    }

    /// Hand a sample back once used: its frame list is reused for a later one.
    pub fn recycle(&mut self, sample: Sample<'a>) {
        let mut v = sample.frames;
        v.clear();
        self.spare = v;
    }

    /// [`classify`] of a line inside a sample, through the frame lines seen before.
    fn frame_line(&mut self, s: &'a str, line_no: u64) -> Class<'a> {
        let c = match self.seen.get(s) {
            Some(f) => {
                self.window.1 += 1;
                Class::Frame(*f)
            }
            None => {
                let mut c = classify(s, line_no, true);
                if let Class::Frame(f) = &mut c {
                    if f.dso.is_some() && memchr::memchr(b':', s.as_bytes()).is_none() {
                        // keyed from its first reading on, so a builder keeps what it made
                        // of this one
                        let line = u32::try_from(self.seen.len() + 1).unwrap_or(0);
                        f.key = FrameKey::new(self.reader, line);
                        self.seen.insert(s, *f);
                    }
                }
                c
            }
        };
        self.window.0 += 1;
        if self.window.0 == SEEN_WINDOW {
            if self.window.1 < SEEN_WINDOW / 2 {
                self.seen_on = false;
                self.seen = HashMap::default();
            }
            self.window = (0, 0);
        }
        c
    }

    /// The next sample, as [`Reader::next_event`] gives it.
    pub fn next_sample(&mut self) -> Result<Option<Sample<'a>>, Error> {
        if let Some(r) = self.st.resume() {
            return r;
        }
        loop {
            let line_no = self.lines.line_no() + 1;
            let in_sample = self.st.pending.is_some();
            let class = match self.lines.next_line() {
                None => return Ok(self.st.end()),
                Some(Line::Bad(d)) => Class::Bad(d),
                // in a sample, a line read before as a frame with a dso and no `:` is that
                // frame again (`classify` gives it without looking for a header). perf prints
                // a frame after a tab, so only such lines are looked up: a header, or a
                // tracepoint text's next event line, is neither hashed nor counted in the window
                Some(Line::Text(s)) if in_sample && self.seen_on && s.starts_with('\t') => {
                    self.frame_line(s, line_no)
                }
                Some(Line::Text(s)) => classify(s, line_no, in_sample),
            };
            let done = match class {
                Class::Comment => None,
                Class::Blank => self.st.blank(),
                Class::Header(h) => {
                    let mut frames = std::mem::take(&mut self.spare);
                    frames.extend(h.frame);
                    self.st.header(Sample {
                        event: h.event,
                        frames,
                    })
                }
                Class::Frame(f) => {
                    if let Some(s) = self.st.frame() {
                        s.frames.push(f);
                    }
                    None
                }
                Class::Bad(d) => match self.st.bad(d) {
                    Some(r) => return r,
                    None => None,
                },
            };
            if done.is_some() {
                return Ok(done);
            }
        }
    }
}

/// True for a characteristic `perf script` sample header line: a `tid` or `pid/tid`, an optional
/// `[cpu]`, a `secs.frac:` time and an `event:` token.
///
/// ```
/// use lockcast_parsers::perf_script::sniff;
/// assert!(sniff("iperf 27409/28744 [000] 441995.133575: cpu-clock: "));
/// assert!(!sniff("          <idle>-0       [002] d..3.     1.602298: bio_endio <-blk_update_request"));
/// ```
pub fn sniff(line: &str) -> bool {
    if line.starts_with('#') {
        return false;
    }
    if parse_header(line, true).is_some() {
        return true;
    }
    // Old perf and `-F comm,pid,event,...` print no time (`java  3244 cpu-clock:`). A `tid
    // event:` shape alone also fits prose (`Version 5 notes:`), so the event must be one perf
    // names (a built-in sample event or a `sys:name` tracepoint) and the rest of the line must
    // be empty or one `addr sym (dso)` frame (any payload for a tracepoint).
    match parse_header(line, false) {
        Some(h) => match split_event(h.event) {
            (Some(sys), name) => is_ident(sys) && is_ident(name),
            (None, name) => {
                SAMPLE_EVENTS.contains(&name.split(':').next().unwrap_or(name))
                    && (h.rest.is_empty() || matches!(frame_ref(h.rest), Some((_, true))))
            }
        },
        None => false,
    }
}

/// A lowercase C identifier (tracepoint systems and names).
fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Hardware and software events perf knows by name (`perf list`), with or without modifiers.
const SAMPLE_EVENTS: [&str; 26] = [
    "cpu-clock",
    "task-clock",
    "cycles",
    "cpu-cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-instructions",
    "branches",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
    "page-faults",
    "faults",
    "minor-faults",
    "major-faults",
    "context-switches",
    "cs",
    "cpu-migrations",
    "migrations",
    "alignment-faults",
    "emulation-faults",
    "mem-loads",
    "mem-stores",
];

/// True if a chunked reader may start a new piece of input at this line: a sample header
/// with a time ([`sniff`]'s first test). Frames and untimed headers never start a piece, so a
/// sample is never split from its call chain.
pub fn starts_record(line: &str) -> bool {
    !line.starts_with('#') && parse_header(line, true).is_some()
}

/// Decide what one line is. Order (first match wins): blank, `#` comment, a header with a time,
/// a frame ending in `(dso)`, a header without time, a frame without dso. The order matters for
/// lines that fit two shapes: `dd 29776 cpu-clock:` is a header (comm `dd` is also hex), and a
/// JIT frame `12345 Builtin: x (/tmp/perf-1.map)` is a frame.
///
/// A frame when no sample is open (`in_sample` false: a blank line ended the last one) is
/// malformed.
fn classify(s: &str, line_no: u64, in_sample: bool) -> Class<'_> {
    if trim(s).is_empty() {
        return Class::Blank;
    }
    if s.starts_with('#') {
        return Class::Comment;
    }
    // Every header has an `event:` token; most frames (kernel and C symbols) have no colon at
    // all, so they skip the header grammar.
    // (the memchr crate's search, not `str::contains`'s word-at-a-time one: this runs on
    // every frame line, ~4% of a call-chain text's profile)
    let may_be_header = memchr::memchr(b':', s.as_bytes()).is_some();
    if may_be_header {
        if let Some(h) = parse_header(s, true) {
            return Class::Header(h.into_head(line_no));
        }
    }
    let frame = frame_ref(s);
    let what = match frame {
        Some((f, true)) if in_sample => return Class::Frame(f),
        Some((_, true)) => EXPECTED_HEADER_FIRST,
        _ => EXPECTED_LINE,
    };
    if may_be_header {
        if let Some(h) = parse_header(s, false) {
            return Class::Header(h.into_head(line_no));
        }
    }
    let what = match frame {
        Some((f, false)) if in_sample => return Class::Frame(f),
        Some((_, false)) => EXPECTED_HEADER_FIRST,
        _ => what,
    };
    let col = s.len() - s.trim_start().len() + 1;
    Class::Bad(Diagnostic {
        location: Location {
            line: line_no,
            col: u32::try_from(col).unwrap_or(u32::MAX),
        },
        kind: LineError::expected(what, s.trim()),
        line_text: cut(s, 120),
    })
}

/// The fields of a sample header line, borrowed from the line.
#[derive(Debug, PartialEq)]
struct Header<'a> {
    comm: &'a str,
    pid: Option<i32>,
    tid: i32,
    cpu: Option<u32>,
    /// (ns, resolution in ns)
    time: Option<(i64, u32)>,
    period: Option<u64>,
    /// Event token without its trailing `:`.
    event: &'a str,
    rest: &'a str,
}

/// A header line read into an event without frames, and the frame printed on the line itself.
struct Head<'a> {
    event: EventRef<'a>,
    frame: Option<FrameRef<'a>>,
}

impl Head<'_> {
    fn to_event(&self) -> Event {
        let mut e = self.event.to_event();
        e.callchain.extend(self.frame.map(|f| f.to_frame()));
        e
    }
}

impl<'a> Header<'a> {
    fn into_head(self, line: u64) -> Head<'a> {
        let (system, name) = split_event(self.event);
        // HW/SW samples without -g print `ip sym (dso)` on the header line: that is their stack.
        // So does a tracepoint recorded with `/call-graph=no/` in a session where other events
        // have call chains: the frame follows the payload and is not part of it.
        // (a tracepoint's payload is not read as a frame: that was ~2% of a tracepoint text)
        let (payload, frame) = match system {
            None => match frame_ref(self.rest) {
                Some((f, true)) => (self.rest, Some(f)),
                _ => (self.rest, None),
            },
            Some(_) => match split_trailing_frame(self.rest) {
                Some((p, f)) => (p, Some(f)),
                None => (self.rest, None),
            },
        };
        Head {
            event: EventRef {
                line,
                ts_ns: self.time.map(|t| t.0),
                ts_res_ns: self.time.map_or(0, |t| t.1),
                cpu: self.cpu,
                comm: self.comm,
                tid: self.tid,
                pid: self.pid,
                irq_flags: None,
                system,
                name,
                period: self.period,
                payload,
                callchain: Frames::Borrowed(&[]),
                source: Source::PerfScript,
            },
            frame,
        }
    }

    #[cfg(test)]
    fn into_event(self, line: u64) -> Event {
        self.into_head(line).to_event()
    }
}

/// A tracepoint payload followed by ` <hex ip> <sym>[+0xoff] (<dso>)` (perf script prints the
/// sample's ip there when the event has no call chain but the session has some): the payload
/// without it, and the frame. Only the last three or so tokens are tried, and the frame must
/// have a `(dso)`, so payloads that merely end in a parenthesis stay whole.
fn split_trailing_frame(rest: &str) -> Option<(&str, FrameRef<'_>)> {
    if !rest.ends_with(')') {
        return None;
    }
    let toks = tokens(rest);
    for &(start, tok) in toks.iter().rev().skip(1).take(4) {
        if start == 0 || !tok.bytes().all(|b| b.is_ascii_hexdigit()) || tok.len() < 6 {
            continue;
        }
        if let Some((f, true)) = frame_ref(&rest[start..]) {
            return Some((rest[..start].trim_end(), f));
        }
    }
    None
}

/// Whitespace-separated tokens with their byte offsets.
fn tokens(s: &str) -> Vec<(usize, &str)> {
    let mut t = Tokens::new(s);
    while t.advance() {}
    let inline = t.len.min(INLINE_TOKENS);
    let mut all = t.first[..inline].to_vec();
    all.append(&mut t.more);
    all
}

/// The space/TAB-separated tokens of a line, cut only as far as they are asked for: a header's
/// fields are in its first few tokens, and a tracepoint's payload need not be cut at all.
struct Tokens<'a> {
    s: &'a str,
    pos: usize,
    /// The first tokens cut, in place: a header has about six, and a `Vec` here was a
    /// malloc and a free per header line.
    first: [(usize, &'a str); INLINE_TOKENS],
    /// Tokens cut so far.
    len: usize,
    /// Tokens after the first [`INLINE_TOKENS`] (a comm with many spaces).
    more: Vec<(usize, &'a str)>,
}

const INLINE_TOKENS: usize = 12;

impl<'a> Tokens<'a> {
    fn new(s: &'a str) -> Self {
        Tokens {
            s,
            pos: 0,
            first: [(0, ""); INLINE_TOKENS],
            len: 0,
            more: Vec::new(),
        }
    }

    /// Cut the next token; false at the end of the line. Space and TAB are ASCII, so byte
    /// offsets are char boundaries.
    fn advance(&mut self) -> bool {
        let b = self.s.as_bytes();
        let mut i = skip_seps(b, self.pos);
        if i >= b.len() {
            self.pos = i;
            return false;
        }
        let start = i;
        i = next_sep(b, i);
        self.pos = i;
        match self.s.get(start..i) {
            Some(t) => {
                match self.first.get_mut(self.len) {
                    Some(slot) => *slot = (start, t),
                    None => self.more.push((start, t)),
                }
                self.len += 1;
                true
            }
            None => false,
        }
    }

    fn get(&mut self, k: usize) -> Option<(usize, &'a str)> {
        while self.len <= k {
            if !self.advance() {
                return None;
            }
        }
        match self.first.get(k) {
            Some(&t) => Some(t),
            None => self.more.get(k - INLINE_TOKENS).copied(),
        }
    }
}

// A header is mostly padding and short tokens (`        lrufault  2162 [001]   114.368504523:
// kmem:mm_page_alloc:`), cut on every line: the two scans below look at eight bytes at a
// time, and finish byte by byte where fewer than eight remain.

const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
const TABS: u64 = u64::from_ne_bytes([b'\t'; 8]);
const LOW: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

fn is_sep(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// The eight bytes of `b` at `i` as one word, first byte lowest.
fn word(b: &[u8], i: usize) -> Option<u64> {
    let w: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// The first index at or after `i` that is not a space or TAB (`b.len()` if none).
fn skip_seps(b: &[u8], mut i: usize) -> usize {
    while let Some(w) = word(b, i) {
        let x = w ^ SPACES;
        if x != 0 {
            // the first byte that is not a space: a TAB goes on below, anything else ends
            i += (x.trailing_zeros() / 8) as usize;
            break;
        }
        i += 8;
    }
    while i < b.len() && is_sep(b[i]) {
        i += 1;
    }
    i
}

/// A mark (0x80) in each byte of `v` that is zero, exact up to and including the first
/// one (bytes above it may be marked wrongly, which the caller never reads).
fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(LOW) & !v & HIGH
}

/// The first index at or after `i` that is a space or TAB (`b.len()` if none).
fn next_sep(b: &[u8], mut i: usize) -> usize {
    while let Some(w) = word(b, i) {
        let m = zero_bytes(w ^ SPACES) | zero_bytes(w ^ TABS);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && !is_sep(b[i]) {
        i += 1;
    }
    i
}

/// Parse a header line (FORMATS.md §2.1). Real lines:
///
/// ```text
/// dd 29776 666709.771979:   10101010 cpu-clock:                      (no cpu; comm unpadded with -g)
/// iperf 27409/28744 [000] 441995.133575: cpu-clock:                  (pid/tid, cpu, no period)
/// java  3244 cpu-clock:                                              (no time)
///            false 39654 19115.489713:          1 cycles:u:  ffffffff9b201293 [unknown] ([unknown])
/// sched-messaging    3409 [001]  7152.904029: lock:contention_begin: 0xc00000c80904ef00 (flags=SPIN)
///              gdbus 1558592 [001] 1540823.804766:    1315219 cycles:P:  ffffffff9c797b2e audit_filter_syscall+0x9e ([kernel.kallsyms])   (v6.5+ pid width 7)
/// lrufault 13199 [001]   477.553530146:       kmem:mm_page_alloc: page=0x164e20 ...   (--ns, padded event name)
/// ```
///
/// With `need_time`, the pid token must be followed by (`[cpu]` and) a time; the first such
/// token wins. Without, the first pid token after a non-empty comm that is followed by
/// `[cpu]`, period and an event token wins.
fn parse_header(s: &str, need_time: bool) -> Option<Header<'_>> {
    let mut toks = Tokens::new(s);
    for i in 0.. {
        let Some((pid_start, pid_tok)) = toks.get(i) else {
            break;
        };
        if !need_time && i == 0 {
            continue;
        }
        let Some((pid, tid)) = pid_tid(pid_tok) else {
            continue;
        };
        let mut j = i + 1;
        let cpu = toks.get(j).and_then(|t| cpu_field(t.1));
        if cpu.is_some() {
            j += 1;
        }
        let time = toks.get(j).and_then(|t| time_field(t.1));
        if time.is_some() {
            j += 1;
        } else if need_time {
            continue;
        }
        let period = toks.get(j).and_then(|t| t.1.parse::<u64>().ok());
        if period.is_some() {
            j += 1;
        }
        let Some((ev_start, ev_tok)) = toks.get(j) else {
            continue;
        };
        let Some(event) = event_field(ev_tok) else {
            continue;
        };
        let rest = trim(s.get(ev_start + ev_tok.len()..).unwrap_or(""));
        let comm = trim(s.get(..pid_start).unwrap_or(""));
        return Some(Header {
            comm,
            pid,
            tid,
            cpu,
            time,
            period,
            event,
            rest,
        });
    }
    None
}

// The three header tokens below are matched by hand, not with nom combinators: they are
// tried on every token of every header line (nom's were ~6% of parsing a tracepoint text).
// The nom grammars they follow are kept in the tests, which check the two agree on every
// short string of the characters that matter.

/// Length of the `-?\d+` at the start of `s` (ASCII digits), if there is one.
fn signed_int_len(s: &[u8]) -> Option<usize> {
    let sign = usize::from(s.first() == Some(&b'-'));
    let digits = s
        .get(sign..)?
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    (digits > 0).then_some(sign + digits)
}

/// `tid` or `pid/tid` (either may be `-1`), the whole token: `29776`, `27409/28744`, `-1/-1`.
fn pid_tid_token(i: &str) -> Option<(&str, Option<&str>)> {
    let a = signed_int_len(i.as_bytes())?;
    let (first, rest) = i.split_at(a);
    if rest.is_empty() {
        return Some((first, None));
    }
    let second = rest.strip_prefix('/')?;
    (signed_int_len(second.as_bytes())? == second.len()).then_some((first, Some(second)))
}

/// `(pid, tid)` of a pid/tid token.
fn pid_tid(tok: &str) -> Option<(Option<i32>, i32)> {
    let (a, b) = pid_tid_token(tok)?;
    let a: i32 = a.parse().ok()?;
    match b {
        Some(b) => Some((Some(a), b.parse().ok()?)),
        None => Some((None, a)),
    }
}

/// `[000]`, the whole token: its digits.
fn cpu_token(i: &str) -> Option<&str> {
    let d = i.strip_prefix('[')?.strip_suffix(']')?;
    (!d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())).then_some(d)
}

fn cpu_field(tok: &str) -> Option<u32> {
    cpu_token(tok)?.parse().ok()
}

/// `666709.771979:` (secs.usecs) or `477.553530146:` (`--ns`), the whole token: seconds and
/// 1 to 9 fraction digits.
fn time_token(i: &str) -> Option<(&str, &str)> {
    // one pass over the bytes: this runs on a token of every header line, where
    // `split_once` was a memchr call per token
    let b = i.as_bytes();
    let (&last, body) = b.split_last()?;
    if last != b':' {
        return None;
    }
    let secs = body.iter().take_while(|c| c.is_ascii_digit()).count();
    let frac = body.get(secs + 1..)?;
    if secs == 0
        || body.get(secs) != Some(&b'.')
        || !(1..=9).contains(&frac.len())
        || !frac.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    // every byte up to `:` is ASCII here, so these offsets are char boundaries
    Some((i.get(..secs)?, i.get(secs + 1..i.len() - 1)?))
}

/// The value of a run of ASCII digits, `None` past `i64::MAX` (what `str::parse` gives).
fn digits_value(d: &str) -> Option<i64> {
    d.bytes().try_fold(0i64, |v, c| {
        v.checked_mul(10)?.checked_add(i64::from(c - b'0'))
    })
}

/// Time token → (integer ns, resolution ns).
fn time_field(tok: &str) -> Option<(i64, u32)> {
    let (secs, frac) = time_token(tok)?;
    let secs = digits_value(secs)?;
    let digits = u32::try_from(frac.len()).ok()?;
    let res = 10u32.checked_pow(9u32.checked_sub(digits)?)?;
    let frac = digits_value(frac)?;
    let ns = secs
        .checked_mul(1_000_000_000)?
        .checked_add(frac.checked_mul(i64::from(res))?)?;
    Some((ns, res))
}

/// An event token: ends with `:`, is not a time, has a name. Returns it without the final `:`.
fn event_field(tok: &str) -> Option<&str> {
    let name = tok.strip_suffix(':')?;
    // a time token starts with a digit; most event names do not, and skip its parse
    let may_be_time = name.starts_with(|c: char| c.is_ascii_digit());
    if name.is_empty() || name.starts_with('[') || (may_be_time && time_field(tok).is_some()) {
        return None;
    }
    Some(name)
}

/// `lock:contention_begin` → (Some("lock"), "contention_begin"); `cycles:u` → (None, "cycles:u");
/// `cpu-clock` → (None, "cpu-clock"); `mem:0x1000:rw` (breakpoint) → (None, ...).
fn split_event(ev: &str) -> (Option<&str>, &str) {
    // a short string: a byte loop beats `split_once`'s memchr call
    let Some(colon) = ev.bytes().position(|b| b == b':') else {
        return (None, ev);
    };
    // `:` is ASCII, so both cuts are char boundaries
    let (sys, rest) = (&ev[..colon], &ev[colon + 1..]);
    let first = rest
        .bytes()
        .position(|b| b == b':')
        .map_or(rest, |k| &rest[..k]);
    let is_modifiers = !first.is_empty() && first.chars().all(|c| MODIFIERS.contains(c));
    if sys.is_empty()
        || rest.is_empty()
        || sys.bytes().any(|b| b == b'/')
        || is_modifiers
        || first.starts_with(|c: char| c.is_ascii_digit())
    {
        (None, ev)
    } else {
        (Some(sys), rest)
    }
}

/// Read `text` with [`Reader`] and with [`PieceReader`] and check that they agree: the same
/// events, the same error (where one stops) and the same diagnostics. `each` sees every event.
/// The unit tests and the `perf_script` fuzz target run this; `Err` says where the two part.
#[doc(hidden)]
pub fn readers_agree(
    text: &[u8],
    opts: &Options,
    mut each: impl FnMut(&Event),
) -> Result<usize, String> {
    let mut r = Reader::new(text, opts);
    let mut p = PieceReader::new(text, opts);
    let mut n = 0;
    loop {
        let a = r.next_event();
        let b = p.next_sample().map(|o| {
            o.map(|s| {
                let e = s.view().to_event();
                p.recycle(s);
                e
            })
        });
        match (a, b) {
            (Ok(None), Ok(None)) => break,
            (Ok(Some(x)), Ok(Some(y))) if x == y => each(&x),
            (Err(x), Err(y)) if x.to_string() == y.to_string() => {}
            (x, y) => return Err(format!("event {}: reader {x:?}, piece reader {y:?}", n + 1)),
        }
        n += 1;
        if n > text.len() + 1 {
            return Err("the piece reader loops".into());
        }
    }
    if r.diagnostics() != p.diagnostics() {
        return Err(format!(
            "diagnostics: reader {:?}, piece reader {:?}",
            r.diagnostics(),
            p.diagnostics()
        ));
    }
    Ok(n)
}

/// Parse a call-chain frame (FORMATS.md §2.2); the bool tells whether it ended in `(dso)`.
/// Real lines:
///
/// ```text
/// \t          414b3b fsnotify (/lib/modules/4.1.0-virtual/build/vmlinux)     (TAB, no offset)
///         ffffffffb8f03eaa net_rx_action+0x13a (/usr/lib/debug/boot/vmlinux-5.4.14-cloudflare-2020.1.11)
/// ffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])                (column 0)
///                        0 [unknown] ([unknown])
///                   74d468 v8::Function::Call(v8::Handle<v8::Value>, int, v8::Handle<v8::Value>*) (/tmp/node-v011)
/// \t    7f443cc8af43 __mmap64 (inlined)
/// ```
#[cfg(test)]
fn parse_frame(s: &str) -> Option<(crate::event::Frame, bool)> {
    frame_ref(s).map(|(f, dso)| (f.to_frame(), dso))
}

/// [`parse_frame`], borrowed from the line.
fn frame_ref(s: &str) -> Option<(FrameRef<'_>, bool)> {
    let t = trim(s);
    let b = t.as_bytes();
    let i = b.iter().position(|&c| is_sep(c));
    let (addr_s, rest) = match i {
        Some(i) => (b.get(..i)?, t.get(i..)?.trim_start()),
        None => (b, ""),
    };
    if addr_s.is_empty() || addr_s.len() > 16 {
        return None;
    }
    // hex digits only, at most 16 of them: cannot overflow. A table lookup and one compare
    // per digit: three range tests per byte were a quarter of this function on call chains.
    let mut addr = 0u64;
    for &c in addr_s {
        let d = HEX_DIGIT[usize::from(c)];
        if d > 15 {
            return None;
        }
        addr = (addr << 4) | u64::from(d);
    }
    let (sym, dso) = split_dso(rest);
    let (symbol, offset) = split_offset(sym);
    Some((
        FrameRef {
            addr,
            symbol,
            offset,
            dso,
            key: FrameKey::NONE,
        },
        dso.is_some(),
    ))
}

/// The value of each byte as a hex digit (either case), 0xff for a byte that is not one.
const HEX_DIGIT: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// `s.trim()`, cheaper on the usual line: ASCII whitespace is cut byte by byte, and only a
/// line that then starts or ends with another whitespace candidate (a vertical tab, a
/// non-ASCII character) goes through `str::trim`, so the result is always `s.trim()`.
fn trim(s: &str) -> &str {
    let t = s.trim_ascii();
    let odd = |b: Option<&u8>| b.is_some_and(|&b| b == 0x0b || b >= 0x80);
    if odd(t.as_bytes().first()) || odd(t.as_bytes().last()) {
        t.trim()
    } else {
        t
    }
}

/// Split `symbol (dso)` at the last parenthesised group at the end of the text; the group's `(`
/// must start the text or follow a space. Nested parentheses inside the group are allowed
/// (`(/usr/lib/x.so (deleted))`).
fn split_dso(rest: &str) -> (&str, Option<&str>) {
    let Some(inner_end) = rest.len().checked_sub(1) else {
        return (rest, None);
    };
    if !rest.ends_with(')') {
        return (rest, None);
    }
    match group_open(rest.as_bytes()) {
        Some(open) => dso_group(rest, open, inner_end),
        None => (rest, None),
    }
}

/// Where the parenthesised group closed by `b`'s last byte opens: walking back from the end,
/// the `(` that brings the count of unmatched `)` to zero (the first `(` when none is open).
fn group_open(b: &[u8]) -> Option<usize> {
    // The usual group has no parenthesis inside: its `(` is the last one, and no `)` lies
    // between it and the end, where the walk finds the same `(`; this skips walking every
    // frame's dso byte by byte.
    let open = memchr::memrchr(b'(', b)?;
    let inner = b.get(open + 1..b.len().saturating_sub(1)).unwrap_or(&[]);
    match memchr::memchr(b')', inner) {
        None => Some(open),
        Some(_) => group_open_by_walk(b),
    }
}

/// [`group_open`] by counting parentheses back from the end (nested groups such as
/// `(/usr/lib/x.so (deleted))`).
fn group_open_by_walk(b: &[u8]) -> Option<usize> {
    let mut depth = 0u32;
    for (i, &c) in b.iter().enumerate().rev() {
        match c {
            b')' => depth += 1,
            b'(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// [`split_dso`]'s answer once the group's `(` is found at `i`: it must start the text or
/// follow a space.
fn dso_group(rest: &str, i: usize, inner_end: usize) -> (&str, Option<&str>) {
    let starts_group = i == 0 || rest.as_bytes().get(i.wrapping_sub(1)) == Some(&b' ');
    if !starts_group {
        return (rest, None);
    }
    let sym = rest.get(..i).unwrap_or("").trim_end();
    match rest.get(i + 1..inner_end) {
        Some(dso) => (sym, Some(dso)),
        None => (rest, None),
    }
}

/// `main+0x1f` → ("main", Some(0x1f)); `[unknown]` → ("[unknown]", None).
fn split_offset(sym: &str) -> (&str, Option<u64>) {
    // `rfind("+0x")` builds a substring searcher per frame; the last `+` is enough.
    if let Some(pos) =
        memchr::memrchr(b'+', sym.as_bytes()).filter(|&p| sym[p..].starts_with("+0x"))
    {
        let hex = sym.get(pos + 3..).unwrap_or("");
        if !hex.is_empty() && hex.len() <= 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            if let Ok(off) = u64::from_str_radix(hex, 16) {
                return (sym.get(..pos).unwrap_or(sym), Some(off));
            }
        }
    }
    (sym, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Frame;
    use crate::test_strings::each_string;
    use std::fs::File;
    use std::io::{BufReader, Read};
    use std::path::{Path, PathBuf};

    #[test]
    fn header_with_more_tokens_than_are_kept_in_place() {
        // a comm of 14 words: the pid token is the 15th (past the inline tokens)
        let comm = "a b c d e f g h i j k l m n";
        let line = format!("{comm} 4242/4243 [001]   477.553530146:       kmem:mm_page_free: page=0x1 pfn=0x1 order=0");
        let h = parse_header(&line, true).unwrap();
        assert_eq!(h.comm, comm);
        assert_eq!((h.pid, h.tid, h.cpu), (Some(4242), 4243, Some(1)));
        assert_eq!(h.time, Some((477_553_530_146, 1)));
        assert_eq!(h.event, "kmem:mm_page_free");
        assert_eq!(h.rest, "page=0x1 pfn=0x1 order=0");
        let t = tokens(&line);
        assert_eq!(t.len(), 21);
        assert_eq!(t[14], (comm.len() + 1, "4242/4243"));
    }

    fn read_all(text: &str, lenient: bool) -> (Vec<Event>, Result<(), Error>, Diagnostics) {
        read_from(text.as_bytes(), lenient)
    }

    /// The events of well-formed text, read strictly.
    fn read_ok(text: &str) -> Vec<Event> {
        let (evs, res, _) = read_all(text, false);
        res.unwrap();
        evs
    }

    fn read_from<R: BufRead>(r: R, lenient: bool) -> (Vec<Event>, Result<(), Error>, Diagnostics) {
        let opts = Options {
            lenient,
            ..Options::default()
        };
        let mut reader = Reader::new(r, &opts);
        let mut out = Vec::new();
        loop {
            match reader.next_event() {
                Ok(Some(ev)) => out.push(ev),
                Ok(None) => return (out, Ok(()), reader.diagnostics().clone()),
                Err(e) => {
                    // After an error the reader is finished.
                    assert!(matches!(reader.next_event(), Ok(None)));
                    return (out, Err(e), reader.diagnostics().clone());
                }
            }
        }
    }

    fn frame(addr: u64, symbol: &str, offset: Option<u64>, dso: Option<&str>) -> Frame {
        Frame {
            addr,
            symbol: symbol.into(),
            offset,
            dso: dso.map(Into::into),
        }
    }

    /// Lines of fixtures/fbatch/churn-4K-r1/script-ns.txt.gz: `perf record -g` with
    /// `kmem:mm_page_free/call-graph=no/`, so the free's ip is printed after its payload, while
    /// the madvise event on the line before carries a real call chain.
    #[test]
    fn tracepoint_ip_after_payload_is_a_frame_not_payload() {
        let text = "foliochurn  9934 [001]  9123.032019796: syscalls:sys_enter_madvise: start: 0x7f08968bb000, len_in: 0x00010000, behavior: 0x00000004\n\
\t          101b07 __madvise+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
\t               0 [unknown] ([unknown])\n\n\
      foliochurn  9933 [000]  9123.032021033:         kmem:mm_page_alloc: page=0x509a22 pfn=0x509a22 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP ffffffff8161f78b __alloc_frozen_pages_noprof+0x26b ([kernel.kallsyms])\n\
 sched-messaging    3409 [001]  7152.904029: lock:contention_begin: 0xc00000c80904ef00 (flags=SPIN)\n";
        let evs = read_ok(text);
        assert_eq!(evs.len(), 3);
        assert_eq!(
            evs[0].payload,
            "start: 0x7f08968bb000, len_in: 0x00010000, behavior: 0x00000004"
        );
        assert_eq!(evs[0].callchain.len(), 2);
        assert_eq!(
            evs[1].payload,
            "page=0x509a22 pfn=0x509a22 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP"
        );
        assert_eq!(
            evs[1].callchain,
            vec![frame(
                0xffffffff8161f78b,
                "__alloc_frozen_pages_noprof",
                Some(0x26b),
                Some("[kernel.kallsyms]")
            )]
        );
        // a payload that merely ends in a parenthesis keeps it
        assert_eq!(evs[2].payload, "0xc00000c80904ef00 (flags=SPIN)");
        assert!(evs[2].callchain.is_empty());
    }

    // ---- header tokens ----

    /// The nom grammars of the header tokens, the reference the hand-written matchers follow.
    mod grammar {
        use nom::bytes::complete::take_while_m_n;
        use nom::character::complete::{char, digit1};
        use nom::combinator::{all_consuming, opt, recognize};
        use nom::sequence::{delimited, preceded, terminated};
        use nom::{IResult, Parser};

        fn signed_int(i: &str) -> IResult<&str, &str> {
            recognize((opt(char('-')), digit1)).parse(i)
        }
        fn pid_tid_token(i: &str) -> IResult<&str, (&str, Option<&str>)> {
            all_consuming((signed_int, opt(preceded(char('/'), signed_int)))).parse(i)
        }
        fn cpu_token(i: &str) -> IResult<&str, &str> {
            all_consuming(delimited(char('['), digit1, char(']'))).parse(i)
        }
        fn time_token(i: &str) -> IResult<&str, (&str, &str)> {
            all_consuming(terminated(
                (
                    digit1,
                    preceded(
                        char('.'),
                        take_while_m_n(1, 9, |c: char| c.is_ascii_digit()),
                    ),
                ),
                char(':'),
            ))
            .parse(i)
        }
        pub fn pid_tid(i: &str) -> Option<(&str, Option<&str>)> {
            pid_tid_token(i).ok().map(|(_, v)| v)
        }
        pub fn cpu(i: &str) -> Option<&str> {
            cpu_token(i).ok().map(|(_, v)| v)
        }
        pub fn time(i: &str) -> Option<(&str, &str)> {
            time_token(i).ok().map(|(_, v)| v)
        }
    }

    #[test]
    fn header_tokens_match_their_nom_grammars() {
        // every string of up to 6 of these pieces (~1.9 M), each through the three matchers
        let parts = [
            "1",
            "0",
            "-",
            "/",
            "[",
            "]",
            ".",
            ":",
            "x",
            "123456789",
            "٣",
        ];
        let n = each_string(&parts, 6, |s| {
            assert_eq!(pid_tid_token(s), grammar::pid_tid(s), "{s:?}");
            assert_eq!(cpu_token(s), grammar::cpu(s), "{s:?}");
            assert_eq!(time_token(s), grammar::time(s), "{s:?}");
        });
        assert!(n > 1_900_000, "{n}");
    }

    /// `time_field` as it was written before the digits were read by hand: `str::parse`.
    fn time_field_by_parse(tok: &str) -> Option<(i64, u32)> {
        let (secs, frac) = grammar::time(tok)?;
        let secs: i64 = secs.parse().ok()?;
        let digits = u32::try_from(frac.len()).ok()?;
        let res = 10u32.checked_pow(9u32.checked_sub(digits)?)?;
        let frac: i64 = frac.parse().ok()?;
        let ns = secs
            .checked_mul(1_000_000_000)?
            .checked_add(frac.checked_mul(i64::from(res))?)?;
        Some((ns, res))
    }

    #[test]
    fn time_fields_read_by_hand_are_those_str_parse_reads() {
        // every seconds length around i64's and the ns product's overflow, each fraction length
        let mut n = 0;
        for secs in 0..=20 {
            for lead in ["", "0", "9"] {
                for frac in 0..=10 {
                    for d in ['0', '5', '9'] {
                        let s = format!(
                            "{lead}{}.{}:",
                            d.to_string().repeat(secs),
                            d.to_string().repeat(frac)
                        );
                        assert_eq!(time_field(&s), time_field_by_parse(&s), "{s:?}");
                        // the event matcher's shortcut: what it took before, checking all
                        let before = s
                            .strip_suffix(':')
                            .filter(|n| !n.is_empty() && time_field_by_parse(&s).is_none());
                        assert_eq!(event_field(&s), before, "{s:?}");
                        n += 1;
                    }
                }
            }
        }
        // 2^64 + 5 seconds: wraps to 5 in unchecked arithmetic, where `parse` says too large
        for s in [
            "9223372036.854775807:",
            "9223372036.854775808:",
            "9223372037.0:",
            "18446744073709551621.0:",
            "-1.5:",
        ] {
            assert_eq!(time_field(s), time_field_by_parse(s), "{s:?}");
        }
        assert_eq!(time_field("9223372036.854775807:"), Some((i64::MAX, 1)));
        assert!(n > 2000);
    }

    #[test]
    fn dso_groups_found_by_the_shortcut_are_those_the_walk_finds() {
        // every string of up to 7 of these pieces (~960 k): nested, unbalanced, empty groups
        let parts = ["(", ")", " ", "x", "é", "(a)", " (b c)"];
        let n = each_string(&parts, 7, |s| {
            let b = s.as_bytes();
            assert_eq!(group_open(b), group_open_by_walk(b), "{s:?}");
        });
        assert!(n > 900_000, "{n}");
        assert_eq!(
            split_dso("x+0x1 (/usr/lib/x.so (deleted))"),
            ("x+0x1", Some("/usr/lib/x.so (deleted)"))
        );
        assert_eq!(
            split_dso("main+0x1f ([kernel.kallsyms])"),
            ("main+0x1f", Some("[kernel.kallsyms]"))
        );
        assert_eq!(split_dso("f(x) (a.so)"), ("f(x)", Some("a.so")));
        assert_eq!(split_dso("f(a.so)"), ("f(a.so)", None));
    }

    #[test]
    fn the_hex_table_reads_each_byte_as_to_digit_does() {
        for b in 0..=255u8 {
            let want = char::from(b).to_digit(16).map_or(0xff, |d| d as u8);
            assert_eq!(HEX_DIGIT[usize::from(b)], want, "{b:#x}");
        }
    }

    #[test]
    fn word_scans_cut_tokens_where_a_byte_loop_does() {
        // every string of up to 8 of these pieces (~2 M; spaces, TABs, a character with the high
        // bit, bytes one off the separators), at each start offset
        let parts = [" ", "\t", "x", "é", "!", "\u{8}"];
        let n = each_string(&parts, 8, |s| {
            let s = s.as_bytes();
            for i in 0..=s.len() {
                let skip = i + s[i..].iter().take_while(|&&c| is_sep(c)).count();
                let end = i + s[i..].iter().take_while(|&&c| !is_sep(c)).count();
                assert_eq!(skip_seps(s, i), skip, "{s:?} at {i}");
                assert_eq!(next_sep(s, i), end, "{s:?} at {i}");
            }
        });
        assert!(n > 1_900_000, "{n}");
    }

    #[test]
    fn perf_script_tokens_pid_tid() {
        assert_eq!(pid_tid_token("27409/28744"), Some(("27409", Some("28744"))));
        assert_eq!(pid_tid_token("-1/-1"), Some(("-1", Some("-1"))));
        assert_eq!(pid_tid_token("3244"), Some(("3244", None)));
        assert!(pid_tid_token("3244x").is_none());
        assert!(pid_tid_token("0/KVM").is_none());
        assert_eq!(pid_tid("27409/28744"), Some((Some(27409), 28744)));
        assert_eq!(pid_tid("99999999999"), None);
    }

    #[test]
    fn perf_script_tokens_cpu_and_time() {
        assert_eq!(cpu_token("[003]"), Some("003"));
        assert!(cpu_token("[003").is_none());
        assert_eq!(time_token("441995.133575:"), Some(("441995", "133575")));
        assert!(time_token("441995.133575").is_none());
        assert!(time_token("1.0123456789:").is_none());
        assert_eq!(
            time_field("666709.771979:"),
            Some((666_709_771_979_000, 1000))
        );
        assert_eq!(time_field("477.553530146:"), Some((477_553_530_146, 1)));
        assert_eq!(time_field("0.5:"), Some((500_000_000, 100_000_000)));
        assert_eq!(time_field("99999999999999999.1:"), None);
    }

    #[test]
    fn perf_script_event_names_system_and_modifiers() {
        assert_eq!(
            split_event("lock:contention_begin"),
            (Some("lock"), "contention_begin")
        );
        assert_eq!(split_event("cpu-clock"), (None, "cpu-clock"));
        assert_eq!(split_event("cycles:u"), (None, "cycles:u"));
        assert_eq!(split_event("cycles:uppp"), (None, "cycles:uppp"));
        assert_eq!(split_event("cpu-clock:uhH"), (None, "cpu-clock:uhH"));
        assert_eq!(split_event("cycles:P"), (None, "cycles:P"));
        assert_eq!(
            split_event("kmem:mm_page_alloc"),
            (Some("kmem"), "mm_page_alloc")
        );
        assert_eq!(split_event("mem:0x1000:rw"), (None, "mem:0x1000:rw"));
        assert_eq!(split_event("cpu/cycles/u"), (None, "cpu/cycles/u"));
    }

    // ---- checklist 9: comm with spaces, unpadded comm, pid widths, optional fields ----

    #[test]
    fn perf_script_checklist9_comm_with_spaces_is_not_split() {
        let cases = [
            (
                "Web Content 4121/4160 [002] 12.000001: cpu-clock: ",
                "Web Content",
                Some(4121),
                4160,
            ),
            (
                "CPU 0/KVM  4242 [001] 5.5: kvm:kvm_exit: reason EPT_VIOLATION",
                "CPU 0/KVM",
                None,
                4242,
            ),
            (
                ":-1    -1/-1 [000] 1.000000: cpu-clock: ",
                ":-1",
                Some(-1),
                -1,
            ),
            (
                "<...>  882 [003] 10852.771186: sched:x: a",
                "<...>",
                None,
                882,
            ),
            (
                "Thread 2 7 [000] 1.000000: cpu-clock: ",
                "Thread 2",
                None,
                7,
            ),
        ];
        for (line, comm, pid, tid) in cases {
            let h = parse_header(line, true).unwrap();
            assert_eq!((h.comm, h.pid, h.tid), (comm, pid, tid), "{line}");
        }
    }

    #[test]
    fn perf_script_checklist9_optional_fields_in_fixed_order() {
        // no cpu, period, comm unpadded (-g)
        let h = parse_header("dd 29776 666709.771979:   10101010 cpu-clock: ", true).unwrap();
        assert_eq!(
            h,
            Header {
                comm: "dd",
                pid: None,
                tid: 29776,
                cpu: None,
                time: Some((666_709_771_979_000, 1000)),
                period: Some(10_101_010),
                event: "cpu-clock",
                rest: "",
            }
        );
        // pid/tid + cpu, no period
        let h = parse_header("iperf 27409/28744 [000] 441995.133575: cpu-clock: ", true).unwrap();
        assert_eq!(
            (h.pid, h.tid, h.cpu, h.period),
            (Some(27409), 28744, Some(0), None)
        );
        // no time at all
        assert!(parse_header("java  3244 cpu-clock:", true).is_none());
        let h = parse_header("java  3244 cpu-clock:", false).unwrap();
        assert_eq!(
            (h.comm, h.tid, h.time, h.event),
            ("java", 3244, None, "cpu-clock")
        );
        // v6.5+ pid width 7, comm %16s
        let h = parse_header(
            "             gdbus 1558592 [001] 1540823.804766:    1315219 cycles:P:  ffffffff9c797b2e audit_filter_syscall+0x9e ([kernel.kallsyms])",
            true,
        )
        .unwrap();
        assert_eq!(
            (h.comm, h.tid, h.period),
            ("gdbus", 1_558_592, Some(1_315_219))
        );
        assert_eq!(
            h.rest,
            "ffffffff9c797b2e audit_filter_syscall+0x9e ([kernel.kallsyms])"
        );
        // time right-aligned in 12, comm left-padded
        let h = parse_header("mir-console 23166 [000]  1333.768765: cpu-clock: ", true).unwrap();
        assert_eq!((h.comm, h.cpu), ("mir-console", Some(0)));
    }

    #[test]
    fn perf_script_tracepoint_payload_and_padded_event_name() {
        let line = "perf  6429 [000]    22.498450:             kmem:mm_page_alloc: page=0x176a17 pfn=1534487 order=0 migratetype=0 gfp_flags=GFP_KERNEL";
        let ev = parse_header(line, true).unwrap().into_event(7);
        assert_eq!(ev.system.as_deref(), Some("kmem"));
        assert_eq!(ev.name, "mm_page_alloc");
        assert_eq!(
            ev.payload,
            "page=0x176a17 pfn=1534487 order=0 migratetype=0 gfp_flags=GFP_KERNEL"
        );
        assert_eq!(
            (ev.line, ev.cpu, ev.ts_ns),
            (7, Some(0), Some(22_498_450_000))
        );
        assert!(ev.callchain.is_empty());
        // payload with ':' and a flags field with spaces stays verbatim
        let line = "lrufault 13199 [001]   477.553532:  pagemap:mm_lru_insertion: folio=0xffffea0005938800 pfn=0x164e20 lru=1 flags=Ma    ";
        let ev = parse_header(line, true).unwrap().into_event(1);
        assert_eq!(ev.name, "mm_lru_insertion");
        assert_eq!(
            ev.payload,
            "folio=0xffffea0005938800 pfn=0x164e20 lru=1 flags=Ma"
        );
    }

    #[test]
    fn perf_script_no_callchain_ip_on_header_line_is_one_frame() {
        let text = "           false 39654 19115.489713:          1 cycles:u:  ffffffff9b201293 [unknown] ([unknown])\n           false 39654 19115.489719:          1 cycles:      7fa68b1f2d84 _dl_start+0x4 (/usr/lib/ld-2.31.so)\n";
        let evs = read_ok(text);
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].name, "cycles:u");
        assert_eq!(
            evs[0].callchain,
            vec![frame(
                0xffffffff9b201293,
                "[unknown]",
                None,
                Some("[unknown]")
            )]
        );
        assert_eq!(
            evs[1].callchain,
            vec![frame(
                0x7fa68b1f2d84,
                "_dl_start",
                Some(4),
                Some("/usr/lib/ld-2.31.so")
            )]
        );
        assert_eq!(
            evs[1].payload,
            "7fa68b1f2d84 _dl_start+0x4 (/usr/lib/ld-2.31.so)"
        );
    }

    #[test]
    fn perf_script_no_callchain_cut_dso_stays_payload() {
        let line = "    NetworkManager    3452 [005] 1540823.805301:    1558782 cycles:P:      7fa957737748 g_bit_lock+0x58 (/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0.7400.5>";
        let evs = read_ok(line);
        assert_eq!(evs[0].comm, "NetworkManager");
        assert!(evs[0].callchain.is_empty());
        assert!(evs[0].payload.ends_with("0.7400.5>"));
    }

    // ---- checklist 10: frame indents, addresses, symbols, dso ----

    #[test]
    fn perf_script_checklist10_frame_indent_tab_spaces_none() {
        let want = frame(
            0x414b3b,
            "fsnotify",
            None,
            Some("/lib/modules/4.1.0-virtual/build/vmlinux"),
        );
        for line in [
            "\t          414b3b fsnotify (/lib/modules/4.1.0-virtual/build/vmlinux)",
            "                  414b3b fsnotify (/lib/modules/4.1.0-virtual/build/vmlinux)",
            "414b3b fsnotify (/lib/modules/4.1.0-virtual/build/vmlinux)",
        ] {
            assert_eq!(parse_frame(line), Some((want.clone(), true)), "{line:?}");
        }
    }

    #[test]
    fn perf_script_checklist10_zero_and_garbage_addresses() {
        assert_eq!(
            parse_frame("                       0 [unknown] ([unknown])"),
            Some((frame(0, "[unknown]", None, Some("[unknown]")), true))
        );
        assert_eq!(
            parse_frame("\t5966605dd52f8e00 [unknown] ([unknown])"),
            Some((
                frame(0x5966605dd52f8e00, "[unknown]", None, Some("[unknown]")),
                true
            ))
        );
        assert_eq!(parse_frame("\t          THIS_IS_A_WEIRD_LINE"), None);
        assert_eq!(parse_frame("\t1ffffffffffffffff x (y)"), None);
    }

    #[test]
    fn perf_script_checklist10_symbols_with_spaces_parens_and_dso_last_group() {
        let cases = [
            (
                "             c6d7895aac9 LazyCompile:~body_0 evalmachine.<anonymous>:1 (/tmp/perf-31912.map)",
                frame(0xc6d7895aac9, "LazyCompile:~body_0 evalmachine.<anonymous>:1", None, Some("/tmp/perf-31912.map")),
            ),
            (
                "                  74d468 v8::Function::Call(v8::Handle<v8::Value>, int, v8::Handle<v8::Value>*) (/tmp/node-v011)",
                frame(0x74d468, "v8::Function::Call(v8::Handle<v8::Value>, int, v8::Handle<v8::Value>*)", None, Some("/tmp/node-v011")),
            ),
            (
                "            562039148b50 <alloc::boxed::Box<T> as gc::trace::Trace>::trace+0x20 (/workspaces/boa/target/debug/boa_cli)",
                frame(0x562039148b50, "<alloc::boxed::Box<T> as gc::trace::Trace>::trace", Some(0x20), Some("/workspaces/boa/target/debug/boa_cli")),
            ),
            (
                "            13a80b608e0a RegExp:[&<>\\\"\\'] (/tmp/perf-7539.map)",
                frame(0x13a80b608e0a, "RegExp:[&<>\\\"\\']", None, Some("/tmp/perf-7539.map")),
            ),
            (
                "\t    7f443cc8af43 __mmap64 (inlined)",
                frame(0x7f443cc8af43, "__mmap64", None, Some("inlined")),
            ),
            (
                "        ffffffffc09ace93 bpf_prog_2b956549c660136a_uni_l4lb+0xb80 (bpf_prog_2b956549c660136a_uni_l4lb)",
                frame(0xffffffffc09ace93, "bpf_prog_2b956549c660136a_uni_l4lb", Some(0xb80), Some("bpf_prog_2b956549c660136a_uni_l4lb")),
            ),
            (
                "\t     d70 _start+0xffff018fd5dce000 (/usr/lib/ld-2.24.so)",
                frame(0xd70, "_start", Some(0xffff018fd5dce000), Some("/usr/lib/ld-2.24.so")),
            ),
            (
                "\t  401b97 main (/tmp/x (deleted))",
                frame(0x401b97, "main", None, Some("/tmp/x (deleted)")),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_frame(line), Some((want, true)), "{line}");
        }
        // no dso (-F ip,sym): a symbol ending in `)` without a space before `(` is not a dso
        assert_eq!(
            parse_frame("\t  af2fa1 node::After(uv_fs_s*)"),
            Some((frame(0xaf2fa1, "node::After(uv_fs_s*)", None, None), false))
        );
    }

    #[test]
    fn perf_script_hex_comm_header_is_not_a_frame() {
        // `dd` and `cc1` are hex: the header shapes win over the frame shape.
        let evs = read_ok("dd 29776 cpu-clock:\n\tffffffff81000000 x ([kernel.kallsyms])\n\ncc1 5 [001] 1.000001: lock:contention_begin: 0xffff (flags=SPIN)\n");
        assert_eq!(evs.len(), 2);
        assert_eq!((evs[0].comm.as_str(), evs[0].callchain.len()), ("dd", 1));
        assert_eq!(evs[1].comm, "cc1");
        assert_eq!(evs[1].payload, "0xffff (flags=SPIN)");
    }

    #[test]
    fn perf_script_samples_end_at_blank_and_at_next_header() {
        let text = "sched-messaging    3409 [001]  7152.904029: lock:contention_begin: 0xc00000c80904ef00 (flags=SPIN)\n        c0000000001e926c __traceiter_contention_begin+0x6c ([kernel.kallsyms])\n                       0 [unknown] ([unknown])\n\nsched-messaging    3408 [005]  7152.904036: lock:contention_begin: 0xc00000c80904ef00 (flags=SPIN)\n        c0000000001e926c __traceiter_contention_begin+0x6c ([kernel.kallsyms])\n";
        let evs = read_ok(text);
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].callchain.len(), 2);
        assert_eq!(evs[0].callchain[1].addr, 0);
        assert_eq!((evs[1].tid, evs[1].cpu, evs[1].line), (3408, Some(5), 5));
        assert_eq!(evs[1].payload, "0xc00000c80904ef00 (flags=SPIN)");
        assert_eq!(evs[1].source, Source::PerfScript);
    }

    #[test]
    fn perf_script_comment_header_block_skipped() {
        let text = "# ========\n# captured on: Thu Aug 17 14:14:43 2017\n# ========\n#\nnoploop 21796 [001] 1410597.984841: instructions: \n\t             993 main (/root/noploop)\n\n";
        let evs = read_ok(text);
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].line, 5);
        assert_eq!(
            evs[0].callchain,
            vec![frame(0x993, "main", None, Some("/root/noploop"))]
        );
    }

    #[test]
    fn perf_script_blank_after_header_is_tolerated() {
        // inferno empty-line.txt
        let text = "inline-counter 26037  8801.193547:     250000 cpu-clock:uhH:\n\t          401b97 main+0x1f (./tests/data/inline-counter/inline-counter)\n\ninline-counter 26037  8801.194312:     250000 cpu-clock:uhH:\n\n\t          401b94 main+0x1c (./tests/data/inline-counter/inline-counter)\n";
        for lenient in [false, true] {
            let (evs, res, diag) = read_all(text, lenient);
            res.unwrap();
            assert_eq!(diag.skipped, 0);
            assert_eq!(evs.len(), 2);
            assert_eq!(evs[1].name, "cpu-clock:uhH");
            assert_eq!(evs[1].callchain[0].offset, Some(0x1c));
        }
    }

    #[test]
    fn perf_script_weird_stack_line_strict_fails_lenient_skips() {
        // inferno weird-stack-line.txt
        let text = "inline-counter 26037  8801.193547:     250000 cpu-clock:uhH:\n\t          401b97 main+0x1f (./tests/data/inline-counter/inline-counter)\n\ninline-counter 26037  8801.194312:     250000 cpu-clock:uhH:\n\t          THIS_IS_A_WEIRD_LINE\n";
        let (evs, res, _) = read_all(text, false);
        // both events are still yielded, then the error
        assert_eq!(evs.len(), 2);
        let err = res.unwrap_err();
        assert_eq!(err.location(), Some(Location { line: 5, col: 12 }));
        let msg = err.to_string();
        assert!(
            msg.starts_with("5:12: perf script: expected a sample header"),
            "{msg}"
        );
        assert!(msg.contains("THIS_IS_A_WEIRD_LINE"), "{msg}");
        let (evs, res, diag) = read_all(text, true);
        res.unwrap();
        assert_eq!(evs.len(), 2);
        assert_eq!(diag.skipped, 1);
        assert_eq!(diag.first[0].location.line, 5);
    }

    #[test]
    fn perf_script_stray_frame_after_ended_sample() {
        let text = "a 1 1.000001: cpu-clock:\n\t1 f (d)\n\n\t2 g (d)\nb 2 1.000002: cpu-clock:\n";
        let (evs, res, _) = read_all(text, false);
        assert_eq!(evs.len(), 1);
        let err = res.unwrap_err();
        assert_eq!(err.location().map(|l| l.line), Some(4));
        assert!(err.to_string().contains("a blank line ended"), "{err}");
        assert!(err.to_string().ends_with("got \"2 g (d)\""), "{err}");
        let (evs, res, diag) = read_all(text, true);
        res.unwrap();
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].callchain.len(), 1);
        assert_eq!(diag.skipped, 1);
    }

    #[test]
    fn perf_script_bad_utf8_and_long_lines() {
        let mut text = b"a 1 1.000001: cpu-clock:\n\t1 f\xff (d)\n\t2 g (d)\n".to_vec();
        text.extend_from_slice(format!("\t3 {} (d)\n", "x".repeat(300)).as_bytes());
        let opts = Options {
            lenient: true,
            max_line_len: 200,
            ..Options::default()
        };
        let mut r = Reader::new(&text[..], &opts);
        let ev = r.next_event().unwrap().unwrap();
        assert_eq!(ev.callchain.len(), 1);
        assert!(r.next_event().unwrap().is_none());
        assert_eq!(r.diagnostics().skipped, 2);
        assert_eq!(r.bytes_read(), text.len() as u64);
        let (evs, res, _) = read_from(&text[..], false);
        assert_eq!(evs.len(), 1);
        assert!(matches!(
            res,
            Err(Error::Malformed {
                kind: LineError::InvalidUtf8 { byte: 4 },
                ..
            })
        ));
    }

    #[test]
    fn perf_script_sniff_lines() {
        use crate::event::sample_lines::{FTRACE, PERF_LOCK, PERF_SCRIPT};
        for line in PERF_SCRIPT {
            assert!(sniff(line), "{line}");
        }
        let not_perf_script = [
            "java  3244 cpu-clock: some prose",
            "Version 5 notes:",
            "\t          414b3b fsnotify (/lib/modules/4.1.0-virtual/build/vmlinux)",
            "# ========",
        ];
        for line in FTRACE.iter().chain(PERF_LOCK).chain(&not_perf_script) {
            assert!(!sniff(line), "{line}");
        }
        assert!(!starts_record("java  3244 cpu-clock:"));
    }

    // ---- whole files: the corpus and own fixtures ----

    /// The corpus of real tool outputs, copied into the repository (`tests/corpus/`).
    fn corpus_dir() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/corpus")).to_path_buf()
    }

    fn fixtures_dir() -> PathBuf {
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/perf-script"
        ))
        .to_path_buf()
    }

    fn open(path: &Path) -> Box<dyn BufRead> {
        let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if path.extension().is_some_and(|e| e == "gz") {
            Box::new(BufReader::new(flate2::read::GzDecoder::new(f)))
        } else {
            Box::new(BufReader::new(f))
        }
    }

    /// What one corpus file must give.
    struct Expect {
        file: &'static str,
        /// Samples (strict mode; before the error if there is one).
        samples: usize,
        /// Sum of frames over all samples.
        frames: usize,
        /// Strict-mode error line, if the file is malformed; lenient mode must then skip
        /// exactly `lenient_skipped` lines and yield `lenient_samples`.
        strict_error_line: Option<u64>,
        lenient_skipped: u64,
        lenient_samples: usize,
        /// Checks on the parsed events.
        check: fn(&[Event]),
    }

    fn ts(ev: &Event) -> (i64, u32) {
        (ev.ts_ns.unwrap_or(-1), ev.ts_res_ns)
    }

    /// Sample counts: `grep -cE '[0-9]+\.[0-9]{6}: '` (headers with a time) or the count of
    /// lines not starting with whitespace/`#` for files without times; frames: lines that start
    /// with whitespace and hold a hex address (`grep -cP '^\s+[0-9a-f]+ '`), plus frames on
    /// header lines. Values read off the raw text.
    const CORPUS: &[Expect] = &[
        Expect {
            file: "flamegraph-example-perf-stacks.txt.gz",
            samples: 1315,
            frames: 34510,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 1315,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.pid, e.tid, e.cpu),
                    ("perf", Some(977), 977, Some(0))
                );
                assert_eq!(ts(e), (7_628_263_042_515_000, 1000));
                assert_eq!(e.name, "cycles");
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xffffffff8104f45a,
                        "native_write_msr_safe",
                        None,
                        Some("[kernel.kallsyms]")
                    )
                );
            },
        },
        Expect {
            file: "flamegraph-perf-cycles-instructions-01.txt",
            samples: 444,
            frames: 705,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 444,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.cpu, e.line),
                    ("noploop", 21796, Some(1), 22)
                );
                assert_eq!(ts(e), (1_410_597_984_841_000, 1000));
                assert_eq!(e.name, "instructions");
                assert_eq!(
                    e.callchain,
                    vec![frame(0x993, "main", None, Some("/root/noploop"))]
                );
                assert_eq!(evs.iter().filter(|e| e.name == "cycles").count(), 111);
                assert_eq!(evs.iter().filter(|e| e.name == "instructions").count(), 333);
            },
        },
        Expect {
            file: "flamegraph-perf-dd-stacks-01.txt",
            samples: 11,
            frames: 52,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 11,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.period),
                    ("dd", 29776, Some(10_101_010))
                );
                assert_eq!(ts(e), (666_709_771_979_000, 1000));
                assert_eq!(
                    e.callchain[5],
                    frame(0, "[unknown]", None, Some("[unknown]"))
                );
            },
        },
        Expect {
            file: "flamegraph-perf-funcab-cmd-01.txt",
            samples: 169,
            frames: 507,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 169,
            check: |evs| {
                let e = &evs[0];
                assert_eq!((e.comm.as_str(), e.tid, e.line), ("func_ab", 15285, 19));
                assert_eq!(ts(e), (28_075_374_517_811_000, 1000));
                assert_eq!(
                    e.callchain[0],
                    frame(0x400577, "func_b", None, Some("/root/lang/func_ab"))
                );
            },
        },
        Expect {
            file: "flamegraph-perf-funcab-pid-01.txt",
            samples: 228,
            frames: 684,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 228,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.ts_ns, e.ts_res_ns),
                    ("func_ab", 15294, None, 0)
                );
                assert_eq!(e.name, "cpu-clock");
                assert_eq!(
                    e.callchain[0],
                    frame(0x400570, "func_b", None, Some("/root/lang/func_ab"))
                );
            },
        },
        Expect {
            file: "flamegraph-perf-iperf-stacks-pidtid-01.txt",
            samples: 201,
            frames: 3207,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 201,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.pid, e.tid, e.cpu),
                    ("iperf", Some(27409), 28744, Some(0))
                );
                assert_eq!(ts(e), (441_995_133_575_000, 1000));
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0x59fef5,
                        "copy_user_enhanced_fast_string",
                        None,
                        Some("/lib/modules/4.3.0-rc1-virtual/build/vmlinux")
                    )
                );
            },
        },
        Expect {
            file: "flamegraph-perf-java-faults-01.txt",
            samples: 23,
            frames: 143,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 23,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.cpu, e.period),
                    ("perf", 47118, Some(11), Some(1))
                );
                assert_eq!(e.name, "page-faults");
                assert_eq!(e.callchain.len(), 4);
            },
        },
        Expect {
            file: "flamegraph-perf-java-stacks-01.txt",
            samples: 46,
            frames: 1233,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 46,
            check: |evs| {
                // comm `ab` is also a hex address: still a header
                let e = &evs[0];
                assert_eq!((e.comm.as_str(), e.tid, e.cpu), ("ab", 23927, Some(0)));
                assert_eq!(ts(e), (184_694_229_089_000, 1000));
                assert_eq!(e.callchain[0].symbol, "native_write_msr_safe");
            },
        },
        Expect {
            file: "flamegraph-perf-java-stacks-02.txt",
            samples: 2,
            frames: 48,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 2,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.ts_ns, e.ts_res_ns),
                    ("java", 19983, None, 0)
                );
                assert_eq!(e.name, "cycles");
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xffffffff8103d0ca,
                        "native_write_msr_safe",
                        None,
                        Some("[kernel.kallsyms]")
                    )
                );
            },
        },
        Expect {
            file: "flamegraph-perf-js-stacks-01.txt",
            samples: 2,
            frames: 34,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 2,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.ts_ns),
                    ("node-v011", 31912, None)
                );
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0x13a80b608e0a,
                        "RegExp:[&<>\\\"\\']",
                        None,
                        Some("/tmp/perf-7539.map")
                    )
                );
                assert_eq!(
                    e.callchain[1].symbol,
                    "LazyCompile:~body_0 evalmachine.<anonymous>:1"
                );
            },
        },
        Expect {
            file: "flamegraph-perf-mirageos-stacks-01.txt",
            samples: 53,
            frames: 228,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 53,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.cpu),
                    ("mir-console", 23166, Some(0))
                );
                assert_eq!(ts(e), (1_333_768_765_000, 1000));
                assert_eq!(e.callchain[0].symbol, "camlLwt__return_1285");
            },
        },
        Expect {
            file: "flamegraph-perf-numa-stacks-01.txt",
            samples: 200,
            frames: 2345,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 200,
            check: |evs| {
                let e = &evs[0];
                assert_eq!((e.comm.as_str(), e.tid, e.cpu), ("java", 11008, Some(1)));
                assert_eq!(ts(e), (30_143_481_555_000, 1000));
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xffffffff81001408,
                        "xen_hypercall_event_channel_op",
                        None,
                        Some("[kernel.kallsyms]")
                    )
                );
            },
        },
        Expect {
            file: "flamegraph-perf-rust-Yamakaky-dcpu.txt",
            samples: 58,
            frames: 938,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 58,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.period),
                    ("emulator", 4152, Some(1))
                );
                assert_eq!(ts(e), (75_695_008_865_000, 1000));
                assert_eq!((e.system.as_deref(), e.name.as_str()), (None, "cycles:u"));
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xd70,
                        "_start",
                        Some(0xffff018fd5dce000),
                        Some("/usr/lib/ld-2.24.so")
                    )
                );
            },
        },
        Expect {
            file: "flamegraph-perf-vertx-stacks-01.txt",
            samples: 286,
            frames: 9397, // 9394 + 3 frames with an empty symbol: `7f1e2215d058  (/lib/...)`
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 286,
            check: |evs| {
                let e = &evs[0];
                assert_eq!((e.comm.as_str(), e.tid, e.line), ("java", 3244, 18));
                assert_eq!(
                    e.callchain[1].symbol,
                    "StealTask::do_it(GCTaskManager*, unsigned int)"
                );
                let empty = evs
                    .iter()
                    .flat_map(|e| &e.callchain)
                    .filter(|f| f.symbol.is_empty())
                    .count();
                assert_eq!(empty, 3);
            },
        },
        Expect {
            file: "inferno-cpp-stacks-std-function.txt",
            samples: 46,
            frames: 423,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 46,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.name.as_str()),
                    ("perf_stacks", 20602, "cycles:uppp")
                );
                assert_eq!(ts(e), (2_217_581_638_000, 1000));
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xffffffff9c2009e7,
                        "[unknown]",
                        None,
                        Some("[kernel.kallsyms]")
                    )
                );
                let inlined = evs
                    .iter()
                    .flat_map(|e| &e.callchain)
                    .filter(|f| f.dso.as_deref() == Some("inlined"))
                    .count();
                assert_eq!(inlined, 139);
            },
        },
        Expect {
            file: "inferno-empty-line.txt",
            samples: 2,
            frames: 2,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 2,
            check: |evs| {
                assert_eq!((evs[1].line, evs[1].callchain[0].offset), (4, Some(0x1c)));
            },
        },
        Expect {
            file: "inferno-go-stacks.txt",
            samples: 5,
            frames: 90,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 5,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.period),
                    ("go", 6157, Some(250_000))
                );
                assert_eq!(ts(e), (1_224_147_545_000, 1000));
                assert_eq!(e.name, "cpu-clock:uhH");
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0x414297,
                        "runtime.mapassign_faststr",
                        Some(0x277),
                        Some("/usr/lib/go/bin/go")
                    )
                );
            },
        },
        Expect {
            file: "inferno-invalid-perf-with-empty-line-after-event-line.txt",
            samples: 1,
            frames: 6,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 1,
            check: |evs| {
                let e = &evs[0];
                assert_eq!((e.comm.as_str(), e.tid), ("java", 10488));
                assert_eq!(
                    e.callchain[5],
                    frame(0x5966605dd52f8e00, "[unknown]", None, Some("[unknown]"))
                );
            },
        },
        Expect {
            file: "inferno-java-inline.txt",
            samples: 22,
            frames: 157,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 22,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(ts(e), (9_962_502_413_000, 1000));
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xffffffffaee8017b,
                        "fput",
                        Some(0xb),
                        Some("[kernel.kallsyms]")
                    )
                );
            },
        },
        Expect {
            file: "inferno-single-event.txt",
            samples: 1,
            frames: 89,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 1,
            check: |evs| {
                let e = &evs[0];
                assert_eq!((e.comm.as_str(), e.tid), ("boa_cli", 12937));
                assert_eq!(
                    e.callchain[0].symbol,
                    "<std::collections::hash::map::HashMap<K,V> as gc::trace::Trace>::trace"
                );
                assert_eq!(e.callchain[0].offset, Some(0xbf));
            },
        },
        Expect {
            file: "inferno-single-line-stacks.txt",
            samples: 2,
            frames: 2,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 2,
            check: |evs| {
                assert_eq!((evs[0].comm.as_str(), evs[0].tid), ("false", 39654));
                assert_eq!(evs[1].name, "cycles");
            },
        },
        Expect {
            file: "inferno-sourcepawn-jitdump.txt",
            samples: 1,
            frames: 34,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 1,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.period),
                    ("spshell", 31714, Some(22_145_531))
                );
                assert_eq!(ts(e), (451_945_594_655_000, 1000));
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xf719f4a4,
                        "fib.smx::fib",
                        Some(0x3c),
                        Some("/tmp/jitted-31714-4145673320.so")
                    )
                );
            },
        },
        Expect {
            file: "inferno-versioned-vmlinux.txt",
            samples: 1,
            frames: 17,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 1,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.cpu, e.period),
                    ("swapper", 0, Some(12), Some(20_834_821))
                );
                assert_eq!(ts(e), (2_281_339_604_067_000, 1000));
                assert_eq!(
                    e.callchain[0].dso.as_deref(),
                    Some("bpf_prog_2b956549c660136a_uni_l4lb")
                );
            },
        },
        Expect {
            file: "inferno-weird-stack-line.txt",
            samples: 2,
            frames: 1,
            strict_error_line: Some(5),
            lenient_skipped: 1,
            lenient_samples: 2,
            check: |evs| {
                assert_eq!(evs[1].line, 4);
                assert!(evs[1].callchain.is_empty());
            },
        },
        Expect {
            file: "lkml-kmem-mm_page_alloc-tracepoint-callchain-v5.1.txt",
            samples: 1,
            frames: 6,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 1,
            check: |evs| {
                let e = &evs[0];
                assert_eq!((e.comm.as_str(), e.tid, e.cpu), ("perf", 6429, Some(0)));
                assert_eq!(
                    (e.system.as_deref(), e.name.as_str()),
                    (Some("kmem"), "mm_page_alloc")
                );
                assert_eq!(
                    e.callchain[0],
                    frame(
                        0xffffffffbe23e32e,
                        "__alloc_pages_nodemask",
                        Some(0x22e),
                        Some("/lib/modules/5.1.0-rc3+/build/vmlinux")
                    )
                );
                assert_eq!(e.callchain[5].addr, 0x5541f689495641d7);
            },
        },
        Expect {
            file: "lkml-lock-contention_begin-callchain-powerpc.txt",
            samples: 2,
            frames: 16,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 2,
            check: |evs| {
                let e = &evs[0];
                assert_eq!(
                    (e.comm.as_str(), e.tid, e.cpu),
                    ("sched-messaging", 3409, Some(1))
                );
                assert_eq!(ts(e), (7_152_904_029_000, 1000));
                assert_eq!(
                    (e.system.as_deref(), e.name.as_str()),
                    (Some("lock"), "contention_begin")
                );
                assert_eq!(e.payload, "0xc00000c80904ef00 (flags=SPIN)");
                assert_eq!(
                    e.callchain[1],
                    frame(0, "[unknown]", None, Some("[unknown]"))
                );
            },
        },
        Expect {
            file: "lkml-no-callchain-pid7-v6.5.txt",
            samples: 3,
            frames: 2,
            strict_error_line: None,
            lenient_skipped: 0,
            lenient_samples: 3,
            check: |evs| {
                assert_eq!(
                    (evs[0].comm.as_str(), evs[0].tid, evs[0].cpu),
                    ("dbus-daemon", 3043, Some(3))
                );
                assert_eq!(
                    evs[0].callchain[0],
                    frame(
                        0xffffffff9cb2bb70,
                        "llist_add_batch",
                        Some(0),
                        Some("[kernel.kallsyms]")
                    )
                );
                assert_eq!((evs[1].comm.as_str(), evs[1].tid), ("gdbus", 1_558_592));
                // the third line was cut by the mail client: no `(dso)`, payload only
                assert_eq!(evs[2].comm, "NetworkManager");
                assert!(evs[2].callchain.is_empty());
            },
        },
    ];

    fn check_file(dir: &Path, x: &Expect) {
        let path = dir.join(x.file);
        let (evs, res, _) = read_from(open(&path), false);
        let frames: usize = evs.iter().map(|e| e.callchain.len()).sum();
        assert_eq!(
            (evs.len(), frames),
            (x.samples, x.frames),
            "{}: samples, frames",
            x.file
        );
        match (x.strict_error_line, &res) {
            (None, Ok(())) => {}
            (Some(line), Err(e)) => {
                assert_eq!(e.location().map(|l| l.line), Some(line), "{}: {e}", x.file)
            }
            (want, got) => panic!("{}: expected error at {want:?}, got {got:?}", x.file),
        }
        (x.check)(&evs);
        for e in &evs {
            assert_eq!(e.source, Source::PerfScript);
            assert!(!e.name.is_empty(), "{}:{}", x.file, e.line);
        }
        let (evs, res, diag) = read_from(open(&path), true);
        res.unwrap_or_else(|e| panic!("{}: lenient: {e}", x.file));
        assert_eq!(
            (evs.len(), diag.skipped),
            (x.lenient_samples, x.lenient_skipped),
            "{}: lenient samples, skipped",
            x.file
        );
    }

    #[test]
    fn perf_script_corpus_every_file() {
        let dir = corpus_dir().join("perf-script");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let listed: Vec<&str> = CORPUS.iter().map(|x| x.file).collect();
        for n in &names {
            assert!(
                listed.contains(&n.as_str()),
                "corpus file {n} has no expectation in CORPUS"
            );
        }
        for x in CORPUS {
            check_file(&dir, x);
        }
    }

    fn read_fixture(name: &str) -> Vec<Event> {
        let (evs, res, diag) = read_from(open(&fixtures_dir().join(name)), false);
        res.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(diag.skipped, 0);
        evs
    }

    /// Real capture (perf 6.1, kernel 6.18): 4 tracepoints with `-g`, default `perf script`.
    #[test]
    fn perf_script_fixture_lrufault_tracepoints_callchains() {
        let evs = read_fixture("lrufault-lock-lru-kmem-g.txt");
        assert_eq!(evs.len(), 34);
        assert_eq!(evs.iter().map(|e| e.callchain.len()).sum::<usize>(), 344);
        let count = |name: &str| evs.iter().filter(|e| e.name == name).count();
        assert_eq!(
            (
                count("mm_page_alloc"),
                count("mm_lru_insertion"),
                count("contention_begin"),
                count("contention_end")
            ),
            (1, 31, 1, 1)
        );
        let e = &evs[0];
        assert_eq!(
            (e.comm.as_str(), e.pid, e.tid, e.cpu, e.period),
            ("lrufault", None, 13199, Some(1), None)
        );
        assert_eq!(ts(e), (477_553_530_000, 1000));
        assert_eq!(
            (e.system.as_deref(), e.name.as_str()),
            (Some("kmem"), "mm_page_alloc")
        );
        assert_eq!(
            e.payload,
            "page=0x164e20 pfn=0x164e20 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO|__GFP_COMP"
        );
        assert_eq!(
            e.callchain[0],
            frame(
                0xffffffff8162184b,
                "__alloc_frozen_pages_noprof",
                Some(0x26b),
                Some("[kernel.kallsyms]")
            )
        );
        let b = evs.iter().find(|e| e.name == "contention_begin").unwrap();
        assert_eq!(
            (b.line, b.tid, b.system.as_deref()),
            (25, 13199, Some("lock"))
        );
        assert_eq!(b.payload, "0xffff888102abc698 (flags=SPIN)");
        assert_eq!(b.callchain.len(), 12);
        assert_eq!(
            b.callchain[0],
            frame(
                0xffffffff82203efe,
                "__pv_queued_spin_lock_slowpath",
                Some(0x10e),
                Some("[kernel.kallsyms]")
            )
        );
        assert_eq!(b.callchain[3].symbol, "folio_batch_move_lru");
        assert_eq!(
            b.callchain[10],
            frame(0x16ab, "worker", Some(0x6b), Some("/tmp/ps-cap/lrufault"))
        );
        assert_eq!(b.callchain[11].addr, 0);
        let lru = evs.iter().find(|e| e.name == "mm_lru_insertion").unwrap();
        assert_eq!((lru.tid, lru.cpu), (13200, Some(0)));
        // `flags=Ma bd ` ends in a space in the raw line; the payload is trimmed
        assert_eq!(
            lru.payload,
            "folio=0xffffea0004f3a300 pfn=0x13ce8c lru=0 flags=Ma bd"
        );
    }

    /// The same window printed with `--ns`: same events, 9-digit times truncated by the µs file.
    #[test]
    fn perf_script_fixture_ns_matches_usec() {
        let us = read_fixture("lrufault-lock-lru-kmem-g.txt");
        let ns = read_fixture("lrufault-lock-lru-kmem-g-ns.txt");
        assert_eq!(us.len(), ns.len());
        for (a, b) in us.iter().zip(&ns) {
            assert_eq!((a.ts_res_ns, b.ts_res_ns), (1000, 1));
            let (ta, tb) = (a.ts_ns.unwrap(), b.ts_ns.unwrap());
            assert_eq!(ta, tb / 1000 * 1000, "line {}", a.line);
            let mut b = b.clone();
            b.ts_ns = a.ts_ns;
            b.ts_res_ns = a.ts_res_ns;
            assert_eq!(a, &b);
        }
        let b = ns.iter().find(|e| e.name == "contention_begin").unwrap();
        let e = ns.iter().find(|e| e.name == "contention_end").unwrap();
        assert_eq!(
            (b.ts_ns, e.ts_ns),
            (Some(477_553_533_537), Some(477_553_618_950))
        );
        assert_eq!(e.payload, "0xffff888102abc698 (ret=0)");
        assert_eq!(e.line, 399);
    }

    /// Real capture: `perf record -e cpu-clock -g -- dd ...`, default `perf script`.
    #[test]
    fn perf_script_fixture_dd_cpu_clock_samples() {
        let evs = read_fixture("dd-cpu-clock-g.txt");
        assert_eq!(evs.len(), 337);
        assert_eq!(evs.iter().map(|e| e.callchain.len()).sum::<usize>(), 1075);
        assert!(evs
            .iter()
            .all(|e| e.name == "cpu-clock" && e.system.is_none() && e.period == Some(250_000)));
        assert!(evs.iter().all(|e| e.payload.is_empty() && e.cpu.is_none()));
        let e = &evs[0];
        assert_eq!((e.comm.as_str(), e.tid), ("dd", 13730));
        assert_eq!(ts(e), (491_915_850_000, 1000));
        assert_eq!(
            e.callchain,
            vec![
                frame(
                    0x148f2,
                    "get_common_indices.constprop.0",
                    Some(0xf2),
                    Some("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
                ),
                frame(0, "[unknown]", None, Some("[unknown]")),
            ]
        );
        assert!(evs.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    }

    /// Mutated real input never panics, in either mode.
    #[test]
    fn perf_script_mutated_input_never_panics() {
        let base = std::fs::read(fixtures_dir().join("lrufault-lock-lru-kmem-g.txt")).unwrap();
        crate::lines::testing::mutations_never_panic(&base, |buf, opts| {
            let mut r = Reader::new(buf, opts);
            std::iter::from_fn(|| r.next_event().ok().flatten())
                .take(buf.len() + 1)
                .count()
        });
    }

    /// PieceReader and Reader over the same bytes: the same events, errors and diagnostics.
    fn same_as_reader(buf: &[u8], opts: &Options) -> usize {
        readers_agree(buf, opts, |_| {}).unwrap_or_else(|why| panic!("{why}"))
    }

    #[test]
    fn perf_script_piece_reader_equals_reader() {
        let dir = corpus_dir().join("perf-script");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files.push(fixtures_dir().join("lrufault-lock-lru-kmem-g.txt"));
        for f in &files {
            let mut buf = Vec::new();
            open(f).read_to_end(&mut buf).unwrap();
            for lenient in [false, true] {
                let opts = Options {
                    lenient,
                    line_offset: 5,
                    ..Options::default()
                };
                same_as_reader(&buf, &opts);
            }
        }
        let base = std::fs::read(fixtures_dir().join("lrufault-lock-lru-kmem-g.txt")).unwrap();
        crate::lines::testing::mutations_never_panic(&base, same_as_reader);
    }

    /// The piece reader's frame-line lookups: samples whose frames repeat (looked up), then
    /// samples whose every frame is new (the lookups stop after a window of misses), then
    /// repeats again with a JIT frame (a `:` in the symbol) and, at the end, a frame with no
    /// sample open. The same events, errors and diagnostics as the streaming reader.
    #[test]
    fn perf_script_piece_reader_frame_lookups_equal_reader() {
        let mut text = String::new();
        let mut t = 0u64;
        let mut sample = |text: &mut String, addrs: &[u64]| {
            t += 1;
            text.push_str(&format!(
                "lrufault 31899  {}.{:06}: 250000 cpu-clock: \n",
                1000 + t / 1000,
                t % 1000
            ));
            for a in addrs {
                text.push_str(&format!(
                    "\t{a:16x} fn_{}+0x{:x} ([kernel.kallsyms])\n",
                    a % 13,
                    a % 97
                ));
            }
            text.push('\n');
        };
        for i in 0..3000u64 {
            sample(&mut text, &[i % 7, 100 + i % 3, 200, 300 + i % 5, 400]);
        }
        for i in 0..4000u64 {
            let a = 1_000_000 + 5 * i;
            sample(&mut text, &[a, a + 1, a + 2, a + 3, a + 4]);
        }
        for i in 0..500u64 {
            sample(&mut text, &[i % 7, 200]);
            text.insert_str(text.len() - 1, "\t    7f00 Builtin: x (/tmp/perf-1.map)\n");
        }
        text.push_str("\t    ffff fn_1+0x1 ([kernel.kallsyms])\n");
        for lenient in [false, true] {
            let opts = Options {
                lenient,
                ..Options::default()
            };
            assert!(same_as_reader(text.as_bytes(), &opts) > 7000);
        }
        // and the lookups did stop
        let opts = Options {
            lenient: true,
            ..Options::default()
        };
        let mut p = PieceReader::new(text.as_bytes(), &opts);
        let mut frames = 0;
        while let Some(s) = p.next_sample().unwrap() {
            frames += s.frames.len();
            p.recycle(s);
        }
        assert_eq!(frames, 3000 * 5 + 4000 * 5 + 500 * 3);
        assert!(!p.seen_on);
    }

    /// A keyed frame is the frame first read on its line: one key, one frame, in one reader;
    /// another reader over the same text takes other keys. Frames with no dso and JIT frames
    /// (a `:`) are never keyed.
    #[test]
    fn perf_script_piece_reader_keys_name_one_frame() {
        let mut text = String::new();
        for i in 0..600u64 {
            text.push_str(&format!(
                "lrufault 31899  1000.{i:06}: 250000 cpu-clock: \n"
            ));
            for k in 0..(1 + i % 5) {
                let a = (i * 3 + k) % 17;
                text.push_str(&format!("\t{a:16x} fn_{a}+0x{k:x} ([kernel.kallsyms])\n"));
            }
            text.push_str("\t    7f00 Builtin: x (/tmp/perf-1.map)\n\t    7f10 [unknown]\n\n");
        }
        let opts = Options::default();
        fn keys<'t>(text: &'t str, opts: &Options) -> HashMap<FrameKey, FrameRef<'t>> {
            let mut by_key: HashMap<FrameKey, FrameRef<'t>> = HashMap::new();
            let mut p = PieceReader::new(text.as_bytes(), opts);
            let (mut keyed, mut all) = (0, 0);
            while let Some(s) = p.next_sample().unwrap() {
                for f in &s.frames {
                    all += 1;
                    if f.key == FrameKey::NONE {
                        assert!(f.dso.is_none() || f.symbol.contains(':'), "{f:?}");
                        continue;
                    }
                    keyed += 1;
                    let first = *by_key.entry(f.key).or_insert(*f);
                    assert_eq!(first, *f);
                    assert_eq!(first.addr, f.addr);
                }
                p.recycle(s);
            }
            assert_eq!(all, 600 * 2 + (0..600u64).map(|i| 1 + i % 5).sum::<u64>());
            assert_eq!(keyed, all - 1200);
            by_key
        }
        let (a, b) = (keys(&text, &opts), keys(&text, &opts));
        // each distinct line once (17 addresses x 5 offsets at most), and no key in both
        assert!(a.len() > 17 && a.len() <= 85, "{}", a.len());
        assert!(a.keys().all(|k| !b.contains_key(k)));
        let readers: std::collections::HashSet<u64> = a
            .keys()
            .chain(b.keys())
            .map(|k| k.get().unwrap().0)
            .collect();
        assert_eq!(readers.len(), 2);
        // a key's parts, and what no key holds
        let k = FrameKey::new(5, 3);
        assert_eq!(k.get(), Some((5, 2)));
        assert_eq!(FrameKey::new(5, 0), FrameKey::NONE);
        assert_eq!(FrameKey::new(5, 1 << 24), FrameKey::NONE);
        assert_eq!(FrameKey::new(1 << 40, 1), FrameKey::NONE);
        assert_eq!(FrameKey::NONE.get(), None);
    }

    #[test]
    fn perf_script_trim_is_str_trim() {
        for s in [
            "",
            " ",
            "\t x \t",
            "\u{a0}x\u{a0}",
            "\u{b}x",
            "x\u{b}",
            " \u{2003} é ",
            "\r\nx\r",
        ] {
            assert_eq!(trim(s), s.trim(), "{s:?}");
        }
        // and every string of up to 5 of these pieces (~37 k)
        let parts = [" ", "\t", "\u{b}", "\u{a0}", "x", "é", "\n", "\u{2003}"];
        let n = each_string(&parts, 5, |s| assert_eq!(trim(s), s.trim(), "{s:?}"));
        assert_eq!(n, 37_449);
    }

    #[test]
    fn perf_script_streaming_does_not_need_whole_input() {
        // A reader that yields one byte at a time gives the same events.
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                match (self.0.split_first(), buf.first_mut()) {
                    (Some((b, rest)), Some(slot)) => {
                        *slot = *b;
                        self.0 = rest;
                        Ok(1)
                    }
                    _ => Ok(0),
                }
            }
        }
        let text = std::fs::read(fixtures_dir().join("lrufault-lock-lru-kmem-g.txt")).unwrap();
        let (a, ra, _) = read_from(&text[..], false);
        let (b, rb, _) = read_from(BufReader::with_capacity(1, OneByte(&text)), false);
        ra.unwrap();
        rb.unwrap();
        assert_eq!(a, b);
    }
}
