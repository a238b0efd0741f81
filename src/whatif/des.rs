//! Closed-loop, trace-driven replay of one FIFO queued spinlock (MODELS.md §4 M4).
//!
//! Every CPU walks its requests in virtual time; its real clock is virtual time plus the lock
//! time (wait + hold) it has accumulated so far in *this* replay, so a CPU that waits less
//! under a policy also issues its later requests sooner. Requests are served in arrival order
//! (qspinlock queues FIFO); a waiter is granted at the holder's release plus the handoff, and
//! a traced one no sooner than its own floor after it asked (MODELS.md §5a: its
//! `contention_begin` → `contention_end` path lasts that long however early the holder lets go).
//!
//! Observation rule of `lock:contention_begin` ([`Observation`]): under paravirt spinlocks every
//! request that finds the lock held or queued enters the slowpath and is traced; on bare metal
//! the first waiter spins on the pending bit untraced, so only a request that finds another
//! waiter already queued is traced. Total wait sums traced waits only, as `perf lock
//! contention` does.

use super::calibrate::{Calibration, HoldTable};
use super::policy::Request;
use super::trace::{Observation, Via};
use crate::duration::Ns;
use crate::stats::mix64;

/// What a replay counts (the same quantities `perf lock contention` prints, for one lock).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Metrics {
    /// Lock acquisitions.
    pub acquisitions: u64,
    /// Acquisitions the tracepoint would report as contended.
    pub contended: u64,
    /// Sum of traced waits.
    pub total_wait_ns: Ns,
    /// Longest traced wait.
    pub max_wait_ns: Ns,
    /// Waits of every slowpath (traced or not).
    pub all_wait_ns: Ns,
    /// Acquisitions that waited at all.
    pub slowpath: u64,
    /// Traced waits longer than the calibration's tail cut
    /// ([`super::calibrate::Calibration::tail_cut_ns`]; none when it is 0).
    #[serde(default)]
    pub tail_waits: u64,
    /// Their sum.
    #[serde(default)]
    pub tail_wait_ns: Ns,
    /// The stalls' own share of `total_wait_ns`: the excess each stalled traced wait drew
    /// ([`Stalls`]), without what later waiters waited behind it. Not printed; a sampled
    /// interval scales the rest of the wait and draws this part for the whole capture
    /// ([`super::sample`]).
    #[serde(skip)]
    pub stall_ns: Ns,
}

impl Metrics {
    /// Mean traced wait, ns.
    pub fn avg_wait_ns(&self) -> f64 {
        if self.contended == 0 {
            0.0
        } else {
            self.total_wait_ns.as_f64() / self.contended as f64
        }
    }
}

/// One path's share of a replay (requests grouped by [`Request::via`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathMetrics {
    /// Lock acquisitions.
    pub acquisitions: u64,
    /// Acquisitions the tracepoint would report as contended.
    pub contended: u64,
    /// Sum of traced waits.
    pub total_wait_ns: Ns,
    /// Waits of every slowpath.
    pub all_wait_ns: Ns,
    /// Time the lock was held.
    pub hold_ns: Ns,
}

/// A replay with its breakdown by path and each CPU's finishing time.
#[derive(Debug, Clone, Default)]
pub struct Detailed {
    /// All requests.
    pub total: Metrics,
    /// By path.
    pub by_via: std::collections::BTreeMap<Via, PathMetrics>,
    /// Per CPU: real time of its last release (virtual end of stream + its lock time).
    pub end_ns: Vec<i64>,
    /// Per CPU: virtual time of its first request.
    pub start_ns: Vec<i64>,
}

impl Detailed {
    /// CPU time the replayed CPUs spent from their first request to their last release, ns.
    pub fn busy_ns(&self) -> i64 {
        self.end_ns
            .iter()
            .zip(&self.start_ns)
            .map(|(e, s)| (e - s).max(0))
            .sum()
    }
}

/// Replay per-CPU request streams (each sorted by virtual time).
pub fn replay(streams: &[Vec<Request>], cal: &Calibration, obs: Observation) -> Metrics {
    replay_detailed(streams, cal, obs).total
}

