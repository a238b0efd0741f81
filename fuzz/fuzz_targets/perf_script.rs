//! `perf script` text (samples, tracepoints, call chains), strict mode, every event's payload
//! decoded as the contention pairing does; and the borrowing `PieceReader` the parallel ingest
//! uses, on the same bytes: it must give the same events, error and diagnostics as `Reader`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::perf_script::{readers_agree, Options};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = readers_agree(data, &Options::default(), common::decode_payloads) {
        panic!("Reader and PieceReader disagree: {why}");
    }
});
