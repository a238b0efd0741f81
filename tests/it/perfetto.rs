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

struct Raw {
    per_event: BTreeMap<String, u64>,
    /// (tid, lock) pairing of contention_begin/end: sorted (begin ns, end ns) of every wait.
    waits: Vec<(i64, i64)>,
    comm: HashMap<i32, String>,
}

fn raw() -> Raw {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(CAPTURE)).unwrap())
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

    // Other events: one instant per raw line of each.
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

    // Thread names: per-CPU tracks, and every task by its comm.
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    for cpu in [
        "CPU 0 lru_lock holds",
        "CPU 0 waits",
        "CPU 1 lru_lock holds",
        "CPU 1 waits",
    ] {
        assert!(names.contains(&cpu), "{cpu} in {names:?}");
    }
    for (tid, comm) in &r.comm {
        let want = format!("{comm} {tid}");
        assert!(names.contains(&want.as_str()), "{want} in {names:?}");
    }
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