/// One request as the replay served it, for timelines (`export perfetto --whatif`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grant {
    /// Index of the CPU's stream.
    pub cpu: usize,
    /// The request.
    pub request: Request,
    /// Real time it asked for the lock, ns.
    pub arrive: i64,
    /// Real time it got it (= `arrive` when the lock was free).
    pub grant: i64,
    /// How long it held it, ns.
    pub hold: i64,
    /// Its wait is traced (`contention_begin` fires under the observation rule).
    pub traced: bool,
}

/// [`replay_detailed`], also returning every request as served, in service order.
pub fn replay_grants(
    streams: &[Vec<Request>],
    cal: &Calibration,
    obs: Observation,
) -> (Detailed, Vec<Grant>) {
    let mut grants = Vec::new();
    let d = replay_with(streams, cal, obs, |g| grants.push(g));
    (d, grants)
}

/// The stalls of traced waits (MODELS.md §5a): a traced wait stalls with the calibrated share
/// and then lasts one of the measured excesses longer, as if its holder had kept the lock that
/// much longer (the holder's later requests move with it). Which ones stall is a fixed function of
/// the request (its CPU stream and place in it), not a generator advanced as the replay goes,
/// so a policy that leaves a request in place leaves its draw alone and a rerun is identical.
struct Stalls<'a> {
    /// Share of traced waits that stall, as a threshold on 53 random bits.
    below: u64,
    excess: &'a [i64],
}

impl<'a> Stalls<'a> {
    fn new(cal: &'a Calibration) -> Self {
        let share = if cal.stalls_ns.is_empty() {
            0.0
        } else {
            cal.stall_share.clamp(0.0, 1.0)
        };
        Stalls {
            below: (share * (1u64 << 53) as f64) as u64,
            excess: &cal.stalls_ns,
        }
    }

    /// Extra wait of the `i`-th request of CPU stream `cpu` when it waits traced.
    fn of(&self, cpu: usize, i: usize) -> i64 {
        if self.below == 0 {
            return 0;
        }
        let h = mix64((cpu as u64) << 40 ^ i as u64);
        if h >> 11 >= self.below {
            return 0;
        }
        self.excess[(mix64(h) % self.excess.len() as u64) as usize]
    }
}

/// [`replay_detailed`], and the replay's traced waits as (CPU stream, index of the request in
/// it): where [`stall_sum`] draws the stalls of another calibration without replaying.
pub fn replay_traced(
    streams: &[Vec<Request>],
    cal: &Calibration,
    obs: Observation,
) -> (Detailed, Vec<(u32, u32)>) {
    let mut at = vec![0u32; streams.len()];
    let mut out = Vec::new();
    let d = replay_with(streams, cal, obs, |g| {
        if g.traced {
            out.push((g.cpu as u32, at[g.cpu]));
        }
        at[g.cpu] += 1;
    });
    (d, out)
}

/// The stall excess `cal` would give the traced waits `waits` ([`replay_traced`]): the same
/// draw per request as a replay makes.
pub fn stall_sum(cal: &Calibration, waits: &[(u32, u32)]) -> Ns {
    let s = Stalls::new(cal);
    if s.below == 0 {
        return Ns(0);
    }
    Ns(waits
        .iter()
        .map(|&(c, i)| s.of(c as usize, i as usize).max(0) as u64)
        .sum())
}

/// The wait above which a traced wait is the tail the verdict reports apart (`u64::MAX`: no
/// cut), as the replay compares it.
fn tail_cut(cal: &Calibration) -> u64 {
    if cal.tail_cut_ns > 0.0 {
        cal.tail_cut_ns.round() as u64
    } else {
        u64::MAX
    }
}

