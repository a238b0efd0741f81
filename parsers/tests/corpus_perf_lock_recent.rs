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
