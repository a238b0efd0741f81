//! Traced waits → folded stacks: one stack per wait (or per `perf lock contention -v` row),
//! root first, the lock's type (or its address) as the root frame, weighted by the wait in
//! integer ns or by the count.
//!
//! The folded text is Brendan Gregg's `stackcollapse` output, which FlameGraph.pl, inferno and
//! speedscope read: `frame;frame;frame WEIGHT` per line, outermost frame first. Frames are named
//! without their `+0x` offset so that stacks of two kernels builds (or two runs) line up, and
//! `;` inside a name (it never appears in a kernel symbol, but a user-space one may carry it) is
//! written as `:` because `;` separates frames.
//!
//! Inputs: `lock:contention_begin` call chains of any event trace (`perf script -g`, perf.data
//! recorded with `-g`), paired with their `contention_end` by the same rule as the `contention`
//! table ([`OpenWaits`] per task and lock, as `perf lock contention` does), so the weights sum to
//! the total wait `report` prints for the trace; and `perf lock contention -v` tables, whose rows
//! carry one call stack each (perf prints at most 8 frames, innermost first), weighted by the
//! row's `total wait` as printed (or its `contended` count).

use std::collections::{BTreeMap, HashMap};

use lockcast_parsers::event::{Event, Source};
use lockcast_parsers::payload;
use lockcast_parsers::perf_lock;

use crate::analyses::filter::RowFilter;
use crate::capture::{self, Capture, OpenOptions};
use crate::error::{Error, Result};
use crate::frames::contention::{caller_of, lock_type, OpenWaits, Pairer, Stack};
use crate::input::InputSpec;
use crate::whatif::trace::intern;
use crate::whatif::Outcome;

/// What a stack weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weight {
    /// The wait, integer ns (a `-v` row: its printed `total wait`).
    #[default]
    Wait,
    /// The number of waits (a `-v` row: its `contended` count).
    Count,
}

impl Weight {
    /// The unit as tooltips and messages print it.
    pub fn unit(self) -> &'static str {
        match self {
            Weight::Wait => "ns",
            Weight::Count => "waits",
        }
    }
}

/// The root frame of every stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Root {
    /// The lock type as perf names it (`spinlock`, `rwsem:R`): the same in every run, so base
    /// and patched stacks line up.
    #[default]
    Type,
    /// The lock address as traced (`0xffff888102abc698`; event traces only, a `-v` table has
    /// none and falls back to the type).
    Lock,
}

/// Which waits, weighed how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Weight of a stack.
    pub weight: Weight,
    /// Root frame.
    pub root: Root,
    /// `--lock`, `--caller`, `--type` as everywhere else ([`RowFilter`]): a wait's lock is its
    /// address (a `-v` row: name, symbol, address), its callers the caller `perf lock
    /// contention` names (with its `+0x` offset) and every frame of its stack (without).
    pub filter: RowFilter,
}

/// Folded stacks: distinct stacks, root first, with their summed weight.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Folded {
    /// Where they came from (the input as given, or the what-if's capture).
    pub source: String,
    /// What the weights are.
    pub weight: Weight,
    /// Stacks, root first, sorted by frame names; no two equal.
    pub stacks: Vec<(Vec<String>, u64)>,
    /// Waits (or `-v` rows) behind the stacks, after the filters.
    pub waits: u64,
}

impl Folded {
    /// The sum of the weights (the total traced wait, or the number of waits).
    pub fn total(&self) -> u64 {
        self.stacks.iter().map(|(_, w)| *w).sum()
    }

    /// The folded-stack text (`a;b;c 123` per line).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for (stack, w) in &self.stacks {
            s.push_str(&stack.join(";"));
            s.push(' ');
            s.push_str(&w.to_string());
            s.push('\n');
        }
        s
    }

    fn from_map(
        source: String,
        weight: Weight,
        map: BTreeMap<Vec<String>, u64>,
        waits: u64,
    ) -> Folded {
        Folded {
            source,
            weight,
            stacks: map.into_iter().collect(),
            waits,
        }
    }
}

