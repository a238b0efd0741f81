//! Every file of `tests/corpus/perf-lock/` parses, with values checked against the raw text.

use std::path::PathBuf;

use lockcast_parsers::perf_lock::{parse_all, FooterKind, Mode, Options, Parsed, Style};
use lockcast_parsers::time::TimeNs;

/// The corpus of real tool outputs, copied into the repository.
fn corpus() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/corpus"))
}

fn parse(name: &str) -> Parsed {
    let path = corpus().join("perf-lock").join(name);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_all(std::io::BufReader::new(f), &Options::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn t(ns: u64, err_ns: u64) -> Option<TimeNs> {
    Some(TimeNs { ns, err_ns })
}

#[test]
fn corpus_every_file_parses() {
    let dir = corpus().join("perf-lock");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let p = parse(&name);
        assert!(
            !p.tables.is_empty() || !p.orphan_footers.is_empty(),
            "{name}: nothing found"
        );
        n += 1;
    }
    assert_eq!(n, 19);
}

#[test]
fn corpus_bpf_caller_aarch64_seconds() {
    let p = parse("contention-bpf-caller-aarch64-seconds.txt");
    let rows = &p.tables[0].rows;
    assert_eq!(rows.len(), 11);
    assert_eq!(rows[0].contended, Some(6));
    assert_eq!(rows[0].total_wait, t(6_030_000_000, 5_000_000));
    assert_eq!(
        rows[0].caller.as_deref(),
        Some("__tick_broadcast_oneshot_control+0xc0")
    );
    assert_eq!(rows[4].lock_type.as_deref(), Some("rwsem:W"));
    assert_eq!(rows[4].total_wait, t(702_630, 5));
    assert_eq!(rows[10].caller.as_deref(), Some("clk_prepare_lock+0x4c"));
}

#[test]
fn corpus_csv_two_tables_and_raw_ns() {
    let p = parse("contention-csv-x-comma.txt");
    assert_eq!(p.tables.len(), 2);
    assert_eq!(p.tables[0].header.style, Style::Csv { sep: ",".into() });
    assert_eq!(p.tables[0].rows.len(), 9);
    let r = &p.tables[0].rows[1];
    assert_eq!(r.contended, Some(15));
    assert_eq!(r.total_wait, Some(TimeNs::exact(162_748)));
    assert_eq!(r.max_wait, Some(TimeNs::exact(23_843)));
    assert_eq!(r.avg_wait, Some(TimeNs::exact(10_849)));
    assert_eq!(r.lock_type.as_deref(), Some("rwsem:R"));
    assert_eq!(r.caller.as_deref(), Some("do_user_addr_fault+0x40e"));
    assert_eq!(
        p.tables[1].rows[0].caller.as_deref(),
        Some("raw_spin_rq_lock_nested+0x1b")
    );
}

#[test]
fn corpus_filter_l_two_tables_labelled_by_command() {
    let p = parse("contention-doc-filter-L.txt");
    assert_eq!(p.tables.len(), 2);
    assert_eq!(
        p.tables[0].header.label.as_deref(),
        Some("# perf lock con -ab -L ffff9f88c0248000 sleep 1")
    );
    assert_eq!(p.tables[0].rows[0].contended, Some(39412));
    assert_eq!(p.tables[0].rows[0].total_wait, t(1_580_000_000, 5_000_000));
    assert_eq!(
        p.tables[1].rows[0].caller.as_deref(),
        Some("tick_irq_enter+0xf0")
    );
}

#[test]
fn corpus_lock_addr_blank_symbols() {
    let p = parse("contention-doc-lock-addr-blank-symbols.txt");
    let rows = &p.tables[0].rows;
    assert_eq!(p.tables[0].header.mode, Mode::Address);
    assert_eq!(rows.len(), 12);
    assert_eq!(rows[0].address, Some(0xffffa64fdb3f11b8));
    assert_eq!(rows[0].symbol, None);
    assert_eq!(rows[0].lock_type.as_deref(), Some("mutex"));
    assert_eq!(rows[10].symbol.as_deref(), Some("kernfs_open_file_mutex"));
    assert_eq!(rows[10].total_wait, t(240, 0));
}

#[test]
fn corpus_slab_object_symbols() {
    let p = parse("contention-lock-addr-slab-objects.txt");
    assert_eq!(p.tables.len(), 3);
    assert_eq!(
        p.tables[0].rows[2].symbol.as_deref(),
        Some("&kmalloc-cg-512")
    );
    assert_eq!(p.tables[1].rows.len(), 2);
    assert_eq!(p.tables[2].header.mode, Mode::Caller);
    assert_eq!(
        p.tables[2].rows[2].caller.as_deref(),
        Some("futex_exec_release+0x21")
    );
}

#[test]
fn corpus_threads_and_owner() {
    let p = parse("contention-doc-threads-and-owner.txt");
    assert_eq!(p.tables.len(), 3);
    assert_eq!(p.tables[0].rows.len(), 8);
    assert_eq!(p.tables[0].rows[4].pid, Some(0));
    assert_eq!(p.tables[0].rows[4].comm.as_deref(), Some("swapper"));
    let last = &p.tables[2].rows[2];
    assert_eq!((last.contended, last.pid), (Some(146), Some(-1)));
    assert_eq!(last.comm.as_deref(), Some("Unknown"));
}

#[test]
fn corpus_threads_truncated_comm() {
    let p = parse("contention-threads-t.txt");
    assert_eq!(p.tables[0].rows[1].comm.as_deref(), Some("nvidia-modeset/"));
    assert_eq!(p.tables[0].rows[0].total_wait, t(740_660_000, 5_000));
}

#[test]
fn corpus_verbose_stacks_and_failure_footer() {
    let p = parse("contention-doc-verbose-callstacks-debug-footer.txt");
    let t0 = &p.tables[0];
    assert_eq!(t0.rows.len(), 3);
    assert_eq!(t0.rows[0].stack.len(), 8);
    assert_eq!(t0.rows[0].stack[7].symbol, "arch_call_rest_init+0xa");
    assert_eq!(t0.footers.len(), 1);
    let f = &t0.footers[0];
    assert_eq!(f.kind, FooterKind::FailureReasons);
    assert_eq!((f.bad, f.total), (0, 14));
    assert_eq!(f.histogram.len(), 4);
}

#[test]
fn corpus_cgroup_two_tables() {
    let p = parse("contention-lock-cgroup.txt");
    assert_eq!(p.tables.len(), 2);
    assert_eq!(
        p.tables[1].rows[2].cgroup.as_deref(),
        Some("/user.slice/user-657345.slice/session-c4.scope")
    );
    assert_eq!(p.tables[1].rows[0].contended, Some(835));
}

#[test]
fn corpus_v60_wider_columns() {
    let p = parse("contention-v6.0-bpf-caller-cover-letter.txt");
    assert_eq!(p.tables[0].rows.len(), 10);
    assert_eq!(p.tables[0].rows[0].contended, Some(42));
    assert_eq!(
        p.tables[0].rows[0].caller.as_deref(),
        Some("queue_work_on+0x20")
    );
}

#[test]
fn corpus_bpf_lost_footer_without_table() {
    let p = parse("contention-v6.1-bpf-lost-debug-footer.txt");
    assert!(p.tables.is_empty());
    let f = &p.orphan_footers[0];
    assert_eq!(f.kind, FooterKind::BadSequence);
    assert_eq!((f.bad, f.total), (43, 14903));
}

#[test]
fn corpus_info_map() {
    let p = parse("info-map-m.txt");
    let rows = &p.tables[0].rows;
    assert_eq!(p.tables[0].header.mode, Mode::InfoMap);
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[4].symbol.as_deref(), Some("(null)"));
    assert_eq!(rows[0].address, Some(0xffffa0d940ac5310));
}

