//! Every file of `tests/corpus/klockstat/` (bcc's example file and libbpf-tools output posted
//! in bcc pull requests, see SOURCES.md) parses, with values checked against the raw text.

use std::path::PathBuf;

use lockcast_parsers::detect::{detect_bytes, Format};
use lockcast_parsers::klockstat::{parse_all, Options};
use lockcast_parsers::perf_lock::{Mode, Parsed};
use lockcast_parsers::time::TimeNs;

fn path(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/corpus/klockstat"
    ))
    .join(name)
}

fn parse(name: &str) -> Parsed {
    let p = path(name);
    let f = std::fs::File::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    parse_all(std::io::BufReader::new(f), &Options::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn exact(ns: u64) -> Option<TimeNs> {
    Some(TimeNs::exact(ns))
}

/// `%.1f` of a unit: half of a tenth of it.
fn tenth(ns: u64, unit: u64) -> Option<TimeNs> {
    Some(TimeNs {
        ns,
        err_ns: unit / 20,
    })
}

#[test]
fn corpus_klockstat_every_file_is_detected_and_parses() {
    let mut n = 0;
    for e in std::fs::read_dir(path("")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let bytes = std::fs::read(path(&name)).unwrap();
        assert_eq!(detect_bytes(&bytes), Some(Format::Klockstat), "{name}");
        let p = parse(&name);
        assert!(!p.tables.is_empty(), "{name}");
        for t in &p.tables {
            let want = if name.contains("per-thread") {
                Mode::Task
            } else {
                Mode::Klockstat
            };
            assert_eq!(t.header.mode, want, "{name}");
            assert!(!t.rows.is_empty(), "{name}#{}", t.header.index);
        }
        n += 1;
    }
    assert_eq!(n, 5);
}

#[test]
fn corpus_klockstat_bcc_example_raw_ns_spin_and_hold_tables() {
    let p = parse("bcc-klockstat_example.txt");
    // 7 runs: plain, -i 5 (two intervals), -p, -c, -n, -s, -S; two tables each
    assert_eq!(p.tables.len(), 16);
    let spin = &p.tables[0];
    assert_eq!(spin.header.label.as_deref(), Some("# klockstat.py"));
    assert_eq!(spin.rows.len(), 7);
    // psi_avgs_work+0x2e       3675      5       5468      18379
    let r = &spin.rows[0];
    assert_eq!(r.caller.as_deref(), Some("psi_avgs_work+0x2e"));
    assert_eq!(r.avg_wait, exact(3675));
    assert_eq!(r.acquired, Some(5));
    assert_eq!(r.contended, None, "klockstat counts every acquisition");
    assert_eq!(r.max_wait, exact(5468));
    assert_eq!(r.total_wait, exact(18379));
    let hold = &p.tables[1];
    // flush_to_ldisc+0x22      42558      2      76135      85116
    let r = &hold.rows[0];
    assert_eq!(r.caller.as_deref(), Some("flush_to_ldisc+0x22"));
    let h = r.hold.unwrap();
    assert_eq!(
        (h.avg, h.count, h.max, h.total),
        (exact(42558), Some(2), exact(76135), exact(85116))
    );
    assert_eq!(r.total_wait, None);
    // -s 3: the row's stack lines
    let s = p
        .tables
        .iter()
        .find(|t| t.header.label.as_deref() == Some("# klockstat.py -n 1 -s 3"))
        .unwrap();
    assert_eq!(s.rows.len(), 1);
    let frames: Vec<&str> = s.rows[0].stack.iter().map(|f| f.symbol.as_str()).collect();
    assert_eq!(frames, ["pipe_wait+0xa9", "pipe_read+0x206"]);
    assert_eq!(s.rows[0].total_wait, exact(556542328));
}

#[test]
fn corpus_klockstat_libbpf_units_stacks_and_max_lines() {
    let p = parse("libbpf-tools-pr4188-stacks-max-pid-lock.txt");
    assert_eq!(p.tables.len(), 3);
    // down_read+0x5    155 ns    33052   115.5 us       5.1 ms
    let r = &p.tables[0].rows[0];
    assert_eq!(r.caller.as_deref(), Some("down_read+0x5"));
    assert_eq!(r.avg_wait, exact(155));
    assert_eq!(r.acquired, Some(33052));
    assert_eq!(r.max_wait, tenth(115_500, 1_000));
    assert_eq!(r.total_wait, tenth(5_100_000, 1_000_000));
    assert_eq!(r.stack[0].symbol, "kernfs_fop_readdir+0x115");
    assert_eq!(r.pid, Some(39643));
    assert_eq!(r.comm.as_deref(), Some("cadvisor"));
    assert_eq!(r.symbol.as_deref(), Some("kernfs_rwsem"));
    assert_eq!(r.address, Some(0xffffffff89f87e00));
    let h = &p.tables[2].rows[0];
    assert_eq!(h.hold.unwrap().total, tenth(64_300_000, 1_000_000));
    assert_eq!(h.symbol.as_deref(), Some("no-ksym"));

    // `m` is minutes, `h` hours; the Max PID line before the lock was added
    let p = parse("libbpf-tools-pr4187-minutes-hours-old-max-pid.txt");
    let r = &p.tables[0].rows[0];
    let h = r.hold.unwrap();
    assert_eq!(h.avg, tenth(324_000_000_000, 60_000_000_000));
    assert_eq!(h.max, tenth(1_768_320_000_000_000, 3_600_000_000_000));
    assert_eq!(r.stack.len(), 4);
    assert_eq!(r.comm.as_deref(), Some("edgeworker/sbox"));
    assert_eq!(r.symbol, None);

    let p = parse("libbpf-tools-pr5230-nltype.txt");
    let r = &p.tables[0].rows[0];
    assert_eq!(r.symbol.as_deref(), Some("rtnl_mutex"));
    assert_eq!(r.address, Some(0xffffffff9e422b60));
}

#[test]
fn corpus_klockstat_libbpf_per_thread() {
    let p = parse("libbpf-tools-pr3984-per-thread-P.txt");
    assert_eq!(p.tables.len(), 2);
    assert_eq!(p.tables[0].rows.len(), 5);
    // 8428   IPDL Background    4.8 us      213   379.0 us       1.0 ms
    let r = &p.tables[0].rows[0];
    assert_eq!(r.pid, Some(8428));
    assert_eq!(r.comm.as_deref(), Some("IPDL Background"));
    assert_eq!(r.caller, None);
    assert_eq!(r.avg_wait, tenth(4_800, 1_000));
    assert_eq!(r.acquired, Some(213));
    // 1056 in:imklog 4.0 ms 760 17.9 ms 3.0 s (with the trailing space of `s `)
    let r = &p.tables[1].rows[1];
    assert_eq!(r.comm.as_deref(), Some("in:imklog"));
    assert_eq!(r.hold.unwrap().total, tenth(3_000_000_000, 1_000_000_000));
}
