//! Raw ftrace text (`/sys/kernel/tracing/trace`, `trace_pipe`) and `trace-cmd report` output,
//! read one line at a time into [`Event`] records (FORMATS.md §3).
//!
//! [`Reader`] pulls events with [`Reader::next_event`]; what the preamble said (CPU count,
//! tracer, trace-cmd file version, flag columns, tgid column, dropped-event markers) is in
//! [`Reader::header`], and the lines skipped in lenient mode are in [`Reader::diagnostics`].
//! [`sniff`] tells whether one line looks like this format.
//!
//! ```
//! use lockcast_parsers::ftrace;
//! let text = "cpus=2\n\
//!   lrufault-14633 [001]   533.882584: contention_begin:     0xffff888627c2ba80 (flags=SPIN)\n\
//!   lrufault-14633 [001]   533.882601: contention_end:       0xffff888627c2ba80 (ret=0)\n";
//! let mut r = ftrace::Reader::new(text.as_bytes(), &ftrace::Options::default());
//! let ev = r.next_event().unwrap().unwrap();
//! assert_eq!((ev.comm.as_str(), ev.tid, ev.cpu), ("lrufault", 14633, Some(1)));
//! assert_eq!(ev.ts_ns, Some(533_882_584_000));
//! assert_eq!(ev.name, "contention_begin");
//! assert_eq!(ev.payload, "0xffff888627c2ba80 (flags=SPIN)");
//! assert_eq!(r.header().cpus, Some(2));
//! ```
//!
//! # What is read
//!
//! * Event lines `<comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <ts>: <name>: <payload>`: comm
//!   right-aligned and possibly containing spaces and dashes (it ends at the last `-<digits>`
//!   before the `(tgid)`/`[cpu]` field), pid width 5 or 7, tgid `(  882)` or `(-----)` /
//!   `(-------)` (unknown), flags absent, 4 or 5 characters (any of `[A-Za-z0-9.]`, so the
//!   v5.17+/v6.13+ letters `b D B L l Z z H` pass), timestamps `secs.usecs`, `secs.nsecs`
//!   (`trace-cmd report -t`) or an integer (counter clocks such as `counter`, `x86-tsc`).
//! * Syscall-tracer lines `sys_madvise(start: 0x.., len_in: 0x.., behavior: 8)` and
//!   `sys_madvise -> 0x0` (the kernel's own layout for `syscalls:*`, not `name: payload`)
//!   become events named `sys_enter_madvise` / `sys_exit_madvise` whose payload is the
//!   argument list / return value, as perf script and `trace-cmd report` print them.
//! * Function-tracer lines `func <-parent` (no `name:`) become events named `function` whose
//!   payload is the whole text after the timestamp, as `trace-cmd report` names them.
//! * The latency layout (`options/latency-format`, latency tracers, `trace-cmd report -l`):
//!   `<comm8>-<pid> <cpu><flags> <time>: ...`, with the CPU glued to the flags. The kernel prints
//!   `<usecs>us<mark>:`, microseconds since the buffer started (not an absolute clock);
//!   `trace-cmd -l` prints the usual `secs.usecs`. [`Header::latency_format`] is set.
//! * Preamble and marker lines: `# ...` comments (the `# tracer:`, `# entries-in-buffer`, `#P:`
//!   and column-header lines fill [`Header`]; `##### CPU 2 buffer started ####` is skipped),
//!   `cpus=N`, `version = 6`, `CPU n is empty`, `CPU:n [EVENTS DROPPED]` and
//!   `CPU:n [m EVENTS DROPPED]` (counted in the header, never fatal).
//! * `trace-cmd report` of an instance buffer (or of several inputs) prefixes each line with
//!   `<name>: ` before the right-aligned comm; the name is taken off the comm and listed in
//!   [`Header::buffers`].
//!
//! # Decisions
//!
//! * **Source.** [`Source::Ftrace`] once a `# tracer:` line is seen, [`Source::TraceCmd`] once a
//!   `cpus=` / `version =` / `CPU n is empty` / dropped-events line is seen. Without a
//!   preamble, the first event whose shape decides it does: trace-cmd pads the event name to
//!   20 columns, so two or more blanks after `name:` mean trace-cmd, one blank after a name
//!   shorter than 19 characters means the kernel; function-tracer and kernel latency lines mean
//!   the kernel. Events read before anything decided (long names only) are tagged `Ftrace`.
//! * **Payload.** Everything after the event name with the leading blanks removed (the
//!   separator and trace-cmd's padding, including the function plugin's depth indentation).
//!   Trailing blanks are kept: `mm_lru_insertion`'s `flags=` is a fixed 6-character field
//!   that may end with spaces (FORMATS.md §2.3).
//! * **Multi-line payloads** (`trace_printk`/`trace_marker` text with newlines, Perfetto's
//!   `bad_print.systrace`): a line that is not blank, not a comment, not a preamble line and not
//!   an event line, and that directly follows an event line or another such continuation line,
//!   is appended to that event's payload after a `"\n"`, unchanged. An event is therefore
//!   returned only when the next event line (or the end of input) is read. A blank, comment or
//!   preamble line ends the payload, so text after it is malformed. A line that starts like an
//!   event (`<comm>-<pid> [<cpu>]`) but is broken later is always malformed, never a
//!   continuation. A payload may not grow beyond `max_line_len` bytes.
//! * **HTML systrace files** (`*.html` written by Android's systrace/catapult): when the first
//!   non-blank line is `<!DOCTYPE html...>` or `<html...>`, only the text inside
//!   `<script class="trace-data" ...>` ... `</script>` blocks is read (blocks holding JSON are
//!   skipped), and so is the legacy `var linuxPerfData = "\` ... `</script>` block (a trailing
//!   `\n\` or `\` on its lines is dropped). Everything outside the blocks is ignored. An HTML
//!   file without a text trace block fails with "expected a systrace `<script
//!   class="trace-data">` block with ftrace text" at its first line (strict) or counts it as a
//!   skipped line (lenient).
//! * **Timestamps** are converted exactly from their digits (no floats): `secs.usecs` →
//!   `ts_res_ns` 1000, `secs.nsecs` → 1, other decimals 1..=9 → `10^(9-decimals)`. An
//!   integer timestamp (counter clock) is stored as-is in `ts_ns` with `ts_res_ns` 1 and
//!   [`Header::counter_clock`] set: it counts clock ticks, not nanoseconds. Out-of-order
//!   timestamps are passed through.
//! * Not supported (reported as malformed lines): the `function_graph` tracer layout, the
//!   `raw`/`hex`/`bin` options, the `verbose` latency layout and `context-info` off.

use std::io::BufRead;

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, one_of, space0, space1};
use nom::combinator::{all_consuming, map, opt, recognize, value};
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

use crate::error::{cut, Diagnostic, Diagnostics, Error, LineError, Location};
use crate::event::{Event, Source};
use crate::lines::{Line, LineReader};

/// Format name in errors for kernel text.
const FORMAT_FTRACE: &str = "ftrace";
/// Format name in errors for `trace-cmd report` text.
const FORMAT_TRACE_CMD: &str = "trace-cmd";

/// What a line that is neither preamble nor event was expected to be.
const EXPECTED_EVENT: &str = "an event line \"<comm>-<pid> [<cpu>] <ts>: <event>: ...\"";
const EXPECTED_FLAGS_OR_TS: &str =
    "irq flags such as \"d..2.\" or a timestamp \"<secs>.<usecs>:\" after \"[<cpu>]\"";
const EXPECTED_TS: &str = "a timestamp \"<secs>.<usecs>:\", \"<secs>.<nsecs>:\" or \"<count>:\"";
const EXPECTED_NAME: &str = "an event name \"<name>:\" after the timestamp";
const EXPECTED_HTML: &str =
    "a systrace <script class=\"trace-data\"> block with ftrace text in the HTML file";

/// How far into a line the `[cpu]` field (or, in the latency layout, the `-pid`) may start.
/// comm is at most 15 bytes (kernel `TASK_COMM_LEN`), pid 7, `(tgid)` 9, plus padding and a
/// trace-cmd buffer-name prefix: 512 leaves room for long instance names while bounding the
/// work spent on long payload-continuation lines full of `[`.
const MAX_PREFIX: usize = 512;

/// How many distinct trace-cmd buffer names [`Header::buffers`] keeps.
const MAX_BUFFERS: usize = 64;

/// Reader options, shared by every format: see [`crate::lines::ReaderOptions`].
pub use crate::lines::ReaderOptions as Options;

/// What the preamble (and the shape of the lines) said about the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Header {
    /// Kernel text or trace-cmd report, once known (see the module docs).
    pub source: Option<Source>,
    /// Number of CPUs: `#P:N` (kernel) or `cpus=N` (trace-cmd).
    pub cpus: Option<u32>,
    /// `# entries-in-buffer/entries-written: A/B`: A.
    pub entries_in_buffer: Option<u64>,
    /// `# entries-in-buffer/entries-written: A/B`: B (more than A when the ring overwrote).
    pub entries_written: Option<u64>,
    /// `# tracer: nop` → `nop`.
    pub tracer: Option<String>,
    /// `version = 6` (trace-cmd 2.x printed its file format version first).
    pub trace_cmd_version: Option<u32>,
    /// Whether the column header announced irq-info flags: `Some(true)` for the
    /// `_-----=> irqs-off` block or `||||` columns, `Some(false)` for a `TASK-PID ... CPU#
    /// TIMESTAMP` header without them, `None` without a column header.
    pub irq_info: Option<bool>,
    /// Number of flag columns in the column header (4 before v5.13, 5 since).
    pub flag_columns: Option<u8>,
    /// The column header has a `TGID` column (`options/record-tgid`).
    pub tgid: bool,
    /// The latency layout was announced (`latency trace`, `_------=> CPU#`) or seen.
    pub latency_format: bool,
    /// Some event had an integer timestamp (counter clock): its `ts_ns` counts clock ticks.
    pub counter_clock: bool,
    /// `# enabled events: ...` (systrace), the text after the colon.
    pub enabled_events: Option<String>,
    /// CPUs from `CPU n is empty` lines.
    pub empty_cpus: Vec<u32>,
    /// Number of `CPU:n [EVENTS DROPPED]` / `CPU:n [m EVENTS DROPPED]` lines.
    pub dropped_markers: u64,
    /// Sum of `m` over the `CPU:n [m EVENTS DROPPED]` lines (markers without a count add 0).
    pub dropped_events: u64,
    /// trace-cmd buffer (instance) names that prefixed event lines, in order of appearance.
    pub buffers: Vec<String>,
    /// The input was a systrace HTML file (the trace was read from its `trace-data` block).
    pub html: bool,
}

/// Where the reader is in an HTML systrace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Plain text.
    Text,
    /// HTML, outside any trace block: lines are ignored.
    HtmlOutside,
    /// Inside a `trace-data` block whose first content line has not been seen yet.
    HtmlBlockStart { legacy: bool },
    /// Inside a block holding ftrace text.
    HtmlText { legacy: bool },
    /// Inside a block holding something else (JSON): skipped up to `</script>`.
    HtmlSkip,
}

/// What one input line did.
enum Step {
    /// Nothing to return yet.
    Continue,
    /// An event is complete.
    Emit(Event),
    /// The line is malformed.
    Fail(Diagnostic),
}

/// Reader state apart from the line reader, so a borrowed line can be handled while the
/// state is mutated.
struct State {
    opts: Options,
    header: Header,
    diags: Diagnostics,
    /// The last event read: it may still receive continuation lines.
    pending: Option<Event>,
    /// The previous line was an event or a continuation line.
    cont: bool,
    mode: Mode,
    /// A non-blank line has been seen (HTML is recognised on the first one).
    seen_content: bool,
    /// First line of an HTML file, for the error when it holds no trace.
    html_first: Option<(u64, String)>,
    /// An HTML text trace block was found.
    html_block_found: bool,
    /// An error to return on the next call, after the pending event that preceded it.
    deferred: Option<Error>,
    /// End of input reached.
    done: bool,
}

/// Streaming reader of ftrace / trace-cmd text. See the module docs.
pub struct Reader<R> {
    lines: LineReader<R>,
    st: State,
}

impl<R: BufRead> Reader<R> {
    /// Wrap an input; nothing is read until [`Reader::next_event`].
    pub fn new(inner: R, opts: &Options) -> Self {
        Reader {
            lines: LineReader::with_options(inner, opts),
            st: State {
                opts: opts.clone(),
                header: Header::default(),
                diags: Diagnostics::default(),
                pending: None,
                cont: false,
                mode: Mode::Text,
                seen_content: false,
                html_first: None,
                html_block_found: false,
                deferred: None,
                done: false,
            },
        }
    }

    /// Wrap a later piece of a plain-text input whose beginning was read by another reader
    /// (parallel parsing): `header` is what that reader learnt from the preamble (source,
    /// flag columns, tgid), and `opts.line_offset` the lines before this piece. HTML systrace
    /// files cannot be read in pieces.
    pub fn resume(inner: R, opts: &Options, header: &Header) -> Self {
        let mut r = Reader::new(inner, opts);
        r.st.header = header.clone();
        r.st.seen_content = true;
        r
    }

