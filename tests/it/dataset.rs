//! `lockcast parse --partition-by capture`: many captures into one hive-partitioned Parquet
//! dataset, read back by another engine (DuckDB's Python package) with the row counts checked
//! against the raw text.
//!
//! DuckDB comes from PyPI into a venv under the target directory (`scripts/duckdb-venv.sh`).
//! When pip cannot reach PyPI the test says so and passes, unless `LOCKCAST_REQUIRE_DUCKDB`
//! is set (as `.ci/run` does: CI machines reach PyPI, so there it must run).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const CAPTURES: [&str; 3] = ["micro-4K-r1", "micro-16K-r1", "micro-64K-r1"];

/// The venv's python, or `None` (after saying why) when DuckDB cannot be installed here.
fn duckdb_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("duckdb-venv");
    let o = Command::new("bash")
        .arg(repo().join("scripts/duckdb-venv.sh"))
        .arg(&venv)
        .output()
        .expect("run scripts/duckdb-venv.sh");
    if o.status.success() {
        return Some(PathBuf::from(stdout(&o).trim()));
    }
    let why = format!(
        "cannot install DuckDB into {} (is PyPI reachable?): {}",
        venv.display(),
        stderr(&o)
    );
    assert!(
        std::env::var_os("LOCKCAST_REQUIRE_DUCKDB").is_none(),
        "LOCKCAST_REQUIRE_DUCKDB is set: {why}"
    );
    eprintln!("SKIPPED dataset_partitioned_parquet_reads_back_in_duckdb: {why}");
    None
}

fn raw_counts(capture: &str) -> (usize, usize) {
    let mut text = String::new();
    let p = fixture(&format!("replay/{capture}/script-ns.txt.gz"));
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let events = text.lines().filter(|l| !l.trim().is_empty()).count();
    let lru = text
        .lines()
        .filter(|l| l.contains(" pagemap:mm_lru_insertion: "))
        .count();
    (events, lru)
}

#[test]
fn dataset_partitioned_parquet_reads_back_in_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ds");
    let mut args: Vec<String> = vec!["parse".into()];
    for c in CAPTURES {
        args.push(format!("fixtures/replay/{c}/script-ns.txt.gz"));
    }
    args.extend(
        [
            "--table",
            "events,lru_insertion",
            "--partition-by",
            "capture",
            "-o",
            &out.to_string_lossy(),
        ]
        .map(String::from),
    );
    let o = lockcast(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    // every input is named by its directory (the files are all script-ns.txt.gz)
    for c in CAPTURES {
        for t in ["events", "lru_insertion"] {
            let p = out
                .join(t)
                .join(format!("capture={c}"))
                .join("part-0.parquet");
            assert!(p.is_file(), "{}", p.display());
        }
    }
    let Some(py) = duckdb_python() else { return };
    let script = format!(
        "import duckdb\n\
         for t in ['events', 'lru_insertion']:\n\
         \x20   q = \"select capture, count(*) from read_parquet('{}/\" + t + \"/*/*.parquet', hive_partitioning = true) group by capture order by capture\"\n\
         \x20   for c, n in duckdb.sql(q).fetchall():\n\
         \x20       print(t, c, n)\n",
        out.display()
    );
    let o = Command::new(&py).arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let got = stdout(&o);
    let mut want = Vec::new();
    for t in ["events", "lru_insertion"] {
        let mut caps = CAPTURES.to_vec();
        caps.sort();
        for c in caps {
            let (events, lru) = raw_counts(c);
            let n = if t == "events" { events } else { lru };
            want.push(format!("{t} {c} {n}"));
        }
    }
    assert_eq!(got.lines().collect::<Vec<_>>(), want);
    // and not trivially: the 16K capture has 20519 LRU insertions (zcat | grep -c)
    assert!(got.contains("lru_insertion micro-16K-r1 20519"), "{got}");
}
