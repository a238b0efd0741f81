//! The binary: inputs from files, stdin and compressed streams; outputs; exit codes.

use std::io::Write;

use polars::prelude::*;

use crate::common::*;

const CAP: &str = "fixtures/captures/micro-16K-r1/contention.txt";

#[test]
fn cli_parse_prints_what_it_found() {
    let o = lockcast(&["parse", &fixture(SEED).to_string_lossy()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("4 table(s), 34 row(s)"), "{s}");
    assert!(s.contains("#2 line 83: lock table, 7 rows"), "{s}");
    assert!(s.contains("label \"w/ patch:\""), "{s}");
}

#[test]
fn cli_stdin_gzip_and_zstd_give_the_same_report() {
    let raw = std::fs::read(repo().join(CAP)).unwrap();
    let plain = lockcast(&["report", CAP, "--json"]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let from_stdin = lockcast_stdin(&["report", "-", "--json"], &raw);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw).unwrap();
    let gz = lockcast_stdin(&["report", "-", "--json"], &gz.finish().unwrap());
    let zst = lockcast_stdin(
        &["report", "-", "--json"],
        &zstd::encode_all(&raw[..], 3).unwrap(),
    );
    let strip = |o: &std::process::Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v[0]["source"] = serde_json::Value::Null;
        v
    };
    let want = strip(&plain);
    assert_eq!(want[0]["top"][0]["caller"], "folio_batch_move_lru+0x88");
    assert_eq!(want[0]["top"][0]["contended"], 14082);
    assert_eq!(want[0]["top"][0]["total_wait_ns"], 18_730_000);
    assert_eq!(want[0]["total"]["contended"], 15017);
    for o in [&from_stdin, &gz, &zst] {
        assert!(o.status.success(), "{}", stderr(o));
        assert_eq!(strip(o), want);
    }
}

