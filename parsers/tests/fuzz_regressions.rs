//! Inputs the fuzz smoke run found, kept so the fix stays (each file is the fuzzer's own
//! artifact, byte for byte: damaged input, not a capture).

use lockcast_parsers::perf_data::{Options, Reader};

fn read_all(data: &'static [u8], lenient: bool) -> Result<usize, String> {
    // the fuzz target's options
    let opts = Options::offline(lenient);
    let mut r = Reader::with_options(Box::new(data), opts);
    let mut n = 0;
    loop {
        match r.next_event() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return Ok(n),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// A pipe-mode stream whose EVENT_DESC HEADER_FEATURE record gives an event name of several GB:
/// the record reader allocated it (3.9 GB) before reading; now an error names the byte.
#[test]
fn pipe_event_desc_with_a_huge_name_is_an_error_not_an_allocation() {
    let data: &'static [u8] = include_bytes!("data/fuzz-perf_data-pipe-event-desc-oom.bin");
    for lenient in [false, true] {
        let e = read_all(data, lenient).expect_err("a damaged EVENT_DESC must not read");
        assert!(e.contains("byte 3768") && e.contains("EVENT_DESC"), "{e}");
    }
}

/// A perf.data file (a local fuzz run, after CI's smoke run died of an out-of-memory input it
/// did not keep) whose CMDLINE feature says it holds 0x665f_8000 strings: the record reader's
/// `cmdline()` reserved room for all of them (27 GB) before reading one. The command line is
/// now read with bounds and left out; the rest of the file reads.
#[test]
fn cmdline_with_a_huge_string_count_is_left_out_not_allocated() {
    let data: &'static [u8] = include_bytes!("data/fuzz-perf_data-cmdline-count-oom.bin");
    for lenient in [false, true] {
        let mut r = Reader::with_options(Box::new(data), Options::offline(lenient));
        let mut n = 0;
        while let Ok(Some(_)) = r.next_event() {
            n += 1;
        }
        let h = r.header().expect("the header was read").clone();
        assert_eq!(h.cmdline, None);
        assert!(n > 0, "the records before the damage still read");
    }
}

/// A pipe-mode stream whose HEADER_FEATURE record has feature id 0xe1e1_0000_0000_000c: the
/// record reader keeps the low 32 bits (12, EVENT_DESC) and read a count of ~4 G events
/// (a 667 GB reservation), while the check compared all 64 bits and let it through.
#[test]
fn pipe_feature_id_with_high_bits_set_is_checked_as_the_reader_sees_it() {
    let data: &'static [u8] = include_bytes!("data/fuzz-perf_data-pipe-feature-id-high-bits.bin");
    for lenient in [false, true] {
        let e = read_all(data, lenient).expect_err("a damaged EVENT_DESC must not read");
        assert!(
            e.contains("EVENT_DESC HEADER_FEATURE record (bytes 3200..4288)"),
            "{e}"
        );
    }
}
