use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(p: &str) -> PathBuf {
    repo().join("fixtures").join(p)
}

/// The corpus of real tool outputs (`tests/corpus/`, see its SOURCES.md).
pub fn corpus(p: &str) -> PathBuf {
    repo().join("tests/corpus").join(p)
}

pub const SEED: &str = "seeds/lru-cache-small-large-folios-rfc-v3.txt";

pub fn lockcast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run lockcast")
}

pub fn lockcast_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lockcast");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `lockcast whatif lru-cache CAPTURE --json EXTRA...`, which must succeed, as JSON.
pub fn whatif_json(capture: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["whatif", "lru-cache", capture, "--json"];
    args.extend_from_slice(extra);
    let o = lockcast(&args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("json")
}

/// (low, high) of contended and total wait of a `whatif --json` answer's first row: the
/// prediction's interval, then the no-change replay's.
pub fn interval_ends(v: &serde_json::Value) -> Vec<(f64, f64)> {
    let row = &v["rows"][0];
    let mut out = Vec::new();
    for iv in ["interval", "replayed_interval"] {
        for m in ["contended", "total_wait_ns"] {
            let end = |e: &str| row[iv][e][m].as_f64().expect("interval end is a number");
            out.push((end("low"), end("high")));
        }
    }
    out
}

/// Run a what-if policy over a capture with `--set` pairs, no bootstrap (the point estimate).
pub fn whatif_run(
    path: &str,
    policy_name: &str,
    set: &[(&str, &str)],
) -> lockcast::whatif::Outcome {
    use lockcast::whatif::{self, registry, trace};
    let t = trace::read(path, false).expect("read capture");
    let ctx = whatif::context(&t);
    let set: std::collections::BTreeMap<String, String> = set
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let p = registry::make_lock(policy_name, &set, &ctx).expect("policy");
    let o = whatif::Options {
        bootstrap: 0,
        ..Default::default()
    };
    whatif::run(t, p.as_ref(), &ctx, &o).expect("run")
}

/// The text format of a capture file (what `--input-format` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    PerfLock,
    Ftrace,
    PerfScript,
    PerfReport,
    /// `perf record` output (binary).
    PerfData,
}

impl Fmt {
    pub fn arg(self) -> &'static str {
        match self {
            Fmt::PerfLock => "perf-lock",
            Fmt::Ftrace => "ftrace",
            Fmt::PerfScript => "perf-script",
            Fmt::PerfReport => "perf-report",
            Fmt::PerfData => "perf-data",
        }
    }
}

/// One capture-text file of the repository.
pub struct CaptureFile {
    /// Repo-relative, `/`-separated (`fixtures/captures/micro-16K-r1/contention.txt`).
    pub path: String,
    pub fmt: Fmt,
}

