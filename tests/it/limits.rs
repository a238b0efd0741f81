//! Resource limits (issue 8): hostile sizes and values, generated at run time from real
//! captures (never committed). Each test checks the outcome, not the time: the documented
//! error where the input cannot be processed, the full result where it can. Peak memory and
//! time at full scale are measured by `scripts/limits.sh` (release build, /usr/bin/time -v).

use std::io::Write;

use crate::common::*;

const CAP: &str = "fixtures/captures/micro-16K-r1/contention.txt";
const FTRACE: &str = "fixtures/ftrace/tracefs-6.18.44-default.txt";

fn read(p: &str) -> String {
    std::fs::read_to_string(repo().join(p)).unwrap()
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

/// A 100 MB line inside a table costs no more than the 1 MiB line cap: strict mode names it,
/// lenient mode skips it and keeps every row.
#[test]
fn limits_line_of_100_mb_is_a_malformed_line_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let text = read(CAP);
    let mut lines: Vec<&str> = text.lines().collect();
    let long = "9".repeat(100 << 20);
    lines.insert(4, &long);
    let file = write(&dir, "long.txt", (lines.join("\n") + "\n").as_bytes());
    let o = lockcast(&["parse", &file]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{file}:5:1: perf lock: expected a line of at most 1048576 bytes, got 104857601 bytes"
        )),
        "{}",
        stderr(&o)
    );
    let o = lockcast(&["parse", &file, "--lenient"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("skipped 1 malformed line(s)"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("1 table(s), 18 row(s)"),
        "{}",
        stdout(&o)
    );
}

/// A file of nothing but blank lines: no format to read, said so.
#[test]
fn limits_only_blank_lines_is_unknown_format() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "blank.txt", &vec![b'\n'; 1 << 20]);
    let o = lockcast(&["parse", &file]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown format") && stderr(&o).contains("only blank lines"),
        "{}",
        stderr(&o)
    );
    // As a trace: read through, nothing found, and that is what is printed.
    let o = lockcast(&["parse", &file, "--input-format", "ftrace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("ftrace, 0 event(s)"), "{}", stdout(&o));
}

/// Many distinct lock names (the full 10 million are measured by scripts/limits.sh): every
/// row is kept, and `report` groups them all.
#[test]
fn limits_many_distinct_lock_names_are_all_kept() {
    const N: usize = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let mut text = Vec::with_capacity(N * 100);
    writeln!(
        text,
        "                Name   acquired  contended     avg wait   total wait     max wait     min wait\n"
    )
    .unwrap();
    for i in 0..N {
        // Distinct names, waits decreasing so perf's sort order holds.
        let w = N - i;
        writeln!(
            text,
            "{:>20} {:>10} {:>10} {:>9} ns {:>9} ns {:>9} ns {:>9} ns",
            format!("lock_{i:08x}"),
            2,
            2,
            w,
            2 * w,
            w,
            w
        )
        .unwrap();
    }
    let file = write(&dir, "names.txt", &text);
    let out = dir.path().join("names.csv");
    let o = lockcast(&["parse", &file, "-o", &out.to_string_lossy()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("wrote {N} rows")),
        "{}",
        stderr(&o)
    );
    let o = lockcast(&["report", &file, "--top", "2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["groups"], N as u64);
    assert_eq!(v[0]["top"][0]["name"], "lock_00000000");
    assert_eq!(v[0]["top"][0]["total_wait_ns"], 2 * N as u64);
}

/// `field` of an ftrace event line (`comm-pid [cpu] flags ts: event: payload`) replaced.
fn edit_events(text: &str, f: impl Fn(&str) -> Option<String>) -> String {
    text.lines()
        .map(|l| f(l).unwrap_or_else(|| l.to_string()))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Every contention_end stamped before its begin: counted as backwards, no negative (or
/// zero) wait invented.
#[test]
fn limits_timestamps_going_backwards_are_counted_not_paired() {
    let dir = tempfile::tempdir().unwrap();
    let text = edit_events(&read(FTRACE), |l| {
        let (head, rest) = l.split_once(": contention_end:")?;
        let (before, _ts) = head.rsplit_once(' ')?;
        Some(format!("{before} 1.000000: contention_end:{rest}"))
    });
    let file = write(&dir, "backwards.txt", text.as_bytes());
    let o = lockcast(&["parse", &file]);
    assert!(o.status.success(), "{}", stderr(&o));
    // 95 begin/end pairs in the raw text (grep -c contention_end)
    assert!(
        stdout(&o).contains("contention: 0 interval(s), 0 nested begin(s), 0 orphan end(s), 0 unpaired begin(s), 0 unusable, 95 backwards end(s)"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("lock_stats: 0 rows"), "{}", stdout(&o));
}

/// CPU numbers far above 4096 are plain numbers: nothing is sized by them. A CPU number that
/// does not fit 32 bits is a malformed line, named.
#[test]
fn limits_cpu_numbers_above_4096() {
    let dir = tempfile::tempdir().unwrap();
    let clean = lockcast(&["parse", FTRACE]);
    assert!(
        stdout(&clean).contains("95 interval(s)"),
        "{}",
        stdout(&clean)
    );
    for (cpu, ok) in [
        ("65535", true),
        ("4294967295", true),
        ("99999999999", false),
    ] {
        let text = edit_events(&read(FTRACE), |l| {
            let i = l.find("] ")?;
            let j = l[..i].rfind('[')?;
            Some(format!("{}[{cpu}{}", &l[..j], &l[i..]))
        });
        let file = write(&dir, &format!("cpu-{cpu}.txt"), text.as_bytes());
        let o = lockcast(&["parse", &file]);
        if ok {
            assert!(o.status.success(), "{}", stderr(&o));
            assert!(stdout(&o).contains("95 interval(s)"), "{}", stdout(&o));
        } else {
            assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("{file}:13:")),
                "{}",
                stderr(&o)
            );
            assert!(stderr(&o).contains(cpu), "{}", stderr(&o));
        }
    }
}
