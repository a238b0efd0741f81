//! `whatif --time`: the part of a capture it replays, checked against the raw text of the
//! bundled 16K replay capture (every line of it is an event the replay reads).

use std::io::{BufRead, BufReader};

use crate::common::{fixture, lockcast, stderr, stdout};

const LOCK: &str = "0xffff888112cdf498";

fn capture() -> String {
    fixture("replay/micro-16K-r1/script-ns.txt.gz")
        .to_string_lossy()
        .into_owned()
}

/// One line of the raw text: its timestamp in ns (read from the digits, not through a
/// float) and its event name.
struct Line {
    ts: i64,
    event: String,
    rest: String,
}

fn raw_lines() -> Vec<Line> {
    let f = std::fs::File::open(capture()).expect("open");
    let mut out = Vec::new();
    for line in BufReader::new(flate2::read::GzDecoder::new(f)).lines() {
        let line = line.expect("gzip text");
        let toks: Vec<&str> = line.split_whitespace().collect();
        let at = toks
            .iter()
            .position(|t| t.ends_with(':') && t.contains('.') && t.as_bytes()[0].is_ascii_digit())
            .expect("a timestamp token");
        let (s, ns) = toks[at].trim_end_matches(':').split_once('.').unwrap();
        assert_eq!(ns.len(), 9, "perf script --ns prints nine digits");
        let ts = s.parse::<i64>().unwrap() * 1_000_000_000 + ns.parse::<i64>().unwrap();
        out.push(Line {
            ts,
            event: toks[at + 1].trim_end_matches(':').to_string(),
            rest: toks[at + 2..].join(" "),
        });
    }
    out
}

