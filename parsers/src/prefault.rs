//! Faulting in a fresh buffer's pages on a helper thread while its owner fills it.
//!
//! The first write to a fresh anonymous page takes a page fault: the kernel allocates, zeroes
//! and charges the page before the write goes on. A pass that fills a large fresh buffer on
//! one CPU pays every fault in its own time (on the what-if's 2 M-event recording, the trace's
//! events are 63 MB: 15 k faults, a third of the pass that builds them). When a second CPU
//! is idle meanwhile, `madvise(MADV_POPULATE_WRITE)` (Linux 5.14) there takes those faults
//! ahead of the writer. It faults pages in as a write would, without writing: a page the
//! writer reached first is left as it is, so the two need no coordination.
//!
//! Only whole pages inside a buffer's spare capacity are asked for, so no other allocation's
//! page is touched. On a kernel without `MADV_POPULATE_WRITE`, on one CPU, or on other
//! systems, nothing is done and the writer faults its pages in itself, as without this.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Fewer bytes than this get no helper: a guess, not measured, that keeps small captures'
/// passes free of a thread that would have little to do.
const MIN_BYTES: usize = 2 << 20;

/// How far ahead of its writer [`Prefault::follow`]'s helper goes, as the what-if's passes
/// use it. Not tuned: on the 2 M-event recording the writers fill 1.6-1.8 MB per ms, so this
/// is about 5 ms of their work, and at most this much is faulted in past where they stop
/// (given back by [`trim`]).
pub const AHEAD: usize = 8 << 20;

/// Pages asked for in one call: the helper looks for [`Prefault`]'s stop between calls.
const CHUNK: usize = 256 << 10;

const PAGE: usize = 4096;

/// Whole pages of a buffer's spare capacity, as addresses ([`spare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// Bytes in the span.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// No whole page.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// The whole pages of `v`'s spare capacity, up to `extra` elements past its length: the
/// bytes `v` is about to be filled with. Rounded inward, so the span holds no byte of
/// anything else.
pub fn spare<T>(v: &Vec<T>, extra: usize) -> Span {
    let size = std::mem::size_of::<T>();
    let from = v.as_ptr() as usize + v.len() * size;
    let to = from + extra.min(v.capacity() - v.len()) * size;
    within(from, to)
}

/// Give back the pages of `v`'s spare capacity ([`spare`], all of it): those a
/// [`Prefault::follow`] helper faulted in past where its writer stopped, up to its `ahead`
/// bytes, which would otherwise stay resident as long as `v`.
pub fn trim<T>(v: &Vec<T>) {
    let s = spare(v, usize::MAX);
    if s.is_empty() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: `s` is whole pages of `v`'s spare capacity, which holds no value: after
    // MADV_DONTNEED they read as zeros when next touched, and `v` writes before it reads.
    unsafe {
        libc::madvise(s.start as *mut libc::c_void, s.len(), libc::MADV_DONTNEED);
    }
}

/// The whole pages inside the bytes `from..to`.
fn within(from: usize, to: usize) -> Span {
    let start = from.div_ceil(PAGE) * PAGE;
    let end = (to / PAGE * PAGE).max(start);
    Span { start, end }
}

/// A helper thread faulting in [`Span`]s. Dropped or [`Prefault::finish`]ed, it stops after
/// the call in flight.
#[derive(Debug)]
pub struct Prefault {
    state: Arc<AtomicU8>,
    helper: Option<JoinHandle<usize>>,
}

/// How far the writer of a [`Prefault::follow`]ed buffer has come.
#[derive(Debug, Clone)]
pub struct Progress(Arc<AtomicUsize>);

impl Progress {
    /// `v` is filled up to its length (the followed span's buffer, not grown past its
    /// capacity since).
    pub fn at<T>(&self, v: &[T]) {
        let end = v.as_ptr() as usize + std::mem::size_of_val(v);
        self.0.store(end, Ordering::Relaxed);
    }
}

/// One span being faulted in: up to where, and how far.
struct Track {
    span: Span,
    done: usize,
    /// Where its writer is; no further than `ahead` bytes past it.
    writer: Arc<AtomicUsize>,
    /// Done as far as it will go.
    closed: bool,
}

/// [`Prefault`]'s helper goes on; stops where its followed spans' writers are; stops now.
const RUN: u8 = 0;
const DRAIN: u8 = 1;
const STOP: u8 = 2;

