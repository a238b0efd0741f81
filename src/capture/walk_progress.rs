//! The progress bar of a mapped perf.data: the file is not read through a counting reader (it
//! is mapped, [`lockcast_parsers::perf_data::Reader::from_file`]), so the bar follows the bytes
//! its record passes walk ([`perf_data::bytes_walked`]) instead, pass by pass: the framing
//! check, then the record or typed walk (and, for the lock tables, the compaction between).
//! Without it the bar a large file gets was cleared before the read began, and a what-if of a
//! multi-GB recording showed nothing until its replicates.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::ProgressBar;
use lockcast_parsers::event::{CaptureHeader, Event, EventRead};
use lockcast_parsers::perf_data::{self, Deferred, TypedParts};

/// How often the bar is moved: the passes count every 8 MiB, ~100 ms of a pass on the 2-CPU
/// VMs this is measured on.
const EVERY: Duration = Duration::from_millis(100);

/// A thread moving `pb` along the record passes over a data section of `section` bytes, from
/// now until the value is dropped (which clears the bar).
pub struct Follow {
    pb: ProgressBar,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Follow {
    /// Follow the passes over a data section of `section` bytes of `path` on `pb`; `None`
    /// when no thread can be had (the bar is then cleared, as before).
    pub fn start(pb: ProgressBar, section: u64, path: &str) -> Option<Follow> {
        let base = perf_data::bytes_walked();
        let section = section.max(1);
        // the bar counted the bytes format detection read; from here it counts passes, with
        // their own rate and eta (set in this order, it never shows the old position against
        // the new length)
        pb.reset();
        pb.set_length(section);
        let stop = Arc::new(AtomicBool::new(false));
        let (bar, done, path) = (pb.clone(), stop.clone(), path.to_string());
        let thread = std::thread::Builder::new()
            .name("walk-progress".into())
            .spawn(move || {
                while !done.load(Ordering::Acquire) && !bar.is_finished() {
                    // each pass walks the section once: which pass, and how far into it
                    let walked = perf_data::bytes_walked().saturating_sub(base);
                    bar.set_message(format!("{path} (pass {})", walked / section + 1));
                    bar.set_position(walked % section);
                    std::thread::park_timeout(EVERY);
                }
            });
        match thread {
            Ok(t) => Some(Follow {
                pb,
                stop,
                thread: Some(t),
            }),
            Err(_) => {
                pb.finish_and_clear();
                None
            }
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        self.pb.finish_and_clear();
    }
}

/// An event reader whose bar follows its passes while it lives ([`Follow`]).
pub struct Followed {
    /// The reader.
    pub inner: Box<dyn EventRead + Send>,
    /// Dropped with the reader, after it.
    pub follow: Option<Follow>,
}

impl EventRead for Followed {
    fn next_event(&mut self) -> Result<Option<Event>, lockcast_parsers::Error> {
        self.inner.next_event()
    }
    fn next_event_into(&mut self, out: &mut Event) -> Result<bool, lockcast_parsers::Error> {
        self.inner.next_event_into(out)
    }
    fn diagnostics(&self) -> &lockcast_parsers::Diagnostics {
        self.inner.diagnostics()
    }
    fn header(&self) -> Option<&CaptureHeader> {
        self.inner.header()
    }
    fn only(&mut self, names: &[&str]) {
        self.inner.only(names)
    }
    fn skipped(&self) -> u64 {
        self.inner.skipped()
    }
    fn typed_fields(&mut self, want: &[(&str, &[&str])]) -> bool {
        self.inner.typed_fields(want)
    }
    fn fields(&self) -> Option<&[i64]> {
        self.inner.fields()
    }
    fn typed_samples(&mut self) -> Result<Option<TypedParts>, lockcast_parsers::Error> {
        let all = self.inner.typed_samples();
        // the typed walk is the last pass: what follows is the caller's own work
        self.follow = None;
        all
    }
    fn task_names(
        &mut self,
    ) -> Result<Option<std::collections::BTreeMap<i32, String>>, lockcast_parsers::Error> {
        self.inner.task_names()
    }
    fn defer_payloads(&mut self) -> bool {
        self.inner.defer_payloads()
    }
    fn leave_payloads(&mut self) -> bool {
        self.inner.leave_payloads()
    }
    fn take_deferred(&mut self) -> Option<Deferred> {
        self.inner.take_deferred()
    }
    fn deferred_done(&mut self, unparsed: u64) {
        self.inner.deferred_done(unparsed)
    }
}
