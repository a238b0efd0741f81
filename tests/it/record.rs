//! `lockcast record`'s refusals (they need neither root nor perf, so they run everywhere) and
//! the capture-directory input every command takes. Recording itself needs root and the
//! kernel's tracepoints: experiments/matrix.sh runs it for real, tens of captures a run.

use crate::common::{fixture, lockcast, stderr, stdout};

#[test]
fn record_needs_a_workload() {
    let o = lockcast(&["record", "-o", "/nonexistent/x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn record_refuses_work_policies_naming_their_script() {
    let o = lockcast(&["record", "--policy", "lazyfree-thp", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("capture-lazyfree.sh"), "{}", stderr(&o));
}

#[test]
fn record_never_overwrites_without_force() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().to_string_lossy().into_owned();
    let o = lockcast(&["record", "-o", &out, "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
}

#[test]
fn record_rejects_a_size_that_is_not_one() {
    let o = lockcast(&[
        "record",
        "--mthp",
        "12K",
        "-o",
        "/nonexistent/x",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--mthp 12K"), "{}", stderr(&o));
}

/// A capture directory (what `record -o DIR` makes, and every fixture directory) answers as
/// the capture in it: the same JSON as naming the file, and the meta file beside it is read
/// (the observation rule comes from its `spin_slowpath=`).
#[test]
fn a_capture_directory_reads_as_its_capture() {
    let dir = fixture("replay/micro-16K-r1");
    let file = dir.join("script-ns.txt.gz");
    let (d, f) = (dir.to_string_lossy(), file.to_string_lossy());
    let a = lockcast(&["whatif", "baseline", &d, "--bootstrap", "0", "--json"]);
    let b = lockcast(&["whatif", "baseline", &f, "--bootstrap", "0", "--json"]);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
    let v: serde_json::Value = serde_json::from_str(&stdout(&a)).unwrap();
    assert_eq!(v["observation_source"], "meta file");
    // the capture's own lru_lock waits: `zcat script-ns.txt.gz | grep -c
    // "contention_begin: 0xffff888112cdf498"` prints 799
    assert_eq!(v["rows"][0]["lock"], "0xffff888112cdf498");
    assert_eq!(v["rows"][0]["measured"]["contended"], 799);
    let r = lockcast(&["report", &d, "--json"]);
    assert!(r.status.success(), "{}", stderr(&r));
}
