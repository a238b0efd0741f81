//! `perf script` text (samples, tracepoints, call chains), strict mode, every event's payload
//! decoded as the contention pairing does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::perf_script::{Options, Reader};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data, &Options::default());
    while let Ok(Some(e)) = r.next_event() {
        common::decode_payloads(&e);
    }
});
