//! `perf lock report`, `perf lock contention` and `perf lock info` text (FORMATS.md §1).
//!
//! Reads every layout perf has printed: the raw-ns era (`avg wait (ns)`, widths 15, ≤ v5.19),
//! the unit era (`10.73 m`, where `m` is minutes, v6.0+), `-F` column lists in any order,
//! contention's caller / `-t` task / `-l` address / `--lock-cgroup` modes, `-v` call stacks,
//! `-x SEP` CSV, the debug footers and `perf lock info -t` / `-m`. Tables may sit inside free
//! text (a mail, a notes file): each table becomes one block, labelled with the nearest
//! preceding line of prose (`w/o patch:`), so two runs pasted into one mail can be compared.
//!
//! Rows are parsed by tokens, never by column offsets: values overflow their columns
//! (`5124095.50 h`), names are empty or cut to 16 characters plus `...`, and some perf versions
//! print columns two characters wider.

use std::collections::VecDeque;
use std::io::BufRead;

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, space0, space1};
use nom::combinator::{all_consuming, eof, map_res, opt, recognize};
use nom::{IResult, Parser};
use serde::Serialize;

use crate::error::{cut, Diagnostic, Diagnostics, Error, LineError, Location};
use crate::lines::{Line, LineReader};
use crate::time::{scaled_decimal, unit_ns, TimeNs};

const FORMAT: &str = "perf lock";

/// Reader options, shared by every format: see [`crate::lines::ReaderOptions`].
pub use crate::lines::ReaderOptions as Options;

/// A value column of a `perf lock` table, named by its `-F`/`-k` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    /// `acquired` (report only).
    Acquired,
    /// `contended`.
    Contended,
    /// `avg wait`.
    AvgWait,
    /// `total wait`.
    WaitTotal,
    /// `max wait`.
    WaitMax,
    /// `min wait`.
    WaitMin,
}

impl Column {
    fn is_time(self) -> bool {
        !matches!(self, Column::Acquired | Column::Contended)
    }

    /// Header text perf prints for this column (without ` (ns)`).
    pub fn header(self) -> &'static str {
        match self {
            Column::Acquired => "acquired",
            Column::Contended => "contended",
            Column::AvgWait => "avg wait",
            Column::WaitTotal => "total wait",
            Column::WaitMax => "max wait",
            Column::WaitMin => "min wait",
        }
    }

    const ALL: [Column; 6] = [
        Column::Acquired,
        Column::Contended,
        Column::AvgWait,
        Column::WaitTotal,
        Column::WaitMax,
        Column::WaitMin,
    ];
}

/// What identifies a row: the table's aggregation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `perf lock report`: one row per lock instance (or per comm with `-t`), `Name` column.
    Lock,
    /// `perf lock contention` default: `type` and `caller`.
    Caller,
    /// `perf lock contention -t`: `pid` and `comm` (or `owner` with `-o`).
    Task,
    /// `perf lock contention -l`: `address` and `symbol (type)`.
    Address,
    /// `perf lock contention --lock-cgroup`: `cgroup`.
    Cgroup,
    /// `perf lock info -t`: `Thread ID: comm`.
    InfoThread,
    /// `perf lock info -m`: `Address of instance: name of class`.
    InfoMap,
    /// `/proc/lock_stat`: one row per lock class (and read/write state), with hold times
    /// ([`crate::lock_stat`]).
    LockStat,
    /// `klockstat` (bcc or libbpf-tools): one row per caller or lock ([`crate::klockstat`]).
    Klockstat,
}

impl Mode {
    /// Lower-case name used in tables (`lock`, `caller`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Lock => "lock",
            Mode::Caller => "caller",
            Mode::Task => "task",
            Mode::Address => "address",
            Mode::Cgroup => "cgroup",
            Mode::InfoThread => "info_thread",
            Mode::InfoMap => "info_map",
            Mode::LockStat => "lock_stat",
            Mode::Klockstat => "klockstat",
        }
    }
}

/// How the table's time cells are printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// v6.0+: `%.2f unit` (or `%llu ns`).
    Units,
    /// ≤ v5.19: raw nanoseconds under `(ns)` headers.
    RawNs,
    /// `-x SEP`: raw nanoseconds, cells separated by SEP and a space.
    Csv {
        /// The separator given to `-x`.
        sep: String,
    },
    /// `perf lock info`: no values.
    Info,
    /// `/proc/lock_stat`: µs with two decimals (`%lld.%02d` of ns + 5), under the version
    /// line's number (`0.3`: no `-avg` columns, `0.4`: with them).
    LockStat {
        /// The `lock_stat version` number, or the one the columns imply when the line is
        /// missing.
        version: String,
    },
    /// `klockstat`: bcc's raw ns, or libbpf-tools' times with a unit.
    Klockstat,
}

/// A table header: the start of a block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableHeader {
    /// 1-based index of this table in the input (`file#2` names the second).
    pub index: u32,
    /// Line of the header.
    pub line: u64,
    /// Nearest preceding line of prose (e.g. `w/o patch:`), if any since the previous table.
    pub label: Option<String>,
    /// Aggregation mode.
    pub mode: Mode,
    /// Value columns in printed order.
    pub columns: Vec<Column>,
    /// How times are printed.
    pub style: Style,
    /// `-o/--lock-owner`: the task column holds lock owners, not waiters.
    pub owner: bool,
}

/// One frame of a `-v` call stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackFrame {
    /// Address (printed with `0x`).
    pub addr: u64,
    /// `sym+0xoff` as printed.
    pub symbol: String,
}

/// One table row. Fields that the table's mode or columns do not have are `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Table this row belongs to (1-based).
    pub table: u32,
    /// Line of the row.
    pub line: u64,
    /// Mode of the table.
    pub mode: Mode,
    /// Lock name (report `Name`, also comm with `report -t`); `None` when printed blank.
    pub name: Option<String>,
    /// The name was cut by perf to 16 characters plus `...`.
    pub name_truncated: bool,
    /// Contention caller (`sym+0xoff`).
    pub caller: Option<String>,
    /// Lock type (`spinlock`, `rwlock:R`, `mutex`, ...).
    pub lock_type: Option<String>,
    /// Task id (`-t`, `info -t`); -1 for `Unknown` owners.
    pub pid: Option<i64>,
    /// Task name (`-t`, `info -t`).
    pub comm: Option<String>,
    /// Lock address (`-l`, `info -m`).
    pub address: Option<u64>,
    /// Lock symbol (`-l`, `info -m`); `None` when printed blank.
    pub symbol: Option<String>,
    /// Cgroup path (`--lock-cgroup`).
    pub cgroup: Option<String>,
    /// `acquired` count.
    pub acquired: Option<u64>,
    /// `contended` count.
    pub contended: Option<u64>,
    /// `avg wait`.
    pub avg_wait: Option<TimeNs>,
    /// `total wait`.
    pub total_wait: Option<TimeNs>,
    /// `max wait`.
    pub max_wait: Option<TimeNs>,
    /// `min wait`.
    pub min_wait: Option<TimeNs>,
    /// `-v` call stack, innermost first.
    pub stack: Vec<StackFrame>,
    /// Hold times and bounces (`/proc/lock_stat`, klockstat's hold table); `None` for the
    /// other tools, which do not measure them.
    pub hold: Option<Hold>,
    /// `/proc/lock_stat`: the read/write state the row counts (`W` or `R`, from the `-W:` /
    /// `-R:` suffix); `None` for a lock taken one way only.
    pub rw: Option<String>,
    /// `/proc/lock_stat` contention points (who waited) and contending points (who held the
    /// lock meanwhile), in printed order.
    pub points: Vec<CallPoint>,
}

