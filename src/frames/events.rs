//! Event records → the per-event tables: `events` (every event, payload raw), the typed tables
//! of the tracepoints the models use, `fields` (the `key=value` pairs of every other event) and
//! `samples` (perf script records with their call chains). Schemas: [`super::schema`].
//!
//! Each typed table is declared once, in the `event_tables!` invocation below: its name, the
//! tracepoint(s) it holds, the payload parser ([`lockcast_parsers::payload`]) and its columns
//! in order, each with its name, builder and value. The [`EventTable`] enum, the routing of an
//! event to its table, the column builders, the row push and the finish all come from there.
//!
//! [`EventTables`] is a streaming builder: feed events, take frames whenever enough rows are
//! buffered ([`EventTables::rows`]), so a caller writing row groups holds one group at a time.

use polars::prelude::*;

use lockcast_parsers::event::{Event, EventRef, FrameKey, Frames};
use lockcast_parsers::payload::{self, CollapseEvent as C};
use lockcast_parsers::{Diagnostic, LineError, Location};

use super::schema::{event_common as ec, events as ev, fields as fl, samples as sa, typed as ty};
use super::str_lists::SharedStrLists;
use crate::error::{Error, Result};

/// One column of a per-event table, filled one row at a time.
pub(super) trait ColumnBuilder {
    fn new(name: &'static str) -> Self;
    fn finish(self) -> Column;
}

/// A row's value of type `V` appended to a column builder.
pub(super) trait Append<V> {
    fn append(&mut self, v: V);
}

/// A string column builder (no per-row allocation: values are copied into arrow buffers).
pub(super) struct Str(StringChunkedBuilder);

impl ColumnBuilder for Str {
    fn new(name: &'static str) -> Self {
        Str(StringChunkedBuilder::new(name.into(), 1024))
    }
    fn finish(self) -> Column {
        self.0.finish().into_series().into()
    }
}

impl<S: AsRef<str> + ?Sized> Append<&S> for Str {
    fn append(&mut self, v: &S) {
        self.0.append_value(v.as_ref());
    }
}

impl Append<Option<&str>> for Str {
    fn append(&mut self, v: Option<&str>) {
        self.0.append_option(v);
    }
}

/// A column of numbers (`T` = `u64`, `Option<i32>`, ...: the `Option` is the column's nulls).
struct Num<T> {
    name: &'static str,
    values: Vec<T>,
}

impl<T> ColumnBuilder for Num<T>
where
    Series: NamedFrom<Vec<T>, [T]>,
{
    fn new(name: &'static str) -> Self {
        Num {
            name,
            values: Vec::new(),
        }
    }
    fn finish(self) -> Column {
        col(self.name, self.values)
    }
}

impl<T> Append<T> for Num<T> {
    fn append(&mut self, v: T) {
        self.values.push(v);
    }
}

/// A list of `key=value` strings per row (`vmscan`'s `other`).
struct KeyValues(ListStringChunkedBuilder);

impl ColumnBuilder for KeyValues {
    fn new(name: &'static str) -> Self {
        KeyValues(ListStringChunkedBuilder::new(name.into(), 1024, 1024))
    }
    fn finish(mut self) -> Column {
        self.0.finish().into_series().into()
    }
}

impl Append<&[(String, String)]> for KeyValues {
    fn append(&mut self, kv: &[(String, String)]) {
        let kv: Vec<String> = kv.iter().map(|(k, v)| format!("{k}={v}")).collect();
        self.0.append_values_iter(kv.iter().map(String::as_str));
    }
}

fn col<T>(name: &str, v: Vec<T>) -> Column
where
    Series: NamedFrom<Vec<T>, [T]>,
{
    Series::new(name.into(), v).into()
}

/// Declares [`EventTable`] and the typed tables. Per typed table, once:
///
/// ```text
/// Variant = "table name" from "system": event-name pattern [if guard],
///     |e| parse the payload of event `e` => |x| {
///         field(column name): Builder = value from `x` (and `e`),
///     }
/// ```
///
/// The columns come after the [`Common`] ones, in the order written.
macro_rules! event_tables {
    ($(
        $(#[$doc:meta])*
        $table:ident = $name:literal from $sys:literal: $events:pat $(if $guard:expr)?,
            |$e:ident| $parse:expr => |$x:ident| {
                $($col:ident($col_name:expr): $builder:ty = $value:expr,)+
            }
    )+) => {
        /// The tables built from event traces.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventTable {
            /// Every event, payload raw.
            Events,
            /// `key=value` pairs of events without a typed table.
            Fields,
            /// perf script records with call chains.
            Samples,
            $($(#[$doc])* $table,)+
        }

        impl EventTable {
            /// Every event table, in the order they are written.
            pub const ALL: [EventTable; 3 + [$($name),+].len()] = [
                EventTable::Events,
                EventTable::Fields,
                EventTable::Samples,
                $(EventTable::$table,)+
            ];

            /// Table name (`--table NAME`, file stem in an output directory).
            pub fn name(self) -> &'static str {
                match self {
                    EventTable::Events => ev::TABLE,
                    EventTable::Fields => fl::TABLE,
                    EventTable::Samples => sa::TABLE,
                    $(EventTable::$table => $name,)+
                }
            }

            /// A typed table's payload columns in order, after the
            /// [`super::schema::event_common`] ones; empty for `events`, `fields`, `samples`.
            pub fn payload_columns(self) -> &'static [&'static str] {
                match self {
                    $(EventTable::$table => &[$($col_name),+],)+
                    EventTable::Events | EventTable::Fields | EventTable::Samples => &[],
                }
            }

            /// The typed table an event belongs to, from its name (and its system when
            /// printed: a function-tracer line named like a tracepoint is not that tracepoint).
            pub fn typed_for(e: &EventRef<'_>) -> Option<Self> {
                let (sys, t) = match e.name {
                    $($events $(if $guard)? => ($sys, EventTable::$table),)+
                    _ => return None,
                };
                match e.system {
                    Some(s) if s != sys => None,
                    _ => Some(t),
                }
            }
        }

        /// The payload columns of one typed table.
        // One value per wanted table per piece: the size difference between variants costs
        // nothing.
        #[allow(clippy::large_enum_variant)]
        enum TypedCols {
            $($table { $($col: $builder,)+ },)+
        }

        impl TypedCols {
            fn new(t: EventTable) -> Option<Self> {
                Some(match t {
                    $(EventTable::$table => TypedCols::$table {
                        $($col: ColumnBuilder::new($col_name),)+
                    },)+
                    EventTable::Events | EventTable::Fields | EventTable::Samples => return None,
                })
            }

            /// Parse `event`'s payload into the columns; nothing is pushed when it fails.
            fn push(&mut self, event: &EventRef<'_>) -> Result<(), LineError> {
                match self {
                    $(TypedCols::$table { $($col,)+ } => {
                        let $e = event;
                        let $x = $parse?;
                        $($col.append($value);)+
                    })+
                }
                Ok(())
            }

            fn columns(self) -> Vec<Column> {
                match self {
                    $(TypedCols::$table { $($col,)+ } => vec![$($col.finish(),)+],)+
                }
            }
        }
    };
}

event_tables! {
    /// `lock:contention_begin`.
    ContentionBegin = "contention_begin" from "lock": "contention_begin",
        |e| payload::contention_begin(e.payload) => |x| {
            lock(ty::LOCK): Str = &x.lock,
            flags(ty::FLAGS): Str = &x.flags,
        }
    /// `lock:contention_end`.
    ContentionEnd = "contention_end" from "lock": "contention_end",
        |e| payload::contention_end(e.payload) => |x| {
            lock(ty::LOCK): Str = &x.lock,
            ret(ty::RET): Num<i32> = x.ret,
        }
    /// `pagemap:mm_lru_insertion`.
    LruInsertion = "lru_insertion" from "pagemap": "mm_lru_insertion",
        |e| payload::lru_insertion(e.payload) => |x| {
            folio(ty::FOLIO): Str = &x.folio,
            pfn(ty::PFN): Num<u64> = x.pfn,
            lru(ty::LRU): Num<i32> = x.lru,
            flags(ty::FLAGS): Str = &x.flags,
        }
    /// `pagemap:mm_lru_activate`.
    LruActivate = "lru_activate" from "pagemap": "mm_lru_activate",
        |e| payload::lru_activate(e.payload) => |x| {
            folio(ty::FOLIO): Str = &x.folio,
            pfn(ty::PFN): Num<u64> = x.pfn,
        }
    /// `kmem:mm_page_alloc`.
    PageAlloc = "page_alloc" from "kmem": "mm_page_alloc",
        |e| payload::page_alloc(e.payload) => |x| {
            page(ty::PAGE): Str = &x.page,
            pfn(ty::PFN): Num<u64> = x.pfn,
            order(ty::ORDER): Num<u32> = x.order,
            migratetype(ty::MIGRATETYPE): Num<i32> = x.migratetype,
            gfp_flags(ty::GFP_FLAGS): Str = &x.gfp_flags,
        }
    /// `kmem:mm_page_free`.
    PageFree = "page_free" from "kmem": "mm_page_free",
        |e| payload::page_free(e.payload) => |x| {
            page(ty::PAGE): Str = &x.page,
            pfn(ty::PFN): Num<u64> = x.pfn,
            order(ty::ORDER): Num<u32> = x.order,
        }
    /// `kmem:mm_page_free_batched` (the payload of `mm_page_free`).
    PageFreeBatched = "page_free_batched" from "kmem": "mm_page_free_batched",
        |e| payload::page_free(e.payload) => |x| {
            page(ty::PAGE): Str = &x.page,
            pfn(ty::PFN): Num<u64> = x.pfn,
            order(ty::ORDER): Num<u32> = x.order,
        }
    /// `huge_memory:mm_khugepaged_scan_pmd`.
    KhugepagedScanPmd = "khugepaged_scan_pmd" from "huge_memory": "mm_khugepaged_scan_pmd",
        |e| payload::khugepaged_scan_pmd(e.payload) => |x| {
            mm(ty::MM): Str = &x.mm,
            scan_pfn(ty::SCAN_PFN): Num<u64> = x.scan_pfn,
            writable(ty::WRITABLE): Num<Option<i32>> = x.writable,
            referenced(ty::REFERENCED): Num<i32> = x.referenced,
            none_or_zero(ty::NONE_OR_ZERO): Num<i32> = x.none_or_zero,
            status(ty::STATUS): Str = &x.status,
            unmapped(ty::UNMAPPED): Num<i32> = x.unmapped,
        }
    /// `huge_memory:mm_collapse_huge_page`, `_isolate` and `_swapin` in one table: each event
    /// fills the columns its `TP_printk` prints, the others are null.
    CollapseHugePage = "collapse_huge_page" from "huge_memory":
        "mm_collapse_huge_page" | "mm_collapse_huge_page_isolate" | "mm_collapse_huge_page_swapin",
        |e| payload::collapse_event(e.name, e.payload) => |x| {
            event(ty::EVENT): Str = &e.name,
            mm(ty::MM): Str = match &x {
                C::Collapse(c) => Some(c.mm.as_str()),
                C::Swapin(s) => Some(s.mm.as_str()),
                C::Isolate(_) => None,
            },
            scan_pfn(ty::SCAN_PFN): Num<Option<u64>> = match &x {
                C::Isolate(i) => Some(i.scan_pfn),
                _ => None,
            },
            isolated(ty::ISOLATED): Num<Option<i32>> = match &x {
                C::Collapse(c) => Some(c.isolated),
                _ => None,
            },
            swapped_in(ty::SWAPPED_IN): Num<Option<i32>> = match &x {
                C::Swapin(s) => Some(s.swapped_in),
                _ => None,
            },
            none_or_zero(ty::NONE_OR_ZERO): Num<Option<i32>> = match &x {
                C::Isolate(i) => Some(i.none_or_zero),
                _ => None,
            },
            referenced(ty::REFERENCED): Num<Option<i32>> = match &x {
                C::Isolate(i) => Some(i.referenced),
                C::Swapin(s) => Some(s.referenced),
                C::Collapse(_) => None,
            },
            writable(ty::WRITABLE): Num<Option<i32>> = match &x {
                C::Isolate(i) => i.writable,
                _ => None,
            },
            ret(ty::RET): Num<Option<i32>> = match &x {
                C::Swapin(s) => Some(s.ret),
                _ => None,
            },
            status(ty::STATUS): Str = match &x {
                C::Collapse(c) => Some(c.status.as_str()),
                C::Isolate(i) => Some(i.status.as_str()),
                C::Swapin(_) => None,
            },
        }
    /// `vmscan:mm_vmscan_*`.
    Vmscan = "vmscan" from "vmscan": n if n.starts_with("mm_vmscan_"),
        |e| payload::vmscan(e.payload) => |x| {
            event(ty::EVENT): Str = &e.name,
            nid(ty::NID): Num<Option<i32>> = x.nid,
            order(ty::ORDER): Num<Option<i32>> = x.order,
            gfp_flags(ty::GFP_FLAGS): Str = x.gfp_flags.as_deref(),
            classzone(ty::CLASSZONE): Num<Option<i32>> = x.classzone,
            nr_requested(ty::NR_REQUESTED): Num<Option<u64>> = x.nr_requested,
            nr_scanned(ty::NR_SCANNED): Num<Option<u64>> = x.nr_scanned,
            nr_skipped(ty::NR_SKIPPED): Num<Option<u64>> = x.nr_skipped,
            nr_taken(ty::NR_TAKEN): Num<Option<u64>> = x.nr_taken,
            nr_reclaimed(ty::NR_RECLAIMED): Num<Option<u64>> = x.nr_reclaimed,
            priority(ty::PRIORITY): Num<Option<i32>> = x.priority,
            lru(ty::LRU): Str = x.lru.as_deref(),
            flags(ty::FLAGS): Str = x.flags.as_deref(),
            other(ty::OTHER): KeyValues = x.other.as_slice(),
        }
}

impl EventTable {
    /// The table named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The columns every per-event table starts with.
struct Common {
    line: Vec<u64>,
    ts: Vec<Option<i64>>,
    cpu: Vec<Option<u32>>,
    comm: Str,
    pid: Vec<i64>,
    tgid: Vec<Option<i64>>,
}

impl Common {
    fn new() -> Self {
        Common {
            line: Vec::new(),
            ts: Vec::new(),
            cpu: Vec::new(),
            comm: Str::new(ec::COMM),
            pid: Vec::new(),
            tgid: Vec::new(),
        }
    }
    fn push(&mut self, e: &EventRef<'_>) {
        self.line.push(e.line);
        self.ts.push(e.ts_ns);
        self.cpu.push(e.cpu);
        self.comm.append(e.comm);
        self.pid.push(i64::from(e.tid));
        self.tgid.push(e.pid.map(i64::from));
    }
    fn len(&self) -> usize {
        self.line.len()
    }
    fn columns(self, source: &str) -> Vec<Column> {
        let n = self.line.len();
        vec![
            Column::new_scalar(ec::SOURCE.into(), Scalar::from(PlSmallStr::from(source)), n),
            col(ec::LINE, self.line),
            col(ec::TIMESTAMP_NS, self.ts),
            col(ec::CPU, self.cpu),
            self.comm.finish(),
            col(ec::PID, self.pid),
            col(ec::TGID, self.tgid),
        ]
    }
}

/// One typed table: the common columns plus its payload columns.
struct Typed {
    common: Common,
    cols: TypedCols,
}

/// `events` columns after the common ones.
struct EventsCols {
    irq_flags: Str,
    system: Str,
    event: Str,
    period: Vec<Option<u64>>,
    payload: Str,
}

/// `fields` rows.
struct FieldsCols {
    line: Vec<u64>,
    event: Str,
    key: Str,
    value: Str,
}

/// `samples` rows.
struct SamplesCols {
    line: Vec<u64>,
    ts: Vec<Option<i64>>,
    cpu: Vec<Option<u32>>,
    comm: Str,
    pid: Vec<Option<i64>>,
    tid: Vec<i64>,
    event: Str,
    period: Vec<Option<u64>>,
    addr: ListPrimitiveChunkedBuilder<UInt64Type>,
    symbol: SharedStrLists,
    offset: ListPrimitiveChunkedBuilder<UInt64Type>,
    dso: SharedStrLists,
    /// `system:name` of the row being pushed.
    scratch: String,
}

impl SamplesCols {
    fn new() -> Self {
        let list_u64 =
            |n: &str| ListPrimitiveChunkedBuilder::new(n.into(), 1024, 16 * 1024, DataType::UInt64);
        SamplesCols {
            line: Vec::new(),
            ts: Vec::new(),
            cpu: Vec::new(),
            comm: Str::new(ec::COMM),
            pid: Vec::new(),
            tid: Vec::new(),
            event: Str::new(sa::EVENT),
            period: Vec::new(),
            addr: list_u64(sa::STACK_ADDRESS),
            symbol: SharedStrLists::new(sa::STACK_SYMBOL),
            offset: list_u64(sa::STACK_OFFSET),
            dso: SharedStrLists::new(sa::STACK_DSO),
            scratch: String::new(),
        }
    }

