//! `/proc/lock_stat` text (`CONFIG_LOCK_STAT`), as printed by `kernel/locking/lockdep_proc.c`
//! and pasted into mails since 2007.
//!
//! Layout (`seq_stats`/`seq_header`): a `lock_stat version 0.3|0.4` line, a rule, the header
//! (`class name con-bounces contentions waittime-min waittime-max waittime-total [waittime-avg]
//! acq-bounces acquisitions holdtime-min holdtime-max holdtime-total [holdtime-avg]`; 0.4 added
//! the two `-avg` columns), a rule, then per lock class one row `%40s:` (or `%38s-W:` and
//! `%38s-R:` for a class taken both ways), a short `-` rule, up to four contention points
//! (`name count [<ip>] sym+off/len`: call sites that waited), another short rule, up to four
//! contending points (the holders they waited for), a blank line and a `.` rule. Class names
//! carry lockdep's `#N` name version and `/N` subclass. Times are µs with two decimals of
//! ns + 5 (`snprint_time`), so a printed `0.57` is 565..=574 ns: read as 570 ns ± 5, exactly.
//!
//! Mail clients wrap the 200-column rows: a row's numbers, the header's column names and a
//! point's `[<ip>]`/symbol continue on the following lines, and quoting (`> `) prefixes them.
//! All of that is read; what is not a row, a rule or a point ends the table, and the nearest
//! line of prose before a table labels it (`Before the patch, I see`), as for `perf lock`
//! tables in mails. The result is the same [`Parsed`] tables `perf lock` text gives, rows of
//! mode [`Mode::LockStat`] with [`Row::hold`], [`Row::rw`] and [`Row::points`] filled in.

use std::io::BufRead;

use crate::error::{cut, Diagnostic, Error, LineError, Location};
use crate::lines::{Line, LineReader};
use crate::perf_lock::{
    CallPoint, Column, Hold, Mode, Parsed, PointKind, Row, Style, Table, TableHeader,
};
use crate::time::{scaled_decimal, TimeNs};

const FORMAT: &str = "lock_stat";

/// Reader options, shared by every format: see [`crate::lines::ReaderOptions`].
pub use crate::lines::ReaderOptions as Options;

/// The header's column names, in the order lock_stat 0.4 prints them (0.3 lacks the `-avg`s).
const COLUMNS: [&str; 12] = [
    "con-bounces",
    "contentions",
    "waittime-min",
    "waittime-max",
    "waittime-total",
    "waittime-avg",
    "acq-bounces",
    "acquisitions",
    "holdtime-min",
    "holdtime-max",
    "holdtime-total",
    "holdtime-avg",
];

/// True if `line` starts a `/proc/lock_stat` table: the version line or the header's first
/// line (`class name    con-bounces ...`), also inside mail quoting.
pub fn sniff(line: &str) -> bool {
    let t = unquote(line).trim();
    t.starts_with("lock_stat version") || (t.starts_with("class name") && t.contains("con-bounces"))
}

/// Strip mail quoting (`> `, `>> `, `>>>`) from the start of a line.
fn unquote(line: &str) -> &str {
    if line.starts_with('>') {
        line.trim_start_matches(['>', ' '])
    } else {
        line
    }
}

/// Read every `/proc/lock_stat` table of an input (a file, or a mail with several).
pub fn parse_all<R: BufRead>(inner: R, opts: &Options) -> Result<Parsed, Error> {
    let mut p = Reader {
        lines: LineReader::with_options(inner, opts),
        lenient: opts.lenient,
        out: Parsed::default(),
        label: None,
        version: None,
        header: None,
        table: None,
        first_line: None,
    };
    p.run()?;
    Ok(p.out)
}

/// The header being read (it may be wrapped over several lines).
struct HeaderAcc {
    line: u64,
    version: Option<String>,
    names: Vec<String>,
}

