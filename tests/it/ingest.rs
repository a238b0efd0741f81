//! `lockcast parse --table ...`: per-event tables, samples, callgraph; row counts equal the
//! events in the raw text of real captures, values checked against their lines, and parsing in
//! parallel pieces gives the same tables as one sequential pass.

use std::io::Read;
use std::path::Path;

use polars::prelude::*;

use crate::common::*;

const REPLAY: &str = "fixtures/replay/micro-16K-r1/script-ns.txt.gz";
const FTRACE: &str = "fixtures/ftrace/tracefs-6.18.44-default.txt";

fn read_pq(p: &Path) -> DataFrame {
    let f = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    ParquetReader::new(f).finish().unwrap()
}

fn gunzip(p: &str) -> String {
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(repo().join(p)).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    s
}

/// Lines of `text` whose event token is `sys:name:` (perf script) or ` name:` (ftrace).
fn count_event(text: &str, token: &str) -> usize {
    text.lines().filter(|l| l.contains(token)).count()
}

#[test]
fn ingest_typed_tables_count_every_event_of_a_replay_capture() {
    let text = gunzip(REPLAY);
    let dir = tempfile::tempdir().unwrap();
    let o = lockcast(&[
        "parse",
        REPLAY,
        "--table",
        "events,contention_begin,contention_end,lru_insertion,page_alloc,page_free,samples,fields",
        "-o",
        &dir.path().to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let n = |t: &str| read_pq(&dir.path().join(format!("{t}.parquet"))).height();
    // 20801 / 20743 / 887 / 887 / 20519 in `zcat | grep -c`
    for (table, token, want) in [
        ("page_alloc", " kmem:mm_page_alloc: ", 20801),
        ("page_free", " kmem:mm_page_free: ", 20743),
        ("contention_begin", " lock:contention_begin: ", 887),
        ("contention_end", " lock:contention_end: ", 887),
        ("lru_insertion", " pagemap:mm_lru_insertion: ", 20519),
    ] {
        assert_eq!(count_event(&text, token), want, "{token} in the raw text");
        assert_eq!(n(table), want, "{table}");
    }
    let events = text.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(events, 63837);
    assert_eq!(n("events"), events);
    assert_eq!(n("samples"), events);
    // every event has a typed table: nothing left for the generic one
    assert_eq!(n("fields"), 0);

    // first line: lrufault  2162 [001]   114.368504523: kmem:mm_page_alloc: page=0x17067e
    // pfn=0x17067e order=0 migratetype=0 gfp_flags=GFP_KERNEL_ACCOUNT|__GFP_ZERO|__GFP_COMP
    let pa = read_pq(&dir.path().join("page_alloc.parquet"));
    let get = |c: &str| pa.column(c).unwrap().get(0).unwrap().to_string();
    assert_eq!(get("line"), "1");
    assert_eq!(get("timestamp_ns"), "114368504523");
    assert_eq!(get("cpu"), "1");
    assert_eq!(get("comm"), "\"lrufault\"");
    assert_eq!(get("pid"), "2162");
    assert_eq!(get("page"), "\"0x17067e\"");
    assert_eq!(get("pfn"), (0x17067eu64).to_string());
    assert_eq!(get("order"), "0");
    assert_eq!(
        get("gfp_flags"),
        "\"GFP_KERNEL_ACCOUNT|__GFP_ZERO|__GFP_COMP\""
    );
}

#[test]
fn ingest_ftrace_events_and_typed_rows_match_the_text() {
    let text = std::fs::read_to_string(repo().join(FTRACE)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = lockcast(&[
        "parse",
        FTRACE,
        "--table",
        "all",
        "-o",
        &dir.path().to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let n = |t: &str| read_pq(&dir.path().join(format!("{t}.parquet"))).height();
    assert_eq!(
        n("contention_begin"),
        count_event(&text, " contention_begin: ")
    );
    assert_eq!(n("contention_begin"), 95);
    assert_eq!(
        n("lru_insertion"),
        count_event(&text, " mm_lru_insertion: ")
    );
    assert_eq!(n("lru_insertion"), 75);
    assert_eq!(n("page_alloc"), 121);
    assert_eq!(n("contention"), 95);
    // 388 events: the 386 above plus two tracing_mark_write markers, whose payload has no
    // key=value pair (so `fields` is empty); ftrace has no samples table
    assert_eq!(n("events"), 388);
    assert_eq!(n("fields"), 0);
    assert!(!dir.path().join("samples.parquet").exists());
    let ev = read_pq(&dir.path().join("events.parquet"));
    let flags = ev.column("irq_flags").unwrap().str().unwrap();
    let lines = ev.column("line").unwrap().u64().unwrap();
    let first_line = lines.get(0).unwrap() as usize;
    let raw = text.lines().nth(first_line - 1).unwrap();
    assert!(raw.contains(flags.get(0).unwrap()), "{raw}");
    let lru = read_pq(&dir.path().join("lru_insertion.parquet"));
    // ftrace pads the 6-char flag field; it comes back exactly 6 wide
    let f = lru.column("flags").unwrap().str().unwrap();
    assert!(f.iter().all(|x| x.unwrap().len() == 6));
}

#[test]
fn ingest_parallel_pieces_equal_one_sequential_pass() {
    let dir = tempfile::tempdir().unwrap();
    let run = |jobs: &str, piece: &str, out: &str| {
        let o = lockcast(&[
            "parse",
            REPLAY,
            "--table",
            "events,lru_insertion,samples",
            "--jobs",
            jobs,
            "--piece-bytes",
            piece,
            "-o",
            &dir.path().join(out).to_string_lossy(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    run("1", "1000000000", "seq");
    run("2", "65536", "par");
    for t in ["events", "lru_insertion", "samples"] {
        let a = read_pq(&dir.path().join("seq").join(format!("{t}.parquet")));
        let b = read_pq(&dir.path().join("par").join(format!("{t}.parquet")));
        assert!(a.height() > 20000, "{t}");
        assert!(
            a.equals_missing(&b),
            "{t} differs between sequential and pieces"
        );
    }
    // ~100 row groups of ~64 KiB of text: the writer streamed, one group per piece
    let f = std::fs::File::open(dir.path().join("par/events.parquet")).unwrap();
    let mut r = ParquetReader::new(f);
    let groups = r.get_metadata().unwrap().row_groups.len();
    assert!(groups > 50, "{groups} row groups");
}

/// A plain file is mapped and cut in place; its gzip copy is read as a stream. Both give the
/// same rows (but for the `source` column, the path as given), in pieces and in one pass, for
/// tracepoints and call-chain samples.
#[test]
fn ingest_a_plain_file_gives_the_tables_of_its_compressed_copy() {
    let dir = tempfile::tempdir().unwrap();
    let samples = "fixtures/samples/micro-16K-cpu-clock-g/script.txt.gz";
    for (gz, tables) in [
        (REPLAY, "events,lru_insertion,page_alloc,contention_begin"),
        (samples, "events,samples"),
    ] {
        let plain = dir.path().join("plain.txt");
        std::fs::write(&plain, gunzip(gz)).unwrap();
        let plain = plain.to_string_lossy().to_string();
        let run = |input: &str, jobs: &str, out: &str| {
            let o = lockcast(&[
                "parse",
                input,
                "--table",
                tables,
                "--jobs",
                jobs,
                "--piece-bytes",
                "65536",
                "-o",
                &dir.path().join(out).to_string_lossy(),
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
        };
        run(gz, "2", "gz");
        run(&plain, "2", "plain2");
        run(&plain, "1", "plain1");
        for t in tables.split(',') {
            let pq = |d: &str| {
                read_pq(&dir.path().join(d).join(format!("{t}.parquet")))
                    .drop("source")
                    .unwrap()
            };
            let a = pq("gz");
            assert!(a.height() > 300, "{gz} {t}: {} rows", a.height());
            for d in ["plain2", "plain1"] {
                assert!(a.equals_missing(&pq(d)), "{gz} {t}: {d} differs");
            }
        }
    }
}

#[test]
fn ingest_strict_error_names_the_file_line_in_a_later_piece() {
    let mut text = gunzip(REPLAY);
    // break the payload of line 50000 (a typed event): strict mode must name that line
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let l = &mut lines[49999];
    let i = l.find("pfn=").unwrap();
    l.replace_range(i..i + 6, "pfn=zz");
    text = lines.join("\n");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("broken.txt");
    std::fs::write(&p, &text).unwrap();
    let p = p.to_string_lossy();
    let o = lockcast(&[
        "parse",
        &p,
        "--table",
        "events,lru_insertion,page_alloc,page_free",
        "--piece-bytes",
        "65536",
        "--jobs",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("broken.txt:50000:1: perf script: expected"),
        "{e}"
    );
    let o = lockcast(&[
        "parse",
        &p,
        "--table",
        "lru_insertion,page_alloc,page_free",
        "--lenient",
        "--piece-bytes",
        "65536",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 unreadable payload(s) skipped"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn ingest_samples_keep_call_chains_frame_by_frame() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.parquet");
    let o = lockcast(&[
        "parse",
        "fixtures/perf-script/dd-cpu-clock-g.txt",
        "--table",
        "samples",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let df = read_pq(&out);
    // 337 samples (README of fixtures/perf-script)
    assert_eq!(df.height(), 337);
    // dd 13730   491.915850:     250000 cpu-clock:
    //     148f2 get_common_indices.constprop.0+0xf2 (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
    //         0 [unknown] ([unknown])
    assert_eq!(df.column("tid").unwrap().i64().unwrap().get(0), Some(13730));
    assert_eq!(df.column("pid").unwrap().i64().unwrap().get(0), None);
    assert_eq!(
        df.column("time_ns").unwrap().i64().unwrap().get(0),
        Some(491_915_850_000)
    );
    assert_eq!(
        df.column("period").unwrap().u64().unwrap().get(0),
        Some(250000)
    );
    assert_eq!(
        df.column("event").unwrap().str().unwrap().get(0),
        Some("cpu-clock")
    );
    let first = |c: &str| {
        df.column(c)
            .unwrap()
            .list()
            .unwrap()
            .get_as_series(0)
            .unwrap()
    };
    let addr = first("stack_address");
    assert_eq!(addr.u64().unwrap().get(0), Some(0x148f2));
    assert_eq!(addr.u64().unwrap().get(1), Some(0));
    let sym = first("stack_symbol");
    assert_eq!(
        sym.str().unwrap().get(0),
        Some("get_common_indices.constprop.0")
    );
    assert_eq!(sym.str().unwrap().get(1), Some("[unknown]"));
    let off = first("stack_offset");
    assert_eq!(
        (off.u64().unwrap().get(0), off.u64().unwrap().get(1)),
        (Some(0xf2), None)
    );
    let dso = first("stack_dso");
    assert_eq!(
        dso.str().unwrap().get(0),
        Some("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    );
}

#[test]
fn ingest_callgraph_rows_are_entries_plus_graph_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cg.parquet");
    let o = lockcast(&[
        "parse",
        "fixtures/perf-report/dd-cpu-clock-children.txt",
        "--input-format",
        "perf-report",
        "--table",
        "callgraph",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let df = read_pq(&out);
    let node = df.column("node").unwrap().u32().unwrap();
    let entries = node.null_count();
    assert_eq!(
        stdout(&o).lines().next().unwrap(),
        format!("fixtures/perf-report/dd-cpu-clock-children.txt: perf-report, {entries} entries")
    );
    // line 12: `    62.02%     0.00%  dd  [kernel.kallsyms]  [k] entry_SYSCALL_64_after_hwframe`
    assert_eq!(
        df.column("children_pct").unwrap().f64().unwrap().get(0),
        Some(62.02)
    );
    assert_eq!(
        df.column("self_pct").unwrap().f64().unwrap().get(0),
        Some(0.0)
    );
    assert_eq!(
        df.column("symbol").unwrap().str().unwrap().get(0),
        Some("entry_SYSCALL_64_after_hwframe")
    );
    // line 15: `do_syscall_64` under the `---entry_SYSCALL_64_after_hwframe` chain
    let path = df
        .column("path")
        .unwrap()
        .list()
        .unwrap()
        .get_as_series(2)
        .unwrap();
    let path: Vec<_> = path.str().unwrap().iter().flatten().collect();
    assert_eq!(path, ["entry_SYSCALL_64_after_hwframe", "do_syscall_64"]);
    let text = std::fs::read_to_string(fixture("perf-report/dd-cpu-clock-children.txt")).unwrap();
    assert!(text
        .lines()
        .nth(14)
        .unwrap()
        .trim_start()
        .starts_with("do_syscall_64"));
    // a branch value as printed: `|--22.26%--...` on some node
    let bp = df.column("branch_pct").unwrap().f64().unwrap();
    assert!(bp.iter().any(|v| v == Some(22.26)));
    assert!(text.contains("|--22.26%--"));
}

#[test]
fn ingest_perf_script_without_time_column_is_detected() {
    // `func_ab 15294 cpu-clock: ` (no time, old perf): auto-detected as perf script
    let p = corpus("perf-script/flamegraph-perf-funcab-pid-01.txt");
    let o = lockcast(&["parse", &p.to_string_lossy(), "--table", "samples"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    let text = std::fs::read_to_string(&p).unwrap();
    let headers = text.lines().filter(|l| l.contains(" cpu-clock:")).count();
    assert!(s.contains(&format!("samples: {headers} rows")), "{s}");
}

#[test]
fn ingest_table_not_in_the_input_is_a_usage_error_naming_it() {
    let o = lockcast(&[
        "parse",
        "fixtures/captures/micro-16K-r1/contention.txt",
        "--table",
        "events",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("has no events table"), "{}", stderr(&o));
    let o = lockcast(&["parse", FTRACE, "--table", "nope"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn ingest_cpu_clock_capture_has_one_sample_row_per_header() {
    // fixtures/samples: `perf record -g -e cpu-clock` of lrufault (fixtures/capture-samples.sh)
    let p = "fixtures/samples/micro-16K-cpu-clock-g/script.txt.gz";
    let text = gunzip(p);
    let headers = count_event(&text, " cpu-clock: ");
    assert_eq!(headers, 4081, "meta says samples=4081");
    let frames = text
        .lines()
        .filter(|l| l.starts_with('\t') && l.ends_with(')'))
        .count();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.parquet");
    let o = lockcast(&[
        "parse",
        p,
        "--table",
        "samples",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let df = read_pq(&out);
    assert_eq!(df.height(), headers);
    let sym = df.column("stack_symbol").unwrap().list().unwrap();
    let total: usize = sym
        .amortized_iter()
        .map(|s| s.map_or(0, |s| s.as_ref().len()))
        .sum();
    assert_eq!(total, frames);
}

#[test]
fn ingest_khugepaged_events_fill_their_typed_tables() {
    // fixtures/lazyfree/khugepaged-r1: perf record -a of huge_memory:mm_khugepaged_scan_pmd,
    // mm_collapse_huge_page, mm_collapse_huge_page_isolate and two other events
    let p = "fixtures/lazyfree/khugepaged-r1/events.txt.gz";
    let text = gunzip(p);
    let scans = count_event(&text, " huge_memory:mm_khugepaged_scan_pmd: ");
    let collapses = count_event(&text, " huge_memory:mm_collapse_huge_page");
    assert!(scans > 0 && collapses > 0, "{scans} {collapses}");
    let other = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains(" huge_memory:"))
        .count();
    // those of them with key=value pairs (sys_enter_madvise prints `start: 0x...`, no pairs)
    let other_kv = text
        .lines()
        .filter(|l| !l.contains(" huge_memory:") && l.contains('='))
        .count();
    let dir = tempfile::tempdir().unwrap();
    let o = lockcast(&[
        "parse",
        p,
        "--table",
        "khugepaged_scan_pmd,collapse_huge_page,fields,events",
        "-o",
        &dir.path().to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let df = |t: &str| read_pq(&dir.path().join(format!("{t}.parquet")));
    let scan = df("khugepaged_scan_pmd");
    assert_eq!(scan.height(), scans);
    assert_eq!(df("collapse_huge_page").height(), collapses);
    assert_eq!(df("events").height(), scans + collapses + other);
    // the other events (mmap_lock, sys_enter_madvise) went to `fields`, one row per pair
    let fields = df("fields");
    let lines = fields.column("line").unwrap().u64().unwrap();
    let mut distinct: Vec<u64> = lines.iter().flatten().collect();
    distinct.dedup();
    assert_eq!(distinct.len(), other_kv);
    // the first scan's status as printed
    let first = text
        .lines()
        .find(|l| l.contains(" huge_memory:mm_khugepaged_scan_pmd: "))
        .unwrap();
    let status = scan
        .column("status")
        .unwrap()
        .str()
        .unwrap()
        .get(0)
        .unwrap();
    assert!(first.contains(&format!("status={status},")), "{first}");
}
