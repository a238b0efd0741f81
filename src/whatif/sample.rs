//! Replaying a sample of a large capture for the bootstrap interval.
//!
//! The bootstrap asks one question many times: by how much does the answer move when the
//! calibration moves? On a capture of a million holds every replicate used to replay all of
//! them, so the interval cost ~10× reading the capture (issue 16). The calibration is one set
//! of hold lengths for the whole run, and these captures are one workload running steadily,
//! so the relative move of a replicate is nearly the same on any long stretch of the run as on
//! the whole of it. This module cuts `k` time windows out of the capture, one in each `k`-th of
//! the run, holding about `budget` holds and folios between them; a replicate replays only those windows, and
//! its metric is the whole capture's point estimate times (replicate on the windows ÷ point
//! estimate on the same windows) — a ratio estimator, with the windows' own noise mostly
//! cancelling because both replays see the same intents.
//!
//! Each window is rebuilt from its own events (the capture's trace cut in time), so a window
//! starts and ends like a capture does; only the lock chosen for the whole capture is kept.
//! A capture not much larger than the budget is replayed whole, as before. The stalls are the
//! one part not scaled ([`scale`]). The point estimates and the sensitivity rows always replay
//! the whole capture (MODELS.md §5d).

use super::des::Metrics;
use super::reconstruct::{self, Reconstruction};
use super::trace::Trace;
use crate::duration::Ns;

/// Windows cut from a capture by [`windows`].
pub const WINDOWS: usize = 8;

/// Holds plus folios of a reconstruction: what a replicate's cost grows with (the intents are
/// one per folio added and one per free-side hold, the requests one per hold).
pub fn size(rec: &Reconstruction) -> usize {
    rec.holds.len() + rec.faults.len()
}

/// `k` windows of `t`, one in each `k`-th of its span (where in it drawn from `seed`), each
/// rebuilt on its own, holding about `budget` holds and folios together; `None` when the
/// capture is under twice the budget (replaying it whole costs little more), when `budget` is
/// 0, or when in some `k`-th no window of [`REDRAWS`] + 1 draws can be rebuilt with a hold of
/// the lock (a capture too bursty to sample evenly): the caller replays the whole capture
/// then.
pub fn windows(
    t: &Trace,
    rec: &Reconstruction,
    o: &reconstruct::Options,
    budget: usize,
    k: usize,
    seed: u64,
) -> Option<Vec<Reconstruction>> {
    let n = size(rec);
    if k == 0 || !worth_sampling(n, budget) {
        return None;
    }
    let (start, end) = rec.span;
    let span = (end - start).max(1) as f64;
    let share = budget as f64 / n as f64;
    let len = span * share / k as f64;
    let mut o = o.clone();
    // the whole capture's lock, not each window's own pick
    o.lock = Some(rec.lock_name.clone());
    // One window at a seeded random place in each k-th of the run: evenly spread, but never in
    // step with a workload that repeats in phases (foliochurn faults a region in, then frees
    // it), which windows at fixed spacing could catch always in the same phase.
    let mut rng = crate::stats::Rng::new(seed);
    let slack = (span / k as f64 - len).max(0.0);
    let mut draw = |i: usize| {
        let a = start as f64
            + span * i as f64 / k as f64
            + slack * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64);
        (a as i64, (a + len) as i64)
    };
    let ranges: Vec<(i64, i64)> = (0..k).map(&mut draw).collect();
    let rebuild = |w: &Trace| match reconstruct::reconstruct(w, &o) {
        Ok(r) if !r.holds.is_empty() => Some(r),
        _ => None,
    };
    let mut recs: Vec<Option<Reconstruction>> = t.windows(&ranges).iter().map(rebuild).collect();
    // A window that fell in a stretch without the lock's holds (a 35 ms pause in a 1.5 s
    // recording took a 13 ms window whole; every replicate then replayed the whole capture,
    // 17x the time of reading it) is drawn again in its k-th. The new draws come after the
    // first k, so where every first window holds some, the windows are those of before.
    for (i, r) in recs.iter_mut().enumerate() {
        for _ in 0..REDRAWS {
            if r.is_some() {
                break;
            }
            *r = t.windows(&[draw(i)]).first().and_then(rebuild);
        }
    }
    recs.into_iter().collect()
}

/// How many times more a window without a hold of the lock is drawn in its k-th before the
/// capture is replayed whole (each draw costs a rebuild of a window: little beside a replicate).
pub const REDRAWS: usize = 16;

/// Whether a capture of `n` holds and folios ([`size`]) is sampled for a budget of `budget`:
/// at least twice the budget (below, replaying it whole costs little more), and a budget
/// asked for (0: the whole capture every time).
pub fn worth_sampling(n: usize, budget: usize) -> bool {
    budget > 0 && n >= budget.saturating_mul(2)
}

