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