    fn push(&mut self, e: &EventRef<'_>) {
        self.line.push(e.line);
        self.ts.push(e.ts_ns);
        self.cpu.push(e.cpu);
        self.comm.append(e.comm);
        self.pid.push(e.pid.map(i64::from));
        self.tid.push(i64::from(e.tid));
        match e.system {
            Some(s) => {
                self.scratch.clear();
                self.scratch.push_str(s);
                self.scratch.push(':');
                self.scratch.push_str(e.name);
                self.event.append(self.scratch.as_str());
            }
            None => self.event.append(e.name),
        }
        self.period.push(e.period);
        // the same four columns over either kind of frame list (slice iterators for the number
        // builders: they want trusted lengths)
        macro_rules! frames {
            ($cc:expr, |$f:ident| $sym:expr, $dso:expr, $key:expr) => {{
                let cc = $cc;
                self.addr.append_iter(cc.iter().map(|f| Some(f.addr)));
                for $f in cc.iter() {
                    self.symbol.push_keyed($key, Some($sym));
                    self.dso.push_keyed($key, $dso);
                }
                self.symbol.end_row();
                self.dso.end_row();
                self.offset.append_iter(cc.iter().map(|f| f.offset));
            }};
        }
        match e.callchain {
            Frames::Owned(cc) => {
                frames!(cc, |f| f.symbol.as_str(), f.dso.as_deref(), FrameKey::NONE)
            }
            Frames::Borrowed(cc) => frames!(cc, |f| f.symbol, f.dso, f.key),
        }
    }

