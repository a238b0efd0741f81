//! A perf.data that arrives as a stream (a gzip or zstd file, standard input) is read whole:
//! its header points at sections near the end of the file, and its records are sorted by time
//! across the whole data section. Read into a `Vec`, a 590 MB recording holds 590 MB of
//! anonymous memory to the end, however little of it each pass needs at a time.
//!
//! Beyond [`SPILL_ABOVE`] bytes the stream is written instead into an unlinked temporary file
//! (in `$TMPDIR`, else `/tmp`; [`tempfile::tempfile`], `O_TMPFILE` where the file system has
//! it, so nothing is left behind by a crash) and that file is mapped like a plain perf.data
//! ([`Bytes::map`]). Its pages are then the page cache's, which the passes let go behind them
//! ([`Bytes::release`]): the reader's peak no longer grows with the recording. Below the
//! threshold, the copy through a file would cost time and save nothing worth saving.
//!
//! A pipe-mode perf.data (`perf record -o -`, read from standard input most often) goes the
//! same way: its records are shown to the record reader from the mapping, in time order
//! ([`super::pipe`]).
//!
//! A temporary file that cannot be made or written (no room, read-only `$TMPDIR`) is not an
//! error: what was written is read back and the rest of the stream read into memory, as
//! before. Errors reading the stream itself (a damaged gzip member) are the caller's.

use std::io::{Read, Seek, Write};

use super::bytes::Bytes;

/// Streams up to this long are read into memory; longer ones go through a temporary file.
pub(super) const SPILL_ABOVE: usize = 32 << 20;

/// How much of the stream is read between two writes to the temporary file.
const CHUNK: usize = 4 << 20;

/// All of `input`: in memory when it is at most `above` bytes long (or no temporary file can
/// hold it), else a mapping of the temporary file it was written to.
pub(super) fn read(mut input: impl Read, above: usize) -> std::io::Result<Bytes> {
    let mut head = Vec::new();
    (&mut input).take(above as u64 + 1).read_to_end(&mut head)?;
    if head.len() <= above {
        input.read_to_end(&mut head)?;
        return Ok(Bytes::Owned(head));
    }
    let Ok(mut file) = tempfile::tempfile() else {
        input.read_to_end(&mut head)?;
        return Ok(Bytes::Owned(head));
    };
    let written = match write_out(&mut file, head, &mut input)? {
        Written::Whole(n) => n,
        Written::Refused(all) => return Ok(Bytes::Owned(all)),
    };
    match Bytes::map(&file, None) {
        Some(b) => Ok(b),
        None => {
            // a file system that cannot map: read it back
            let mut all = Vec::with_capacity(usize::try_from(written).unwrap_or(0));
            file.rewind()?;
            file.read_to_end(&mut all)?;
            Ok(Bytes::Owned(all))
        }
    }
}

/// What [`write_out`] did with the stream.
enum Written {
    /// All of it is in the file: this many bytes.
    Whole(u64),
    /// The file refused a write (no room): all of it, in memory.
    Refused(Vec<u8>),
}

