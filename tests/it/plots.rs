//! `lockcast plot`: every chart kind drawn from real fixtures, checked as an image (PNG header
//! and pixels, SVG text) against values read from the raw captures.

use std::path::{Path, PathBuf};

use crate::common::*;

/// Base series colour (plots::BASE) and patched (plots::PATCHED), as RGB bytes.
const BASE: [u8; 3] = [0, 114, 178];
const PATCHED: [u8; 3] = [230, 159, 0];

struct Png {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Png {
    fn has(&self, c: [u8; 3]) -> bool {
        self.rgb.chunks_exact(3).any(|p| p == c)
    }
}

/// Check the signature and IHDR by hand (what any viewer reads first), then decode fully.
fn read_png(path: &Path) -> Png {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let (width, height) = (be(16), be(20));
    assert_eq!((bytes[24], bytes[25]), (8, 2), "8-bit RGB");
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut rgb).unwrap();
    assert_eq!((info.width, info.height), (width, height));
    rgb.truncate(info.buffer_size());
    Png { width, height, rgb }
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lockcast-plots-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn plot(args: &[&str]) {
    let mut a = vec!["plot"];
    a.extend_from_slice(args);
    let o = lockcast(&a);
    assert!(o.status.success(), "lockcast {a:?}: {}", stderr(&o));
}

/// SVG keeps text as text, so labels can be checked exactly.
fn svg_text(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap();
    assert!(s.starts_with("<svg"), "{}", &s[..s.len().min(80)]);
    s
}

const AB_BASE: &str = "fixtures/captures/micro-16K-r1/contention.txt";
const AB_PATCHED: &str = "fixtures/captures/micro-4K-r1/contention.txt";

#[test]
fn plots_ab_png_and_svg_from_real_captures() {
    let d = out_dir("ab");
    let png = d.join("ab.png");
    let svg = d.join("ab.svg");
    plot(&["ab", AB_BASE, AB_PATCHED, "-o", png.to_str().unwrap()]);
    plot(&["ab", AB_BASE, AB_PATCHED, "-o", svg.to_str().unwrap()]);
    let p = read_png(&png);
    // 10 rows of 2 bars: 150 + (14 + 2 * 10) * 10 px high, 1200 wide (AbChart::default_size)
    assert_eq!((p.width, p.height), (1200, 490));
    assert!(p.has(BASE) && p.has(PATCHED), "both series drawn");
    let s = svg_text(&svg);
    for label in [
        "Lock contention, base vs patched: top 10 by base total wait",
        "contended acquisitions (count)",
        "total wait (ms)",
        "base: micro-16K-r1/contention.txt",
        "patched: micro-4K-r1/contention.txt",
        "spinlock folio_batch_move_lru+0x88",
        // 14082 / 754 contended and 18.73 ms / 8.58 ms in the two contention.txt files
        "18.68x",
        "2.18x",
    ] {
        assert!(s.contains(label), "{label:?} missing from the SVG");
    }
}

#[test]
fn plots_ab_size_labels_and_title_options() {
    let d = out_dir("ab-opts");
    let svg = d.join("seed.svg");
    let seed = format!("fixtures/{SEED}");
    plot(&[
        "ab",
        &format!("{seed}#1"),
        &format!("{seed}#2"),
        "--label",
        "w/o patch",
        "--label",
        "w/ patch",
        "--top",
        "3",
        "--title",
        "RFC v3 microbenchmark",
        "--size",
        "900x400",
        "-o",
        svg.to_str().unwrap(),
    ]);
    let s = svg_text(&svg);
    assert!(s.contains("width=\"900\"") && s.contains("height=\"400\""));
    // The seed's posted reduction: 21414857 -> 2641286 contended, 10.73 m -> 2.06 m total wait
    for label in [
        "RFC v3 microbenchmark",
        "w/o patch",
        "w/ patch",
        "8.11x",
        "5.21x",
        "total wait (s)",
    ] {
        assert!(s.contains(label), "{label:?} missing");
    }
    let png = d.join("seed.png");
    plot(&[
        "ab",
        &format!("{seed}#1"),
        &format!("{seed}#2"),
        "--size",
        "640x360",
        "-o",
        png.to_str().unwrap(),
    ]);
    let p = read_png(&png);
    assert_eq!((p.width, p.height), (640, 360));
}

const WAITS_BASE: &str = "fixtures/replay/micro-16K-r1/script-ns.txt.gz";
const WAITS_PATCHED: &str = "fixtures/replay/micro-4K-r1/script-ns.txt.gz";

#[test]
fn plots_waits_png_and_svg_from_real_traces() {
    let d = out_dir("waits");
    let png = d.join("waits.png");
    let svg = d.join("waits.svg");
    plot(&[
        "waits",
        WAITS_BASE,
        WAITS_PATCHED,
        "-o",
        png.to_str().unwrap(),
    ]);
    plot(&[
        "waits",
        WAITS_BASE,
        WAITS_PATCHED,
        "-o",
        svg.to_str().unwrap(),
    ]);
    let p = read_png(&png);
    // 4 panels in 2 columns: 1400 x (110 + 380 * 2)
    assert_eq!((p.width, p.height), (1400, 870));
    assert!(p.has(BASE) && p.has(PATCHED));
    let s = svg_text(&svg);
    for label in [
        "Wait-time distribution per lock",
        "wait time (log scale)",
        "waits (count)",
        // the LRU lock: `zgrep -c 'contention_begin.*0xffff888112cdf498'` gives 799 and 653
        "lock 0xffff888112cdf498 (spinlock)",
        "micro-16K-r1/script-ns.txt.gz: 799 waits",
        "micro-4K-r1/script-ns.txt.gz: 653 waits",
        "1 µs",
    ] {
        assert!(s.contains(label), "{label:?} missing");
    }
}

#[test]
fn plots_waits_by_caller_needs_call_chains() {
    let d = out_dir("waits-caller");
    let svg = d.join("g.svg");
    // micro-16K-g was recorded with -g: panels are named by caller as perf names them
    plot(&[
        "waits",
        "fixtures/traces/micro-16K-g/script-ns.txt.gz",
        "--by",
        "caller",
        "-o",
        svg.to_str().unwrap(),
    ]);
    let s = svg_text(&svg);
    assert!(s.contains("spinlock folio_batch_move_lru+0x88"));
    assert!(
        s.contains("4838 waits"),
        "perf lock contention on the same recording: 4838"
    );
    // the replay traces have no call chains
    let o = lockcast(&["plot", "waits", WAITS_BASE, "--by", "caller", "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no call chains"));
    // a perf lock table has no individual waits
    let o = lockcast(&["plot", "waits", AB_BASE, "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("needs an event trace"));
}

#[test]
fn plots_timeline_png_and_svg_from_a_real_trace() {
    let d = out_dir("timeline");
    let png = d.join("t.png");
    let svg = d.join("t.svg");
    let trace = "fixtures/traces/micro-16K-g/script-ns.txt.gz";
    plot(&["timeline", trace, "-o", png.to_str().unwrap()]);
    plot(&["timeline", trace, "-o", svg.to_str().unwrap()]);
    let p = read_png(&png);
    // two CPU rows: 1200 x (max(300 + 34 * 2, 460) + 220)
    assert_eq!((p.width, p.height), (1200, 680));
    assert!(p.has(BASE), "the CPUs-waiting line");
    let s = svg_text(&svg);
    // 2599 contention_begin on [000] and 2551 on [001]; 5150 waits paired
    for label in [
        "Lock waiting over time: micro-16K-g/script-ns.txt.gz",
        "5150 traced waits",
        "CPU 0",
        "CPU 1",
        "CPUs waiting",
        "time since the first traced wait (ms)",
    ] {
        assert!(s.contains(label), "{label:?} missing");
    }
}

#[test]
fn plots_bad_arguments_are_usage_errors() {
    let o = lockcast(&["plot", "ab", AB_BASE, "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("expects BASE PATCHED, got 1"));
    let o = lockcast(&["plot", "ab", AB_BASE, AB_PATCHED, "-o", "x.gif"]);
    assert_eq!(o.status.code(), Some(2));
    let o = lockcast(&[
        "plot", "ab", AB_BASE, AB_PATCHED, "--size", "12", "-o", "x.png",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// `plot whatif` draws a what-if report, not a capture: given the capture (its directory, or
/// a perf.data) it says how to make the report, as bad input, and writes nothing.
#[test]
fn plots_whatif_of_a_capture_says_to_run_whatif_first() {
    let d = out_dir("whatif-of-capture");
    let out = d.join("w.png");
    for capture in [
        fixture("replay/micro-16K-r1"),
        fixture("perfdata/micro-16K-replay/perf.data.gz"),
    ] {
        let c = capture.to_string_lossy();
        let o = lockcast(&["plot", "whatif", &c, "-o", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(&format!("{c}: ")), "{e}");
        assert!(
            e.contains(&format!(
                "run `lockcast whatif POLICY {c} --json > whatif.json`"
            )),
            "{e}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn plots_demo_writes_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let o = lockcast(&["demo", "--out", &dir.path().to_string_lossy()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("ab-16K-vs-4K.png, ab-16K-vs-4K.svg, waits-16K-vs-4K.png, timeline-16K.png"),
        "{s}"
    );
    let ab = read_png(&dir.path().join("ab-16K-vs-4K.png"));
    assert_eq!((ab.width, ab.height), (1200, 490));
    let w = read_png(&dir.path().join("waits-16K-vs-4K.png"));
    assert_eq!((w.width, w.height), (1400, 870));
    let t = read_png(&dir.path().join("timeline-16K.png"));
    assert_eq!((t.width, t.height), (1200, 680));
    let svg = svg_text(&dir.path().join("ab-16K-vs-4K.svg"));
    assert!(svg.contains("16K mTHP (base) vs 4K pages"));
}

/// The what-if chart from the real `lockcast whatif --json` of a replay capture, piped in.
#[test]
fn plots_whatif_from_a_real_whatif_run() {
    let o = lockcast(&[
        "whatif",
        "lru-cache",
        "fixtures/replay/micro-16K-r1/script-ns.txt.gz",
        "--json",
        "--bootstrap",
        "20",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = &v["rows"][0];
    // the LRU lock: 799 contention_begin on 0xffff888112cdf498 in the raw trace
    assert_eq!(row["lock"], "0xffff888112cdf498");
    assert_eq!(row["measured"]["contended"], 799);
    let d = out_dir("whatif-real");
    let svg = d.join("w.svg");
    let png = d.join("w.png");
    for out in [&svg, &png] {
        let p = lockcast_stdin(
            &["plot", "whatif", "-", "-o", out.to_str().unwrap()],
            &o.stdout,
        );
        assert!(p.status.success(), "{}", stderr(&p));
    }
    let s = svg_text(&svg);
    let ratio = |k: &str| format!("{:.2}x", row[k].as_f64().unwrap());
    for label in [
        "What-if lru-cache: measured vs predicted contention".to_string(),
        // the replayed lock is the LRU lock: named, not only its address
        "lru_lock 0xffff888112cdf498".to_string(),
        ratio("ratio_contended"),
        ratio("ratio_total_wait"),
    ] {
        assert!(s.contains(&label), "{label:?} missing");
    }
    let p = read_png(&png);
    assert_eq!((p.width, p.height), (1200, 420));
    assert!(p.has(BASE) && p.has(PATCHED));
    // the JSON is the library's typed report: it reads back into the type that wrote it
    let r: lockcast::whatif::report::Report = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r.rows[0].measured.contended, 799);
    assert_eq!(r.policy, "lru-cache");
    // anything else is bad input naming the file
    let o = lockcast(&["plot", "whatif", AB_BASE, "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains(AB_BASE), "{}", stderr(&o));
}
