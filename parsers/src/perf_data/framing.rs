//! The framing check's walk over a file-mode data section: every record's header read, from
//! the first record to the end, as `perf_file_header`'s data section and each
//! `perf_event_header`'s `size` lay them out (tools/perf/Documentation/perf.data-file-format.txt).
//!
//! Where a record starts is known only once the record before it is read, so the walk is one
//! chain through the whole section. On a large section it is still split: each part after the
//! first starts at a record start guessed from the bytes alone ([`sync`]), and is taken only
//! when the part before it, walked from its own start, lands exactly there. A guess that is
//! wrong costs its thread's work, never the answer: the walk goes on from where the part before
//! it stopped, as one walk would. So the records, counts, first bad record and where the walk
//! stopped are those of one walk from the first record (`parts_are_one_walk` in the tests).

use super::abi::PERF_RECORD_AUXTRACE;
use super::bytes::{self, Bytes};
use super::{count_unknown, kernel_map_at, known_record_type, u16_at, u32_at, u64_at};

/// What the walk found, from where it started to where it stopped.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Framing {
    /// Where the walk stopped: the end of the section, the part's stop (or the first record
    /// start past it), or the record it could not take (below its header's size, or running
    /// past the end).
    pub pos: u64,
    /// Whole records walked.
    pub records: u64,
    /// The kernel's MMAP record ([`kernel_map_at`]), the first one walked.
    pub kernel_map: Option<(u64, String, u64)>,
    /// Records of a type perf does not define: (type, count, first offset).
    pub unknown: Vec<(u32, u64, u64)>,
    /// A record whose size is below its own 8-byte header: its offset and size, and type.
    pub bad: Option<(u64, u64, u32)>,
}

impl Framing {
    /// The walk went on where `self` stopped and found `next`.
    fn then(&mut self, next: Framing) {
        self.pos = next.pos;
        self.records += next.records;
        if self.kernel_map.is_none() {
            self.kernel_map = next.kernel_map;
        }
        for (ty, n, at) in next.unknown {
            count_unknown(&mut self.unknown, ty, n, at);
        }
        self.bad = next.bad;
    }
}

/// How many records in a row [`sync`] asks to look like records before it guesses a start.
const SYNC_RECORDS: usize = 16;

/// How far past its target [`sync`] looks for a start: a record's header size is a u16, so a
/// section without AUXTRACE data has a record start in any 64 KiB.
const SYNC_WITHIN: u64 = 1 << 20;

/// Walk the framing of the records in `buf[from..end]`, from `from` (a record start) until the
/// end, or until a record start at or past `stop`. `let_go`: release the pages passed
/// ([`bytes::Behind`]).
pub(super) fn walk(buf: &Bytes, from: u64, end: u64, stop: u64, let_go: bool) -> Framing {
    let mut f = Framing {
        pos: from,
        ..Framing::default()
    };
    let until = stop.min(end) as usize;
    let mut behind = match let_go {
        true => bytes::Behind::new(from as usize, until),
        false => bytes::Behind::keeping(from as usize, until),
    };
    while f.pos < end && f.pos < stop {
        let p = f.pos as usize;
        behind.at(buf, p);
        bytes::prefetch_ahead(buf, p);
        if f.pos + 8 > end {
            break;
        }
        let ty = u32_at(buf, p).unwrap_or(0);
        let size = u64::from(u16_at(buf, p + 6).unwrap_or(0));
        if size < 8 {
            f.bad = Some((f.pos, size, ty));
            break;
        }
        let mut next = f.pos + size;
        if ty == PERF_RECORD_AUXTRACE {
            next = next.saturating_add(u64_at(buf, p + 8).unwrap_or(0));
        }
        if next > end {
            break;
        }
        if f.kernel_map.is_none() {
            f.kernel_map = kernel_map_at(buf, p, next as usize).map(|(s, a)| (f.pos, s, a));
        }
        count_unknown(&mut f.unknown, ty, 1, f.pos);
        f.pos = next;
        f.records += 1;
    }
    behind.done(buf, f.pos as usize);
    f
}

