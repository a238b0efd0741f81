//! A plain input file read in place: its pieces are ranges of a read-only mapping of the file,
//! cut where [`super::Chunker`] cuts the same bytes read as a stream.
//!
//! Why map: a piece read from a stream is copied out of the page cache into a buffer. In a
//! cpu-clock profile of `parse --table samples` of a 302 MB `perf script` text on this
//! project's 2-CPU VMs, the reader thread had 1471 of the run's 4079 samples, 81% of them in
//! the kernel's copy, beside 1067 and 1303 for the two parser threads: on two CPUs the reader
//! competed with the parsers. Mapped, it had 150 of 2600 (counting lines, faulting pages in),
//! and the run's wall time fell by 7-10% (`bench/ingest.sh`, README "Traces at scale").
//!
//! Why let pages go ([`Span`]'s drop): every page of a mapping that was touched counts in the
//! resident set until the mapping ends, so peak memory would grow with the file. A parsed
//! piece's pages are unmapped; reading them again would cost a minor fault, not a wrong byte.

use std::ops::{Deref, Range};
use std::sync::Arc;

/// What the pages given back are aligned to: 64 KiB, a multiple of the page size of every Linux
/// architecture (4, 16 and 64 KiB), so the advice is never refused for alignment.
const ALIGN: usize = 1 << 16;

/// A read-only mapping of a whole input file.
pub(crate) struct TextMap {
    /// The mapping watched for its file getting shorter (`lockcast_parsers::truncation`);
    /// declared first, so it ends before the mapping does.
    _watched: lockcast_parsers::truncation::Registration,
    map: memmap2::Mmap,
}

impl TextMap {
    /// Map `file`, named `name` in messages; `None` when it cannot be (empty, not a regular
    /// file, the system refuses): the caller reads it as a stream instead.
    pub(crate) fn open(file: &std::fs::File, name: &str) -> Option<Arc<TextMap>> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() == 0 {
            return None;
        }
        // SAFETY: a read-only mapping; lockcast never writes into it. Another process truncating
        // the file while it is read raises SIGBUS on the lost pages: the mapping is watched,
        // and that ends the process with a message naming the file instead of a crash
        // (`lockcast_parsers::truncation`; perf.data is mapped and watched the same way). A
        // file being appended to is safe (the mapping ends where the file ended).
        let map = unsafe { memmap2::MmapOptions::new().map(file) }.ok()?;
        Some(Arc::new(TextMap {
            _watched: lockcast_parsers::truncation::watch(map.as_ptr(), map.len(), name),
            map,
        }))
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    /// Unmap the pages of bytes `r` ([`widened`]).
    fn release(&self, r: Range<usize>) {
        let Range { start: a, end: b } = widened(r, self.len());
        if a < b {
            // SAFETY: a shared read-only mapping of a file: after MADV_DONTNEED the next read of
            // a page maps the same page-cache page again, so every reference into the mapping
            // sees the same bytes as before. An error only leaves the pages resident.
            let _ = unsafe {
                self.map
                    .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a)
            };
        }
    }
}

/// Bytes `r` of a mapping of `len` bytes widened to whole [`ALIGN`] units (the end cut at
/// `len`): the pages a released piece gives back. A neighbouring piece still being parsed may
/// lose some of its pages too, and faults them in again; narrowed instead, the pages at each
/// cut would stay resident, and memory would grow with the file.
fn widened(r: Range<usize>, len: usize) -> Range<usize> {
    r.start / ALIGN * ALIGN..r.end.div_ceil(ALIGN).saturating_mul(ALIGN).min(len)
}

/// Bytes `range` of a mapped file; their pages are given back when it is dropped.
pub(crate) struct Span {
    map: Arc<TextMap>,
    range: Range<usize>,
}

impl Deref for Span {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map.map[self.range.clone()]
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        self.map.release(self.range.clone());
    }
}

/// Cuts a mapped file into pieces, as [`super::Chunker`] cuts a stream.
pub(crate) struct MapCutter {
    map: Arc<TextMap>,
    pos: usize,
    line_offset: u64,
    target: usize,
    starts: fn(&str) -> bool,
}

impl MapCutter {
    /// Pieces of about `target` bytes; `starts(line)` says where a piece may begin.
    pub(crate) fn new(map: Arc<TextMap>, target: usize, starts: fn(&str) -> bool) -> Self {
        MapCutter {
            map,
            pos: 0,
            line_offset: 0,
            target: target.max(1),
            starts,
        }
    }

    /// The next piece and the number of input lines before it; `None` at end of input.
    pub(crate) fn next_piece(&mut self) -> Option<(Span, u64)> {
        let len = self.map.len();
        if self.pos >= len {
            return None;
        }
        let rest = &self.map.map[self.pos..];
        // where the stream's first fill would end, and its search begin
        let mut at = (self.target - self.target / 8).min(rest.len());
        let end = match super::scan_cut(rest, &mut at, true, self.starts) {
            super::Scan::Cut(c) => self.pos + c,
            super::Scan::NoCut | super::Scan::More => len,
        };
        let span = Span {
            map: Arc::clone(&self.map),
            range: self.pos..end,
        };
        let offset = self.line_offset;
        self.line_offset += super::count_lines(&span);
        self.pos = end;
        Some((span, offset))
    }