/// `a` and `b` replay any requests to the same metrics: they give every hold and request the
/// same length ([`HoldTable::same_timing`]) and the replay loop rounds them to the same grant
/// gap, wait floor, stall draw and tail cut. A sensitivity row that scales the gap when it fits
/// to 0 (too few of the capture's waiters were held up by a release to see one) is the point's
/// own replay.
pub fn same_replay(a: &Calibration, b: &Calibration) -> bool {
    let (sa, sb) = (Stalls::new(a), Stalls::new(b));
    HoldTable::same_timing(a, b)
        && a.gap_stamp_ns() == b.gap_stamp_ns()
        && a.wait_min_stamp_ns() == b.wait_min_stamp_ns()
        && tail_cut(a) == tail_cut(b)
        && sa.below == sb.below
        && (sa.below == 0 || sa.excess == sb.excess)
}

/// When a CPU's next request arrives in real time: its virtual time plus what the CPU has
/// spent waiting and holding so far (`i64::MAX` when its stream is done).
fn arrival(stream: &[Request], next: usize, spent: i64) -> i64 {
    stream.get(next).map_or(i64::MAX, |r| r.v + spent)
}

/// [`replay`], keeping the per-path breakdown.
pub fn replay_detailed(streams: &[Vec<Request>], cal: &Calibration, obs: Observation) -> Detailed {
    replay_with(streams, cal, obs, |_| {})
}

/// The replay loop; `served` sees each request as it is granted (a no-op for the totals, so
/// the hot loop pays nothing for it).
fn replay_with(
    streams: &[Vec<Request>],
    cal: &Calibration,
    obs: Observation,
    served: impl FnMut(Grant),
) -> Detailed {
    match obs {
        Observation::Paravirt => replay_loop::<false>(streams, cal, served),
        Observation::BareMetal => replay_loop::<true>(streams, cal, served),
    }
}