    fn columns(mut self, source: &str) -> Vec<Column> {
        let n = self.line.len();
        vec![
            Column::new_scalar(ec::SOURCE.into(), Scalar::from(PlSmallStr::from(source)), n),
            col(ec::LINE, self.line),
            col(sa::TIME_NS, self.ts),
            col(ec::CPU, self.cpu),
            self.comm.finish(),
            col(sa::PID, self.pid),
            col(sa::TID, self.tid),
            self.event.finish(),
            col(ev::PERIOD, self.period),
            self.addr.finish().into_series().into(),
            self.symbol.finish(),
            self.offset.finish().into_series().into(),
            self.dso.finish(),
        ]
    }
}

/// What [`EventTables`] could not use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EventCounts {
    /// Events read.
    pub events: u64,
    /// Events of a typed table whose payload did not parse (lenient mode; strict fails).
    pub bad_payloads: u64,
}

/// Streaming builder of the per-event tables of one input.
pub struct EventTables {
    source: String,
    lenient: bool,
    want: [bool; EventTable::ALL.len()],
    common: Option<(Common, EventsCols)>,
    fields: Option<FieldsCols>,
    samples: Option<SamplesCols>,
    typed: Vec<Option<Typed>>,
    counts: EventCounts,
    rows: usize,
    /// First bad payload in lenient mode, for the report.
    first_bad: Option<Diagnostic>,
}

impl EventTables {
    /// A builder of the `wanted` tables for input `source`. In strict mode (`lenient` false)
    /// an unreadable typed payload is an error naming its line.
    pub fn new(source: &str, wanted: &[EventTable], lenient: bool) -> Self {
        let mut want = [false; EventTable::ALL.len()];
        for t in wanted {
            want[t.index()] = true;
        }
        let mut b = EventTables {
            source: source.to_string(),
            lenient,
            want,
            common: None,
            fields: None,
            samples: None,
            typed: Vec::new(),
            counts: EventCounts::default(),
            rows: 0,
            first_bad: None,
        };
        b.reset();
        b
    }

