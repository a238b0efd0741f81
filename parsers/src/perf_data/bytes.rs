//! The whole perf.data file in memory: read from a stream (standard input, a gzip or zstd
//! file), or a plain file mapped copy-on-write.
//!
//! Why map: reading a file into a `Vec` costs a fresh zeroed page and a copy out of the page
//! cache per 4 KiB, about 30 ms for a 60 MiB recording and 85 ms for 188 MiB on the 2-CPU VMs
//! this is measured on (a third of what `report` spent on the 60 MiB one). A private mapping reads the
//! page cache in place; the few writes the reader makes (the header of a file cut short, the
//! samples moved down by [`super::compact::drop_samples`]) copy only the pages they touch, and
//! never reach the file.

use std::ops::{Deref, DerefMut};

/// The file's bytes.
pub(super) enum Bytes {
    /// Read from a stream.
    Owned(Vec<u8>),
    /// A private (copy-on-write) mapping of a plain file, of which the first `len` bytes are
    /// the file (fewer than mapped once [`Bytes::truncate`] has cut a partial record).
    Mapped { map: memmap2::MmapMut, len: usize },
}

impl Bytes {
    /// Map `file` privately; `None` when it cannot be (empty, not a regular file, the system
    /// refuses): the caller reads it instead.
    pub(super) fn map(file: &std::fs::File) -> Option<Bytes> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() == 0 {
            return None;
        }
        // SAFETY: a private mapping; lockcast's own writes never reach the file. What the
        // mapping cannot guard against is another process truncating the file while it is
        // read (SIGBUS on the lost pages), the trade any reader that maps its input makes; a
        // recording being appended to is safe (the mapping ends where the file ended when it
        // was mapped).
        let map = unsafe { memmap2::MmapOptions::new().map_copy(file) }.ok()?;
        let len = map.len();
        Some(Bytes::Mapped { map, len })
    }

    /// Keep the first `n` bytes (as [`Vec::truncate`]).
    pub(super) fn truncate(&mut self, n: usize) {
        match self {
            Bytes::Owned(v) => v.truncate(n),
            Bytes::Mapped { len, .. } => *len = n.min(*len),
        }
    }

    /// The bytes as a `Vec`, copied out of a mapping (pipe-mode files, whose check edits
    /// records out of the middle).
    pub(super) fn owned(&mut self) -> &mut Vec<u8> {
        if let Bytes::Mapped { map, len } = self {
            *self = Bytes::Owned(map[..*len].to_vec());
        }
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped { .. } => unreachable!("converted above"),
        }
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped { map, len } => &map[..*len],
        }
    }
}

impl DerefMut for Bytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped { map, len } => &mut map[..*len],
        }
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
        let mut b = Bytes::map(&file).expect("a plain file maps");
        assert!(matches!(b, Bytes::Mapped { .. }));
        assert_eq!(&b[..], b"PERFILE2 and the rest");
        b[0] = b'X';
        b.truncate(8);
        assert_eq!(&b[..], b"XERFILE2");
        assert_eq!(b.owned().as_slice(), b"XERFILE2");
        assert!(matches!(b, Bytes::Owned(_)));
        assert_eq!(std::fs::read(&f.0).unwrap(), b"PERFILE2 and the rest");
        std::fs::remove_file(&f.0).unwrap();
    }

    #[test]
    fn an_empty_file_is_read_not_mapped() {
        let f = temp_file();
        let file = std::fs::File::open(&f.0).unwrap();
        assert!(Bytes::map(&file).is_none());
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