/// inferno's `diff-folded` text of two folded profiles: `stack BASE PATCHED` per distinct stack
/// of either (0 where a side lacks it), which `inferno-flamegraph` and FlameGraph.pl draw as a
/// differential flame graph.
pub fn diff_text(base: &Folded, patched: &Folded) -> String {
    let mut both: BTreeMap<&[String], (u64, u64)> = BTreeMap::new();
    for (s, w) in &base.stacks {
        both.entry(s.as_slice()).or_default().0 += w;
    }
    for (s, w) in &patched.stacks {
        both.entry(s.as_slice()).or_default().1 += w;
    }
    let mut out = String::new();
    for (s, (b, p)) in both {
        out.push_str(&format!("{} {b} {p}\n", s.join(";")));
    }
    out
}

/// A symbol as a frame name: the `+0x` offset stripped, `;` (the frame separator) written `:`,
/// a blank one (perf prints none for an unresolved user address) as `[unknown]`.
pub fn frame_name(symbol: &str) -> String {
    let mut out = String::new();
    frame_name_into(symbol, &mut out);
    out
}

/// [`frame_name`] into `out`, its buffer reused.
fn frame_name_into(symbol: &str, out: &mut String) {
    out.clear();
    let s = symbol.trim();
    let s = match s.find("+0x") {
        Some(i) => &s[..i],
        None => s,
    };
    if s.is_empty() {
        out.push_str("[unknown]");
    } else {
        out.extend(s.chars().map(|c| if c == ';' { ':' } else { c }));
    }
}

/// Frame names, each kept once and known by its number ([`intern`]): a traced wait's stack is
/// a list of numbers, summed in the fold's map without a `String` per frame and wait
/// (`flamegraph` on the fbatch-drain recording: CPU 0.705 -> 0.582 s).
#[derive(Default)]
struct Names {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        intern(&mut self.ids, &mut self.names, name)
    }
}

/// The message for a capture whose waits carry no call chains.
fn no_chains(path: &str, waits: u64, what: &str) -> Error {
    Error::Input(format!(
        "{path}: {waits} {what} but no call chains to draw: record with `-g` (`perf record -g -e lock:contention_begin -e lock:contention_end ...`), or give `perf lock contention -v` output"
    ))
}