    /// The whole file as one piece.
    pub(crate) fn whole(&self) -> Span {
        Span {
            map: Arc::clone(&self.map),
            range: 0..self.map.len(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn mapped(text: &[u8]) -> (tempfile::NamedTempFile, Arc<TextMap>) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text).unwrap();
        f.flush().unwrap();
        let map = TextMap::open(f.as_file(), "test").unwrap();
        (f, map)
    }

    /// A text of records ("a N") with continuation lines, some CRLF, over 3 alignment units,
    /// ending with or without a newline.
    fn text(tail_newline: bool) -> Vec<u8> {
        let mut t = String::new();
        for i in 0..6000 {
            t.push_str(&format!("a {i}\n"));
            for k in 0..i % 7 {
                t.push_str(if k % 3 == 0 {
                    " frame\r\n"
                } else {
                    " frame line\n"
                });
            }
        }
        t.push_str("a last\n x");
        if tail_newline {
            t.push('\n');
        }
        t.into_bytes()
    }

    /// The pieces of a mapped file are the stream's pieces: the same bytes and line offsets,
    /// for targets smaller than a line, inside the text and larger than it.
    #[test]
    fn mapped_pieces_are_the_stream_pieces() {
        let starts = |l: &str| l.starts_with('a');
        for tail in [true, false] {
            let t = text(tail);
            assert!(t.len() > 3 * ALIGN, "{}", t.len());
            let (_f, map) = mapped(&t);
            for target in [1, 5, 256, 4096, 100_000, t.len() - 1, t.len(), 1 << 30] {
                let mut c = super::super::Chunker::new(&t[..], target, starts);
                let mut stream = Vec::new();
                while let Some((p, off)) = c.next_piece().unwrap() {
                    stream.push((p, off));
                }
                let mut m = MapCutter::new(Arc::clone(&map), target, starts);
                let mut pieces = Vec::new();
                while let Some((s, off)) = m.next_piece() {
                    pieces.push((s.to_vec(), off));
                }
                assert!(!stream.is_empty());
                assert_eq!(pieces, stream, "target {target}, tail newline {tail}");
            }
        }
    }

    /// A piece's pages given back read the same bytes again, by a later piece over them or by
    /// a piece still held.
    #[test]
    fn released_pages_read_the_same_bytes() {
        let t = text(true);
        let (_f, map) = mapped(&t);
        let mut m = MapCutter::new(Arc::clone(&map), 3 * ALIGN / 2, |l: &str| {
            l.starts_with('a')
        });
        let (first, _) = m.next_piece().unwrap();
        let (second, _) = m.next_piece().unwrap();
        let held = second.to_vec();
        drop(first);
        // the release widened to whole units took some of the second piece's pages
        assert_eq!(&second[..], &held[..]);
        drop(second);
        assert_eq!(&m.whole()[..], &t[..]);
    }

    /// The released range covers the piece's every page, starts on a unit and ends on one or
    /// at the end of the mapping.
    #[test]
    fn released_ranges_are_whole_units_over_the_piece() {
        let len = 10 * ALIGN + 123;
        for (r, want) in [
            (0..1, 0..ALIGN),
            (0..ALIGN, 0..ALIGN),
            (ALIGN + 5..2 * ALIGN + 1, ALIGN..3 * ALIGN),
            (3 * ALIGN..5 * ALIGN, 3 * ALIGN..5 * ALIGN),
            (9 * ALIGN + 7..len, 9 * ALIGN..len),
            (len..len, 10 * ALIGN..len),
        ] {
            let w = widened(r.clone(), len);
            assert_eq!(w, want, "{r:?}");
            assert!(w.start <= r.start && w.end >= r.end && w.start % ALIGN == 0);
        }
    }

    /// A mapped input is watched for another process shortening it
    /// (`lockcast_parsers::truncation`, whose own tests truncate a watched file). That the
    /// watch ends with the mapping is tested there: here other tests map files meanwhile, and
    /// one may get the same addresses.
    #[test]
    fn a_mapped_file_is_watched() {
        let (_f, map) = mapped(&text(true));
        let (first, last) = (map.map.as_ptr(), map.map[map.len() - 1..].as_ptr());
        assert!(lockcast_parsers::truncation::is_watched(first));
        assert!(lockcast_parsers::truncation::is_watched(last));
    }

    #[test]
    fn an_empty_file_is_not_mapped() {
        let f = tempfile::NamedTempFile::new().unwrap();
        assert!(TextMap::open(f.as_file(), "test").is_none());
    }
}