#[test]
fn cli_report_merges_rows_of_one_caller() {
    let o = lockcast(&["report", CAP, "--json", "--top", "20"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rel = v[0]["top"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["caller"] == "__page_cache_release.part.0+0x58")
        .unwrap();
    // 330 + 58 contended; 661.69 us + 98.51 us
    assert_eq!(rel["contended"], 388);
    assert_eq!(rel["total_wait_ns"], 760_200);
    assert_eq!(rel["rows"], 2);
    assert_eq!(rel["max_wait_ns"], 14_760);
}

#[test]
fn cli_report_by_type() {
    let o = lockcast(&["report", CAP, "--by", "type", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["top"][0]["type"], "spinlock");
    assert_eq!(v[0]["top"][0]["contended"], 15015);
    assert_eq!(v[0]["top"][1]["type"], "rwsem:R");
}

#[test]
fn cli_parse_writes_csv_parquet_json_that_read_back() {
    let dir = tempfile::tempdir().unwrap();
    for ext in ["csv", "parquet", "json"] {
        let out = dir.path().join(format!("ls.{ext}"));
        let o = lockcast(&["parse", CAP, "-o", &out.to_string_lossy()]);
        assert!(o.status.success(), "{ext}: {}", stderr(&o));
    }
    let pq = LazyFrame::scan_parquet(
        PlRefPath::new(dir.path().join("ls.parquet").to_string_lossy().as_ref()),
        ScanArgsParquet::default(),
    )
    .unwrap()
    .collect()
    .unwrap();
    assert_eq!(pq.height(), 18);
    assert_eq!(
        pq.get_column_names()
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
        lockcast::frames::schema::lock_stats::COLUMNS
    );
    let contended = pq.column("contended").unwrap().u64().unwrap().get(0);
    assert_eq!(contended, Some(14082));
    let csv = std::fs::read_to_string(dir.path().join("ls.csv")).unwrap();
    assert_eq!(csv.lines().count(), 19);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .starts_with("source,block,label,line,kind,name"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ls.json")).unwrap())
            .unwrap();
    assert_eq!(json[0]["caller"], "folio_batch_move_lru+0x88");
    assert_eq!(json[0]["total_wait_ns"], 18_730_000);
    assert_eq!(json[0]["total_wait_err_ns"], 5_000);
}

#[test]
fn cli_verbose_stacks_go_to_list_column_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.csv");
    let o = lockcast(&[
        "parse",
        "fixtures/captures/micro-16K-r1/contention-v.txt",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(out).unwrap();
    let first = csv.lines().nth(1).unwrap();
    assert!(
        first.contains("__pv_queued_spin_lock_slowpath+0x10e;_raw_spin_lock_irqsave+0x4d;"),
        "{first}"
    );
}

#[test]
fn cli_unknown_format_exits_3_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, "just some notes\nno tables here\n").unwrap();
    let o = lockcast(&["parse", &p.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(
        e.contains("notes.txt") && e.contains("unknown format") && e.contains("just some notes"),
        "{e}"
    );
}

#[test]
fn cli_broken_table_exits_3_with_line_and_lenient_counts() {
    let raw = std::fs::read_to_string(repo().join(CAP)).unwrap();
    // cut the 5th row in the middle: a table that breaks mid-way
    let mut lines: Vec<&str> = raw.lines().collect();
    let cut = &lines[6][..30];
    lines[6] = cut;
    let text = lines.join("\n");
    let o = lockcast_stdin(&["report", "-"], text.as_bytes());
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("-:7:1: perf lock:"), "{e}");
    let o = lockcast_stdin(&["report", "-", "--lenient", "--json"], text.as_bytes());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("skipped 1 malformed line(s)"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["input_rows"], 17);
}

#[test]
fn cli_missing_file_exits_4() {
    let o = lockcast(&["report", "no/such/file.txt"]);
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr(&o).contains("no/such/file.txt"));
}

#[test]
fn cli_usage_error_exits_2() {
    assert_eq!(lockcast(&["report"]).status.code(), Some(2));
    assert_eq!(
        lockcast(&["parse", CAP, "--to", "csv"]).status.code(),
        Some(2)
    );
    assert_eq!(
        lockcast(&["report", CAP, "--by", "nonsense"]).status.code(),
        Some(2)
    );
}

#[test]
fn cli_block_out_of_range_and_ambiguous_diff_exit_3() {
    let seed = fixture(SEED).to_string_lossy().into_owned();
    let o = lockcast(&["report", &format!("{seed}#9")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("has 4 table(s)"), "{}", stderr(&o));
    let o = lockcast(&["diff", &seed, &seed]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("holds 4 tables; pick one"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn cli_failed_write_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("bad.txt");
    std::fs::write(&notes, "nothing\n").unwrap();
    let out = dir.path().join("o.parquet");
    let o = lockcast(&[
        "parse",
        &notes.to_string_lossy(),
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().count() == 1,
        "only the input remains"
    );
}

#[test]
fn cli_help_lists_examples_and_exit_codes() {
    let o = lockcast(&["--help"]);
    let s = stdout(&o);
    assert!(
        s.contains("Exit codes:") && s.contains("lockcast diff seed.txt#1 seed.txt#2"),
        "{s}"
    );
}

#[test]
fn cli_demo_runs_on_bundled_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    let o = lockcast(&["demo", "--out", &dir.path().to_string_lossy()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("21414857") && s.contains("8.11x") && s.contains("5.21x"),
        "{s}"
    );
    for f in [
        "lock_stats.csv",
        "lock_stats.parquet",
        "lock_stats.json",
        "diff-seed.json",
        "flame-16K-g.svg",
        "flamediff-16K-vs-4K.svg",
    ] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
}

#[test]
fn cli_every_perf_lock_corpus_file_parses() {
    let dir = corpus("perf-lock");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 19);
    let mut args = vec!["parse"];
    args.extend(files.iter().map(String::as_str));
    let o = lockcast(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    // 18 files with tables; the BPF lost-events file holds only a debug footer
    let s = stdout(&o);
    assert!(
        s.contains("contention-v6.1-bpf-lost-debug-footer.txt: perf lock, 0 table(s)"),
        "{s}"
    );
    assert!(
        s.trim_end().ends_with("lock_stats: 204 rows x 37 columns"),
        "{s}"
    );
}

#[test]
fn cli_output_files_get_0666_minus_umask_not_0600() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .expect("umask in /proc/self/status");
    let input = fixture("replay/micro-64K-r1/script-ns.txt.gz");
    for (args, name) in [
        (
            vec![
                "parse",
                "fixtures/captures/micro-16K-r1/contention.txt",
                "-o",
            ],
            "a.csv",
        ),
        (
            vec![
                "parse",
                input.to_str().unwrap_or_default(),
                "--table",
                "events",
                "--to",
                "parquet",
                "-o",
            ],
            "ev",
        ),
    ] {
        let out = dir.path().join(name);
        let mut a = args.clone();
        let o = out.to_string_lossy().into_owned();
        a.push(&o);
        let r = lockcast(&a);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let files: Vec<_> = if out.is_dir() {
            walk(&out)
        } else {
            vec![out.clone()]
        };
        assert!(!files.is_empty());
        for f in files {
            let mode = std::fs::metadata(&f)
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o666 & !umask, "{}", f.display());
        }
    }
}

fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

/// `-` read by commands that open their input twice (detect, then parse; lock_stats, then the
/// per-event tables): the help's `perf lock report 2>&1 | lockcast parse - --to json -o -`, and
/// a trace's tables from stdin, equal to the same file given by name.
#[test]
fn cli_stdin_is_read_twice_from_its_copy() {
    let raw = std::fs::read(fixture("captures/micro-16K-r1/contention.txt")).unwrap();
    let o = lockcast_stdin(&["parse", "-", "--to", "json", "-o", "-"], &raw);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 18 rows in the table; the first is folio_batch_move_lru+0x88 with 14082 contentions
    assert_eq!(v.as_array().map(Vec::len), Some(18));
    assert_eq!(v[0]["contended"], 14082);
    // a trace: lock_stats from one reader, page_alloc from another, both from stdin
    let trace = "fixtures/replay/micro-16K-r1/script-ns.txt.gz";
    let gz = std::fs::read(repo().join(trace)).unwrap();
    let args = |input: &str| -> Vec<String> {
        ["parse", input, "--table", "lock_stats,page_alloc"]
            .map(String::from)
            .to_vec()
    };
    let from_stdin = lockcast_stdin(
        &args("-").iter().map(String::as_str).collect::<Vec<_>>(),
        &gz,
    );
    assert!(from_stdin.status.success(), "{}", stderr(&from_stdin));
    let named = lockcast(&args(trace).iter().map(String::as_str).collect::<Vec<_>>());
    let counts = |o: &std::process::Output| -> Vec<String> {
        stdout(o)
            .lines()
            .filter(|l| l.ends_with(" rows"))
            .map(str::to_string)
            .collect()
    };
    // 20801 mm_page_alloc events in the raw text (see the ingest tests)
    assert!(counts(&from_stdin).contains(&"page_alloc: 20801 rows".to_string()));
    assert_eq!(counts(&from_stdin), counts(&named));
}

/// An output path naming a FIFO (as `/dev/null`, `/dev/stdout` or a shell's `>(...)` name a
/// device or a pipe) gets the bytes a file gets, and stays a FIFO. The complete output used to
/// be renamed onto the path, which replaced the node with a regular file: as root, `-o
/// /dev/null` replaced `/dev/null` itself. `parse` took a path without an extension for a
/// directory to create, even when it was there and was not one.
#[test]
fn outputs_into_a_fifo_leave_it_a_fifo() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let capture = fixture("replay/micro-16K-r1/script-ns.txt.gz")
        .to_string_lossy()
        .into_owned();
    let runs: [(&[&str], &str); 2] = [
        (&["export", "perfetto", &capture], "t.json"),
        (
            &["parse", &capture, "--table", "contention", "--to", "csv"],
            "t.csv",
        ),
    ];
    for (args, name) in runs {
        let file = dir.path().join(name);
        let o = lockcast(&[args, &["-o", file.to_str().unwrap()]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        let want = std::fs::read(&file).unwrap();
        assert!(want.len() > 1000, "{args:?}");
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read(fifo).unwrap()
        });
        // a writer of our own, held over the run: the reader sees the end when it is closed
        // after the run, also when the run never opened the FIFO or renamed a file onto its
        // path (then the reader gets nothing, and the test fails instead of waiting forever)
        let held = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        let o = lockcast(&[args, &["-o", fifo.to_str().unwrap()]].concat());
        drop(held);
        let got = reader.join().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(
            std::fs::metadata(&fifo).unwrap().file_type().is_fifo(),
            "{args:?} replaced the FIFO"
        );
        assert!(
            got == want,
            "{args:?}: {} bytes, a file got {}",
            got.len(),
            want.len()
        );
    }
}
