//! clap structs. They convert to library option structs in `commands`; the library never sees
//! clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Inputs: a path, `-` for stdin, gzip or zstd compressed or not (detected from the bytes), and
`path#N` for the N-th table of a file holding several (a mail with `w/o patch:` and `w/ patch:`
tables, say). A gzip/zstd perf.data or one on stdin longer than 32 MiB (pipe mode, perf
record -o -, too) is decompressed into an unlinked temporary file in $TMPDIR (else /tmp) and
mapped, not held in memory (where /tmp is a tmpfs its pages are memory too: point TMPDIR at a
disk for large recordings).

Exit codes:
  0  success
  1  internal error
  2  usage error (bad options)
  3  bad input: unknown format, malformed line (file:line:col is printed), missing table
  4  I/O error: a file could not be read or written, a gzip/zstd stream damaged or cut short,
     an input file shortened by another process while lockcast read it
  5  record: not root, perf or a tracepoint missing, perf or the workload failed
  130 record: interrupted (Ctrl-C), after putting back every setting it changed
On error nothing is written: outputs go to a temporary file renamed into place when complete
(`-o -`: an unlinked one in $TMPDIR, copied to stdout when complete).
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
  lockcast diff --base fixtures/captures/micro-16K-r{1,2,3}/contention.txt \\
                --patched fixtures/captures/micro-4K-r{1,2,3}/contention.txt

Ratios are base / patched (8.11x = the patch cut it 8.11-fold). Rows are matched on name,
caller+type, comm, symbol or cgroup; repeated and blank keys are paired by rank in perf's sort
order, and the `match` column says which rows were paired that way.

Repeated runs (--base B1 B2 ... --patched P1 P2 ...): rows are those of B1, found in every other
run by the same matching. Per row and metric: the median of each side with its min-max, the
ratio of medians, and its 95% interval from a seeded percentile bootstrap over runs (runs
resampled with replacement on each side). With 3 runs per side that interval is exactly
[base min / patched max, base max / patched min]. Verdict:
  reduction   the whole interval is above 1 and the patched max is below the base min
  regression  the whole interval is below 1 and the patched min is above the base max
  noise       anything else: within run-to-run noise
  too few runs  a side has the row in fewer than 2 runs")]
    Diff(DiffArgs),
    /// Run the whole job on the bundled fixtures and write everything to an output folder.
    Demo(DemoArgs),
    /// Draw a chart (PNG or SVG): ab, waits, timeline, whatif.
    #[command(after_help = PLOT_HELP)]
    Plot(PlotArgs),
    /// Predict a patch's lru_lock contention by replaying a baseline capture through its policy.
    #[command(after_help = whatif_help())]
    Whatif(WhatifArgs),
    /// Check a prediction: replay BASE through POLICY and compare with what AFTER measured.
    #[command(after_help = VALIDATE_HELP)]
    Validate(ValidateArgs),
    /// Export a capture for a trace viewer (perfetto: Chrome trace-event JSON).
    Export(ExportArgs),
    /// Record the capture a what-if policy needs (root): untraced run, events, lock-only run, meta.
    #[command(after_help = RECORD_HELP)]
    Record(RecordArgs),
    /// Draw a capture's traced waits as a flame graph (SVG or folded stacks); --diff base vs patched.
    #[command(after_help = super::flamegraph::HELP)]
    Flamegraph(super::flamegraph::FlamegraphArgs),
}

const RECORD_HELP: &str = "\
Runs the workload four or five times: `perf stat` untraced (the time scale), `perf record` of the
events the policy's replay needs (no call chains unless it needs them: they stretch every hold),
the lock events alone (how much the other events add), and when no call chain showed which
spinlock slowpath the kernel runs, a short `perf record -g` probe (remembered for the boot).
DIR gets perf.data, contention.txt (perf lock contention of it), contention-lockonly.txt,
perf-stat.csv, meta and the logs; it appears only when everything succeeded. No kernel setting
changes unless --mthp asks; then every mTHP size is put back on exit, also on Ctrl-C.