    fn reset(&mut self) {
        let w = |t: EventTable| self.want[t.index()];
        self.common = w(EventTable::Events).then(|| {
            (
                Common::new(),
                EventsCols {
                    irq_flags: Str::new(ev::IRQ_FLAGS),
                    system: Str::new(ev::SYSTEM),
                    event: Str::new(ev::EVENT),
                    period: Vec::new(),
                    payload: Str::new(ev::PAYLOAD),
                },
            )
        });
        self.fields = w(EventTable::Fields).then(|| FieldsCols {
            line: Vec::new(),
            event: Str::new(fl::EVENT),
            key: Str::new(fl::KEY),
            value: Str::new(fl::VALUE),
        });
        self.samples = w(EventTable::Samples).then(SamplesCols::new);
        self.typed = EventTable::ALL
            .iter()
            .map(|&t| {
                if !w(t) {
                    return None;
                }
                TypedCols::new(t).map(|cols| Typed {
                    common: Common::new(),
                    cols,
                })
            })
            .collect();
        self.rows = 0;
    }

    /// Rows buffered since the last [`EventTables::take`], over all tables.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Counts so far.
    pub fn counts(&self) -> EventCounts {
        self.counts
    }

    /// The first payload skipped in lenient mode.
    pub fn first_bad(&self) -> Option<&Diagnostic> {
        self.first_bad.as_ref()
    }

