//! What the progress bar of a mapped perf.data follows: `perf_data::bytes_walked`, the bytes
//! of data sections the record passes have walked. Alone in its test binary, so the count is
//! this test's own (it is the process's).

use std::io::Cursor;

use lockcast_parsers::perf_data::{bytes_walked, data_section_size, Options, Reader};

fn gunzip(p: &str) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/").to_string() + p;
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(f), &mut out)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    out
}

/// A what-if's read of a recording is two passes over its data section (the framing check,
/// then the typed walk), whole or in parts: each counts the section once, to the byte, so the
/// bar's pass number and position are those of the pass under way.
#[test]
fn each_record_pass_counts_the_data_section_once() {
    let bin = gunzip("perfdata/micro-16K-replay/perf.data.gz");
    // `perf_file_header`: the data section's offset at byte 40, its size at 48
    let size = u64::from_le_bytes(bin[48..56].try_into().unwrap());
    let off = u64::from_le_bytes(bin[40..48].try_into().unwrap());
    assert!(size > 100_000 && off + size <= bin.len() as u64);
    assert_eq!(data_section_size(&bin[..56]), Some(size));
    // not a file-mode perf.data, and one perf did not finish writing
    assert_eq!(data_section_size(b"# ========\n# captured on"), None);
    let mut unfinished = bin[..56].to_vec();
    unfinished[48..56].fill(0);
    assert_eq!(data_section_size(&unfinished), None);
    for split_above in [None, Some(0)] {
        let before = bytes_walked();
        let mut o = Options::offline(false);
        o.split_above = split_above;
        let mut r = Reader::with_options(Box::new(Cursor::new(bin.clone())), o);
        r.typed_fields(&[("contention_begin", &["lock_addr"])]);
        let typed = r.typed_samples().unwrap().expect("a one-pass read");
        assert!(typed.len() > 1000);
        assert_eq!(
            bytes_walked() - before,
            2 * size,
            "split above {split_above:?}"
        );
    }
}
