//! Determinism (issue 8): the same input and options give byte-identical files, run after run
//! (each run is a new process, so a HashMap's per-process random order would show here).

use crate::common::*;

const INPUTS: [&str; 4] = [
    "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt",
    "fixtures/captures/micro-16K-r1/contention-v.txt",
    "fixtures/traces/micro-16K-g/script-ns.txt.gz",
    "fixtures/ftrace/trace-cmd-3.1.6-report-t.txt",
];

fn run_bytes(args: &[&str], out: Option<&std::path::Path>) -> Vec<u8> {
    let o = lockcast(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    match out {
        Some(p) => std::fs::read(p).unwrap(),
        None => o.stdout,
    }
}

#[test]
fn determinism_same_input_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for input in INPUTS {
        for ext in ["csv", "json", "parquet"] {
            let outs: Vec<Vec<u8>> = (0..2)
                .map(|k| {
                    let p = dir.path().join(format!("run{k}.{ext}"));
                    run_bytes(&["parse", input, "-o", &p.to_string_lossy()], Some(&p))
                })
                .collect();
            assert!(
                outs[0].len() > 100,
                "{input} {ext}: {} bytes",
                outs[0].len()
            );
            assert!(
                outs.iter().all(|o| *o == outs[0]),
                "{input}: .{ext} differs between runs"
            );
        }
        let reports: Vec<Vec<u8>> = (0..2)
            .map(|_| run_bytes(&["report", input, "--json", "--top", "50"], None))
            .collect();
        assert!(
            reports.iter().all(|r| *r == reports[0]),
            "{input}: report differs"
        );
    }
    let seed = "fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt";
    let (b, p) = (format!("{seed}#1"), format!("{seed}#2"));
    let diffs: Vec<Vec<u8>> = (0..2)
        .map(|_| run_bytes(&["diff", &b, &p, "--json"], None))
        .collect();
    assert!(diffs.iter().all(|d| *d == diffs[0]), "diff differs");
    // A trace against a table: rows paired by rank, where a tie could flip between runs.
    let t = "fixtures/traces/micro-16K-g/script-ns.txt.gz";
    let c = "fixtures/traces/micro-16K-g/contention.txt";
    let diffs: Vec<Vec<u8>> = (0..2)
        .map(|_| run_bytes(&["diff", t, c, "--json"], None))
        .collect();
    assert!(diffs.iter().all(|d| *d == diffs[0]), "trace diff differs");
    // The what-if replay's bootstrap is seeded: same seed, same interval, same bytes.
    let capture = "fixtures/replay/micro-16K-r1/script-ns.txt.gz";
    let whatif = |seed: &str| {
        run_bytes(
            &[
                "whatif",
                "lru-cache",
                capture,
                "--json",
                "--bootstrap",
                "20",
                "--seed",
                seed,
            ],
            None,
        )
    };
    let (a, b) = (whatif("7"), whatif("7"));
    assert!(a.len() > 100 && a == b, "whatif with one seed differs");
}
