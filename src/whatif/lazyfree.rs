//! `madvise(MADV_FREE)`'s `lru_lock` holds, which leave no event of their own (MODELS.md §2.2).
//!
//! `madvise_free_pte_range()` marks each anonymous, still swap-backed folio of the range
//! lazyfree (`folio_mark_lazyfree()`): the folio goes on the per-CPU `lru_lazyfree` batch, and
//! `__folio_batch_add_and_move()` drains that batch under `lru_lock` (`lru_lazyfree_fn` moves
//! each folio to the inactive file list and clears `PG_swapbacked`) when it is full or the folio
//! is large, the same rule as the `lru_add` batch. Nothing inside that hold is traced. What the
//! capture does show: the call (`syscalls:sys_enter/exit_madvise` with behavior 8), the folios
//! the task faulted in before it (`mm_page_alloc` + `mm_lru_insertion`, not freed since), and
//! every traced wait of the task during the call that no insertion or free follows: those are
//! waits for its own lazyfree holds, and their `contention_end` is the hold's start.
//!
//! So one call's holds are: its folios grouped by the kernel rule (a large folio alone, order-0
//! folios 31 at a time); the traced ones at their grants; the rest spread over the untraced
//! stretches of the call in proportion to their length (the task walks its page tables at a
//! steady pace between them). A folio is marked once: `PG_swapbacked` is clear after the move,
//! so a later MADV_FREE of the same range finds nothing to move (a capture of the seed's loop
//! shows it: the first call lasts 3.3 ms, the next ones 0.1-0.4 ms with no waits), and only
//! folios faulted since the task's previous MADV_FREE count. The range itself is not matched
//! against the folios (the fault events carry no address): a task that frees part of what it
//! faulted is over-counted.

use super::reconstruct::{Fault, Hold, Side, Trigger, FOLIO_BATCH};
use super::trace::{Via, NO_SITE};

/// One `madvise(MADV_FREE)` call of one task, as the reconstruction saw it.
#[derive(Debug, Clone, Default)]
pub struct Call {
    /// CPU of the enter event.
    pub cpu: u32,
    /// `sys_enter_madvise` time.
    pub enter: i64,
    /// `sys_exit_madvise` time (the end of the trace when it has none).
    pub exit: i64,
    /// Order-0 folios marked.
    pub small: u32,
    /// Orders of the large folios marked, in fault order.
    pub large: Vec<u8>,
    /// The task's traced waits during the call that no LRU event followed: (begin, end, path).
    pub traced: Vec<(i64, i64, Via)>,
}

impl Call {
    /// The call's folios, from the faults not yet marked and not freed.
    pub fn marking(cpu: u32, enter: i64, faults: &[Fault], fresh: &[usize]) -> Call {
        let mut c = Call {
            cpu,
            enter,
            exit: enter,
            ..Call::default()
        };
        for &i in fresh {
            let f = &faults[i];
            if f.freed_in.is_some() {
                continue;
            }
            if f.order == 0 {
                c.small += 1;
            } else {
                c.large.push(f.order);
            }
        }
        c
    }

    /// The holds of the call (see the module docs), in time order.
    pub fn holds(&self) -> Vec<Hold> {
        // (folios, pages, trigger) of each drain, by the kernel rule
        let mut groups: Vec<(u32, u64, Trigger)> = self
            .large
            .iter()
            .map(|&o| (1, 1u64 << o, Trigger::Large))
            .collect();
        let mut left = self.small;
        while left > 0 {
            let n = left.min(FOLIO_BATCH);
            groups.push((
                n,
                u64::from(n),
                if n == FOLIO_BATCH {
                    Trigger::Full
                } else {
                    Trigger::Explicit
                },
            ));
            left -= n;
        }
        // More traced waits than folios to mark: the fault accounting missed some (folios
        // faulted by another thread of the process, say); each wait was still a hold.
        let typical = groups.first().copied().unwrap_or((1, 1, Trigger::Large));
        while groups.len() < self.traced.len() {
            groups.push(typical);
        }
        let mut traced = self.traced.clone();
        traced.sort_unstable_by_key(|t| t.1);
        let untraced = groups.len() - traced.len();
        // stretches between the call's edges and the traced grants
        let mut edges = Vec::with_capacity(traced.len() + 2);
        edges.push(self.enter);
        edges.extend(traced.iter().map(|t| t.1.clamp(self.enter, self.exit)));
        edges.push(self.exit.max(self.enter));
        let lens: Vec<i64> = edges.windows(2).map(|w| (w[1] - w[0]).max(0)).collect();
        let counts = apportion(untraced, &lens);
        let mut out = Vec::with_capacity(groups.len());
        let mut g = groups.into_iter();
        let mut push = |out: &mut Vec<Hold>, ts: i64, t: Option<(i64, i64, Via)>| {
            let (folios, pages, trigger) = g.next().unwrap_or(typical);
            out.push(Hold {
                cpu: self.cpu,
                side: Side::Lazyfree,
                folios,
                pages,
                first_ts: ts,
                last_ts: ts,
                traced: t.map(|(b, e, _)| (b, e)).into(),
                trigger,
                last_fault: None,
                site: NO_SITE,
                via: Via::Lazyfree,
                traced_via: t.map_or(Via::Unknown, |(_, _, v)| v),
            });
        };
        for (j, (&n, &len)) in counts.iter().zip(&lens).enumerate() {
            for k in 0..n {
                let at = edges[j] + ((len as f64) * (k as f64 + 0.5) / n as f64).round() as i64;
                push(&mut out, at, None);
            }
            if let Some(&t) = traced.get(j) {
                push(&mut out, t.1, Some(t));
            }
        }
        out
    }
}

