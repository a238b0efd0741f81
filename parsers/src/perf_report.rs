//! `perf report --stdio` text (FORMATS.md §4): histogram entries with their call graphs.
//!
//! ```text
//! # Samples: 337  of event 'cpu-clock'
//! # Children      Self  Command  Shared Object         Symbol
//! # ........  ........  .......  ....................  ..................................
//! #
//!     62.02%    27.00%  dd       [kernel.kallsyms]     [k] do_syscall_64
//!             |
//!             |--35.01%--do_syscall_64
//!             |          |
//!             |           --11.28%--ksys_write
//!             |
//!              --13.65%--read
//!                        entry_SYSCALL_64_after_hwframe
//! ```
//!
//! [`Reader::next_entry`] yields one [`Entry`] per histogram line, with the call graph below it
//! as a flat list of [`GraphNode`]s that point to their parent by index. One entry and one line
//! are held at a time.
//!
//! ```
//! use lockcast_parsers::perf_report::{Options, Reader};
//! let text = "# Overhead  Command  Shared Object      Symbol\n\
//!             \x23 ........  .......  .................  ......\n\
//!             \x23\n\
//!             \x20   27.00%  dd       [kernel.kallsyms]  [k] do_syscall_64\n\
//!             \x20           |\n\
//!             \x20           ---do_syscall_64\n\
//!             \x20              entry_SYSCALL_64_after_hwframe\n\n";
//! let mut r = Reader::new(text.as_bytes(), &Options::default());
//! let e = r.next_entry().unwrap().unwrap();
//! assert_eq!((e.self_pct, e.symbol.as_str(), e.sym_kind), (Some(27.0), "do_syscall_64", Some('k')));
//! assert_eq!(e.graph[1].parent, Some(0));
//! ```
//!
//! # Decisions
//!
//! * **Columns** come from the column header (`# Children      Self  Command ...` or
//!   `# Overhead  Command ...`) and the `# ....` line under it: each run of dots is one column,
//!   and entry cells are cut at those byte positions (names and symbols may contain spaces).
//!   `Children` → `children_pct`, `Self` and `Overhead` → `self_pct`, `Command`, `Shared Object`
//!   → `dso`, `Symbol` → `sym_kind` + `symbol`. Every other column (`Samples`, `Source Symbol`,
//!   `Basic Block Cycles`, ...) goes to `other` by header name; `Source Shared Object` and
//!   `Source Symbol` (branch mode, `-b`) also fill `dso`/`symbol` when those columns are absent.
//!   Without any column header (`perf report -q`), an entry is split on whitespace: leading
//!   percentages, then command and dso before the `[k]`-style marker, then the symbol.
//! * **Percentages** are `f64` as printed (`%.2f%%`).
//! * **Call graph** (`hist.c`): the left margin is the indent of the graph's first line
//!   (12 spaces in perf's own output); after a `---first` root line it grows by 3. Each depth
//!   level is 11 characters: `|` or a space, then 10 spaces, or at the level where a branch
//!   starts `|--NN.NN%--` / ` --NN.NN%--`. [`GraphNode::depth`] is that printed level (0 for
//!   the `---` chain); the chain's following lines keep the level of the line that started it.
//!   The tree is in [`GraphNode::parent`]: a line that starts a branch at level `d` hangs from
//!   the last line printed at level `d - 1` (none for level 1 without a `---` chain, i.e. several
//!   roots); any other line hangs from the line above it at the same level. Separator lines
//!   (`|`, with or without trailing spaces) carry no node. `[...]` (remaining hits) and
//!   `sym (inlined)` are kept as symbols. A branch value that is not a percentage
//!   (`-g graph,0.5,caller,count`) gives `pct: None`.
//! * `--call-graph=flat` (a `NN.NN%` line, then one frame per line, chains separated by blank
//!   lines) and `folded` (`NN.NN% a;b;c`) are read too: each chain is a list of depth-0 nodes,
//!   the first carrying the percentage.
//! * **Events**: `# Samples: N  of event 'name'` sets [`Entry::event`] for the entries after it.
//! * **End of an entry**: the next entry line, a `#` line (`# Samples:` of the next event, the
//!   `# (Tip: ...)` trailer) or the end of input. Blank lines only end a graph block.
//! * **Malformed lines** (neither entry, graph line, blank nor `#`; a percentage cell that is not
//!   a percentage; e.g. the `<SNIP>` an author put into the LKML example): strict mode returns
//!   [`Error::Malformed`] with format `"perf report"` after yielding the entry in progress;
//!   lenient mode skips and counts the line ([`Reader::diagnostics`]).

use std::io::BufRead;

use crate::error::{cut, Diagnostic, Diagnostics, Error, LineError, Location};
use crate::lines::{Line, LineReader};

/// Format name used in errors.
const FORMAT: &str = "perf report";

/// Width of one call-graph level (`"|          "`, hist.c).
const LEVEL_WIDTH: usize = 11;

/// Reader options, shared by every format: see [`crate::lines::ReaderOptions`].
pub use crate::lines::ReaderOptions as Options;

/// One histogram entry (one line of the table) with its call graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1-based line of the entry in the input.
    pub line: u64,
    /// `Children` column (with `--children`, the default when call chains were recorded).
    pub children_pct: Option<f64>,
    /// `Self` column, or `Overhead` with `--no-children`.
    pub self_pct: Option<f64>,
    /// `Command` column.
    pub command: Option<String>,
    /// `Shared Object` column (`Source Shared Object` in branch mode).
    pub dso: Option<String>,
    /// `Symbol` column without its `[k] ` marker; may contain spaces or be an address.
    pub symbol: String,
    /// The marker letter: `k` kernel, `.` user, `g` guest kernel, `u` guest user, `H` hypervisor.
    pub sym_kind: Option<char>,
    /// The event of the `# Samples: N  of event 'name'` block the entry is in.
    pub event: Option<String>,
    /// The call graph, in printed order; parents come before their children.
    pub graph: Vec<GraphNode>,
    /// Columns not mapped to a field above: (header name, cell text trimmed).
    pub other: Vec<(String, String)>,
}

