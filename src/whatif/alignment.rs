//! Which pages of a discarded range can come back as an mTHP folio of a given order.
//!
//! An anonymous fault gets a folio of order `k` only when the `2^k`-page block around the
//! faulting address, aligned to its own size, lies inside the VMA (`thp_vma_suitable_order()`)
//! and none of the block's PTEs is populated (`pte_range_none()` in `alloc_anon_folio()`);
//! otherwise it falls back to the next enabled order and in the end to one page. After
//! `madvise(MADV_DONTNEED)` zaps a range, a refault inside the range can only take a block that
//! lies wholly inside the range: the PTEs beyond its ends were not zapped. So of a range of `n`
//! pages starting at `s`, only the aligned blocks between `s` and `s + n` are large; the pages
//! before the first (the head) and after the last (the tail) fault one page at a time. A range
//! that holds no whole block is all small pages.
//!
//! A 128 KiB `mmap` that the kernel places at no 128 KiB boundary (`fixtures/workload/
//! foliochurn.c`) gets no 128K folio at all: every one of its pages is order 0, whatever mTHP
//! size is enabled. Ranges of 2 MiB multiples are placed on a 2 MiB boundary and are covered
//! whole at every mTHP order up to 2 MiB.

/// Pages of the discarded ranges by where they fall against the blocks of one order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cover {
    /// Pages before the first whole aligned block of a range (order-0 faults).
    pub head: u64,
    /// Pages inside whole aligned blocks (faults of the order).
    pub body: u64,
    /// Pages after the last whole block (order-0 faults).
    pub tail: u64,
}

impl Cover {
    /// All pages of the ranges.
    pub fn pages(&self) -> u64 {
        self.head
            .saturating_add(self.body)
            .saturating_add(self.tail)
    }

    /// Share of the pages that get the order, 1 when there are none (nothing says otherwise).
    pub fn body_share(&self) -> f64 {
        match self.pages() {
            0 => 1.0,
            n => self.body as f64 / n as f64,
        }
    }

    /// The folios `pages` pages of such ranges make at the order (blocks of `2^order` pages in
    /// the body, the last one partial; one page each in head and tail), splitting them in the
    /// ranges' proportions.
    pub fn folios_of(&self, pages: u64, order: u8) -> u64 {
        let (head, body, tail) = self.split(pages);
        head + body.div_ceil(1 << order) + tail
    }

    /// `pages` pages cut in the ranges' proportions: (head, body, tail); with no range at all,
    /// every page in the body.
    pub fn split(&self, pages: u64) -> (u64, u64, u64) {
        let total = self.pages();
        if total == 0 {
            // no ranges seen: every page in folios of the order, the last one partial
            return (0, pages, 0);
        }
        // nearest, not floor, and the body whatever is left (its last folio partial, as with
        // no ranges): a few odd ranges among many aligned ones (a thread's stack given back at
        // exit) must not turn the last pages of every aligned run into small folios
        let near =
            |x: u64| ((pages as u128 * x as u128 + total as u128 / 2) / total as u128) as u64;
        let head = near(self.head).min(pages);
        let tail = near(self.tail).min(pages - head);
        (head, pages - head - tail, tail)
    }
}