Examples:
  sudo lockcast record -o base -- ./lrufault -t 2 -s 16 -l 10 -a dontneed
  sudo lockcast record --mthp 16K -o base16 -- ./lrufault -t 2 -s 16 -l 10
  lockcast whatif lru-cache base16
  sudo lockcast record --mthp 32K -o after32 -- ./lrufault -t 2 -s 16 -l 10
  lockcast validate folio-size base16 after32
  sudo lockcast record --policy fbatch-drain -o churn -- ./foliochurn -p 4 -k 128 -l 300";

/// `lockcast record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The what-if policy the capture is for (decides the events; see `lockcast whatif --help`).
    #[arg(long, default_value = "lru-cache")]
    pub policy: String,
    /// Output directory (must not exist unless --force).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "DIR",
        default_value = "lockcast-capture"
    )]
    pub out: PathBuf,
    /// Replace DIR if it exists.
    #[arg(long)]
    pub force: bool,
    /// Set this mTHP size for anonymous faults while recording (4K = no large folios);
    /// every size is restored after.
    #[arg(long, value_name = "SIZE")]
    pub mthp: Option<String>,
    /// The perf binary.
    #[arg(long, default_value = "perf")]
    pub perf: String,
    /// Skip the lock-only run (no observer-effect note).
    #[arg(long)]
    pub no_lockonly: bool,
    /// perf record's buffer, pages per CPU (-m). Default 4096; when perf loses events with the
    /// default, the recording runs again with 4× the buffer (twice at most, within a quarter of
    /// the available memory). Given here, it is used as given.
    #[arg(long)]
    pub mmap_pages: Option<u32>,
    /// Leave EVENT out of the recipe (repeatable): to see what a what-if says without it.
    #[arg(long, value_name = "EVENT")]
    pub without: Vec<String>,
    /// The workload: the command after `--` and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// `whatif --help`: the policies from the registry, then what captures they need.
fn whatif_help() -> String {
    lockcast::whatif::registry::help(96) + WHATIF_NOTES
}

const WHATIF_NOTES: &str = "
  fbatch-drain and dead-prefree need to know when folios die: record
  syscalls:sys_enter_madvise and syscalls:sys_exit_madvise too. Drain sites come from call chains
  on pagemap:mm_lru_insertion (perf record -g); without them explicit drains have no site and
  are kept unless remove_unknown_sites=true. The text report's \"by path\" table splits waits
  into folio_batch_move_lru, the __page_cache_release after a drain, and the one at unmap, as
  perf lock contention's caller rows (needs -g on lock:contention_begin).
  fixtures/capture-fbatch.sh records all of it at low overhead (-g with call-graph=no on the
  per-folio events).

