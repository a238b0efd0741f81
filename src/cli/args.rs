//! clap structs. They convert to library option structs in `commands`; the library never sees
//! clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Inputs: a path, `-` for stdin, gzip or zstd compressed or not (detected from the bytes), and
`path#N` for the N-th table of a file holding several (a mail with `w/o patch:` and `w/ patch:`
tables, say).

Exit codes:
  0  success
  1  internal error
  2  usage error (bad options)
  3  bad input: unknown format, malformed line (file:line:col is printed), missing table
  4  I/O error: a file could not be read or written, a gzip/zstd stream damaged or cut short
On error nothing is written: outputs go to a temporary file renamed into place when complete.
--lenient skips malformed lines and prints how many (each skipped line costs at most its own
row or event); lines over 1 MiB are malformed lines, never buffered.

Examples:
  lockcast parse fixtures/captures/micro-16K-r1/contention.txt
  perf lock contention -i perf.data 2>&1 | lockcast report -
  lockcast parse mail.txt --to parquet -o out/lock_stats.parquet
  lockcast diff seed.txt#1 seed.txt#2
  lockcast demo";

/// Analyze Linux kernel lock-contention captures: perf lock tables, ftrace, trace-cmd and perf
/// script text into tables, summaries and base-vs-patched comparisons.
#[derive(Debug, Parser)]
#[command(name = "lockcast", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse captures into tables; print what was found, or write CSV / Parquet / JSON.
    #[command(after_help = "Examples:
  lockcast parse fixtures/captures/micro-16K-r1/contention.txt
  lockcast parse a.txt b.txt.gz --to csv -o out/lock_stats.csv
  lockcast parse trace.txt --table events,lru_insertion -o out/
  lockcast parse perf-script.txt.zst --table samples --to parquet -o samples.parquet
  lockcast parse r*/script.txt.gz --table all --partition-by capture -o dataset/
  perf lock report 2>&1 | lockcast parse - --to json -o -")]
    Parse(ParseArgs),
    /// Summarize a capture by lock, caller, thread or type (per table).
    #[command(after_help = "Examples:
  lockcast report fixtures/captures/micro-16K-r1/contention.txt
  lockcast report capture.txt --by type --top 5 --json")]
    Report(ReportArgs),
    /// Compare a base and a patched capture: matched rows, deltas, reduction ratios.
    #[command(after_help = "Examples:
  lockcast diff base/contention.txt patched/contention.txt
  lockcast diff mail.txt#1 mail.txt#2 --json

Ratios are base / patched (8.11x = the patch cut it 8.11-fold). Rows are matched on name,
caller+type, comm, symbol or cgroup; repeated and blank keys are paired by rank in perf's sort
order, and the `match` column says which rows were paired that way.")]
    Diff(DiffArgs),
    /// Run the whole job on the bundled fixtures and write everything to an output folder.
    Demo(DemoArgs),
    /// Draw a chart (PNG or SVG): ab, waits, timeline, whatif.
    #[command(after_help = super::plot::AFTER_HELP)]
    Plot(super::plot::PlotArgs),
    /// Predict a patch's lru_lock contention by replaying a baseline capture through its policy.
    #[command(after_help = WHATIF_HELP)]
    Whatif(WhatifArgs),
    /// Check a prediction: replay BASE through POLICY and compare with what AFTER measured.
    #[command(after_help = VALIDATE_HELP)]
    Validate(ValidateArgs),
}

