//! Table and column names of every frame lockcast writes. The README's "Tables" section
//! documents them; `tests/it` checks the produced frames against these lists.
//!
//! Integer columns: counts and waits are `UInt64` (perf prints `unsigned long long`, and real
//! captures hold garbage maxima near `ULLONG_MAX` that do not fit `Int64`); pids are `Int64`.
//! All times are integer nanoseconds (`*_ns`), never floats.

/// `lock_stats`: one row per row of a `perf lock report` / `contention` / `info` table.
pub mod lock_stats {
    /// Table name (file stem when written to a directory).
    pub const TABLE: &str = "lock_stats";
    /// Input file as given (`-` for stdin).
    pub const SOURCE: &str = "source";
    /// 1-based table index within the file (`file#N`).
    pub const BLOCK: &str = "block";
    /// Nearest preceding prose line (`w/o patch:`), or null.
    pub const LABEL: &str = "label";
    /// 1-based line of the row in the input.
    pub const LINE: &str = "line";
    /// Row kind: `lock`, `caller`, `task`, `address`, `cgroup`, `info_thread`, `info_map`.
    pub const KIND: &str = "kind";
    /// Lock name (report `Name`); null when perf printed it blank.
    pub const NAME: &str = "name";
    /// perf cut the name to 16 characters + `...`.
    pub const NAME_TRUNCATED: &str = "name_truncated";
    /// Contention caller `sym+0xoff`.
    pub const CALLER: &str = "caller";
    /// Lock type (`spinlock`, `rwlock:R`, ...).
    pub const TYPE: &str = "type";
    /// Task id (`-t`).
    pub const PID: &str = "pid";
    /// Task name (`-t`).
    pub const COMM: &str = "comm";
    /// Lock address as `0x...` hex text (`-l`, `info -m`).
    pub const ADDRESS: &str = "address";
    /// Lock symbol (`-l`, `info -m`).
    pub const SYMBOL: &str = "symbol";
    /// Cgroup path (`--lock-cgroup`).
    pub const CGROUP: &str = "cgroup";
    /// Acquisitions (report only).
    pub const ACQUIRED: &str = "acquired";
    /// Contended acquisitions.
    pub const CONTENDED: &str = "contended";
    /// Average wait, ns.
    pub const AVG_WAIT_NS: &str = "avg_wait_ns";
    /// Total wait, ns.
    pub const TOTAL_WAIT_NS: &str = "total_wait_ns";
    /// Maximum wait, ns.
    pub const MAX_WAIT_NS: &str = "max_wait_ns";
    /// Minimum wait, ns.
    pub const MIN_WAIT_NS: &str = "min_wait_ns";
    /// Rounding half-width of `avg_wait_ns` as printed (e.g. 5 for `30.07 us`).
    pub const AVG_WAIT_ERR_NS: &str = "avg_wait_err_ns";
    /// Rounding half-width of `total_wait_ns` (e.g. 300000000 for `10.73 m`).
    pub const TOTAL_WAIT_ERR_NS: &str = "total_wait_err_ns";
    /// Rounding half-width of `max_wait_ns`.
    pub const MAX_WAIT_ERR_NS: &str = "max_wait_err_ns";
    /// Rounding half-width of `min_wait_ns`.
    pub const MIN_WAIT_ERR_NS: &str = "min_wait_err_ns";
    /// `-v` call stack, innermost first, as `sym+0xoff` (list; joined by `;` in CSV).
    pub const STACK: &str = "stack";
    /// `/proc/lock_stat` read/write state of the row: `W`, `R` (the `-W:`/`-R:` suffix), or
    /// null for a class taken one way only and for every other tool.
    pub const RW: &str = "rw";
    /// `/proc/lock_stat` `con-bounces`: contentions that involved cross-CPU data.
    pub const CON_BOUNCES: &str = "con_bounces";
    /// `/proc/lock_stat` `acq-bounces`: acquisitions that involved cross-CPU data.
    pub const ACQ_BOUNCES: &str = "acq_bounces";
    /// Shortest hold, ns (`holdtime-min`); null where the tool does not measure holds (perf lock).
    pub const HOLD_MIN_NS: &str = "hold_min_ns";
    /// Longest hold, ns (`holdtime-max`).
    pub const HOLD_MAX_NS: &str = "hold_max_ns";
    /// Total hold time, ns (`holdtime-total`).
    pub const HOLD_TOTAL_NS: &str = "hold_total_ns";
    /// Average hold, ns (`holdtime-avg`, lock_stat 0.4).
    pub const HOLD_AVG_NS: &str = "hold_avg_ns";
    /// Rounding half-width of `hold_total_ns` (5 for lock_stat's `%.2f` µs).
    pub const HOLD_TOTAL_ERR_NS: &str = "hold_total_err_ns";
    /// `/proc/lock_stat` contention points (call sites that waited), `sym+0xoff/0xlen` (list).
    pub const CONTENTION_POINTS: &str = "contention_points";
    /// Contentions counted at each of `contention_points` (list, same order).
    pub const CONTENTION_POINT_COUNTS: &str = "contention_point_counts";
    /// `/proc/lock_stat` contending points (the holders the waiters contended with) (list).
    pub const CONTENDING_POINTS: &str = "contending_points";
    /// Contentions counted at each of `contending_points` (list, same order).
    pub const CONTENDING_POINT_COUNTS: &str = "contending_point_counts";

