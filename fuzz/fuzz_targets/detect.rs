//! Format detection: every format's `sniff` on every line and every binary magic, through both
//! entry points.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::detect::{detect, detect_bytes, detect_lines, FORMATS};

fuzz_target!(|data: &[u8]| {
    let by_bytes = detect_bytes(data);
    let mut r = data;
    let by_reader = detect(&mut r).ok().flatten();
    // `detect` looks at what fill_buf shows, here the whole input: both must agree.
    assert_eq!(by_bytes, by_reader);
    // Without a binary magic at the start, detection is the text lines' alone.
    let magic = FORMATS
        .iter()
        .any(|f| f.magic.is_some_and(|m| data.starts_with(m)));
    if !magic {
        let text = String::from_utf8_lossy(data);
        assert_eq!(detect_lines(text.lines()), by_bytes);
    }
});
