//! Event records → the per-event tables: `events` (every event, payload raw), the typed tables
//! of the tracepoints the models use, `fields` (the `key=value` pairs of every other event) and
//! `samples` (perf script records with their call chains). Schemas: [`super::schema`].
//!
//! [`EventTables`] is a streaming builder: feed events, take frames whenever enough rows are
//! buffered ([`EventTables::rows`]), so a caller writing row groups holds one group at a time.

use polars::prelude::*;

use lockcast_parsers::event::{Event, Source};
use lockcast_parsers::payload::{self, CollapseEvent};
use lockcast_parsers::{Diagnostic, LineError, Location};

use super::schema::{event_common as ec, events as ev, fields as fl, samples as sa, typed as ty};
use crate::error::{Error, Result};

/// The tables built from event traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventTable {
    /// Every event, payload raw.
    Events,
    /// `key=value` pairs of events without a typed table.
    Fields,
    /// perf script records with call chains.
    Samples,
    /// `lock:contention_begin`.
    ContentionBegin,
    /// `lock:contention_end`.
    ContentionEnd,
    /// `pagemap:mm_lru_insertion`.
    LruInsertion,
    /// `pagemap:mm_lru_activate`.
    LruActivate,
    /// `kmem:mm_page_alloc`.
    PageAlloc,
    /// `kmem:mm_page_free`.
    PageFree,
    /// `kmem:mm_page_free_batched`.
    PageFreeBatched,
    /// `huge_memory:mm_khugepaged_scan_pmd`.
    KhugepagedScanPmd,
    /// `huge_memory:mm_collapse_huge_page*`.
    CollapseHugePage,
    /// `vmscan:mm_vmscan_*`.
    Vmscan,
}

impl EventTable {
    /// Every event table, in the order they are written.
    pub const ALL: [EventTable; 13] = [
        EventTable::Events,
        EventTable::Fields,
        EventTable::Samples,
        EventTable::ContentionBegin,
        EventTable::ContentionEnd,
        EventTable::LruInsertion,
        EventTable::LruActivate,
        EventTable::PageAlloc,
        EventTable::PageFree,
        EventTable::PageFreeBatched,
        EventTable::KhugepagedScanPmd,
        EventTable::CollapseHugePage,
        EventTable::Vmscan,
    ];

    /// Table name (`--table NAME`, file stem in an output directory).
    pub fn name(self) -> &'static str {
        match self {
            EventTable::Events => ev::TABLE,
            EventTable::Fields => fl::TABLE,
            EventTable::Samples => sa::TABLE,
            EventTable::ContentionBegin => "contention_begin",
            EventTable::ContentionEnd => "contention_end",
            EventTable::LruInsertion => "lru_insertion",
            EventTable::LruActivate => "lru_activate",
            EventTable::PageAlloc => "page_alloc",
            EventTable::PageFree => "page_free",
            EventTable::PageFreeBatched => "page_free_batched",
            EventTable::KhugepagedScanPmd => "khugepaged_scan_pmd",
            EventTable::CollapseHugePage => "collapse_huge_page",
            EventTable::Vmscan => "vmscan",
        }
    }

    /// The table named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The typed table an event belongs to, from its name (and its system when printed: a
    /// function-tracer line named like a tracepoint is not that tracepoint).
    pub fn typed_for(e: &Event) -> Option<Self> {
        let (sys, t) = match e.name.as_str() {
            "contention_begin" => ("lock", EventTable::ContentionBegin),
            "contention_end" => ("lock", EventTable::ContentionEnd),
            "mm_lru_insertion" => ("pagemap", EventTable::LruInsertion),
            "mm_lru_activate" => ("pagemap", EventTable::LruActivate),
            "mm_page_alloc" => ("kmem", EventTable::PageAlloc),
            "mm_page_free" => ("kmem", EventTable::PageFree),
            "mm_page_free_batched" => ("kmem", EventTable::PageFreeBatched),
            "mm_khugepaged_scan_pmd" => ("huge_memory", EventTable::KhugepagedScanPmd),
            "mm_collapse_huge_page"
            | "mm_collapse_huge_page_isolate"
            | "mm_collapse_huge_page_swapin" => ("huge_memory", EventTable::CollapseHugePage),
            n if n.starts_with("mm_vmscan_") => ("vmscan", EventTable::Vmscan),
            _ => return None,
        };
        match e.system.as_deref() {
            Some(s) if s != sys => None,
            _ => Some(t),
        }
    }
}

