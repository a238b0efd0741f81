//! `klockstat` output: bcc's Python tool (`tools/klockstat.py`) and libbpf-tools' C port
//! (`libbpf-tools/klockstat.c`).
//!
//! Both print two tables per interval, the acquire table then the hold table, each a header
//! and one row per call stack (the caller, then up to `-s` stack lines of one symbol each):
//!
//! - bcc: `%40s %10s %6s %10s %10s` headers `Caller Avg Spin Count Max spin Total spin` and
//!   `... Avg Hold ... Max hold Total hold` (2019: `Average Spin`), rows `%40s %10d %6d %10d
//!   %10d`: raw ns integers. The caller may be `[Missed Kernel Stack]`.
//! - libbpf-tools: `Caller  Avg Wait    Count   Max Wait   Total Wait` / `... Avg Hold ...
//!   Max Hold   Total Hold` (`Tid Comm` instead of `Caller` with `-P`), rows `%37s %9s %8llu
//!   %10s %12s` with times from `print_time`: `%.1f` and a unit (`h`, `m` = minutes, `s`, `ms`,
//!   `us`) or `%u ns`. With `-s` > 1 each row is followed by its stack and `Max PID %llu, COMM
//!   %s, Lock %s (0x%llx)` (the task and lock of the longest wait or hold; `-L` names the lock).
//!
//! Each header starts a table (`file#N`), labelled by the nearest prose line before it (the
//! command line in an example file). Rows are [`Mode::Klockstat`] (`-P` rows [`Mode::Task`],
//! like perf's `-t`): `Count` → `acquired`
//! (klockstat counts every acquisition it traced, not only contended ones, so `contended`
//! stays empty), the acquire times → the wait columns, the hold table's → [`Row::hold`].

use std::io::BufRead;

use crate::error::{cut, Diagnostic, Error, LineError, Location};
use crate::lines::{Line, LineReader};
use crate::perf_lock::{Column, Hold, Mode, Parsed, Row, StackFrame, Style, Table, TableHeader};
use crate::time::{scaled_decimal, unit_ns, TimeNs};

const FORMAT: &str = "klockstat";

/// Reader options, shared by every format: see [`crate::lines::ReaderOptions`].
pub use crate::lines::ReaderOptions as Options;

/// Which of the two tables, in which tool's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    hold: bool,
    /// libbpf-tools: times with units.
    units: bool,
    /// libbpf-tools `-P`: `Tid Comm` rows.
    per_thread: bool,
}

fn header(line: &str) -> Option<Kind> {
    let t: Vec<&str> = line.split_whitespace().collect();
    let s = t.join(" ");
    let (hold, units) = match () {
        _ if s.ends_with("Avg Spin Count Max spin Total spin")
            || s.ends_with("Average Spin Count Max spin Total spin") =>
        {
            (false, false)
        }
        _ if s.ends_with("Avg Hold Count Max hold Total hold")
            || s.ends_with("Average Hold Count Max hold Total hold") =>
        {
            (true, false)
        }
        _ if s.ends_with("Avg Wait Count Max Wait Total Wait") => (false, true),
        _ if s.ends_with("Avg Hold Count Max Hold Total Hold") => (true, true),
        _ => return None,
    };
    let per_thread = s.starts_with("Tid Comm ");
    if !(s.starts_with("Caller ") || per_thread) {
        return None;
    }
    Some(Kind {
        hold,
        units,
        per_thread,
    })
}

/// True if `line` is a klockstat table header.
pub fn sniff(line: &str) -> bool {
    header(line).is_some()
}