    /// Every column, in order.
    pub const COLUMNS: [&str; 37] = [
        SOURCE,
        BLOCK,
        LABEL,
        LINE,
        KIND,
        NAME,
        NAME_TRUNCATED,
        CALLER,
        TYPE,
        PID,
        COMM,
        ADDRESS,
        SYMBOL,
        CGROUP,
        ACQUIRED,
        CONTENDED,
        AVG_WAIT_NS,
        TOTAL_WAIT_NS,
        MAX_WAIT_NS,
        MIN_WAIT_NS,
        AVG_WAIT_ERR_NS,
        TOTAL_WAIT_ERR_NS,
        MAX_WAIT_ERR_NS,
        MIN_WAIT_ERR_NS,
        STACK,
        RW,
        CON_BOUNCES,
        ACQ_BOUNCES,
        HOLD_MIN_NS,
        HOLD_MAX_NS,
        HOLD_TOTAL_NS,
        HOLD_AVG_NS,
        HOLD_TOTAL_ERR_NS,
        CONTENTION_POINTS,
        CONTENTION_POINT_COUNTS,
        CONTENDING_POINTS,
        CONTENDING_POINT_COUNTS,
    ];
}

/// `contention`: one row per traced wait (a `contention_begin` paired with its `contention_end`).
pub mod contention {
    /// Table name.
    pub const TABLE: &str = "contention";
    /// Input file.
    pub const SOURCE: &str = "source";
    /// Line of the begin event.
    pub const BEGIN_LINE: &str = "begin_line";
    /// CPU of the begin event.
    pub const CPU: &str = "cpu";
    /// Waiting task id.
    pub const TID: &str = "tid";
    /// Waiting task name.
    pub const COMM: &str = "comm";
    /// Lock address as printed (hashed in ftrace, `0x...` in perf script / trace-cmd).
    pub const LOCK: &str = "lock";
    /// Flag names from `contention_begin` (`SPIN`, `READ`, ...).
    pub const FLAGS: &str = "flags";
    /// Lock type as perf names it from the flags (`spinlock`, `rwsem:R`, ...).
    pub const TYPE: &str = "type";
    /// Begin time, ns.
    pub const BEGIN_NS: &str = "begin_ns";
    /// End (grant) time, ns.
    pub const END_NS: &str = "end_ns";
    /// end_ns - begin_ns.
    pub const WAIT_NS: &str = "wait_ns";
    /// `ret=` of the end event.
    pub const RET: &str = "ret";
    /// Caller as perf names it (skip 3 frames, then lock functions), when there is a call chain.
    pub const CALLER: &str = "caller";
    /// Call chain of the begin event, innermost first, `sym+0xoff`.
    pub const STACK: &str = "stack";
}

/// Columns every per-event table starts with (`events`, the typed tables): where the event is
/// and who ran it. `pid` is the kernel's task id (ftrace `PID`, perf script `tid`), `tgid` its
/// thread group (ftrace `(TGID)` column, perf script `pid/`), null when not printed.
pub mod event_common {
    /// Input file as given.
    pub const SOURCE: &str = "source";
    /// 1-based line of the event's first line.
    pub const LINE: &str = "line";
    /// Timestamp, integer ns (null when the format printed none).
    pub const TIMESTAMP_NS: &str = "timestamp_ns";
    /// CPU.
    pub const CPU: &str = "cpu";
    /// Task name as printed.
    pub const COMM: &str = "comm";
    /// Task (thread) id.
    pub const PID: &str = "pid";
    /// Thread group id.
    pub const TGID: &str = "tgid";
}

/// `events`: one row per event of any kind, payload raw.
pub mod events {
    /// Table name.
    pub const TABLE: &str = "events";
    /// Latency/irq flags as printed (`d..2.`); null for perf script.
    pub const IRQ_FLAGS: &str = "irq_flags";
    /// Event system (`lock`), when printed (perf script, not ftrace).
    pub const SYSTEM: &str = "system";
    /// Event name without system (`contention_begin`, `cpu-clock`).
    pub const EVENT: &str = "event";
    /// Sample period (perf script), when printed.
    pub const PERIOD: &str = "period";
    /// Payload text as printed (empty for samples).
    pub const PAYLOAD: &str = "payload";
}

/// `fields`: one row per `key=value` pair of events that have no typed table.
pub mod fields {
    /// Table name.
    pub const TABLE: &str = "fields";
    /// Event name.
    pub const EVENT: &str = "event";
    /// Key.
    pub const KEY: &str = "key";
    /// Value as printed.
    pub const VALUE: &str = "value";
}