fn files_in(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_in(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Every capture-text file in `fixtures/` and `tests/corpus/` with the format it is in, in
/// path order (fixtures first): perf lock tables (and the seed posting), raw ftrace and
/// trace-cmd text, perf script text (plain or gzip), perf report text, and the perf.data
/// recordings of `fixtures/perfdata/` (`perf.data.gz`, binary). Scripts, READMEs,
/// `meta`, `perf stat` CSVs, workload and vmstat logs are not captures and are left out.
pub fn capture_files() -> Vec<CaptureFile> {
    let mut paths = Vec::new();
    files_in(&repo().join("fixtures"), &mut paths);
    files_in(&repo().join("tests/corpus"), &mut paths);
    let mut out = Vec::new();
    for p in paths {
        let rel = p
            .strip_prefix(repo())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".md") || name.ends_with(".sh") {
            continue;
        }
        // fixtures/<kind>/<run>/<file>: the capture scripts' directories
        let run_dir = [
            "captures",
            "replay",
            "replay-partial",
            "traces",
            "fbatch",
            "samples",
            "lazyfree",
            "perfdata",
        ]
        .iter()
        .any(|d| rel.starts_with(&format!("fixtures/{d}/")));
        let fmt = if rel.starts_with("fixtures/perfdata/") && name == "perf.data.gz" {
            Fmt::PerfData
        } else if rel.starts_with("fixtures/fbatch/") && name == "report.txt"
            || rel.contains("/perf-report/")
        {
            // fbatch's report.txt is `perf report --stdio`; captures/'s is `perf lock report`
            Fmt::PerfReport
        } else if rel.contains("/perf-lock/")
            || rel.contains("/seeds/")
            || (run_dir
                && (name.starts_with("contention")
                    || name.starts_with("report")
                    || name.starts_with("info"))
                && name.ends_with(".txt"))
        {
            Fmt::PerfLock
        } else if rel.contains("/ftrace/") {
            Fmt::Ftrace
        } else if rel.contains("/perf-script/")
            || (run_dir
                && (name.starts_with("script")
                    || name == "events.txt.gz"
                    || name == "samples.txt.gz"))
        {
            Fmt::PerfScript
        } else {
            continue;
        };
        out.push(CaptureFile { path: rel, fmt });
    }
    out
}

/// `lockcast report --json` of a trace against `perf lock contention` of the same recording,
/// per caller and lock type: the same callers, the same contended counts, total waits within
/// perf's rounding. Returns lockcast's (contended, total wait ns) per (caller, type).
pub fn report_agrees_with_perf_lock(
    report_json: &[u8],
    contention_txt: &std::path::Path,
) -> std::collections::BTreeMap<(String, String), (u64, u64)> {
    use std::collections::BTreeMap;
    let v: serde_json::Value = serde_json::from_slice(report_json).unwrap();
    let ours: BTreeMap<(String, String), (u64, u64)> = v[0]["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                (
                    r["caller"].as_str().unwrap().to_string(),
                    r["type"].as_str().unwrap().to_string(),
                ),
                (
                    r["contended"].as_u64().unwrap(),
                    r["total_wait_ns"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    let f = std::fs::File::open(contention_txt).unwrap();
    let perf = lockcast_parsers::perf_lock::parse_all(
        std::io::BufReader::new(f),
        &lockcast_parsers::perf_lock::Options::default(),
    )
    .unwrap();
    // perf keys rows by call stack; sum them per caller+type
    let mut theirs: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
    for r in &perf.tables[0].rows {
        let e = theirs
            .entry((r.caller.clone().unwrap(), r.lock_type.clone().unwrap()))
            .or_default();
        let t = r.total_wait.unwrap();
        e.0 += r.contended.unwrap();
        e.1 += t.ns;
        e.2 += t.err_ns;
    }
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "same callers"
    );
    for (k, (c, w)) in &ours {
        let (pc, pw, perr) = theirs[k];
        assert_eq!(*c, pc, "{k:?} contended");
        assert!(
            w.abs_diff(pw) <= perr,
            "{k:?}: ours {w} ns, perf {pw} ± {perr}"
        );
    }
    ours
}

/// A build-id cache (`PERF_BUILDID_DIR`) holding the kallsyms perf cached for `dir`'s recording
/// (`dir/kallsyms.gz` under the build-id of `dir/meta`), so kernel frames are named the same on
/// any machine or kernel. Without a kallsyms.gz (no call chains) the cache is empty.
pub fn perfdata_buildid_dir(dir: &str) -> PathBuf {
    use std::io::Read;
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let cache =
        std::env::temp_dir().join(format!("lockcast-it-buildid-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&cache).unwrap();
    let ks = repo().join(dir).join("kallsyms.gz");
    if ks.is_file() {
        let meta = std::fs::read_to_string(repo().join(dir).join("meta")).unwrap();
        let bid = meta
            .lines()
            .find_map(|l| l.strip_prefix("kernel_build_id="))
            .unwrap();
        let k = cache.join("[kernel.kallsyms]").join(bid);
        std::fs::create_dir_all(&k).unwrap();
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(ks).unwrap())
            .read_to_end(&mut text)
            .unwrap();
        std::fs::write(k.join("kallsyms"), text).unwrap();
    }
    cache
}

/// lockcast with `PERF_BUILDID_DIR` set to `cache`; asserts success.
pub fn lockcast_cached(args: &[&str], cache: &Path) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(args)
        .current_dir(repo())
        .env("PERF_BUILDID_DIR", cache)
        .output()
        .expect("run lockcast");
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

/// A CSV file as (header, rows).
pub type CsvTable = (Vec<String>, Vec<Vec<String>>);

pub fn read_csv(p: &Path) -> CsvTable {
    let text = std::fs::read_to_string(p).unwrap();
    let mut r = csv_rows(&text);
    let head = r.remove(0);
    (head, r)
}

/// Minimal CSV reader (quoted fields with doubled quotes), enough for lockcast's own output.
pub fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let (mut row, mut field, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            _ => field.push(c),
        }
    }
    rows
}

/// A column a recording's `perf script` text does not print (its recipe's `-F` list leaves it
/// out), so it is empty in every row of the text's table while the perf.data has it.
pub struct TextLacks {
    /// Table file (`samples.csv`).
    pub table: &'static str,
    pub column: &'static str,
    /// Why (which `-F` field is missing).
    pub why: &'static str,
}

/// Every table of `dir`'s perf.data.gz against the same table of its script-ns.txt.gz, row for
/// row; returns the rows per table. Columns that must differ, and why:
/// - source: the input's path;
/// - line, begin_line: a binary file has no lines (the sample's number instead);
/// - tgid (events, typed tables) and pid (samples): perf script's default output prints no pid,
///   the file has it; period: perf script prints none for tracepoints (the file's is 1);
/// - stack (contention) and stack_symbol/stack_offset (samples): user-space frames, which perf
///   script names from the ELF file on disk and lockcast leaves [unknown]; the kernel frames
///   (and so every caller) are checked equal;
/// - `lacks`: columns the recipe's `perf script -F` does not print, checked empty in the text.
pub fn perfdata_tables_equal(
    dir: &str,
    lacks: &[TextLacks],
) -> std::collections::BTreeMap<String, usize> {
    let cache = perfdata_buildid_dir(dir);
    let out = std::env::temp_dir().join(format!(
        "lockcast-it-perfdata-{}-{}",
        std::process::id(),
        dir.replace('/', "_")
    ));
    let (bin, txt) = (out.join("bin"), out.join("txt"));
    for (input, to) in [("perf.data.gz", &bin), ("script-ns.txt.gz", &txt)] {
        let t = to.to_string_lossy().into_owned();
        let input = format!("{dir}/{input}");
        lockcast_cached(
            &["parse", "--table", "all", &input, "-o", &t, "--to", "csv"],
            &cache,
        );
    }
    let mut rows = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(&txt).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let (hb, rb) = read_csv(&bin.join(&name));
        let (ht, rt) = read_csv(&txt.join(&name));
        assert_eq!(hb, ht, "{dir} {name}: columns");
        assert_eq!(rb.len(), rt.len(), "{dir} {name}: rows");
        // (`pid` is the process only in `samples`; elsewhere it is the thread id, equal)
        let process = if name == "samples.csv" { "pid" } else { "tgid" };
        let lacked: Vec<(&str, &str)> = lacks
            .iter()
            .filter(|l| l.table == name)
            .map(|l| (l.column, l.why))
            .collect();
        let skip = [
            "source",
            "line",
            "begin_line",
            process,
            "period",
            "stack",
            "stack_symbol",
            "stack_offset",
        ];
        for (i, (b, t)) in rb.iter().zip(&rt).enumerate() {
            for (c, col) in ht.iter().enumerate() {
                let col = col.as_str();
                if let Some((_, why)) = lacked.iter().find(|l| l.0 == col) {
                    assert!(
                        t[c].is_empty(),
                        "{dir} {name} row {} {col}: text has it ({why})",
                        i + 1
                    );
                    continue;
                }
                if !skip.contains(&col) {
                    assert_eq!(b[c], t[c], "{dir} {name} row {} column {col}", i + 1);
                }
                match col {
                    p if p == process => {
                        assert!(t[c].is_empty() && !b[c].is_empty(), "{dir} {name} {col}")
                    }
                    // printed for samples (equal), not for tracepoints (the file's is 1)
                    "period" if b[c] != t[c] => {
                        assert_eq!((b[c].as_str(), t[c].as_str()), ("1", ""), "{dir} {name}")
                    }
                    "stack" | "stack_symbol" => {
                        // kernel part of the stack equal: frames up to the first user frame
                        let kb: Vec<_> =
                            b[c].split(';').take_while(|f| *f != "[unknown]").collect();
                        let kt: Vec<_> = t[c].split(';').take(kb.len()).collect();
                        assert_eq!(kb, kt, "{dir} {name} row {} {col}", i + 1);
                    }
                    _ => {}
                }
            }
        }
        rows.insert(name, rb.len());
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&cache);
    rows
}

