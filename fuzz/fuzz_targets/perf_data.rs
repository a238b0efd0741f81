//! `perf.data` files (file and pipe mode), strict and lenient, every event's payload decoded
//! as the contention pairing does; read as the replay reads them, typed fields asked for and
//! every sample in one pass when the file allows it (else event by event); and read as
//! `report` reads them, the lock events alone (the other samples taken out first). The last
//! two split every data section into parts (as a large file's is), so the framing check's
//! guessed part starts and the typed walk's parts are tried on every input. The tracing-data
//! fallback and the kallsyms are given empty, so a cut input reads nothing from the machine
//! (no tracefs, no build-id cache).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::perf_data::{Options, Reader};

#[path = "common.rs"]
mod common;

const TYPED: [(&str, &[&str]); 3] = [
    ("mm_page_alloc", &["pfn", "order"]),
    ("contention_begin", &["lock_addr"]),
    ("kmem:mm_page_free", &["pfn"]),
];

fuzz_target!(|data: &[u8]| {
    for lenient in [false, true] {
        let opts = Options::offline(lenient);
        let mut r = Reader::with_options(Box::new(data), opts);
        while let Ok(Some(e)) = r.next_event() {
            common::decode_payloads(&e);
        }
        let split = || Options {
            split_above: Some(0),
            ..Options::offline(lenient)
        };
        let mut r = Reader::with_options(Box::new(data), split());
        r.typed_fields(&TYPED);
        match r.typed_samples() {
            Ok(Some(all)) => {
                // read in order, and joined: the same samples
                let n = all.iter().map(|x| (x.values(), x.payload())).count();
                assert_eq!(n, all.len());
                if let Some(joined) = all.join() {
                    assert_eq!(joined.samples.len(), n);
                    for s in &joined.samples {
                        let _ = (joined.values_of(s), joined.payload_of(s));
                    }
                }
            }
            Ok(None) => while let Ok(Some(_)) = r.next_event() {},
            Err(_) => {}
        }
        let mut r = Reader::with_options(Box::new(data), split());
        r.only(&["contention_begin", "contention_end"]);
        while let Ok(Some(e)) = r.next_event() {
            common::decode_payloads(&e);
        }
    }
});
