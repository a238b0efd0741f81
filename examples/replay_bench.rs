//! Replay speed (issue #4 validation 6): replays ≥ 10 million lock requests and prints
//! requests/s, side by side with a named baseline measured in the same run.
//!
//! Requests: the 16K replay capture's own request streams (baseline policy), repeated end to end
//! in virtual time until there are at least `--requests` (default 10 M). Baseline: a k-way merge
//! of the same per-CPU streams into time order with a binary heap, the least any event-driven
//! replay must do. Each is timed 5 times; medians are printed.
//!
//! usage: cargo run --release --example replay_bench [-- CAPTURE [REQUESTS]]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use lockcast::whatif::{self, calibrate, des, intents, policy::Policy, reconstruct, trace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/replay/micro-16K-r1/script-ns.txt.gz"
        )
        .to_string()
    });
    let want: usize = args
        .get(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10_000_000);
    let t = trace::read(&path, false)?;
    let rec = reconstruct::reconstruct(&t, &Default::default())?;
    let cal = calibrate::fit(&calibrate::samples(&t, &rec), 0.975);
    let it = intents::build(&rec, &cal);
    let ctx = whatif::context(&t);
    let base = whatif::policy::Baseline.requests(&it, &ctx)?;
    let per_copy: usize = base.iter().map(Vec::len).sum();
    let span = base
        .iter()
        .filter_map(|s| s.last().map(|r| r.v))
        .max()
        .unwrap_or(0)
        - base
            .iter()
            .filter_map(|s| s.first().map(|r| r.v))
            .min()
            .unwrap_or(0)
        + 1_000_000;
    let copies = want.div_ceil(per_copy.max(1));
    let streams: Vec<Vec<_>> = base
        .iter()
        .map(|s| {
            (0..copies)
                .flat_map(|c| {
                    s.iter().map(move |r| whatif::policy::Request {
                        v: r.v + c as i64 * span,
                        ..*r
                    })
                })
                .collect()
        })
        .collect();
    let n: usize = streams.iter().map(Vec::len).sum();
    println!(
        "capture {path}: {per_copy} requests x {copies} copies = {n} requests on {} CPUs",
        streams.len()
    );

    let obs = t.observation().unwrap_or(trace::Observation::Paravirt);
    let mut des_s = Vec::new();
    let mut merge_s = Vec::new();
    let mut contended = 0;
    for _ in 0..5 {
        let t0 = Instant::now();
        let m = des::replay(&streams, &cal, obs);
        des_s.push(t0.elapsed().as_secs_f64());
        contended = m.contended;
        let t0 = Instant::now();
        let k = merge(&streams);
        merge_s.push(t0.elapsed().as_secs_f64());
        assert_eq!(k, n);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (d, m) = (med(&mut des_s), med(&mut merge_s));
    println!("{:<34} {:>10} {:>16}", "", "median s", "requests/s");
    println!(
        "{:<34} {:>10.3} {:>16.0}",
        "baseline: heap merge of the streams",
        m,
        n as f64 / m
    );
    println!(
        "{:<34} {:>10.3} {:>16.0}",
        "lockcast des::replay",
        d,
        n as f64 / d
    );
    println!(
        "replay / merge time: {:.2}x ({} contended in the replay)",
        d / m,
        contended
    );
    Ok(())
}

/// Visit every request in time order (k-way merge).
fn merge(streams: &[Vec<whatif::policy::Request>]) -> usize {
    let mut heap = BinaryHeap::new();
    for (c, s) in streams.iter().enumerate() {
        if let Some(r) = s.first() {
            heap.push(Reverse((r.v, c, 0usize)));
        }
    }
    let mut n = 0;
    while let Some(Reverse((_, c, i))) = heap.pop() {
        n += 1;
        if let Some(r) = streams[c].get(i + 1) {
            heap.push(Reverse((r.v, c, i + 1)));
        }
    }
    n
}
