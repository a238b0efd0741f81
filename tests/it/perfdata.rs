//! perf.data read directly (issue #14) against perf's own output for the same recording
//! (fixtures/perfdata, made by fixtures/capture-perfdata.sh): every table equals the one read
//! from `perf script --ns` of the file, `report` agrees with `perf lock contention -i`, and the
//! what-if gives the same numbers.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::Output;

use crate::common::*;

const REPLAY: &str = "fixtures/perfdata/micro-16K-replay";
const G: &str = "fixtures/perfdata/micro-16K-g";

fn buildid_dir() -> PathBuf {
    perfdata_buildid_dir(G)
}

fn run(args: &[&str], cache: &std::path::Path) -> Output {
    lockcast_cached(args, cache)
}

fn tables_equal(dir: &str) -> BTreeMap<String, usize> {
    perfdata_tables_equal(dir, &[])
}

#[test]
fn perfdata_replay_tables_equal_the_perf_script_text() {
    let rows = tables_equal(REPLAY);
    // counted in the raw text (zgrep -c 'lock:contention_begin:' etc.)
    assert_eq!(rows["events.csv"], 66948);
    assert_eq!(rows["contention_begin.csv"], 2526);
    assert_eq!(rows["lru_insertion.csv"], 20513);
    assert_eq!(rows["page_alloc.csv"], 20801);
    assert_eq!(rows["page_free.csv"], 20582);
}

#[test]
fn perfdata_g_tables_equal_the_perf_script_text() {
    let rows = tables_equal(G);
    assert_eq!(rows["samples.csv"], 38805);
    assert_eq!(rows["contention.csv"], 3910);
}

#[test]
fn perfdata_report_agrees_with_perf_lock_contention_of_the_same_file() {
    let cache = buildid_dir();
    let o = run(
        &[
            "report",
            &format!("{G}/perf.data.gz"),
            "--json",
            "--top",
            "100",
        ],
        &cache,
    );
    let ours = report_agrees_with_perf_lock(&o.stdout, &repo().join(G).join("contention.txt"));
    // contention.txt: 3899 at folio_batch_move_lru+0x88
    assert_eq!(
        ours[&("folio_batch_move_lru+0x88".into(), "spinlock".into())].0,
        3899
    );
    // the same report as from the text
    let t = run(
        &[
            "report",
            &format!("{G}/script-ns.txt.gz"),
            "--json",
            "--top",
            "100",
        ],
        &cache,
    );
    assert_eq!(
        stdout(&o).replace("perf.data.gz", "X"),
        stdout(&t).replace("script-ns.txt.gz", "X")
    );
    assert!(
        stderr(&o).contains("kernel frames named from"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn perfdata_whatif_baseline_gives_the_numbers_of_the_text() {
    let cache = buildid_dir();
    for (dir, extra) in [(REPLAY, &["--observation", "paravirt"][..]), (G, &[][..])] {
        let mut a = vec!["whatif", "baseline", "", "--json"];
        a.extend_from_slice(extra);
        let bin = format!("{dir}/perf.data.gz");
        let txt = format!("{dir}/script-ns.txt.gz");
        a[2] = &bin;
        let ob = run(&a, &cache);
        a[2] = &txt;
        let ot = run(&a, &cache);
        assert_eq!(
            stdout(&ob).replace(&bin, "X"),
            stdout(&ot).replace(&txt, "X"),
            "{dir}"
        );
        let v: serde_json::Value = serde_json::from_slice(&ob.stdout).unwrap();
        assert!(v.to_string().contains("\"contended\""), "{dir}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn perfdata_damaged_files_exit_3_naming_the_byte() {
    let o = lockcast_stdin(
        &["parse", "-", "--input-format", "perf-data"],
        b"PERFILE3 not a perf.data file at all",
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("byte 0: perf.data: expected the perf.data magic PERFILE2"),
        "{}",
        stderr(&o)
    );
    let mut f = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(repo().join(REPLAY).join("perf.data.gz")).unwrap(),
    )
    .read_to_end(&mut f)
    .unwrap();
    f.truncate(f.len() / 2);
    let o = lockcast_stdin(&["parse", "-"], &f);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("file cut short"), "{}", stderr(&o));
}
