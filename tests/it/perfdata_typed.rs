//! The replay's perf.data read decodes its tracepoints' fields from the raw payload (typed, no
//! print fmt text): the Trace it builds must equal, event for event, the one read from
//! `perf script --ns` of the same recording, and the what-if must print the same JSON.

use lockcast::capture::OpenOptions;
use lockcast::whatif::trace::{self, Kind, Trace};

use crate::common::*;

/// Fixtures with both the perf.data and its `perf script --ns` text, and the replay's events
/// (madvise in the fbatch ones, call chains in all but micro-16K-replay).
const DIRS: [&str; 4] = [
    "fixtures/perfdata/micro-16K-replay",
    "fixtures/perfdata/fbatch-churn-4K",
    "fixtures/perfdata/fbatch-churn-4K-g",
    "fixtures/perfdata/micro-16K-g",
];

fn read(dir: &str, file: &str) -> Trace {
    let root = repo();
    let ks = root.join(dir).join("kallsyms.gz");
    let opts = OpenOptions {
        kallsyms: ks.exists().then(|| std::sync::Arc::new(ks)),
        ..OpenOptions::default()
    };
    let p = root.join(dir).join(file);
    trace::read_with(p.to_str().unwrap(), &opts).unwrap_or_else(|e| panic!("{dir}/{file}: {e}"))
}

#[test]
fn perfdata_typed_trace_equals_the_perf_script_text_event_for_event() {
    for dir in DIRS {
        let b = read(dir, "perf.data.gz");
        let t = read(dir, "script-ns.txt.gz");
        assert_eq!(b.events.len(), t.events.len(), "{dir}");
        for (i, (x, y)) in b.events.iter().zip(&t.events).enumerate() {
            assert_eq!(x, y, "{dir}: event {i}");
        }
        assert_eq!(b.locks, t.locks, "{dir}");
        assert_eq!(b.sites, t.sites, "{dir}");
        assert_eq!(b.seen, t.seen, "{dir}");
        assert_eq!(b.other_events, t.other_events, "{dir}");
        assert_eq!(b.with_callchain, t.with_callchain, "{dir}");
        assert_eq!(b.slowpath_seen, t.slowpath_seen, "{dir}");
        assert_eq!(b.ts_res_ns, t.ts_res_ns, "{dir}");
        // the comparison means something: each fixture has allocations, insertions, frees
        // and traced waits on a lock named as perf prints its address
        let has = |f: fn(&Kind) -> bool| b.events.iter().any(|e| f(&e.kind));
        assert!(has(|k| matches!(k, Kind::Alloc { .. })), "{dir}");
        assert!(has(|k| matches!(k, Kind::Insert { .. })), "{dir}");
        assert!(has(|k| matches!(k, Kind::Free { .. })), "{dir}");
        assert!(has(|k| matches!(k, Kind::Begin { .. })), "{dir}");
        assert!(
            b.locks.iter().all(|l| l.starts_with("0xffff")),
            "{dir}: {:?}",
            b.locks
        );
        if dir.contains("fbatch") {
            assert!(has(|k| matches!(k, Kind::Discard { .. })), "{dir}");
        }
    }
}

#[test]
fn perfdata_typed_whatif_baseline_json_equals_the_texts() {
    let dir = "fixtures/perfdata/fbatch-churn-4K";
    let bin = format!("{dir}/perf.data.gz");
    let txt = format!("{dir}/script-ns.txt.gz");
    let ks = format!("{dir}/kallsyms.gz");
    let ob = lockcast(&["whatif", "baseline", &bin, "--json", "--kallsyms", &ks]);
    let ot = lockcast(&["whatif", "baseline", &txt, "--json"]);
    assert!(ob.status.success(), "{}", stderr(&ob));
    assert!(ot.status.success(), "{}", stderr(&ot));
    assert_eq!(
        stdout(&ob).replace(&bin, "X"),
        stdout(&ot).replace(&txt, "X")
    );
    assert!(stdout(&ob).contains("\"contended\""));
}