/// Hold-time statistics of a row (`/proc/lock_stat` columns `acq-bounces` .. `holdtime-avg`,
/// `con-bounces`; klockstat's `Avg Hold` table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Hold {
    /// `con-bounces`: contentions that involved cross-CPU data.
    pub con_bounces: Option<u64>,
    /// `acq-bounces`: acquisitions that involved cross-CPU data.
    pub acq_bounces: Option<u64>,
    /// Shortest hold.
    pub min: Option<TimeNs>,
    /// Longest hold.
    pub max: Option<TimeNs>,
    /// Total hold time.
    pub total: Option<TimeNs>,
    /// Average hold (printed by lock_stat 0.4 and klockstat).
    pub avg: Option<TimeNs>,
    /// Acquisitions counted by the hold table (klockstat prints its own `Count`).
    pub count: Option<u64>,
}

/// Which list of `/proc/lock_stat` call sites a point is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// The first block: call sites that had to wait for the lock.
    Contention,
    /// The second block: call sites holding the lock that the waiters contended with.
    Contending,
}

/// One `name count [<ip>] sym+off/len` line under a `/proc/lock_stat` class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallPoint {
    /// Which block.
    pub kind: PointKind,
    /// Contentions counted at this call site.
    pub count: u64,
    /// The `[<ip>]` address (hashed by `%p` on kernels since 4.15).
    pub addr: Option<u64>,
    /// `sym+0xoff/0xlen` as printed.
    pub symbol: String,
    /// Line of the point (its first line when a mail wrapped it).
    pub line: u64,
}

impl Row {
    /// An empty row of `mode` at `line` of table `table` (other formats' readers fill it in).
    pub(crate) fn new(table: u32, line: u64, mode: Mode) -> Self {
        Row {
            table,
            line,
            mode,
            name: None,
            name_truncated: false,
            caller: None,
            lock_type: None,
            pid: None,
            comm: None,
            address: None,
            symbol: None,
            cgroup: None,
            acquired: None,
            contended: None,
            avg_wait: None,
            total_wait: None,
            max_wait: None,
            min_wait: None,
            stack: Vec::new(),
            hold: None,
            rw: None,
            points: Vec::new(),
        }
    }

    fn set_count(&mut self, c: Column, v: u64) {
        match c {
            Column::Acquired => self.acquired = Some(v),
            _ => self.contended = Some(v),
        }
    }

    fn set_time(&mut self, c: Column, v: TimeNs) {
        match c {
            Column::AvgWait => self.avg_wait = Some(v),
            Column::WaitTotal => self.total_wait = Some(v),
            Column::WaitMax => self.max_wait = Some(v),
            _ => self.min_wait = Some(v),
        }
    }
}

/// Which debug footer was printed (FORMATS.md §1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FooterKind {
    /// `histogram of events caused bad sequence` (acquire/acquired/contended/release).
    BadSequence,
    /// `histogram of failure reasons` (task/stack/time/data, BPF, v6.3+).
    FailureReasons,
    /// `# debug: total=..` (CSV mode).
    Csv,
}

/// The `=== output for debug ===` block or the CSV `# debug:` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Footer {
    /// Table the footer follows (`None` when no table preceded it).
    pub table: Option<u32>,
    /// Line of the banner.
    pub line: u64,
    /// Which footer.
    pub kind: FooterKind,
    /// `bad:` count.
    pub bad: u64,
    /// `total:` count.
    pub total: u64,
    /// Histogram entries in printed order.
    pub histogram: Vec<(String, u64)>,
}

/// One item of the stream.
// Rows are nearly every item of a stream: boxing them to shrink the rare header and footer
// would cost an allocation per row.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Item {
    /// A table starts.
    Table(TableHeader),
    /// A row of the current table, with its call stack.
    Row(Row),
    /// A debug footer.
    Footer(Footer),
}

/// A table with its rows, as collected by [`parse_all`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// The header.
    pub header: TableHeader,
    /// Rows in printed order.
    pub rows: Vec<Row>,
    /// Footers printed after this table.
    pub footers: Vec<Footer>,
}

/// Everything in one input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// Tables in input order.
    pub tables: Vec<Table>,
    /// Footers not preceded by any table.
    pub orphan_footers: Vec<Footer>,
    /// Lines skipped in lenient mode.
    pub diagnostics: Diagnostics,
    /// Lines read.
    pub lines: u64,
}

/// Read a whole input into tables (the input is still streamed line by line).
pub fn parse_all<R: BufRead>(inner: R, opts: &Options) -> Result<Parsed, Error> {
    let mut reader = Reader::new(inner, opts);
    let mut out = Parsed::default();
    while let Some(item) = reader.next_item()? {
        match item {
            Item::Table(header) => out.tables.push(Table {
                header,
                rows: Vec::new(),
                footers: Vec::new(),
            }),
            Item::Row(row) => {
                if let Some(t) = out.tables.last_mut() {
                    t.rows.push(row);
                }
            }
            Item::Footer(f) => match out.tables.last_mut() {
                Some(t) if f.table.is_some() => t.footers.push(f),
                _ => out.orphan_footers.push(f),
            },
        }
    }
    out.diagnostics = reader.diagnostics().clone();
    out.lines = reader.line_no();
    Ok(out)
}

/// True if `line` is a `perf lock` table header, CSV header or debug banner.
pub fn sniff(line: &str) -> bool {
    parse_header(line).is_some()
        || is_banner(line)
        || line.trim_start().starts_with("# debug: total=")
}

enum State {
    Outside,
    InTable {
        header: TableHeader,
        rows: u64,
    },
    /// A table interrupted by lines that are neither rows nor a blank line: if a row (or a
    /// `-v` stack line) follows within [`MAX_FOREIGN_LINES`], those lines were foreign text
    /// inside the table (another program's output on the same terminal, a mangled row) and are
    /// malformed; otherwise the table ended there and they were prose.
    Interrupted {
        header: TableHeader,
        rows: u64,
        held: Vec<(u64, String)>,
    },
    InFooter(Footer),
}

/// How many non-row lines may interrupt a table before it is taken as ended. Enough for a
/// short burst of interleaved output; a paragraph of prose after a table is longer, or ends
/// with a blank line or the next table's header.
const MAX_FOREIGN_LINES: usize = 16;