const WHATIF_HELP: &str = "\
Policies (parameters with --set key=value):
  baseline     no change (replays the capture; checks the model against it)
  lru-cache    RFC v3 lru cache for smaller large folios: max_cached_pages=31 batch_folio_cap=31
               batch_page_cap=31 drain_rule=after-add|before-add (the interval covers both rules)
  folio-size   the same workload at another mTHP size: folio_kb=N, and time_scale=X or
               target_duration_ns=N (untraced run time at the target size; default scale 1)
  fbatch-drain Hugh Dickins' mm/fbatch series (batched folios keep PG_lru, drains go):
               dead_on_batch_takes_lock=true (as posted: a folio discarded while still on a
               per-CPU batch takes lru_lock in __page_cache_release at unmap) | false (with the
               lru_add_del_folio() fix); removed_sites=all|none|SITE,... (all = every drain site
               but kept_sites, default page_alloc_cpu_dead,lru_cache_disable,compact_nodes,
               proactive_compact_node,sysctl_compaction_handler,lru_add_drain_per_cpu);
               remove_unknown_sites=false (explicit drains with no call chain);
               baseline_prefree=false (true is refused: a pre-free kernel hides dead folios)
  dead-prefree JP Kobryn's pre-free of dead folios at drain time (the fbatch report's baseline)
  fbatch-drain and dead-prefree need to know when folios die: record
  syscalls:sys_enter_madvise and syscalls:sys_exit_madvise too. Drain sites come from call chains
  on pagemap:mm_lru_insertion (perf record -g); without them explicit drains have no site and
  are kept unless remove_unknown_sites=true. The text report's \"by path\" table splits waits
  into folio_batch_move_lru, the __page_cache_release after a drain, and the one at unmap, as
  perf lock contention's caller rows (needs -g on lock:contention_begin).
  fixtures/capture-fbatch.sh records all of it at low overhead (-g with call-graph=no on the
  per-folio events).

The capture: an event trace with nanosecond timestamps of lock:contention_begin,
lock:contention_end, pagemap:mm_lru_insertion, kmem:mm_page_alloc and kmem:mm_page_free.
Low-overhead recipe (no call chains; -g stretches lock holds several-fold):
  perf record -m 4096 -e lock:contention_begin -e lock:contention_end \\
      -e pagemap:mm_lru_insertion -e kmem:mm_page_alloc -e kmem:mm_page_free -- WORKLOAD
  perf script --ns > capture.txt        (or trace-cmd report -t; raw tracefs text is µs only)
fixtures/capture-replay.sh does this and writes a `meta` file beside the capture with the
untraced run time and the spinlock slowpath (paravirt or not) that the replay reads.

A perf lock table (report/contention text) instead of a trace gets the closed-form model:
  --set folio_kb=16 --set cpus=20 [--set acquisitions=N] [--set s1_ns=100] [--set f=0.9]

Examples:
  lockcast whatif lru-cache fixtures/replay/micro-16K-r1/script-ns.txt.gz
  lockcast whatif lru-cache capture.txt --set drain_rule=before-add --json
  lockcast whatif folio-size fixtures/replay/micro-16K-r1/script-ns.txt.gz --set folio_kb=4
  lockcast whatif lru-cache seed.txt#1 --set folio_kb=16 --set cpus=20
  lockcast whatif fbatch-drain fixtures/fbatch/churn-4K-r1/script-ns.txt.gz
  lockcast whatif fbatch-drain fixtures/fbatch/churn-4K-r1/script-ns.txt.gz --set dead_on_batch_takes_lock=false
  lockcast whatif dead-prefree fixtures/fbatch/churn-4K-r1/script-ns.txt.gz

What-ifs of patches that remove work (not lock timing): CAPTURE is a directory written by
fixtures/capture-lazyfree.sh.
  lazyfree-thp         reclaim of PMD-mapped MADV_FREE THPs discarded whole instead of split.
                       Needs: samples.txt[.gz] (perf record -g -k CLOCK_MONOTONIC -e cpu-clock
                       of the reclaim, perf script --ns), vmstat-before.txt / vmstat-after.txt
                       (/proc/vmstat around it: thp_split_pmd, pglazyfreed), workload.txt
                       (reclaim_ns=, and the MADV_DONTNEED calibration: dontneed_ns=,
                       anon_huge_kb_before_dontneed=). --set c_discard_ns=N c_split_ns=N
                       c_pte_unmap_ns=N override the calibrated costs.
  khugepaged-lazyfree  khugepaged skips clean lazyfree ranges (page_lazyfree).
                       Needs: events.txt[.gz] (perf record -a of huge_memory:mm_khugepaged_scan_pmd,
                       huge_memory:mm_collapse_huge_page, huge_memory:mm_collapse_huge_page_isolate,
                       mmap_lock:mmap_lock_acquire_returned, syscalls:sys_enter_madvise; perf
                       script --ns), meta.txt (khugepaged_scan_sleep_millisecs=,
                       khugepaged_pages_to_scan=), workload.txt (task= pid= names, optional).
                       --set skip_progress=512|1 lazyfree_scan_ns=N
  lockcast whatif lazyfree-thp fixtures/lazyfree/reclaim-r1
  lockcast whatif khugepaged-lazyfree fixtures/lazyfree/khugepaged-r1 --json";

