//! Work what-ifs on trace formats other than `perf script` (issue 18): the khugepaged
//! scenario recorded through a tracefs instance by fixtures/capture-khugepaged-trace.sh, one
//! run printed as raw ftrace text (`trace.txt.gz`) and as `trace-cmd report -t` of the same
//! buffer (`trace-cmd-report.txt.gz`). Every expected value is counted in the raw text by
//! the test itself (the `zcat | grep -c` of the file).

use std::io::Read;

use serde_json::Value;

use crate::common::{fixture, lockcast, stderr, stdout};

const DIR: &str = "lazyfree/khugepaged-ftrace";

fn gunzip(p: &str) -> String {
    let f = std::fs::File::open(fixture(p)).unwrap();
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(f)
        .read_to_string(&mut s)
        .unwrap();
    s
}

fn whatif_json(capture: &str, extra: &[&str]) -> Value {
    let mut args = vec!["whatif", "khugepaged-lazyfree", capture, "--json"];
    args.extend_from_slice(extra);
    let o = lockcast(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// `task=NAME pid=N` of workload.txt.
fn pid_of(task: &str) -> String {
    let w = std::fs::read_to_string(fixture(&format!("{DIR}/workload.txt"))).unwrap();
    w.lines()
        .find_map(|l| l.strip_prefix(&format!("task={task} pid=")))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// The tid of an ftrace / trace-cmd event line: `comm-TID` right before the `[cpu]` field.
fn tid(line: &str) -> Option<&str> {
    let head = &line[..line.find(" [")?];
    head.trim_end().rsplit('-').next()
}

/// The mm of a task as the text prints it: its first mmap_lock event after its first
/// madvise (the mm the policy ties the task to).
fn mm_of(raw: &str, pid: &str) -> String {
    let mut after = false;
    for l in raw.lines().filter(|l| tid(l) == Some(pid)) {
        if l.contains("madvise") {
            after = true;
        } else if after && l.contains("mmap_lock_acquire_returned:") {
            let mm = l.split("mm=").nth(1).unwrap();
            return mm.split_whitespace().next().unwrap().to_string();
        }
    }
    panic!("no mmap_lock event of {pid} after a madvise");
}

/// What the raw text says, counted line by line.
struct Counts {
    scans: usize,
    by_status: Vec<(String, usize)>,
    cold_scans: usize,
    cold_collapsed: usize,
    hot1_collapsed: usize,
    hot2_collapsed: usize,
}

fn counts(raw: &str) -> Counts {
    let scans: Vec<&str> = raw
        .lines()
        .filter(|l| l.contains("mm_khugepaged_scan_pmd:"))
        .collect();
    let of = |task: &str, ok: bool| {
        let mm = format!("mm={},", mm_of(raw, &pid_of(task)));
        scans
            .iter()
            .filter(|l| l.contains(&mm) && (!ok || l.contains("status=succeeded")))
            .count()
    };
    let mut by_status = std::collections::BTreeMap::new();
    for l in &scans {
        let s = l
            .split("status=")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        *by_status.entry(s.to_string()).or_insert(0) += 1;
    }
    Counts {
        scans: scans.len(),
        by_status: by_status.into_iter().collect(),
        cold_scans: of("cold", false),
        cold_collapsed: of("cold", true),
        hot1_collapsed: of("hot1", true),
        hot2_collapsed: of("hot2", true),
    }
}

fn vmstat_delta(key: &str) -> i64 {
    let v = |f: &str| -> i64 {
        std::fs::read_to_string(fixture(&format!("{DIR}/{f}")))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    v("vmstat-after.txt") - v("vmstat-before.txt")
}

fn check(j: &Value, c: &Counts, names: [&str; 3]) {
    let (m, p) = (&j["measured"], &j["predicted"]);
    let [hot1, cold, hot2] = names;
    assert_eq!(m["scans"], c.scans);
    for (s, n) in &c.by_status {
        assert_eq!(m["scans_by_status"][s], *n, "{s}");
    }
    assert_eq!(m["lazyfree_scans"], c.cold_scans);
    assert_eq!(m[format!("{cold}.scans")], c.cold_scans);
    assert_eq!(m[format!("{cold}.lazyfree")], true);
    assert_eq!(m[format!("{hot1}.collapses")], c.hot1_collapsed);
    assert_eq!(m[format!("{hot2}.collapses")], c.hot2_collapsed);
    assert_eq!(m["null_replay_max_error_ns"], 0);
    assert_eq!(p["collapses_saved"], c.cold_collapsed);
    assert_eq!(p["ptes_scanned_saved"], c.cold_scans as u64 * 511);
    // hot1 registered before cold: the skip cannot help it; hot2 comes sooner
    assert_eq!(p[format!("{hot1}.sooner_ns")], 0);
    let s = p[format!("{hot2}.sooner_ns")].as_i64().unwrap();
    let s1 = p[format!("{hot2}.sooner_ns_skip_progress_1")]
        .as_i64()
        .unwrap();
    assert!(s > 0 && s1 > s, "{s} {s1}");
}

#[test]
fn khugepaged_whatif_on_raw_ftrace_counts_the_raw_text() {
    let raw = gunzip(&format!("{DIR}/trace.txt.gz"));
    let c = counts(&raw);
    // the capture reached every task: 32 MiB is 16 PMD ranges a task, each hot one collapsed
    // whole and the cold one scanned over and over (lack_referenced_page: MADV_FREE'd)
    assert_eq!((c.hot1_collapsed, c.hot2_collapsed), (16, 16));
    assert!(c.cold_scans >= 16, "{}", c.cold_scans);
    // raw ftrace hashes %p: the mm the test matched on is the hashed one
    assert!(!raw.contains("mm=0xffff"));
    for capture in [
        format!("fixtures/{DIR}"),
        format!("fixtures/{DIR}/trace.txt.gz"),
    ] {
        let j = whatif_json(&capture, &[]);
        check(&j, &c, ["hot1", "cold", "hot2"]);
        assert_eq!(
            j["measured"]["thp_collapse_alloc"],
            vmstat_delta("thp_collapse_alloc")
        );
        let notes = j["notes"].to_string();
        assert!(notes.contains("1000 ns resolution"), "{notes}");
    }
}

#[test]
fn khugepaged_whatif_on_trace_cmd_report_counts_its_text() {
    let raw = gunzip(&format!("{DIR}/trace-cmd-report.txt.gz"));
    let c = counts(&raw);
    let j = whatif_json(&format!("fixtures/{DIR}/trace-cmd-report.txt.gz"), &[]);
    check(&j, &c, ["hot1", "cold", "hot2"]);
    // the same buffer as trace.txt.gz: the same counts, real addresses, ns timestamps
    let f = counts(&gunzip(&format!("{DIR}/trace.txt.gz")));
    assert_eq!(
        (c.scans, c.cold_scans, c.cold_collapsed, &c.by_status),
        (f.scans, f.cold_scans, f.cold_collapsed, &f.by_status)
    );
    assert!(raw.contains("mm=0xffff"));
    assert!(!j["notes"].to_string().contains("ns resolution"));
}

#[test]
fn khugepaged_whatif_takes_missing_meta_from_set() {
    // the trace alone, away from its meta.txt and workload.txt
    let tmp = tempfile::tempdir().unwrap();
    let lone = tmp.path().join("trace.txt.gz");
    std::fs::copy(fixture(&format!("{DIR}/trace.txt.gz")), &lone).unwrap();
    let lone = lone.to_str().unwrap();
    let o = lockcast(&["whatif", "khugepaged-lazyfree", lone]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--set scan_sleep_millisecs=N"),
        "{}",
        stderr(&o)
    );
    let o = lockcast(&[
        "whatif",
        "khugepaged-lazyfree",
        lone,
        "--set",
        "scan_sleep_millisecs=100",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("--set pages_to_scan=N"),
        "{}",
        stderr(&o)
    );
    // the values meta.txt records
    let meta = std::fs::read_to_string(fixture(&format!("{DIR}/meta.txt"))).unwrap();
    assert!(meta.contains("khugepaged_scan_sleep_millisecs=100\n"));
    assert!(meta.contains("khugepaged_pages_to_scan=4096\n"));
    let c = counts(&gunzip(&format!("{DIR}/trace.txt.gz")));
    let tasks = format!(
        "tasks={}:hot1,{}:cold,{}:hot2",
        pid_of("hot1"),
        pid_of("cold"),
        pid_of("hot2")
    );
    let j = whatif_json(
        lone,
        &[
            "--set",
            "scan_sleep_millisecs=100",
            "--set",
            "pages_to_scan=4096",
            "--set",
            &tasks,
        ],
    );
    check(&j, &c, ["hot1", "cold", "hot2"]);
    // the same answer as with the capture directory's files
    let d = whatif_json(&format!("fixtures/{DIR}"), &[]);
    assert_eq!(j["predicted"], d["predicted"]);
    // without task names the tasks are their tids
    let j = whatif_json(
        lone,
        &[
            "--set",
            "scan_sleep_millisecs=100",
            "--set",
            "pages_to_scan=4096",
        ],
    );
    let n = |t: &str| format!("tid {}", pid_of(t));
    check(&j, &c, [&n("hot1"), &n("cold"), &n("hot2")]);
    // a malformed task list is a usage error naming the item
    let o = lockcast(&["whatif", "khugepaged-lazyfree", lone, "--set", "tasks=hot1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("'hot1': expected PID:NAME"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn syscall_tracer_lines_parse_as_perf_names_them() {
    // raw ftrace prints `sys_madvise(start: .., behavior: 8)`; trace-cmd and perf script
    // `sys_enter_madvise: start: ..`: both become sys_enter_madvise events
    for (f, needle) in [
        ("trace.txt.gz", "sys_madvise("),
        ("trace-cmd-report.txt.gz", "sys_enter_madvise:"),
    ] {
        let raw = gunzip(&format!("{DIR}/{f}"));
        let want = raw.lines().filter(|l| l.contains(needle)).count();
        assert_eq!(
            want, 4,
            "{f}: MADV_HUGEPAGE of each task, MADV_FREE of cold"
        );
        let o = lockcast(&[
            "parse",
            &format!("fixtures/{DIR}/{f}"),
            "--table",
            "events",
            "-o",
            "-",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let csv = stdout(&o);
        let rows: Vec<&str> = csv
            .lines()
            .filter(|l| l.contains(",sys_enter_madvise,"))
            .collect();
        assert_eq!(rows.len(), want, "{f}");
        // the cold task's two (MADV_HUGEPAGE, MADV_FREE) under its tid
        let cold = pid_of("cold");
        let raw_cold = raw
            .lines()
            .filter(|l| tid(l) == Some(cold.as_str()) && l.contains(needle))
            .count();
        assert_eq!(raw_cold, 2, "{f}");
        let csv_cold = rows
            .iter()
            .filter(|r| r.contains(&format!(",{cold},")))
            .count();
        assert_eq!(csv_cold, raw_cold, "{f}");
        let all = csv.lines().count() - 1;
        let events = raw
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("cpus=") && !l.trim().is_empty())
            .count();
        assert_eq!(all, events, "{f}");
    }
}
