//! The seed mail (RFC v3 cover letter) gives its four tables with their exact numbers.

use lockcast_parsers::perf_lock::{parse_all, Options};
use lockcast_parsers::time::TimeNs;

use crate::common::*;

fn parsed() -> lockcast_parsers::perf_lock::Parsed {
    let f = std::fs::File::open(fixture(SEED)).unwrap();
    parse_all(std::io::BufReader::new(f), &Options::default()).unwrap()
}

/// (name, acquired, contended, avg, total, max, min) as printed.
type Printed = (
    &'static str,
    u64,
    u64,
    (u64, u64),
    (u64, u64),
    (u64, u64),
    (u64, u64),
);

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const M: u64 = 60 * S;

fn check(table: &lockcast_parsers::perf_lock::Table, expect: &[Printed]) {
    assert_eq!(
        table.rows.len(),
        expect.len(),
        "table #{}",
        table.header.index
    );
    for (r, e) in table.rows.iter().zip(expect) {
        let name = if e.0.is_empty() {
            None
        } else {
            Some(e.0.to_string())
        };
        assert_eq!(r.name, name, "line {}", r.line);
        assert_eq!(r.acquired, Some(e.1), "line {}", r.line);
        assert_eq!(r.contended, Some(e.2), "line {}", r.line);
        // (value in hundredths of the unit, unit ns) -> exact ns
        let tm = |(v, unit): (u64, u64)| {
            let err = if unit == 1 { 0 } else { unit / 200 };
            let ns = if unit == 1 { v } else { v * unit / 100 };
            Some(TimeNs { ns, err_ns: err })
        };
        assert_eq!(r.avg_wait, tm(e.3), "avg line {}", r.line);
        assert_eq!(r.total_wait, tm(e.4), "total line {}", r.line);
        assert_eq!(r.max_wait, tm(e.5), "max line {}", r.line);
        assert_eq!(r.min_wait, tm(e.6), "min line {}", r.line);
    }
}

#[test]
fn seed_has_four_labelled_tables() {
    let p = parsed();
    assert_eq!(p.tables.len(), 4);
    let labels: Vec<_> = p.tables.iter().map(|t| t.header.label.as_deref()).collect();
    assert_eq!(
        labels,
        [
            Some("w/o patch:"),
            Some("w/ patch:"),
            Some("w/o patch:"),
            Some("w/ patch:")
        ]
    );
    let rows: Vec<_> = p.tables.iter().map(|t| t.rows.len()).collect();
    assert_eq!(rows, [9, 7, 9, 9]);
}

#[test]
fn seed_micro_without_patch_exact() {
    let p = parsed();
    check(
        &p.tables[0],
        &[
            (
                "",
                21414857,
                21414857,
                (3007, US),
                (1073, M),
                (10194, US),
                (880, 1),
            ),
            (
                "",
                42890,
                42890,
                (1129, US),
                (48421, MS),
                (12308, US),
                (923, 1),
            ),
            ("", 1678, 1678, (157, US), (263, MS), (577, US), (985, 1)),
            ("", 52, 52, (146, US), (7598, US), (269, US), (107, US)),
            ("", 18, 18, (1782, US), (32069, US), (5892, US), (162, US)),
            ("", 18, 18, (236, MS), (4252, MS), (531, MS), (147, US)),
            (
                "rcu_state",
                12,
                12,
                (198, US),
                (2378, US),
                (262, US),
                (147, US),
            ),
            (
                "rcu_state",
                9,
                9,
                (172, US),
                (1549, US),
                (227, US),
                (134, US),
            ),
            ("", 2, 2, (242, US), (483, US), (248, US), (236, US)),
        ],
    );
}

#[test]
fn seed_micro_with_patch_exact() {
    let p = parsed();
    check(
        &p.tables[1],
        &[
            (
                "",
                2641286,
                2641286,
                (4687, US),
                (206, M),
                (10792, US),
                (101, US),
            ),
            (
                "",
                235275,
                235275,
                (1057, US),
                (249, S),
                (11532, US),
                (102, US),
            ),
            (
                "rcu_state",
                1982,
                1982,
                (758, US),
                (1502, MS),
                (3172, US),
                (126, US),
            ),
            (
                "rcu_state",
                1929,
                1929,
                (742, US),
                (1432, MS),
                (3050, US),
                (143, US),
            ),
            ("", 86, 86, (361, US), (31019, US), (1389, US), (115, US)),
            ("", 20, 20, (1970, US), (39403, US), (10807, US), (215, US)),
            (
                "tasklist_lock",
                1,
                1,
                (213, US),
                (213, US),
                (213, US),
                (213, US),
            ),
        ],
    );
}

#[test]
fn seed_kernel_build_tables_first_and_last_rows() {
    let p = parsed();
    let t3 = &p.tables[2];
    assert_eq!(t3.rows[0].acquired, Some(782337));
    assert_eq!(
        t3.rows[0].total_wait,
        Some(TimeNs {
            ns: 13_780_000_000,
            err_ns: 5_000_000
        })
    );
    assert_eq!(
        t3.rows[0].max_wait,
        Some(TimeNs {
            ns: 402_220,
            err_ns: 5
        })
    );
    assert_eq!(
        t3.rows[8].min_wait,
        Some(TimeNs {
            ns: 1_000,
            err_ns: 5
        })
    );
    let t4 = &p.tables[3];
    assert_eq!(t4.rows[2].name.as_deref(), Some("inode_hash_lock"));
    assert_eq!(t4.rows[2].contended, Some(15169));
    assert_eq!(
        t4.rows[8].total_wait,
        Some(TimeNs {
            ns: 8_970_000,
            err_ns: 5_000
        })
    );
}

#[test]
fn seed_diff_top_row_matches_cover_letter() {
    let seed = fixture(SEED).to_string_lossy().into_owned();
    let o = lockcast(&["diff", &format!("{seed}#1"), &format!("{seed}#2"), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let top = &v["rows"][0];
    assert_eq!(top["base_contended"], 21414857);
    assert_eq!(top["patched_contended"], 2641286);
    assert_eq!(top["base_total_wait_ns"], 643_800_000_000u64);
    assert_eq!(top["patched_total_wait_ns"], 123_600_000_000u64);
    assert_eq!(top["matched_by"], "unnamed_rank");
    let rc = top["ratio_contended"].as_f64().unwrap();
    let rw = top["ratio_total_wait"].as_f64().unwrap();
    assert_eq!(format!("{rc:.2}"), "8.11");
    assert_eq!(format!("{rw:.2}"), "5.21");
    // the text form prints the same, in perf's units
    let o = lockcast(&["diff", &format!("{seed}#1"), &format!("{seed}#2")]);
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with("(unnamed #1)"))
        .unwrap();
    for want in ["21414857", "2641286", "8.11x", "10.73 m", "2.06 m", "5.21x"] {
        assert!(line.contains(want), "{want} missing in {line}");
    }
}