/// One line of a call graph: one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    /// Printed level: 0 for the `---` chain, `d` for lines at `12 + 11*d` columns (+3 after a
    /// `---` chain). See the module docs.
    pub depth: u32,
    /// Index in [`Entry::graph`] of the frame this one hangs from; `None` for a root.
    pub parent: Option<usize>,
    /// The `--NN.NN%--` value when this line starts a branch, else `None`.
    pub pct: Option<f64>,
    /// The frame as printed (`__lseek64 (inlined)`, `[...]`, `0xffffffffffffffff`).
    pub symbol: String,
    /// 1-based input line.
    pub line: u64,
}

/// Column layout from the header and dots lines.
#[derive(Debug, Clone)]
struct Columns {
    names: Vec<String>,
    /// Byte offset where each column starts.
    starts: Vec<usize>,
    /// Byte offset just after the first column.
    first_end: usize,
}

/// Call-graph parsing state for the entry being read.
#[derive(Debug, Default)]
struct Graph {
    /// Left margin of the current graph block, known after its first line.
    margin: Option<usize>,
    /// Last node printed at each level.
    levels: Vec<Option<usize>>,
    /// `--call-graph=flat` block.
    flat: bool,
    flat_pct: Option<f64>,
    flat_last: Option<usize>,
}

/// Everything but the line reader, so a borrowed line can be parsed into it.
#[derive(Debug, Default)]
struct State {
    event: Option<String>,
    /// The last `#` line that was not a dots line: the column header candidate.
    prev_hash: Option<String>,
    columns: Option<Columns>,
    pending: Option<Entry>,
    graph: Graph,
}

enum Step {
    Continue,
    Emit(Entry),
    Bad(Diagnostic),
}

/// Streaming reader of `perf report --stdio` text.
pub struct Reader<R> {
    lines: LineReader<R>,
    lenient: bool,
    diagnostics: Diagnostics,
    state: State,
    deferred: Option<Error>,
    finished: bool,
}

impl<R: BufRead> Reader<R> {
    /// Wrap a reader of `perf report --stdio` text.
    pub fn new(inner: R, opts: &Options) -> Self {
        Reader {
            lines: LineReader::with_options(inner, opts),
            lenient: opts.lenient,
            diagnostics: Diagnostics::default(),
            state: State::default(),
            deferred: None,
            finished: false,
        }
    }

    /// Lines skipped so far (lenient mode).
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Bytes consumed so far, for progress reporting.
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }

    /// The next entry, `Ok(None)` at end of input.
    ///
    /// In strict mode the first malformed line gives [`Error::Malformed`] (format
    /// `"perf report"`); the entry in progress is returned first. After an error the reader
    /// returns `Ok(None)`.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, Error> {
        if let Some(e) = self.deferred.take() {
            self.finished = true;
            return Err(e);
        }
        if self.finished {
            return Ok(None);
        }
        loop {
            let line_no = self.lines.line_no() + 1;
            let step = match self.lines.next_line() {
                Err(e) => {
                    self.finished = true;
                    return Err(e);
                }
                Ok(None) => {
                    self.finished = true;
                    return Ok(self.state.pending.take());
                }
                Ok(Some(Line::Bad(d))) => Step::Bad(d),
                Ok(Some(Line::Text(s))) => self.state.on_line(s, line_no),
            };
            match step {
                Step::Continue => {}
                Step::Emit(e) => return Ok(Some(e)),
                Step::Bad(d) => {
                    if self.lenient {
                        self.diagnostics.push(d);
                        continue;
                    }
                    let err = Error::malformed(FORMAT, d);
                    return match self.state.pending.take() {
                        Some(e) => {
                            self.deferred = Some(err);
                            Ok(Some(e))
                        }
                        None => {
                            self.finished = true;
                            Err(err)
                        }
                    };
                }
            }
        }
    }
}

/// True for a characteristic `perf report --stdio` header line: `# Children      Self  ...`,
/// `# Overhead  Command ...` or `# Samples: N  of event 'x'`.
///
/// ```
/// use lockcast_parsers::perf_report::sniff;
/// assert!(sniff("# Children      Self  Command  Shared Object       Symbol"));
/// assert!(sniff("# Samples: 10  of event 'cycles'"));
/// assert!(!sniff("# tracer: nop"));
/// ```
pub fn sniff(line: &str) -> bool {
    let Some(body) = line.strip_prefix('#') else {
        return false;
    };
    let mut toks = body.split_whitespace();
    match (toks.next(), toks.next()) {
        (Some("Children"), Some("Self")) => true,
        (Some("Overhead"), _) => body.trim_start().starts_with("Overhead  ") || toks.count() == 0,
        (Some("Samples:"), Some(_)) => body.contains(" of event '"),
        _ => false,
    }
}

impl State {
    fn on_line(&mut self, s: &str, line_no: u64) -> Step {
        if s.starts_with('#') {
            self.on_hash(s);
            self.graph = Graph::default();
            return match self.pending.take() {
                Some(e) => Step::Emit(e),
                None => Step::Continue,
            };
        }
        if s.trim().is_empty() {
            self.graph.end_block();
            return Step::Continue;
        }
        match self.parse_entry(s, line_no) {
            Err(d) => Step::Bad(d),
            Ok(Some(entry)) => {
                self.graph = Graph::default();
                match self.pending.replace(entry) {
                    Some(prev) => Step::Emit(prev),
                    None => Step::Continue,
                }
            }
            Ok(None) => match self.pending.as_mut() {
                Some(entry) => match self.graph.add_line(entry, s, line_no) {
                    Ok(()) => Step::Continue,
                    Err(d) => Step::Bad(d),
                },
                None => Step::Bad(diag(
                    line_no,
                    s,
                    "an entry line (percentages, command, shared object, symbol) or a `#` header",
                )),
            },
        }
    }