/// Read every klockstat table of an input.
pub fn parse_all<R: BufRead>(inner: R, opts: &Options) -> Result<Parsed, Error> {
    let mut lines = LineReader::with_options(inner, opts);
    let mut out = Parsed::default();
    let mut label: Option<String> = None;
    let mut current: Option<Kind> = None;
    let mut first_line: Option<String> = None;
    loop {
        let text = match lines.next_line()? {
            None => break,
            Some(Line::Bad(d)) => {
                fail(&mut out, opts.lenient, d)?;
                continue;
            }
            Some(Line::Text(t)) => t.to_string(),
        };
        let line = lines.line_no();
        let t = text.trim();
        if first_line.is_none() && !t.is_empty() {
            first_line = Some(cut(t, 80));
        }
        if let Some(kind) = header(t) {
            let index = out.tables.len() as u32 + 1;
            let columns = if kind.hold {
                vec![Column::Acquired]
            } else {
                vec![
                    Column::AvgWait,
                    Column::Acquired,
                    Column::WaitMax,
                    Column::WaitTotal,
                ]
            };
            out.tables.push(Table {
                header: TableHeader {
                    index,
                    line,
                    label: label.take(),
                    // `-P` rows are tasks: grouped and matched by comm, as perf's `-t` rows
                    mode: if kind.per_thread {
                        Mode::Task
                    } else {
                        Mode::Klockstat
                    },
                    columns,
                    style: Style::Klockstat,
                    owner: false,
                },
                rows: Vec::new(),
                footers: Vec::new(),
            });
            current = Some(kind);
            continue;
        }
        let Some(kind) = current else {
            if is_label(t) {
                label = Some(t.to_string());
            }
            continue;
        };
        if t.is_empty() {
            // the blank line before the next header (or the end of the interval)
            continue;
        }
        let table = out.tables.last_mut();
        let Some(table) = table else { continue };
        match row(kind, table.header.index, line, t) {
            Some(Ok(r)) => table.rows.push(r),
            Some(Err(e)) => {
                let d = Diagnostic {
                    location: Location { line, col: 1 },
                    kind: e,
                    line_text: cut(&text, 120),
                };
                fail(&mut out, opts.lenient, d)?;
            }
            None => {
                if let Some(rest) = t.strip_prefix("Max PID ") {
                    let Some(r) = table.rows.last_mut() else {
                        continue;
                    };
                    if let Err(e) = max_line(rest, r) {
                        let d = Diagnostic {
                            location: Location { line, col: 1 },
                            kind: e,
                            line_text: cut(&text, 120),
                        };
                        fail(&mut out, opts.lenient, d)?;
                    }
                } else if !t.contains(' ') && !table.rows.is_empty() && !kind.per_thread {
                    // a stack line: one symbol (`%37s` / `%40s`)
                    if let Some(r) = table.rows.last_mut() {
                        r.stack.push(StackFrame {
                            addr: 0,
                            symbol: t.to_string(),
                        });
                    }
                } else {
                    // prose (`Exiting trace of mutex/sem locks`, a prompt): the table ended
                    current = None;
                    if is_label(t) {
                        label = Some(t.to_string());
                    }
                }
            }
        }
    }
    if out.tables.is_empty() {
        return Err(Error::UnknownFormat {
            first_line: first_line.unwrap_or_default(),
        });
    }
    out.lines = lines.line_no();
    Ok(out)
}

fn is_label(t: &str) -> bool {
    !t.is_empty()
        && t != "^C"
        && !t.starts_with("Tracing ")
        && !t.starts_with("Exiting trace")
        && !t.starts_with("WARNING")
}

fn fail(out: &mut Parsed, lenient: bool, d: Diagnostic) -> Result<(), Error> {
    if lenient {
        out.diagnostics.push(d);
        Ok(())
    } else {
        Err(Error::malformed(FORMAT, d))
    }
}

fn count(s: &str) -> Result<u64, LineError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(LineError::expected("a count", s));
    }
    s.parse()
        .map_err(|_| LineError::Overflow { got: cut(s, 30) })
}

