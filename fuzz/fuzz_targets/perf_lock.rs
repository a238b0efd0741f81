//! `perf lock` tables (report / contention / info, CSV, footers, tables inside mail text),
//! strict mode, through `parse_all` as `lockcast parse` calls it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::perf_lock::{parse_all, Options};

fuzz_target!(|data: &[u8]| {
    let _ = parse_all(data, &Options::default());
});