    /// `#` lines: event blocks, column header, dots line; the rest is ignored.
    fn on_hash(&mut self, s: &str) {
        let body = s.get(1..).unwrap_or("").trim();
        if let Some(rest) = body.strip_prefix("Samples:") {
            if let Some((_, ev)) = rest.split_once(" of event '") {
                self.event = Some(ev.strip_suffix('\'').unwrap_or(ev).to_string());
            }
        }
        if let Some(cols) = dots_columns(s, self.prev_hash.as_deref()) {
            self.columns = Some(cols);
        } else {
            self.prev_hash = Some(s.to_string());
        }
    }

    /// An entry line, `Ok(None)` if the line is not one (then it may be a graph line).
    fn parse_entry(&self, s: &str, line_no: u64) -> Result<Option<Entry>, Diagnostic> {
        // Entry lines start with the two-space column separator; graph lines with 12+ spaces,
        // folded graph lines with a digit.
        if !s.starts_with(' ') {
            return Ok(None);
        }
        let mut e = Entry {
            line: line_no,
            children_pct: None,
            self_pct: None,
            command: None,
            dso: None,
            symbol: String::new(),
            sym_kind: None,
            event: self.event.clone(),
            graph: Vec::new(),
            other: Vec::new(),
        };
        let Some(cols) = &self.columns else {
            return Ok(parse_entry_fallback(s, e));
        };
        let first_start = cols.starts.first().copied().unwrap_or(0);
        if cell(s, first_start, cols.first_end).trim().is_empty() {
            return Ok(None);
        }
        let mut has_symbol_col = false;
        for (i, (&start, name)) in cols.starts.iter().zip(&cols.names).enumerate() {
            let end = cols.starts.get(i + 1).copied().unwrap_or(s.len());
            let text = cell(s, start, end).trim();
            let col = u32::try_from(start + 1).unwrap_or(u32::MAX);
            let pct = || {
                parse_pct(text).map(Some).ok_or_else(|| Diagnostic {
                    location: Location { line: line_no, col },
                    kind: LineError::expected("a percentage like 12.34% in this column", text),
                    line_text: cut(s, 120),
                })
            };
            match name.as_str() {
                "Children" => e.children_pct = pct()?,
                "Self" | "Overhead" => e.self_pct = pct()?,
                "Command" => e.command = Some(text.to_string()),
                "Shared Object" => e.dso = Some(text.to_string()),
                "Symbol" => {
                    has_symbol_col = true;
                    let (kind, sym) = split_kind(text);
                    e.sym_kind = kind;
                    e.symbol = sym.to_string();
                }
                _ => e.other.push((name.clone(), text.to_string())),
            }
        }
        if e.dso.is_none() {
            e.dso = other(&e, "Source Shared Object").map(str::to_string);
        }
        if !has_symbol_col {
            if let Some(text) = other(&e, "Source Symbol") {
                let (kind, sym) = split_kind(text);
                let sym = sym.to_string();
                e.sym_kind = kind;
                e.symbol = sym;
            }
        }
        Ok(Some(e))
    }
}

fn other<'e>(e: &'e Entry, name: &str) -> Option<&'e str> {
    e.other
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A diagnostic for a whole line.
fn diag(line_no: u64, s: &str, what: &'static str) -> Diagnostic {
    let col = s.len() - s.trim_start().len() + 1;
    Diagnostic {
        location: Location {
            line: line_no,
            col: u32::try_from(col).unwrap_or(u32::MAX),
        },
        kind: LineError::expected(what, s.trim()),
        line_text: cut(s, 120),
    }
}

/// Columns from a dots line (`# ........  ........  .......  ...`) and the header line above it.
/// `None` if `s` is not a dots line or there is no header line.
fn dots_columns(s: &str, header: Option<&str>) -> Option<Columns> {
    let rest = s.strip_prefix("# ")?;
    if rest.trim().is_empty() || !rest.bytes().all(|b| b == b'.' || b == b' ') {
        return None;
    }
    let header = header?;
    let bytes = s.as_bytes();
    let mut starts = Vec::new();
    let mut first_end = None;
    for (i, &b) in bytes.iter().enumerate().skip(2) {
        let prev = bytes.get(i - 1).copied().unwrap_or(b' ');
        if b == b'.' && prev != b'.' {
            starts.push(i);
        }
        if b != b'.' && prev == b'.' && first_end.is_none() {
            first_end = Some(i);
        }
    }
    let first_end = first_end.unwrap_or(s.len());
    let names = (0..starts.len())
        .map(|i| {
            let start = starts.get(i).copied().unwrap_or(0);
            let end = starts.get(i + 1).copied().unwrap_or(header.len());
            cell(header, start, end).trim().to_string()
        })
        .collect();
    Some(Columns {
        names,
        starts,
        first_end,
    })
}