/// One time cell from the end of `toks`: `123` (bcc, raw ns) or `5.1 ms` (libbpf-tools).
fn pop_time(toks: &mut Vec<&str>, units: bool) -> Result<TimeNs, LineError> {
    if !units {
        let v = toks.pop().unwrap_or("");
        return count(v).map(TimeNs::exact);
    }
    let unit = toks.pop().unwrap_or("");
    let num = toks.pop().unwrap_or("");
    let u =
        unit_ns(unit).ok_or_else(|| LineError::expected("a time unit (ns us ms s m h)", unit))?;
    if u == 1 {
        // `%u ns`: an exact integer
        return count(num).map(TimeNs::exact);
    }
    scaled_decimal(num, u).ok_or_else(|| LineError::expected("a time such as `5.1 ms`", num))
}

/// A row, `None` when the line does not end in the table's value cells (a stack line, the
/// `Max PID` line, prose).
fn row(kind: Kind, table: u32, line: u64, t: &str) -> Option<Result<Row, LineError>> {
    let all: Vec<&str> = t.split_whitespace().collect();
    let last = *all.last()?;
    let ends_in_value = if kind.units {
        unit_ns(last).is_some()
    } else {
        last.bytes().all(|b| b.is_ascii_digit())
    };
    // bcc cells are 4 integers, libbpf-tools' 3 times of 2 tokens and a count
    let cells = if kind.units { 7 } else { 4 };
    if !ends_in_value || all.len() <= cells {
        return None;
    }
    let mut toks = all;
    let parsed = (|| {
        let total = pop_time(&mut toks, kind.units)?;
        let max = pop_time(&mut toks, kind.units)?;
        let n = count(toks.pop().unwrap_or(""))?;
        let avg = pop_time(&mut toks, kind.units)?;
        Ok((total, max, n, avg))
    })();
    let (total, max, n, avg) = match parsed {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    let mode = if kind.per_thread {
        Mode::Task
    } else {
        Mode::Klockstat
    };
    let mut r = Row::new(table, line, mode);
    if kind.per_thread {
        // `%u  %16s`: tid, then the comm (which may hold spaces)
        let Some((tid, comm)) = toks.split_first() else {
            return Some(Err(LineError::expected("a tid and comm", t)));
        };
        match tid.parse::<i64>() {
            Ok(v) => r.pid = Some(v),
            Err(_) => return Some(Err(LineError::expected("a tid", tid))),
        }
        r.comm = Some(comm.join(" "));
    } else {
        r.caller = Some(toks.join(" "));
    }
    r.acquired = Some(n);
    if kind.hold {
        r.hold = Some(Hold {
            count: Some(n),
            avg: Some(avg),
            max: Some(max),
            total: Some(total),
            ..Hold::default()
        });
    } else {
        r.avg_wait = Some(avg);
        r.max_wait = Some(max);
        r.total_wait = Some(total);
    }
    Some(Ok(r))
}

/// `39643, COMM cadvisor, Lock kernfs_rwsem (0xffffffff89f87e00)[ nltype ...]`.
fn max_line(rest: &str, r: &mut Row) -> Result<(), LineError> {
    let bad = || LineError::expected("`Max PID N, COMM C, Lock L (0xADDR)`", rest);
    let (pid, rest) = rest.split_once(", COMM ").ok_or_else(bad)?;
    r.pid = Some(pid.trim().parse().map_err(|_| bad())?);
    // before #4188 the line ended after the comm
    let (comm, lock) = match rest.split_once(", Lock ") {
        Some((c, l)) => (c, Some(l)),
        None => (rest, None),
    };
    r.comm = Some(comm.to_string());
    if let Some(lock) = lock {
        let (name, after) = lock.split_once(" (0x").ok_or_else(bad)?;
        let (hex, _) = after.split_once(')').ok_or_else(bad)?;
        r.symbol = Some(name.to_string());
        r.address = Some(u64::from_str_radix(hex, 16).map_err(|_| bad())?);
    }
    Ok(())
}
