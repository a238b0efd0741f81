//! `perf report --stdio` (Children/Self and Overhead layouts, call-graph trees), strict mode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::perf_report::{Options, Reader};

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data, &Options::default());
    while let Ok(Some(_)) = r.next_entry() {}
});