/// Split `n` over slots in proportion to `weights` (largest remainder; equal shares when all
/// weights are zero).
fn apportion(n: usize, weights: &[i64]) -> Vec<usize> {
    if weights.is_empty() {
        return Vec::new();
    }
    let total: i64 = weights.iter().sum();
    if total <= 0 {
        let k = weights.len();
        return (0..k).map(|i| n / k + usize::from(i < n % k)).collect();
    }
    let exact: Vec<f64> = weights
        .iter()
        .map(|&w| n as f64 * w as f64 / total as f64)
        .collect();
    let mut out: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut rest: Vec<(usize, f64)> = exact
        .iter()
        .enumerate()
        .map(|(i, x)| (i, x - x.floor()))
        .collect();
    rest.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let short = n - out.iter().sum::<usize>();
    for (i, _) in rest.into_iter().take(short) {
        out[i] += 1;
    }
    out
}

/// Merge `lazy` holds into `holds` (both in time order of their first event) and renumber the
/// faults' hold indices to match.
pub fn merge(holds: Vec<Hold>, faults: &mut [Fault], lazy: Vec<Hold>) -> Vec<Hold> {
    if lazy.is_empty() {
        return holds;
    }
    let mut lazy = lazy;
    lazy.sort_by_key(|h| h.first_ts);
    let mut remap = vec![0usize; holds.len()];
    let mut out = Vec::with_capacity(holds.len() + lazy.len());
    let mut l = lazy.into_iter().peekable();
    for (i, h) in holds.into_iter().enumerate() {
        while l.peek().is_some_and(|x| x.first_ts < h.first_ts) {
            out.extend(l.next());
        }
        remap[i] = out.len();
        out.push(h);
    }
    out.extend(l);
    for f in faults.iter_mut() {
        // remapped indices are below the old count, which fitted in u32
        f.hold = remap[f.hold as usize] as u32;
        if let Some(x) = f.freed_in.as_mut() {
            *x = remap[*x as usize] as u32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(small: u32, large: Vec<u8>, traced: Vec<(i64, i64)>) -> Call {
        Call {
            cpu: 0,
            enter: 0,
            exit: 1000,
            small,
            large,
            traced: traced
                .into_iter()
                .map(|(b, e)| (b, e, Via::Unknown))
                .collect(),
        }
    }

    #[test]
    fn large_folios_hold_alone_order0_by_31() {
        let h = call(70, vec![2, 2], vec![]).holds();
        let f: Vec<u32> = h.iter().map(|h| h.folios).collect();
        assert_eq!(f.len(), 5);
        assert_eq!(f.iter().sum::<u32>(), 72);
        assert_eq!(h.iter().filter(|h| h.pages == 4).count(), 2);
        // evenly over the call, in time order
        let ts: Vec<i64> = h.iter().map(|h| h.first_ts).collect();
        assert_eq!(ts, vec![100, 300, 500, 700, 900]);
    }

    #[test]
    fn traced_waits_are_holds_at_their_grants_and_the_rest_fill_the_gaps() {
        // 4 holds, one traced with its grant at 800: 3 untraced over [0, 800) and (800, 1000]
        let h = call(0, vec![2; 4], vec![(790, 800)]).holds();
        assert_eq!(h.len(), 4);
        let traced: Vec<_> = h.iter().filter(|h| h.traced.get().is_some()).collect();
        assert_eq!(traced.len(), 1);
        assert_eq!(traced[0].first_ts, 800);
        assert_eq!(h.iter().filter(|h| h.first_ts < 800).count(), 2);
        assert!(h.windows(2).all(|w| w[0].first_ts <= w[1].first_ts));
        // more waits than folios: every wait is still a hold
        assert_eq!(call(0, vec![2], vec![(1, 2), (5, 6)]).holds().len(), 2);
    }

    #[test]
    fn apportion_is_exact() {
        assert_eq!(apportion(3, &[800, 200]), vec![2, 1]);
        assert_eq!(apportion(5, &[0, 0]), vec![3, 2]);
        assert_eq!(apportion(0, &[1]), vec![0]);
        assert_eq!(apportion(10, &[1, 1, 1]).iter().sum::<usize>(), 10);
    }
}
