//! `perf.data` files (file and pipe mode), strict and lenient, every event's payload decoded
//! as the contention pairing does. The tracing-data fallback and the kallsyms are given empty,
//! so a cut input reads nothing from the machine (no tracefs, no build-id cache).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::perf_data::{Options, Reader};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    for lenient in [false, true] {
        let opts = Options::offline(lenient);
        let mut r = Reader::with_options(Box::new(data), opts);
        while let Ok(Some(e)) = r.next_event() {
            common::decode_payloads(&e);
        }
    }
});