impl Prefault {
    /// Start faulting in `spans` on a helper thread (none for less than 2 MiB in all, or with
    /// one CPU), each no further than `ahead` bytes past where its writer reports it is
    /// ([`Progress::at`], one per span): for a buffer reserved for the most it could hold,
    /// whose length is known only once it is filled (the pages it never reaches stay
    /// unmapped). `usize::MAX`: each span whole.
    pub fn follow(spans: Vec<Span>, ahead: usize) -> (Prefault, Vec<Progress>) {
        let mut progress = Vec::with_capacity(spans.len());
        let tracks = spans
            .into_iter()
            .map(|span| {
                let at = Arc::new(AtomicUsize::new(span.start));
                progress.push(Progress(Arc::clone(&at)));
                Track {
                    span,
                    done: span.start,
                    writer: at,
                    closed: span.is_empty(),
                }
            })
            .collect();
        (Self::spawn(tracks, ahead), progress)
    }

    fn spawn(tracks: Vec<Track>, ahead: usize) -> Prefault {
        let state = Arc::new(AtomicU8::new(RUN));
        let total: usize = tracks.iter().map(|t| t.span.len()).sum();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let helper = (total >= MIN_BYTES && cpus > 1 && cfg!(target_os = "linux"))
            .then(|| {
                let state = Arc::clone(&state);
                std::thread::Builder::new()
                    .name("prefault".into())
                    .spawn(move || populate(tracks, ahead, &state))
                    .ok()
            })
            .flatten();
        Prefault { state, helper }
    }

    /// Stop (after the call in flight) and wait: the bytes faulted in, 0 when the kernel
    /// refused the first call or no helper was started.
    pub fn finish(mut self) -> usize {
        self.state.store(STOP, Ordering::Relaxed);
        self.join()
    }

    /// Wait until every span is faulted in, a followed one as far as its writer's last
    /// report allows: the bytes faulted in.
    pub fn wait(mut self) -> usize {
        self.state.store(DRAIN, Ordering::Relaxed);
        self.join()
    }