/// Streaming reader of `perf lock` text.
pub struct Reader<R> {
    lines: LineReader<R>,
    lenient: bool,
    state: State,
    pending: Option<Row>,
    /// The last row line was skipped as malformed: the `-v` stack lines after it are its own,
    /// not the previous row's.
    skip_frames: bool,
    out: VecDeque<Item>,
    label: Option<String>,
    tables: u32,
    footers: u64,
    first_line: Option<String>,
    diagnostics: Diagnostics,
    done: bool,
    /// The header of the last table: the `-o -v` owner stack section repeats its layout
    /// without printing it again.
    last_header: Option<TableHeader>,
}

impl<R: BufRead> Reader<R> {
    /// Start reading.
    pub fn new(inner: R, opts: &Options) -> Self {
        Reader {
            lines: LineReader::with_options(inner, opts),
            lenient: opts.lenient,
            state: State::Outside,
            pending: None,
            skip_frames: false,
            out: VecDeque::new(),
            label: None,
            tables: 0,
            footers: 0,
            first_line: None,
            diagnostics: Diagnostics::default(),
            done: false,
            last_header: None,
        }
    }

    /// Lines skipped so far (lenient mode).
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Bytes consumed so far.
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }

    /// Lines read so far.
    pub fn line_no(&self) -> u64 {
        self.lines.line_no()
    }

    /// Next table, row or footer; `Ok(None)` at the end. At the end of an input holding no
    /// table and no footer, returns [`Error::UnknownFormat`].
    pub fn next_item(&mut self) -> Result<Option<Item>, Error> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            let text = match self.lines.next_line()? {
                None => {
                    self.done = true;
                    self.end_of_input()?;
                    self.finish_state();
                    if self.tables == 0 && self.footers == 0 {
                        return Err(Error::UnknownFormat {
                            first_line: self.first_line.take().unwrap_or_default(),
                        });
                    }
                    continue;
                }
                Some(Line::Bad(d)) => {
                    self.bad_line(d)?;
                    continue;
                }
                Some(Line::Text(t)) => t.to_string(),
            };
            let line_no = self.lines.line_no();
            if self.first_line.is_none() && !text.trim().is_empty() {
                self.first_line = Some(cut(text.trim(), 80));
            }
            self.on_line(line_no, &text)?;
        }
    }

    fn bad_line(&mut self, d: Diagnostic) -> Result<(), Error> {
        if matches!(
            self.state,
            State::InTable { .. } | State::Interrupted { .. }
        ) {
            // A skipped line inside a table may be a row: stack lines after it are not the
            // previous row's.
            self.flush_row();
            self.skip_frames = true;
        }
        if self.lenient {
            self.diagnostics.push(d);
            Ok(())
        } else {
            Err(Error::malformed(FORMAT, d))
        }
    }

    fn flush_row(&mut self) {
        if let Some(r) = self.pending.take() {
            self.out.push_back(Item::Row(r));
        }
    }

    /// End whatever block is open (table or footer).
    fn finish_state(&mut self) {
        self.flush_row();
        match std::mem::replace(&mut self.state, State::Outside) {
            State::InFooter(f) => {
                self.footers += 1;
                self.out.push_back(Item::Footer(f));
            }
            State::InTable { .. } | State::Interrupted { .. } | State::Outside => {}
        }
        self.label = None;
    }

    fn on_line(&mut self, line_no: u64, text: &str) -> Result<(), Error> {
        match std::mem::replace(&mut self.state, State::Outside) {
            State::Outside => self.outside(line_no, text),
            State::InTable { header, rows } => self.in_table(line_no, text, header, rows),
            State::Interrupted { header, rows, held } => {
                self.interrupted(line_no, text, header, rows, held)
            }
            State::InFooter(f) => self.in_footer(line_no, text, f),
        }
    }

    fn outside(&mut self, line_no: u64, text: &str) -> Result<(), Error> {
        if let Some((mode, columns, style, owner)) = parse_header(text) {
            self.tables += 1;
            let header = TableHeader {
                index: self.tables,
                line: line_no,
                label: self.label.take(),
                mode,
                columns,
                style,
                owner,
            };
            self.last_header = Some(header.clone());
            self.out.push_back(Item::Table(header.clone()));
            self.state = State::InTable { header, rows: 0 };
            return Ok(());
        }
        if is_owner_banner(text) {
            // perf 6.15+ `-o -v`: the owners' stacks, in the waiters' table layout (builtin-lock.c
            // `print_contention_result`); a table of its own so it is never summed with them
            if let Some(prev) = self.last_header.clone() {
                self.tables += 1;
                let header = TableHeader {
                    index: self.tables,
                    line: line_no,
                    label: Some("owner stack trace".to_string()),
                    owner: true,
                    ..prev
                };
                self.label = None;
                self.out.push_back(Item::Table(header.clone()));
                self.state = State::InTable { header, rows: 0 };
                return Ok(());
            }
        }
        if is_banner(text) {
            self.state = State::InFooter(Footer {
                table: self.last_table(),
                line: line_no,
                kind: FooterKind::BadSequence,
                bad: 0,
                total: 0,
                histogram: Vec::new(),
            });
            return Ok(());
        }
        if let Some(f) = parse_csv_footer(text) {
            self.footers += 1;
            self.out.push_back(Item::Footer(Footer {
                table: self.last_table(),
                line: line_no,
                ..f
            }));
            return Ok(());
        }
        if is_label_candidate(text) {
            let t = text.trim();
            // a command continued with `\` (`perf lock con -abl -J 1ms@x -- \` then `sh -c …`)
            // is named by both lines: the second alone is the same for every run
            let joined = match self.label.as_deref().and_then(|l| l.strip_suffix('\\')) {
                Some(head) => format!("{} {t}", head.trim_end()),
                None => t.to_string(),
            };
            self.label = Some(cut(&joined, 120));
        }
        Ok(())
    }

    fn last_table(&self) -> Option<u32> {
        (self.tables > 0).then_some(self.tables)
    }

    fn in_table(
        &mut self,
        line_no: u64,
        text: &str,
        header: TableHeader,
        rows: u64,
    ) -> Result<(), Error> {
        if text.trim().is_empty() {
            if rows == 0 {
                // The blank line perf prints between header and rows.
                self.state = State::InTable { header, rows };
            } else {
                self.finish_state();
            }
            return Ok(());
        }
        if let Some(frame) = stack_frame(&header, text) {
            if self.skip_frames {
                // A frame of a row that was skipped as malformed.
                self.state = State::InTable { header, rows };
                return Ok(());
            }
            if let Some(row) = self.pending.as_mut() {
                // A call chain never returns to the instruction it started at (lock functions
                // do not recurse): the innermost frame again means another stack began, whose
                // row line is missing. Its frames must not lengthen this row's stack.
                let again = row
                    .stack
                    .first()
                    .is_some_and(|f| f.addr != 0 && f.addr == frame.addr);
                if !again {
                    row.stack.push(frame);
                    self.state = State::InTable { header, rows };
                    return Ok(());
                }
                self.state = State::InTable { header, rows };
                return self.bad_line(Diagnostic {
                    location: Location {
                        line: line_no,
                        col: 1,
                    },
                    kind: LineError::expected(
                        "a table row before this -v call stack (its innermost frame repeats the previous stack's)",
                        text.trim(),
                    ),
                    line_text: cut(text, 120),
                });
            }
        }
        if text.trim() == "..." && rows > 0 {
            // a mail's elision: the poster cut the table here (perf never prints the line)
            self.diagnostics.notes.push(format!(
                "line {line_no}: the table of line {} was cut by its poster (`...`)",
                header.line
            ));
            self.finish_state();
            return Ok(());
        }
        match parse_row(&header, line_no, text) {
            Ok(row) => {
                self.flush_row();
                self.skip_frames = false;
                self.pending = Some(row);
                self.state = State::InTable {
                    header,
                    rows: rows + 1,
                };
                Ok(())
            }
            Err(kind) if looks_like_row(&header, text) => {
                let d = Diagnostic {
                    location: Location {
                        line: line_no,
                        col: 1,
                    },
                    kind,
                    line_text: cut(text, 120),
                };
                self.state = State::InTable { header, rows };
                self.bad_line(d)
            }
            Err(_) if starts_block(text) => {
                // The next table or a footer right after this one.
                self.finish_state();
                self.outside(line_no, text)
            }
            Err(_) => {
                // Prose after a table with no blank line in between, or foreign text inside
                // it: the lines after it tell which.
                self.state = State::Interrupted {
                    header,
                    rows,
                    held: vec![(line_no, text.to_string())],
                };
                Ok(())
            }
        }
    }

    fn interrupted(
        &mut self,
        line_no: u64,
        text: &str,
        header: TableHeader,
        rows: u64,
        mut held: Vec<(u64, String)>,
    ) -> Result<(), Error> {
        // A stack line continues the table even with no row before it: its row was damaged.
        let resumes =
            stack_frame(&header, text).is_some() || parse_row(&header, line_no, text).is_ok();
        if resumes {
            // The held lines were inside the table: malformed rows.
            self.state = State::InTable { header, rows };
            self.held_are_malformed(held)?;
            return self.on_line(line_no, text);
        }
        if text.trim().is_empty() && rows == 0 {
            // Still in the blank lines perf prints between header and rows.
            self.state = State::Interrupted { header, rows, held };
            return Ok(());
        }
        if !text.trim().is_empty() && !starts_block(text) && held.len() < MAX_FOREIGN_LINES {
            held.push((line_no, text.to_string()));
            self.state = State::Interrupted { header, rows, held };
            return Ok(());
        }
        // The table ended at the first held line: they were prose (labels for what follows).
        self.finish_state();
        for (n, t) in held {
            self.outside(n, &t)?;
        }
        self.outside(line_no, text)
    }

    /// Report lines held after an interrupted table as malformed rows.
    fn held_are_malformed(&mut self, held: Vec<(u64, String)>) -> Result<(), Error> {
        for (n, t) in held {
            self.bad_line(Diagnostic {
                location: Location { line: n, col: 1 },
                kind: LineError::expected(
                    "a table row, a -v stack line or a blank line ending the table",
                    &t,
                ),
                line_text: cut(&t, 120),
            })?;
        }
        Ok(())
    }

    /// The input ended inside an interrupted table: perf ends its output after the last row,
    /// so lines after it with no blank line in between are a row cut short (a truncated
    /// capture: `     106` of `     10693: :10693`), not prose.
    fn end_of_input(&mut self) -> Result<(), Error> {
        if let State::Interrupted { held, .. } = &mut self.state {
            let held = std::mem::take(held);
            self.held_are_malformed(held)?;
        }
        Ok(())
    }

    fn in_footer(&mut self, line_no: u64, text: &str, mut f: Footer) -> Result<(), Error> {
        let t = text.trim();
        if t.is_empty() {
            if f.histogram.is_empty() {
                self.state = State::InFooter(f);
            } else {
                self.state = State::InFooter(f);
                self.finish_state();
            }
            return Ok(());
        }
        if let Ok((_, (bad, total))) = bad_total(t) {
            f.bad = bad;
            f.total = total;
        } else if t.starts_with("bad rate:") {
        } else if t.starts_with("histogram of events caused bad sequence") {
            f.kind = FooterKind::BadSequence;
        } else if t.starts_with("histogram of failure reasons") {
            f.kind = FooterKind::FailureReasons;
        } else if let Ok((_, (name, n))) = hist_entry(t) {
            f.histogram.push((name.to_string(), n));
        } else {
            self.state = State::InFooter(f);
            self.finish_state();
            return self.outside(line_no, text);
        }
        self.state = State::InFooter(f);
        Ok(())
    }
}