/// [`Cover`] of order `order` over ranges of `(start address, length in bytes)`, 4 KiB pages.
/// A range counts from its second zap on: the pages faulted between two zaps of it are its
/// refaults, while a range zapped once (a thread's stack at exit) may never be touched again.
pub fn cover(ranges: &[(u64, u64)], order: u8) -> Cover {
    const PAGE: u64 = 4096;
    let block = PAGE << order.min(20);
    let mut seen: std::collections::HashMap<(u64, u64), u64> = Default::default();
    for &r in ranges {
        *seen.entry(r).or_default() += 1;
    }
    let mut c = Cover::default();
    for (&(start, len), &n) in &seen {
        let again = n - 1;
        // madvise works on whole pages: the kernel rounds the length up (a length or start
        // from a damaged capture that does not fit the address space is no range)
        let end = len
            .div_ceil(PAGE)
            .checked_mul(PAGE)
            .and_then(|l| start.checked_add(l));
        let (Some(end), true) = (end, start % PAGE == 0) else {
            continue;
        };
        let first = start.div_ceil(block).saturating_mul(block);
        let last = end / block * block;
        let (head, body, tail) = if last > first {
            (first - start, last - first, end - last)
        } else {
            (end - start, 0, 0)
        };
        let add = |sum: &mut u64, bytes: u64| {
            *sum = sum.saturating_add(again.saturating_mul(bytes / PAGE));
        };
        add(&mut c.head, head);
        add(&mut c.body, body);
        add(&mut c.tail, tail);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 128 KiB range foliochurn zapped at 0x7fd119586000 in the matrix capture
    /// foliochurn-128K-t2-s128-l300 (its `sys_enter_madvise`): 2 pages to the first 32K
    /// boundary and 6 after the last; one 64K block, from 0x…590000; no 128K block. The
    /// capture's folio counts at each size agree (19,267 pages in 10,252 folios at 64K).
    #[test]
    fn an_unaligned_128k_range() {
        let r = [(0x7fd1_1958_6000u64, 0x20000u64); 2];
        assert_eq!(
            cover(&r, 5),
            Cover {
                head: 32,
                body: 0,
                tail: 0
            }
        );
        assert_eq!(
            cover(&r, 4),
            Cover {
                head: 10,
                body: 16,
                tail: 6
            }
        );
        assert_eq!(
            cover(&r, 3),
            Cover {
                head: 2,
                body: 24,
                tail: 6
            }
        );
        assert_eq!(
            cover(&r, 2),
            Cover {
                head: 2,
                body: 28,
                tail: 2
            }
        );
        // zapped once, it says nothing of refaults
        assert_eq!(cover(&r[..1], 4), Cover::default());
        // folios per pass: 32 small; 10 + 1 + 6 = 17; 2 + 3 + 6 = 11; 2 + 7 + 2 = 11
        let f = |o| cover(&r, o).folios_of(32, o);
        assert_eq!((f(5), f(4), f(3), f(2), f(0)), (32, 17, 11, 11, 32));
    }

    #[test]
    fn aligned_ranges_are_covered_whole() {
        // two 16 MiB regions zapped twice each, and a stack given back once
        let a = (0x7f00_0000_0000u64, 16 << 20);
        let b = (0x7f00_0100_0000u64, 16 << 20);
        let r = [a, b, a, b, (0x7f3d_ace9_3000, 0x7f_b000)];
        for o in 0..=9 {
            let c = cover(&r, o);
            assert_eq!((c.head, c.body, c.tail), (0, 8192, 0), "order {o}");
            assert_eq!(c.body_share(), 1.0);
        }
    }

    #[test]
    fn split_keeps_the_proportions_and_every_page() {
        let c = Cover {
            head: 10,
            body: 16,
            tail: 6,
        };
        assert_eq!(c.split(32), (10, 16, 6));
        // 64 pages of such passes: two blocks
        assert_eq!(c.split(64), (20, 32, 12));
        // runs of other lengths: head and tail to the nearest page
        assert_eq!(c.split(12), (4, 6, 2));
        assert_eq!(c.split(20), (6, 10, 4));
        // a few odd pages among aligned ranges leave an aligned run whole
        let c = Cover {
            head: 3,
            body: 2 * 4096 * 10,
            tail: 2,
        };
        assert_eq!(c.split(4096), (0, 4096, 0));
        // no ranges: every page in the order's folios, the last one partial
        assert_eq!(Cover::default().split(37), (0, 37, 0));
        assert_eq!(Cover::default().folios_of(37, 2), 10);
        // odd lengths and misaligned starts are not ranges madvise accepts whole
        assert_eq!(cover(&[(0x1001, 4096); 2], 2), Cover::default());
        // a damaged capture's lengths: no range, no overflow
        assert_eq!(cover(&[(0x1000, u64::MAX); 2], 2), Cover::default());
        assert_eq!(cover(&[(u64::MAX - 4095, 8192); 2], 2), Cover::default());
        assert_eq!(
            cover(&[(0x1000, 1); 2], 0),
            Cover {
                head: 0,
                body: 1,
                tail: 0
            }
        );
    }
}
