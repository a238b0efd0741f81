//! The what-if engine on the real replay captures of fixtures/replay (capture-replay.sh):
//! measured values against the raw text, counting identities against the kernel's batching
//! rules, the no-change replay against the measurement, policies' acquisition counts, and the
//! CLI contract of `whatif` / `validate`.

use std::io::{BufRead, BufReader};

use crate::common::{fixture, lockcast, whatif_run as run, SEED};

const SIZES: [&str; 4] = ["4K", "16K", "32K", "64K"];
/// lrufault -t 2 -s 16 -l 10: 2 threads × 10 loops × 16 MiB of 4 KiB pages.
const WORKLOAD_PAGES: f64 = 81920.0;

fn capture(size: &str, run: u32) -> String {
    fixture(&format!("replay/micro-{size}-r{run}/script-ns.txt.gz"))
        .to_string_lossy()
        .into_owned()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b) / b
}

#[test]
fn whatif_measured_values_are_those_of_the_raw_text() {
    let path = capture("16K", 1);
    let o = run(&path, "baseline", &[]);
    // count the raw lines independently of the parser
    let f = std::fs::File::open(&path).expect("open");
    let (mut begins_on_lock, mut begins_all, mut insertions) = (0u64, 0u64, 0u64);
    for line in BufReader::new(flate2::read::GzDecoder::new(f)).lines() {
        let line = line.expect("gzip text");
        if line.contains("lock:contention_begin:") {
            begins_all += 1;
            if line.contains(&format!("contention_begin: {} ", o.lock)) {
                begins_on_lock += 1;
            }
        }
        if line.contains("pagemap:mm_lru_insertion:") {
            insertions += 1;
        }
    }
    assert_eq!(o.lock, "0xffff888112cdf498");
    assert_eq!(o.measured.contended, begins_on_lock);
    assert_eq!(o.measured.contended, 799);
    assert_eq!(o.identities.folios_added, insertions);
    assert_eq!(o.identities.folios_added, 20519);
    // perf lock contention of the same recording counts every lock: 887 = all begins
    let c = std::fs::read_to_string(fixture("replay/micro-16K-r1/contention.txt"))
        .expect("contention.txt");
    assert!(c.contains("       887 "), "{c}");
    assert_eq!(begins_all, 887);
    assert_eq!(o.observation_source, "meta file");
}

#[test]
fn whatif_identities_and_no_change_replay_on_every_capture() {
    let mut report = String::new();
    for size in SIZES {
        let mut errs = Vec::new();
        for r in 1..=3 {
            let o = run(&capture(size, r), "baseline", &[]);
            let id = &o.identities;
            // identities: the kernel's batching rules give back the capture's own hold counts
            let add = rel(id.add_holds_rule as f64, id.add_holds_measured as f64);
            let free = rel(id.free_holds_rule as f64, id.free_holds as f64);
            assert!(add.abs() <= 0.02, "{size} r{r}: add holds {id:?}");
            assert!(free.abs() <= 0.05, "{size} r{r}: free holds {id:?}");
            assert!(
                rel(id.pages_added as f64, WORKLOAD_PAGES).abs() < 0.002,
                "{size} r{r}: {id:?}"
            );
            // the no-change replay is the baseline policy, so acquisitions are the rule's
            assert_eq!(o.replayed.acquisitions, id.add_holds_rule + id.free_holds);
            let ec = rel(o.replayed.contended as f64, o.measured.contended as f64);
            let ew = rel(
                o.replayed.total_wait_ns.as_f64(),
                o.measured.total_wait_ns.as_f64(),
            );
            report += &format!("{size} r{r}: contended {:+.3} total wait {:+.3}\n", ec, ew);
            assert!(ec.abs() < 0.30 && ew.abs() < 0.30, "{size} r{r}: {report}");
            errs.push(ec.abs().max(ew.abs()));
        }
        errs.sort_by(f64::total_cmp);
        assert!(
            errs[1] <= 0.15,
            "{size}: median |error| {} > 15%\n{report}",
            errs[1]
        );
    }
    eprintln!("{report}");
}

#[test]
fn whatif_lru_cache_batches_order2_folios_eight_or_seven_per_drain() {
    let path = capture("16K", 1);
    let after = run(&path, "lru-cache", &[]);
    let before = run(&path, "lru-cache", &[("drain_rule", "before-add")]);
    let free = after.identities.free_holds_rule;
    // 20 zaps × 1024 order-2 folios: 1024/8 = 128 drains per zap after-add, ⌈1024/7⌉ = 147
    // before-add; the few order-0 folios of the capture ride along in those batches.
    let adds_after = after.predicted.acquisitions - free;
    let adds_before = before.predicted.acquisitions - free;
    assert!(rel(adds_after as f64, 2560.0).abs() < 0.01, "{adds_after}");
    assert!(
        rel(adds_before as f64, 2940.0).abs() < 0.01,
        "{adds_before}"
    );
    // fewer acquisitions, fewer traced waits, each one longer (the holds grew)
    assert!(after.predicted.contended < after.replayed.contended);
    assert!(after.predicted.avg_wait_ns() > after.replayed.avg_wait_ns());
    // 128K folios are not cached: nothing changes
    let big = run(&path, "lru-cache", &[("max_cached_pages", "4")]);
    assert_eq!(big.predicted, big.replayed);
}