/// A string column builder (no per-row allocation: values are copied into arrow buffers).
struct Str(StringChunkedBuilder);

impl Str {
    fn new(name: &str) -> Self {
        Str(StringChunkedBuilder::new(name.into(), 1024))
    }
    fn push(&mut self, v: &str) {
        self.0.append_value(v);
    }
    fn opt(&mut self, v: Option<&str>) {
        self.0.append_option(v);
    }
    fn col(self) -> Column {
        self.0.finish().into_series().into()
    }
}

fn col<T>(name: &str, v: Vec<T>) -> Column
where
    Series: NamedFrom<Vec<T>, [T]>,
{
    Series::new(name.into(), v).into()
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
    fn push(&mut self, e: &Event) {
        self.line.push(e.line);
        self.ts.push(e.ts_ns);
        self.cpu.push(e.cpu);
        self.comm.push(&e.comm);
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
            self.comm.col(),
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

// One value per wanted table per piece: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
enum TypedCols {
    Begin {
        lock: Str,
        flags: Str,
    },
    End {
        lock: Str,
        ret: Vec<i32>,
    },
    LruInsertion {
        folio: Str,
        pfn: Vec<u64>,
        lru: Vec<i32>,
        flags: Str,
    },
    LruActivate {
        folio: Str,
        pfn: Vec<u64>,
    },
    PageAlloc {
        page: Str,
        pfn: Vec<u64>,
        order: Vec<u32>,
        migratetype: Vec<i32>,
        gfp: Str,
    },
    PageFree {
        page: Str,
        pfn: Vec<u64>,
        order: Vec<u32>,
    },
    Scan {
        mm: Str,
        scan_pfn: Vec<u64>,
        writable: Vec<Option<i32>>,
        referenced: Vec<i32>,
        none_or_zero: Vec<i32>,
        status: Str,
        unmapped: Vec<i32>,
    },
    Collapse {
        event: Str,
        mm: Str,
        scan_pfn: Vec<Option<u64>>,
        isolated: Vec<Option<i32>>,
        swapped_in: Vec<Option<i32>>,
        none_or_zero: Vec<Option<i32>>,
        referenced: Vec<Option<i32>>,
        writable: Vec<Option<i32>>,
        ret: Vec<Option<i32>>,
        status: Str,
    },
    Vmscan {
        event: Str,
        nid: Vec<Option<i32>>,
        order: Vec<Option<i32>>,
        gfp: Str,
        classzone: Vec<Option<i32>>,
        nr_requested: Vec<Option<u64>>,
        nr_scanned: Vec<Option<u64>>,
        nr_skipped: Vec<Option<u64>>,
        nr_taken: Vec<Option<u64>>,
        nr_reclaimed: Vec<Option<u64>>,
        priority: Vec<Option<i32>>,
        lru: Str,
        flags: Str,
        other: ListStringChunkedBuilder,
    },
}

impl TypedCols {
    fn new(t: EventTable) -> Option<Self> {
        Some(match t {
            EventTable::ContentionBegin => TypedCols::Begin {
                lock: Str::new(ty::LOCK),
                flags: Str::new(ty::FLAGS),
            },
            EventTable::ContentionEnd => TypedCols::End {
                lock: Str::new(ty::LOCK),
                ret: Vec::new(),
            },
            EventTable::LruInsertion => TypedCols::LruInsertion {
                folio: Str::new(ty::FOLIO),
                pfn: Vec::new(),
                lru: Vec::new(),
                flags: Str::new(ty::FLAGS),
            },
            EventTable::LruActivate => TypedCols::LruActivate {
                folio: Str::new(ty::FOLIO),
                pfn: Vec::new(),
            },
            EventTable::PageAlloc => TypedCols::PageAlloc {
                page: Str::new(ty::PAGE),
                pfn: Vec::new(),
                order: Vec::new(),
                migratetype: Vec::new(),
                gfp: Str::new(ty::GFP_FLAGS),
            },
            EventTable::PageFree | EventTable::PageFreeBatched => TypedCols::PageFree {
                page: Str::new(ty::PAGE),
                pfn: Vec::new(),
                order: Vec::new(),
            },
            EventTable::KhugepagedScanPmd => TypedCols::Scan {
                mm: Str::new(ty::MM),
                scan_pfn: Vec::new(),
                writable: Vec::new(),
                referenced: Vec::new(),
                none_or_zero: Vec::new(),
                status: Str::new(ty::STATUS),
                unmapped: Vec::new(),
            },
            EventTable::CollapseHugePage => TypedCols::Collapse {
                event: Str::new(ty::EVENT),
                mm: Str::new(ty::MM),
                scan_pfn: Vec::new(),
                isolated: Vec::new(),
                swapped_in: Vec::new(),
                none_or_zero: Vec::new(),
                referenced: Vec::new(),
                writable: Vec::new(),
                ret: Vec::new(),
                status: Str::new(ty::STATUS),
            },
            EventTable::Vmscan => TypedCols::Vmscan {
                event: Str::new(ty::EVENT),
                nid: Vec::new(),
                order: Vec::new(),
                gfp: Str::new(ty::GFP_FLAGS),
                classzone: Vec::new(),
                nr_requested: Vec::new(),
                nr_scanned: Vec::new(),
                nr_skipped: Vec::new(),
                nr_taken: Vec::new(),
                nr_reclaimed: Vec::new(),
                priority: Vec::new(),
                lru: Str::new(ty::LRU),
                flags: Str::new(ty::FLAGS),
                other: ListStringChunkedBuilder::new(ty::OTHER.into(), 1024, 1024),
            },
            EventTable::Events | EventTable::Fields | EventTable::Samples => return None,
        })
    }

    /// Parse `e`'s payload into the columns; nothing is pushed when it fails.
    fn push(&mut self, e: &Event) -> Result<(), LineError> {
        let p = e.payload.as_str();
        match self {
            TypedCols::Begin { lock, flags } => {
                let b = payload::contention_begin(p)?;
                lock.push(&b.lock);
                flags.push(&b.flags);
            }
            TypedCols::End { lock, ret } => {
                let x = payload::contention_end(p)?;
                lock.push(&x.lock);
                ret.push(x.ret);
            }
            TypedCols::LruInsertion {
                folio,
                pfn,
                lru,
                flags,
            } => {
                let x = payload::lru_insertion(p)?;
                folio.push(&x.folio);
                pfn.push(x.pfn);
                lru.push(x.lru);
                flags.push(&x.flags);
            }
            TypedCols::LruActivate { folio, pfn } => {
                let x = payload::lru_activate(p)?;
                folio.push(&x.folio);
                pfn.push(x.pfn);
            }
            TypedCols::PageAlloc {
                page,
                pfn,
                order,
                migratetype,
                gfp,
            } => {
                let x = payload::page_alloc(p)?;
                page.push(&x.page);
                pfn.push(x.pfn);
                order.push(x.order);
                migratetype.push(x.migratetype);
                gfp.push(&x.gfp_flags);
            }
            TypedCols::PageFree { page, pfn, order } => {
                let x = payload::page_free(p)?;
                page.push(&x.page);
                pfn.push(x.pfn);
                order.push(x.order);
            }
            TypedCols::Scan {
                mm,
                scan_pfn,
                writable,
                referenced,
                none_or_zero,
                status,
                unmapped,
            } => {
                let x = payload::khugepaged_scan_pmd(p)?;
                mm.push(&x.mm);
                scan_pfn.push(x.scan_pfn);
                writable.push(x.writable);
                referenced.push(x.referenced);
                none_or_zero.push(x.none_or_zero);
                status.push(&x.status);
                unmapped.push(x.unmapped);
            }
            TypedCols::Collapse {
                event,
                mm,
                scan_pfn,
                isolated,
                swapped_in,
                none_or_zero,
                referenced,
                writable,
                ret,
                status,
            } => {
                // each event fills the columns its TP_printk prints, the others are null
                let x = payload::collapse_event(&e.name, p)?;
                event.push(&e.name);
                match x {
                    CollapseEvent::Collapse(c) => {
                        mm.push(&c.mm);
                        scan_pfn.push(None);
                        isolated.push(Some(c.isolated));
                        swapped_in.push(None);
                        none_or_zero.push(None);
                        referenced.push(None);
                        writable.push(None);
                        ret.push(None);
                        status.push(&c.status);
                    }
                    CollapseEvent::Isolate(i) => {
                        mm.opt(None);
                        scan_pfn.push(Some(i.scan_pfn));
                        isolated.push(None);
                        swapped_in.push(None);
                        none_or_zero.push(Some(i.none_or_zero));
                        referenced.push(Some(i.referenced));
                        writable.push(i.writable);
                        ret.push(None);
                        status.push(&i.status);
                    }
                    CollapseEvent::Swapin(s) => {
                        mm.push(&s.mm);
                        scan_pfn.push(None);
                        isolated.push(None);
                        swapped_in.push(Some(s.swapped_in));
                        none_or_zero.push(None);
                        referenced.push(Some(s.referenced));
                        writable.push(None);
                        ret.push(Some(s.ret));
                        status.opt(None);
                    }
                }
            }
            TypedCols::Vmscan {
                event,
                nid,
                order,
                gfp,
                classzone,
                nr_requested,
                nr_scanned,
                nr_skipped,
                nr_taken,
                nr_reclaimed,
                priority,
                lru,
                flags,
                other,
            } => {
                let x = payload::vmscan(p)?;
                event.push(&e.name);
                nid.push(x.nid);
                order.push(x.order);
                gfp.opt(x.gfp_flags.as_deref());
                classzone.push(x.classzone);
                nr_requested.push(x.nr_requested);
                nr_scanned.push(x.nr_scanned);
                nr_skipped.push(x.nr_skipped);
                nr_taken.push(x.nr_taken);
                nr_reclaimed.push(x.nr_reclaimed);
                priority.push(x.priority);
                lru.opt(x.lru.as_deref());
                flags.opt(x.flags.as_deref());
                let kv: Vec<String> = x.other.iter().map(|(k, v)| format!("{k}={v}")).collect();
                other.append_values_iter(kv.iter().map(String::as_str));
            }
        }
        Ok(())
    }

    fn columns(self) -> Vec<Column> {
        match self {
            TypedCols::Begin { lock, flags } => vec![lock.col(), flags.col()],
            TypedCols::End { lock, ret } => vec![lock.col(), col(ty::RET, ret)],
            TypedCols::LruInsertion {
                folio,
                pfn,
                lru,
                flags,
            } => vec![
                folio.col(),
                col(ty::PFN, pfn),
                col(ty::LRU, lru),
                flags.col(),
            ],
            TypedCols::LruActivate { folio, pfn } => vec![folio.col(), col(ty::PFN, pfn)],
            TypedCols::PageAlloc {
                page,
                pfn,
                order,
                migratetype,
                gfp,
            } => vec![
                page.col(),
                col(ty::PFN, pfn),
                col(ty::ORDER, order),
                col(ty::MIGRATETYPE, migratetype),
                gfp.col(),
            ],
            TypedCols::PageFree { page, pfn, order } => {
                vec![page.col(), col(ty::PFN, pfn), col(ty::ORDER, order)]
            }
            TypedCols::Scan {
                mm,
                scan_pfn,
                writable,
                referenced,
                none_or_zero,
                status,
                unmapped,
            } => vec![
                mm.col(),
                col(ty::SCAN_PFN, scan_pfn),
                col(ty::WRITABLE, writable),
                col(ty::REFERENCED, referenced),
                col(ty::NONE_OR_ZERO, none_or_zero),
                status.col(),
                col(ty::UNMAPPED, unmapped),
            ],
            TypedCols::Collapse {
                event,
                mm,
                scan_pfn,
                isolated,
                swapped_in,
                none_or_zero,
                referenced,
                writable,
                ret,
                status,
            } => vec![
                event.col(),
                mm.col(),
                col(ty::SCAN_PFN, scan_pfn),
                col(ty::ISOLATED, isolated),
                col(ty::SWAPPED_IN, swapped_in),
                col(ty::NONE_OR_ZERO, none_or_zero),
                col(ty::REFERENCED, referenced),
                col(ty::WRITABLE, writable),
                col(ty::RET, ret),
                status.col(),
            ],
            TypedCols::Vmscan {
                event,
                nid,
                order,
                gfp,
                classzone,
                nr_requested,
                nr_scanned,
                nr_skipped,
                nr_taken,
                nr_reclaimed,
                priority,
                lru,
                flags,
                mut other,
            } => vec![
                event.col(),
                col(ty::NID, nid),
                col(ty::ORDER, order),
                gfp.col(),
                col(ty::CLASSZONE, classzone),
                col(ty::NR_REQUESTED, nr_requested),
                col(ty::NR_SCANNED, nr_scanned),
                col(ty::NR_SKIPPED, nr_skipped),
                col(ty::NR_TAKEN, nr_taken),
                col(ty::NR_RECLAIMED, nr_reclaimed),
                col(ty::PRIORITY, priority),
                lru.col(),
                flags.col(),
                other.finish().into_series().into(),
            ],
        }
    }
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
    symbol: ListStringChunkedBuilder,
    offset: ListPrimitiveChunkedBuilder<UInt64Type>,
    dso: ListStringChunkedBuilder,
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
            symbol: ListStringChunkedBuilder::new(sa::STACK_SYMBOL.into(), 1024, 16 * 1024),
            offset: list_u64(sa::STACK_OFFSET),
            dso: ListStringChunkedBuilder::new(sa::STACK_DSO.into(), 1024, 16 * 1024),
        }
    }

    fn push(&mut self, e: &Event) {
        self.line.push(e.line);
        self.ts.push(e.ts_ns);
        self.cpu.push(e.cpu);
        self.comm.push(&e.comm);
        self.pid.push(e.pid.map(i64::from));
        self.tid.push(i64::from(e.tid));
        match &e.system {
            Some(s) => self.event.push(&format!("{s}:{}", e.name)),
            None => self.event.push(&e.name),
        }
        self.period.push(e.period);
        let cc = &e.callchain;
        self.addr.append_iter(cc.iter().map(|f| Some(f.addr)));
        self.symbol
            .append_values_iter(cc.iter().map(|f| f.symbol.as_str()));
        self.offset.append_iter(cc.iter().map(|f| f.offset));
        self.dso
            .append_trusted_len_iter(cc.iter().map(|f| f.dso.as_deref()));
    }

    fn columns(mut self, source: &str) -> Vec<Column> {
        let n = self.line.len();
        vec![
            Column::new_scalar(ec::SOURCE.into(), Scalar::from(PlSmallStr::from(source)), n),
            col(ec::LINE, self.line),
            col(sa::TIME_NS, self.ts),
            col(ec::CPU, self.cpu),
            self.comm.col(),
            col(sa::PID, self.pid),
            col(sa::TID, self.tid),
            self.event.col(),
            col(ev::PERIOD, self.period),
            self.addr.finish().into_series().into(),
            self.symbol.finish().into_series().into(),
            self.offset.finish().into_series().into(),
            self.dso.finish().into_series().into(),
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
        self.counts.events += 1;
        if let Some((c, x)) = self.common.as_mut() {
            c.push(e);
            x.irq_flags.opt(e.irq_flags.as_deref());
            x.system.opt(e.system.as_deref());
            x.event.push(&e.name);
            x.period.push(e.period);
            x.payload.push(&e.payload);
            self.rows += 1;
        }
        if e.source == Source::PerfScript {
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
                    for (k, v) in payload::key_values(&e.payload) {
                        if k.is_empty() {
                            continue;
                        }
                        f.line.push(e.line);
                        f.event.push(&e.name);
                        f.key.push(k);
                        f.value.push(v);
                        self.rows += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn bad_payload(&mut self, e: &Event, kind: LineError) -> Result<()> {
        let d = Diagnostic {
            location: Location {
                line: e.line,
                col: 1,
            },
            kind,
            line_text: lockcast_parsers::error::cut(&format!("{}: {}", e.name, e.payload), 120),
        };
        if !self.lenient {
            let format = match e.source {
                Source::Ftrace => "ftrace",
                Source::TraceCmd => "trace-cmd",
                Source::PerfScript => "perf script",
            };
            return Err(Error::Parse {
                path: self.source.clone(),
                source: lockcast_parsers::Error::malformed(format, d),
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
                x.irq_flags.col(),
                x.system.col(),
                x.event.col(),
                col(ev::PERIOD, x.period),
                x.payload.col(),
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
                f.event.col(),
                f.key.col(),
                f.value.col(),
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
