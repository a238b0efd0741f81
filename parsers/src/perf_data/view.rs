//! What the record reader reads: the file as `perf record` wrote it, or, once
//! [`super::compact::drop_samples`] has taken out the samples nobody asked for, the file as it
//! would be with only the kept records in its data section. The second is pieced together on
//! each read from the file's own bytes and two small patches (the header's data size, the
//! feature index moved to right after the kept records), so nothing is written into the mapping
//! and the pages the reader has gone by can be let go ([`super::bytes::Behind`]).

use std::io::{Read, Seek, SeekFrom};

use super::bytes::Behind;
use super::Shared;

/// A [`Read`] + [`Seek`] over a perf.data file or its compacted form.
pub(super) struct View {
    buf: Shared,
    len: u64,
    pos: u64,
    /// Bytes shown in place of the file's: (where in the view, the bytes).
    patches: Vec<(u64, Vec<u8>)>,
    /// Compacted: the file's byte ranges shown, in order, as the data section from `data_at`
    /// on (empty: the view is the file, patches aside). 16 bytes a range, as many as the
    /// stretches of kept records.
    kept: Vec<(usize, usize)>,
    data_at: u64,
    data_len: u64,
    /// The range of `kept` the reader was in last.
    in_kept: Cursor,
    /// Compacted: the kept records' bytes, in pieces shown instead of the file's (each
    /// emptied once the reader has gone past it: read again, its bytes come from the file),
    /// the pieces' lengths, and the piece the reader was in last.
    copy: Vec<Vec<u8>>,
    copy_len: Vec<usize>,
    in_copy: Cursor,
    /// The pieces before this one are let go.
    c_done: usize,
    /// Lets go of the data section's pages behind the reader.
    behind: Behind,
}

/// Where the view's bytes at a position come from.
enum At {
    /// Patch `.0`, from its byte `.1`.
    Patch(usize, usize),
    /// Piece `.0` of the copy, from its byte `.1`.
    Copy(usize, usize),
    /// The file, from this offset.
    File(usize),
}

/// Bytes 48..56 of a file-mode header: the data section's size.
const DATA_SIZE: std::ops::Range<usize> = 48..56;

impl View {
    /// The file as it is; `data`: its data section's byte range, whose pages are let go behind
    /// the reader.
    pub(super) fn whole(buf: Shared, data: Option<(usize, usize)>) -> View {
        let (from, until) = data.unwrap_or((0, 0));
        View {
            len: buf.0.len() as u64,
            buf,
            pos: 0,
            patches: Vec::new(),
            kept: Vec::new(),
            data_at: 0,
            data_len: 0,
            in_kept: Cursor::at(0),
            copy: Vec::new(),
            copy_len: Vec::new(),
            in_copy: Cursor::at(0),
            c_done: 0,
            behind: Behind::new(from, until),
        }
    }

    /// The file with the records `kept` (byte ranges in file order, inside the data section
    /// that starts at `data_off`) as its data section, followed by the feature `index`; the
    /// feature sections are read where they are in the file (the index's entries point there,
    /// past the original data section, and the view has the file's length). `copy`: the kept
    /// records' bytes in pieces, shown instead of the file's.
    pub(super) fn compacted(
        buf: Shared,
        data_off: usize,
        kept: Vec<(usize, usize)>,
        copy: Option<Vec<Vec<u8>>>,
        index: Vec<u8>,
    ) -> View {
        let data_len: usize = kept.iter().map(|(a, b)| b - a).sum();
        let until = kept.last().map_or(data_off, |k| k.1);
        let data_at = data_off as u64;
        let copy = copy
            .filter(|c| c.iter().map(Vec::len).sum::<usize>() == data_len)
            .unwrap_or_default();
        View {
            len: buf.0.len() as u64,
            buf,
            pos: 0,
            patches: vec![
                (
                    DATA_SIZE.start as u64,
                    (data_len as u64).to_le_bytes().to_vec(),
                ),
                (data_at + data_len as u64, index),
            ],
            copy_len: copy.iter().map(Vec::len).collect(),
            copy,
            in_copy: Cursor::at(data_at),
            c_done: 0,
            kept,
            data_at,
            data_len: data_len as u64,
            in_kept: Cursor::at(data_at),
            behind: Behind::new(data_off, until),
        }
    }