    /// The next event, `Ok(None)` at the end of input.
    ///
    /// In strict mode the first malformed line is returned as [`Error::Malformed`] (format
    /// `"ftrace"` or `"trace-cmd"`); an event read before it is returned first. In lenient mode
    /// malformed lines are counted in [`Reader::diagnostics`] and skipped.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        if let Some(e) = self.st.deferred.take() {
            return Err(e);
        }
        loop {
            if self.st.done {
                return Ok(self.st.pending.take());
            }
            // next_line() counts exactly one line per Some.
            let line_no = self.lines.line_no() + 1;
            let step = match self.lines.next_line()? {
                None => {
                    self.st.done = true;
                    self.st.on_eof()
                }
                Some(Line::Bad(d)) => self.st.on_bad_line(d),
                Some(Line::Text(text)) => self.st.on_line(text, line_no),
            };
            match step {
                Step::Continue => {}
                Step::Emit(ev) => return Ok(Some(ev)),
                Step::Fail(d) => {
                    if self.st.opts.lenient {
                        self.st.diags.push(d);
                        continue;
                    }
                    let err = Error::malformed(self.st.format(), d);
                    if let Some(ev) = self.st.pending.take() {
                        self.st.deferred = Some(err);
                        return Ok(Some(ev));
                    }
                    return Err(err);
                }
            }
        }
    }

    /// Lines skipped in lenient mode.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.st.diags
    }

    /// Bytes consumed so far, for progress bars.
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }

    /// What the preamble said (filled in as lines are read).
    pub fn header(&self) -> &Header {
        &self.st.header
    }
}

impl State {
    fn format(&self) -> &'static str {
        match self.header.source {
            Some(Source::TraceCmd) => FORMAT_TRACE_CMD,
            _ => FORMAT_FTRACE,
        }
    }

    fn on_eof(&mut self) -> Step {
        if self.header.html && !self.html_block_found {
            let (line, text) = self.html_first.take().unwrap_or_default();
            return Step::Fail(Diagnostic {
                location: Location { line, col: 1 },
                kind: LineError::expected(EXPECTED_HTML, &text),
                line_text: text,
            });
        }
        Step::Continue
    }

    fn on_bad_line(&mut self, d: Diagnostic) -> Step {
        self.cont = false;
        match self.mode {
            // Bytes outside the trace block of an HTML file are not trace text.
            Mode::HtmlOutside | Mode::HtmlSkip => Step::Continue,
            _ => Step::Fail(d),
        }
    }

    fn on_line(&mut self, text: &str, line_no: u64) -> Step {
        let text = match self.html_filter(text) {
            Some(t) => t,
            None => return Step::Continue,
        };
        let t = text.trim();
        if t.is_empty() {
            self.cont = false;
            return Step::Continue;
        }
        if !self.seen_content {
            self.seen_content = true;
            if is_html_start(t) {
                self.mode = Mode::HtmlOutside;
                self.header.html = true;
                self.html_first = Some((line_no, cut(t, 120)));
                return Step::Continue;
            }
        }
        if t.starts_with('#') {
            self.on_comment(t);
            self.cont = false;
            return Step::Continue;
        }
        if let Some(p) = preamble(t) {
            self.on_preamble(p);
            self.cont = false;
            return Step::Continue;
        }
        match parse_event_line(text) {
            Ok(p) => {
                let ev = self.build(p, line_no);
                self.cont = true;
                match self.pending.replace(ev) {
                    Some(prev) => Step::Emit(prev),
                    None => Step::Continue,
                }
            }
            Err(LineFail::Bad { col, kind }) => {
                self.cont = false;
                Step::Fail(diagnostic(line_no, col, kind, text))
            }
            Err(LineFail::NotEvent) => {
                if self.cont {
                    if let Some(ev) = self.pending.as_mut() {
                        let len = ev.payload.len() + 1 + text.len();
                        if len > self.opts.max_line_len {
                            self.cont = false;
                            return Step::Fail(Diagnostic {
                                location: Location {
                                    line: line_no,
                                    col: 1,
                                },
                                kind: LineError::LineTooLong {
                                    len: len as u64,
                                    max: self.opts.max_line_len,
                                },
                                line_text: cut(text, 120),
                            });
                        }
                        ev.payload.push('\n');
                        ev.payload.push_str(text);
                        return Step::Continue;
                    }
                }
                Step::Fail(diagnostic(
                    line_no,
                    1,
                    LineError::expected(EXPECTED_EVENT, text),
                    text,
                ))
            }
        }
    }

    /// Track HTML trace blocks. Returns the text to parse, or `None` for lines outside them.
    fn html_filter<'a>(&mut self, text: &'a str) -> Option<&'a str> {
        match self.mode {
            Mode::Text => Some(text),
            Mode::HtmlOutside => {
                let t = text.trim_start();
                if t.starts_with("<script class=\"trace-data\"") {
                    self.mode = Mode::HtmlBlockStart { legacy: false };
                } else if t.starts_with("var linuxPerfData = \"") {
                    self.mode = Mode::HtmlBlockStart { legacy: true };
                }
                self.cont = false;
                None
            }
            Mode::HtmlSkip => {
                if text.trim_start().starts_with("</script>") {
                    self.mode = Mode::HtmlOutside;
                }
                None
            }
            Mode::HtmlBlockStart { legacy } | Mode::HtmlText { legacy } => {
                let t = text.trim();
                if t.starts_with("</script>") || (legacy && (t == "\";" || t == "\"")) {
                    self.mode = Mode::HtmlOutside;
                    self.cont = false;
                    return None;
                }
                let text = if legacy {
                    let s = text.strip_suffix("\\n\\").unwrap_or(text);
                    s.strip_suffix('\\').unwrap_or(s)
                } else {
                    text
                };
                if matches!(self.mode, Mode::HtmlBlockStart { .. }) {
                    let t = text.trim();
                    if t.is_empty() {
                        return None;
                    }
                    if t.starts_with('{') || t.starts_with('[') {
                        self.mode = Mode::HtmlSkip;
                        return None;
                    }
                    self.mode = Mode::HtmlText { legacy };
                    self.html_block_found = true;
                }
                Some(text)
            }
        }
    }

    /// A `#` line: fill the header from what it says.
    ///
    /// ```text
    /// # tracer: nop
    /// # entries-in-buffer/entries-written: 128/128   #P:4
    /// #                                _-----=> irqs-off/BH-disabled
    /// #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
    /// #           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION
    /// #           TASK-PID     CPU#     TIMESTAMP  FUNCTION
    /// # latency: 0 us, #1715/1715, CPU#0 | (M:PREEMPT(none) VP:0, KP:0, SP:0 HP:0 #P:2)
    /// #                    _------=> CPU#
    /// #  cmd     pid     |||||| time  |   caller
    /// ##### CPU 2 buffer started ####
    /// ```
    fn on_comment(&mut self, t: &str) {
        let body = t.trim_start_matches('#').trim();
        let h = &mut self.header;
        if let Some(tracer) = body.strip_prefix("tracer:") {
            h.tracer = Some(tracer.trim().to_string());
            h.source.get_or_insert(Source::Ftrace);
        }
        if let Ok((_, (a, b))) = entries_line(body) {
            h.entries_in_buffer = a.parse().ok();
            h.entries_written = b.parse().ok();
            h.source.get_or_insert(Source::Ftrace);
        }
        if let Some(i) = t.find("#P:") {
            if let Some(rest) = t.get(i + 3..) {
                if let Ok((_, n)) = digit1::<_, nom::error::Error<&str>>(rest) {
                    h.cpus = n.parse().ok();
                }
            }
        }
        if let Some(ev) = body.strip_prefix("enabled events:") {
            h.enabled_events = Some(ev.trim().to_string());
        }
        if t.contains("latency trace") || t.contains("=> CPU#") {
            h.latency_format = true;
        }
        if t.contains("irqs-off") {
            h.irq_info = Some(true);
        }
        // The longest run of `|`: one per flag column (the latency header adds the CPU column).
        let bars = t.split(|c| c != '|').map(str::len).max().unwrap_or(0);
        if t.contains("TASK-PID") {
            h.tgid = t.contains("TGID");
            if bars > 0 {
                h.irq_info = Some(true);
                h.flag_columns = u8::try_from(bars).ok();
            } else {
                h.irq_info = Some(false);
            }
        } else if h.latency_format && body.starts_with("cmd") && body.contains("pid") && bars > 1 {
            // The latency column header has one more `|` for the CPU column.
            h.irq_info = Some(true);
            h.flag_columns = u8::try_from(bars - 1).ok();
        }
    }

    fn on_preamble(&mut self, p: Preamble) {
        let h = &mut self.header;
        h.source.get_or_insert(Source::TraceCmd);
        match p {
            Preamble::Cpus(n) => h.cpus = Some(n),
            Preamble::Version(v) => h.trace_cmd_version = Some(v),
            Preamble::CpuEmpty(c) => h.empty_cpus.push(c),
            Preamble::Dropped(n) => {
                h.dropped_markers += 1;
                h.dropped_events = h.dropped_events.saturating_add(n.unwrap_or(0));
            }
        }
    }

    /// Turn a parsed line into an owned event, deciding the source on the way.
    fn build(&mut self, p: Parsed<'_>, line_no: u64) -> Event {
        if self.header.source.is_none() {
            self.header.source = source_from_shape(&p);
        }
        let source = self.header.source.unwrap_or(Source::Ftrace);
        let mut comm = p.comm.trim_start();
        if source == Source::TraceCmd {
            // `trace-cmd report` of an instance: "<buffer>: " + "%16s" comm, so the name's
            // colon is followed by at least two blanks (comms are at most 15 bytes).
            if let Some(i) = comm.find(":  ") {
                if let (Some(buf), Some(rest)) = (comm.get(..i), comm.get(i + 1..)) {
                    if !self.header.buffers.iter().any(|b| b == buf)
                        && self.header.buffers.len() < MAX_BUFFERS
                    {
                        self.header.buffers.push(buf.to_string());
                    }
                    comm = rest.trim_start();
                }
            }
        }
        match p.ts.kind {
            TsKind::Counter => self.header.counter_clock = true,
            TsKind::LatencyUs => self.header.latency_format = true,
            TsKind::Clock => {}
        }
        if p.latency {
            self.header.latency_format = true;
        }
        Event {
            line: line_no,
            ts_ns: Some(p.ts.ns),
            ts_res_ns: p.ts.res_ns,
            cpu: Some(p.cpu),
            comm: comm.to_string(),
            tid: p.tid,
            pid: match p.tgid {
                Tgid::Known(t) => Some(t),
                Tgid::Absent | Tgid::Unknown => None,
            },
            irq_flags: p.flags.map(str::to_string),
            system: None,
            name: if p.name_prefix.is_empty() {
                p.name.to_string()
            } else {
                format!("{}{}", p.name_prefix, p.name)
            },
            period: None,
            payload: p.payload.to_string(),
            callchain: Vec::new(),
            source,
        }
    }
}

/// Decide kernel vs trace-cmd from one event line when no preamble did (module docs).
fn source_from_shape(p: &Parsed<'_>) -> Option<Source> {
    if p.function_line || p.ts.kind == TsKind::LatencyUs {
        return Some(Source::Ftrace);
    }
    if p.payload.is_empty() {
        return None;
    }
    if p.gap >= 2 {
        Some(Source::TraceCmd)
    } else if p.name.len() < 19 {
        Some(Source::Ftrace)
    } else {
        None
    }
}

fn diagnostic(line_no: u64, col: usize, kind: LineError, text: &str) -> Diagnostic {
    Diagnostic {
        location: Location {
            line: line_no,
            col: u32::try_from(col).unwrap_or(u32::MAX),
        },
        kind,
        line_text: cut(text, 120),
    }
}

fn is_html_start(t: &str) -> bool {
    let starts = |p: &str| t.get(..p.len()).is_some_and(|s| s.eq_ignore_ascii_case(p));
    starts("<!doctype html") || starts("<html")
}

/// `true` if this line is characteristic of ftrace / trace-cmd text: an event line with the
/// `comm-pid [cpu] ... ts: name:` prefix (or its latency layout), a `# tracer:` or
/// `# entries-in-buffer/entries-written:` header line, `cpus=N`, or `version = N`.
pub fn sniff(line: &str) -> bool {
    let t = line.trim();
    if t.starts_with('#') {
        let body = t.trim_start_matches('#').trim_start();
        return body.starts_with("tracer:") || entries_line(body).is_ok();
    }
    matches!(preamble(t), Some(Preamble::Cpus(_) | Preamble::Version(_)))
        || parse_event_line(line).is_ok()
}

/// True if a chunked reader may start a new piece of input at this line: an event line.
/// Continuation lines of multi-line payloads, `#` and preamble lines never start a piece.
pub fn starts_record(line: &str) -> bool {
    !line.trim_start().starts_with('#') && parse_event_line(line).is_ok()
}

// ---------------------------------------------------------------------------------------------
// Line grammar

/// A recognised non-event, non-comment line (FORMATS.md §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preamble {
    /// `cpus=8`
    Cpus(u32),
    /// `version = 6`
    Version(u32),
    /// `CPU 3 is empty`
    CpuEmpty(u32),
    /// `CPU:2 [EVENTS DROPPED]` (None) or `CPU:2 [1234 EVENTS DROPPED]`.
    Dropped(Option<u64>),
}

type Res<'a, O> = IResult<&'a str, O>;

/// `cpus=8`
fn cpus_line(i: &str) -> Res<'_, &str> {
    preceded(tag("cpus="), digit1).parse(i)
}

/// `version = 6`
fn version_line(i: &str) -> Res<'_, &str> {
    preceded((tag("version"), space0, char('='), space0), digit1).parse(i)
}

/// `CPU 3 is empty`
fn cpu_empty_line(i: &str) -> Res<'_, &str> {
    delimited((tag("CPU"), space1), digit1, (space1, tag("is empty"))).parse(i)
}