The capture: an event trace with nanosecond timestamps of lock:contention_begin,
lock:contention_end, pagemap:mm_lru_insertion, kmem:mm_page_alloc and kmem:mm_page_free
(and syscalls:sys_enter/exit_madvise: MADV_FREE's lazyfree holds leave no other event).
Low-overhead recipe (no call chains; -g stretches lock holds several-fold):
  perf record -m 4096 -e lock:contention_begin -e lock:contention_end \\
      -e pagemap:mm_lru_insertion -e kmem:mm_page_alloc -e kmem:mm_page_free \\
      -e syscalls:sys_enter_madvise -e syscalls:sys_exit_madvise -- WORKLOAD
  perf script --ns > capture.txt        (or trace-cmd report -t; raw tracefs text is µs only)
fixtures/capture-replay.sh does this and writes a `meta` file beside the capture with the
untraced run time and the spinlock slowpath (paravirt or not) that the replay reads.

A perf lock table (report/contention text) instead of a trace gets the closed-form model:
  --set folio_kb=16 --set cpus=20 [--set acquisitions=N] [--set s1_ns=100] [--set f=0.9]

Examples:
  lockcast whatif lru-cache fixtures/replay/micro-16K-r1/script-ns.txt.gz
  lockcast whatif lru-cache capture.txt --set drain_rule=before-add --json
  lockcast whatif lru-cache base16 --time 20%-80%      (the middle of the run: no start-up, no tear-down)
  lockcast whatif lru-cache capture.txt --time 114.40,114.41   (seconds as perf script prints them)
  lockcast whatif folio-size fixtures/replay/micro-16K-r1/script-ns.txt.gz --set folio_kb=4
  lockcast whatif lru-cache seed.txt#1 --set folio_kb=16 --set cpus=20
  lockcast whatif fbatch-drain fixtures/fbatch/churn-4K-r1/script-ns.txt.gz
  lockcast whatif fbatch-drain fixtures/fbatch/churn-4K-r1/script-ns.txt.gz --set dead_on_batch_takes_lock=false
  lockcast whatif dead-prefree fixtures/fbatch/churn-4K-r1/script-ns.txt.gz

What-ifs of patches that remove work (not lock timing): CAPTURE is a directory written by
fixtures/capture-lazyfree.sh. In place of samples.txt or events.txt it may hold the recording
itself, perf.data[.gz] (capture-lazyfree.sh --keep-perfdata DIR writes such directories), or
raw ftrace text / trace-cmd report (trace.txt, trace-cmd-report.txt: see
fixtures/capture-khugepaged-trace.sh). CAPTURE may also be one trace file in any of these
formats: meta.txt, workload.txt and vmstat-*.txt are read from its directory when there, and
what they would say can be given with --set (the error names the key).
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
                       --set skip_progress=512|1 lazyfree_scan_ns=N; without meta.txt
                       --set scan_sleep_millisecs=N pages_to_scan=N, and task names
                       tasks=PID:NAME,... (default: workload.txt, else tid N)
  lockcast whatif lazyfree-thp fixtures/lazyfree/reclaim-r1
  lockcast whatif khugepaged-lazyfree fixtures/lazyfree/khugepaged-r1 --json
  lockcast whatif khugepaged-lazyfree fixtures/lazyfree/khugepaged-ftrace/trace-cmd-report.txt.gz
  lockcast whatif khugepaged-lazyfree trace.txt --set scan_sleep_millisecs=100 --set pages_to_scan=4096";

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
    /// Bootstrap replicates for the interval: exactly N (0: none). Default: up to 200, in
    /// blocks of 25, stopping from 50 on once no interval end moves more than 10% of its width
    /// over a block (seeded: a rerun stops at the same count).
    #[arg(long)]
    pub bootstrap: Option<usize>,
    /// Seed of the bootstrap (same seed, same interval).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// On a capture of more than twice N holds + folios, each bootstrap replicate replays 8
    /// time windows (one in each eighth of the run, drawn again there when it fell in a pause
    /// without a hold of the lock; the whole capture when the windows hold fewer than 30
    /// traced waits) holding about N of them, scaled to the
    /// whole capture by the windows' own point estimates; the point estimates and the
    /// sensitivity rows always replay the whole. 0: the whole capture every time (slower).
    /// Measured against 0 on 12 captures (README "What-if speed"): the interval's ends lie a
    /// median 0.2 of its width from the whole run's (at most 1.4), and it is 0.2 to 2.4 times as
    /// wide, so it can claim more precision than the whole run has.
    #[arg(long, value_name = "N", default_value_t = lockcast::whatif::DEFAULT_SAMPLE)]
    pub sample: usize,
    /// Quantile of waiters' arrival offsets after the holder's insertion taken as the end of
    /// its hold (the collision window's edge; see the sensitivity table).
    #[arg(long, default_value_t = 0.975)]
    pub window_quantile: f64,
    /// Skip malformed lines (counted and reported).
    #[arg(long)]
    pub lenient: bool,
    /// Kernel symbols for perf.data call chains (see `parse --help`).
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<std::path::PathBuf>,
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
    /// Policy (the list follows below).
    pub policy: String,
    /// Baseline capture (event trace, or a perf lock table for the closed-form model).
    pub capture: String,
    /// Replay only part of the capture, as `perf report --time` takes one: START,STOP in
    /// seconds as perf script prints them (both ends kept; either may be empty: `1234.5,`), or
    /// A%-B% of the span from its first to its last replayed event. Everything reported (the
    /// measured waits, the calibration, the replays) is then of that part alone.
    #[arg(long, value_name = "START,STOP|A%-B%")]
    pub time: Option<lockcast::whatif::time_range::TimeSpec>,
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

/// `--input-format` values: `auto` and every row of the parsers' format table.
fn input_formats() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    let mut v = vec![PossibleValue::new("auto").help("Detect from the content")];
    for f in lockcast::parsers::detect::FORMATS {
        v.push(PossibleValue::new(f.name).help(f.help));
    }
    clap::builder::PossibleValuesParser::new(v)
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

impl InputOpts {
    /// The library's options: `auto` leaves the format to detection.
    pub fn open(&self) -> lockcast::capture::OpenOptions {
        lockcast::capture::OpenOptions {
            format: lockcast::parsers::detect::Format::from_name(&self.format),
            lenient: self.lenient,
            kallsyms: self.kallsyms.clone().map(std::sync::Arc::new),
            let_go_checked: false,
        }
    }
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

impl ToArg {
    /// The library's file format.
    pub fn file_format(self) -> lockcast::output::write::FileFormat {
        use lockcast::output::write::FileFormat;
        match self {
            ToArg::Csv => FileFormat::Csv,
            ToArg::Parquet => FileFormat::Parquet,
            ToArg::Json => FileFormat::Json,
        }
    }
}

/// Options shared by every command that reads captures.
#[derive(Debug, Clone, Args)]
pub struct InputOpts {
    /// Input format (`--format` is the output format of report and diff).
    #[arg(long = "input-format", value_parser = input_formats(), default_value = "auto")]
    pub format: String,
    /// Skip malformed lines (they are counted and the first ones reported) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Kernel symbols for perf.data call chains (a /proc/kallsyms copy of the recording's
    /// kernel and boot; gzip/zstd fine). Default: perf's build-id cache, else /proc/kallsyms
    /// when the running kernel is the recording's.
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<std::path::PathBuf>,
}

/// `lockcast parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// Input files (`-` = stdin, `path#N` = N-th table).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// A /proc/lock_stat snapshot taken earlier on the same machine (`path#N` picks a table):
    /// with one input, AFTER: its table minus this one, the numbers of the interval. Counters
    /// (contentions, acquisitions, bounces, wait/hold totals, point counts) are subtracted per class and -W/-R state, the
    /// averages recomputed; min and max cannot be subtracted and are left empty. A class only
    /// in the later file is taken whole; a counter that went down is an error (not one boot).
    /// /proc/lock_stat only: other formats count one recording, not since boot.
    #[arg(long, value_name = "BEFORE")]
    pub since: Option<String>,
    #[command(flatten)]
    pub input: InputOpts,
    /// Output format (default: from the -o extension).
    #[arg(long, value_enum)]
    pub to: Option<ToArg>,
    /// Output file (`.csv`, `.parquet`, `.json`), a directory to get one file per table
    /// (Parquet unless --to), or `-` for one table on standard output (CSV unless --to).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Tables to build, comma-separated, or `all` (default: each input's natural table: lock_stats, callgraph for perf report text). See README "Tables".
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
    /// Rows per frame (Parquet row group) of the streamed lock tables (tests use small ones).
    #[arg(long, hide = true, default_value_t = lockcast::frames::lock_stats::CHUNK_ROWS)]
    pub chunk_rows: usize,
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
    /// A /proc/lock_stat snapshot taken earlier on the same machine (`path#N` picks a table):
    /// show FILE minus it, the numbers of the interval. Counters (contentions, acquisitions,
    /// bounces, wait/hold totals, point counts) are subtracted per class and -W/-R state, the
    /// averages recomputed; min and max cannot be subtracted and are left empty. A class only
    /// in the later file is taken whole; a counter that went down is an error (not one boot).
    /// /proc/lock_stat only: other formats count one recording, not since boot.
    #[arg(long, value_name = "BEFORE")]
    pub since: Option<String>,
    #[command(flatten)]
    pub input: InputOpts,
    #[command(flatten)]
    pub filter: super::filter::FilterArgs,
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
    #[arg(required_unless_present = "base_runs", conflicts_with_all = ["base_runs", "patched_runs"])]
    pub base: Option<String>,
    /// Patched capture (`path#N` picks a table).
    #[arg(required_unless_present = "base_runs")]
    pub patched: Option<String>,
    /// Repeated runs of the base, one table each (with --patched; replaces BASE PATCHED).
    #[arg(long = "base", value_name = "B", num_args = 1.., requires = "patched_runs")]
    pub base_runs: Vec<String>,
    /// Repeated runs of the patched kernel, one table each.
    #[arg(long = "patched", value_name = "P", num_args = 1.., requires = "base_runs")]
    pub patched_runs: Vec<String>,
    /// An earlier /proc/lock_stat snapshot of BASE's machine: BASE becomes the interval
    /// BASE minus it (see `report --since`; min/max are then empty).
    #[arg(
        long,
        value_name = "BEFORE",
        requires = "base",
        conflicts_with = "base_runs"
    )]
    pub base_since: Option<String>,
    /// An earlier /proc/lock_stat snapshot of PATCHED's machine, likewise.
    #[arg(
        long,
        value_name = "BEFORE",
        requires = "patched",
        conflicts_with = "base_runs"
    )]
    pub patched_since: Option<String>,
    /// Repeated runs: bootstrap replicates of the ratio's 95% interval.
    #[arg(long, default_value_t = lockcast::analyses::ab_runs::DEFAULT_REPLICATES)]
    pub bootstrap: usize,
    /// Repeated runs: seed of the bootstrap (same seed, same interval).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub input: InputOpts,
    #[command(flatten)]
    pub filter: super::filter::FilterArgs,
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

