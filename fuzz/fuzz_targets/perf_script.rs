//! `perf script` text (samples, tracepoints, call chains), strict mode, every event's payload
//! decoded as the contention pairing does; and the borrowing `PieceReader` the parallel ingest
//! uses, on the same bytes: it must give the same events and the same error as `Reader`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::perf_script::{Options, PieceReader, Reader};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let opts = Options::default();
    let mut r = Reader::new(data, &opts);
    let mut p = PieceReader::new(data, &opts);
    loop {
        let a = r.next_event();
        let b = p.next_sample().map(|o| {
            o.map(|s| {
                let e = s.view().to_event();
                p.recycle(s);
                e
            })
        });
        match (a, b) {
            (Ok(Some(x)), Ok(Some(y))) => {
                assert_eq!(x, y, "Reader and PieceReader disagree");
                common::decode_payloads(&x);
            }
            (Ok(None), Ok(None)) => break,
            (Err(x), Err(y)) => {
                assert_eq!(x.to_string(), y.to_string(), "different errors");
                break;
            }
            (x, y) => panic!("Reader gave {x:?}, PieceReader {y:?}"),
        }
    }
    assert_eq!(r.diagnostics(), p.diagnostics(), "different diagnostics");
});
