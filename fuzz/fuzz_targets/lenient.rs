//! Lenient mode of every reader, checked against strict mode on the same bytes:
//! - lenient never fails on a line (only "unknown format" may end a perf lock read);
//! - where strict mode reads the whole input, lenient mode skips nothing and yields the same
//!   records (leniency must not change the reading of a well-formed input).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockcast_parsers::{ftrace, perf_lock, perf_report, perf_script, Error};

#[path = "common.rs"]
mod common;

fn opts(lenient: bool) -> perf_lock::Options {
    let mut o = perf_lock::Options::default();
    o.lenient = lenient;
    o
}

fn no_malformed(what: &str, e: &Error) {
    assert!(
        !matches!(e, Error::Malformed { .. }),
        "{what}: lenient mode returned a malformed-line error: {e}"
    );
}

/// Read all records; `Err` is the error that stopped the read.
fn drain<T>(mut next: impl FnMut() -> Result<Option<T>, Error>) -> (Vec<T>, Result<(), Error>) {
    let mut out = Vec::new();
    loop {
        match next() {
            Ok(Some(x)) => out.push(x),
            Ok(None) => return (out, Ok(())),
            Err(e) => return (out, Err(e)),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // perf lock
    let strict = perf_lock::parse_all(data, &opts(false));
    match perf_lock::parse_all(data, &opts(true)) {
        Ok(lenient) => {
            if let Ok(strict) = strict {
                assert_eq!(lenient.diagnostics.skipped, 0);
                assert_eq!(lenient, strict);
            }
        }
        Err(e) => no_malformed("perf lock", &e),
    }

    // ftrace / trace-cmd
    let mut s = ftrace::Reader::new(data, &opts(false));
    let strict = drain(|| s.next_event());
    let mut l = ftrace::Reader::new(data, &opts(true));
    let lenient = drain(|| l.next_event());
    if let Err(e) = &lenient.1 {
        no_malformed("ftrace", e);
    }
    lenient.0.iter().for_each(common::decode_payloads);
    if strict.1.is_ok() {
        assert_eq!(l.diagnostics().skipped, 0);
        assert_eq!(lenient.0, strict.0);
    }

    // perf script
    let mut s = perf_script::Reader::new(data, &opts(false));
    let strict = drain(|| s.next_event());
    let mut l = perf_script::Reader::new(data, &opts(true));
    let lenient = drain(|| l.next_event());
    if let Err(e) = &lenient.1 {
        no_malformed("perf script", e);
    }
    if strict.1.is_ok() {
        assert_eq!(l.diagnostics().skipped, 0);
        assert_eq!(lenient.0, strict.0);
    }

    // perf report
    let mut s = perf_report::Reader::new(data, &opts(false));
    let strict = drain(|| s.next_entry());
    let mut l = perf_report::Reader::new(data, &opts(true));
    let lenient = drain(|| l.next_entry());
    if let Err(e) = &lenient.1 {
        no_malformed("perf report", e);
    }
    if strict.1.is_ok() {
        assert_eq!(l.diagnostics().skipped, 0);
        assert_eq!(lenient.0, strict.0);
    }
});