/// Chart kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlotKind {
    /// Top locks/callers of BASE and PATCHED: contended and total wait, with ratios.
    Ab,
    /// Wait-time distribution per lock, log-scaled bins, from 1-3 traces (first = base).
    Waits,
    /// Share of time each CPU spent waiting, over the trace (heat map).
    Timeline,
    /// Measured vs predicted (with interval) vs after, from `lockcast whatif --json`.
    Whatif,
}

/// Grouping of waits into panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WaitKeyArg {
    /// Caller when the trace has call chains, else lock address.
    Auto,
    /// Caller (needs call chains: perf record -g).
    Caller,
    /// Lock address.
    Lock,
}

/// `lockcast plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Chart kind.
    #[arg(value_enum)]
    pub kind: PlotKind,
    /// Inputs: `ab` BASE PATCHED (perf lock tables, `path#N`, or traces); `waits` TRACE...;
    /// `timeline` TRACE; `whatif` FILE.json (`-` = stdin).
    #[arg(required_unless_present = "base_runs")]
    pub inputs: Vec<String>,
    /// ab over repeated runs: the base runs (with --patched; bars = medians, whiskers = min-max).
    #[arg(long = "base", value_name = "B", num_args = 1.., requires = "patched_runs", conflicts_with = "inputs")]
    pub base_runs: Vec<String>,
    /// ab over repeated runs: the patched runs.
    #[arg(long = "patched", value_name = "P", num_args = 1.., requires = "base_runs")]
    pub patched_runs: Vec<String>,
    #[command(flatten)]
    pub input: InputOpts,
    /// Rows (ab: on both sides) or waits (waits, timeline) kept.
    #[command(flatten)]
    pub filter: super::filter::FilterArgs,
    /// Output image: the extension picks the format (`.png` or `.svg`).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Title (default: says what is plotted and from what).
    #[arg(long)]
    pub title: Option<String>,
    /// Legend text per input, in input order (default: the input's folder and file name).
    #[arg(long = "label", value_name = "TEXT")]
    pub labels: Vec<String>,
    /// Locks or callers shown (default: ab 10, waits 4, whatif all).
    #[arg(long)]
    pub top: Option<usize>,
    /// Image size in pixels, WxH (default: fits the content).
    #[arg(long, value_parser = parse_size)]
    pub size: Option<(u32, u32)>,
    /// waits: group by caller or lock address.
    #[arg(long, value_enum, default_value_t = WaitKeyArg::Auto)]
    pub by: WaitKeyArg,
    /// timeline: number of time bins.
    #[arg(long, default_value_t = lockcast::plots::timeline::DEFAULT_BINS)]
    pub bins: usize,
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH such as 1200x700, got {s:?}"))?;
    let n = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("expected WxH such as 1200x700, got {s:?}"))
    };
    Ok((n(w)?, n(h)?))
}

