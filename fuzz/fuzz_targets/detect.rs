//! Format detection: every format's `sniff` on every line, through both entry points.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::detect::{detect, detect_lines};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let by_lines = detect_lines(text.lines());
    let mut r = data;
    let by_reader = detect(&mut r).ok().flatten();
    // `detect` looks at what fill_buf shows, here the whole input: both must agree.
    assert_eq!(by_lines, by_reader);
});