/// A guess at a record start at or after `at`, from the bytes alone: the first offset a
/// multiple of 8 past `base` (the kernel and perf write records whose sizes are multiples of 8)
/// from which [`SYNC_RECORDS`] records in a row have a type perf defines (not AUXTRACE, whose
/// data follows outside its size) and a size of at least 8 that is a multiple of 8, all before
/// `end`. `None` when there is none within [`SYNC_WITHIN`].
pub(super) fn sync(buf: &[u8], at: u64, end: u64, base: u64) -> Option<u64> {
    let mut c = base + (at.saturating_sub(base)).div_ceil(8) * 8;
    let last = at.saturating_add(SYNC_WITHIN).min(end);
    let looks_like_record = |p: u64| -> Option<u64> {
        let ty = u32_at(buf, p as usize)?;
        let size = u64::from(u16_at(buf, p as usize + 6)?);
        let ok = known_record_type(ty)
            && ty != PERF_RECORD_AUXTRACE
            && size >= 8
            && size % 8 == 0
            && p + size <= end;
        ok.then_some(p + size)
    };
    while c < last {
        let mut p = c;
        let mut n = 0;
        while n < SYNC_RECORDS {
            match looks_like_record(p) {
                Some(next) => p = next,
                None => break,
            }
            n += 1;
            if p == end {
                break;
            }
        }
        if n == SYNC_RECORDS || (n > 0 && p == end) {
            return Some(c);
        }
        c += 8;
    }
    None
}