/// Examples for `lockcast plot --help`.
pub const PLOT_HELP: &str = "Examples:
  lockcast plot ab fixtures/captures/micro-16K-r1/contention.txt fixtures/captures/micro-4K-r1/contention.txt -o ab.png
  lockcast plot ab mail.txt#1 mail.txt#2 --label 'w/o patch' --label 'w/ patch' -o ab.svg
  lockcast plot ab --base fixtures/captures/micro-16K-r{1,2,3}/contention.txt \\
                  --patched fixtures/captures/micro-4K-r{1,2,3}/contention.txt -o ab-runs.png
  lockcast plot waits fixtures/replay/micro-16K-r1/script-ns.txt.gz fixtures/replay/micro-4K-r1/script-ns.txt.gz -o waits.png
  lockcast plot timeline fixtures/traces/micro-16K-g/script-ns.txt.gz -o timeline.png
  lockcast whatif lru-cache CAPTURE --json | lockcast plot whatif - -o whatif.png

The format comes from the extension of -o (.png or .svg). PNG text uses an embedded font, so no
font packages are needed.";

/// `lockcast export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// What to write.
    #[command(subcommand)]
    pub kind: ExportKind,
}

/// Export formats.
#[derive(Debug, Subcommand)]
pub enum ExportKind {
    /// Chrome trace-event JSON for ui.perfetto.dev or chrome://tracing: per CPU the
    /// reconstructed lru_lock holds and the traced waits as slices, other events as instants.
    #[command(after_help = PERFETTO_HELP)]
    Perfetto(PerfettoArgs),
}