    /// Where the byte at `pos` comes from, and how many bytes on from it come from the same
    /// place; `None` at or past the end.
    fn at(&mut self) -> Option<(At, u64)> {
        let pos = self.pos;
        if pos >= self.len {
            return None;
        }
        let mut until = self.len;
        for (i, (p, b)) in self.patches.iter().enumerate() {
            let end = p + b.len() as u64;
            if (*p..end).contains(&pos) {
                return Some((At::Patch(i, (pos - p) as usize), end - pos));
            }
            if *p > pos {
                until = until.min(*p);
            }
        }
        if !self.kept.is_empty() {
            if (self.data_at..self.data_at + self.data_len).contains(&pos) {
                if let Some(at) = self.in_copy(pos) {
                    return Some(at);
                }
                let kept = &self.kept;
                let len = |i: usize| kept.get(i).map(|&(a, b)| (b - a) as u64);
                let (i, at, n) = self.in_kept.find(self.data_at, pos, len)?;
                return Some((At::File(kept[i].0 + (pos - at) as usize), at + n - pos));
            }
            if self.data_at > pos {
                until = until.min(self.data_at);
            }
        }
        Some((At::File(pos as usize), until - pos))
    }
}

impl View {
    /// Where in the copy the data section's byte `pos` is, and how many bytes on from it the
    /// same piece holds; `None` when there is no copy or its piece is let go.
    fn in_copy(&mut self, pos: u64) -> Option<(At, u64)> {
        if self.copy.is_empty() {
            return None;
        }
        let lens = &self.copy_len;
        let len = |i: usize| lens.get(i).map(|&n| n as u64);
        let (i, at, n) = self.in_copy.find(self.data_at, pos, len)?;
        (!self.copy[i].is_empty()).then(|| (At::Copy(i, (pos - at) as usize), at + n - pos))
    }
}

/// A cursor over consecutive stretches of the data section (the kept ranges, the copy's
/// pieces): the one the reader was in last and where it starts in the view. Reads go forward;
/// a seek back starts over.
struct Cursor {
    i: usize,
    at: u64,
}

impl Cursor {
    /// At the first stretch, which starts at `start`.
    fn at(start: u64) -> Cursor {
        Cursor { i: 0, at: start }
    }

    /// The stretch `pos` is in: its index, where it starts and its length (`len(i)`, `None`
    /// past the last); `None` past the last. The stretches start at `start`.
    fn find(
        &mut self,
        start: u64,
        pos: u64,
        len: impl Fn(usize) -> Option<u64>,
    ) -> Option<(usize, u64, u64)> {
        if pos < self.at {
            *self = Cursor::at(start);
        }
        while let Some(n) = len(self.i) {
            if pos < self.at + n {
                return Some((self.i, self.at, n));
            }
            self.at += n;
            self.i += 1;
        }
        None
    }
}

impl Read for View {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let mut done = 0;
        while done < out.len() {
            let Some((at, run)) = self.at() else { break };
            let n = usize::try_from(run)
                .unwrap_or(usize::MAX)
                .min(out.len() - done);
            let src = match at {
                At::File(s) => {
                    let bytes = self.buf.0.get(s..s + n).ok_or_else(|| {
                        std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            format!("bytes {s}..{} are past the end of the file", s + n),
                        )
                    })?;
                    self.behind.at(&self.buf.0, s + n);
                    bytes
                }
                At::Patch(i, off) => &self.patches[i].1[off..off + n],
                At::Copy(i, off) => {
                    // the reader reads forward: the pieces before this one are done
                    while self.c_done < i {
                        self.copy[self.c_done] = Vec::new();
                        self.c_done += 1;
                    }
                    &self.copy[i][off..off + n]
                }
            };
            out[done..done + n].copy_from_slice(src);
            done += n;
            self.pos += n as u64;
        }
        Ok(done)
    }
}

/// What the record reader reads: a file ([`View`]) or a pipe-mode stream
/// ([`super::pipe::Shown`], read forward only).
pub(super) enum Source {
    File(View),
    Pipe(super::pipe::Shown),
}

impl Read for Source {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::File(v) => v.read(out),
            Source::Pipe(p) => p.read(out),
        }
    }
}