/// [`walk`] from `from` to `end` in up to `parts` parts side by side (one when the section is
/// at most `split_above` bytes), with the starts of the parts taken: (what one walk from
/// `from` finds, the part starts after the first, ascending).
pub(super) fn walk_in_parts(
    buf: &Bytes,
    from: u64,
    end: u64,
    let_go: bool,
    parts: usize,
    split_above: u64,
) -> (Framing, Vec<usize>) {
    let len = end.saturating_sub(from);
    if parts < 2 || len <= split_above {
        return (walk(buf, from, end, end, let_go), Vec::new());
    }
    let step = len / parts as u64;
    let mut starts: Vec<u64> = Vec::with_capacity(parts - 1);
    for k in 1..parts as u64 {
        let after = starts.last().map_or(from, |&s| s);
        if let Some(s) = sync(buf, (from + k * step).max(after + 8), end, from) {
            starts.push(s);
        }
    }
    let stops: Vec<u64> = starts.iter().copied().chain([end]).collect();
    let walked: Vec<Framing> = std::thread::scope(|sc| {
        let others: Vec<_> = starts
            .iter()
            .zip(&stops[1..])
            .map(|(&a, &b)| {
                let h = std::thread::Builder::new()
                    .spawn_scoped(sc, move || walk(buf, a, end, b, let_go));
                (a, b, h)
            })
            .collect();
        let first = walk(buf, from, end, stops[0], let_go);
        std::iter::once(first)
            .chain(others.into_iter().map(|(a, b, h)| match h {
                Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                // no thread to be had: walked here
                Err(_) => walk(buf, a, end, b, let_go),
            }))
            .collect()
    });
    let mut walked = walked.into_iter();
    let mut all = walked.next().unwrap_or_default();
    let mut cuts = Vec::new();
    for (&s, part) in starts.iter().zip(walked) {
        // the part before stopped at a bad record, at the end, or short of `s`: so would one walk
        if all.bad.is_some() || all.pos < s {
            break;
        }
        if all.pos == s {
            cuts.push(s as usize);
            all.then(part);
        } else {
            // the guess was no record start: one walk goes on from where this one stopped
            let rest = walk(buf, all.pos, end, end, let_go);
            all.then(rest);
            break;
        }
    }
    (all, cuts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data section of records as the kernel writes them: 8-byte headers (type, misc, size)
    /// and bodies of multiples of 8 bytes.
    /// `tricky`: bodies that read as record headers where they can, so that a guess has to be
    /// checked, not trusted; else zeros (type 0: no record).
    fn section(sizes: &[(u32, u16)], tricky: bool) -> Vec<u8> {
        let mut b = Vec::new();
        for (i, &(ty, size)) in sizes.iter().enumerate() {
            b.extend_from_slice(&ty.to_le_bytes());
            b.extend_from_slice(&0u16.to_le_bytes());
            b.extend_from_slice(&size.to_le_bytes());
            for k in 0..(usize::from(size).saturating_sub(8) / 8) {
                let fake: u64 = match (i + k) % 3 {
                    _ if !tricky => 0,
                    0 => (9u64 << 48) | 9, // type 9, size 9: not a multiple of 8
                    1 => (16u64 << 48) | 1, // type 1, size 16: a record, for all the guess knows
                    _ => 0,
                };
                b.extend_from_slice(&fake.to_le_bytes());
            }
        }
        b
    }

    /// `n` record types and sizes from a small linear congruential generator.
    fn sizes(n: usize, seed: u64) -> Vec<(u32, u16)> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        (0..n)
            .map(|_| {
                let ty = [9u32, 9, 9, 3, 68][(next() % 5) as usize];
                let size = 8 * (1 + (next() % 40) as u16);
                (ty, size)
            })
            .collect()
    }

    #[test]
    fn parts_are_one_walk() {
        for seed in 0..40u64 {
            let mut recs = sizes(3000, seed);
            // a bad record, an unknown type or a record running past the end in some of them
            match seed % 4 {
                1 => recs[2000 + seed as usize].1 = 4,
                2 => recs[100 + seed as usize].0 = 200,
                3 => {
                    let n = recs.len();
                    recs[n - 1].1 = 200;
                }
                _ => {}
            }
            let tricky = seed % 8 >= 4;
            let mut data = section(&recs, tricky);
            if seed % 4 == 3 {
                data.truncate(data.len() - 100);
            }
            let buf = Bytes::Owned(data);
            let end = buf.len() as u64;
            let one = walk(&buf, 0, end, end, false);
            for parts in [2, 3, 5, 8] {
                let (all, cuts) = walk_in_parts(&buf, 0, end, false, parts, 0);
                assert_eq!(all, one, "seed {seed}, {parts} parts");
                assert!(cuts.windows(2).all(|w| w[0] < w[1]));
                // every cut is a record start of the one walk
                for &c in &cuts {
                    let before = walk(&buf, 0, end, c as u64, false);
                    assert_eq!(
                        before.pos, c as u64,
                        "seed {seed}: cut {c} is no record start"
                    );
                }
                if seed % 4 == 0 && !tricky {
                    assert_eq!(cuts.len(), parts - 1, "seed {seed}: a clean section splits");
                }
            }
        }
    }

    #[test]
    fn parts_of_any_bytes_are_one_walk() {
        // sections of 8-byte words, each a plausible record header or not at random: the walk
        // meets bad records, unknown types and sizes that run past the end anywhere, and the
        // guesses land on bodies as often as on starts
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..300 {
            let words = 500 + (next() % 6000) as usize;
            let mut data = Vec::with_capacity(words * 8);
            for _ in 0..words {
                let r = next();
                let ty = [9u32, 3, 68, 10, 0, 200][(r % 6) as usize];
                let size: u16 = match (r >> 8) % 50 {
                    0 => (r >> 20) as u16 % 8, // below a header
                    1 => (r >> 20) as u16 | 1, // odd
                    2 => 0xfff8,               // past the end, mostly
                    _ => 8 * (1 + ((r >> 20) % 24) as u16),
                };
                data.extend_from_slice(&ty.to_le_bytes());
                data.extend_from_slice(&((r >> 40) as u16).to_le_bytes());
                data.extend_from_slice(&size.to_le_bytes());
            }
            let cut = (next() % 8) as usize;
            data.truncate(data.len() - cut);
            let buf = Bytes::Owned(data);
            let end = buf.len() as u64;
            let from = 8 * (next() % 4);
            let one = walk(&buf, from, end, end, false);
            for parts in [2, 3, 4, 8] {
                let (all, cuts) = walk_in_parts(&buf, from, end, false, parts, 0);
                assert_eq!(all, one, "case {case}, {parts} parts");
                for &c in &cuts {
                    assert_eq!(walk(&buf, from, end, c as u64, false).pos, c as u64);
                }
            }
        }
    }

    #[test]
    fn a_wrong_guess_is_walked_over() {
        // FINISHED_ROUND records of 16 bytes whose bodies read as FINISHED_ROUNDs of 8: from
        // a body, too, every record in a row looks like one, and a guess may land there
        let mut data = Vec::new();
        for _ in 0..4000 {
            for (ty, size) in [(68u32, 16u16), (68, 8)] {
                data.extend_from_slice(&ty.to_le_bytes());
                data.extend_from_slice(&0u16.to_le_bytes());
                data.extend_from_slice(&size.to_le_bytes());
            }
        }
        let buf = Bytes::Owned(data);
        let end = buf.len() as u64;
        let one = walk(&buf, 0, end, end, false);
        assert_eq!((one.records, one.pos), (4000, end));
        assert_eq!(
            sync(&buf, 8, end, 0),
            Some(8),
            "a body is taken for a record start"
        );
        for parts in [2, 3, 4, 7] {
            let (all, cuts) = walk_in_parts(&buf, 0, end, false, parts, 0);
            assert_eq!(all, one, "{parts} parts");
            assert!(
                cuts.iter().all(|c| c % 16 == 0),
                "{parts} parts: cuts {cuts:?}"
            );
        }
        // 3 parts: the first guess (21,336) is a body; the walk goes on over it alone
        assert!(walk_in_parts(&buf, 0, end, false, 3, 0).1.is_empty());
    }
}