/// Two windows' metrics together: counts and sums add, the longest wait is the longer.
pub fn add(a: &Metrics, b: &Metrics) -> Metrics {
    Metrics {
        acquisitions: a.acquisitions + b.acquisitions,
        contended: a.contended + b.contended,
        total_wait_ns: a.total_wait_ns + b.total_wait_ns,
        max_wait_ns: a.max_wait_ns.max(b.max_wait_ns),
        all_wait_ns: a.all_wait_ns + b.all_wait_ns,
        slowpath: a.slowpath + b.slowpath,
        tail_waits: a.tail_waits + b.tail_waits,
        tail_wait_ns: a.tail_wait_ns + b.tail_wait_ns,
        stall_ns: a.stall_ns + b.stall_ns,
    }
}

/// The windows can stand for the whole: every metric the interval is made of
/// ([`INTERVAL`]) that the whole capture's point estimate has (non-zero), the windows' point
/// estimate has too, so each of its ratios in [`scale`] is defined; and so has the body of
/// the total wait, which [`scale`] scales apart from the stalls.
///
/// Only those: a replicate's other metrics (the longest wait, the slowpath count, the waits
/// past the tail cut) are in no interval, and 54 tail waits none of which fell in the
/// windows used to send every replicate of a 2 M-event capture to the whole capture.
///
/// And where the whole has traced waits, the windows hold at least [`MIN_WINDOW_WAITS`].
pub fn covers(whole: &Metrics, windows: &Metrics) -> bool {
    let total_body: fn(&Metrics) -> u64 = |m| body(m.total_wait_ns, m);
    INTERVAL
        .into_iter()
        .chain([total_body])
        .all(|f| f(whole) == 0 || f(windows) > 0)
        && (whole.contended == 0 || windows.contended >= MIN_WINDOW_WAITS)
}

/// Fewest traced waits the windows' point estimate must hold (for each policy whose whole
/// capture has any) to stand for the whole. With a handful, a replicate's ratio moves by
/// whole waits or not at all: on the bundled micro-16K capture at `--sample 500` (8 windows
/// of ~60 holds + folios, drawn again where they fell between its bursts) the no-change
/// replay's contended interval came out with no width, where the whole capture's is 785-875.
/// The floor is a choice, not fitted: the default budget's windows hold hundreds (373 of the
/// prediction's on a 2 M-event recording).
pub const MIN_WINDOW_WAITS: u64 = 30;

/// The metrics a bootstrap interval is made of (the 2.5th and 97.5th percentiles of each over
/// the replicates; `super::percentile_range` reads exactly these).
pub const INTERVAL: [fn(&Metrics) -> u64; 3] = [
    |m| m.acquisitions,
    |m| m.contended,
    |m| m.total_wait_ns.get(),
];

/// A wait sum without the stalls' own excess.
fn body(wait: Ns, m: &Metrics) -> u64 {
    wait.get().saturating_sub(m.stall_ns.get())
}