impl Seek for Source {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        match self {
            Source::File(v) => v.seek(to),
            // the reader's pipe parser never seeks
            Source::Pipe(_) => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "a pipe-mode stream is read forward only",
            )),
        }
    }
}

impl Seek for View {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start of the file",
            )
        })?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(v: Vec<u8>) -> Shared {
        Shared(std::sync::Arc::new(super::super::bytes::Bytes::Owned(v)))
    }

    /// The compacted file written out as `drop_samples` once wrote it in place.
    fn moved(file: &[u8], data_off: usize, kept: &[(usize, usize)], index: &[u8]) -> Vec<u8> {
        let mut f = file.to_vec();
        let mut len = 0;
        for &(a, b) in kept {
            f.copy_within(a..b, data_off + len);
            len += b - a;
        }
        f[data_off + len..data_off + len + index.len()].copy_from_slice(index);
        f[48..56].copy_from_slice(&(len as u64).to_le_bytes());
        f
    }

    #[test]
    fn a_compacted_view_reads_as_the_file_moved_in_place() {
        // a file of distinct bytes; data 200..1000, kept records, the index after the data
        let file: Vec<u8> = (0..1600u32).map(|i| (i * 7 % 251) as u8).collect();
        let kept = [(200, 240), (240, 300), (410, 418), (600, 1000)];
        let index: Vec<u8> = file[1000..1032].to_vec();
        let want = moved(&file, 200, &kept, &index);
        // the kept records shown from the file, and from a copy of them in pieces (one a range
        // here), the pieces read let go: read again, from the file
        let copy: Vec<Vec<u8>> = kept.iter().map(|&(a, b)| file[a..b].to_vec()).collect();
        for copy in [None, Some(copy)] {
            let mut v = View::compacted(
                shared(file.clone()),
                200,
                kept.to_vec(),
                copy,
                index.clone(),
            );
            // the record reader's pattern: the index and sections, then the data in small reads
            let data_len = 40 + 60 + 8 + 400;
            let mut got = vec![0u8; 32];
            v.seek(SeekFrom::Start(200 + data_len)).unwrap();
            v.read_exact(&mut got).unwrap();
            assert_eq!(got, index);
            v.seek(SeekFrom::Start(1100)).unwrap();
            let mut tail = Vec::new();
            v.read_to_end(&mut tail).unwrap();
            assert_eq!(tail, &file[1100..]);
            v.seek(SeekFrom::Start(0)).unwrap();
            let mut all = Vec::new();
            let mut chunk = [0u8; 13];
            loop {
                let n = v.read(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&chunk[..n]);
            }
            assert_eq!(all.len(), file.len());
            // the header, the kept records and the index are the moved file's; past them the
            // moved file has stale bytes nobody reads, the view the file's own
            let upto = 200 + data_len as usize + 32;
            assert_eq!(&all[..upto], &want[..upto]);
            assert_eq!(&all[upto..], &file[upto..]);
            assert_eq!(
                u64::from_le_bytes(all[48..56].try_into().unwrap()),
                data_len
            );
            // back into the data section after reading past it: the cursor starts over
            v.seek(SeekFrom::Start(200 + 95)).unwrap();
            let mut mid = [0u8; 30];
            v.read_exact(&mut mid).unwrap();
            assert_eq!(mid, want[295..325]);
            // seeks from the end and back
            assert_eq!(v.seek(SeekFrom::End(-4)).unwrap(), 1596);
            let mut last = [0u8; 4];
            v.read_exact(&mut last).unwrap();
            assert_eq!(last, file[1596..]);
            assert!(v.seek(SeekFrom::Current(-2000)).is_err());
        }
    }

    #[test]
    fn a_whole_view_is_the_file() {
        let file: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
        let mut v = View::whole(shared(file.clone()), Some((100, 4000)));
        let mut all = Vec::new();
        v.read_to_end(&mut all).unwrap();
        assert_eq!(all, file);
        v.seek(SeekFrom::Start(4990)).unwrap();
        let mut b = [0u8; 20];
        assert_eq!(v.read(&mut b).unwrap(), 10);
        assert_eq!(v.read(&mut b).unwrap(), 0);
    }
}