/// `samples`: one row per perf script record, with its call chain as parallel lists.
pub mod samples {
    /// Table name.
    pub const TABLE: &str = "samples";
    /// Process id (`pid/` in `pid/tid`), null when perf printed only the tid.
    pub const PID: &str = "pid";
    /// Thread id.
    pub const TID: &str = "tid";
    /// Timestamp, integer ns.
    pub const TIME_NS: &str = "time_ns";
    /// Event as printed, system included (`cpu-clock`, `lock:contention_begin`, `cycles:u`).
    pub const EVENT: &str = "event";
    /// Frame addresses, innermost first.
    pub const STACK_ADDRESS: &str = "stack_address";
    /// Frame symbols (`[unknown]` kept).
    pub const STACK_SYMBOL: &str = "stack_symbol";
    /// Frame offsets into the symbol (null items when not printed).
    pub const STACK_OFFSET: &str = "stack_offset";
    /// Frame DSOs (null items when not printed).
    pub const STACK_DSO: &str = "stack_dso";
}

/// Payload columns of the typed per-event tables (after the [`event_common`] columns). Which
/// table has which, in order, is declared once per table in `frames/events.rs`
/// (`EventTable::payload_columns`).
pub mod typed {
    /// Lock address as printed.
    pub const LOCK: &str = "lock";
    /// Flags as printed.
    pub const FLAGS: &str = "flags";
    /// Return value.
    pub const RET: &str = "ret";
    /// Folio pointer as printed.
    pub const FOLIO: &str = "folio";
    /// Page frame number.
    pub const PFN: &str = "pfn";
    /// LRU list (number in `lru_insertion`, name in `vmscan`).
    pub const LRU: &str = "lru";
    /// Page pointer as printed.
    pub const PAGE: &str = "page";
    /// Allocation order.
    pub const ORDER: &str = "order";
    /// Migrate type.
    pub const MIGRATETYPE: &str = "migratetype";
    /// GFP flags as printed.
    pub const GFP_FLAGS: &str = "gfp_flags";
    /// Event name (tables holding a family of events).
    pub const EVENT: &str = "event";
    /// `mm_struct` pointer as printed.
    pub const MM: &str = "mm";
    /// Scanned pfn.
    pub const SCAN_PFN: &str = "scan_pfn";
    /// Writable pte seen.
    pub const WRITABLE: &str = "writable";
    /// Referenced ptes.
    pub const REFERENCED: &str = "referenced";
    /// None or zero ptes.
    pub const NONE_OR_ZERO: &str = "none_or_zero";
    /// Result name.
    pub const STATUS: &str = "status";
    /// Swapped-out ptes.
    pub const UNMAPPED: &str = "unmapped";
    /// Pages isolated.
    pub const ISOLATED: &str = "isolated";
    /// Pages swapped in.
    pub const SWAPPED_IN: &str = "swapped_in";
    /// NUMA node.
    pub const NID: &str = "nid";
    /// Zone index.
    pub const CLASSZONE: &str = "classzone";
    /// Pages asked for.
    pub const NR_REQUESTED: &str = "nr_requested";
    /// Pages scanned.
    pub const NR_SCANNED: &str = "nr_scanned";
    /// Pages skipped.
    pub const NR_SKIPPED: &str = "nr_skipped";
    /// Pages taken.
    pub const NR_TAKEN: &str = "nr_taken";
    /// Pages reclaimed.
    pub const NR_RECLAIMED: &str = "nr_reclaimed";
    /// Reclaim priority.
    pub const PRIORITY: &str = "priority";
    /// Other `key=value` pairs, as `key=value` strings.
    pub const OTHER: &str = "other";
}

/// `callgraph`: `perf report --stdio` entries and their call-graph nodes, one row each.
pub mod callgraph {
    /// Table name.
    pub const TABLE: &str = "callgraph";
    /// Input file.
    pub const SOURCE: &str = "source";
    /// Line of this row (the entry line, or the node's line).
    pub const LINE: &str = "line";
    /// Line of the histogram entry the row belongs to.
    pub const ENTRY_LINE: &str = "entry_line";
    /// `# Samples: ... of event 'x'` of the block.
    pub const EVENT: &str = "event";
    /// Command column.
    pub const COMMAND: &str = "command";
    /// Shared Object column.
    pub const DSO: &str = "dso";
    /// Symbol column (without the `[k]` marker).
    pub const SYMBOL: &str = "symbol";
    /// The `[k]` marker letter.
    pub const SYM_KIND: &str = "sym_kind";
    /// Children %.
    pub const CHILDREN_PCT: &str = "children_pct";
    /// Self % (Overhead with --no-children).
    pub const SELF_PCT: &str = "self_pct";
    /// Node index within the entry's graph (null on the entry's own row).
    pub const NODE: &str = "node";
    /// Parent node index (null for roots and entry rows).
    pub const PARENT: &str = "parent";
    /// Printed depth of the node.
    pub const DEPTH: &str = "depth";
    /// The `--NN.NN%--` value of a branch.
    pub const BRANCH_PCT: &str = "branch_pct";
    /// The node's frame as printed.
    pub const FRAME: &str = "frame";
    /// Frames from the graph root down to this node (empty on entry rows).
    pub const PATH: &str = "path";
}
