//! Every file of `tests/corpus/lock-stat/` (real `/proc/lock_stat` postings, see SOURCES.md)
//! parses, with values checked against the raw text of the mail.

use std::path::PathBuf;

use lockcast_parsers::detect::{detect_bytes, Format};
use lockcast_parsers::lock_stat::{parse_all, Options};
use lockcast_parsers::perf_lock::{Mode, Parsed, PointKind, Row, Style};
use lockcast_parsers::time::TimeNs;

fn path(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/corpus/lock-stat"
    ))
    .join(name)
}

fn parse(name: &str) -> Parsed {
    let p = path(name);
    let f = std::fs::File::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    parse_all(std::io::BufReader::new(f), &Options::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A lock_stat time: µs with two decimals, so ±5 ns.
fn us(ns: u64) -> Option<TimeNs> {
    Some(TimeNs { ns, err_ns: 5 })
}

fn points(r: &Row, kind: PointKind) -> Vec<(u64, &str)> {
    r.points
        .iter()
        .filter(|p| p.kind == kind)
        .map(|p| (p.count, p.symbol.as_str()))
        .collect()
}

#[test]
fn corpus_lock_stat_every_file_is_detected_and_parses() {
    let mut n = 0;
    for e in std::fs::read_dir(path("")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let bytes = std::fs::read(path(&name)).unwrap();
        assert_eq!(detect_bytes(&bytes), Some(Format::LockStat), "{name}");
        let p = parse(&name);
        assert!(!p.tables.is_empty(), "{name}");
        for t in &p.tables {
            assert_eq!(t.header.mode, Mode::LockStat);
            assert!(!t.rows.is_empty(), "{name}#{}", t.header.index);
        }
        n += 1;
    }
    assert_eq!(n, 3);
}

/// lkml 2022-11-24, "[PATCH] Reduce rq lock contention in load_balance()": version 0.4 (with
/// the -avg columns), header, rows and points wrapped by Thunderbird, two labelled tables.
#[test]
fn corpus_lock_stat_v04_wrapped_unpatched_and_patched() {
    let p = parse("lkml-2022-rq-lock-load-balance-unpatched-patched-v0.4.txt");
    assert_eq!(p.tables.len(), 2);
    let (a, b) = (&p.tables[0], &p.tables[1]);
    assert_eq!(a.header.label.as_deref(), Some("unpatched"));
    assert_eq!(b.header.label.as_deref(), Some("patched"));
    assert_eq!(
        a.header.style,
        Style::LockStat {
            version: "0.4".into()
        }
    );
    let r = &a.rows[0];
    // &rq->lock:  24906 25996 / 0.08 27.77 43122.87 1.66 / 1216316 6601547 0.05 41.59 10224267.38 / 1.55
    assert_eq!(r.name.as_deref(), Some("&rq->lock"));
    assert_eq!(r.rw, None);
    assert_eq!(r.line, 10);
    let h = r.hold.unwrap();
    assert_eq!(h.con_bounces, Some(24906));
    assert_eq!(r.contended, Some(25996));
    assert_eq!(r.min_wait, us(80));
    assert_eq!(r.max_wait, us(27_770));
    assert_eq!(r.total_wait, us(43_122_870));
    assert_eq!(r.avg_wait, us(1_660));
    assert_eq!(h.acq_bounces, Some(1216316));
    assert_eq!(r.acquired, Some(6601547));
    assert_eq!(h.min, us(50));
    assert_eq!(h.max, us(41_590));
    assert_eq!(h.total, us(10_224_267_380));
    assert_eq!(h.avg, us(1_550));
    assert_eq!(
        points(r, PointKind::Contention),
        vec![
            (1210, "scheduler_tick+0x4f/0xf0"),
            (1885, "_nohz_idle_balance+0x116/0x250"),
            // this one was wrapped after its `[<ip>]`, the others before it
            (15111, "update_blocked_averages+0x30/0x6f0"),
            (1156, "__schedule+0xa9/0x800"),
        ]
    );
    assert_eq!(r.points[2].addr, Some(0xdaf6fa95));
    assert_eq!(
        points(r, PointKind::Contending),
        vec![
            (15542, "update_blocked_averages+0x30/0x6f0"),
            (733, "scheduler_tick+0x4f/0xf0"),
            (3066, "try_to_wake_up+0x206/0x710"),
            (1272, "__schedule+0xa9/0x800"),
        ]
    );
    let r = &b.rows[0];
    assert_eq!(r.contended, Some(17105));
    assert_eq!(r.total_wait, us(31_154_450));
    assert_eq!(r.acquired, Some(6602803));
    assert_eq!(r.hold.unwrap().total, us(10_141_979_280));
    assert_eq!(
        points(r, PointKind::Contending)[1],
        (248, "load_balance+0x571/0xe80")
    );
}

/// linux-mm 2008-12-09, Re: "[RFC v2][PATCH]page_fault retry with NOPAGE_RETRY": version 0.3,
/// quoted three deep, a read/write class, every row wrapped.
#[test]
fn corpus_lock_stat_v03_quoted_read_write_class() {
    let p = parse("linux-mm-2008-mmap-sem-page-fault-retry-quoted-v0.3.txt");
    assert_eq!(p.tables.len(), 1);
    let rows = &p.tables[0].rows;
    assert_eq!(rows.len(), 2);
    let (w, r) = (&rows[0], &rows[1]);
    assert_eq!(w.name.as_deref(), Some("&mm->mmap_sem"));
    assert_eq!(w.rw.as_deref(), Some("W"));
    assert_eq!(r.rw.as_deref(), Some("R"));
    // the mail's own reading: "contention is lower (34911+10462 ...), and waittime-total is
    // better (57 601 464 ...)"
    assert_eq!(r.contended, Some(34911));
    assert_eq!(w.contended, Some(10462));
    assert_eq!(r.total_wait, us(57_601_464_490));
    assert_eq!(w.hold.unwrap().con_bounces, Some(5843));
    assert_eq!(w.total_wait, us(14_217_159_520));
    assert_eq!(w.hold.unwrap().acq_bounces, Some(18965));
    assert_eq!(w.acquired, Some(84205));
    assert_eq!(w.hold.unwrap().total, us(725_293_650));
    assert_eq!(r.acquired, Some(1110394));
    assert_eq!(r.hold.unwrap().max, us(164_918_520));
    assert_eq!(r.avg_wait, None, "0.3 has no -avg columns");
    assert_eq!(w.points.len(), 8, "the class's points are on its first row");
    assert!(r.points.is_empty());
    assert_eq!(
        points(w, PointKind::Contention)[3],
        (6331, "find_lock_page_retry+0xde/0xf0")
    );
    assert_eq!(
        points(w, PointKind::Contending)[3],
        (23374, "do_page_fault+0x172/0xab0")
    );
}

/// linux-mm 2009-06-24, "[RFC] Reduce the resource counter lock overhead": version 0.3, two
/// tables labelled by the prose before them; the class is renamed by the patch (spinlock →
/// seqlock), so the two tables share no class.
#[test]
fn corpus_lock_stat_v03_before_and_after_the_patch() {
    let p = parse("linux-mm-2009-res-counter-before-after-v0.3.txt");
    assert_eq!(p.tables.len(), 2);
    assert_eq!(
        p.tables[0].header.label.as_deref(),
        Some("Before the patch, I see")
    );
    assert_eq!(
        p.tables[1].header.label.as_deref(),
        Some("After the patch I see")
    );
    let a = &p.tables[0].rows[0];
    assert_eq!(a.name.as_deref(), Some("&counter->lock"));
    assert_eq!(a.contended, Some(1575341));
    assert_eq!(a.min_wait, us(570));
    assert_eq!(a.total_wait, us(675_713_230));
    assert_eq!(a.acquired, Some(138524248));
    assert_eq!(a.hold.unwrap().total, us(54_133_607_050));
    let b = &p.tables[1].rows[0];
    assert_eq!(b.name.as_deref(), Some("&(&counter->lock)->lock"));
    assert_eq!(b.contended, Some(976349));
    assert_eq!(b.hold.unwrap().acq_bounces, Some(21364165));
    assert_eq!(b.hold.unwrap().total, us(25_395_513_120));
    assert_eq!(
        points(b, PointKind::Contention),
        vec![
            (495468, "res_counter_uncharge+0x2c/0x77"),
            (480881, "res_counter_charge+0x3e/0xfb")
        ]
    );
}