#[test]
fn whatif_folio_size_reproduces_acquisitions_of_other_sizes() {
    let base = capture("16K", 1);
    for (kb, size) in [(4, "4K"), (32, "32K"), (64, "64K")] {
        let measured = run(&capture(size, 1), "baseline", &[]);
        let kb = kb.to_string();
        let o = run(&base, "folio-size", &[("folio_kb", kb.as_str())]);
        let e = rel(
            o.predicted.acquisitions as f64,
            measured.measured.acquisitions as f64,
        );
        assert!(
            e.abs() < 0.03,
            "{size}: predicted {} measured {}",
            o.predicted.acquisitions,
            measured.measured.acquisitions
        );
    }
}

#[test]
fn cli_whatif_json_has_the_documented_keys_and_is_deterministic() {
    let path = capture("32K", 1);
    let args = [
        "whatif",
        "lru-cache",
        path.as_str(),
        "--json",
        "--bootstrap",
        "20",
        "--seed",
        "7",
    ];
    let a = lockcast(&args);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = lockcast(&args);
    assert_eq!(a.stdout, b.stdout, "same seed, same output");
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).expect("json");
    let row = &v["rows"][0];
    for k in [
        "policy",
        "lock",
        "measured",
        "replayed",
        "predicted",
        "ratio_contended",
        "ratio_total_wait",
        "interval",
    ] {
        assert!(!row[k].is_null(), "missing {k}: {row}");
    }
    for m in ["measured", "replayed", "predicted"] {
        for k in ["acquisitions", "contended", "total_wait_ns"] {
            assert!(row[m][k].is_number(), "{m}.{k}");
        }
    }
    let (lo, hi, p) = (
        row["interval"]["low"]["contended"]
            .as_u64()
            .unwrap_or(u64::MAX),
        row["interval"]["high"]["contended"].as_u64().unwrap_or(0),
        row["predicted"]["contended"].as_u64().unwrap_or(0),
    );
    assert!(lo <= hi && lo > 0, "{lo}..{hi} around {p}");
    assert_eq!(row["measured"]["contended"], 258);
}

#[test]
fn cli_validate_prints_errors_against_the_after_capture() {
    let base = capture("16K", 1);
    let after = capture("32K", 1);
    let out = lockcast(&[
        "validate",
        "folio-size",
        &base,
        &after,
        "--json",
        "--bootstrap",
        "0",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["params"]["folio_kb"], "32");
    let row = &v["rows"][0];
    assert_eq!(row["after"]["contended"], 258);
    assert!(row["error"]["acquisitions"]
        .as_f64()
        .is_some_and(|e| e.abs() < 0.03));
}

#[test]
fn cli_whatif_bad_requests_exit_2_and_3() {
    let path = capture("64K", 1);
    let out = lockcast(&["whatif", "no-such-policy", &path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown policy 'no-such-policy'"));
    let out = lockcast(&["whatif", "lru-cache", &path, "--set", "max_cahced_pages=8"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown parameter 'max_cahced_pages'"));
    let seed = format!("{}#1", fixture(SEED).display());
    let out = lockcast(&["whatif", "lru-cache", &seed]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a table needs folio_kb and cpus"
    );
    // a trace without any mm events: the perf-report fixture is not a trace at all
    let ftrace = fixture("captures/micro-16K-r1/contention.txt");
    let out = lockcast(&["validate", "baseline", &path, &ftrace.to_string_lossy()]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cli_whatif_summary_mode_on_the_seed_table() {
    // Validation 5: the seed's w/o-patch table, 20 threads, 16 KiB folios (MODELS.md §7).
    let seed = format!("{}#1", fixture(SEED).display());
    let out = lockcast(&[
        "whatif",
        "lru-cache",
        &seed,
        "--set",
        "folio_kb=16",
        "--set",
        "cpus=20",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["contended"], 21414857);
    let rc = v["point"]["ratio_contended"].as_f64().unwrap_or(0.0);
    let rw = v["point"]["ratio_total_wait"].as_f64().unwrap_or(0.0);
    eprintln!("summary mode on the seed: contended {rc:.2}x (posted 8.11x), total wait {rw:.2}x (posted 5.21x)");
    assert!(rel(rc, 8.11).abs() <= 0.20, "{rc}");
    assert!(rel(rw, 5.21).abs() <= 0.20, "{rw}");
}

#[test]
fn cli_whatif_csv_and_markdown_formats() {
    let path = capture("32K", 1);
    let out = lockcast(&[
        "whatif",
        "baseline",
        &path,
        "--bootstrap",
        "0",
        "--format",
        "csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8_lossy(&out.stdout);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("row,acquisitions,contended,total_wait_ns,avg_wait_ns")
    );
    // measured row: 258 traced waits on the lru lock, 197246 ns in total (the raw text's sum)
    assert_eq!(lines.next(), Some("measured,10637,258,197246,765"));
    let out = lockcast(&[
        "whatif",
        "baseline",
        &path,
        "--bootstrap",
        "0",
        "--format",
        "markdown",
    ]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("| measured | 10637 | 258 | 197.25 us | 765 ns |"),
        "{md}"
    );
}