/// `lockcast export perfetto`.
#[derive(Debug, Args)]
pub struct PerfettoArgs {
    /// Event trace (perf script --ns, ftrace, trace-cmd report, perf.data; as for `whatif`).
    pub capture: String,
    /// Output file (.json), or - for standard output.
    #[arg(short, long, value_name = "FILE.json")]
    pub output: PathBuf,
    /// Lock to treat as lru_lock, address as printed (default: detected).
    #[arg(long)]
    pub lock: Option<String>,
    /// Add the replay of the capture through this what-if policy as a second process
    /// (`lockcast whatif --help` lists them).
    #[arg(long, value_name = "POLICY")]
    pub whatif: Option<String>,
    /// Policy parameter for --whatif (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "whatif")]
    pub set: Vec<String>,
    /// Observation rule for --whatif (default: from the capture's call chains or meta file).
    #[arg(long, value_enum, requires = "whatif")]
    pub observation: Option<ObservationArg>,
    #[command(flatten)]
    pub input: InputOpts,
}

const PERFETTO_HELP: &str = "\
Tracks, per CPU: `CPU n lru_lock holds` (one slice per hold the what-if replay reconstructs,
with its folios, pages and path) and `CPU n waits` (one slice per traced wait on any lock, with
lock, type, caller and task, as `report` counts them); a second lane `(2)` takes slices that
would overlap. Per task (named by its comm): mm_page_alloc, mm_lru_insertion, mm_page_free and
discarding madvise/munmap as instants. ts/dur are µs with 3 decimals: every ns is kept.
--whatif POLICY [--set k=v] adds the replay of the capture through POLICY as a second process
(`predicted: POLICY`): per CPU the holds it granted and the waits of requests that found the
lock taken, at the replay's times, below the measured one.

Open the file at https://ui.perfetto.dev (Open trace file) or in chrome://tracing (Load).

Examples:
  lockcast export perfetto fixtures/replay/micro-16K-r1/script-ns.txt.gz -o micro-16K.json
  lockcast export perfetto fixtures/replay/micro-16K-r1/script-ns.txt.gz -o rfc.json --whatif lru-cache
  lockcast export perfetto perf.data -o trace.json --kallsyms kallsyms.txt";