fn seconds(ns: i64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

fn whatif(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["whatif"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--bootstrap", "0"]);
    let o = lockcast(&all);
    assert!(o.status.success(), "{all:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("json")
}

/// Between two times at which no CPU waits for the lock, the measured waits are exactly the
/// `contention_begin`s on the lock there, and the folios added the insertions there.
#[test]
fn whatif_time_measures_the_waits_and_folios_of_its_range() {
    let lines = raw_lines();
    let (first, last) = (lines[0].ts, lines[lines.len() - 1].ts);
    // times where no wait on the lock is open: a begin that opens the first one, an end that
    // closes the last one
    let (mut open, mut quiet_begins, mut quiet_ends) = (0i64, Vec::new(), Vec::new());
    for l in &lines {
        if !l.rest.starts_with(LOCK) {
            continue;
        }
        match l.event.as_str() {
            "lock:contention_begin" => {
                if open == 0 {
                    quiet_begins.push(l.ts);
                }
                open += 1;
            }
            "lock:contention_end" => {
                open -= 1;
                if open == 0 {
                    quiet_ends.push(l.ts);
                }
            }
            _ => {}
        }
    }
    let near = |v: &[i64], at: i64| *v.iter().min_by_key(|&&t| (t - at).abs()).unwrap();
    let span = last - first;
    let from = near(&quiet_begins, first + span * 3 / 10);
    let to = near(&quiet_ends, first + span * 7 / 10);
    assert!(from < to);
    let inside = |l: &&Line| from <= l.ts && l.ts <= to;
    let begins = lines
        .iter()
        .filter(inside)
        .filter(|l| l.event == "lock:contention_begin" && l.rest.starts_with(LOCK))
        .count() as u64;
    let insertions = lines
        .iter()
        .filter(inside)
        .filter(|l| l.event == "pagemap:mm_lru_insertion")
        .count() as u64;
    let kept = lines.iter().filter(inside).count() as u64;

    let spec = format!("{},{}", seconds(from), seconds(to));
    let v = whatif(&["baseline", &capture(), "--time", &spec]);
    let row = &v["rows"][0];
    assert_eq!(
        row["measured"]["contended"].as_u64(),
        Some(begins),
        "{spec}"
    );
    assert!(
        begins > 100 && begins < 799,
        "a real part: {begins} of 799 waits"
    );
    assert_eq!(v["identities"]["folios_added"].as_u64(), Some(insertions));
    let t = &v["time"];
    assert_eq!(t["from_ns"].as_i64(), Some(from));
    assert_eq!(t["to_ns"].as_i64(), Some(to));
    assert_eq!(t["capture_from_ns"].as_i64(), Some(first));
    assert_eq!(t["capture_to_ns"].as_i64(), Some(last));
    assert_eq!(t["events"].as_u64(), Some(kept));
    assert_eq!(t["of_events"].as_u64(), Some(lines.len() as u64));
    // the no-change replay of the part stays close to the part's own measurement
    let (replayed, measured) = (
        row["replayed"]["contended"].as_f64().unwrap(),
        row["measured"]["contended"].as_f64().unwrap(),
    );
    assert!(
        (replayed - measured).abs() / measured < 0.25,
        "{replayed} vs {measured}"
    );
}

/// `A%-B%` is of the span from the first to the last replayed event, as perf's percent form
/// is of the first and last sample; 0%-100% replays the whole capture, with the same answer
/// as no `--time`.
#[test]
fn whatif_time_percentages_are_of_the_capture_span() {
    let lines = raw_lines();
    let (first, last) = (
        lines.iter().map(|l| l.ts).min().unwrap(),
        lines.iter().map(|l| l.ts).max().unwrap(),
    );
    let v = whatif(&["lru-cache", &capture(), "--time", "25%-75%"]);
    let t = &v["time"];
    assert_eq!(t["from_ns"].as_i64(), Some(first + (last - first) / 4));
    assert_eq!(t["to_ns"].as_i64(), Some(first + (last - first) * 3 / 4));
    let (a, b) = (first + (last - first) / 4, first + (last - first) * 3 / 4);
    let kept = lines.iter().filter(|l| a <= l.ts && l.ts <= b).count() as u64;
    assert_eq!(t["events"].as_u64(), Some(kept));

    let whole = whatif(&["lru-cache", &capture()]);
    let all = whatif(&["lru-cache", &capture(), "--time", "0%-100%"]);
    assert!(whole.get("time").is_none(), "no --time, no time object");
    assert_eq!(all["time"]["events"], all["time"]["of_events"]);
    for k in ["rows", "calibration", "identities", "sensitivity"] {
        assert_eq!(whole[k], all[k], "{k}");
    }
    assert_eq!(
        whole["rows"][0]["measured"]["contended"].as_u64(),
        Some(799)
    );
}

/// The text report says which part it replayed, before its numbers.
#[test]
fn whatif_time_is_named_in_the_text_report() {
    let o = lockcast(&[
        "whatif",
        "lru-cache",
        &capture(),
        "--time",
        "114.4,",
        "--bootstrap",
        "0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("time "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("time 114.400000000..114.423675751 s (--time 114.400000000,)"),
        "{line}"
    );
    assert!(
        line.contains("of the capture's 63837 replayed events"),
        "{line}"
    );
    let table = text.find("acquisitions").unwrap();
    assert!(text.find(line).unwrap() < table);
}

/// A bad range, a range without events and a capture without times are refused with exit
/// code 2, saying what was expected; nothing is printed on standard output.
#[test]
fn whatif_time_refuses_what_it_cannot_cut() {
    let cap = capture();
    let table = fixture("replay/micro-16K-r1/contention.txt")
        .to_string_lossy()
        .into_owned();
    for (args, want) in [
        (vec!["lru-cache", &cap, "--time", "114.4"], "START,STOP"),
        (vec!["lru-cache", &cap, "--time", "60%-20%"], "A <= B"),
        (vec!["lru-cache", &cap, "--time", "114.5,114.4"], "START <= STOP"),
        (
            vec!["lru-cache", &cap, "--time", "1,2"],
            "no event to replay in 1.000000000..2.000000000 s; the capture's events span 114.368504523..114.423675751 s",
        ),
        (vec!["lru-cache", &table, "--time", "1,2"], "a perf lock table has no times"),
        (
            vec![
                "folio-size",
                &cap,
                "--set",
                "folio_kb=64",
                "--set",
                "target_duration_ns=1000000",
                "--time",
                "10%-90%",
            ],
            "not with --time",
        ),
    ] {
        let mut all = vec!["whatif"];
        all.extend_from_slice(&args);
        let o = lockcast(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{all:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{all:?}");
    }
}

/// `plot whatif` of a part's report says which part, under its title; a whole capture's
/// chart says nothing of the kind.
#[test]
fn whatif_time_is_named_on_the_chart() {
    let dir = tempfile::tempdir().unwrap();
    for (time, want) in [
        (
            Some("40%-60%"),
            Some("time 114.390573014..114.401607259 s (--time 40%-60%); bar = point prediction"),
        ),
        (None, None),
    ] {
        let mut args = vec!["whatif", "lru-cache", "--json", "--bootstrap", "0"];
        let cap = capture();
        args.push(&cap);
        if let Some(t) = time {
            args.extend_from_slice(&["--time", t]);
        }
        let o = lockcast(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let svg = dir.path().join("w.svg");
        let p = crate::common::lockcast_stdin(
            &["plot", "whatif", "-", "-o", svg.to_str().unwrap()],
            &o.stdout,
        );
        assert!(p.status.success(), "{}", stderr(&p));
        let text = std::fs::read_to_string(&svg).unwrap();
        match want {
            Some(w) => assert!(text.contains(w), "{w:?} not in the chart"),
            None => assert!(!text.contains("--time"), "a whole capture's chart"),
        }
    }
}