    fn join(&mut self) -> usize {
        self.helper.take().map_or(0, |h| {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }
}

impl Drop for Prefault {
    fn drop(&mut self) {
        self.state.store(STOP, Ordering::Relaxed);
        self.join();
    }
}

/// Fault in the tracks a chunk at a time, round robin, each no further than `ahead` bytes
/// past its writer (waiting for them when none may go on); the bytes done, up to the first
/// refusal.
fn populate(mut tracks: Vec<Track>, ahead: usize, state: &AtomicU8) -> usize {
    let mut done = 0;
    loop {
        let (mut moved, mut open) = (false, false);
        for t in tracks.iter_mut().filter(|t| !t.closed) {
            let now = state.load(Ordering::Relaxed);
            if now == STOP {
                return done;
            }
            let to = (t.writer.load(Ordering::Relaxed))
                .saturating_add(ahead)
                .min(t.span.end);
            let n = to.saturating_sub(t.done).min(CHUNK) / PAGE * PAGE;
            // a followed span waits for a whole chunk, or its end
            if n == 0 || (n < CHUNK && t.done + n < t.span.end && now == RUN) {
                // as far as it will go once its writer is done
                t.closed = now == DRAIN;
                open |= !t.closed;
                continue;
            }
            if !populate_write(t.done, n) {
                return done;
            }
            (t.done, done, moved) = (t.done + n, done + n, true);
            t.closed = t.done == t.span.end;
            open |= !t.closed;
        }
        if !open {
            return done;
        }
        if !moved {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

#[cfg(target_os = "linux")]
fn populate_write(at: usize, n: usize) -> bool {
    // SAFETY: madvise reads and writes no byte of the range through this process's view of
    // it; MADV_POPULATE_WRITE only maps pages in as a write fault would (a present page is
    // left as it is), and `at..at + n` is whole pages of one buffer's spare capacity
    // (`spare`). Had the buffer been freed meanwhile, the call fails (ENOMEM) or maps pages
    // of whatever is there now, which is as harmless.
    unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn populate_write(_at: usize, _n: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_the_whole_pages_inside() {
        assert_eq!(
            within(0, 4096),
            Span {
                start: 0,
                end: 4096
            }
        );
        assert_eq!(
            within(1, 8192),
            Span {
                start: 4096,
                end: 8192
            }
        );
        assert_eq!(
            within(1, 8191),
            Span {
                start: 4096,
                end: 4096
            }
        );
        assert!(within(100, 200).is_empty());
        assert_eq!(within(4095, 3 * 4096 + 5).len(), 2 * 4096);
        let v: Vec<u64> = Vec::with_capacity(10_000);
        let s = spare(&v, 10_000);
        let (a, b) = (v.as_ptr() as usize, v.as_ptr() as usize + 80_000);
        assert!(s.start >= a && s.end <= b && s.start % PAGE == 0 && s.end % PAGE == 0);
        assert!(s.len() > 80_000 - 2 * PAGE);
        // only what is asked for, and never past the capacity
        assert!(spare(&v, 100).is_empty());
        assert_eq!(spare(&v, usize::MAX), s);
    }

    /// Pages of `s` resident in memory (`mincore`).
    #[cfg(target_os = "linux")]
    fn resident(s: Span) -> usize {
        let pages = s.len() / PAGE;
        let mut vec = vec![0u8; pages];
        // SAFETY: `vec` has one byte per page of the span, which is mapped (a live Vec's).
        let r = unsafe {
            libc::mincore(
                s.start as *mut libc::c_void,
                s.len(),
                vec.as_mut_ptr().cast(),
            )
        };
        assert_eq!(r, 0);
        vec.iter().filter(|&&b| b & 1 == 1).count()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_pages_are_faulted_in_and_what_was_written_stays() {
        // 64 MiB: past malloc's mmap threshold, so the pages are fresh and not yet mapped
        let n = 8 << 20;
        let mut v: Vec<u64> = Vec::with_capacity(n);
        v.extend(0..1000);
        let s = spare(&v, n);
        assert!(
            resident(s) < s.len() / PAGE / 2,
            "the capacity was not fresh"
        );
        let (p, _) = Prefault::follow(vec![s], usize::MAX);
        // written while the helper works: left as written
        v.extend(1000..n as u64 / 2);
        let done = p.wait();
        if cfg!(target_os = "linux")
            && std::thread::available_parallelism().map_or(1, |n| n.get()) > 1
        {
            assert_eq!(done, s.len(), "the kernel refused MADV_POPULATE_WRITE");
            assert_eq!(resident(s), s.len() / PAGE);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        v.extend(n as u64 / 2..n as u64);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_followed_span_goes_no_further_than_ahead_of_its_writer() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return;
        }
        let n = 8 << 20;
        let mut v: Vec<u64> = Vec::with_capacity(n);
        let s = spare(&v, n);
        let ahead = 4 << 20;
        let (p, progress) = Prefault::follow(vec![s], ahead);
        // the writer reports nothing: only the first `ahead` bytes
        assert_eq!(p.wait(), ahead);
        assert!(resident(s) <= ahead / PAGE + 1);
        v.extend(0..n as u64 / 2);
        let rest = spare(&v, n);
        let (p, progress2) = Prefault::follow(vec![rest], ahead);
        progress2[0].at(&v);
        // from the writer's end, which lies inside the span's first page
        let done = p.wait();
        assert!(done <= ahead && done + PAGE >= ahead, "{done}");
        let quarter = n / 4;
        v.extend(n as u64 / 2..(n / 2 + quarter) as u64);
        progress[0].at(&v);
        let left = spare(&v, n);
        let (p, progress3) = Prefault::follow(vec![left], ahead);
        progress3[0].at(&v);
        let done = p.wait();
        assert!(done <= ahead && done + PAGE >= ahead, "{done}");
        // the last quarter's first `ahead` bytes, and nothing past them
        let past = Span {
            start: left.start + ahead,
            end: left.end,
        };
        assert_eq!(resident(past), 0);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        // trimmed: what was faulted in past the writer is given back, what it wrote stays
        assert!(resident(left) > 0);
        trim(&v);
        assert_eq!(resident(left), 0);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        v.extend((n / 2 + quarter) as u64..n as u64);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }

    #[test]
    fn no_helper_for_a_small_buffer() {
        let v: Vec<u64> = Vec::with_capacity(1 << 20);
        let whole = |s: Span| Prefault::follow(vec![s], usize::MAX).0.wait();
        assert_eq!(whole(spare(&v, 100)), 0);
        assert_eq!(whole(spare(&v, 200 << 10)), 0);
    }
}