/// Write `head` and the rest of `input` to `file`. When a write fails, read back what was
/// written whole and go on in memory.
fn write_out(
    file: &mut (impl Read + Write + Seek),
    head: Vec<u8>,
    input: &mut impl Read,
) -> std::io::Result<Written> {
    let mut written = 0u64;
    let mut chunk = head;
    loop {
        if file.write_all(&chunk).is_err() {
            // where the failed write left the file does not matter: only whole chunks count
            let mut all = Vec::new();
            file.rewind()?;
            file.take(written).read_to_end(&mut all)?;
            if all.len() as u64 != written {
                return Err(std::io::Error::other(
                    "the temporary file holding the decompressed perf.data was cut short",
                ));
            }
            all.extend_from_slice(&chunk);
            input.read_to_end(&mut all)?;
            return Ok(Written::Refused(all));
        }
        written += chunk.len() as u64;
        // the head's 32 MiB go once written; the rest passes through one chunk-sized buffer
        if chunk.capacity() > CHUNK {
            chunk = Vec::with_capacity(CHUNK);
        }
        chunk.clear();
        input.take(CHUNK as u64).read_to_end(&mut chunk)?;
        if chunk.is_empty() {
            return Ok(Written::Whole(written));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that gives its bytes a few at a time, as a decompressor does.
    struct Dribble<'a>(&'a [u8]);

    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(1000);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn a_stream_at_the_threshold_stays_in_memory_and_one_past_it_is_mapped_from_a_file() {
        let data = bytes(10_000);
        let at = read(Dribble(&data), 10_000).unwrap();
        assert!(matches!(at, Bytes::Owned(_)));
        assert_eq!(&at[..], &data[..]);

        let past = read(Dribble(&data), 9_999).unwrap();
        assert!(matches!(past, Bytes::Mapped { .. }), "not spilled");
        assert_eq!(&past[..], &data[..]);
    }

    #[test]
    fn a_pipe_mode_stream_is_spilled_as_a_file_mode_one() {
        let mut data = bytes(50_000);
        data[..8].copy_from_slice(super::super::MAGIC);
        for header_size in [16u64, 104] {
            data[8..16].copy_from_slice(&header_size.to_le_bytes());
            let b = read(Dribble(&data), 1_000).unwrap();
            assert!(
                matches!(b, Bytes::Mapped { .. }),
                "header size {header_size}: kept"
            );
            assert!(b[..] == data[..]);
        }
    }

    #[test]
    fn a_spilled_stream_longer_than_several_chunks_reads_back_whole() {
        let data = bytes(2 * CHUNK + 12_345);
        let b = read(&data[..], 1 << 20).unwrap();
        assert!(matches!(b, Bytes::Mapped { .. }));
        assert_eq!(b.len(), data.len());
        assert!(b[..] == data[..], "spilled bytes differ");
    }

    #[test]
    fn a_read_error_in_the_stream_is_the_callers() {
        struct Broken(usize);
        impl Read for Broken {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::Error::other("damaged member"));
                }
                let n = buf.len().min(self.0);
                buf[..n].fill(1);
                self.0 -= n;
                Ok(n)
            }
        }
        let e = read(Broken(50_000), 1_000).err().expect("an error");
        assert_eq!(e.to_string(), "damaged member");
        let e = read(Broken(500), 1_000).err().expect("an error");
        assert_eq!(e.to_string(), "damaged member");
    }

    /// A file system with room for `room` bytes, which then writes part of what it is given
    /// and refuses the rest (as a full disk does).
    struct Full {
        file: std::io::Cursor<Vec<u8>>,
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let left = self.room - self.file.get_ref().len();
            if left == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
            }
            self.file.write(&buf[..buf.len().min(left)])
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Read for Full {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.file.read(buf)
        }
    }
    impl Seek for Full {
        fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
            self.file.seek(to)
        }
    }

    #[test]
    fn a_full_temporary_file_system_leaves_the_stream_whole_in_memory() {
        let data = bytes(3 * CHUNK + 777);
        // full in the middle of the second chunk, after part of it was written
        for room in [CHUNK / 2, CHUNK + CHUNK / 3, 4 * CHUNK] {
            let mut f = Full {
                file: std::io::Cursor::new(Vec::new()),
                room,
            };
            let head = data[..CHUNK / 4].to_vec();
            let mut rest = Dribble(&data[CHUNK / 4..]);
            match write_out(&mut f, head, &mut rest).unwrap() {
                Written::Refused(all) => {
                    assert!(room < data.len());
                    assert!(all == data, "room {room}: bytes differ");
                }
                Written::Whole(n) => {
                    assert!(room >= data.len());
                    assert_eq!(n, data.len() as u64);
                    assert!(f.file.get_ref()[..] == data[..]);
                }
            }
        }
    }
}
