//! Event traces: contention_begin/end paired into waits agree with `perf lock contention` run on
//! the same recording (fixtures/traces, made by fixtures/capture-trace.sh).

use crate::common::*;

#[test]
fn traces_contention_report_agrees_with_perf_lock_contention() {
    let dir = "fixtures/traces/micro-16K-g";
    let o = lockcast(&[
        "report",
        &format!("{dir}/script-ns.txt.gz"),
        "--json",
        "--top",
        "100",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours =
        report_agrees_with_perf_lock(&o.stdout, &fixture("traces/micro-16K-g/contention.txt"));
    assert_eq!(
        ours[&("folio_batch_move_lru+0x88".into(), "spinlock".into())].0,
        4838
    );
}

#[test]
fn traces_pairing_counts_every_event() {
    let o = lockcast(&["parse", "fixtures/traces/micro-16K-g/script-ns.txt.gz"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    // 5150 contention_begin and 5150 contention_end lines in the raw text (zgrep -c)
    assert!(
        s.contains("perf-script, 10300 event(s); contention: 5150 interval(s), 0 nested begin(s), 0 orphan end(s), 0 unpaired begin(s), 0 unusable"),
        "{s}"
    );
}

#[test]
fn traces_raw_ftrace_text_pairs_every_wait() {
    // 388 event lines, 95 contention_begin and 95 contention_end (grep -c on the raw text)
    let o = lockcast(&["parse", "fixtures/ftrace/tracefs-6.18.44-default.txt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("ftrace, 388 event(s); contention: 95 interval(s), 0 nested begin(s), 0 orphan end(s), 0 unpaired begin(s)"),
        "{}",
        stdout(&o)
    );
}