/// A line that begins a new block: a table header, a debug banner or a CSV debug footer.
fn starts_block(line: &str) -> bool {
    parse_header(line).is_some()
        || is_banner(line)
        || is_owner_banner(line)
        || parse_csv_footer(line).is_some()
}

/// `=== owner stack trace ===` (or `# owner stack trace:` with `-x`), printed by perf 6.15+
/// before the lock owners' stacks of `perf lock contention -o -v`.
fn is_owner_banner(line: &str) -> bool {
    let t = line.trim();
    t == "=== owner stack trace ===" || t == "# owner stack trace:"
}

fn is_banner(line: &str) -> bool {
    let t = line.trim();
    t == "=== output for debug ===" || t == "=== output for debug==="
}

/// Lines that name what follows (`w/o patch:`, `Before:`, a `perf lock` command line) and not
/// the boilerplate between a label and its table: `time` output, a bare "perf lock report"
/// title, a shell command that is not `perf`.
fn is_label_candidate(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() || t == "..." {
        return false;
    }
    let lower = t.to_ascii_lowercase();
    let lower = lower.trim_end_matches(':').trim();
    if matches!(
        lower,
        "perf lock report" | "perf lock contention" | "perf lock con" | "perf lock info" | "time"
    ) {
        return false;
    }
    let mut words = t.split_whitespace();
    if let (Some(w), Some(v), None) = (words.next(), words.next(), words.next()) {
        if matches!(w, "real" | "user" | "sys") && v.ends_with('s') && v.contains('m') {
            return false;
        }
    }
    if t.starts_with("***") {
        return false;
    }
    let is_prompt =
        t.starts_with('$') || t.starts_with("# ") || t.contains(":~#") || t.contains(":~$");
    if is_prompt && !t.contains("perf") {
        return false;
    }
    true
}