/// [`replay_with`] under one observation rule, `BARE` for bare-metal: only that rule reads
/// the queue of pending grants, so under paravirt the hot loop does not keep it.
fn replay_loop<const BARE: bool>(
    streams: &[Vec<Request>],
    cal: &Calibration,
    mut served: impl FnMut(Grant),
) -> Detailed {
    let n = streams.len();
    // per-request tally in a fixed array: the replay is the engine's hot loop
    let mut by_via = [PathMetrics::default(); Via::ALL.len()];
    let mut end_ns = vec![0i64; n];
    let start_ns: Vec<i64> = streams
        .iter()
        .map(|s| s.first().map_or(0, |r| r.v))
        .collect();
    let mut next = vec![0usize; n];
    let mut spent = vec![0i64; n];
    // each CPU's next arrival in real time (i64::MAX: stream done), so picking the earliest is
    // a scan of one small array and only the served CPU's entry changes
    let mut head: Vec<i64> = streams
        .iter()
        .map(|s| s.first().map_or(i64::MAX, |r| r.v))
        .collect();
    let holds = HoldTable::new(cal);
    let gap = cal.gap_stamp_ns();
    let wait_min = cal.wait_min_stamp_ns();
    let stall = Stalls::new(cal);
    let tail_cut = tail_cut(cal);
    let mut m = Metrics::default();
    // release of the last granted request, and its CPU
    let mut free_at = i64::MIN;
    let mut holder = usize::MAX;
    // grants of requests not yet granted at the current arrival (bare-metal rule)
    let mut grants: std::collections::VecDeque<i64> = std::collections::VecDeque::new();
    loop {
        // earliest pending arrival; ties by CPU index keep the replay deterministic
        let mut c = usize::MAX;
        let mut t = i64::MAX;
        for (ci, &h) in head.iter().enumerate() {
            if h < t {
                t = h;
                c = ci;
            }
        }
        if c == usize::MAX {
            break;
        }
        let r = streams[c][next[c]];
        next[c] += 1;
        if BARE {
            while grants.front().is_some_and(|&g| g <= t) {
                grants.pop_front();
            }
        }
        let busy = t < free_at;
        let traced = match BARE {
            false => busy,
            true => busy && !grants.is_empty(),
        };
        // A traced waiter emits contention_end while holding the lock: its grant stamp comes
        // `gap` after the release and its hold runs from there. An untraced one (fast path,
        // or the bare-metal pending waiter) holds for the plain fast-path hold.
        let (grant, hold) = if traced {
            let x = stall.of(c, next[c] - 1);
            m.stall_ns += Ns::from_i64(x);
            if x > 0 && holder != c && holder < n {
                // a stall is the holder's: it kept the lock that much longer and everything
                // it does next moves with it, so its next request does not queue behind the
                // stalled waiter (a stall is counted once, as the waiter's)
                spent[holder] += x;
                end_ns[holder] += x;
                head[holder] = arrival(&streams[holder], next[holder], spent[holder]);
            }
            (
                (free_at + gap).max(t + wait_min) + x,
                holds.after_grant(cal, r.side, r.folios),
            )
        } else if busy {
            (free_at, holds.fast(cal, r.side, r.folios))
        } else {
            (t, holds.fast(cal, r.side, r.folios))
        };
        let wait = grant - t;
        let w = Ns::between(t, grant);
        m.acquisitions += 1;
        let p = &mut by_via[r.via.index()];
        p.acquisitions += 1;
        p.hold_ns += Ns::from_i64(hold);
        if busy {
            m.slowpath += 1;
            m.all_wait_ns += w;
            p.all_wait_ns += w;
            if BARE {
                grants.push_back(grant);
            }
        }
        if traced {
            m.contended += 1;
            m.total_wait_ns += w;
            m.max_wait_ns = m.max_wait_ns.max(w);
            if w.0 > tail_cut {
                m.tail_waits += 1;
                m.tail_wait_ns += w;
            }
            p.contended += 1;
            p.total_wait_ns += w;
        }
        served(Grant {
            cpu: c,
            request: r,
            arrive: t,
            grant,
            hold,
            traced,
        });
        free_at = grant + hold;
        holder = c;
        spent[c] += wait + hold;
        end_ns[c] = free_at;
        head[c] = arrival(&streams[c], next[c], spent[c]);
    }
    Detailed {
        total: m,
        by_via: Via::ALL
            .iter()
            .zip(by_via)
            .filter(|(_, m)| m.acquisitions > 0)
            .map(|(v, m)| (*v, m))
            .collect(),
        end_ns,
        start_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whatif::reconstruct::Side;

    /// Add side, 1 folio: fast hold = pre_fast + post = 100; traced waiter: grant stamp 20 after
    /// the release, then holds d_pre + post = 150.
    fn cal() -> Calibration {
        let mut c = crate::whatif::calibrate::fit(&Default::default(), 0.975);
        c.pre_fast_ns = 30.0;
        c.post_ns = 70.0;
        c.gap_ns = 20.0;
        c.d_pre_ns = 80.0;
        c.s1_add_ns = 10.0;
        c
    }

    fn req(v: i64) -> Request {
        Request {
            v,
            side: Side::Add,
            folios: 1,
            via: Via::Drain,
        }
    }

    /// Two CPUs, one collision (CPU1's request at 50 finds CPU0's hold), and a calibration
    /// where every traced wait stalls by 500.
    fn one_stall() -> (Calibration, Vec<Vec<Request>>) {
        let mut c = cal();
        c.stall_share = 1.0;
        c.stalls_ns = vec![500];
        (c, vec![vec![req(0), req(200)], vec![req(50)]])
    }

    /// A stalled traced wait lasts the drawn excess longer; the stall is the holder's, so the
    /// holder's next request moves with it instead of queueing behind the waiter.
    #[test]
    fn a_stalled_wait_lasts_its_excess_longer() {
        // CPU1 granted at 120 + 500 (wait 570), holds to 770; CPU0 held the lock 500 longer,
        // so its next request, virtual 200, comes at 200 + 100 + 500 = 800 and finds the lock
        // free (it came at 300 and waited 490 when the stall was laid on the waiter alone,
        // counting the stall twice)
        let (mut c, s) = one_stall();
        let (m, grants) = replay_grants(&s, &c, Observation::Paravirt);
        assert_eq!((m.total.contended, m.total.total_wait_ns), (1, Ns(570)));
        let cpu0: Vec<(i64, i64)> = grants
            .iter()
            .filter(|g| g.cpu == 0)
            .map(|g| (g.arrive, g.grant))
            .collect();
        assert_eq!(cpu0, [(0, 0), (800, 800)]);
        // the share alone does nothing without measured excesses, and none stall at share 0
        c.stalls_ns.clear();
        assert_eq!(replay(&s, &c, Observation::Paravirt).total_wait_ns, Ns(70));
        c.stalls_ns = vec![500];
        c.stall_share = 0.0;
        assert_eq!(replay(&s, &c, Observation::Paravirt).total_wait_ns, Ns(70));
    }

    /// `stall_ns` is the stalls' own excess, and [`stall_sum`] over [`replay_traced`]'s waits draws
    /// the same excess for the same requests without replaying (what a sampled interval adds
    /// back for the whole capture).
    #[test]
    fn stall_sum_draws_what_the_replay_stalled() {
        let (mut c, s) = one_stall();
        let m = replay(&s, &c, Observation::Paravirt);
        // one traced wait (CPU1's only request), stalled by 500 of its 570
        assert_eq!((m.contended, m.stall_ns), (1, Ns(500)));
        let (_, w) = replay_traced(&s, &c, Observation::Paravirt);
        assert_eq!(w, [(1, 0)]);
        assert_eq!(stall_sum(&c, &w), Ns(500));
        // another calibration's draw for the same waits, and none without stalls
        c.stalls_ns = vec![80];
        assert_eq!(stall_sum(&c, &w), Ns(80));
        c.stall_share = 0.0;
        assert_eq!(stall_sum(&c, &w), Ns(0));
        assert_eq!(replay(&s, &c, Observation::Paravirt).stall_ns, Ns(0));
        // many streams at a 1% share: the sum over the traced waits is the replay's own
        let mut c = cal();
        c.stall_share = 0.01;
        c.stalls_ns = vec![100, 1_000, 10_000];
        let busy: Vec<Vec<Request>> = (0..2)
            .map(|cpu| (0..20_000).map(|i| req(i * 150 + cpu * 7)).collect())
            .collect();
        let m = replay(&busy, &c, Observation::Paravirt);
        let (d, w) = replay_traced(&busy, &c, Observation::Paravirt);
        assert_eq!(w.len() as u64, m.contended);
        // the replay that lists them gives the plain replay's totals and paths
        let plain = replay_detailed(&busy, &c, Observation::Paravirt);
        assert_eq!((d.total, &d.by_via), (m, &plain.by_via));
        assert!(
            m.stall_ns.get() > 0,
            "some of {} traced waits stall",
            m.contended
        );
        assert_eq!(stall_sum(&c, &w), m.stall_ns);
    }

    /// Which requests stall is a function of the request, and about the share asked for.
    #[test]
    fn stall_draws_are_fixed_per_request_and_keep_their_share() {
        let mut c = cal();
        c.stall_share = 0.01;
        c.stalls_ns = vec![1, 2, 3];
        let st = Stalls::new(&c);
        let hits = (0..2).flat_map(|cpu| (0..100_000).map(move |i| (cpu, i)));
        let n = hits.clone().filter(|&(cpu, i)| st.of(cpu, i) > 0).count();
        assert!((1800..=2200).contains(&n), "{n} of 200000 at 1%");
        assert!(hits.clone().all(|(cpu, i)| st.of(cpu, i) == st.of(cpu, i)));
        // all three excesses are drawn
        let mut seen: Vec<i64> = hits
            .map(|(cpu, i)| st.of(cpu, i))
            .filter(|&e| e > 0)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, vec![1, 2, 3]);
    }

    /// [`same_replay`] tells two calibrations apart exactly when the replay does: each change
    /// below either keeps every metric of a busy two-CPU replay (stalls and a tail included) or
    /// moves one.
    #[test]
    fn same_replay_is_what_the_replay_reads() {
        let mut base = cal();
        base.stall_share = 0.05;
        base.stalls_ns = vec![100, 1_000, 10_000];
        base.tail_cut_ns = 2_000.0;
        let busy: Vec<Vec<Request>> = (0..2)
            .map(|cpu| (0..5_000).map(|i| req(i * 150 + cpu * 7)).collect())
            .collect();
        let at_gap0 = |c: &mut Calibration| c.gap_ns = 0.0;
        type Change = fn(&mut Calibration);
        let cases: [(&str, Change, Change, bool); 10] = [
            ("nothing", |_| {}, |_| {}, true),
            ("gap x1.25", |_| {}, |c| c.gap_ns *= 1.25, false),
            ("gap 0 x1.25", at_gap0, |c| c.gap_ns *= 1.25, true),
            ("gap 0 against 0.4", at_gap0, |c| c.gap_ns = 0.4, true),
            ("wait floor", |_| {}, |c| c.wait_min_ns = 400.0, false),
            ("stall share", |_| {}, |c| c.stall_share = 0.0, false),
            (
                "stall share without excesses",
                |c| c.stalls_ns.clear(),
                |c| c.stall_share = 0.5,
                true,
            ),
            ("tail cut", |_| {}, |c| c.tail_cut_ns = 200.0, false),
            ("a hold", |_| {}, |c| c.pre_fast_ns = 40.0, false),
            (
                "a field the replay does not read",
                |_| {},
                |c| c.n_stalls += 7,
                true,
            ),
        ];
        for (what, setup, change, same) in cases {
            let mut a = base.clone();
            setup(&mut a);
            let mut b = a.clone();
            change(&mut b);
            assert_eq!(same_replay(&a, &b), same, "{what}");
            let (ma, mb) = (
                replay(&busy, &a, Observation::Paravirt),
                replay(&busy, &b, Observation::Paravirt),
            );
            assert_eq!(ma == mb, same, "{what}: {ma:?} against {mb:?}");
        }
    }

    #[test]
    fn two_cpus_colliding_once() {
        let c = cal();
        // CPU0 holds 0..100; CPU1 arrives at 50: granted at 100 + 20 = 120 (wait 70), holds to
        // 270. CPU0's next request: virtual 200 + its 100 of lock time = 300, lock free.
        let s = vec![vec![req(0), req(200)], vec![req(50)]];
        let m = replay(&s, &c, Observation::Paravirt);
        assert_eq!(
            (m.acquisitions, m.contended, m.total_wait_ns),
            (3, 1, Ns(70))
        );
        // bare metal: the one waiter spins on the pending bit, untraced; granted at the release
        let m = replay(&s, &c, Observation::BareMetal);
        assert_eq!((m.contended, m.slowpath, m.all_wait_ns), (0, 1, Ns(50)));
    }

    #[test]
    fn a_late_traced_waiter_is_granted_at_its_own_floor() {
        let mut c = cal();
        c.wait_min_ns = 60.0;
        // CPU0 holds 0..100. CPU1 arrives at 10: the release binds, granted at 100 + 20 = 120
        // (wait 110). CPU1 arriving at 90 instead: its own floor binds, 90 + 60 = 150 (wait 60,
        // where release + gap alone gives 30).
        let m = replay(&[vec![req(0)], vec![req(10)]], &c, Observation::Paravirt);
        assert_eq!((m.contended, m.total_wait_ns), (1, Ns(110)));
        let m = replay(&[vec![req(0)], vec![req(90)]], &c, Observation::Paravirt);
        assert_eq!((m.contended, m.total_wait_ns), (1, Ns(60)));
        // the floor is a traced waiter's: bare metal's untraced pending waiter is granted at the
        // release
        let m = replay(&[vec![req(0)], vec![req(90)]], &c, Observation::BareMetal);
        assert_eq!((m.contended, m.all_wait_ns), (0, Ns(10)));
    }

    #[test]
    fn hold_grows_with_folios_and_third_waiter_is_traced_on_bare_metal() {
        let c = cal();
        assert_eq!(c.hold_fast(Side::Add, 8) - c.hold_fast(Side::Add, 1), 70);
        let s = vec![vec![req(0)], vec![req(10)], vec![req(20)]];
        let m = replay(&s, &c, Observation::BareMetal);
        // CPU1 waits to 100 (pending, untraced, holds to 200); CPU2 queued behind it is traced:
        // granted at 200 + 20, waits 200
        assert_eq!((m.slowpath, m.contended, m.total_wait_ns), (2, 1, Ns(200)));
    }
}
