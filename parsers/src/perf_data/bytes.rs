//! The whole perf.data file at hand: read from a short stream (standard input, a gzip or zstd
//! file), or a file mapped copy-on-write (a plain perf.data, or the temporary file a long
//! stream was written to: [`super::spill`]).
//!
//! Why map: reading a file into a `Vec` costs a fresh zeroed page and a copy out of the page
//! cache per 4 KiB, about 30 ms for a 60 MiB recording and 85 ms for 188 MiB on the 2-CPU VMs
//! this is measured on (a third of what `report` spent on the 60 MiB one). A private mapping reads the
//! page cache in place; the one write the reader makes (the header of a file cut short, read
//! leniently) copies only the page it touches, and never reaches the file.
//!
//! Why let pages go ([`Bytes::release`], [`Behind`]): every page of a mapping the reader has
//! touched counts in its resident set until the mapping ends, so a 188 MiB recording held
//! ~200 MiB of RSS through each pass over it, and peak memory grew with the file. The pages
//! of a mapping nothing wrote are the page cache's own; unmapping the ones a pass has gone by
//! costs a minor fault if anything reads them again, and the bytes read are the same.

use std::ops::{Deref, DerefMut};

/// The file's bytes.
pub(super) enum Bytes {
    /// Read from a stream (or a file that could not be mapped).
    Owned(Vec<u8>),
    /// A private (copy-on-write) mapping of a file, of which the first `len` bytes are
    /// the file (fewer than mapped once [`Bytes::truncate`] has cut a partial record);
    /// `written`: something wrote into it, and [`Bytes::release`] leaves its pages alone (a
    /// written page is no longer the file's: released, its bytes would turn back into the
    /// file's).
    Mapped {
        /// The mapping watched for its file getting shorter ([`crate::truncation`]); declared
        /// first, so it ends before the mapping does.
        _watched: Option<crate::truncation::Registration>,
        map: memmap2::MmapMut,
        len: usize,
        written: bool,
    },
}

/// What [`Bytes::release`] aligns to: 64 KiB, a multiple of the page size of every Linux
/// architecture perf runs on (4, 16 and 64 KiB), so the advice is never refused for alignment.
const ALIGN: usize = 1 << 16;

/// How far a pass goes between two releases: few enough system calls (24 over a 188 MiB
/// file), a few MiB resident at a time.
const STEP: usize = 8 << 20;

impl Bytes {
    /// Map `file` privately; `None` when it cannot be (empty, not a regular file, the system
    /// refuses): the caller reads it instead. `name`: the file as the user named it, watched
    /// for another process shortening it while it is mapped ([`crate::truncation`]); `None`
    /// for lockcast's own unlinked temporary file, which no other process can reach.
    pub(super) fn map(file: &std::fs::File, name: Option<&str>) -> Option<Bytes> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() == 0 {
            return None;
        }
        // SAFETY: a private mapping; lockcast's own writes never reach the file. Another process
        // truncating the file while it is read raises SIGBUS on the lost pages: the mapping is
        // watched, and that ends the process with a message naming the file instead of a
        // crash ([`crate::truncation`]). A recording being appended to is safe (the mapping
        // ends where the file ended when it was mapped).
        let map = unsafe { memmap2::MmapOptions::new().map_copy(file) }.ok()?;
        let len = map.len();
        Some(Bytes::Mapped {
            _watched: name.map(|n| crate::truncation::watch(map.as_ptr(), map.len(), n)),
            map,
            len,
            written: false,
        })
    }

    /// Let go of the resident pages wholly inside bytes `from..to`, which a pass has read and
    /// may read again at the cost of a minor fault: a mapping nothing wrote into only
    /// (`MADV_DONTNEED` on a private mapping drops a written page's copy, and its bytes would
    /// turn back into the file's), and nothing for bytes read from a stream.
    pub(super) fn release(&self, from: usize, to: usize) {
        let Bytes::Mapped {
            map,
            len,
            written: false,
            ..
        } = self
        else {
            return;
        };
        let a = from.div_ceil(ALIGN).saturating_mul(ALIGN);
        let b = to.min(*len) / ALIGN * ALIGN;
        if a < b {
            // SAFETY: nothing wrote into the mapping (the first write sets `written`), so every
            // page in it is the file's page-cache page mapped in place; after MADV_DONTNEED the
            // next read of one maps the same page again, and every reference into the mapping
            // sees the same bytes as before. (A process writing the file meanwhile changes them either
            // way: see `map`.) An error (the system refuses the advice) only leaves the pages
            // resident.
            let _ =
                unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a) };
        }
    }

    /// [`Bytes::release`] from `*done` to `to`, and move `*done` on to where the next release
    /// of the same pass starts (the unit `to` is in, which the pass may not have finished).
    pub(super) fn let_go(&self, done: &mut usize, to: usize) {
        if to > *done {
            self.release(*done, to);
            *done = (*done).max(to / ALIGN * ALIGN);
        }
    }

    /// Keep the first `n` bytes (as [`Vec::truncate`]).
    pub(super) fn truncate(&mut self, n: usize) {
        match self {
            Bytes::Owned(v) => v.truncate(n),
            Bytes::Mapped { len, .. } => *len = n.min(*len),
        }
    }
}