/// Header recognition for all layouts. Returns mode, columns, style and the owner flag.
fn parse_header(line: &str) -> Option<(Mode, Vec<Column>, Style, bool)> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix("# output:") {
        return parse_csv_header(rest.trim());
    }
    if t == "Thread ID: comm" {
        return Some((Mode::InfoThread, Vec::new(), Style::Info, false));
    }
    if t == "Address of instance: name of class" {
        return Some((Mode::InfoMap, Vec::new(), Style::Info, false));
    }
    let (is_report, rest) = match t.strip_prefix("Name") {
        Some(r) if r.starts_with(char::is_whitespace) => (true, r.trim_start()),
        _ => (false, t),
    };
    let (columns, raw_ns, tail) = header_columns(rest);
    if columns.is_empty() {
        return None;
    }
    let style = if raw_ns { Style::RawNs } else { Style::Units };
    if is_report {
        return tail
            .is_empty()
            .then_some((Mode::Lock, columns, style, false));
    }
    let tail: Vec<&str> = tail.split_whitespace().collect();
    let (mode, owner) = match tail.as_slice() {
        ["type", "caller"] => (Mode::Caller, false),
        ["pid", "comm"] => (Mode::Task, false),
        ["pid", "owner"] => (Mode::Task, true),
        ["address", "symbol"] => (Mode::Address, false),
        ["cgroup"] => (Mode::Cgroup, false),
        _ => return None,
    };
    Some((mode, columns, style, owner))
}

/// Match the known column headers at the start of `s`; return them, whether they carried
/// `(ns)`, and the remaining text.
fn header_columns(mut s: &str) -> (Vec<Column>, bool, &str) {
    let mut cols = Vec::new();
    let mut raw_ns = false;
    'outer: loop {
        s = s.trim_start();
        for c in Column::ALL {
            if let Some(rest) = s.strip_prefix(c.header()) {
                if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
                    continue;
                }
                let rest = rest.trim_start();
                let rest = match rest.strip_prefix("(ns)") {
                    Some(r) => {
                        raw_ns = true;
                        r
                    }
                    None => rest,
                };
                cols.push(c);
                s = rest;
                continue 'outer;
            }
        }
        break;
    }
    (cols, raw_ns, s.trim())
}

fn parse_csv_header(s: &str) -> Option<(Mode, Vec<Column>, Style, bool)> {
    // `"%s%s "` per key: find the separator after the first header name.
    let first = Column::ALL.iter().find(|c| s.starts_with(c.header()))?;
    let after = &s[first.header().len()..];
    let sep_end = after.find(' ')?;
    let sep = &after[..sep_end];
    if sep.is_empty() {
        return None;
    }
    let fields: Vec<&str> = s.split(sep).map(str::trim).collect();
    let mut cols = Vec::new();
    let mut i = 0;
    while let Some(c) = fields
        .get(i)
        .and_then(|f| Column::ALL.iter().find(|c| c.header() == *f))
    {
        cols.push(*c);
        i += 1;
    }
    let tail = fields.get(i..).unwrap_or_default();
    let (mode, owner) = match tail {
        ["type", "caller"] | ["type", "caller", "stacktrace"] => (Mode::Caller, false),
        ["pid", "comm"] => (Mode::Task, false),
        ["pid", "owner"] => (Mode::Task, true),
        ["address", "symbol", "type"] => (Mode::Address, false),
        ["cgroup"] => (Mode::Cgroup, false),
        _ => return None,
    };
    Some((
        mode,
        cols,
        Style::Csv {
            sep: sep.to_string(),
        },
        owner,
    ))
}

/// A whitespace-separated token with its byte span in the line.
struct Tok<'a> {
    start: usize,
    end: usize,
    s: &'a str,
}

