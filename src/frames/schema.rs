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

    /// Every column, in order.
    pub const COLUMNS: [&str; 25] = [
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
