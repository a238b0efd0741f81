//! Shared by the fuzz targets: the payload decoders the CLI runs on every trace event.

use lockcast_parsers::event::Event;
use lockcast_parsers::payload;

/// Run every typed payload decoder on an event, as `lockcast` does when it pairs contention
/// events (results are ignored: only panics, hangs and leaks matter here).
pub fn decode_payloads(e: &Event) {
    let p = e.payload.as_str();
    let _ = payload::key_values(p);
    let _ = payload::contention_begin(p);
    let _ = payload::contention_end(p);
    let _ = payload::lru_insertion(p);
    let _ = payload::page_alloc(p);
    let _ = payload::page_free(p);
    for f in &e.callchain {
        let _ = f.symbol_with_offset();
    }
}