/// A replay of the windows (`x`) as the whole capture's: each metric is the whole capture's
/// point estimate times `x` ÷ the windows' point estimate (the ratio estimator). Where both
/// point estimates are 0 the windows' own value is kept; where only the windows' is (a metric
/// outside [`INTERVAL`] that [`covers`] lets the windows miss), the whole capture's point
/// estimate, as the windows say nothing of how it moves.
///
/// The stalls are the exception (MODELS.md §5a: a few traced waits drawn from a heavy-tailed
/// list of measured excesses). The windows hold a few of them, and scaling those up to the
/// whole multiplies their draw noise by the inverse of the sampled share. So when `stall`
/// gives the excess the replicate's calibration draws for the whole capture's traced waits
/// ([`super::des::stall_sum`] over the point replay's), the waits are scaled without the
/// stalls' own excess and that draw is added back, in proportion to the contended count
/// (a calibration that traces fewer waits stalls fewer).
pub fn scale(whole: &Metrics, point: &Metrics, x: &Metrics, stall: Option<Ns>) -> Metrics {
    let r = |w: u64, p: u64, x: u64| -> u64 {
        match (p, w) {
            (0, 0) => x,
            (0, _) => w,
            _ => (w as f64 * x as f64 / p as f64).round() as u64,
        }
    };
    let n = |w: Ns, p: Ns, x: Ns| Ns(r(w.get(), p.get(), x.get()));
    let contended = r(whole.contended, point.contended, x.contended);
    let (total_wait_ns, all_wait_ns, stall_ns) = match stall {
        Some(d) => {
            let d = if whole.contended == 0 {
                d
            } else {
                Ns((d.get() as f64 * contended as f64 / whole.contended as f64).round() as u64)
            };
            let wait = |f: fn(&Metrics) -> Ns| {
                Ns(r(
                    body(f(whole), whole),
                    body(f(point), point),
                    body(f(x), x),
                )) + d
            };
            (wait(|m| m.total_wait_ns), wait(|m| m.all_wait_ns), d)
        }
        None => (
            n(whole.total_wait_ns, point.total_wait_ns, x.total_wait_ns),
            n(whole.all_wait_ns, point.all_wait_ns, x.all_wait_ns),
            n(whole.stall_ns, point.stall_ns, x.stall_ns),
        ),
    };
    Metrics {
        acquisitions: r(whole.acquisitions, point.acquisitions, x.acquisitions),
        contended,
        total_wait_ns,
        max_wait_ns: n(whole.max_wait_ns, point.max_wait_ns, x.max_wait_ns),
        all_wait_ns,
        slowpath: r(whole.slowpath, point.slowpath, x.slowpath),
        tail_waits: r(whole.tail_waits, point.tail_waits, x.tail_waits),
        tail_wait_ns: n(whole.tail_wait_ns, point.tail_wait_ns, x.tail_wait_ns),
        stall_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whatif::trace;

    fn bundled() -> (Trace, Reconstruction) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/replay/micro-16K-r1/script-ns.txt.gz"
        );
        let t = trace::read(path, false).expect("bundled capture reads");
        let r = reconstruct::reconstruct(&t, &reconstruct::Options::default()).expect("rebuilds");
        (t, r)
    }

    #[test]
    fn windows_hold_about_the_budget_and_lie_inside_the_capture() {
        let (t, r) = bundled();
        let n = size(&r);
        let budget = n / 5;
        let ws = windows(&t, &r, &reconstruct::Options::default(), budget, WINDOWS, 1)
            .expect("a capture 5x the budget is sampled");
        assert_eq!(ws.len(), WINDOWS);
        let got: usize = ws.iter().map(size).sum();
        // windows are cut in time, so the count follows the event rate; a steady run gives
        // the budget within a fifth
        assert!(
            (got as f64 - budget as f64).abs() < 0.2 * budget as f64,
            "{got} items in the windows for a budget of {budget} (capture {n})"
        );
        for (w, pair) in ws.iter().zip(ws.iter().skip(1)) {
            assert!(w.span.0 >= r.span.0 && w.span.1 <= r.span.1);
            assert!(w.span.1 < pair.span.0, "windows overlap");
            assert_eq!(w.lock_name, r.lock_name);
        }
    }

    fn m(contended: u64, wait: u64, stall: u64) -> Metrics {
        Metrics {
            acquisitions: 1000,
            contended,
            total_wait_ns: Ns(wait),
            all_wait_ns: Ns(wait),
            slowpath: contended,
            stall_ns: Ns(stall),
            ..Default::default()
        }
    }

    #[test]
    fn the_ratio_estimator_scales_windows_to_the_whole() {
        let whole = m(4000, 2_000_000, 0);
        let point = m(400, 180_000, 0);
        // at the point the answer is the whole capture's own
        assert_eq!(scale(&whole, &point, &point, None), whole);
        // windows that see 10% more contention and 20% more wait: the whole's, moved alike
        let x = scale(&whole, &point, &m(440, 216_000, 0), None);
        assert_eq!((x.contended, x.total_wait_ns), (4400, Ns(2_400_000)));
        assert_eq!(x.acquisitions, 1000);
    }

    #[test]
    fn stalls_are_drawn_for_the_whole_not_scaled_from_the_windows() {
        // the whole: 1.0 ms of wait of which 0.4 ms stall excess; the windows: 100 µs of
        // which 60 µs stall (two stalls of a heavy tail landed there)
        let whole = m(4000, 1_000_000, 400_000);
        let point = m(400, 100_000, 60_000);
        // at the point, with the whole's own draw, the whole again
        assert_eq!(scale(&whole, &point, &point, Some(Ns(400_000))), whole);
        // a replicate whose windows drew one stall less (40 µs) and whose body (40 µs) is 10%
        // longer: scaling the windows' total would give 1.0 ms x 84/100 = 840 µs; the body
        // scales (600 µs x 1.1) and the whole's own draw (here 450 µs) is added
        let x = scale(&whole, &point, &m(400, 84_000, 40_000), Some(Ns(450_000)));
        assert_eq!(x.total_wait_ns, Ns(660_000 + 450_000));
        assert_eq!(x.stall_ns, Ns(450_000));
        // fewer traced waits stall fewer: the draw goes with the contended count
        let y = scale(&whole, &point, &m(300, 70_000, 30_000), Some(Ns(400_000)));
        assert_eq!(y.contended, 3000);
        assert_eq!(y.stall_ns, Ns(300_000));
        assert_eq!(y.total_wait_ns, Ns(600_000 + 300_000));
    }

    #[test]
    fn windows_without_a_metric_the_whole_has_cannot_stand_for_it() {
        assert!(covers(&m(1000, 500_000, 0), &m(30, 14_000, 0)));
        assert!(!covers(&m(1000, 500_000, 0), &m(0, 0, 0)));
        // a window wait that is all stall leaves no body to scale
        assert!(!covers(&m(1000, 500_000, 1_000), &m(30, 400, 400)));
        assert!(covers(&m(0, 0, 0), &m(0, 0, 0)));
        // too few traced waits in the windows to move by less than whole waits
        assert!(!covers(&m(1000, 500_000, 0), &m(29, 14_000, 0)));
        assert!(!covers(&m(10, 5_000, 0), &m(1, 400, 0)));
    }

    #[test]
    fn windows_may_miss_the_metrics_no_interval_is_made_of() {
        // the whole capture has waits past the tail cut, a longest wait and slowpath entries
        // that windows with contention of their own hold none of (seen on a 2 M-event
        // capture: 54 tail waits, none in the windows)
        let whole = Metrics {
            tail_waits: 54,
            tail_wait_ns: Ns(9_000_000),
            max_wait_ns: Ns(400_000),
            ..m(4000, 2_000_000, 0)
        };
        let windows = Metrics {
            slowpath: 0,
            all_wait_ns: Ns(0),
            ..m(400, 180_000, 0)
        };
        assert!(covers(&whole, &windows));
        // one interval metric missing is still a miss, each in turn
        for f in [
            |w: &mut Metrics| w.acquisitions = 0,
            |w: &mut Metrics| w.contended = 0,
            |w: &mut Metrics| w.total_wait_ns = Ns(0),
        ] {
            let mut w = windows;
            f(&mut w);
            assert!(!covers(&whole, &w), "{w:?}");
        }
        // a replicate's missed metrics are the whole capture's point estimates, not the
        // windows' own (unscaled) counts; the interval's are scaled as before
        let x = Metrics {
            tail_waits: 3,
            tail_wait_ns: Ns(500_000),
            ..m(440, 216_000, 0)
        };
        let got = scale(&whole, &windows, &x, None);
        assert_eq!(got.tail_waits, 54);
        assert_eq!(got.tail_wait_ns, Ns(9_000_000));
        assert_eq!(got.slowpath, 4000);
        assert_eq!((got.contended, got.total_wait_ns), (4400, Ns(2_400_000)));
    }

    #[test]
    fn a_window_in_a_pause_is_drawn_again_in_its_own_part_of_the_run() {
        let (t, r) = bundled();
        let o = reconstruct::Options::default();
        let budget = size(&r) / 5;
        let ws = windows(&t, &r, &o, budget, WINDOWS, 1).expect("sampled");
        // the capture with a pause cut around its fourth window, three window lengths wide
        let (a, b) = ws[3].span;
        let pause = (a - 3 * (b - a) / 2, b + 3 * (b - a) / 2);
        let mut cut = t.windows(&[(i64::MIN, i64::MAX)]).remove(0);
        cut.events.retain(|e| e.ts < pause.0 || e.ts >= pause.1);
        assert!(cut.events.len() < t.events.len());
        // the whole capture's own reconstruction, so the draws are the same as above
        let got = windows(&cut, &r, &o, budget, WINDOWS, 1)
            .expect("a window in the pause is drawn again, not the capture replayed whole");
        assert_eq!(got.len(), WINDOWS);
        for (i, (g, w)) in got.iter().zip(&ws).enumerate() {
            if i != 3 {
                assert_eq!(g.span, w.span, "window {i} moved");
                continue;
            }
            assert!(!g.holds.is_empty());
            assert!(
                g.span.1 < pause.0 || g.span.0 >= pause.1,
                "{:?} in the pause {pause:?}",
                g.span
            );
            // still in the fourth eighth: after the third window, before the fifth
            assert!(got[2].span.1 < g.span.0 && g.span.1 < got[4].span.0);
        }
        // a capture that has nothing but the pause in one eighth is replayed whole
        let eighth = (r.span.1 - r.span.0) / WINDOWS as i64;
        let mut empty = t.windows(&[(i64::MIN, i64::MAX)]).remove(0);
        let gone = (r.span.0 + 3 * eighth - 8, r.span.0 + 4 * eighth + 8);
        empty.events.retain(|e| e.ts < gone.0 || e.ts >= gone.1);
        assert!(windows(&empty, &r, &o, budget, WINDOWS, 1).is_none());
    }

    #[test]
    fn small_captures_are_replayed_whole() {
        let (t, r) = bundled();
        let o = reconstruct::Options::default();
        assert!(windows(&t, &r, &o, size(&r) / 2 + 1, WINDOWS, 1).is_none());
        assert!(windows(&t, &r, &o, 0, WINDOWS, 1).is_none());
    }
}