/// Read `spec` (`path` or `path#N`) through [`capture::open`] and fold its waits.
pub fn from_capture(spec: &str, open: &OpenOptions, o: &Options) -> Result<Folded> {
    let spec = InputSpec::parse(spec);
    let path = spec.path.clone();
    match capture::open(&spec, open)?.read()? {
        Capture::LockTables(parsed) => from_table(&path, &parsed, spec.block, o),
        Capture::Events(mut rd) => {
            // only the waits are folded: a reader that can pass over the other events
            // undecoded does (perf.data; a 2 M-event recording with five other events took
            // 1.6 s decoding them all, to find it had no call chains)
            rd.only(&Pairer::EVENTS);
            struct Kept {
                ty: &'static str,
                /// Its frames' names ([`Names`]), innermost first.
                frames: Vec<u32>,
                /// Its frames as perf prints them, for the filters' caller.
                raw: Option<Stack>,
            }
            let mut waits: OpenWaits<(i32, String), Kept> = OpenWaits::default();
            let mut names = Names::default();
            let mut stacks: HashMap<Vec<u32>, u64> = HashMap::new();
            // reused: a frame's name, a stack's numbers, ended waits' frames
            let (mut name, mut stack) = (String::new(), Vec::new());
            let mut spare: Vec<Vec<u32>> = Vec::new();
            let (mut n, mut chained) = (0u64, 0u64);
            // one event read into again and again: the reader reuses its strings and frames
            let mut e = Event::empty(Source::PerfData);
            while rd
                .next_event_into(&mut e)
                .map_err(|e| Error::parse(&path, e))?
            {
                match e.name.as_str() {
                    "contention_begin" => {
                        let (Some(ts), Ok(b)) = (e.ts_ns, payload::contention_begin(&e.payload))
                        else {
                            continue;
                        };
                        let mut frames = spare.pop().unwrap_or_default();
                        frames.clear();
                        for f in &e.callchain {
                            frame_name_into(&f.symbol, &mut name);
                            frames.push(names.id(&name));
                        }
                        let kept = Kept {
                            ty: lock_type(b.flags),
                            frames,
                            raw: (!o.filter.is_empty()).then(|| Stack::of(&e.callchain)),
                        };
                        waits.begin((e.tid, b.lock.to_string()), ts, kept);
                    }
                    "contention_end" => {
                        let (Some(ts), Ok(end)) = (e.ts_ns, payload::contention_end(&e.payload))
                        else {
                            continue;
                        };
                        let Some((begin, k)) = waits.end_of(e.tid, end.lock, ts) else {
                            continue;
                        };
                        if let Some(raw) = &k.raw {
                            let mut callers: Vec<&str> = caller_of(raw.iter()).into_iter().collect();
                            callers.extend(k.frames.iter().map(|&i| names.names[i as usize].as_str()));
                            if !o.filter.keep(&[end.lock], &callers, Some(k.ty)) {
                                spare.push(k.frames);
                                continue;
                            }
                        }
                        n += 1;
                        stack.clear();
                        stack.push(names.id(match o.root {
                            Root::Type => k.ty,
                            Root::Lock => end.lock,
                        }));
                        if k.frames.is_empty() {
                            stack.push(names.id("[no call chain]"));
                        } else {
                            chained += 1;
                            stack.extend(k.frames.iter().rev());
                        }
                        spare.push(k.frames);
                        let w = match o.weight {
                            // OpenWaits::end refuses an end before its begin
                            Weight::Wait => (ts - begin) as u64,
                            Weight::Count => 1,
                        };
                        match stacks.get_mut(stack.as_slice()) {
                            Some(sum) => *sum += w,
                            None => {
                                stacks.insert(stack.clone(), w);
                            }
                        }
                    }
                    _ => {}
                }
            }
            let name_of = |i: &u32| names.names[*i as usize].clone();
            let map: BTreeMap<Vec<String>, u64> = stacks
                .into_iter()
                .map(|(s, w)| (s.iter().map(name_of).collect(), w))
                .collect();
            if n == 0 {
                return Err(Error::Input(format!(
                    "{path}: no traced wait{}: expected lock:contention_begin events each ended by a contention_end of the same task and lock",
                    filter_note(o)
                )));
            }
            if chained == 0 {
                return Err(no_chains(&path, n, "traced waits"));
            }
            Ok(Folded::from_map(path, o.weight, map, n))
        }
        Capture::Callgraph(_) => Err(Error::Input(format!(
            "{path}: perf report --stdio output holds sampled call graphs, not traced waits: give the perf.data or `perf script -g` text of a lock:contention_begin recording"
        ))),
    }
}

fn filter_note(o: &Options) -> String {
    if o.filter.is_empty() {
        String::new()
    } else {
        " that --lock/--caller/--type keep".to_string()
    }
}