fn tokens(line: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, ch) in line.char_indices() {
        if ch.is_whitespace() {
            if let Some(s) = start.take() {
                out.push(Tok {
                    start: s,
                    end: i,
                    s: &line[s..i],
                });
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(Tok {
            start: s,
            end: line.len(),
            s: &line[s..],
        });
    }
    out
}

fn is_uint(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn parse_count(s: &str) -> Result<u64, LineError> {
    if !is_uint(s) {
        return Err(LineError::expected("a count", s));
    }
    s.parse::<u64>()
        .map_err(|_| LineError::Overflow { got: s.to_string() })
}

fn parse_raw_ns(s: &str) -> Result<TimeNs, LineError> {
    parse_count(s).map(TimeNs::exact)
}

fn time_with_unit(num: &str, unit: &str) -> Result<TimeNs, LineError> {
    let base =
        unit_ns(unit).ok_or_else(|| LineError::expected("a time unit (ns us ms s m h)", unit))?;
    scaled_decimal(num, base).ok_or_else(|| LineError::expected("a time value", num))
}

/// Real rows this handles (unit era, raw-ns era, blank and cut names):
/// ```text
///                        21414857   21414857     30.07 us     10.73 m     101.94 us       880 ns
///    pcpu_alloc_mutex   10959650   10959650      7.10 us      1.30 m       3.76 ms       313 ns
///  &sb->s_type->i_l...      10301          1             662             662             662             662
/// ```
fn parse_row(header: &TableHeader, line_no: u64, text: &str) -> Result<Row, LineError> {
    let mut row = Row::new(header.index, line_no, header.mode);
    match &header.style {
        Style::Csv { sep } => {
            parse_csv_row(header, text, sep, &mut row)?;
            return Ok(row);
        }
        Style::Info => {
            parse_info_row(header.mode, text, &mut row)?;
            return Ok(row);
        }
        Style::Units | Style::RawNs | Style::LockStat { .. } | Style::Klockstat => {}
    }
    let toks = tokens(text);
    let units = header.style == Style::Units;
    if header.mode == Mode::Lock {
        // Values are the last cells; the name is whatever precedes them.
        let mut i = toks.len();
        for &c in header.columns.iter().rev() {
            if c.is_time() && units {
                if i < 2 {
                    return Err(LineError::ColumnCount {
                        expected: header.columns.len(),
                        got: count_values(&toks),
                        header_line: header.line,
                    });
                }
                let v = time_with_unit(toks[i - 2].s, toks[i - 1].s)?;
                row.set_time(c, v);
                i -= 2;
            } else {
                let tok =
                    i.checked_sub(1)
                        .and_then(|j| toks.get(j))
                        .ok_or(LineError::ColumnCount {
                            expected: header.columns.len(),
                            got: count_values(&toks),
                            header_line: header.line,
                        })?;
                if c.is_time() {
                    row.set_time(c, parse_raw_ns(tok.s)?);
                } else {
                    row.set_count(c, parse_count(tok.s)?);
                }
                i -= 1;
            }
        }
        let name_end = toks.get(i).map_or(0, |t| t.start);
        let name = text[..name_end].trim();
        if !name.is_empty() {
            row.name_truncated = name.ends_with("...") && name.chars().count() == 19;
            row.name = Some(name.to_string());
        }
        return Ok(row);
    }
    let mut i = 0;
    for &c in &header.columns {
        let tok = toks.get(i).ok_or(LineError::ColumnCount {
            expected: header.columns.len(),
            got: i,
            header_line: header.line,
        })?;
        if c.is_time() && units {
            let unit = toks
                .get(i + 1)
                .ok_or_else(|| LineError::expected("a time unit (ns us ms s m h)", ""))?;
            row.set_time(c, time_with_unit(tok.s, unit.s)?);
            i += 2;
        } else if c.is_time() {
            row.set_time(c, parse_raw_ns(tok.s)?);
            i += 1;
        } else {
            row.set_count(c, parse_count(tok.s)?);
            i += 1;
        }
    }
    let rest_at = |j: usize| toks.get(j).map_or("", |t| text[t.start..].trim_end());
    match header.mode {
        Mode::Caller => {
            let ty = toks
                .get(i)
                .ok_or_else(|| LineError::expected("a lock type and caller", ""))?;
            row.lock_type = Some(ty.s.to_string());
            let caller = rest_at(i + 1);
            if caller.is_empty() {
                return Err(LineError::expected("a caller after the lock type", ""));
            }
            row.caller = Some(caller.to_string());
        }
        Mode::Task => {
            let pid = toks
                .get(i)
                .ok_or_else(|| LineError::expected("a pid", ""))?;
            row.pid = Some(
                pid.s
                    .parse::<i64>()
                    .map_err(|_| LineError::expected("a pid", pid.s))?,
            );
            let comm = rest_at(i + 1);
            row.comm = (!comm.is_empty()).then(|| comm.to_string());
        }
        Mode::Address => {
            let addr = toks
                .get(i)
                .ok_or_else(|| LineError::expected("a lock address", ""))?;
            row.address = Some(parse_hex(addr.s)?);
            let rest = toks.get(i).map_or("", |t| &text[t.end..]);
            let (sym, ty) = split_symbol_type(rest)?;
            row.symbol = sym;
            row.lock_type = Some(ty);
        }
        Mode::Cgroup => {
            let cg = rest_at(i);
            if cg.is_empty() {
                return Err(LineError::expected("a cgroup path", ""));
            }
            row.cgroup = Some(cg.to_string());
        }
        // the other formats' modes never reach this parser
        Mode::Lock | Mode::InfoThread | Mode::InfoMap | Mode::LockStat | Mode::Klockstat => {}
    }
    Ok(row)
}

fn count_values(toks: &[Tok<'_>]) -> usize {
    toks.iter()
        .filter(|t| t.s.bytes().next().is_some_and(|b| b.is_ascii_digit()))
        .count()
}

/// `-l` tail: `"   mmap_lock (rwsem)"` or `"    (mutex)"` (empty symbol).
fn split_symbol_type(rest: &str) -> Result<(Option<String>, String), LineError> {
    let r = rest.trim();
    let open = r
        .rfind('(')
        .filter(|_| r.ends_with(')'))
        .ok_or_else(|| LineError::expected("\"symbol (type)\" after the address", r))?;
    let ty = r[open + 1..r.len() - 1].trim().to_string();
    let sym = r[..open].trim();
    Ok(((!sym.is_empty()).then(|| sym.to_string()), ty))
}

fn parse_hex(s: &str) -> Result<u64, LineError> {
    let h = s.strip_prefix("0x").unwrap_or(s);
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(LineError::expected("a hexadecimal address", s));
    }
    u64::from_str_radix(h, 16).map_err(|_| LineError::Overflow { got: s.to_string() })
}

/// CSV row: `19, 194232, 21415, 10222, spinlock, process_one_work+0x1f0` (FORMATS.md §1.5).
fn parse_csv_row(
    header: &TableHeader,
    text: &str,
    sep: &str,
    row: &mut Row,
) -> Result<(), LineError> {
    let fields: Vec<&str> = text.split(sep).map(str::trim).collect();
    let tail_len = match header.mode {
        Mode::Caller => 2,
        Mode::Task => 2,
        Mode::Address => 3,
        _ => 1,
    };
    let need = header.columns.len() + tail_len;
    if fields.len() < need {
        return Err(LineError::ColumnCount {
            expected: need,
            got: fields.len(),
            header_line: header.line,
        });
    }
    for (c, f) in header.columns.iter().zip(&fields) {
        if c.is_time() {
            row.set_time(*c, parse_raw_ns(f)?);
        } else {
            row.set_count(*c, parse_count(f)?);
        }
    }
    let tail = &fields[header.columns.len()..];
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    match header.mode {
        Mode::Caller => {
            row.lock_type = opt(tail[0]);
            row.caller = opt(tail[1]);
            if tail.len() > 2 {
                let stack = tail[2..].join(sep);
                for part in stack.split(':') {
                    let p = part.trim();
                    if p.is_empty() {
                        continue;
                    }
                    let (addr, sym) = p.split_once(' ').unwrap_or((p, ""));
                    row.stack.push(StackFrame {
                        addr: parse_hex(addr)?,
                        symbol: sym.trim().to_string(),
                    });
                }
            }
        }
        Mode::Task => {
            row.pid = Some(
                tail[0]
                    .parse::<i64>()
                    .map_err(|_| LineError::expected("a pid", tail[0]))?,
            );
            // A comm may contain the separator: keep everything after the pid.
            row.comm = opt(&tail[1..].join(sep));
        }
        Mode::Address => {
            row.address = Some(parse_hex(tail[0])?);
            row.symbol = opt(tail[1]);
            row.lock_type = opt(tail[2]);
        }
        _ => row.cgroup = opt(&tail.join(sep)),
    }
    Ok(())
}

/// `perf lock info` rows: `      1234: bash` and ` 0xffffa0d940ac5310: &dentry->d_lockref.lock`.
fn parse_info_row(mode: Mode, text: &str, row: &mut Row) -> Result<(), LineError> {
    let t = text.trim_start();
    let (key, value) = t
        .split_once(": ")
        .or_else(|| t.strip_suffix(':').map(|k| (k, "")))
        .ok_or_else(|| LineError::expected("\"<key>: <value>\"", t))?;
    let value = value.trim_end();
    if mode == Mode::InfoThread {
        row.pid = Some(
            key.parse::<i64>()
                .map_err(|_| LineError::expected("a thread id", key))?,
        );
        row.comm = (!value.is_empty()).then(|| value.to_string());
    } else {
        row.address = Some(parse_hex(key)?);
        row.symbol = (!value.is_empty()).then(|| value.to_string());
    }
    Ok(())
}

/// A row that failed to parse is an error (not the end of the table) when it still looks like
/// a row: a table cut mid-way must not silently lose its last line.
fn looks_like_row(header: &TableHeader, text: &str) -> bool {
    let toks = tokens(text);
    match (&header.style, header.mode) {
        (Style::Csv { sep }, _) => {
            text.contains(sep.as_str())
                && toks
                    .first()
                    .is_some_and(|t| t.s.bytes().next().is_some_and(|b| b.is_ascii_digit()))
        }
        (Style::Info, Mode::InfoThread) => toks
            .first()
            .is_some_and(|t| t.s.ends_with(':') && t.s.len() > 1),
        (Style::Info, _) => toks.first().is_some_and(|t| t.s.starts_with("0x")),
        (_, Mode::Lock) => count_values(&toks) >= 2,
        _ => toks.first().is_some_and(|t| is_uint(t.s)),
    }
}

/// A `-v` stack line, in the tables that have them (`perf lock contention` without `-x`):
/// `perf lock info -m` rows (`0x…: name`) and their damaged forms are never frames.
fn stack_frame(header: &TableHeader, text: &str) -> Option<StackFrame> {
    let has_stacks = matches!(header.style, Style::Units | Style::RawNs)
        && matches!(
            header.mode,
            Mode::Caller | Mode::Task | Mode::Address | Mode::Cgroup
        );
    has_stacks.then(|| parse_stack_frame(text)).flatten()
}

/// `-v` stack line: `"\t\t\t%#lx  %s"`, e.g. `  0xffffffff9d0407c0  _raw_spin_lock+0x30`.
/// The symbol is blank for an address perf could not resolve (a user-space return address:
/// `\t\t\t0x558de20376ab  `), so the address alone, followed by nothing but blanks, is a frame
/// with an empty symbol. `perf lock info -m` lines (`0x…: name`) are not frames.
fn parse_stack_frame(text: &str) -> Option<StackFrame> {
    fn frame(i: &str) -> IResult<&str, (u64, &str)> {
        let (i, _) = space1(i)?;
        let (i, addr) = map_res(
            recognize((tag("0x"), take_while1(|c: char| c.is_ascii_hexdigit()))),
            |s: &str| u64::from_str_radix(&s[2..], 16),
        )
        .parse(i)?;
        // Blanks then the symbol, or the end of the line: never `0x…:` of `info -m`.
        let (i, _) = alt((space1, eof)).parse(i)?;
        Ok(("", (addr, i.trim_end())))
    }
    let (_, (addr, symbol)) = frame(text).ok()?;
    Some(StackFrame {
        addr,
        symbol: symbol.to_string(),
    })
}

fn number(i: &str) -> IResult<&str, u64> {
    map_res(digit1, str::parse::<u64>).parse(i)
}

/// `bad: 43, total: 14903`
fn bad_total(i: &str) -> IResult<&str, (u64, u64)> {
    let (i, (_, bad, _, total)) =
        all_consuming((tag("bad: "), number, tag(", total: "), number)).parse(i)?;
    Ok((i, (bad, total)))
}

/// `  contended: 43` (histogram entries, right-aligned in 10).
fn hist_entry(i: &str) -> IResult<&str, (&str, u64)> {
    let (i, (_, name, _, _, n, _)) = all_consuming((
        space0,
        take_while1(|c: char| c.is_ascii_alphabetic() || c == '_'),
        char(':'),
        space1,
        number,
        space0,
    ))
    .parse(i)?;
    Ok((i, (name, n)))
}

/// CSV footer: `# debug: total=14, bad=0, bad_task=0, ...`.
fn parse_csv_footer(text: &str) -> Option<Footer> {
    let rest = text.trim().strip_prefix("# debug:")?;
    let mut f = Footer {
        table: None,
        line: 0,
        kind: FooterKind::Csv,
        bad: 0,
        total: 0,
        histogram: Vec::new(),
    };
    for kv in rest.split(|c: char| c == ',' || c.is_whitespace()) {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let (_, n) = opt(number).parse(v).ok()?;
        let n = n?;
        match k {
            "total" => f.total = n,
            "bad" => f.bad = n,
            other => f
                .histogram
                .push((other.trim_start_matches("bad_").to_string(), n)),
        }
    }
    Some(f)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        parse_all(text.as_bytes(), &Options::default()).unwrap()
    }

    fn us(ns: u64, err: u64) -> Option<TimeNs> {
        Some(TimeNs { ns, err_ns: err })
    }

    #[test]
    fn report_units_and_blank_name() {
        let p = parse(
            "                Name   acquired  contended     avg wait   total wait     max wait     min wait \n\n\
             \x20                      21414857   21414857     30.07 us     10.73 m     101.94 us       880 ns \n\
             \x20          rcu_state         12         12      1.98 us     23.78 us      2.62 us      1.47 us \n",
        );
        let t = &p.tables[0];
        assert_eq!(t.header.mode, Mode::Lock);
        assert_eq!(t.header.columns.len(), 6);
        let r = &t.rows[0];
        assert_eq!(r.name, None);
        assert_eq!(r.acquired, Some(21414857));
        assert_eq!(r.contended, Some(21414857));
        assert_eq!(r.avg_wait, us(30_070, 5));
        assert_eq!(r.total_wait, us(643_800_000_000, 300_000_000));
        assert_eq!(r.max_wait, us(101_940, 5));
        assert_eq!(r.min_wait, us(880, 0));
        assert_eq!(t.rows[1].name.as_deref(), Some("rcu_state"));
    }

    #[test]
    fn report_raw_ns_era_and_truncated_name() {
        let p = parse(
            "                Name   acquired  contended   avg wait (ns) total wait (ns)   max wait (ns)   min wait (ns) \n\n\
             \x20&sb->s_type->i_l...      10301          1             662             662             662             662 \n",
        );
        let t = &p.tables[0];
        assert_eq!(t.header.style, Style::RawNs);
        let r = &t.rows[0];
        assert_eq!(r.name.as_deref(), Some("&sb->s_type->i_l..."));
        assert!(r.name_truncated);
        assert_eq!(r.total_wait, Some(TimeNs::exact(662)));
    }

    #[test]
    fn report_custom_fields_order() {
        let p = parse(
            "                Name   acquired  contended     avg wait   total wait \n\n\
             \x20  cgroup_rstat_lock      90132      90132     26.41 us      2.38 s  \n",
        );
        let r = &p.tables[0].rows[0];
        assert_eq!(r.total_wait, us(2_380_000_000, 5_000_000));
        assert_eq!(r.max_wait, None);
    }

    #[test]
    fn report_value_overflowing_its_column() {
        let p = parse(
            "                Name   acquired  contended     avg wait   total wait     max wait     min wait\n\n\
             \x20                      15488031   15488031      5.16 us      1.33 m  5124095.50 h        316 ns\n",
        );
        assert_eq!(
            p.tables[0].rows[0].max_wait.unwrap().ns,
            18_446_743_800_000_000_000
        );
    }

    #[test]
    fn a_verbose_stack_without_its_row_is_a_malformed_line() {
        // the row line of the second stack is missing: its frames are not the first row's
        let text = " contended   total wait     max wait     avg wait         type   caller\n\n\
         1     26.10 us     26.10 us     26.10 us     spinlock   raw_spin_rq_lock_nested+0x1b\n\
         \t\t\t0xffffffff9d0407c0  _raw_spin_lock+0x30\n\
         \t\t\t0xffffffff9c6d9cfb  raw_spin_rq_lock_nested+0x1b\n\
         \t\t\t0xffffffff9d0407c0  _raw_spin_lock+0x30\n\
         \t\t\t0xffffffff9c7657c5  tick_do_update_jiffies64+0x25\n";
        let err = parse_all(text.as_bytes(), &Options::default()).err();
        assert!(matches!(err, Some(Error::Malformed { location, .. }) if location.line == 6));
        let o = Options {
            lenient: true,
            ..Default::default()
        };
        let p = parse_all(text.as_bytes(), &o).unwrap();
        assert_eq!(p.tables[0].rows[0].stack.len(), 2);
        assert_eq!(p.diagnostics.skipped, 1);
    }

    #[test]
    fn contention_caller_with_verbose_stack() {
        let p = parse(
            "Looking at the vmlinux_path (8 entries long)\n\
             \x20contended   total wait     max wait     avg wait         type   caller\n\n\
             \x20        1     26.10 us     26.10 us     26.10 us     spinlock   raw_spin_rq_lock_nested+0x1b\n\
             \t\t\t0xffffffff9d0407c0  _raw_spin_lock+0x30\n\
             \t\t\t0xffffffff9c6d9cfb  raw_spin_rq_lock_nested+0x1b\n\
             \x20        1     22.37 us     22.37 us     22.37 us     rwlock:R   ep_poll_callback+0x2d\n",
        );
        let t = &p.tables[0];
        assert_eq!(t.header.mode, Mode::Caller);
        assert_eq!(
            t.header.label.as_deref(),
            Some("Looking at the vmlinux_path (8 entries long)")
        );
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].stack.len(), 2);
        assert_eq!(t.rows[0].stack[0].addr, 0xffffffff9d0407c0);
        assert_eq!(t.rows[0].stack[0].symbol, "_raw_spin_lock+0x30");
        assert_eq!(t.rows[1].lock_type.as_deref(), Some("rwlock:R"));
        assert_eq!(t.rows[1].caller.as_deref(), Some("ep_poll_callback+0x2d"));
        assert!(t.rows[1].stack.is_empty());
    }

    #[test]
    fn contention_task_mode_unknown_owner() {
        let p = parse(
            " contended   total wait     max wait     avg wait          pid   comm\n\n\
             \x20      146     63.42 us     12.50 us       434 ns           -1   Unknown\n\
             \x20        1      2.24 us      2.24 us      2.24 us         5516   pipewire-pulse\n",
        );
        let r = &p.tables[0].rows;
        assert_eq!(r[0].pid, Some(-1));
        assert_eq!(r[0].avg_wait, us(434, 0));
        assert_eq!(r[1].comm.as_deref(), Some("pipewire-pulse"));
    }

    #[test]
    fn contention_lock_addr_blank_symbol() {
        let p = parse(
            " contended   total wait     max wait     avg wait            address   symbol\n\n\
             \x20       15      2.57 ms    187.89 us    171.09 us   ffffa64fdb3f11b8    (mutex)\n\
             \x20        9     66.01 us     10.37 us      7.33 us   ffffa105becb45c0   mmap_lock (rwsem)\n",
        );
        let r = &p.tables[0].rows;
        assert_eq!(r[0].address, Some(0xffffa64fdb3f11b8));
        assert_eq!(r[0].symbol, None);
        assert_eq!(r[0].lock_type.as_deref(), Some("mutex"));
        assert_eq!(r[1].symbol.as_deref(), Some("mmap_lock"));
    }

    #[test]
    fn contention_cgroup_mode() {
        let p = parse(
            "   contended   total wait     max wait     avg wait   cgroup\n\n\
             \x20        214      9.24 ms    338.39 us     43.18 us   /\n",
        );
        assert_eq!(p.tables[0].rows[0].cgroup.as_deref(), Some("/"));
    }

    #[test]
    fn contention_csv_with_header() {
        let p = parse(
            "# output: contended, total wait, max wait, avg wait, type, caller\n\
             19, 194232, 21415, 10222, spinlock, process_one_work+0x1f0\n",
        );
        let t = &p.tables[0];
        assert_eq!(t.header.style, Style::Csv { sep: ",".into() });
        let r = &t.rows[0];
        assert_eq!(r.contended, Some(19));
        assert_eq!(r.total_wait, Some(TimeNs::exact(194232)));
        assert_eq!(r.avg_wait, Some(TimeNs::exact(10222)));
        assert_eq!(r.caller.as_deref(), Some("process_one_work+0x1f0"));
    }

    #[test]
    fn debug_footer_both_spellings() {
        for banner in ["=== output for debug===", "=== output for debug ==="] {
            let p = parse(&format!(
                "{banner}\n\nbad: 43, total: 14903\nbad rate: 0.29 %\nhistogram of events caused bad sequence\n    acquire: 0\n   acquired: 0\n  contended: 43\n    release: 0\n"
            ));
            let f = &p.orphan_footers[0];
            assert_eq!((f.bad, f.total), (43, 14903));
            assert_eq!(f.histogram[2], ("contended".to_string(), 43));
        }
    }

    #[test]
    fn info_threads_and_map() {
        let p = parse(" Thread ID: comm\n      1234: bash\n\nAddress of instance: name of class\n 0xffffa0d947a4f278: (null)\n");
        assert_eq!(p.tables[0].rows[0].pid, Some(1234));
        assert_eq!(p.tables[0].rows[0].comm.as_deref(), Some("bash"));
        assert_eq!(p.tables[1].rows[0].address, Some(0xffffa0d947a4f278));
        assert_eq!(p.tables[1].rows[0].symbol.as_deref(), Some("(null)"));
    }

    #[test]
    fn mail_labels_skip_time_output_and_titles() {
        let p = parse(
            "w/o patch:\n\n$ time ./a.out \n\nreal\t0m17.760s\nuser\t0m8.207s\nsys\t5m46.067s\n\nperf lock report:\n\
             \x20               Name   acquired  contended     avg wait   total wait     max wait     min wait \n\n\
             \x20                            2          2      2.42 us      4.83 us      2.48 us      2.36 us \n\n\
             w/ patch:\n\nperf lock report\n\n\
             \x20               Name   acquired  contended     avg wait   total wait     max wait     min wait \n\n\
             \x20      tasklist_lock          1          1      2.13 us      2.13 us      2.13 us      2.13 us \n",
        );
        assert_eq!(p.tables.len(), 2);
        assert_eq!(p.tables[0].header.label.as_deref(), Some("w/o patch:"));
        assert_eq!(p.tables[1].header.label.as_deref(), Some("w/ patch:"));
    }

    #[test]
    fn truncated_row_is_an_error_naming_the_line() {
        let text = " contended   total wait     max wait     avg wait         type   caller\n\n\
             \x20        6      6.03 s       6.03 s       1.00 s      spinlock   rcu_core+0xec\n\
             \x20       19    811.74 ms    621.76";
        let err = parse_all(text.as_bytes(), &Options::default()).unwrap_err();
        assert_eq!(err.location().unwrap().line, 4);
        let lenient = Options {
            lenient: true,
            ..Options::default()
        };
        let p = parse_all(text.as_bytes(), &lenient).unwrap();
        assert_eq!(p.tables[0].rows.len(), 1);
        assert_eq!(p.diagnostics.skipped, 1);
    }

    #[test]
    fn unknown_format_when_no_table() {
        let err = parse_all("hello\nworld\n".as_bytes(), &Options::default()).unwrap_err();
        assert!(matches!(err, Error::UnknownFormat { .. }), "{err}");
        assert!(err.to_string().contains("hello"));
    }
}
