//! `perf lock` output of perf 6.15+ that older parsers did not know, from real postings in
//! `tests/corpus/perf-lock-recent/` (see SOURCES.md), values checked against the raw text.

use std::path::PathBuf;

use lockcast_parsers::perf_lock::{parse_all, Mode, Options, Parsed};
use lockcast_parsers::time::TimeNs;

fn parse(name: &str) -> Parsed {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/corpus/perf-lock-recent"
    ))
    .join(name);
    let f = std::fs::File::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    parse_all(std::io::BufReader::new(f), &Options::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `perf lock con -abvo` (6.15, "Tracing contention lock owner call stack"): after the
/// waiters' table, `=== owner stack trace ===` and the owners' rows in the same layout.
#[test]
fn corpus_recent_owner_stack_trace_is_a_table_of_its_own() {
    let p = parse("contention-owner-stack-trace-vo.txt");
    assert_eq!(p.tables.len(), 2);
    let (w, o) = (&p.tables[0], &p.tables[1]);
    assert_eq!(w.header.mode, Mode::Caller);
    assert!(!w.header.owner);
    assert_eq!(w.rows.len(), 6);
    assert_eq!(w.rows[0].contended, Some(171));
    assert_eq!(w.rows[0].stack.len(), 5);
    assert_eq!(o.header.mode, Mode::Caller);
    assert!(o.header.owner);
    assert_eq!(o.header.label.as_deref(), Some("owner stack trace"));
    assert_eq!(o.header.columns, w.header.columns);
    assert_eq!(o.rows.len(), 1);
    // 3     31.24 us     15.27 us     10.41 us        mutex   pipe_read+0x348
    let r = &o.rows[0];
    assert_eq!(r.contended, Some(3));
    assert_eq!(
        r.total_wait,
        Some(TimeNs {
            ns: 31_240,
            err_ns: 5
        })
    );
    assert_eq!(r.lock_type.as_deref(), Some("mutex"));
    assert_eq!(r.caller.as_deref(), Some("pipe_read+0x348"));
    let frames: Vec<&str> = r.stack.iter().map(|f| f.symbol.as_str()).collect();
    assert_eq!(
        frames,
        [
            "pipe_read+0x348",
            "vfs_read+0x332",
            "ksys_read+0xbb",
            "do_syscall_64+0x82",
            "entry_SYSCALL_64_after_hwframe+0x76"
        ]
    );
    assert_eq!(r.stack[0].addr, 0xffffffffac631bd8);
    // the cover letter ends the section with `  ...`: said, not taken for a damaged row
    assert_eq!(
        p.diagnostics.notes,
        ["line 47: the table of line 39 was cut by its poster (`...`)"]
    );
}

/// `perf lock con -abl -L tasklist_lock -J DELAY@tasklist_lock` (6.16, "Add -J/--inject-delay
/// option"): `-J` adds no print form of its own; each run is an address table.
#[test]
fn corpus_recent_inject_delay_runs_are_address_tables() {
    let p = parse("contention-J-inject-delay-abl.txt");
    assert_eq!(p.tables.len(), 3);
    // contended, total wait, max wait, avg wait of the three runs, as the mail prints them
    let want = [
        (92, 1_180_000, 199_540, 12_790),
        (190, 15_670_000, 230_100, 82_460),
        (1002, 2_800_000_000, 3_010_000, 2_800_000),
    ];
    for (t, (c, tot, max, avg)) in p.tables.iter().zip(want) {
        assert_eq!(t.header.mode, Mode::Address);
        assert_eq!(t.rows.len(), 1);
        let r = &t.rows[0];
        assert_eq!(r.contended, Some(c));
        assert_eq!(r.total_wait.map(|x| x.ns), Some(tot));
        assert_eq!(r.max_wait.map(|x| x.ns), Some(max));
        assert_eq!(r.avg_wait.map(|x| x.ns), Some(avg));
        assert_eq!(r.address, Some(0xffffffff8a806080));
        assert_eq!(r.symbol.as_deref(), Some("tasklist_lock"));
        assert_eq!(r.lock_type.as_deref(), Some("rwlock"));
    }
    assert_eq!(p.diagnostics.skipped, 0, "{:?}", p.diagnostics);
    assert!(p.diagnostics.notes.is_empty(), "{:?}", p.diagnostics);
    // each run is named by its whole command, continued over two lines with `\`
    let sh = "sh -c 'for i in $(seq 1000); do sleep 1 & done; wait'";
    let labels: Vec<_> = p
        .tables
        .iter()
        .map(|t| t.header.label.clone().unwrap())
        .collect();
    assert_eq!(
        labels[0],
        format!("$ sudo perf lock con -abl -L tasklist_lock -- {sh}")
    );
    // labels are cut at 120 characters: this one is 122
    let j100 = format!("$ sudo perf lock con -abl -L tasklist_lock -J 100us@tasklist_lock -- {sh}");
    assert_eq!(labels[1], format!("{}...", &j100[..120]));
    assert_eq!(
        labels[2],
        format!("$ sudo perf lock con -abl -L tasklist_lock -J 1ms@tasklist_lock -- {sh}")
    );
}