/// `CPU:2 [EVENTS DROPPED]`, `CPU:2 [1234 EVENTS DROPPED]` (trace-cmd trace-read.c)
fn dropped_line(i: &str) -> Res<'_, (&str, Option<&str>)> {
    (
        preceded((tag("CPU:"), space0), digit1),
        delimited(
            (space0, char('['), space0),
            opt(terminated(digit1, space1)),
            (tag("EVENTS DROPPED"), space0, char(']')),
        ),
    )
        .parse(i)
}

/// `entries-in-buffer/entries-written: 128/128   #P:4` (after the `#`)
fn entries_line(i: &str) -> Res<'_, (&str, &str)> {
    preceded(
        (tag("entries-in-buffer/entries-written:"), space0),
        (terminated(digit1, char('/')), digit1),
    )
    .parse(i)
}

fn preamble(t: &str) -> Option<Preamble> {
    if let Ok((_, n)) = all_consuming(cpus_line).parse(t) {
        return n.parse().ok().map(Preamble::Cpus);
    }
    if let Ok((_, n)) = all_consuming(version_line).parse(t) {
        return n.parse().ok().map(Preamble::Version);
    }
    if let Ok((_, n)) = all_consuming(cpu_empty_line).parse(t) {
        return n.parse().ok().map(Preamble::CpuEmpty);
    }
    if let Ok((_, (_, n))) = all_consuming(dropped_line).parse(t) {
        return match n {
            None => Some(Preamble::Dropped(None)),
            Some(n) => n.parse().ok().map(|n| Preamble::Dropped(Some(n))),
        };
    }
    None
}

/// `[003]` → `"003"`
fn cpu_field(i: &str) -> Res<'_, &str> {
    delimited(char('['), digit1, char(']')).parse(i)
}

/// The inside of a tgid column: `  882` → `Some("882")`, `-----` / `-------` → `None`.
fn tgid_inner(i: &str) -> Res<'_, Option<&str>> {
    delimited(
        space0,
        alt((map(digit1, Some), value(None, take_while1(|c| c == '-')))),
        space0,
    )
    .parse(i)
}

/// `9913.990380` / `22.498450123` / `25141` (the part before the `:`)
fn clock_ts(i: &str) -> Res<'_, (&str, Option<&str>)> {
    (digit1, opt(preceded(char('.'), digit1))).parse(i)
}

/// Latency-layout time before its `:`: `533074107us ` / `533074156us+` (kernel) or
/// `533.879779` (`trace-cmd report -l`).
fn latency_ts(i: &str) -> Res<'_, LatTs<'_>> {
    alt((
        map(
            terminated(digit1, (tag("us"), opt(one_of("!+#*@$ ")))),
            LatTs::Us,
        ),
        map(clock_ts, |(s, f)| LatTs::Clock(s, f)),
    ))
    .parse(i)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LatTs<'a> {
    Us(&'a str),
    Clock(&'a str, Option<&'a str>),
}

/// The `<cpu><flags>` token of the latency layout: `1d..3.` → (`"1"`, `"d..3."`).
fn latency_cpu_flags(i: &str) -> Res<'_, (&str, &str)> {
    (digit1, recognize(take_while1(is_flag_char))).parse(i)
}

fn is_flag_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '.'
}

/// Irq-info flags: 4 (≤ v5.12) or 5 (v5.13+) characters, 6 on old PREEMPT_RT trees; accepted
/// from 1 to 8 so unusual kernels still parse. The first (irqs-off) column is one of
/// `d D b X .`, never a digit, which keeps a timestamp without its colon from passing as flags.
fn is_flags(tok: &str) -> bool {
    (1..=8).contains(&tok.len())
        && tok.chars().all(is_flag_char)
        && !tok.starts_with(|c: char| c.is_ascii_digit())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tgid {
    /// No tgid column.
    Absent,
    /// `(-----)` / `(-------)`: the kernel did not know the tgid.
    Unknown,
    Known(i32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TsKind {
    /// `secs.frac`
    Clock,
    /// Integer counter clock.
    Counter,
    /// Kernel latency layout: microseconds since the buffer started.
    LatencyUs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ts {
    ns: i64,
    res_ns: u32,
    kind: TsKind,
}

/// The parts of one event line, borrowed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parsed<'a> {
    /// Text before `-<pid>`, untrimmed (leading padding, maybe a trace-cmd buffer prefix).
    comm: &'a str,
    tid: i32,
    tgid: Tgid,
    cpu: u32,
    flags: Option<&'a str>,
    ts: Ts,
    /// `sys_enter_` / `sys_exit_` before `name` for the syscall tracer's lines, else empty.
    name_prefix: &'static str,
    name: &'a str,
    /// Blanks between `name:` and the payload (trace-cmd pads names to 20 columns).
    gap: usize,
    payload: &'a str,
    /// A function-tracer line without `name:`.
    function_line: bool,
    /// Latency layout.
    latency: bool,
}

/// Why a line is not an event.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LineFail {
    /// Nothing like an event prefix: maybe a payload continuation line.
    NotEvent,
    /// The `<comm>-<pid> [<cpu>]` prefix is there but something after it is wrong.
    Bad { col: usize, kind: LineError },
}

/// 1-based column of `part`, a sub-slice of `line`.
fn col_of(line: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(line.as_ptr() as usize) + 1
}

/// How far [`split_token`] looks for a blank: flags, timestamps and event names are far
/// shorter, and the bound keeps hostile lines (many `[0]` then one huge token) linear.
const MAX_TOKEN: usize = 256;

/// Split at the first blank: (`token`, rest starting with the blank or empty). A token longer
/// than [`MAX_TOKEN`] is returned whole.
fn split_token(s: &str) -> (&str, &str) {
    match s
        .bytes()
        .take(MAX_TOKEN)
        .position(|b| b == b' ' || b == b'\t')
    {
        Some(i) => (s.get(..i).unwrap_or(s), s.get(i..).unwrap_or("")),
        None => (s, ""),
    }
}

/// Digits to a non-negative integer, `None` on overflow.
fn parse_digits(d: &str) -> Option<i64> {
    d.bytes().try_fold(0i64, |acc, b| {
        acc.checked_mul(10)?
            .checked_add(i64::from(b.wrapping_sub(b'0')))
    })
}

fn overflow(line: &str, part: &str) -> LineFail {
    LineFail::Bad {
        col: col_of(line, part),
        kind: LineError::Overflow { got: cut(part, 60) },
    }
}

/// Exact ns from `secs[.frac]` digits: `Ok(None)` if the fraction has more than 9 digits.
fn ts_from_digits(secs: &str, frac: Option<&str>) -> Result<Option<Ts>, ()> {
    let s = parse_digits(secs).ok_or(())?;
    match frac {
        None => Ok(Some(Ts {
            ns: s,
            res_ns: 1,
            kind: TsKind::Counter,
        })),
        Some(f) => {
            let Ok(decimals) = u32::try_from(f.len()) else {
                return Ok(None);
            };
            if decimals > 9 {
                return Ok(None);
            }
            let res = 10i64.pow(9 - decimals);
            let f = parse_digits(f).ok_or(())?;
            let ns = s
                .checked_mul(1_000_000_000)
                .and_then(|n| n.checked_add(f * res))
                .ok_or(())?;
            Ok(Some(Ts {
                ns,
                res_ns: u32::try_from(res).unwrap_or(1),
                kind: TsKind::Clock,
            }))
        }
    }
}

/// `<name>: <payload>` after the timestamp's colon, or a function-tracer `func <-parent`.
/// Returns (name prefix, name, gap, payload, function_line); the prefix is empty but for the
/// syscall tracer's lines ([`syscall_line`]).
fn name_and_payload(s: &str) -> Option<(&'static str, &str, usize, &str, bool)> {
    let t = s.trim_start();
    if t.is_empty() {
        return None;
    }
    if let Some((prefix, call, payload)) = syscall_line(t) {
        return Some((prefix, call, 0, payload, false));
    }
    let (tok, rest) = split_token(t);
    match tok.strip_suffix(':') {
        Some("") => None,
        Some(name) => {
            let payload = rest.trim_start();
            Some(("", name, rest.len() - payload.len(), payload, false))
        }
        None => Some(("", "function", 0, t, true)),
    }
}

/// The kernel's syscall tracer prints its events in its own layout, not `<name>: <payload>`
/// (kernel/trace/trace_syscalls.c: `print_syscall_enter` / `print_syscall_exit`):
/// `sys_madvise(start: 0x7f46.., len_in: 0x1000000, behavior: 8)` for `sys_enter_madvise`
/// and `sys_madvise -> 0x0` for `sys_exit_madvise`. Returns the prefix that makes the
/// tracepoint's name (`sys_enter_` / `sys_exit_` + `madvise`, as perf script and trace-cmd
/// name it), the call, and the argument list without its parentheses or the return value:
/// the payloads those tools print.
fn syscall_line(t: &str) -> Option<(&'static str, &str, &str)> {
    let rest = t.strip_prefix("sys_")?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let (call, after) = rest.split_at(end);
    if call.is_empty() {
        return None;
    }
    if let Some(args) = after.strip_prefix('(') {
        Some(("sys_enter_", call, args.trim_end().strip_suffix(')')?))
    } else {
        let ret = after.strip_prefix(" -> ")?;
        Some(("sys_exit_", call, ret.trim_end()))
    }
}

/// Split an event line into its parts (FORMATS.md §3.2, §3.3).
///
/// ```text
///              cat-117     [002] ...1.     1.602243: __bio_try_merge_page <-bio_add_page ...
///            <...>-882   (  882) [003] .... 10852.771186: event: event: abc xyz =0x34 ...
///        <unknown>-200   (-----) [000] .... 0.090000: cpu_frequency_limits: min=500000 ...
///       lock hog-1-14544   [000] .....   532.595669: mm_page_alloc: page=000000000f9b09b8 ...
///              ls-4734  [002] 106439.675591: sched_switch:          prev_comm=trace-cmd ...
///             bash-14525 [001]   533.879778971: mm_page_alloc:        page=0x14019d ...
///             bash-14525   [001] .....        25141: mm_page_alloc: page=000000000974050e ...
/// lockcast-fixture:             bash-14525 [000]   533.249266: mm_page_alloc:        page=...
///     bash-14587     1...1. 533074110us : contention_begin: 00000000f4ba7c5b (flags=SPIN|MUTEX)
///     bash-14525   1.....   533.879779: mm_page_alloc:        page=0x14019d pfn=0x14019d ...
/// ```
fn parse_event_line(line: &str) -> Result<Parsed<'_>, LineFail> {
    let mut first_bad = None;
    for (p, _) in line.match_indices('[') {
        if p > MAX_PREFIX {
            break;
        }
        let (Some(head), Some(at)) = (line.get(..p), line.get(p..)) else {
            continue;
        };
        let Ok((rest, cpu)) = cpu_field(at) else {
            continue;
        };
        let Some((comm, pid, tgid)) = task_prefix(head) else {
            continue;
        };
        match finish_line(line, comm, pid, tgid, cpu, rest) {
            Ok(parsed) => return Ok(parsed),
            Err(bad) => {
                first_bad.get_or_insert(bad);
            }
        }
    }
    if let Some(parsed) = parse_latency_line(line) {
        return Ok(parsed);
    }
    Err(first_bad.unwrap_or(LineFail::NotEvent))
}

/// The text before `[cpu]`: `<comm>-<pid>` and an optional `(tgid)`, right to left so comms
/// with spaces and dashes split at the last `-<digits>`.
/// Returns (comm, pid digits, tgid inside the parentheses).
fn task_prefix(head: &str) -> Option<(&str, &str, Option<&str>)> {
    let head = head.trim_end();
    let (head, tgid) = match head.strip_suffix(')') {
        Some(h) => {
            let lp = h.rfind('(')?;
            (h.get(..lp)?.trim_end(), Some(h.get(lp + 1..)?))
        }
        None => (head, None),
    };
    let dash = head.rfind('-')?;
    let pid = head.get(dash + 1..)?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.get(..dash)?, pid, tgid))
}

/// Everything from the pid on, once `<comm>-<pid> [(tgid)] [<cpu>]` matched.
fn finish_line<'a>(
    line: &'a str,
    comm: &'a str,
    pid: &'a str,
    tgid: Option<&'a str>,
    cpu: &'a str,
    rest: &'a str,
) -> Result<Parsed<'a>, LineFail> {
    let tgid = match tgid {
        None => Tgid::Absent,
        Some(inner) => match all_consuming(tgid_inner).parse(inner) {
            Ok((_, None)) => Tgid::Unknown,
            Ok((_, Some(d))) => Tgid::Known(
                parse_digits(d)
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| overflow(line, inner))?,
            ),
            Err(_) => {
                return Err(LineFail::Bad {
                    col: col_of(line, inner),
                    kind: LineError::expected("a tgid \"(<digits>)\" or \"(-----)\"", inner),
                })
            }
        },
    };
    let tid = parse_digits(pid)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| overflow(line, pid))?;
    let cpu = parse_digits(cpu)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| overflow(line, cpu))?;

    let s = rest.trim_start();
    let (tok, after) = split_token(s);
    let (flags, ts_tok, after_ts) = if let Some(ts) = tok.strip_suffix(':') {
        (None, ts, after)
    } else if is_flags(tok) {
        let s2 = after.trim_start();
        let (tok2, after2) = split_token(s2);
        match tok2.strip_suffix(':') {
            Some(ts) => (Some(tok), ts, after2),
            None => {
                return Err(LineFail::Bad {
                    col: col_of(line, s2),
                    kind: LineError::expected(EXPECTED_TS, tok2),
                })
            }
        }
    } else {
        return Err(LineFail::Bad {
            col: col_of(line, s),
            kind: LineError::expected(EXPECTED_FLAGS_OR_TS, tok),
        });
    };
    let ts_at = || col_of(line, ts_tok);
    let ts = match all_consuming(clock_ts).parse(ts_tok) {
        Ok((_, (secs, frac))) => match ts_from_digits(secs, frac) {
            Ok(Some(ts)) => ts,
            Ok(None) => {
                return Err(LineFail::Bad {
                    col: ts_at(),
                    kind: LineError::expected(EXPECTED_TS, ts_tok),
                })
            }
            Err(()) => {
                return Err(LineFail::Bad {
                    col: ts_at(),
                    kind: LineError::Overflow {
                        got: cut(ts_tok, 60),
                    },
                })
            }
        },
        Err(_) => {
            return Err(LineFail::Bad {
                col: ts_at(),
                kind: LineError::expected(EXPECTED_TS, ts_tok),
            })
        }
    };
    let Some((name_prefix, name, gap, payload, function_line)) = name_and_payload(after_ts) else {
        return Err(LineFail::Bad {
            col: col_of(line, after_ts),
            kind: LineError::expected(EXPECTED_NAME, after_ts),
        });
    };
    Ok(Parsed {
        comm,
        tid,
        tgid,
        cpu,
        flags,
        ts,
        name_prefix,
        name,
        gap,
        payload,
        function_line,
        latency: false,
    })
}