/// Fold one `perf lock contention -v` table: each row's stack (innermost first as printed)
/// reversed under the row's lock type.
fn from_table(
    path: &str,
    parsed: &perf_lock::Parsed,
    block: Option<u32>,
    o: &Options,
) -> Result<Folded> {
    let table = match (block, parsed.tables.len()) {
        (_, 0) => return Err(Error::Input(format!("{path}: no perf lock table found"))),
        (Some(b), _) => parsed
            .tables
            .iter()
            .find(|t| t.header.index == b)
            .ok_or_else(|| {
                Error::Input(format!(
                    "{path}#{b}: the file holds {} tables",
                    parsed.tables.len()
                ))
            })?,
        (None, 1) => &parsed.tables[0],
        (None, n) => {
            return Err(Error::Input(format!(
                "{path}: holds {n} tables; pick one with {path}#N"
            )))
        }
    };
    let name = match block {
        Some(b) => format!("{path}#{b}"),
        None => path.to_string(),
    };
    let mut map: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    let (mut n, mut chained) = (0u64, 0u64);
    for r in &table.rows {
        let ty = r.lock_type.clone().unwrap_or_else(|| "unknown".to_string());
        if !o.filter.is_empty() {
            let addr = r.address.map(|a| format!("{a:#x}"));
            let locks: Vec<&str> = [r.name.as_deref(), r.symbol.as_deref(), addr.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            let frames: Vec<String> = r.stack.iter().map(|f| frame_name(&f.symbol)).collect();
            let mut callers: Vec<&str> = r.caller.as_deref().into_iter().collect();
            callers.extend(frames.iter().map(String::as_str));
            if !o.filter.keep(&locks, &callers, r.lock_type.as_deref()) {
                continue;
            }
        }
        let w = match o.weight {
            Weight::Wait => r.total_wait.map(|t| t.ns),
            Weight::Count => r.contended,
        };
        let Some(w) = w else {
            return Err(Error::Input(format!(
                "{name}:{}: the row has no {} column to weigh its stack by",
                r.line,
                match o.weight {
                    Weight::Wait => "`total wait`",
                    Weight::Count => "`contended`",
                }
            )));
        };
        n += 1;
        let mut stack = vec![ty];
        if r.stack.is_empty() {
            stack.push(match &r.caller {
                Some(c) => frame_name(c),
                None => "[no call chain]".to_string(),
            });
        } else {
            chained += 1;
            stack.extend(r.stack.iter().rev().map(|f| frame_name(&f.symbol)));
        }
        *map.entry(stack).or_default() += w;
    }
    if n == 0 {
        return Err(Error::Input(format!("{name}: no row{}", filter_note(o))));
    }
    if chained == 0 {
        return Err(no_chains(&name, n, "rows"));
    }
    Ok(Folded::from_map(name, o.weight, map, n))
}

/// Which side of a what-if's by-path breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhatifSide {
    /// The traced waits of the capture, by path.
    Measured,
    /// The waits the policy's replay predicts, by path.
    Predicted,
}

/// Fold a what-if's by-path breakdown: the engine keeps one kernel path per wait (the caller,
/// not the whole call chain), so each stack is `lru_lock;PATH`.
pub fn from_whatif(o: &Outcome, side: WhatifSide, weight: Weight) -> Folded {
    let mut map: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    let mut waits = 0;
    for r in &o.by_path {
        let (count, wait) = match side {
            WhatifSide::Measured => (r.measured_contended, r.measured_wait_ns.0),
            WhatifSide::Predicted => (r.predicted.contended, r.predicted.total_wait_ns.0),
        };
        waits += count;
        let w = match weight {
            Weight::Wait => wait,
            Weight::Count => count,
        };
        if w > 0 {
            let stack = vec!["lru_lock".to_string(), frame_name(r.via.as_str())];
            *map.entry(stack).or_default() += w;
        }
    }
    Folded::from_map(o.capture.clone(), weight, map, waits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_drop_offsets_and_separators() {
        assert_eq!(
            frame_name("folio_batch_move_lru+0x88"),
            "folio_batch_move_lru"
        );
        assert_eq!(
            frame_name("__page_cache_release.part.0+0x58"),
            "__page_cache_release.part.0"
        );
        assert_eq!(frame_name(""), "[unknown]");
        assert_eq!(frame_name("a;b"), "a:b");
        assert_eq!(frame_name("[unknown]"), "[unknown]");
    }

    #[test]
    fn diff_text_pairs_stacks_of_either_side() {
        let f = |v: &[(&str, u64)]| Folded {
            stacks: v
                .iter()
                .map(|(s, w)| (s.split(';').map(String::from).collect(), *w))
                .collect(),
            ..Default::default()
        };
        let d = diff_text(&f(&[("a;b", 5), ("a;c", 2)]), &f(&[("a;b", 3), ("a;d", 1)]));
        assert_eq!(d, "a;b 5 3\na;c 2 0\na;d 0 1\n");
    }
}