impl HeaderAcc {
    fn complete(&self) -> bool {
        match self.names.last().map(String::as_str) {
            Some("holdtime-avg") => true,
            Some("holdtime-total") => !self.names.iter().any(|n| n == "waittime-avg"),
            _ => false,
        }
    }
}

/// A class row whose numbers may continue on the next lines.
struct PendingRow {
    row: Row,
    class: String,
    nums: Vec<(String, u64)>,
}

/// A point whose `[<ip>]` or symbol is on the next line.
struct PendingPoint {
    count: u64,
    addr: Option<u64>,
    line: u64,
}

struct TableState {
    columns: Vec<String>,
    header_line: u64,
    row: Option<PendingRow>,
    /// Class of the last row, and the index of its first row (points go there).
    group: Option<(String, usize)>,
    block: Option<PointKind>,
    point: Option<PendingPoint>,
}

struct Reader<R> {
    lines: LineReader<R>,
    lenient: bool,
    out: Parsed,
    label: Option<String>,
    version: Option<(String, u64)>,
    header: Option<HeaderAcc>,
    table: Option<TableState>,
    first_line: Option<String>,
}

fn is_rule(t: &str) -> bool {
    t.len() >= 3 && (t.bytes().all(|b| b == b'-') || t.bytes().all(|b| b == b'.'))
}