impl Deref for Bytes {
    type Target = [u8];
    // every header field of every record is read through this
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped { map, len, .. } => &map[..*len],
        }
    }
}

impl DerefMut for Bytes {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped {
                map, len, written, ..
            } => {
                *written = true;
                &mut map[..*len]
            }
        }
    }
}

/// A forward pass over `from..until` of a [`Bytes`] that lets go of what it has passed every
/// [`STEP`] bytes ([`Bytes::release`]), or keeps it ([`Behind::keeping`]), and counts what
/// it has passed in [`bytes_walked`]. A position past `until` releases nothing: the record
/// reader reads the feature sections after the data before it walks the data.
pub(super) struct Behind {
    /// Released up to here (aligned down: the next release starts where this one ended).
    from: usize,
    next: usize,
    until: usize,
    /// Counted in [`WALKED`] up to here.
    counted: usize,
    /// Let go of the pages passed (else only count them).
    release: bool,
}

/// Bytes of data sections walked by every record pass of every reader in the process (the
/// framing check, the compaction, the record and typed walks), counted every [`STEP`] and at
/// a pass's end: what a progress display of a mapped perf.data follows ([`bytes_walked`]).
static WALKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many bytes of perf.data sections the record passes of this process have walked so far
/// (each pass over a section counts it once more; a pass in parts counts each part). Only
/// ever grows; for a progress display, which takes the difference from its start.
pub fn bytes_walked() -> u64 {
    WALKED.load(std::sync::atomic::Ordering::Relaxed)
}

/// How far ahead of a record walk [`prefetch_ahead`] asks for the bytes.
const PREFETCH_AHEAD: usize = 2048;

/// Asks the CPU for the bytes `PREFETCH_AHEAD` past `pos` of `b`, for a walk from record to
/// record. Where each record starts is known only once the one before it is read, so such a walk
/// waits on memory at every record; the framing check of a 193 MB recording stalled 84% of its
/// samples on the load of a record's header. A hint a few records ahead keeps the loads in
/// flight: that check went from 64 to 40 ms (medians of 5), `report` of the file from 0.29 to
/// 0.245 s. 1, 2, 4 and 8 KiB ahead measured alike.
#[inline(always)]
pub(super) fn prefetch_ahead(b: &[u8], pos: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(ahead) = b.get(pos.saturating_add(PREFETCH_AHEAD)..) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint to the cache; it reads nothing into the program, has no
        // effect the program can see, and the address is inside `b` anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ahead.as_ptr().cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, pos);
}

impl Behind {
    pub(super) fn new(from: usize, until: usize) -> Behind {
        Behind {
            from,
            next: from.saturating_add(STEP),
            until,
            counted: from,
            release: true,
        }
    }

    /// A pass over `from..until` that keeps the pages it passes (a later pass reads them at
    /// once) and only counts them.
    pub(super) fn keeping(from: usize, until: usize) -> Behind {
        Behind {
            release: false,
            ..Behind::new(from, until)
        }
    }

