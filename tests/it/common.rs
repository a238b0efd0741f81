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
    whatif::run(&t, p.as_ref(), &ctx, &o).expect("run")
}

/// The text format of a capture file (what `--input-format` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    PerfLock,
    Ftrace,
    PerfScript,
    PerfReport,
}

impl Fmt {
    pub fn arg(self) -> &'static str {
        match self {
            Fmt::PerfLock => "perf-lock",
            Fmt::Ftrace => "ftrace",
            Fmt::PerfScript => "perf-script",
            Fmt::PerfReport => "perf-report",
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
/// trace-cmd text, perf script text (plain or gzip), perf report text. Scripts, READMEs,
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
        ]
        .iter()
        .any(|d| rel.starts_with(&format!("fixtures/{d}/")));
        let fmt = if rel.starts_with("fixtures/fbatch/") && name == "report.txt"
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