/// The latency layout (`"%8.8s-%-7d %3d"` + flags + time, FORMATS.md §3.2/§3.3): tried only
/// when no `[cpu]` field matched. Any failure means "not a latency line".
fn parse_latency_line(line: &str) -> Option<Parsed<'_>> {
    for (d, _) in line.match_indices('-') {
        if d > MAX_PREFIX {
            break;
        }
        let comm = line.get(..d)?;
        if comm.trim().is_empty() {
            continue;
        }
        let after = line.get(d + 1..)?;
        let Ok((rest, (pid, _, (cpu, flags), _))) =
            (digit1, space1, latency_cpu_flags, space1).parse(after)
        else {
            continue;
        };
        let Ok((rest, ts)) = terminated(latency_ts, char(':')).parse(rest) else {
            continue;
        };
        let ts = match ts {
            LatTs::Us(us) => {
                let ns = parse_digits(us)?.checked_mul(1000)?;
                Ts {
                    ns,
                    res_ns: 1000,
                    kind: TsKind::LatencyUs,
                }
            }
            LatTs::Clock(s, f) => ts_from_digits(s, f).ok()??,
        };
        let Some((name_prefix, name, gap, payload, function_line)) = name_and_payload(rest) else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue;
        }
        return Some(Parsed {
            comm,
            tid: i32::try_from(parse_digits(pid)?).ok()?,
            tgid: Tgid::Absent,
            cpu: u32::try_from(parse_digits(cpu)?).ok()?,
            flags: Some(flags),
            ts,
            name_prefix,
            name,
            gap,
            payload,
            function_line,
            latency: true,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// Everything one reader run gives: events, header, diagnostics, and the error that stopped
    /// it (strict mode).
    struct Run {
        events: Vec<Event>,
        header: Header,
        diags: Diagnostics,
        err: Option<Error>,
        bytes: u64,
    }

    fn run(input: &[u8], lenient: bool) -> Run {
        let opts = Options {
            lenient,
            ..Options::default()
        };
        run_opts(input, &opts)
    }

    fn run_opts(input: &[u8], opts: &Options) -> Run {
        let mut r = Reader::new(input, opts);
        let mut events = Vec::new();
        let mut err = None;
        loop {
            match r.next_event() {
                Ok(Some(e)) => events.push(e),
                Ok(None) => break,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        Run {
            events,
            header: r.header().clone(),
            diags: r.diagnostics().clone(),
            err,
            bytes: r.bytes_read(),
        }
    }

    /// Strict run that must succeed.
    fn ok(input: &str) -> Run {
        let r = run(input.as_bytes(), false);
        if let Some(e) = &r.err {
            panic!("unexpected error: {e}");
        }
        r
    }

    /// The single event of a one-line input.
    fn one(line: &str) -> Event {
        let mut r = ok(line);
        assert_eq!(r.events.len(), 1, "{line}");
        r.events.remove(0)
    }

    fn malformed_at(r: &Run) -> (u64, u32, &LineError, &'static str) {
        match &r.err {
            Some(Error::Malformed {
                format,
                location,
                kind,
                ..
            }) => (location.line, location.col, kind, *format),
            other => panic!("expected a malformed-line error, got {other:?}"),
        }
    }

    // ---- grammar elements ----------------------------------------------------------------

    #[test]
    fn grammar_cpu_field() {
        assert_eq!(cpu_field("[003] ...1"), Ok((" ...1", "003")));
        assert!(cpu_field("[ns]").is_err());
        assert!(cpu_field("[12").is_err());
    }

    #[test]
    fn grammar_tgid_inner() {
        assert_eq!(tgid_inner("  882"), Ok(("", Some("882"))));
        assert_eq!(tgid_inner("  14525"), Ok(("", Some("14525"))));
        assert_eq!(tgid_inner("-----"), Ok(("", None)));
        assert_eq!(tgid_inner("-------"), Ok(("", None)));
        assert!(all_consuming(tgid_inner).parse("12a").is_err());
    }

    #[test]
    fn grammar_clock_ts() {
        assert_eq!(clock_ts("9913.990380"), Ok(("", ("9913", Some("990380")))));
        assert_eq!(clock_ts("25141"), Ok(("", ("25141", None))));
        assert_eq!(clock_ts("1.2.3"), Ok((".3", ("1", Some("2")))));
    }

    #[test]
    fn grammar_latency_ts() {
        assert_eq!(
            latency_ts("533074110us :"),
            Ok((":", LatTs::Us("533074110")))
        );
        assert_eq!(
            latency_ts("533074156us+:"),
            Ok((":", LatTs::Us("533074156")))
        );
        assert_eq!(
            latency_ts("533.879779:"),
            Ok((":", LatTs::Clock("533", Some("879779"))))
        );
        assert_eq!(latency_cpu_flags("1d..4. "), Ok((" ", ("1", "d..4."))));
    }

    #[test]
    fn grammar_preamble_lines() {
        assert_eq!(preamble("cpus=8"), Some(Preamble::Cpus(8)));
        assert_eq!(preamble("version = 6"), Some(Preamble::Version(6)));
        assert_eq!(preamble("CPU 3 is empty"), Some(Preamble::CpuEmpty(3)));
        assert_eq!(
            preamble("CPU:2 [EVENTS DROPPED]"),
            Some(Preamble::Dropped(None))
        );
        assert_eq!(
            preamble("CPU:1 [1234 EVENTS DROPPED]"),
            Some(Preamble::Dropped(Some(1234)))
        );
        assert_eq!(preamble("cpus=8 x"), None);
        assert_eq!(preamble("cpus=99999999999"), None);
        assert_eq!(
            entries_line("entries-in-buffer/entries-written: 812/2928   #P:2"),
            Ok(("   #P:2", ("812", "2928")))
        );
    }

    #[test]
    fn grammar_task_prefix() {
        assert_eq!(
            task_prefix("       CPU 0/KVM-4242    "),
            Some(("       CPU 0/KVM", "4242", None))
        );
        assert_eq!(
            task_prefix("           <...>-882   (  882) "),
            Some(("           <...>", "882", Some("  882")))
        );
        assert_eq!(task_prefix("a-b "), None);
        assert_eq!(task_prefix("(12) "), None);
    }

    // ---- event line layouts ----------------------------------------------------------------

    #[test]
    fn flags_five_columns() {
        // corpus lkml-tracefs-trace-5flag-header-function-tracer.txt
        let e = one("             cat-117     [002] ...1.     1.602243: __bio_try_merge_page <-bio_add_page object:0xffff88811bee4000 value:0x0");
        assert_eq!(e.irq_flags.as_deref(), Some("...1."));
        assert_eq!(
            (e.comm.as_str(), e.tid, e.pid, e.cpu),
            ("cat", 117, None, Some(2))
        );
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(1_602_243_000), 1000));
        assert_eq!(e.name, "function");
        assert_eq!(
            e.payload,
            "__bio_try_merge_page <-bio_add_page object:0xffff88811bee4000 value:0x0"
        );
        assert_eq!(e.system, None);
        assert!(e.callchain.is_empty());
        assert_eq!(e.period, None);
    }

    #[test]
    fn flags_four_columns() {
        // corpus trappy-trace_no_trailing_line.txt
        let e = one("          <idle>-0     [000] d..2  1136.097253: cpu_idle: state=0 cpu_id=0");
        assert_eq!(e.irq_flags.as_deref(), Some("d..2"));
        assert_eq!((e.comm.as_str(), e.tid), ("<idle>", 0));
        assert_eq!(e.ts_ns, Some(1_136_097_253_000));
        assert_eq!(
            (e.name.as_str(), e.payload.as_str()),
            ("cpu_idle", "state=0 cpu_id=0")
        );
    }

    #[test]
    fn flags_absent() {
        // corpus trappy-raw_trace.txt (trace-cmd 2.x) and fixtures tracefs-*-noirqinfo.txt
        let e = one("              ls-4734  [002] 106439.675591: sched_switch:          prev_comm=trace-cmd prev_pid=4734 prev_prio=120 prev_state=1024 next_comm=migration/2 next_pid=18 next_prio=0");
        assert_eq!(e.irq_flags, None);
        assert_eq!((e.comm.as_str(), e.tid, e.cpu), ("ls", 4734, Some(2)));
        assert!(e.payload.starts_with("prev_comm=trace-cmd prev_pid=4734"));
        let e = one("        lrufault-14563   [001]    532.811029: contention_begin: 00000000a8dbaef8 (flags=SPIN)");
        assert_eq!(e.irq_flags, None);
        assert_eq!(e.ts_ns, Some(532_811_029_000));
        assert_eq!(e.payload, "00000000a8dbaef8 (flags=SPIN)");
    }

    #[test]
    fn flags_newer_letters() {
        // v5.17 BH letters b/D, v6.13 PREEMPT_LAZY B/L/l, NMI Z/z, H = hardirq in softirq
        for flags in ["bDZ2.", "DBz1.", ".LH..", "dlh1.", "bb.1.", "X...", "dNs6."] {
            let line = format!(
                "          <idle>-0       [002] {flags}     1.602298: bio_endio <-blk_update_request"
            );
            let e = one(&line);
            assert_eq!(e.irq_flags.as_deref(), Some(flags), "{line}");
            assert_eq!(e.ts_ns, Some(1_602_298_000));
        }
    }

    #[test]
    fn tgid_column() {
        // corpus perfetto-bad_print.systrace, perfetto-cpu_frequency_limits.systrace,
        // fixtures tracefs-*-tgid.txt (7-wide), and the newer "(-------)".
        let e = one("  surfaceflinger-598   (  598) [004] .... 10852.771242: tracing_mark_write: B|598|some event");
        assert_eq!(
            (e.comm.as_str(), e.tid, e.pid),
            ("surfaceflinger", 598, Some(598))
        );
        let e = one("       <unknown>-200   (-----) [000] .... 0.090000: cpu_frequency_limits: min=500000 max=2800000 cpu_id=6");
        assert_eq!((e.comm.as_str(), e.tid, e.pid), ("<unknown>", 200, None));
        assert_eq!(e.ts_ns, Some(90_000_000));
        let e = one("          <idle>-0       (-------) [000] d..3. 21.123838: sched_blocked_reason: pid=2172 iowait=1");
        assert_eq!((e.tid, e.pid), (0, None));
        let e = one("        lrufault-14553   (  14550) [001] ...1.   532.700035: contention_begin: 00000000cbd593cd (flags=READ)");
        assert_eq!(
            (e.comm.as_str(), e.tid, e.pid),
            ("lrufault", 14553, Some(14550))
        );
        assert_eq!(e.irq_flags.as_deref(), Some("...1."));
    }

    #[test]
    fn pid_width_5_and_7() {
        let five = one(
            "          <idle>-0     [000] d..2  1136.097346: cpu_idle: state=4294967295 cpu_id=0",
        );
        let seven =
            one("          <idle>-0       [002] d..3.     1.602300: bio_put <-blk_update_request");
        assert_eq!((five.tid, five.cpu), (0, Some(0)));
        assert_eq!((seven.tid, seven.cpu), (0, Some(2)));
        // a pid wider than its column pushes "[cpu]" right
        let wide = one("     kworker/6:2-11630 [006]  7115.449621: sched_switch:          prev_comm=kworker/6:2");
        assert_eq!(
            (wide.comm.as_str(), wide.tid, wide.cpu),
            ("kworker/6:2", 11630, Some(6))
        );
    }

    #[test]
    fn comm_with_spaces_and_dashes() {
        let cases = [
            ("       CPU 0/KVM-4242    [001] d..2.  1234.000001: kvm_exit: reason EPT_VIOLATION", "CPU 0/KVM", 4242),
            ("  kworker/u34:5-141     [000] .....     2.000000: workqueue_execute_start: work struct 00000000", "kworker/u34:5", 141),
            ("           <...>-882   (  882) [003] .... 10852.771186: event: x", "<...>", 882),
            ("          <idle>-0       [002] d..3.     1.602298: bio_endio <-blk_update_request", "<idle>", 0),
            ("   sshd-session-1082    [001] .....    10.000001: sys_enter: NR 0", "sshd-session", 1082),
            // fixtures/ftrace/tracefs-6.18.44-default.txt line 331 (comm set to "lock hog-1")
            ("      lock hog-1-14544   [000] .....   532.594331: mm_page_alloc: page=000000008895bf48 pfn=0x19fe59 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP", "lock hog-1", 14544),
            ("com.android.systemui-611   (  611) [001] d..5 514769.086090: sched_wakeup: comm=Binder_5 pid=679", "com.android.systemui", 611),
        ];
        for (line, comm, tid) in cases {
            let e = one(line);
            assert_eq!((e.comm.as_str(), e.tid), (comm, tid), "{line}");
        }
    }

    #[test]
    fn comm_split_at_last_dash_digits() {
        let e = one("      foo-12-345 [001] ..... 1.000000: ev: x");
        assert_eq!((e.comm.as_str(), e.tid), ("foo-12", 345));
        let e = one("    a-1 b-2   (    2) [000] ..... 1.000000: ev: y");
        assert_eq!((e.comm.as_str(), e.tid, e.pid), ("a-1 b", 2, Some(2)));
        // "[120]" and "[0]" inside a trace-cmd sched payload are not cpu fields
        let e = one("          <idle>-0     [000] d..2. 162573.216423: sched_switch:         swapper/0:0 [120] R ==> trace-cmd:89135 [120]");
        assert_eq!((e.comm.as_str(), e.cpu), ("<idle>", Some(0)));
        assert_eq!(e.payload, "swapper/0:0 [120] R ==> trace-cmd:89135 [120]");
    }

    #[test]
    fn timestamp_secs_usecs() {
        let e = one("      khugepaged-58    [001] ....  9913.990380: mm_khugepaged_scan_pmd: mm=00000000283d31fc, scan_pfn=0x2ae4bd");
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(9_913_990_380_000), 1000));
    }

    #[test]
    fn timestamp_secs_nsecs() {
        // fixtures/ftrace/trace-cmd-3.1.6-report-t.txt line 85
        let e = one("        lrufault-14633 [001]   533.882584261: contention_begin:     0xffff888627c2ba80 (flags=SPIN)");
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(533_882_584_261), 1));
        let e = one("x-1 [0] 4294967296.000000001: e: big");
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(4_294_967_296_000_000_001), 1));
        let e = one("x-1 [0] 7.5: e: odd decimals");
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(7_500_000_000), 100_000_000));
    }

    #[test]
    fn timestamp_counter_clock() {
        // fixtures/ftrace/tracefs-6.18.44-counter-clock.txt line 142 (trace_clock=counter)
        let r = ok("      lock hog-1-14577   [000] .....        25270: mm_page_alloc: page=00000000bac3a7d7 pfn=0x172d0e order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP\n");
        let e = &r.events[0];
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(25270), 1));
        assert_eq!(e.comm, "lock hog-1");
        assert!(r.header.counter_clock);
        assert!(!ok("x-1 [0] 1.000000: e: y").header.counter_clock);
    }

    #[test]
    fn timestamp_overflow_is_malformed() {
        let r = run(b"x-1 [0] 99999999999999999999.000000: e: y\n", false);
        let (line, col, kind, _) = malformed_at(&r);
        assert_eq!((line, col), (1, 9));
        assert!(matches!(kind, LineError::Overflow { .. }), "{kind:?}");
        let r = run(b"x-1 [0] 9999999999999.000000: e: y\n", false);
        assert!(matches!(malformed_at(&r).2, LineError::Overflow { .. }));
    }

    #[test]
    fn pid_overflow_is_malformed() {
        let r = run(b"x-99999999999 [0] 1.000000: e: y\n", false);
        let (line, col, kind, _) = malformed_at(&r);
        assert_eq!((line, col), (1, 3));
        assert_eq!(
            kind,
            &LineError::Overflow {
                got: "99999999999".into()
            }
        );
    }

    #[test]
    fn out_of_order_timestamps_allowed() {
        // corpus trappy-trace_idle_unsorted.txt lines 9-10
        let r = ok("\t  <idle>-0     [006]  7115.449811: cpu_idle:             state=4294967295 cpu_id=6\n\
                    \t  <idle>-0     [006]  7115.449809: cpu_idle:             state=1 cpu_id=6\n");
        let ts: Vec<_> = r.events.iter().map(|e| e.ts_ns).collect();
        assert_eq!(ts, vec![Some(7_115_449_811_000), Some(7_115_449_809_000)]);
        assert_eq!(r.events[0].comm, "<idle>");
    }

    // ---- preamble and comment lines -------------------------------------------------------

    #[test]
    fn comment_lines_skipped() {
        let text = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 812/2928   #P:2
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
        lrufault-14539   [001] ...1.   532.590894: contention_begin: 0000000011b5fc01 (flags=SPIN)
##### CPU 0 buffer started ####
        lrufault-14540   [000] ...1.   532.590898: contention_begin: 0000000011b5fc01 (flags=SPIN)
";
        let r = ok(text);
        assert_eq!(r.events.len(), 2);
        assert_eq!((r.events[0].line, r.events[1].line), (13, 15));
        assert_eq!(r.events[1].tid, 14540);
        let h = &r.header;
        assert_eq!(h.tracer.as_deref(), Some("nop"));
        assert_eq!(
            (h.entries_in_buffer, h.entries_written, h.cpus),
            (Some(812), Some(2928), Some(2))
        );
        assert_eq!(
            (h.irq_info, h.flag_columns, h.tgid),
            (Some(true), Some(5), false)
        );
        assert_eq!(h.source, Some(Source::Ftrace));
        assert!(r.events.iter().all(|e| e.source == Source::Ftrace));
        assert_eq!(r.bytes, text.len() as u64);
    }

    #[test]
    fn cpu_buffer_started_skipped() {
        let r = ok("##### CPU 2 buffer started ####\n          <idle>-0     [002] d..2  1136.097366: cpu_idle: state=0 cpu_id=3\n");
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.events[0].line, 2);
    }

    #[test]
    fn header_without_irq_info_and_with_tgid() {
        let r = ok("# tracer: nop\n#\n#           TASK-PID     CPU#     TIMESTAMP  FUNCTION\n#              | |         |         |         |\n");
        assert_eq!(
            (r.header.irq_info, r.header.flag_columns),
            (Some(false), None)
        );
        let r = ok("#           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION\n");
        assert_eq!(
            (r.header.irq_info, r.header.flag_columns, r.header.tgid),
            (Some(true), Some(4), true)
        );
        let r = ok("# enabled events: sched:sched_switch sched:sched_wakeup\n");
        assert_eq!(
            r.header.enabled_events.as_deref(),
            Some("sched:sched_switch sched:sched_wakeup")
        );
    }

    #[test]
    fn trace_cmd_preamble() {
        // corpus trappy-raw_trace.txt, plus the dropped-events markers of trace-read.c
        let text = "\
version = 6
CPU 3 is empty
CPU 4 is empty
cpus=6
              ls-4734  [002] 106439.675591: sched_switch:          prev_comm=trace-cmd prev_pid=4734
CPU:2 [EVENTS DROPPED]
     migration/2-18    [002] 106439.675613: sched_switch:          prev_comm=migration/2 prev_pid=18
CPU:1 [1234 EVENTS DROPPED]
       trace-cmd-4730  [001] 106439.675718: sched_switch:          prev_comm=trace-cmd prev_pid=4730
";
        let r = ok(text);
        assert_eq!(r.events.len(), 3);
        let h = &r.header;
        assert_eq!((h.trace_cmd_version, h.cpus), (Some(6), Some(6)));
        assert_eq!(h.empty_cpus, vec![3, 4]);
        assert_eq!((h.dropped_markers, h.dropped_events), (2, 1234));
        assert_eq!(h.source, Some(Source::TraceCmd));
        assert!(r.events.iter().all(|e| e.source == Source::TraceCmd));
        assert_eq!(r.events[1].comm, "migration/2");
    }

    #[test]
    fn syscall_tracer_lines() {
        // lines of fixtures/lazyfree/khugepaged-ftrace/trace.txt.gz (the kernel prints
        // arguments below 10 in decimal, others in hex)
        let e = one("         hotcold-2833    [001] ..... 23522.748995: sys_madvise(start: 0x7f4669800000, len_in: 0x1000000, behavior: 8)");
        assert_eq!(
            (e.name.as_str(), e.payload.as_str(), e.tid),
            (
                "sys_enter_madvise",
                "start: 0x7f4669800000, len_in: 0x1000000, behavior: 8",
                2833
            )
        );
        let e = one("         hotcold-2833    [001] ..... 23522.748999: sys_madvise -> 0x0");
        assert_eq!(
            (e.name.as_str(), e.payload.as_str()),
            ("sys_exit_madvise", "0x0")
        );
        // not a syscall line: a name that only starts with sys_
        let e = one("         hotcold-2833    [001] ..... 23522.748999: sys_foo: x=1");
        assert_eq!((e.name.as_str(), e.payload.as_str()), ("sys_foo", "x=1"));
    }

    #[test]
    fn trace_cmd_event_name_padded() {
        // corpus trappy-trace_common_clk.txt: no preamble, the padding says trace-cmd
        let r = ok("  VideoDecMsgThr-32342 [007] 85636.208531: clock_set_rate:       video_subcore0_clk_src state=200000000 cpu_id=7\n");
        let e = &r.events[0];
        assert_eq!(e.name, "clock_set_rate");
        assert_eq!(e.payload, "video_subcore0_clk_src state=200000000 cpu_id=7");
        assert_eq!(e.source, Source::TraceCmd);
        assert_eq!(r.header.source, Some(Source::TraceCmd));
        // the kernel prints one blank
        let r = ok("          <idle>-0     [000] d..2  1136.097253: cpu_idle: state=0 cpu_id=0\n");
        assert_eq!(r.events[0].source, Source::Ftrace);
        assert_eq!(r.header.source, Some(Source::Ftrace));
    }

    #[test]
    fn source_undecided_by_long_names() {
        // corpus lkml-mm_khugepaged_scan_pmd-line.txt: a 22-character name with one blank
        // could be either; it is tagged Ftrace and the header stays undecided.
        let r = ok("      khugepaged-58    [001] ....  9913.990380: mm_khugepaged_scan_pmd: mm=00000000283d31fc\n");
        assert_eq!(r.events[0].source, Source::Ftrace);
        assert_eq!(r.header.source, None);
    }

    #[test]
    fn trace_cmd_instance_prefix() {
        // fixtures/ftrace/trace-cmd-3.1.6-report-instance.txt lines 1, 83
        let r = ok("cpus=2\nlockcast-fixture:         lrufault-14618 [000]   533.250479: contention_begin:     0xffff888627c2ba80 (flags=SPIN)\n");
        let e = &r.events[0];
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu),
            ("lrufault", 14618, Some(0))
        );
        assert_eq!(e.payload, "0xffff888627c2ba80 (flags=SPIN)");
        assert_eq!(r.header.buffers, vec!["lockcast-fixture".to_string()]);
    }

    // ---- payloads -------------------------------------------------------------------------

    #[test]
    fn payload_with_colon_equals_arrow() {
        // corpus trappy-trace_equals.txt, perfetto-bad_print.systrace, trappy-trace_no_trailing_line.txt
        let e = one(" systemd-journal-1662  [003]   653.065294: bputs:                0xffff0000080feeb8s: equals_event: my_field=foo=bar=baz");
        assert_eq!((e.comm.as_str(), e.tid), ("systemd-journal", 1662));
        assert_eq!(e.name, "bputs");
        assert_eq!(
            e.payload,
            "0xffff0000080feeb8s: equals_event: my_field=foo=bar=baz"
        );
        let e = one("           <...>-882   (  882) [003] .... 10852.771186: event: event: abc xyz =0x34 clk id = 019");
        assert_eq!(
            (e.name.as_str(), e.payload.as_str()),
            ("event", "event: abc xyz =0x34 clk id = 019")
        );
        let e = one("          chrome-2804  [003] d..3  1136.097350: sched_switch: prev_comm=chrome prev_pid=2804 prev_prio=112 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120");
        assert_eq!(e.name, "sched_switch");
        assert!(e.payload.contains(" ==> next_comm=swapper/3 "));
        // trace-cmd prints the marker as "print:" with the kernel's text after it
        let e = one("            bash-14525 [001]   533.884780: print:                tracing_mark_write: lockcast fixture: begin");
        assert_eq!(
            (e.name.as_str(), e.payload.as_str()),
            ("print", "tracing_mark_write: lockcast fixture: begin")
        );
    }

    #[test]
    fn payload_trailing_spaces_kept() {
        // fixtures/ftrace/tracefs-6.18.44-default.txt line 28: flags= is a 6-character field
        let e = one("            bash-14525   [000] d..3.   532.588694: mm_lru_insertion: folio=00000000e6b1fa0b pfn=0x14fa19 lru=0 flags= a bd ");
        assert_eq!(
            e.payload,
            "folio=00000000e6b1fa0b pfn=0x14fa19 lru=0 flags= a bd "
        );
        let e = one("x-1 [0] 1.000000: empty:");
        assert_eq!((e.name.as_str(), e.payload.as_str()), ("empty", ""));
    }

    #[test]
    fn multi_line_payload() {
        // corpus perfetto-bad_print.systrace
        let text = "\
           <...>-882   (  882) [003] .... 10852.771186: event: event: abc xyz =0x34 clk id = 019
some = 000, other = 0x4
xyz = 0x0 abc = 0x0
  surfaceflinger-598   (  598) [004] .... 10852.771242: tracing_mark_write: B|598|some event
";
        let r = ok(text);
        assert_eq!(r.events.len(), 2);
        assert_eq!(
            r.events[0].payload,
            "event: abc xyz =0x34 clk id = 019\nsome = 000, other = 0x4\nxyz = 0x0 abc = 0x0"
        );
        assert_eq!(r.events[0].line, 1);
        assert_eq!(
            (r.events[1].line, r.events[1].payload.as_str()),
            (4, "B|598|some event")
        );
        assert_eq!(r.diags.skipped, 0);
    }

    #[test]
    fn multi_line_payload_ends_at_blank_line() {
        let text = "x-1 [0] 1.000000: e: a\nb\n\nc\n";
        let mut rd = Reader::new(text.as_bytes(), &Options::default());
        // the event comes first, with its continuation...
        let e = rd.next_event().unwrap().unwrap();
        assert_eq!(e.payload, "a\nb");
        // ...then the error for "c", which follows a blank line
        match rd.next_event() {
            Err(Error::Malformed {
                format,
                location,
                kind,
                line_text,
            }) => {
                assert_eq!((format, location.line, location.col), ("ftrace", 4, 1));
                assert_eq!(kind, LineError::expected(EXPECTED_EVENT, "c"));
                assert_eq!(line_text, "c");
            }
            other => panic!("{other:?}"),
        }
        assert!(rd.next_event().unwrap().is_none());
    }

    #[test]
    fn multi_line_payload_capped_at_max_line_len() {
        let mut opts = Options {
            max_line_len: 40,
            ..Options::default()
        };
        // "abcdefghij" + "\n" + 28 bytes = 39 fits; one more line of 1 byte does not
        let input = b"x-1 [0] 1.000000: e: abcdefghij\n0123456789012345678901234567\nz\n";
        let r = run_opts(input, &opts);
        let (line, col, kind, _) = malformed_at(&r);
        assert_eq!((line, col), (3, 1));
        assert_eq!(kind, &LineError::LineTooLong { len: 41, max: 40 });
        assert_eq!(
            r.events[0].payload,
            "abcdefghij\n0123456789012345678901234567"
        );
        opts.lenient = true;
        let r = run_opts(input, &opts);
        assert_eq!((r.events.len(), r.diags.skipped), (1, 1));
    }

    #[test]
    fn failed_to_parse_payload_kept_raw() {
        // corpus trappy-trace_failed_to_parse.txt
        let e = one("     kworker/5:2-1497  [005]   454.414603: thermal_power_cpu_get_power: [FAILED TO PARSE] cpumask=ARRAY[0f, 00, 00, 00, 00, 00, 00, 00] freq=0x82208 load=ARRAY[02, 00] load_len=4 dynamic_power=0 static_power=0");
        assert_eq!(e.name, "thermal_power_cpu_get_power");
        assert_eq!(e.payload, "[FAILED TO PARSE] cpumask=ARRAY[0f, 00, 00, 00, 00, 00, 00, 00] freq=0x82208 load=ARRAY[02, 00] load_len=4 dynamic_power=0 static_power=0");
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu),
            ("kworker/5:2", 1497, Some(5))
        );
    }

    // ---- latency layout -------------------------------------------------------------------

    #[test]
    fn latency_format_kernel() {
        // fixtures/ftrace/tracefs-6.18.44-latency-format.txt (options/latency-format=1)
        let text = "\
# tracer: nop
#
# nop latency trace v1.1.5 on 6.18.44-fc-v669
# latency: 0 us, #1715/1715, CPU#0 | (M:PREEMPT(none) VP:0, KP:0, SP:0 HP:0 #P:2)
#                    _------=> CPU#            
#                   / _-----=> irqs-off/BH-disabled
#  cmd     pid     |||||| time  |   caller     
#     \\   /        ||||||  \\    |    /       
    bash-14587     1...1. 533074110us : contention_begin: 00000000f4ba7c5b (flags=SPIN|MUTEX)
    bash-14587     1..... 533074156us+: mm_page_alloc: page=000000000b6d9860 pfn=0x1226ef order=0
lrufault-14598     1d..4. 533077720us : contention_begin: 00000000c24ee821 (flags=SPIN)
";
        let r = ok(text);
        assert_eq!(r.events.len(), 3);
        let e = &r.events[0];
        assert_eq!((e.comm.as_str(), e.tid, e.cpu), ("bash", 14587, Some(1)));
        assert_eq!(e.irq_flags.as_deref(), Some("...1."));
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(533_074_110_000), 1000));
        assert_eq!(
            (e.name.as_str(), e.payload.as_str()),
            ("contention_begin", "00000000f4ba7c5b (flags=SPIN|MUTEX)")
        );
        assert_eq!(r.events[1].ts_ns, Some(533_074_156_000));
        assert_eq!(r.events[2].irq_flags.as_deref(), Some("d..4."));
        let h = &r.header;
        assert!(h.latency_format);
        assert_eq!(
            (h.cpus, h.flag_columns, h.irq_info),
            (Some(2), Some(5), Some(true))
        );
    }

    #[test]
    fn latency_format_trace_cmd() {
        // fixtures/ftrace/trace-cmd-3.1.6-report-l.txt lines 85, 216 (comm cut to 8 chars)
        let r = ok("cpus=2\n\
lrufault-14633   1d..4.   533.882584: contention_begin:     0xffff888627c2ba80 (flags=SPIN)\n\
lock hog-14635   1.....   533.884981: mm_page_alloc:        page=0x19fe5e pfn=0x19fe5e order=0\n");
        let e = &r.events[0];
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu, e.irq_flags.as_deref()),
            ("lrufault", 14633, Some(1), Some("d..4."))
        );
        assert_eq!((e.ts_ns, e.ts_res_ns), (Some(533_882_584_000), 1000));
        assert_eq!(e.source, Source::TraceCmd);
        let e = &r.events[1];
        assert_eq!(
            (e.comm.as_str(), e.tid, e.irq_flags.as_deref()),
            ("lock hog", 14635, Some("....."))
        );
        assert_eq!(e.payload, "page=0x19fe5e pfn=0x19fe5e order=0");
        assert!(r.header.latency_format);
    }

    // ---- HTML -----------------------------------------------------------------------------

    #[test]
    fn html_trace_data_block() {
        let text = "\
<!DOCTYPE html>
<html><script>var x = 'a-1 [0] 1.0: not: trace';</script>
<script class=\"trace-data\" type=\"application/json\">
{\"traceEvents\": []}
</script>
  <script class=\"trace-data\" type=\"application/text\">
# tracer: nop
#P:6 is not how the header writes it
Binder_4-280   (  184) [000] d..5 514769.086330: sched_wakeup: comm=Binder_5 pid=1158
  </script>
<p>junk that is not trace text</p>
</html>
";
        let r = ok(text);
        assert_eq!(r.events.len(), 1);
        let e = &r.events[0];
        assert_eq!(
            (e.comm.as_str(), e.tid, e.pid, e.line),
            ("Binder_4", 280, Some(184), 9)
        );
        assert!(r.header.html);
        assert_eq!(r.header.source, Some(Source::Ftrace));
    }

    #[test]
    fn html_legacy_block() {
        let text = "<html>\n  var linuxPerfData = \"\\\n# tracer: nop\\n\\\n            adbd-315   [002] dn.4  7480.993239: sched_wakeup: comm=kworker/2:1 pid=5748\\n\\\n\";\n</html>\n";
        let r = ok(text);
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.events[0].payload, "comm=kworker/2:1 pid=5748");
        assert_eq!(r.header.tracer.as_deref(), Some("nop"));
    }

    #[test]
    fn html_without_trace_fails() {
        let text = "<!DOCTYPE html>\n<html><body>no trace here</body></html>\n";
        let r = run(text.as_bytes(), false);
        let (line, col, kind, _) = malformed_at(&r);
        assert_eq!((line, col), (1, 1));
        assert_eq!(kind, &LineError::expected(EXPECTED_HTML, "<!DOCTYPE html>"));
        let r = run(text.as_bytes(), true);
        assert!(r.err.is_none());
        assert_eq!(r.diags.skipped, 1);
        assert!(r.events.is_empty());
    }

    // ---- malformed input ------------------------------------------------------------------

    #[test]
    fn malformed_line_strict_and_lenient() {
        let text = "\
# tracer: nop
this is not a trace line
          <idle>-0     [000] d..2  1136.097253: cpu_idle: state=0 cpu_id=0

          <idle>-0     [000] d..2  1136.097346 cpu_idle: state=4294967295 cpu_id=0
          <idle>-0     [000] d..2  1136.097378: cpu_idle: state=0 cpu_id=0
";
        let r = run(text.as_bytes(), false);
        let (line, col, kind, format) = malformed_at(&r);
        assert_eq!((line, col, format), (2, 1, "ftrace"));
        assert_eq!(
            kind,
            &LineError::expected(EXPECTED_EVENT, "this is not a trace line")
        );
        assert!(r.events.is_empty());

        let r = run(text.as_bytes(), true);
        assert!(r.err.is_none());
        assert_eq!(r.events.len(), 2);
        assert_eq!(r.diags.skipped, 2);
        let at: Vec<_> = r
            .diags
            .first
            .iter()
            .map(|d| (d.location.line, d.location.col))
            .collect();
        // line 5 has the "[cpu]" prefix, so it is reported at its timestamp, not as a continuation
        assert_eq!(at, vec![(2, 1), (5, 36)]);
        assert_eq!(
            r.diags.first[1].kind,
            LineError::expected(EXPECTED_TS, "1136.097346")
        );
    }

    #[test]
    fn broken_prefix_is_not_a_continuation() {
        let text = "x-1 [0] 1.000000: e: a\ny-2 [1] 2.000000 e: b\n";
        let r = run(text.as_bytes(), false);
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.events[0].payload, "a");
        let (line, col, _, _) = malformed_at(&r);
        assert_eq!((line, col), (2, 9));
    }

    #[test]
    fn invalid_utf8_and_too_long_lines() {
        let input: &[u8] = b"x-1 [0] 1.000000: e: a\n\xff\xfe bad\nx-2 [0] 1.000001: e: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\nx-3 [0] 1.000002: e: c\n";
        let mut opts = Options {
            max_line_len: 40,
            ..Options::default()
        };
        let r = run_opts(input, &opts);
        assert_eq!(r.events.len(), 1);
        let (line, col, kind, _) = malformed_at(&r);
        assert_eq!((line, col), (2, 1));
        assert_eq!(kind, &LineError::InvalidUtf8 { byte: 0 });

        opts.lenient = true;
        let r = run_opts(input, &opts);
        assert!(r.err.is_none());
        assert_eq!(
            r.events.iter().map(|e| e.tid).collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert_eq!(r.diags.skipped, 2);
        assert_eq!(
            r.diags.first[1].kind,
            LineError::LineTooLong { len: 62, max: 40 }
        );
        assert_eq!(r.bytes, input.len() as u64);
    }

    #[test]
    fn trace_cmd_errors_name_trace_cmd() {
        let r = run(b"cpus=2\ngarbage\n", false);
        assert_eq!(malformed_at(&r).3, "trace-cmd");
    }

    #[test]
    fn no_panic_on_odd_input() {
        let inputs: [&[u8]; 16] = [
            b"",
            b"\n\n\n",
            b"-",
            b"[",
            b"-1 [0]",
            b"-1 [0] ",
            b"-1 [0] 1:",
            b"-1 [0] 1: :",
            b"a-1 (",
            b"a-1 () [0] 1.0: e: x",
            b"a-1 (--a) [0] 1.0: e: x",
            b"a-1 [99999999999] 1.0: e: x",
            b"a-1 [0] ....... ...: e:",
            b"\xe2\x82-1 [0] 1.0: e: x",
            b"a-1 0 1us",
            "é-1 [0] 1.0: é: ü\nü\n".as_bytes(),
        ];
        for input in inputs {
            for lenient in [false, true] {
                let _ = run(input, lenient);
            }
        }
        // many "[cpu]" candidates followed by one huge token: bounded work per candidate
        let hostile = format!("{}{}\n", "a-1 [0]".repeat(70), "9".repeat(200_000));
        let r = run(hostile.as_bytes(), true);
        assert_eq!((r.events.len(), r.diags.skipped), (0, 1));
        let r = run("é-1 [0] 1.5: é: ü\nü\n".as_bytes(), false);
        assert_eq!(r.events[0].comm, "é");
        assert_eq!(r.events[0].payload, "ü\nü");
    }

    #[test]
    fn sniff_lines() {
        use crate::event::sample_lines::{FTRACE, PERF_LOCK, PERF_SCRIPT};
        for line in FTRACE {
            assert!(sniff(line), "{line}");
        }
        let not_ftrace = ["#", "CPU 3 is empty", "some = 000, other = 0x4"];
        for line in PERF_SCRIPT.iter().chain(PERF_LOCK).chain(&not_ftrace) {
            assert!(!sniff(line), "{line}");
        }
    }

    // ---- corpus ---------------------------------------------------------------------------

    /// The corpus of real tool outputs, copied into the repository (`tests/corpus/`).
    fn corpus_dir() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/corpus")).to_path_buf()
    }

    fn corpus(name: &str) -> Vec<u8> {
        let p = corpus_dir().join("ftrace").join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn fixture(name: &str) -> Vec<u8> {
        let p = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/ftrace")).join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Strict and lenient runs must agree on a well-formed file; returns the strict run.
    fn clean(bytes: &[u8]) -> Run {
        let strict = run(bytes, false);
        if let Some(e) = &strict.err {
            panic!("strict parse failed: {e}");
        }
        let lenient = run(bytes, true);
        assert_eq!(lenient.diags.skipped, 0, "{:?}", lenient.diags.first);
        assert_eq!(lenient.events, strict.events);
        strict
    }

    fn first_last_ts(r: &Run) -> (Option<i64>, Option<i64>) {
        (
            r.events.first().and_then(|e| e.ts_ns),
            r.events.last().and_then(|e| e.ts_ns),
        )
    }

    /// No line of the other formats' corpus files (perf lock, perf report, perf script) looks
    /// like ftrace text: `detect` asks this module before perf script.
    #[test]
    fn sniff_rejects_other_corpus_formats() {
        let mut files = 0;
        for dir in ["perf-lock", "perf-report", "perf-script"] {
            for entry in std::fs::read_dir(corpus_dir().join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "gz") {
                    continue;
                }
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                for (i, line) in text.lines().enumerate() {
                    assert!(!sniff(line), "{}:{}: {line}", path.display(), i + 1);
                }
                files += 1;
            }
        }
        assert!(files >= 40, "only {files} files");
    }

    /// Every corpus file has a test below: a new file fails here until one is written.
    #[test]
    fn corpus_every_file_is_tested() {
        let tested = [
            "lkml-mm_khugepaged_scan_pmd-line.txt",
            "lkml-trace-cmd-show-4flag-header-truncated.txt",
            "lkml-tracefs-trace-5flag-header-function-tracer.txt",
            "perfetto-bad_print.systrace",
            "perfetto-cpu_frequency_limits.systrace",
            "perfetto-sched_blocked_systrace.systrace",
            "perfetto-unknown_thread_name.systrace",
            "trace-cmd-report-doc-function-events.txt",
            "trace-cmd-report-doc-kmalloc-filter.txt",
            "trace-cmd-report-doc-sched-plugin.txt",
            "trace-cmd-report-doc-wakeup-latency.txt",
            "trappy-raw_trace.txt",
            "trappy-trace_common_clk.txt",
            "trappy-trace_empty.txt",
            "trappy-trace_equals.txt",
            "trappy-trace_failed_to_parse.txt",
            "trappy-trace_filesystem.txt",
            "trappy-trace_idle_unsorted.txt",
            "trappy-trace_legacy_systrace.html",
            "trappy-trace_no_trailing_line.txt",
            "trappy-trace_sched.txt",
            "trappy-trace_systrace.html",
        ];
        let dir = corpus_dir().join("ftrace");
        let mut found: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        assert_eq!(found, tested);
        // and every one of them parses strictly
        for name in tested {
            let r = run(&corpus(name), false);
            assert!(r.err.is_none(), "{name}: {:?}", r.err);
            assert!(!r.events.is_empty(), "{name}");
        }
    }

    #[test]
    fn corpus_lkml_mm_khugepaged_scan_pmd_line() {
        let r = clean(&corpus("lkml-mm_khugepaged_scan_pmd-line.txt"));
        assert_eq!(r.events.len(), 1);
        let e = &r.events[0];
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu, e.irq_flags.as_deref()),
            ("khugepaged", 58, Some(1), Some("...."))
        );
        assert_eq!(e.ts_ns, Some(9_913_990_380_000));
        assert_eq!(e.name, "mm_khugepaged_scan_pmd");
        assert_eq!(e.payload, "mm=00000000283d31fc, scan_pfn=0x2ae4bd, writable=0, referenced=512, none_or_zero=0, status=no_writable_page, unmapped=0");
    }

    #[test]
    fn corpus_lkml_trace_cmd_show_4flag_header_truncated() {
        let r = clean(&corpus("lkml-trace-cmd-show-4flag-header-truncated.txt"));
        assert_eq!(r.events.len(), 1);
        let h = &r.header;
        assert_eq!(
            (h.cpus, h.entries_in_buffer, h.entries_written),
            (Some(4), Some(1), Some(1))
        );
        assert_eq!(
            (h.irq_info, h.flag_columns, h.tgid),
            (Some(true), Some(4), false)
        );
        assert_eq!(h.tracer.as_deref(), Some("nop"));
        let e = &r.events[0];
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu, e.irq_flags.as_deref()),
            ("xfs_io", 2158, Some(1), Some("...1"))
        );
        assert_eq!((e.line, e.ts_ns), (12, Some(309_285_959_000)));
        assert_eq!(e.name, "xfs_log_cil_wait");
        // the stored copy is cut mid-payload, without a final newline
        assert!(e.payload.starts_with("dev 8:96 t_ocnt 1 t_cnt 1"));
        assert!(e.payload.ends_with("curr_cycle 75 curr_block"));
    }

    #[test]
    fn corpus_lkml_tracefs_trace_5flag_header_function_tracer() {
        let r = clean(&corpus(
            "lkml-tracefs-trace-5flag-header-function-tracer.txt",
        ));
        assert_eq!(r.events.len(), 28);
        assert_eq!(
            first_last_ts(&r),
            (Some(1_602_243_000), Some(1_602_300_000))
        );
        let h = &r.header;
        assert_eq!(
            (h.cpus, h.entries_in_buffer, h.flag_columns),
            (Some(4), Some(128), Some(5))
        );
        assert_eq!(h.source, Some(Source::Ftrace));
        assert!(r.events.iter().all(|e| e.name == "function"));
        let last = r.events.last().unwrap();
        assert_eq!(
            (
                last.comm.as_str(),
                last.tid,
                last.irq_flags.as_deref(),
                last.line
            ),
            ("<idle>", 0, Some("d..3."), 40)
        );
        assert_eq!(
            last.payload,
            "kmem_cache_free <-blk_update_request object:0xffff88811bee4000 value:0x0"
        );
    }

    #[test]
    fn corpus_perfetto_bad_print() {
        let r = clean(&corpus("perfetto-bad_print.systrace"));
        assert_eq!(r.events.len(), 3);
        assert_eq!(
            first_last_ts(&r),
            (Some(10_852_771_186_000), Some(10_852_771_245_000))
        );
        let e = &r.events[0];
        assert_eq!((e.comm.as_str(), e.tid, e.pid), ("<...>", 882, Some(882)));
        assert_eq!(
            e.payload,
            "event: abc xyz =0x34 clk id = 019\nsome = 000, other = 0x4\nxyz = 0x0 abc = 0x0"
        );
        assert_eq!(
            (r.events[2].line, r.events[2].payload.as_str()),
            (5, "E|598")
        );
    }

    /// The same file with a blank line between the event and its continuation lines: those
    /// lines are then malformed.
    #[test]
    fn corpus_perfetto_bad_print_damaged_strict_and_lenient() {
        let text = String::from_utf8(corpus("perfetto-bad_print.systrace")).unwrap();
        let (first, rest) = text.split_once('\n').unwrap();
        let damaged = format!("{first}\n\n{rest}");
        let r = run(damaged.as_bytes(), false);
        assert_eq!(r.events.len(), 1);
        let (line, col, kind, _) = malformed_at(&r);
        assert_eq!((line, col), (3, 1));
        assert_eq!(
            kind,
            &LineError::expected(EXPECTED_EVENT, "some = 000, other = 0x4")
        );
        let r = run(damaged.as_bytes(), true);
        assert_eq!(r.events.len(), 3);
        assert_eq!(r.diags.skipped, 2);
        let lines: Vec<_> = r.diags.first.iter().map(|d| d.location.line).collect();
        assert_eq!(lines, vec![3, 4]);
    }

    #[test]
    fn corpus_perfetto_cpu_frequency_limits() {
        let r = clean(&corpus("perfetto-cpu_frequency_limits.systrace"));
        assert_eq!(r.events.len(), 12);
        assert_eq!(first_last_ts(&r), (Some(90_000_000), Some(1_130_000_000)));
        assert!(r
            .events
            .iter()
            .all(|e| e.comm == "<unknown>" && e.pid.is_none()));
        assert_eq!(r.events[2].tid, 80);
        assert_eq!(
            r.events[11].payload,
            "min_freq=800000 max_freq=2200000 cpu_id=4"
        );
    }

    #[test]
    fn corpus_perfetto_sched_blocked_systrace() {
        let r = clean(&corpus("perfetto-sched_blocked_systrace.systrace"));
        assert_eq!(r.events.len(), 2);
        assert_eq!(
            first_last_ts(&r),
            (Some(20_258_854_000), Some(21_123_838_000))
        );
        assert_eq!((r.events[0].tid, r.events[0].pid), (3694, Some(3694)));
        assert_eq!(
            (
                r.events[1].tid,
                r.events[1].pid,
                r.events[1].irq_flags.as_deref()
            ),
            (0, None, Some("d.s4"))
        );
        assert_eq!(
            r.events[1].payload,
            "pid=2172 iowait=1 caller=__filemap_fdatawait_range+0x134/0x150"
        );
    }

    #[test]
    fn corpus_perfetto_unknown_thread_name() {
        let r = clean(&corpus("perfetto-unknown_thread_name.systrace"));
        assert_eq!(r.events.len(), 2);
        assert_eq!(
            first_last_ts(&r),
            (Some(1_234_000_001_000), Some(1_234_000_002_000))
        );
        assert_eq!(
            (r.events[1].comm.as_str(), r.events[1].tid),
            ("<...>", 19999)
        );
        assert_eq!(r.events[1].name, "sched_wake_idle_without_ipi");
    }

    #[test]
    fn corpus_trace_cmd_report_doc_function_events() {
        let r = clean(&corpus("trace-cmd-report-doc-function-events.txt"));
        assert_eq!(r.events.len(), 12);
        assert_eq!(
            first_last_ts(&r),
            (Some(162_573_215_752_000), Some(162_573_215_761_000))
        );
        assert_eq!(
            (r.header.cpus, r.header.source),
            (Some(8), Some(Source::TraceCmd))
        );
        assert!(r
            .events
            .iter()
            .all(|e| e.source == Source::TraceCmd && e.tid == 89142));
        let e = &r.events[0];
        assert_eq!(
            (
                e.line,
                e.name.as_str(),
                e.payload.as_str(),
                e.irq_flags.as_deref()
            ),
            (3, "function", "mutex_unlock", Some("...1."))
        );
        assert_eq!(r.events[2].payload, "0xffffffff855e7448 trace_types_lock");
        // the function plugin's depth indentation is part of the padding that is removed
        assert_eq!(r.events[7].payload, "rcu_lockdep_current_cpu_online");
    }

    #[test]
    fn corpus_trace_cmd_report_doc_kmalloc_filter() {
        let r = clean(&corpus("trace-cmd-report-doc-kmalloc-filter.txt"));
        assert_eq!(r.events.len(), 9);
        assert_eq!(
            first_last_ts(&r),
            (Some(162_573_219_401_000), Some(162_573_784_636_000))
        );
        assert!(r.events[0].payload.starts_with(
            "(tomoyo_find_next_domain+0x84) call_site=tomoyo_find_next_domain+0x84 ptr="
        ));
        assert_eq!(
            (r.events[2].comm.as_str(), r.events[2].tid),
            ("trace-cmd", 89135)
        );
    }

    #[test]
    fn corpus_trace_cmd_report_doc_sched_plugin() {
        let r = clean(&corpus("trace-cmd-report-doc-sched-plugin.txt"));
        assert_eq!(r.events.len(), 12);
        assert_eq!(
            first_last_ts(&r),
            (Some(162_573_215_941_000), Some(162_573_241_983_000))
        );
        assert_eq!(
            r.events[2].payload,
            "swapper/0:0 [120] R ==> trace-cmd:89135 [120]"
        );
        assert_eq!(r.events[1].irq_flags.as_deref(), Some("dNh7."));
    }

    #[test]
    fn corpus_trace_cmd_report_doc_wakeup_latency() {
        let r = clean(&corpus("trace-cmd-report-doc-wakeup-latency.txt"));
        assert_eq!(r.events.len(), 12);
        assert_eq!(
            first_last_ts(&r),
            (Some(162_573_291_142_000), Some(162_573_646_992_000))
        );
        assert_eq!(r.events[0].payload, "migration/1:23 [0] CPU:001");
        assert_eq!(
            r.events[1].payload,
            "swapper/1:0 [120] R ==> migration/1:23 [0] Latency: 94.643 usecs"
        );
    }

    #[test]
    fn corpus_trappy_raw_trace() {
        let r = clean(&corpus("trappy-raw_trace.txt"));
        assert_eq!(r.events.len(), 3);
        assert_eq!(
            first_last_ts(&r),
            (Some(106_439_675_591_000), Some(106_439_675_718_000))
        );
        let h = &r.header;
        assert_eq!(
            (h.trace_cmd_version, h.cpus, h.empty_cpus.clone()),
            (Some(6), Some(6), vec![3, 4])
        );
        assert!(r
            .events
            .iter()
            .all(|e| e.irq_flags.is_none() && e.source == Source::TraceCmd));
    }

    #[test]
    fn corpus_trappy_trace_common_clk() {
        let r = clean(&corpus("trappy-trace_common_clk.txt"));
        assert_eq!(r.events.len(), 8);
        assert_eq!(
            first_last_ts(&r),
            (Some(85_636_208_531_000), Some(85_636_216_801_000))
        );
        assert_eq!(r.header.source, Some(Source::TraceCmd));
        assert_eq!(
            (r.events[0].comm.as_str(), r.events[0].tid),
            ("VideoDecMsgThr", 32342)
        );
    }

    #[test]
    fn corpus_trappy_trace_empty() {
        let r = clean(&corpus("trappy-trace_empty.txt"));
        assert_eq!(r.events.len(), 51);
        assert_eq!(
            first_last_ts(&r),
            (Some(34_896_920_000), Some(34_901_511_000))
        );
        assert_eq!(
            (r.header.trace_cmd_version, r.header.cpus),
            (Some(6), Some(5))
        );
        let e = &r.events[41];
        assert_eq!((e.comm.as_str(), e.tid), ("in:imuxsock", 1767));
        assert_eq!(
            e.payload,
            "comm=rs:main Q:Reg pid=1769 delay=1925639660 [ns]"
        );
    }

    #[test]
    fn corpus_trappy_trace_equals() {
        let r = clean(&corpus("trappy-trace_equals.txt"));
        assert_eq!(r.events.len(), 7);
        assert_eq!(
            first_last_ts(&r),
            (Some(653_065_292_000), Some(653_065_298_000))
        );
        assert_eq!(
            r.events[6].payload,
            "0xffff0000080feeb8s: equals_event: my_field=1foo=2"
        );
        assert_eq!(r.events[6].comm, "systemd-journal");
    }

    #[test]
    fn corpus_trappy_trace_failed_to_parse() {
        let r = clean(&corpus("trappy-trace_failed_to_parse.txt"));
        assert_eq!(r.events.len(), 11);
        assert_eq!(
            first_last_ts(&r),
            (Some(454_414_591_000), Some(454_414_632_000))
        );
        let failed = r
            .events
            .iter()
            .filter(|e| e.payload.starts_with("[FAILED TO PARSE] "))
            .count();
        assert_eq!(failed, 3);
        assert_eq!(r.events[6].name, "thermal_power_allocator");
    }

    #[test]
    fn corpus_trappy_trace_filesystem() {
        let r = clean(&corpus("trappy-trace_filesystem.txt"));
        assert_eq!(r.events.len(), 69);
        assert_eq!(
            first_last_ts(&r),
            (Some(3_843_734_440_000), Some(6_906_217_418_000))
        );
        assert_eq!(
            (r.events[0].comm.as_str(), r.events[0].tid),
            ("<...>", 1297)
        );
        assert_eq!(
            r.events[5].payload,
            "dev 8,13 ino 5898483 parent 5898244 datasync 0 "
        );
        assert_eq!(
            r.events[68].payload,
            "dev = (7,0), ino = 8, checkpoint is not needed, datasync = 0, ret = 0"
        );
    }

    #[test]
    fn corpus_trappy_trace_idle_unsorted() {
        let r = clean(&corpus("trappy-trace_idle_unsorted.txt"));
        assert_eq!(r.events.len(), 15);
        assert_eq!(
            first_last_ts(&r),
            (Some(7_115_449_594_000), Some(7_115_450_093_000))
        );
        assert_eq!(
            (r.events[0].comm.as_str(), r.events[0].tid),
            ("<...>", 15430)
        );
        // lines 9 and 10 are out of order
        assert_eq!(r.events[6].ts_ns, Some(7_115_449_811_000));
        assert_eq!(r.events[7].ts_ns, Some(7_115_449_809_000));
        assert_eq!(r.events[14].payload, "prev_comm=bash prev_pid=14840");
    }

    #[test]
    fn corpus_trappy_trace_legacy_systrace_html() {
        let r = clean(&corpus("trappy-trace_legacy_systrace.html"));
        assert_eq!(r.events.len(), 15);
        assert_eq!(
            first_last_ts(&r),
            (Some(7_480_992_787_000), Some(7_480_993_259_000))
        );
        let h = &r.header;
        assert!(h.html);
        assert_eq!(
            (h.cpus, h.flag_columns, h.entries_in_buffer),
            (Some(8), Some(4), Some(1_023_529))
        );
        assert_eq!(
            (r.events[0].line, r.events[0].comm.as_str(), r.events[0].tid),
            (35, "<...>", 10144)
        );
        assert_eq!(
            (
                r.events[11].comm.as_str(),
                r.events[11].irq_flags.as_deref()
            ),
            ("adbd", Some("dn.4"))
        );
    }

    #[test]
    fn corpus_trappy_trace_no_trailing_line() {
        let r = clean(&corpus("trappy-trace_no_trailing_line.txt"));
        assert_eq!(r.events.len(), 10);
        assert_eq!(
            first_last_ts(&r),
            (Some(1_136_097_253_000), Some(1_136_097_721_000))
        );
        assert_eq!(r.events[9].payload, "state=4294967295 cpu_id=0");
    }

    #[test]
    fn corpus_trappy_trace_sched() {
        let r = clean(&corpus("trappy-trace_sched.txt"));
        assert_eq!(r.events.len(), 11);
        assert_eq!(
            first_last_ts(&r),
            (Some(6_550_018_511_000), Some(6_552_000_002_000))
        );
        assert_eq!(
            (r.header.trace_cmd_version, r.header.cpus),
            (Some(6), Some(6))
        );
        assert_eq!(r.events[3].name, "dynamic_test_key");
        assert_eq!(
            (r.events[7].comm.as_str(), r.events[7].tid),
            ("kworker/0:0", 3410)
        );
    }

    #[test]
    fn corpus_trappy_trace_systrace_html() {
        let r = clean(&corpus("trappy-trace_systrace.html"));
        assert_eq!(r.events.len(), 10);
        assert_eq!(
            first_last_ts(&r),
            (Some(514_769_085_985_000), Some(514_769_086_473_000))
        );
        let h = &r.header;
        assert!(h.html && h.tgid);
        assert_eq!(
            (h.cpus, h.flag_columns, h.entries_in_buffer),
            (Some(6), Some(4), Some(71_906))
        );
        assert_eq!(
            h.enabled_events.as_deref(),
            Some("sched:sched_switch sched:sched_wakeup")
        );
        let e = &r.events[1];
        assert_eq!(
            (e.comm.as_str(), e.tid, e.pid),
            ("com.android.systemui", 611, Some(611))
        );
        assert_eq!(
            (r.events[5].comm.as_str(), r.events[5].tid, r.events[5].pid),
            ("Binder_4", 280, Some(184))
        );
        assert_eq!(
            (r.events[6].comm.as_str(), r.events[6].pid),
            ("<idle>", None)
        );
        assert_eq!(
            r.events[3].payload,
            "trace_event_clock_sync: realtime_ts=1448979311493"
        );
    }

    // ---- real captures (fixtures/ftrace, see its README.md) -------------------------------

    fn count_named(r: &Run, name: &str) -> usize {
        r.events.iter().filter(|e| e.name == name).count()
    }

    #[test]
    fn fixture_tracefs_default() {
        let r = clean(&fixture("tracefs-6.18.44-default.txt"));
        assert_eq!(r.events.len(), 388);
        assert_eq!(
            first_last_ts(&r),
            (Some(532_588_506_000), Some(532_595_670_000))
        );
        let h = &r.header;
        assert_eq!(
            (h.cpus, h.entries_in_buffer, h.entries_written),
            (Some(2), Some(758), Some(758))
        );
        assert_eq!(
            (h.irq_info, h.flag_columns, h.tgid),
            (Some(true), Some(5), false)
        );
        assert_eq!(count_named(&r, "contention_begin"), 95);
        let e = r.events.iter().find(|e| e.line == 331).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu),
            ("lock hog-1", 14544, Some(0))
        );
        assert_eq!(e.ts_ns, Some(532_594_331_000));
        let e = r.events.iter().find(|e| e.line == 265).unwrap();
        assert_eq!(
            (e.name.as_str(), e.payload.as_str()),
            ("tracing_mark_write", "lockcast fixture: begin")
        );
        let e = r.events.iter().find(|e| e.line == 28).unwrap();
        assert_eq!(
            e.payload,
            "folio=00000000e6b1fa0b pfn=0x14fa19 lru=0 flags= a bd "
        );
    }

    #[test]
    fn fixture_tracefs_tgid() {
        let r = clean(&fixture("tracefs-6.18.44-tgid.txt"));
        assert_eq!(r.events.len(), 288);
        assert_eq!(
            first_last_ts(&r),
            (Some(532_696_760_000), Some(532_705_689_000))
        );
        assert!(r.header.tgid);
        assert!(r.events.iter().all(|e| e.pid.is_some()));
        let e = r.events.iter().find(|e| e.line == 94).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.pid),
            ("lrufault", 14553, Some(14550))
        );
        let e = r.events.iter().find(|e| e.line == 172).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.pid),
            ("lock hog-1", 14555, Some(14555))
        );
    }

    #[test]
    fn fixture_tracefs_noirqinfo() {
        let r = clean(&fixture("tracefs-6.18.44-noirqinfo.txt"));
        assert_eq!(r.events.len(), 294);
        assert_eq!(
            first_last_ts(&r),
            (Some(532_808_892_000), Some(532_815_428_000))
        );
        assert_eq!(
            (r.header.irq_info, r.header.flag_columns),
            (Some(false), None)
        );
        assert!(r.events.iter().all(|e| e.irq_flags.is_none()));
        assert_eq!(count_named(&r, "contention_begin"), 94);
    }

    #[test]
    fn fixture_tracefs_counter_clock() {
        let r = clean(&fixture("tracefs-6.18.44-counter-clock.txt"));
        assert_eq!(r.events.len(), 288);
        assert_eq!(first_last_ts(&r), (Some(25141), Some(25430)));
        assert!(r.header.counter_clock);
        assert!(r.events.iter().all(|e| e.ts_res_ns == 1));
        let e = r.events.iter().find(|e| e.line == 142).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.ts_ns),
            ("lock hog-1", 14577, Some(25270))
        );
    }

    #[test]
    fn fixture_tracefs_latency_format() {
        let r = clean(&fixture("tracefs-6.18.44-latency-format.txt"));
        assert_eq!(r.events.len(), 282);
        assert_eq!(
            first_last_ts(&r),
            (Some(533_074_107_000), Some(533_077_720_000))
        );
        let h = &r.header;
        assert!(h.latency_format);
        assert_eq!(
            (h.cpus, h.flag_columns, h.tracer.as_deref()),
            (Some(2), Some(5), Some("nop"))
        );
        assert_eq!(h.source, Some(Source::Ftrace));
        assert_eq!(count_named(&r, "contention_begin"), 12);
        let e = r.events.iter().find(|e| e.line == 21).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu, e.irq_flags.as_deref()),
            ("bash", 14587, Some(1), Some("...1."))
        );
    }

    #[test]
    fn fixture_trace_cmd_report() {
        let r = clean(&fixture("trace-cmd-3.1.6-report.txt"));
        assert_eq!(r.events.len(), 299);
        assert_eq!(
            first_last_ts(&r),
            (Some(533_879_779_000), Some(533_886_393_000))
        );
        assert_eq!(
            (r.header.cpus, r.header.source),
            (Some(2), Some(Source::TraceCmd))
        );
        assert!(r
            .events
            .iter()
            .all(|e| e.irq_flags.is_none() && e.ts_res_ns == 1000));
        assert_eq!(count_named(&r, "contention_begin"), 48);
        let e = r.events.iter().find(|e| e.line == 216).unwrap();
        assert_eq!((e.comm.as_str(), e.tid), ("lock hog-1", 14635));
        let e = r.events.iter().find(|e| e.line == 181).unwrap();
        assert_eq!(
            (e.name.as_str(), e.payload.as_str()),
            ("print", "tracing_mark_write: lockcast fixture: begin")
        );
    }

    #[test]
    fn fixture_trace_cmd_report_t() {
        let r = clean(&fixture("trace-cmd-3.1.6-report-t.txt"));
        assert_eq!(r.events.len(), 299);
        assert_eq!(
            first_last_ts(&r),
            (Some(533_879_778_971), Some(533_886_392_854))
        );
        assert!(r.events.iter().all(|e| e.ts_res_ns == 1));
        let e = r.events.iter().find(|e| e.line == 85).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.ts_ns),
            ("lrufault", 14633, Some(533_882_584_261))
        );
        // same capture as report.txt: same events, finer timestamps
        let us = clean(&fixture("trace-cmd-3.1.6-report.txt"));
        for (a, b) in r.events.iter().zip(&us.events) {
            assert_eq!(
                (&a.comm, a.tid, &a.name, &a.payload),
                (&b.comm, b.tid, &b.name, &b.payload)
            );
            let (a_ns, b_ns) = (a.ts_ns.unwrap(), b.ts_ns.unwrap());
            assert!(
                (a_ns - b_ns).abs() <= 500,
                "line {}: {a_ns} vs {b_ns}",
                a.line
            );
        }
    }

    #[test]
    fn fixture_trace_cmd_report_l() {
        let r = clean(&fixture("trace-cmd-3.1.6-report-l.txt"));
        assert_eq!(r.events.len(), 299);
        assert_eq!(
            first_last_ts(&r),
            (Some(533_879_779_000), Some(533_886_393_000))
        );
        assert!(r.header.latency_format);
        assert!(r
            .events
            .iter()
            .all(|e| e.source == Source::TraceCmd && e.irq_flags.is_some()));
        let e = r.events.iter().find(|e| e.line == 85).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.cpu, e.irq_flags.as_deref()),
            ("lrufault", 14633, Some(1), Some("d..4."))
        );
        let e = r.events.iter().find(|e| e.line == 216).unwrap();
        assert_eq!((e.comm.as_str(), e.tid), ("lock hog", 14635));
    }

    #[test]
    fn fixture_trace_cmd_report_instance() {
        let r = clean(&fixture("trace-cmd-3.1.6-report-instance.txt"));
        assert_eq!(r.events.len(), 99);
        assert_eq!(
            first_last_ts(&r),
            (Some(533_249_266_000), Some(533_252_719_000))
        );
        assert_eq!(r.header.buffers, vec!["lockcast-fixture".to_string()]);
        assert_eq!(count_named(&r, "contention_begin"), 9);
        let e = r.events.iter().find(|e| e.line == 83).unwrap();
        assert_eq!(
            (e.comm.as_str(), e.tid, e.payload.as_str()),
            ("lrufault", 14618, "0xffff888627c2ba80 (flags=SPIN)")
        );
    }
}