fn is_number(t: &str) -> bool {
    !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

fn parse_count(s: &str) -> Result<u64, LineError> {
    if !s.bytes().all(|b| b.is_ascii_digit()) || s.is_empty() {
        return Err(LineError::expected("a count", s));
    }
    s.parse()
        .map_err(|_| LineError::Overflow { got: cut(s, 30) })
}

fn parse_us(s: &str) -> Result<TimeNs, LineError> {
    scaled_decimal(s, 1_000).ok_or_else(|| LineError::expected("a time in µs (`12.34`)", s))
}

/// `[<ffffffff810810c5>]` → the address.
fn parse_ip(s: &str) -> Option<u64> {
    let hex = s.strip_prefix("[<")?.strip_suffix(">]")?;
    u64::from_str_radix(hex, 16).ok()
}

impl<R: BufRead> Reader<R> {
    fn run(&mut self) -> Result<(), Error> {
        loop {
            let text = match self.lines.next_line()? {
                None => break,
                Some(Line::Bad(d)) => {
                    self.fail_diag(d)?;
                    continue;
                }
                Some(Line::Text(t)) => t.to_string(),
            };
            let line = self.lines.line_no();
            if self.first_line.is_none() && !text.trim().is_empty() {
                self.first_line = Some(cut(text.trim(), 80));
            }
            if let Err(kind) = self.on_line(line, &text) {
                let at = kind.1.unwrap_or(line);
                self.fail(at, kind.0, &text)?;
            }
        }
        let line = self.lines.line_no();
        if let Err((e, at)) = self.end_table() {
            self.fail(at.unwrap_or(line), e, "(end of input)")?;
        }
        if self.out.tables.is_empty() {
            return Err(Error::UnknownFormat {
                first_line: self.first_line.take().unwrap_or_default(),
            });
        }
        self.out.lines = line;
        Ok(())
    }

    fn fail_diag(&mut self, d: Diagnostic) -> Result<(), Error> {
        if self.lenient {
            self.out.diagnostics.push(d);
            Ok(())
        } else {
            Err(Error::malformed(FORMAT, d))
        }
    }

    fn fail(&mut self, line: u64, kind: LineError, text: &str) -> Result<(), Error> {
        // a bad row or point loses only itself in lenient mode
        if let Some(t) = &mut self.table {
            t.row = None;
            t.point = None;
        }
        self.fail_diag(Diagnostic {
            location: Location { line, col: 1 },
            kind,
            line_text: cut(text, 120),
        })
    }

    /// The table ends (prose, a new table, end of input): a row still waiting for its
    /// wrapped numbers is an error, not a row silently lost.
    fn end_table(&mut self) -> Result<(), (LineError, Option<u64>)> {
        if let Some(t) = self.table.take() {
            if let Some(r) = t.row {
                return Err((
                    LineError::ColumnCount {
                        expected: t.columns.len(),
                        got: r.nums.len(),
                        header_line: t.header_line,
                    },
                    Some(r.row.line),
                ));
            }
        }
        Ok(())
    }

    /// One line. An error names the line it is about when that is not this one (a wrapped
    /// row that never got its numbers).
    fn on_line(&mut self, line: u64, raw: &str) -> Result<(), (LineError, Option<u64>)> {
        let t = unquote(raw).trim();
        if let Some(h) = &mut self.header {
            if t.is_empty() || is_rule(t) {
                return Ok(());
            }
            for w in t.split_whitespace() {
                if !COLUMNS.contains(&w) {
                    return Err((
                        LineError::expected("a lock_stat column name (`holdtime-max`)", w),
                        None,
                    ));
                }
                h.names.push(w.to_string());
            }
            if h.complete() {
                self.start_table();
            }
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("lock_stat version") {
            self.end_table()?;
            self.version = Some((rest.trim().to_string(), line));
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("class name") {
            if rest.contains("con-bounces") {
                self.end_table()?;
                let version = self.version.take().map(|v| v.0);
                self.header = Some(HeaderAcc {
                    line,
                    version,
                    names: Vec::new(),
                });
                return self.on_line(line, rest);
            }
        }
        if t.starts_with("*WARNING*") && self.version.is_some() {
            self.out
                .diagnostics
                .notes
                .push(format!("line {line}: lock_stat says: {t}"));
            return Ok(());
        }
        if self.table.is_none() {
            if !t.is_empty() {
                if !is_rule(t) {
                    self.label = Some(t.trim_end_matches(':').trim().to_string());
                }
                if self.version.as_ref().is_some_and(|v| line > v.1 + 3) {
                    self.version = None;
                }
            }
            return Ok(());
        }
        self.in_table(line, t)
    }

    fn start_table(&mut self) {
        let Some(h) = self.header.take() else { return };
        let index = self.out.tables.len() as u32 + 1;
        let has_avg = h.names.iter().any(|n| n == "waittime-avg");
        let version = h
            .version
            .unwrap_or_else(|| if has_avg { "0.4" } else { "0.3" }.to_string());
        let mut columns = vec![
            Column::Contended,
            Column::WaitMin,
            Column::WaitMax,
            Column::WaitTotal,
        ];
        if has_avg {
            columns.push(Column::AvgWait);
        }
        columns.push(Column::Acquired);
        self.out.tables.push(Table {
            header: TableHeader {
                index,
                line: h.line,
                label: self.label.take(),
                mode: Mode::LockStat,
                columns,
                style: Style::LockStat { version },
                owner: false,
            },
            rows: Vec::new(),
            footers: Vec::new(),
        });
        self.table = Some(TableState {
            columns: h.names,
            header_line: h.line,
            row: None,
            group: None,
            block: None,
            point: None,
        });
    }

    fn in_table(&mut self, line: u64, t: &str) -> Result<(), (LineError, Option<u64>)> {
        let Some(st) = self.table.as_mut() else {
            return Ok(());
        };
        if let Some(pr) = &mut st.row {
            // a wrapped row: its numbers continue here
            let toks: Vec<&str> = t.split_whitespace().collect();
            if toks.is_empty() {
                return Ok(());
            }
            let row_line = pr.row.line;
            if !toks.iter().all(|w| is_number(w)) {
                return Err((
                    LineError::ColumnCount {
                        expected: st.columns.len(),
                        got: pr.nums.len(),
                        header_line: st.header_line,
                    },
                    Some(row_line),
                ));
            }
            for w in toks {
                let col = st.columns.get(pr.nums.len()).cloned().unwrap_or_default();
                pr.nums.push((w.to_string(), line));
                if col.is_empty() {
                    return Err((
                        LineError::ColumnCount {
                            expected: st.columns.len(),
                            got: pr.nums.len(),
                            header_line: st.header_line,
                        },
                        Some(row_line),
                    ));
                }
            }
            if pr.nums.len() == st.columns.len() {
                self.finish_row()?;
            }
            return Ok(());
        }
        if let Some(pp) = &st.point {
            // a wrapped point: `[<ip>] sym`, `[<ip>]` or `sym` continue it
            let mut toks = t.split_whitespace();
            let mut addr = pp.addr;
            let mut first = toks.next();
            if addr.is_none() {
                if let Some(ip) = first.and_then(parse_ip) {
                    addr = Some(ip);
                    first = toks.next();
                }
            }
            match first {
                None => {
                    if let Some(p) = &mut st.point {
                        p.addr = addr;
                    }
                }
                Some(sym) => {
                    let p = CallPoint {
                        kind: st.block.unwrap_or(PointKind::Contention),
                        count: pp.count,
                        addr,
                        symbol: sym.to_string(),
                        line: pp.line,
                    };
                    st.point = None;
                    self.push_point(p);
                }
            }
            return Ok(());
        }
        if t.is_empty() {
            return Ok(());
        }
        if is_rule(t) {
            if t.starts_with('.') {
                st.group = None;
                st.block = None;
            } else if st.group.is_some() {
                st.block = Some(match st.block {
                    None => PointKind::Contention,
                    Some(_) => PointKind::Contending,
                });
            }
            return Ok(());
        }
        // a point of the current class: `name count [<ip>] sym`
        if let (Some(kind), Some((class, _))) = (st.block, &st.group) {
            if let Some(rest) = t.strip_prefix(class.as_str()) {
                let mut toks = rest.split_whitespace();
                let count = toks
                    .next()
                    .ok_or_else(|| (LineError::expected("a contention count", ""), None))?;
                let count = parse_count(count).map_err(|e| (e, None))?;
                let mut addr = None;
                let mut next = toks.next();
                if let Some(ip) = next.and_then(parse_ip) {
                    addr = Some(ip);
                    next = toks.next();
                }
                match next {
                    Some(sym) => self.push_point(CallPoint {
                        kind,
                        count,
                        addr,
                        symbol: sym.to_string(),
                        line,
                    }),
                    None => st.point = Some(PendingPoint { count, addr, line }),
                }
                return Ok(());
            }
        }
        if let Some(pr) = class_row(line, t) {
            let pr = pr.map_err(|e| (e, None))?;
            let same = st.group.as_ref().is_some_and(|(c, _)| *c == pr.class);
            if !same {
                st.group = None;
                st.block = None;
            }
            if pr.nums.len() > st.columns.len() {
                return Err((
                    LineError::ColumnCount {
                        expected: st.columns.len(),
                        got: pr.nums.len(),
                        header_line: st.header_line,
                    },
                    None,
                ));
            }
            let done = pr.nums.len() == st.columns.len();
            st.row = Some(pr);
            if done {
                self.finish_row()?;
            }
            return Ok(());
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        let point_like =
            t.contains("[<") || (toks.len() >= 2 && toks[1].bytes().all(|b| b.is_ascii_digit()));
        if st.block.is_some() && st.group.is_some() && point_like {
            {
                return Err((
                    LineError::expected(
                        "a contention point `name count [<ip>] sym` of the class above",
                        t,
                    ),
                    None,
                ));
            }
        }
        // prose: the table has ended; this line may label the next one
        self.end_table()?;
        self.label = Some(t.trim_end_matches(':').trim().to_string());
        Ok(())
    }

    fn push_point(&mut self, p: CallPoint) {
        let Some(st) = &self.table else { return };
        let Some((_, first)) = st.group else { return };
        if let Some(t) = self.out.tables.last_mut() {
            if let Some(r) = t.rows.get_mut(first) {
                r.points.push(p);
            }
        }
    }

    fn finish_row(&mut self) -> Result<(), (LineError, Option<u64>)> {
        let Some(st) = self.table.as_mut() else {
            return Ok(());
        };
        let Some(pr) = st.row.take() else {
            return Ok(());
        };
        let mut row = pr.row;
        let mut hold = Hold::default();
        for (name, (v, at)) in st.columns.iter().zip(&pr.nums) {
            let at = Some(*at);
            let count = || parse_count(v).map_err(|e| (e, at));
            let time = || parse_us(v).map_err(|e| (e, at));
            match name.as_str() {
                "con-bounces" => hold.con_bounces = Some(count()?),
                "contentions" => row.contended = Some(count()?),
                "waittime-min" => row.min_wait = Some(time()?),
                "waittime-max" => row.max_wait = Some(time()?),
                "waittime-total" => row.total_wait = Some(time()?),
                "waittime-avg" => row.avg_wait = Some(time()?),
                "acq-bounces" => hold.acq_bounces = Some(count()?),
                "acquisitions" => row.acquired = Some(count()?),
                "holdtime-min" => hold.min = Some(time()?),
                "holdtime-max" => hold.max = Some(time()?),
                "holdtime-total" => hold.total = Some(time()?),
                _ => hold.avg = Some(time()?),
            }
        }
        row.hold = Some(hold);
        let Some(table) = self.out.tables.last_mut() else {
            return Ok(());
        };
        row.table = table.header.index;
        let idx = table.rows.len();
        table.rows.push(row);
        if st.group.as_ref().is_none_or(|(c, _)| *c != pr.class) {
            st.group = Some((pr.class, idx));
            st.block = None;
        }
        Ok(())
    }
}

/// A class row `name: numbers...` (the numbers may be cut short by wrapping); `None` when the
/// line is not one.
fn class_row(line: u64, t: &str) -> Option<Result<PendingRow, LineError>> {
    // the name ends at the last `:` followed only by numbers
    let toks: Vec<&str> = t.split_whitespace().collect();
    let n_num = toks.iter().rev().take_while(|w| is_number(w)).count();
    // a name alone (`patched:`) is prose: lockdep prints at least the first counts on the
    // name's line, and mail wrapping has been seen to move only later ones
    if n_num == 0 {
        return None;
    }
    let name_end = toks.len().checked_sub(n_num + 1)?;
    if !toks[name_end].ends_with(':') {
        return None;
    }
    let colon = t.rfind(':')?;
    if t[colon + 1..].split_whitespace().count() != n_num {
        return None;
    }
    let printed = t[..colon].trim();
    if printed.is_empty() {
        return Some(Err(LineError::expected("a lock class name before `:`", t)));
    }
    let (class, rw) = match printed
        .strip_suffix("-W")
        .map(|c| (c, "W"))
        .or_else(|| printed.strip_suffix("-R").map(|c| (c, "R")))
    {
        Some((c, rw)) => (c.to_string(), Some(rw.to_string())),
        None => (printed.to_string(), None),
    };
    let mut row = Row::new(0, line, Mode::LockStat);
    row.name = Some(class.clone());
    row.rw = rw;
    let nums = toks[name_end + 1..]
        .iter()
        .map(|w| (w.to_string(), line))
        .collect();
    Some(Ok(PendingRow { row, class, nums }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        match parse_all(text.as_bytes(), &Options::default()) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn times_are_microseconds_with_two_decimals_of_ns_plus_5() {
        // snprint_time prints (ns + 5) / 1000 "." ((ns + 5) % 1000) / 10
        assert_eq!(parse_us("0.57"), Ok(TimeNs { ns: 570, err_ns: 5 }));
        assert_eq!(
            parse_us("54133607.05"),
            Ok(TimeNs {
                ns: 54_133_607_050,
                err_ns: 5
            })
        );
        assert!(parse_us("1.2.3").is_err());
    }

    #[test]
    fn a_row_the_header_and_points_may_be_wrapped_and_quoted() {
        let text = "\
> lock_stat version 0.3
> ----------
>        class name    con-bounces    contentions
> waittime-min   waittime-max waittime-total    acq-bounces
> acquisitions   holdtime-min   holdtime-max holdtime-total
> ----------
>
>    &mm->mmap_sem-W:          5843
> 10462           2.89      138824.72    14217159.52
> 18965          84205           1.81        5031.07      725293.65
>    &mm->mmap_sem-R:         20208
> 34911           4.87      136797.26    57601464.49          55797
> 1110394           1.89      164918.52    30551371.71
>    ---------------
>      &mm->mmap_sem           5341
> [<ffffffff802bf9d7>] sys_munmap+0x47/0x80
>    ---------------
>      &mm->mmap_sem          13558  [<ffffffff802a675e>]
> find_lock_page_retry+0xde/0xf0
";
        let p = parse(text);
        assert_eq!(p.tables.len(), 1);
        let rows = &p.tables[0].rows;
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name.as_deref(), Some("&mm->mmap_sem"));
        assert_eq!(rows[0].rw.as_deref(), Some("W"));
        assert_eq!(rows[0].contended, Some(10462));
        assert_eq!(rows[0].acquired, Some(84205));
        let h = rows[0].hold.unwrap_or_default();
        assert_eq!(h.con_bounces, Some(5843));
        assert_eq!(h.acq_bounces, Some(18965));
        assert_eq!(h.total.map(|t| t.ns), Some(725_293_650));
        assert_eq!(rows[1].rw.as_deref(), Some("R"));
        assert_eq!(rows[1].total_wait.map(|t| t.ns), Some(57_601_464_490));
        assert_eq!(rows[1].avg_wait, None);
        // points belong to the class's first row
        let pts = &rows[0].points;
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].kind, PointKind::Contention);
        assert_eq!(pts[0].count, 5341);
        assert_eq!(pts[0].addr, Some(0xffffffff802bf9d7));
        assert_eq!(pts[0].symbol, "sys_munmap+0x47/0x80");
        assert_eq!(pts[1].kind, PointKind::Contending);
        assert_eq!(pts[1].symbol, "find_lock_page_retry+0xde/0xf0");
        assert!(rows[1].points.is_empty());
    }

    #[test]
    fn a_row_cut_short_is_an_error_naming_its_line() {
        let text = "\
lock_stat version 0.3
  class name con-bounces contentions waittime-min waittime-max waittime-total acq-bounces acquisitions holdtime-min holdtime-max holdtime-total

  &rq->lock:   13128   13128   0.43   190.53
  ---------
";
        let e = parse_all(text.as_bytes(), &Options::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("4:1: lock_stat: expected 10 columns"), "{e}");
    }

    #[test]
    fn subclass_and_name_version_stay_in_the_class_name() {
        let text = "\
lock_stat version 0.4
  class name con-bounces contentions waittime-min waittime-max waittime-total waittime-avg acq-bounces acquisitions holdtime-min holdtime-max holdtime-total holdtime-avg
   &rq->lock/1:        1526          11488           0.33         388.73      136294.31          11.86          21461          38404           0.00          37.93      109388.53           2.84
";
        let p = parse(text);
        let r = &p.tables[0].rows[0];
        assert_eq!(r.name.as_deref(), Some("&rq->lock/1"));
        assert_eq!(r.rw, None);
        assert_eq!(r.avg_wait.map(|t| t.ns), Some(11_860));
        assert_eq!(r.hold.and_then(|h| h.avg).map(|t| t.ns), Some(2_840));
        assert_eq!(r.hold.and_then(|h| h.min).map(|t| t.ns), Some(0));
    }
}
