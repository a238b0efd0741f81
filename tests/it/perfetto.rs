//! `lockcast export perfetto` on a real replay capture: the Chrome trace-event JSON parses,
//! slices on one track never overlap, and the counts and times are the raw capture's (read
//! here from the `perf script --ns` text itself, not through lockcast).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use crate::common::{fixture, lockcast, stderr};

const CAPTURE: &str = "replay/micro-16K-r1/script-ns.txt.gz";

/// `114.368504523` (perf script --ns seconds) -> ns.
fn secs_ns(s: &str) -> i64 {
    let (a, b) = s.split_once('.').unwrap();
    assert_eq!(b.len(), 9, "{s}");
    a.parse::<i64>().unwrap() * 1_000_000_000 + b.parse::<i64>().unwrap()
}

/// `"ts":114368504.523` in the JSON text -> ns, exactly (the writer's 3 decimals).
fn micros_ns(s: &str) -> i64 {
    let (a, b) = s.split_once('.').unwrap();
    assert_eq!(b.len(), 3, "{s}");
    a.parse::<i64>().unwrap() * 1000 + b.parse::<i64>().unwrap()
}

/// The `thread_name` of every track.
fn thread_names(events: &[serde_json::Value]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect()
}

/// Every task of the raw capture has its track, named `comm tid`, and each of its other
/// events is one instant.
fn assert_tasks_and_instants(events: &[serde_json::Value], r: &Raw) {
    let names = thread_names(events);
    assert!(!r.comm.is_empty());
    for (tid, comm) in &r.comm {
        let want = format!("{comm} {tid}");
        assert!(names.contains(&want.as_str()), "{want} in {names:?}");
    }
    let mut instants: BTreeMap<String, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "i") {
        *instants
            .entry(e["name"].as_str().unwrap().into())
            .or_default() += 1;
    }
    for name in [
        "kmem:mm_page_alloc",
        "kmem:mm_page_free",
        "pagemap:mm_lru_insertion",
    ] {
        assert_eq!(instants.get(name), r.per_event.get(name), "{name}");
    }
}

struct Raw {
    per_event: BTreeMap<String, u64>,
    /// (tid, lock) pairing of contention_begin/end: sorted (begin ns, end ns) of every wait.
    waits: Vec<(i64, i64)>,
    comm: HashMap<i32, String>,
}

fn raw() -> Raw {
    raw_of(CAPTURE)
}

/// [`Raw`] of a gzipped `perf script --ns` text under `fixtures/`.
fn raw_of(capture: &str) -> Raw {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(capture)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut per_event = BTreeMap::new();
    let mut open: HashMap<(i32, String), i64> = HashMap::new();
    let mut waits = Vec::new();
    let mut comm = HashMap::new();
    for line in text.lines() {
        // `        lrufault  2162 [001]   114.368504523:       kmem:mm_page_alloc: page=...`
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(i) = f
            .iter()
            .position(|w| w.starts_with('[') && w.ends_with(']'))
        else {
            continue;
        };
        let tid: i32 = f[i - 1].parse().unwrap();
        comm.entry(tid).or_insert_with(|| f[..i - 1].join(" "));
        let ts = secs_ns(f[i + 1].trim_end_matches(':'));
        let event = f[i + 2].trim_end_matches(':').to_string();
        *per_event.entry(event.clone()).or_default() += 1;
        let lock = f
            .iter()
            .find_map(|w| w.strip_prefix("lock="))
            .unwrap_or("")
            .to_string();
        match event.as_str() {
            "lock:contention_begin" => {
                open.entry((tid, lock)).or_insert(ts);
            }
            "lock:contention_end" => {
                if let Some(b) = open.remove(&(tid, lock)) {
                    waits.push((b, ts));
                }
            }
            _ => {}
        }
    }
    waits.sort();
    Raw {
        per_event,
        waits,
        comm,
    }
}

#[test]
fn perfetto_export_counts_times_and_tracks_match_the_raw_capture() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let o = lockcast(&[
        "export",
        "perfetto",
        &fixture(CAPTURE).to_string_lossy(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = v["traceEvents"].as_array().unwrap();
    let r = raw();

    // ts/dur exactly as written (3 decimals), one line per event: read them from the text.
    let num = |line: &str, key: &str| -> Option<i64> {
        let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
        let end = line[at..].find([',', '}']).unwrap() + at;
        Some(micros_ns(&line[at..end]))
    };
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("\"ph\":\"")).collect();
    assert_eq!(lines.len(), events.len());

    // Traced waits: every (begin, end) of the raw pairing, to the ns.
    let mut waits: Vec<(i64, i64)> = lines
        .iter()
        .filter(|l| l.contains("\"cat\":\"wait\""))
        .map(|l| {
            let ts = num(l, "ts").unwrap();
            (ts, ts + num(l, "dur").unwrap())
        })
        .collect();
    waits.sort();
    assert_eq!(waits.len() as u64, r.per_event["lock:contention_begin"]);
    assert_eq!(waits, r.waits);

    // Other events: one instant per raw line of each; every task's track by its comm.
    assert_tasks_and_instants(events, &r);
    // Add-side holds: every mm_lru_insertion is inside exactly one.
    let add_folios: u64 = events
        .iter()
        .filter(|e| e["cat"] == "hold" && e["args"]["side"] == "add")
        .map(|e| e["args"]["folios"].as_u64().unwrap())
        .sum();
    assert_eq!(add_folios, r.per_event["pagemap:mm_lru_insertion"]);

    // No two slices of one track overlap (a viewer would nest them).
    let mut by_track: HashMap<(u64, u64), Vec<(i64, i64)>> = HashMap::new();
    for (e, l) in events.iter().zip(&lines) {
        if e["ph"] == "X" {
            let k = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            let ts = num(l, "ts").unwrap();
            by_track
                .entry(k)
                .or_default()
                .push((ts, ts + num(l, "dur").unwrap()));
        }
    }
    assert!(by_track.len() >= 4, "holds and waits of both CPUs");
    for (k, mut s) in by_track {
        s.sort();
        for w in s.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "track {k:?}: {:?} overlaps {:?}",
                w[0],
                w[1]
            );
        }
    }

    // Thread names: per-CPU tracks.
    let names = thread_names(events);
    for cpu in [
        "CPU 0 lru_lock holds",
        "CPU 0 waits",
        "CPU 1 lru_lock holds",
        "CPU 1 waits",
    ] {
        assert!(names.contains(&cpu), "{cpu} in {names:?}");
    }
}