    /// Add one event to every wanted table it belongs to.
    pub fn push(&mut self, e: &Event) -> Result<()> {
        self.push_ref(&e.view())
    }

    /// [`EventTables::push`] of a borrowed event.
    pub fn push_ref(&mut self, e: &EventRef<'_>) -> Result<()> {
        self.counts.events += 1;
        if let Some((c, x)) = self.common.as_mut() {
            c.push(e);
            x.irq_flags.append(e.irq_flags);
            x.system.append(e.system);
            x.event.append(e.name);
            x.period.push(e.period);
            x.payload.append(e.payload);
            self.rows += 1;
        }
        if e.source.has_samples() {
            if let Some(s) = self.samples.as_mut() {
                s.push(e);
                self.rows += 1;
            }
        }
        let typed = EventTable::typed_for(e);
        match typed {
            Some(t) => {
                if let Some(Some(tb)) = self.typed.get_mut(t.index()) {
                    match tb.cols.push(e) {
                        Ok(()) => {
                            tb.common.push(e);
                            self.rows += 1;
                        }
                        Err(kind) => self.bad_payload(e, kind)?,
                    }
                }
            }
            None => {
                if let Some(f) = self.fields.as_mut() {
                    for (k, v) in payload::key_values(e.payload) {
                        if k.is_empty() {
                            continue;
                        }
                        f.line.push(e.line);
                        f.event.append(e.name);
                        f.key.append(k);
                        f.value.append(v);
                        self.rows += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn bad_payload(&mut self, e: &EventRef<'_>, kind: LineError) -> Result<()> {
        let d = Diagnostic {
            location: Location {
                line: e.line,
                col: 1,
            },
            kind,
            line_text: lockcast_parsers::error::cut(&format!("{}: {}", e.name, e.payload), 120),
        };
        if !self.lenient {
            return Err(Error::Parse {
                path: self.source.clone(),
                source: lockcast_parsers::Error::malformed(e.source.name(), d),
            });
        }
        self.counts.bad_payloads += 1;
        self.first_bad.get_or_insert(d);
        Ok(())
    }

    /// The frames built since the last call (every wanted table, empty ones included, so each
    /// table's schema is known), and start new ones.
    pub fn take(&mut self) -> Result<Vec<(EventTable, DataFrame)>> {
        let mut out = Vec::new();
        let src = self.source.clone();
        let ctx = |t: EventTable| move |e| Error::polars(format!("building {}", t.name()), e);
        if let Some((c, x)) = self.common.take() {
            let n = c.len();
            let mut cols = c.columns(&src);
            // events: common, then irq_flags, system, event, period, payload
            cols.extend([
                x.irq_flags.finish(),
                x.system.finish(),
                x.event.finish(),
                col(ev::PERIOD, x.period),
                x.payload.finish(),
            ]);
            out.push((
                EventTable::Events,
                DataFrame::new(n, cols).map_err(ctx(EventTable::Events))?,
            ));
        }
        if let Some(f) = self.fields.take() {
            let n = f.line.len();
            let cols = vec![
                Column::new_scalar(
                    ec::SOURCE.into(),
                    Scalar::from(PlSmallStr::from(src.as_str())),
                    n,
                ),
                col(ec::LINE, f.line),
                f.event.finish(),
                f.key.finish(),
                f.value.finish(),
            ];
            out.push((
                EventTable::Fields,
                DataFrame::new(n, cols).map_err(ctx(EventTable::Fields))?,
            ));
        }
        if let Some(s) = self.samples.take() {
            let n = s.line.len();
            out.push((
                EventTable::Samples,
                DataFrame::new(n, s.columns(&src)).map_err(ctx(EventTable::Samples))?,
            ));
        }
        let typed = std::mem::take(&mut self.typed);
        for (i, tb) in typed.into_iter().enumerate() {
            let Some(tb) = tb else { continue };
            let t = EventTable::ALL[i];
            let n = tb.common.len();
            let mut cols = tb.common.columns(&src);
            cols.extend(tb.cols.columns());
            out.push((t, DataFrame::new(n, cols).map_err(ctx(t))?));
        }
        self.reset();
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use lockcast_parsers::lines::ReaderOptions;
    use lockcast_parsers::perf_script;

    /// A `perf script` text of `n` cpu-clock samples whose frames repeat (long and short
    /// symbols, `tag` in every long one), in an order that depends on `order`.
    fn text(n: u64, tag: &str, order: u64) -> String {
        let mut t = String::new();
        for i in 0..n {
            t.push_str(&format!(
                "lrufault 31899  1000.{i:06}: 250000 cpu-clock: \n"
            ));
            for k in 0..1 + (i + order) % 6 {
                let a = (k * 7 + i * order) % 11;
                let sym = if a % 3 == 0 {
                    format!("f{a}")
                } else {
                    format!("{tag}_function_{a}")
                };
                t.push_str(&format!(
                    "\t{:16x} {sym}+0x{a:x} ([kernel.kallsyms])\n",
                    0x1000 + a
                ));
            }
            t.push('\n');
        }
        t
    }

    /// Samples read by two piece readers into one builder (their frames keyed, the second
    /// reader's keys naming other frames under the same line indexes) are the samples read by
    /// the streaming reader, whose frames carry no keys.
    #[test]
    fn keyed_frames_give_the_streaming_readers_samples() {
        let texts = [text(400, "first", 3), text(400, "second", 5)];
        let mut keyed = EventTables::new("t", &[EventTable::Samples], false);
        let mut plain = EventTables::new("t", &[EventTable::Samples], false);
        let mut hits = 0;
        for t in &texts {
            let o = ReaderOptions::default();
            let mut rd = perf_script::PieceReader::new(t.as_bytes(), &o);
            while let Some(s) = rd.next_sample().unwrap() {
                let e = s.view();
                if let Frames::Borrowed(f) = e.callchain {
                    hits += f.iter().filter(|f| f.key != FrameKey::NONE).count();
                }
                keyed.push_ref(&e).unwrap();
                rd.recycle(s);
            }
            let mut rd = perf_script::Reader::new(t.as_bytes(), &o);
            while let Some(e) = rd.next_event().unwrap() {
                plain.push(&e).unwrap();
            }
        }
        assert!(hits > 2000, "{hits} keyed frames");
        let (a, b) = (keyed.take().unwrap(), plain.take().unwrap());
        let (a, b) = (&a[0].1, &b[0].1);
        assert_eq!(a.height(), 800);
        assert!(a.equals_missing(b));
        // the second text's symbols are its own: a view kept from the first reader would
        // have brought "first_" names into its rows
        let inner = a
            .column(sa::STACK_SYMBOL)
            .unwrap()
            .list()
            .unwrap()
            .get_inner();
        let sym: Vec<&str> = inner
            .str()
            .unwrap()
            .downcast_iter()
            .flat_map(|a| a.values_iter())
            .collect();
        let first = sym.iter().filter(|s| s.starts_with("first_")).count();
        let second = sym.iter().filter(|s| s.starts_with("second_")).count();
        assert!(first > 500 && second > 500, "{first} {second}");
    }
}