const VALIDATE_HELP: &str = "\
AFTER is a capture of the situation the policy describes (for folio-size: the same workload at
the target size; its meta file's untraced run time sets the time scale). Errors are
(predicted - measured) / measured.

Examples:
  lockcast validate folio-size fixtures/replay/micro-16K-r1/script-ns.txt.gz \\
      fixtures/replay/micro-4K-r1/script-ns.txt.gz
  lockcast validate baseline fixtures/replay/micro-16K-r2/script-ns.txt.gz \\
      fixtures/replay/micro-16K-r2/script-ns.txt.gz --json";

/// Observation rule of lock:contention_begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ObservationArg {
    /// Paravirt spinlocks (VM guests): every slowpath is traced.
    Paravirt,
    /// Native qspinlock: the first (pending-bit) waiter is not traced.
    BareMetal,
}

/// Options of the replay engine.
#[derive(Debug, Clone, Args)]
pub struct EngineOpts {
    /// Policy parameter (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Observation rule (default: from the capture's call chains or meta file).
    #[arg(long, value_enum)]
    pub observation: Option<ObservationArg>,
    /// Lock to treat as lru_lock, address as printed (default: detected).
    #[arg(long)]
    pub lock: Option<String>,
    /// Bootstrap replicates for the interval.
    #[arg(long, default_value_t = 200)]
    pub bootstrap: usize,
    /// Seed of the bootstrap (same seed, same interval).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Quantile of waiters' arrival offsets after the holder's insertion taken as the end of
    /// its hold (the collision window's edge; see the sensitivity table).
    #[arg(long, default_value_t = 0.975)]
    pub window_quantile: f64,
    /// Skip malformed lines (counted and reported).
    #[arg(long)]
    pub lenient: bool,
    /// Print JSON (same as --format json).
    #[arg(long)]
    pub json: bool,
    /// Output: table/text (the full report), markdown (the result table, for review tools),
    /// csv (raw values, times in ns), json.
    #[arg(long, value_enum, default_value_t = OutFormatArg::Table)]
    pub format: OutFormatArg,
}

/// `lockcast whatif`.
#[derive(Debug, Args)]
pub struct WhatifArgs {
    /// Policy: baseline, lru-cache, folio-size, fbatch-drain, dead-prefree, lazyfree-thp,
    /// khugepaged-lazyfree.
    pub policy: String,
    /// Baseline capture (event trace, or a perf lock table for the closed-form model).
    pub capture: String,
    #[command(flatten)]
    pub engine: EngineOpts,
}

/// `lockcast validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Policy.
    pub policy: String,
    /// Baseline capture.
    pub base: String,
    /// Capture of the situation the policy predicts.
    pub after: String,
    #[command(flatten)]
    pub engine: EngineOpts,
}

/// Input format override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Detect from the content.
    Auto,
    /// perf lock report / contention / info text.
    PerfLock,
    /// Raw ftrace text or trace-cmd report (contention_begin/end events become waits).
    Ftrace,
    /// perf script output (contention_begin/end events, with call chains for the caller).
    PerfScript,
    /// perf report --stdio (the `callgraph` table).
    PerfReport,
}