/// From a perf.data the task names come from the record reader, which leaves the payloads
/// unrendered there: every task is still named by the comm `perf script` printed for it (the
/// recording's own text, bundled beside it), and every other event is one instant.
#[test]
fn perfetto_export_of_a_perf_data_names_every_task_as_perf_script_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let o = lockcast(&[
        "export",
        "perfetto",
        &fixture("perfdata/micro-16K-replay/perf.data.gz").to_string_lossy(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let r = raw_of("perfdata/micro-16K-replay/script-ns.txt.gz");
    assert_tasks_and_instants(events, &r);
}

/// `-o -` writes the JSON to standard output (it made a file named `-`), the same bytes as
/// `-o FILE`.
#[test]
fn perfetto_export_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let capture = fixture(CAPTURE).to_string_lossy().into_owned();
    let o = lockcast(&["export", "perfetto", &capture, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = std::process::Command::new(env!("CARGO_BIN_EXE_lockcast"))
        .args(["export", "perfetto", &capture, "-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", stderr(&s));
    assert!(
        stderr(&s).contains("wrote standard output"),
        "{}",
        stderr(&s)
    );
    assert_eq!(s.stdout, std::fs::read(&out).unwrap());
    assert!(!dir.path().join("-").exists());
}

#[test]
fn perfetto_export_of_a_perf_lock_table_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let o = lockcast(&[
        "export",
        "perfetto",
        &fixture("captures/micro-16K-r1/contention.txt").to_string_lossy(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn perfetto_whatif_adds_the_replay_as_a_second_process() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let capture = fixture(CAPTURE).to_string_lossy().into_owned();
    let o = lockcast(&[
        "export",
        "perfetto",
        &capture,
        "-o",
        out.to_str().unwrap(),
        "--whatif",
        "baseline",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let procs: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(procs.len(), 2, "{procs:?}");
    assert_eq!(procs[1], "predicted: baseline");
    let of = |pid: u64, cat: &str| -> Vec<&serde_json::Value> {
        events
            .iter()
            .filter(|e| e["pid"] == pid && e["cat"] == cat)
            .collect()
    };
    // The baseline replays every measured hold once; its add side holds every inserted folio.
    assert_eq!(of(2, "hold").len(), of(1, "hold").len());
    let r = raw();
    let add: u64 = of(2, "hold")
        .iter()
        .filter(|e| e["args"]["side"] == "add")
        .map(|e| e["args"]["folios"].as_u64().unwrap())
        .sum();
    assert_eq!(add, r.per_event["pagemap:mm_lru_insertion"]);
    // Its traced waits are the contended count `whatif` prints for the same replay.
    let w = lockcast(&["whatif", "baseline", &capture, "--bootstrap", "0", "--json"]);
    assert!(w.status.success(), "{}", stderr(&w));
    let j: serde_json::Value = serde_json::from_slice(&w.stdout).unwrap();
    let traced = of(2, "wait")
        .iter()
        .filter(|e| e["args"]["traced"] == true)
        .count() as u64;
    assert_eq!(
        traced,
        j["rows"][0]["predicted"]["contended"].as_u64().unwrap()
    );
    // Slices of one predicted track do not overlap (µs floats here: the replay's holds are
    // whole ns, so a 1e-3 µs slack is below the smallest step).
    let mut by_track: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
    for e in events.iter().filter(|e| e["pid"] == 2 && e["ph"] == "X") {
        let ts = e["ts"].as_f64().unwrap();
        by_track
            .entry(e["tid"].as_u64().unwrap())
            .or_default()
            .push((ts, ts + e["dur"].as_f64().unwrap()));
    }
    for (tid, mut s) in by_track {
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for p in s.windows(2) {
            assert!(
                p[0].1 <= p[1].0 + 1e-3,
                "track {tid}: {:?} overlaps {:?}",
                p[0],
                p[1]
            );
        }
    }
}