#[test]
fn corpus_report_f_blank_names_seconds() {
    let p = parse("report-F-blank-names-seconds.txt");
    let t0 = &p.tables[0];
    assert_eq!(t0.header.columns.len(), 4);
    assert_eq!(t0.rows.len(), 46);
    assert_eq!(t0.rows[1].name.as_deref(), Some("event_mutex"));
    assert_eq!(t0.rows[1].total_wait, t(45_610_000_000, 5_000_000));
    assert_eq!(t0.rows[2].name, None);
    assert_eq!(t0.rows[45].acquired, Some(148));
}

#[test]
fn corpus_report_minutes_hours() {
    let p = parse("report-minutes-hours-blank-name.txt");
    assert_eq!(p.tables.len(), 2);
    assert_eq!(p.tables[0].header.label.as_deref(), Some("Before:"));
    assert_eq!(p.tables[1].header.label.as_deref(), Some("After:"));
    let r = &p.tables[0].rows[1];
    assert_eq!(r.name.as_deref(), Some("pcpu_alloc_mutex"));
    assert_eq!(r.total_wait, t(78_000_000_000, 300_000_000));
    assert_eq!(
        p.tables[1].rows[0].max_wait.map(|t| t.ns),
        Some(18_446_743_800_000_000_000)
    );
}

#[test]
fn corpus_report_v518_raw_ns() {
    let p = parse("report-v5.18-before-units-ns.txt");
    let r = &p.tables[0].rows[1];
    assert_eq!(p.tables[0].header.style, Style::RawNs);
    assert_eq!(r.name.as_deref(), Some("&lruvec->lru_lock"));
    assert_eq!((r.acquired, r.contended), (Some(747), Some(5)));
    assert_eq!(r.total_wait, Some(TimeNs::exact(56_272)));
    assert_eq!(r.min_wait, Some(TimeNs::exact(1_412)));
}

#[test]
fn corpus_report_v518_vs_v520_same_numbers() {
    // The same capture printed before and after the unit patch: values agree within rounding.
    let a = parse("report-v5.18-before-units-ns.txt");
    let b = parse("report-v5.20-after-units.txt");
    for (x, y) in a.tables[0].rows.iter().zip(&b.tables[0].rows) {
        assert_eq!(x.name, y.name);
        let (xt, yt) = (x.total_wait.unwrap(), y.total_wait.unwrap());
        assert!(
            xt.ns.abs_diff(yt.ns) <= yt.err_ns,
            "{:?} {xt:?} {yt:?}",
            x.name
        );
    }
}

#[test]
fn corpus_report_truncated_names() {
    let p = parse("report-v5.18-ns-truncated-names.txt");
    let rows = &p.tables[0].rows;
    let lru = rows
        .iter()
        .find(|r| r.name.as_deref() == Some("&lruvec->lru_loc..."))
        .unwrap();
    assert!(lru.name_truncated);
    assert_eq!(lru.total_wait, Some(TimeNs::exact(56_272)));
    let c = parse("report-v5.18-combine-locks-c.txt");
    assert_eq!(c.tables[0].rows.len(), 14);
    assert_eq!(c.tables[0].rows[10].name.as_deref(), Some("(null)"));
}