    /// The pass is at byte `pos` of `b`.
    #[inline]
    pub(super) fn at(&mut self, b: &Bytes, pos: usize) {
        if pos >= self.next && pos <= self.until {
            self.step(b, pos);
        }
    }

    /// The pass ended at byte `pos`: what it passed since the last release goes too (a pass
    /// in parts would otherwise leave up to a step resident behind each part).
    pub(super) fn done(&mut self, b: &Bytes, pos: usize) {
        let pos = pos.min(self.until);
        if pos > self.from {
            self.step(b, pos);
        }
    }

    #[cold]
    fn step(&mut self, b: &Bytes, pos: usize) {
        if self.release {
            b.let_go(&mut self.from, pos);
        }
        if pos > self.counted {
            WALKED.fetch_add(
                (pos - self.counted) as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            self.counted = pos;
        }
        self.next = pos.saturating_add(STEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_mapped_file_reads_as_the_file_and_its_writes_stay_in_memory() {
        let mut f = temp_file();
        f.1.write_all(b"PERFILE2 and the rest").unwrap();
        f.1.flush().unwrap();
        let file = std::fs::File::open(&f.0).unwrap();
        let mut b = Bytes::map(&file, None).expect("a plain file maps");
        assert!(matches!(b, Bytes::Mapped { .. }));
        // lockcast's own temporary file is not watched; a named file is, while it is mapped
        assert!(!crate::truncation::is_watched(b.as_ptr()));
        let named = Bytes::map(&file, Some("perf.data")).expect("a plain file maps");
        let at = named.as_ptr();
        assert!(crate::truncation::is_watched(at));
        drop(named);
        assert!(!crate::truncation::is_watched(at));
        assert_eq!(&b[..], b"PERFILE2 and the rest");
        b[0] = b'X';
        b.truncate(8);
        assert_eq!(&b[..], b"XERFILE2");
        assert_eq!(std::fs::read(&f.0).unwrap(), b"PERFILE2 and the rest");
        std::fs::remove_file(&f.0).unwrap();
    }

    #[test]
    fn released_pages_read_as_the_file_and_a_written_mapping_keeps_its_writes() {
        // 5 alignment units and a bit, of bytes that differ from page to page
        let file: Vec<u8> = (0..5 * ALIGN + 100).map(|i| (i / 4096 + i) as u8).collect();
        let mut f = temp_file();
        f.1.write_all(&file).unwrap();
        f.1.flush().unwrap();
        let map = |f: &std::fs::File| Bytes::map(f, None).expect("a plain file maps");
        let b = map(&std::fs::File::open(&f.0).unwrap());
        assert_eq!(&b[..], &file[..]);
        // unaligned ends, a stretch of one unit, all of it, past the end
        for (from, to) in [(100, 3 * ALIGN + 5), (ALIGN, 2 * ALIGN), (0, usize::MAX)] {
            b.release(from, to);
            assert_eq!(&b[..], &file[..]);
        }
        let mut behind = Behind::new(0, file.len());
        for pos in (0..file.len()).step_by(4096) {
            behind.at(&b, pos);
            assert_eq!(b[pos], file[pos]);
        }
        assert_eq!(&b[..], &file[..]);
        // once written, nothing is let go: a released written page would read as the file
        let mut w = map(&std::fs::File::open(&f.0).unwrap());
        w[2 * ALIGN + 7] = !file[2 * ALIGN + 7];
        w.release(0, usize::MAX);
        assert_eq!(w[2 * ALIGN + 7], !file[2 * ALIGN + 7]);
        assert_eq!(std::fs::read(&f.0).unwrap(), file);
        std::fs::remove_file(&f.0).unwrap();
    }

    #[test]
    fn an_empty_file_is_read_not_mapped() {
        let f = temp_file();
        let file = std::fs::File::open(&f.0).unwrap();
        assert!(Bytes::map(&file, None).is_none());
        std::fs::remove_file(&f.0).unwrap();
    }

    /// A fresh file under the system's temporary directory.
    fn temp_file() -> (std::path::PathBuf, std::fs::File) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "lockcast-bytes-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let f = std::fs::File::create(&p).unwrap();
        (p, f)
    }
}
