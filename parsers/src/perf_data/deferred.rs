//! Tracepoint payload text rendered off the reading thread.
//!
//! Why: `parse --table events` of a perf.data file reads it on one thread (the record reader
//! sorts each flush round, and a sample's command name depends on the records before it), and
//! that thread was the whole wall time. On the project's 2-CPU VMs, rendering each sample's
//! payload from its print fmt was a third of the reading thread's time (a call-graph profile of
//! the 65 MB recording of `lrufault -l 100`). On the 193 MB `-l 300` one (1.97 M samples) the
//! run took 2.09 s with the payloads and 1.58 s with the rendering left out (a build that gave
//! empty payloads, to measure only). Here the reader
//! gives the samples without their text and keeps their raw bytes. The caller renders them on
//! another thread into the same events ([`Deferred::render_into`]), and then the payloads are
//! those [`super::Reader::next_event`] gives.

use std::sync::Arc;

use super::print_fmt::{self, PrintFmt, Record};
use super::tracing::EventFormat;
use crate::event::Event;

/// An event's format and its parsed print fmt: what renders its samples' payloads.
pub(super) type Format = Arc<(EventFormat, Option<PrintFmt>)>;

/// Every attr's [`Format`], by attr index (`None`: its samples have no payload text).
#[derive(Debug, Clone)]
pub(super) struct Formats {
    pub(super) by_attr: Arc<Vec<Option<Format>>>,
    pub(super) big_endian: bool,
}

/// The raw payloads of the samples the reader gave without their text since the last
/// [`super::Reader::take_deferred`], to be rendered into those events.
#[derive(Debug)]
pub struct Deferred {
    formats: Formats,
    /// The raw payloads, one after another.
    bytes: Vec<u8>,
    items: Vec<Item>,
}

/// One deferred payload.
#[derive(Debug, Clone, Copy)]
struct Item {
    /// The event's index among those the reader gave since the last take.
    event: u32,
    attr: u32,
    /// Where its raw bytes end in [`Deferred::bytes`] (they start where the previous ones end).
    end: usize,
}

impl Deferred {
    pub(super) fn new(formats: Formats) -> Self {
        Deferred {
            formats,
            bytes: Vec::new(),
            items: Vec::new(),
        }
    }

    /// An empty one for the events after these.
    pub(super) fn next(&self) -> Self {
        Deferred::new(self.formats.clone())
    }

    pub(super) fn push(&mut self, event: u32, attr: usize, raw: &[u8]) {
        self.bytes.extend_from_slice(raw);
        self.items.push(Item {
            event,
            attr: attr as u32,
            end: self.bytes.len(),
        });
    }

    /// No payload was deferred.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Render each payload into its event: `events` are the events the reader gave since the
    /// previous take, in order (an event past their end is left alone). Returns how many were
    /// printed raw because their print fmt uses what lockcast does not evaluate, to be given
    /// to [`super::Reader::deferred_done`].
    pub fn render_into(&self, events: &mut [Event]) -> u64 {
        let mut unparsed = 0;
        let mut start = 0;
        for it in &self.items {
            let data = &self.bytes[start..it.end];
            start = it.end;
            let (Some(e), Some(Some(f))) = (
                events.get_mut(it.event as usize),
                self.formats.by_attr.get(it.attr as usize),
            ) else {
                continue;
            };
            e.payload.clear();
            if !render(f, data, self.formats.big_endian, &mut e.payload) {
                unparsed += 1;
            }
        }
        unparsed
    }
}

/// [`print_fmt::render_payload`] of raw bytes `data` of an event of format `f`, into `out` (a
/// string reused from event to event); `false` when the fields were printed raw.
pub(super) fn render(f: &Format, data: &[u8], big_endian: bool, out: &mut String) -> bool {
    let r = Record {
        data,
        format: &f.0,
        big_endian,
    };
    print_fmt::render_payload(f.1.as_ref(), &r, out)
}