/// A bundled matrix capture (`fixtures/matrix/DIR/perf.data.zst`) as the replay reads it, and
/// the id of its `lru_lock` (the matrix machine's address).
pub fn matrix_trace(dir: &str) -> (String, lockcast::whatif::trace::Trace, u32) {
    let path = fixture(&format!("matrix/{dir}/perf.data.zst"))
        .to_string_lossy()
        .into_owned();
    let t = lockcast::whatif::trace::read(&path, false).expect("read");
    let lock = t
        .locks
        .iter()
        .position(|l| l == "0xffff8881a2f62a98")
        .expect("lru_lock") as u32;
    (path, t, lock)
}

/// Every wait on `lock` (ns), from the raw events: each `contention_begin` paired with its
/// CPU's next `contention_end`, without the reconstruction.
pub fn raw_waits(t: &lockcast::whatif::trace::Trace, lock: u32) -> Vec<i64> {
    use lockcast::whatif::trace::Kind;
    let mut begun = std::collections::HashMap::new();
    let mut waits = Vec::new();
    for e in &t.events {
        match e.kind {
            Kind::Begin { lock: l, .. } if l == lock => {
                begun.insert(e.cpu, e.ts);
            }
            Kind::End { lock: l } if l == lock => {
                if let Some(b) = begun.remove(&e.cpu) {
                    waits.push(e.ts - b);
                }
            }
            _ => {}
        }
    }
    waits
}
