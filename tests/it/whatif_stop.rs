//! The bootstrap's stopping rule (issue 16): replicates run in blocks of 25 and stop, from 50
//! on, once no end of the two intervals (prediction, no-change replay; contended and total
//! wait) moved more than 10% of its width over the last block. Checked from the outside: the
//! intervals of `--bootstrap N` runs (which run exactly N, the same first N replicates) are
//! compared here by the rule, so the count the default run stopped at is recomputed, not
//! taken from it.

use crate::common::{interval_ends, lockcast, stdout, whatif_json};

const CAPTURE: &str = "fixtures/replay/micro-16K-r1/script-ns.txt.gz";

fn json(extra: &[&str]) -> serde_json::Value {
    whatif_json(CAPTURE, extra)
}

fn settled(before: &[(f64, f64)], now: &[(f64, f64)]) -> bool {
    before.iter().zip(now).all(|(&(bl, bh), &(nl, nh))| {
        let allowed = 0.1 * (nh - nl);
        (nl - bl).abs() <= allowed && (nh - bh).abs() <= allowed
    })
}

#[test]
fn default_interval_stops_where_the_rule_says_and_equals_the_fixed_run_of_that_size() {
    let auto = json(&[]);
    let b = &auto["bootstrap"];
    let n = b["replicates"].as_u64().expect("replicates") as usize;
    assert_eq!(b["max"], 200);
    assert_eq!(b["stopped"], "settled", "{b}");
    assert!((50..200).contains(&n) && n % 25 == 0, "{n}");
    // the same first n replicates as `--bootstrap n`: the same intervals, point estimates too
    let fixed = json(&["--bootstrap", &n.to_string()]);
    assert_eq!(fixed["bootstrap"]["stopped"], "fixed");
    assert_eq!(fixed["bootstrap"]["replicates"], n);
    assert_eq!(auto["rows"], fixed["rows"]);
    // settled at n, and not one block earlier (when that block could have stopped it)
    let prev = json(&["--bootstrap", &(n - 25).to_string()]);
    assert!(
        settled(&interval_ends(&prev), &interval_ends(&fixed)),
        "not settled at {n}"
    );
    if n - 25 >= 50 {
        let prev2 = json(&["--bootstrap", &(n - 50).to_string()]);
        assert!(
            !settled(&interval_ends(&prev2), &interval_ends(&prev)),
            "already settled at {}",
            n - 25
        );
    }
    // the text says the same count
    let t = lockcast(&["whatif", "lru-cache", CAPTURE]);
    assert!(
        stdout(&t).contains(&format!("percentiles of {n} bootstrap replicates, settled")),
        "{}",
        stdout(&t)
    );
}

#[test]
fn the_stopping_point_does_not_depend_on_the_thread_count() {
    let args = ["whatif", "lru-cache", CAPTURE, "--json"];
    let many = lockcast(&args);
    assert!(many.status.success());
    // one CPU: the replicates run on one thread (available_parallelism follows the affinity)
    let one = std::process::Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_lockcast")])
        .args(args)
        .current_dir(crate::common::repo())
        .output()
        .expect("taskset runs (util-linux)");
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    assert_eq!(many.stdout, one.stdout);
}

#[test]
fn bootstrap_zero_and_a_fixed_count_are_reported_as_such() {
    let none = json(&["--bootstrap", "0"]);
    assert_eq!(none["bootstrap"]["replicates"], 0);
    assert_eq!(none["bootstrap"]["stopped"], "none");
    // no replicates: the no-change interval is its point estimate
    let row = &none["rows"][0];
    for e in ["low", "high"] {
        for m in ["contended", "total_wait_ns"] {
            assert_eq!(
                row["replayed_interval"][e][m], row["replayed"][m],
                "{e} {m}"
            );
        }
    }
    let t = lockcast(&["whatif", "lru-cache", CAPTURE, "--bootstrap", "30"]);
    assert!(
        stdout(&t).contains("percentiles of 30 bootstrap replicates, as asked"),
        "{}",
        stdout(&t)
    );
}