/// Output format of `report` and `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutFormatArg {
    /// Aligned text table for terminals.
    Table,
    /// GitHub-flavoured Markdown table, for web review tools.
    Markdown,
    /// perf lock's own column layout, to paste into a cover letter.
    Text,
    /// CSV with raw values (times in integer ns).
    Csv,
    /// JSON.
    Json,
}

impl OutFormatArg {
    /// `--json` is kept as a short form of `--format json`.
    pub fn resolve(self, json: bool) -> lockcast::output::formats::Format {
        use lockcast::output::formats::Format;
        match (json, self) {
            (true, _) | (_, OutFormatArg::Json) => Format::Json,
            (_, OutFormatArg::Table) => Format::Table,
            (_, OutFormatArg::Markdown) => Format::Markdown,
            (_, OutFormatArg::Text) => Format::Text,
            (_, OutFormatArg::Csv) => Format::Csv,
        }
    }
}

/// Output file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToArg {
    /// CSV (list columns joined with `;`).
    Csv,
    /// Parquet (zstd).
    Parquet,
    /// JSON array of objects.
    Json,
}

/// Options shared by every command that reads captures.
#[derive(Debug, Clone, Args)]
pub struct InputOpts {
    /// Input format (`--format` is the output format of report and diff).
    #[arg(long = "input-format", value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Skip malformed lines (they are counted and the first ones reported) instead of failing.
    #[arg(long)]
    pub lenient: bool,
}

/// `lockcast parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// Input files (`-` = stdin, `path#N` = N-th table).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub input: InputOpts,
    /// Output format (default: from the -o extension).
    #[arg(long, value_enum)]
    pub to: Option<ToArg>,
    /// Output file (`.csv`, `.parquet`, `.json`), or a directory to get one file per table.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Tables to build, comma-separated, or `all` (default: lock_stats). See README "Tables".
    #[arg(long, value_delimiter = ',', value_name = "TABLE")]
    pub table: Vec<String>,
    /// Write a hive-partitioned Parquet dataset under `-o DIR`, one partition per input.
    #[arg(long, value_enum)]
    pub partition_by: Option<PartitionArg>,
    /// Threads parsing event traces (default: every core).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Size of the pieces event traces are cut into for parallel parsing (tests use small ones).
    #[arg(long, hide = true, default_value_t = lockcast::ingest::PIECE_BYTES)]
    pub piece_bytes: usize,
}

/// Partition key for `--partition-by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PartitionArg {
    /// One partition per input file: `DIR/capture=<name>/part-0.parquet`.
    Capture,
}

/// Grouping for `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ByArg {
    /// Lock name / symbol.
    Lock,
    /// Contention caller.
    Caller,
    /// Task.
    Thread,
    /// Lock type.
    Type,
}

/// Sort key for `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortArg {
    /// Total wait.
    Total,
    /// Contended count.
    Contended,
}

/// `lockcast report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Input file (`-` = stdin, `path#N` = N-th table only).
    pub input_file: String,
    #[command(flatten)]
    pub input: InputOpts,
    /// Group rows by (default: the table's own key).
    #[arg(long, value_enum)]
    pub by: Option<ByArg>,
    /// Rows shown per table.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Sort key.
    #[arg(long, value_enum, default_value_t = SortArg::Total)]
    pub sort: SortArg,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = OutFormatArg::Table)]
    pub out_format: OutFormatArg,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
}

/// `lockcast diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Base capture (`path#N` picks a table).
    pub base: String,
    /// Patched capture (`path#N` picks a table).
    pub patched: String,
    #[command(flatten)]
    pub input: InputOpts,
    /// Rows shown (all rows are in json and csv).
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = OutFormatArg::Table)]
    pub out_format: OutFormatArg,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
}

/// `lockcast demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder with the bundled fixtures.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))]
    pub fixtures: PathBuf,
    /// Output folder.
    #[arg(long, short, default_value = "out/demo")]
    pub out: PathBuf,
}