/// `s[start..end]`, clamped to the line and moved back to char boundaries.
fn cell(s: &str, start: usize, end: usize) -> &str {
    let floor = |mut i: usize| {
        i = i.min(s.len());
        while i > 0 && !s.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let (a, b) = (floor(start), floor(end));
    if a >= b {
        return "";
    }
    s.get(a..b).unwrap_or("")
}

/// `55.01%` → 55.01.
fn parse_pct(t: &str) -> Option<f64> {
    let v: f64 = t.trim().strip_suffix('%')?.parse().ok()?;
    v.is_finite().then_some(v)
}

/// `[k] do_syscall_64` → (Some('k'), "do_syscall_64").
fn split_kind(text: &str) -> (Option<char>, &str) {
    let mut chars = text.chars();
    if let (Some('['), Some(k), Some(']')) = (chars.next(), chars.next(), chars.next()) {
        let rest = chars.as_str();
        if rest.is_empty() || rest.starts_with(' ') {
            return (Some(k), rest.trim());
        }
    }
    (None, text)
}

/// Entry without a column header (`perf report -q`): `  55.01%  39.00%  ls  [kernel.vmlinux]  [k] sym`.
fn parse_entry_fallback(s: &str, mut e: Entry) -> Option<Entry> {
    let lead = s.len() - s.trim_start().len();
    if lead > 10 {
        return None;
    }
    let mut rest = s.trim_start();
    let mut pcts = Vec::new();
    while pcts.len() < 2 {
        let tok = rest.split_whitespace().next().unwrap_or("");
        match parse_pct(tok) {
            Some(p) => {
                pcts.push(p);
                rest = rest.get(tok.len()..).unwrap_or("").trim_start();
            }
            None => break,
        }
    }
    match pcts.as_slice() {
        [] => return None,
        [o] => e.self_pct = Some(*o),
        [c, s, ..] => {
            e.children_pct = Some(*c);
            e.self_pct = Some(*s);
        }
    }
    // the `[k] ` marker: `[`, one char, `]`, space, preceded by a space
    let b = rest.as_bytes();
    let marker = (0..b.len()).find(|&i| {
        b.get(i) == Some(&b'[')
            && b.get(i + 2) == Some(&b']')
            && matches!(b.get(i + 3), Some(b' ') | None)
            && (i == 0 || b.get(i - 1) == Some(&b' '))
    });
    match marker.and_then(|i| Some((rest.get(..i)?, rest.get(i..)?))) {
        Some((before, sym)) => {
            let (kind, sym) = split_kind(sym);
            e.sym_kind = kind;
            e.symbol = sym.to_string();
            let before = before.trim();
            if let Some((cmd, dso)) = before.rsplit_once([' ', '\t']) {
                e.command = Some(cmd.trim().to_string());
                e.dso = Some(dso.to_string());
            } else if !before.is_empty() {
                e.dso = Some(before.to_string());
            }
        }
        None => e.symbol = rest.trim().to_string(),
    }
    Some(e)
}

impl Graph {
    /// A blank line: the next graph line starts a new block (flat chains, or junk).
    fn end_block(&mut self) {
        self.margin = None;
        self.flat_pct = None;
        self.flat_last = None;
    }

    fn set_level(&mut self, depth: u32, idx: usize) {
        let d = depth as usize;
        self.levels.truncate(d + 1);
        while self.levels.len() <= d {
            self.levels.push(None);
        }
        if let Some(slot) = self.levels.get_mut(d) {
            *slot = Some(idx);
        }
    }

    fn level(&self, depth: u32) -> Option<usize> {
        self.levels.get(depth as usize).copied().flatten()
    }

    /// Read one graph line into `entry.graph`. Real lines (perf 6.1, trailing spaces kept):
    ///
    /// ```text
    ///             |
    ///             ---entry_SYSCALL_64_after_hwframe
    ///                do_syscall_64
    ///                |          
    ///                |--22.26%--ksys_read
    ///                |          |          
    ///                |          |--17.80%--vfs_read
    ///                |           --3.86%--fdget_pos
    ///                 --0.59%--x64_sys_call
    /// ```
    fn add_line(&mut self, entry: &mut Entry, s: &str, line_no: u64) -> Result<(), Diagnostic> {
        const WHAT: &str =
            "a call-graph line (`|`, `---sym`, `|--NN.NN%--sym`, or a frame at the graph's indent)";
        let bad = || diag(line_no, s, WHAT);
        let graph = &mut entry.graph;
        let push = |graph: &mut Vec<GraphNode>, depth, parent, pct, symbol: &str| {
            graph.push(GraphNode {
                depth,
                parent,
                pct,
                symbol: symbol.to_string(),
                line: line_no,
            });
            graph.len() - 1
        };
        if !s.starts_with(' ') {
            // --call-graph=folded: `55.01% a;b;c`
            const WHAT0: &str = "an entry line (percentages, command, shared object, symbol), a `#` header or a call-graph line";
            let bad0 = || diag(line_no, s, WHAT0);
            let (p, chain) = s.split_once(' ').ok_or_else(bad0)?;
            let pct = parse_pct(p).ok_or_else(bad0)?;
            let mut parent = None;
            for (i, sym) in chain.trim().split(';').enumerate() {
                let pct = if i == 0 { Some(pct) } else { None };
                parent = Some(push(graph, 0, parent, pct, sym));
            }
            return Ok(());
        }
        let lead = s.len() - s.trim_start_matches(' ').len();
        let margin = match self.margin {
            Some(m) => m,
            None => {
                self.margin = Some(lead);
                if let Some(p) = parse_pct(s) {
                    // --call-graph=flat: the chain's percentage line
                    self.flat = true;
                    self.flat_pct = Some(p);
                    self.flat_last = None;
                    return Ok(());
                }
                lead
            }
        };
        if self.flat {
            if let Some(p) = parse_pct(s) {
                self.flat_pct = Some(p);
                self.flat_last = None;
            } else {
                let pct = self.flat_pct.take();
                self.flat_last = Some(push(graph, 0, self.flat_last, pct, s.trim()));
            }
            return Ok(());
        }
        if lead < margin {
            return Err(bad());
        }
        let mut rest = s.get(margin..).ok_or_else(bad)?;
        if let Some(sym) = rest.strip_prefix("---") {
            let idx = push(graph, 0, None, None, sym);
            self.set_level(0, idx);
            self.margin = Some(margin + 3);
            return Ok(());
        }
        let mut depth: u32 = 0;
        loop {
            let b = rest.as_bytes();
            match b.first() {
                None => return Ok(()),
                Some(b'|') | Some(b' ') => {
                    if b.get(1) == Some(&b'-') && b.get(2) == Some(&b'-') {
                        let after = rest.get(3..).ok_or_else(bad)?;
                        let end = after.find("--").ok_or_else(bad)?;
                        let value = after.get(..end).ok_or_else(bad)?;
                        let sym = after.get(end + 2..).ok_or_else(bad)?;
                        depth += 1;
                        let parent = self.level(depth - 1);
                        let idx = push(graph, depth, parent, parse_pct(value), sym);
                        self.set_level(depth, idx);
                        return Ok(());
                    }
                    let unit = b.get(1..LEVEL_WIDTH);
                    if unit.is_some_and(|u| u.iter().all(|&c| c == b' ')) {
                        depth += 1;
                        rest = rest.get(LEVEL_WIDTH..).ok_or_else(bad)?;
                        continue;
                    }
                    if b.iter().all(|&c| c == b'|' || c == b' ') {
                        return Ok(()); // separator line
                    }
                    return Err(bad());
                }
                Some(_) => {
                    let parent = self.level(depth);
                    let idx = push(graph, depth, parent, None, rest);
                    self.set_level(depth, idx);
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::BufReader;
    use std::path::{Path, PathBuf};

    fn read_from<R: BufRead>(r: R, lenient: bool) -> (Vec<Entry>, Result<(), Error>, Diagnostics) {
        let opts = Options {
            lenient,
            ..Options::default()
        };
        let mut reader = Reader::new(r, &opts);
        let mut out = Vec::new();
        loop {
            match reader.next_entry() {
                Ok(Some(e)) => out.push(e),
                Ok(None) => return (out, Ok(()), reader.diagnostics().clone()),
                Err(e) => {
                    assert!(matches!(reader.next_entry(), Ok(None)));
                    return (out, Err(e), reader.diagnostics().clone());
                }
            }
        }
    }

    fn read_all(text: &str) -> Vec<Entry> {
        let (es, res, _) = read_from(text.as_bytes(), false);
        res.unwrap();
        es
    }

    /// (depth, parent, pct, symbol) of every node.
    fn tree(e: &Entry) -> Vec<(u32, Option<usize>, Option<f64>, &str)> {
        e.graph
            .iter()
            .map(|n| (n.depth, n.parent, n.pct, n.symbol.as_str()))
            .collect()
    }

    const CHILDREN_HEADER: &str =
        "# Children      Self  Command  Shared Object         Symbol                            \n\
# ........  ........  .......  ....................  ..................................\n\
#\n";

    /// Real lines from `fixtures/perf-report/dd-cpu-clock-children.txt` (perf 6.1): separator
    /// lines end in `|` + 10 spaces; nested levels, ` --` last branches, short `--0.59%--`.
    const NESTED: &str = "    62.02%    27.00%  dd       [kernel.kallsyms]     [k] do_syscall_64
            |          
            |--35.01%--do_syscall_64
            |          |          
            |          |--22.26%--ksys_read
            |          |          |          
            |          |          |--17.80%--vfs_read
            |          |          |          |          
            |          |          |          |--13.65%--read_zero
            |          |          |          |          
            |          |          |           --0.89%--rw_verify_area
            |          |          |                     |          
            |          |          |                      --0.59%--security_file_permission
            |          |          |          
            |          |           --3.86%--fdget_pos
            |          |          
            |           --0.59%--x64_sys_call
            |          
            |--13.65%--read
            |          entry_SYSCALL_64_after_hwframe
            |          do_syscall_64
            |          
             --13.35%--__GI___libc_write
                       entry_SYSCALL_64_after_hwframe
                       do_syscall_64

";

    #[test]
    fn perf_report_checklist17_nested_tree_exact() {
        let es = read_all(&format!("{CHILDREN_HEADER}{NESTED}"));
        assert_eq!(es.len(), 1);
        let e = &es[0];
        assert_eq!(
            (
                e.children_pct,
                e.self_pct,
                e.command.as_deref(),
                e.dso.as_deref()
            ),
            (
                Some(62.02),
                Some(27.0),
                Some("dd"),
                Some("[kernel.kallsyms]")
            )
        );
        assert_eq!(
            (e.sym_kind, e.symbol.as_str(), e.line),
            (Some('k'), "do_syscall_64", 4)
        );
        assert_eq!(
            tree(e),
            vec![
                (1, None, Some(35.01), "do_syscall_64"),
                (2, Some(0), Some(22.26), "ksys_read"),
                (3, Some(1), Some(17.80), "vfs_read"),
                (4, Some(2), Some(13.65), "read_zero"),
                (4, Some(2), Some(0.89), "rw_verify_area"),
                (5, Some(4), Some(0.59), "security_file_permission"),
                (3, Some(1), Some(3.86), "fdget_pos"),
                (2, Some(0), Some(0.59), "x64_sys_call"),
                (1, None, Some(13.65), "read"),
                (1, Some(8), None, "entry_SYSCALL_64_after_hwframe"),
                (1, Some(9), None, "do_syscall_64"),
                (1, None, Some(13.35), "__GI___libc_write"),
                (1, Some(11), None, "entry_SYSCALL_64_after_hwframe"),
                (1, Some(12), None, "do_syscall_64"),
            ]
        );
        assert_eq!(e.graph[5].line, 16);
    }

    #[test]
    fn perf_report_checklist17_separators_without_trailing_spaces_same_tree() {
        let trimmed: String = NESTED
            .lines()
            .map(|l| format!("{}\n", l.trim_end()))
            .collect();
        let a = read_all(&format!("{CHILDREN_HEADER}{NESTED}"));
        let b = read_all(&format!("{CHILDREN_HEADER}{trimmed}"));
        assert_eq!(a, b);
    }

    /// LKML 2019 example (corpus `lkml-children-self-callgraph-2019.txt`): `---` root chain,
    /// then a ` --16.01%--` branch hanging from the chain's last frame.
    #[test]
    fn perf_report_root_chain_then_branch_exact() {
        let text = "# Children      Self  Command  Shared Object       Symbol
# ........  ........  .......  ..................  .........................................
#
    55.01%     0.00%  ls       [kernel.vmlinux]    [k] entry_SYSCALL_64_after_hwframe
            |
            ---entry_SYSCALL_64_after_hwframe
               do_syscall_64
               |
                --16.01%--__x64_sys_execve
                          __do_execve_file.isra.0
                          search_binary_handler

    55.01%    39.00%  ls       [kernel.vmlinux]    [k] do_syscall_64
            |
            |--39.00%--0xffffffffffffffff
            |          _dl_map_object
            |          __lseek64 (inlined)
            |
             --16.01%--do_syscall_64
                       __x64_sys_execve
";
        let es = read_all(text);
        assert_eq!(es.len(), 2);
        assert_eq!(
            tree(&es[0]),
            vec![
                (0, None, None, "entry_SYSCALL_64_after_hwframe"),
                (0, Some(0), None, "do_syscall_64"),
                (1, Some(1), Some(16.01), "__x64_sys_execve"),
                (1, Some(2), None, "__do_execve_file.isra.0"),
                (1, Some(3), None, "search_binary_handler"),
            ]
        );
        assert_eq!(
            tree(&es[1]),
            vec![
                (1, None, Some(39.0), "0xffffffffffffffff"),
                (1, Some(0), None, "_dl_map_object"),
                (1, Some(1), None, "__lseek64 (inlined)"),
                (1, None, Some(16.01), "do_syscall_64"),
                (1, Some(3), None, "__x64_sys_execve"),
            ]
        );
        assert_eq!(es[1].self_pct, Some(39.0));
    }

    #[test]
    fn perf_report_remaining_hits_node_and_count_values() {
        // hist.c prints filtered hits as a last branch `[...]`; with `-g ...,count` the branch
        // value is a count, not a percentage.
        let text = "# Overhead  Command  Shared Object      Symbol
# ........  .......  .................  ......
#
    27.00%  dd       [kernel.kallsyms]  [k] do_syscall_64
            |
            ---do_syscall_64
               |          
               |--42--read
               |          
                --[...]--[...]
";
        let _ = text;
        let text = text.replace("--[...]--[...]", "--1.50%--[...]");
        let es = read_all(&text);
        assert_eq!(
            tree(&es[0]),
            vec![
                (0, None, None, "do_syscall_64"),
                (1, Some(0), None, "read"),
                (1, Some(0), Some(1.5), "[...]"),
            ]
        );
    }

    #[test]
    fn perf_report_overhead_layout_symbols_with_spaces_and_addresses() {
        let text = "# Overhead  Command      Shared Object         Symbol
# ........  ...........  ....................  ..................................
#
    12.50%  Web Content  libxul.so             [.] operator new(unsigned long)
     0.30%  dd           dd                    [.] 0x000000000000593c
   100.00%  swapper      [kernel.kallsyms]     [k] 0000000000000000
";
        let es = read_all(text);
        assert_eq!(es.len(), 3);
        assert_eq!(
            (
                es[0].command.as_deref(),
                es[0].symbol.as_str(),
                es[0].sym_kind
            ),
            (
                Some("Web Content"),
                "operator new(unsigned long)",
                Some('.')
            )
        );
        assert_eq!((es[0].children_pct, es[0].self_pct), (None, Some(12.5)));
        assert_eq!(es[1].symbol, "0x000000000000593c");
        assert_eq!(
            (es[2].self_pct, es[2].symbol.as_str()),
            (Some(100.0), "0000000000000000")
        );
        assert!(es.iter().all(|e| e.graph.is_empty() && e.event.is_none()));
    }

    #[test]
    fn perf_report_event_blocks_and_tip_trailer() {
        let text = "# Samples: 183  of event 'cpu-clock'
# Event count (approx.): 45750000
#
# Overhead  Command  Shared Object         Symbol                               
# ........  .......  ....................  .....................................
#
    27.32%  dd       [kernel.kallsyms]     [k] do_syscall_64
            |
            ---do_syscall_64


# Samples: 183  of event 'task-clock'
# Event count (approx.): 45750000
#
# Overhead  Command  Shared Object         Symbol                               
# ........  .......  ....................  .....................................
#
    32.79%  dd       [kernel.kallsyms]     [k] do_syscall_64


#
# (Tip: To change sampling frequency to 100 Hz: perf record -F 100)
#
";
        let es = read_all(text);
        assert_eq!(es.len(), 2);
        assert_eq!(es[0].event.as_deref(), Some("cpu-clock"));
        assert_eq!(es[1].event.as_deref(), Some("task-clock"));
        assert_eq!(es[0].graph.len(), 1);
        assert_eq!(es[1].line, 18);
    }

    #[test]
    fn perf_report_branch_mode_other_columns() {
        let text = "# Overhead  Command  Source Shared Object  Source Symbol                Target Symbol                              Basic Block Cycles
# ........  .......  ....................  ...........................  .........................................  ..................
#
     7.69%  ls       libpthread-2.29.so    [.] _init                    [.] __pthread_initialize_minimal_internal  6827
     7.69%  ls       ld-2.29.so            [k] _start                   [k] _dl_start                              -
";
        let es = read_all(text);
        assert_eq!(es.len(), 2);
        let e = &es[0];
        assert_eq!(
            (e.self_pct, e.dso.as_deref(), e.symbol.as_str(), e.sym_kind),
            (Some(7.69), Some("libpthread-2.29.so"), "_init", Some('.'))
        );
        assert_eq!(
            e.other,
            vec![
                (
                    "Source Shared Object".to_string(),
                    "libpthread-2.29.so".to_string()
                ),
                ("Source Symbol".to_string(), "[.] _init".to_string()),
                (
                    "Target Symbol".to_string(),
                    "[.] __pthread_initialize_minimal_internal".to_string()
                ),
                ("Basic Block Cycles".to_string(), "6827".to_string()),
            ]
        );
        assert_eq!(es[1].other[3].1, "-");
    }

    #[test]
    fn perf_report_flat_and_folded_call_graphs() {
        let flat = "# Overhead  Command  Shared Object      Symbol
# ........  .......  .................  ......
#
    27.00%  dd       [kernel.kallsyms]  [k] do_syscall_64
           13.65%
                entry_SYSCALL_64_after_hwframe
                do_syscall_64

           13.35%
                __GI___libc_write
                do_syscall_64

     6.53%  dd       [kernel.kallsyms]  [k] fdget_pos
";
        let es = read_all(flat);
        assert_eq!(es.len(), 2);
        assert_eq!(
            tree(&es[0]),
            vec![
                (0, None, Some(13.65), "entry_SYSCALL_64_after_hwframe"),
                (0, Some(0), None, "do_syscall_64"),
                (0, None, Some(13.35), "__GI___libc_write"),
                (0, Some(2), None, "do_syscall_64"),
            ]
        );
        let folded = "# Overhead  Command  Shared Object      Symbol
# ........  .......  .................  ......
#
    27.00%  dd       [kernel.kallsyms]  [k] do_syscall_64
13.65% entry_SYSCALL_64_after_hwframe;do_syscall_64
";
        let es = read_all(folded);
        assert_eq!(
            tree(&es[0]),
            vec![
                (0, None, Some(13.65), "entry_SYSCALL_64_after_hwframe"),
                (0, Some(0), None, "do_syscall_64"),
            ]
        );
    }

    #[test]
    fn perf_report_without_column_header_quiet() {
        let text = "    55.01%    39.00%  ls       [kernel.vmlinux]    [k] do_syscall_64
            |
            ---do_syscall_64
    12.50%  Web Content  libxul.so  [.] operator new(unsigned long)
";
        let es = read_all(text);
        assert_eq!(es.len(), 2);
        assert_eq!(
            (
                es[0].children_pct,
                es[0].self_pct,
                es[0].command.as_deref(),
                es[0].dso.as_deref()
            ),
            (
                Some(55.01),
                Some(39.0),
                Some("ls"),
                Some("[kernel.vmlinux]")
            )
        );
        assert_eq!(es[0].graph.len(), 1);
        assert_eq!(
            (
                es[1].command.as_deref(),
                es[1].dso.as_deref(),
                es[1].symbol.as_str()
            ),
            (
                Some("Web Content"),
                Some("libxul.so"),
                "operator new(unsigned long)"
            )
        );
    }

    #[test]
    fn perf_report_malformed_lines_strict_and_lenient() {
        let text = format!("{CHILDREN_HEADER}    62.02%    27.00%  dd       [kernel.kallsyms]     [k] do_syscall_64\n            |\n            ---do_syscall_64\n\n<SNIP>\n    abc%    27.00%  dd       [kernel.kallsyms]     [k] x\n     1.00%     1.00%  dd       [kernel.kallsyms]     [k] y\n");
        let (es, res, _) = read_from(text.as_bytes(), false);
        assert_eq!(es.len(), 1);
        let err = res.unwrap_err();
        assert_eq!(err.location(), Some(Location { line: 8, col: 1 }));
        assert!(
            err.to_string()
                .starts_with("8:1: perf report: expected an entry line"),
            "{err}"
        );
        let (es, res, diag) = read_from(text.as_bytes(), true);
        res.unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[1].symbol, "y");
        assert_eq!(diag.skipped, 2);
        assert_eq!(diag.first[1].location, Location { line: 9, col: 3 });
        assert!(diag.first[1].to_string().contains("a percentage"));
    }

    #[test]
    fn perf_report_graph_line_before_any_entry_is_malformed() {
        let (es, res, _) = read_from("            |--1.00%--x\n".as_bytes(), false);
        assert!(es.is_empty());
        assert_eq!(res.unwrap_err().location().map(|l| l.line), Some(1));
    }

    #[test]
    fn perf_report_sniff_lines() {
        assert!(sniff(
            "# Children      Self  Command  Shared Object       Symbol"
        ));
        assert!(sniff(
            "# Overhead  Command  Shared Object         Symbol                            "
        ));
        assert!(sniff(
            "# Overhead  Command  Source Shared Object  Source Symbol"
        ));
        assert!(sniff("# Samples: 337  of event 'cpu-clock'"));
        assert!(sniff("# Samples: 8K of event 'cycles:ppp'"));
        assert!(!sniff("# Event count (approx.): 84250000"));
        assert!(!sniff("# ========"));
        assert!(!sniff(
            "    55.01%     0.00%  ls       [kernel.vmlinux]    [k] x"
        ));
        assert!(!sniff(
            "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION"
        ));
    }

    // ---- whole files ----

    /// The corpus of real tool outputs, copied into the repository (`tests/corpus/`).
    fn corpus_dir() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/corpus")).to_path_buf()
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/perf-report"
        ))
        .join(name)
    }

    fn read_file(path: &Path, lenient: bool) -> (Vec<Entry>, Result<(), Error>, Diagnostics) {
        let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        read_from(BufReader::new(f), lenient)
    }

    fn nodes(es: &[Entry]) -> usize {
        es.iter().map(|e| e.graph.len()).sum()
    }

    /// Counts read off the raw text: entries `grep -cP '^ {1,6}\d+\.\d+%'`, graph nodes
    /// `grep -cP '^ {11,}[ |]*(---|--\S+--|[^ |-])'`.
    #[test]
    fn perf_report_corpus_every_file() {
        let dir = corpus_dir().join("perf-report");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "lkml-branch-stack-overhead-columns-2019.txt",
                "lkml-children-self-callgraph-2019.txt"
            ],
            "a corpus file was added or removed: give it expectations here"
        );

        // Branch-stack table, Overhead layout, no call graph.
        let path = dir.join("lkml-branch-stack-overhead-columns-2019.txt");
        let (es, res, _) = read_file(&path, false);
        res.unwrap();
        assert_eq!((es.len(), nodes(&es)), (13, 0));
        assert!(es
            .iter()
            .all(|e| e.self_pct == Some(7.69) && e.event.as_deref() == Some("cycles")));
        let e = &es[0];
        assert_eq!(
            (
                e.line,
                e.command.as_deref(),
                e.dso.as_deref(),
                e.symbol.as_str()
            ),
            (13, Some("ls"), Some("libpthread-2.29.so"), "_init")
        );
        assert_eq!(
            es[8].other[2],
            (
                "Target Symbol".to_string(),
                "[k] 0x00007f441b57c090".to_string()
            )
        );
        assert_eq!(es[2].other[3].1, "-24790");

        // Children/Self with call graphs; an author's `<SNIP>` at line 68 is not perf output.
        let path = dir.join("lkml-children-self-callgraph-2019.txt");
        let (es, res, _) = read_file(&path, false);
        assert_eq!((es.len(), nodes(&es)), (4, 41));
        let err = res.unwrap_err();
        assert_eq!(err.location().map(|l| l.line), Some(68), "{err}");
        assert!(err.to_string().contains("\"<SNIP>\""), "{err}");
        let (es2, res, diag) = read_file(&path, true);
        res.unwrap();
        assert_eq!(es2, es);
        assert_eq!((diag.skipped, diag.first[0].location.line), (1, 68));
        let e = &es[1];
        assert_eq!(
            (e.line, e.children_pct, e.self_pct, e.symbol.as_str()),
            (33, Some(55.01), Some(39.0), "do_syscall_64")
        );
        assert_eq!(e.graph.len(), 21);
        assert_eq!(
            (
                e.graph[3].depth,
                e.graph[3].parent,
                e.graph[3].symbol.as_str()
            ),
            (1, Some(2), "__lseek64 (inlined)")
        );
        assert_eq!(
            (e.graph[6].pct, e.graph[6].parent, e.graph[6].line),
            (Some(16.01), None, 42)
        );
        assert_eq!(e.graph[20].symbol, "memcpy_erms");
        assert_eq!(es[0].graph.len(), 16);
        assert_eq!(
            (
                es[0].graph[2].depth,
                es[0].graph[2].parent,
                es[0].graph[2].pct
            ),
            (1, Some(1), Some(16.01))
        );
        assert_eq!(
            (es[2].sym_kind, es[2].dso.as_deref(), es[2].children_pct),
            (Some('.'), Some("libpthread-2.29.so"), Some(42.95))
        );
    }

    /// Mutated real input never panics, in either mode.
    #[test]
    fn perf_report_mutated_input_never_panics() {
        let base = std::fs::read(fixture("dd-cpu-clock-children.txt")).unwrap();
        crate::lines::testing::mutations_never_panic(&base, |buf, opts| {
            let mut r = Reader::new(buf, opts);
            std::iter::from_fn(|| r.next_entry().ok().flatten())
                .take(buf.len() + 1)
                .count()
        });
    }

    /// Real capture (perf 6.1): `perf report --stdio` with children (the default with -g).
    #[test]
    fn perf_report_fixture_children() {
        let (es, res, _) = read_file(&fixture("dd-cpu-clock-children.txt"), false);
        res.unwrap();
        assert_eq!((es.len(), nodes(&es)), (93, 142));
        assert!(
            es.iter()
                .all(|e| e.event.as_deref() == Some("cpu-clock")
                    && e.command.as_deref() == Some("dd"))
        );
        let e = &es[0];
        assert_eq!(
            (e.line, e.children_pct, e.self_pct, e.symbol.as_str()),
            (12, Some(62.02), Some(0.0), "entry_SYSCALL_64_after_hwframe")
        );
        assert_eq!(
            tree(e)[..5],
            [
                (0, None, None, "entry_SYSCALL_64_after_hwframe"),
                (0, Some(0), None, "do_syscall_64"),
                (1, Some(1), Some(22.26), "ksys_read"),
                (2, Some(2), Some(17.80), "vfs_read"),
                (3, Some(3), Some(13.65), "read_zero"),
            ]
        );
        let last = e.graph.last().unwrap();
        assert_eq!(
            (last.depth, last.parent, last.pct, last.symbol.as_str()),
            (1, Some(1), Some(0.59), "x64_sys_call")
        );
        // the nested entry used in perf_report_checklist17_nested_tree_exact
        let n = &es[1];
        assert_eq!(
            (n.line, n.symbol.as_str(), n.graph.len()),
            (41, "do_syscall_64", 19)
        );
        let last = es.last().unwrap();
        assert_eq!(
            (
                last.self_pct,
                last.dso.as_deref(),
                last.symbol.as_str(),
                last.sym_kind
            ),
            (Some(0.0), Some("dd"), "0x000055c179737b92", Some('.'))
        );
    }

    /// Real capture: the same recording with `--no-children` (Overhead column).
    #[test]
    fn perf_report_fixture_no_children() {
        let (es, res, _) = read_file(&fixture("dd-cpu-clock-no-children.txt"), false);
        res.unwrap();
        assert_eq!((es.len(), nodes(&es)), (49, 67));
        assert!(es.iter().all(|e| e.children_pct.is_none()));
        let e = &es[0];
        assert_eq!(
            (e.line, e.self_pct, e.dso.as_deref(), e.symbol.as_str()),
            (12, Some(27.0), Some("[kernel.kallsyms]"), "do_syscall_64")
        );
        assert_eq!(
            tree(e),
            vec![
                (0, None, None, "do_syscall_64"),
                (0, Some(0), None, "entry_SYSCALL_64_after_hwframe"),
                (1, Some(1), Some(13.65), "read"),
                (1, Some(1), Some(13.35), "__GI___libc_write"),
            ]
        );
        let sum: f64 = es.iter().filter_map(|e| e.self_pct).sum();
        assert!((sum - 100.0).abs() < 0.5, "{sum}");
    }

    /// Real capture: two events (cpu-clock, task-clock), `--percent-limit 5`.
    #[test]
    fn perf_report_fixture_two_events() {
        let (es, res, _) = read_file(&fixture("dd-cpu-task-clock-no-children-limit5.txt"), false);
        res.unwrap();
        assert_eq!((es.len(), nodes(&es)), (9, 25));
        let events: Vec<&str> = es.iter().map(|e| e.event.as_deref().unwrap()).collect();
        assert_eq!(
            events,
            [["cpu-clock"; 5].as_slice(), &["task-clock"; 4]].concat()
        );
        assert_eq!((es[0].self_pct, es[0].line), (Some(27.32), 12));
        assert_eq!(
            (es[5].self_pct, es[5].symbol.as_str()),
            (Some(32.79), "do_syscall_64")
        );
        assert_eq!(
            tree(&es[0]),
            vec![
                (0, None, None, "do_syscall_64"),
                (0, Some(0), None, "entry_SYSCALL_64_after_hwframe"),
                (1, Some(1), Some(14.75), "read"),
                (1, Some(1), Some(12.57), "__GI___libc_write"),
            ]
        );
    }
}
