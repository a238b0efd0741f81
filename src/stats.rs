//! Small statistics the models share: quantiles and a seeded generator for bootstraps.
//!
//! Kept here, once, so every model states its quantile rule by the function it calls.

/// Median (linear-interpolated); `None` for no data.
pub fn median(v: &[f64]) -> Option<f64> {
    quantile(v, 0.5)
}

/// Arithmetic mean; `None` for no data.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Linear-interpolated quantile (`q` in 0..1, clamped); `None` for no data.
pub fn quantile(v: &[f64], q: f64) -> Option<f64> {
    interpolated(&mut v.to_vec(), q, f64::total_cmp, |x| x)
}

/// [`quantile`] of a vector the caller has no further use for in its order: selected in
/// place (reordered), without the copy [`quantile`] makes. For the temporaries a bootstrap
/// replicate's calibration takes quantiles of (~5×10^4 values, 125-200 times a what-if).
pub fn quantile_in(v: &mut [f64], q: f64) -> Option<f64> {
    interpolated(v, q, f64::total_cmp, |x| x)
}

/// [`median`] of a vector reordered in place ([`quantile_in`]).
pub fn median_in(v: &mut [f64]) -> Option<f64> {
    quantile_in(v, 0.5)
}

/// [`median`] of integer samples, the same value as of them as floats, found in place (no
/// copy, and integer comparisons): for ns vectors of a whole capture's size.
pub fn median_int(v: &mut [i64]) -> Option<f64> {
    interpolated(v, 0.5, i64::cmp, |x| x as f64)
}

/// [`median_int`] of `v`, found by counting instead of selecting where that is cheaper: the
/// values within [`NEAR`]` / 2` of `guess` are counted in `counts` (a buffer kept between
/// calls) and the two middle order statistics read from the counts, one pass over `v` where
/// a selection takes several. A guess whose window misses either of them (or a short `v`)
/// falls back to [`median_int`]; the value is the same either way. For the what-if's
/// fault → drain delays: ~6×10^5 per build on a 2 M-event capture, re-timed a few ns at a time,
/// so the last build's median is a close guess.
pub fn median_int_near(v: &mut [i64], guess: i64, counts: &mut Vec<u32>) -> Option<f64> {
    if v.len() < NEAR_FROM {
        return median_int(v);
    }
    counted_median(v, guess, counts).or_else(|| median_int(v))
}

/// [`median_int_near`]'s counting; `None` when the window around `guess` misses a middle
/// order statistic (or `v` is empty).
fn counted_median(v: &[i64], guess: i64, counts: &mut Vec<u32>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let base = i128::from(guess) - (NEAR / 2) as i128;
    counts.clear();
    counts.resize(NEAR, 0);
    let mut below = 0usize;
    for &x in v.iter() {
        let d = i128::from(x) - base;
        if (0..NEAR as i128).contains(&d) {
            counts[d as usize] += 1;
        } else if d < 0 {
            below += 1;
        }
    }
    let pos = 0.5 * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    // the k-th smallest (0-based), if it lies in the window
    let nth = |k: usize| -> Option<i64> {
        let mut seen = below;
        if k < seen {
            return None;
        }
        for (d, &c) in counts.iter().enumerate() {
            seen += c as usize;
            if k < seen {
                return i64::try_from(base + d as i128).ok();
            }
        }
        None
    };
    Some(lerp(nth(lo)? as f64, nth(hi)? as f64, pos, lo))
}

/// Width of [`median_int_near`]'s window (ns): far wider than the what-if's delays move
/// between two calibrations, small enough for its counts to stay in cache (256 KiB).
const NEAR: usize = 1 << 16;

/// Fewest values [`median_int_near`] counts: below this a selection is cheaper than clearing
/// and scanning the counts.
const NEAR_FROM: usize = 1 << 15;

/// The quantile at `pos` between order statistics `a` (index `lo` = ⌊pos⌋) and `b` (⌈pos⌉).
fn lerp(a: f64, b: f64, pos: f64, lo: usize) -> f64 {
    a + (b - a) * (pos - lo as f64)
}

/// The linear-interpolated `q` quantile of `w` (reordered), its order statistics compared by
/// `cmp` and interpolated as floats.
fn interpolated<T: Copy>(
    w: &mut [T],
    q: f64,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
    float: impl Fn(T) -> f64,
) -> Option<f64> {
    if w.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (w.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    // the two order statistics a full sort would give, by selection (a bootstrap replicate
    // takes several quantiles of ~10^5 samples: sorting them was a tenth of its time)
    let (_, &mut a, right) = w.select_nth_unstable_by(lo, &cmp);
    let b = if hi == lo {
        a
    } else {
        right.iter().copied().min_by(&cmp).unwrap_or(a)
    };
    Some(lerp(float(a), float(b), pos, lo))
}

/// The upper median of integer samples (an element of the data, never a mean of two): for
/// durations that must be one of the measured ones. 0 for no data.
pub fn upper_median(v: &[i64]) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    s[s.len() / 2]
}

/// splitmix64's finaliser: a well-spread 64-bit hash of `x`, for draws that must be a fixed
/// function of what is drawn for (a replayed request) rather than of a generator's position.
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A tiny seeded generator (xorshift64*) so bootstrap intervals are reproducible run to run
/// without a dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (0 is remapped: xorshift must not start at 0).
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let x = Self::step(self.0);
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The state after one draw: xorshift's three shift-xors, linear over GF(2).
    fn step(mut x: u64) -> u64 {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x
    }

    /// Move on by `s`'s draws at once (as many [`Rng::next_u64`] calls, their values unused).
    pub fn skip(&mut self, s: &Skip) {
        self.0 = s.apply(self.0);
    }

    /// Uniform in `0..n` (n > 0): the top 53 bits of a draw, modulo `n` ([`Below`]).
    pub fn below(&mut self, n: usize) -> usize {
        Below::new(n).draw(self)
    }
}

/// Draws in `0..n`: `(next_u64() >> 11) % n`, with the division replaced by a multiply by a
/// reciprocal made once, for an `n` drawn from many times. A bootstrap resample draws an
/// index per sample (2.8×10^5 per replicate on a 2 M-event capture); with a 64-bit division
/// per draw the resample was 21% of that capture's `whatif` profile, with this 13.5%.
#[derive(Debug, Clone, Copy)]
pub struct Below {
    n: u64,
    /// ⌊(2^64 − 1) / n⌋.
    m: u64,
}

impl Below {
    /// Draws in `0..n` (`n` 0 draws as 1 does, as [`Rng::below`]).
    pub fn new(n: usize) -> Self {
        let n = n.max(1) as u64;
        Below { n, m: u64::MAX / n }
    }

    /// The next draw.
    pub fn draw(&self, rng: &mut Rng) -> usize {
        self.reduce(rng.next_u64() >> 11) as usize
    }

    /// `a % n` for `a` < 2^53.
    fn reduce(&self, a: u64) -> u64 {
        // with m = ⌊(2^64 − 1)/n⌋ the estimate ⌊a·m / 2^64⌋ is the quotient or one less
        // (a·m / 2^64 > a/n − 2a/2^64 > a/n − 1): one subtraction corrects it
        let q = ((u128::from(a) * u128::from(self.m)) >> 64) as u64;
        let r = a - q * self.n;
        if r >= self.n {
            r - self.n
        } else {
            r
        }
    }
}

/// A fixed number of [`Rng`] draws taken at once. The generator's step is linear over GF(2)
/// on its 64-bit state, so n steps are one 64 × 64 bit matrix: made by repeated squaring in
/// O(64² log n), applied in at most 64 XORs. A bootstrap moves the generator past each
/// replicate's ~10^5 draws to the next replicate's start; drawing them one by one, serially
/// between blocks of replicates, was over a quarter of the replicates' time on a 2 M-event
/// capture (blocks of 25 ran 41 ms and started 57 ms apart).
#[derive(Debug, Clone)]
pub struct Skip {
    /// The image of each state bit.
    cols: [u64; 64],
}

impl Skip {
    /// `n` draws.
    pub fn new(n: u64) -> Self {
        let mut acc = Skip {
            cols: std::array::from_fn(|i| 1u64 << i),
        };
        let mut pow = Skip {
            cols: std::array::from_fn(|i| Rng::step(1u64 << i)),
        };
        let mut n = n;
        while n > 0 {
            if n & 1 == 1 {
                acc = acc.then(&pow);
            }
            pow = pow.then(&pow);
            n >>= 1;
        }
        acc
    }

    fn apply(&self, x: u64) -> u64 {
        let (mut y, mut bits) = (0u64, x);
        while bits != 0 {
            y ^= self.cols[bits.trailing_zeros() as usize];
            bits &= bits - 1;
        }
        y
    }

    /// `self`, then `o` (powers of one step commute, so the order is moot here).
    fn then(&self, o: &Skip) -> Skip {
        Skip {
            cols: std::array::from_fn(|i| o.apply(self.cols[i])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-place integer median is the float median of the same values, odd and even
    /// counts, with repeats, and of the extremes a ns gap can take.
    #[test]
    fn median_int_is_the_float_median() {
        let mut rng = Rng::new(11);
        for n in [1usize, 2, 3, 4, 5, 10, 11, 1000, 1001] {
            for spread in [3u64, 1_000_000] {
                let v: Vec<i64> = (0..n)
                    .map(|_| rng.below(spread as usize) as i64 - 1)
                    .collect();
                let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
                assert_eq!(
                    median_int(&mut v.clone()),
                    median(&f),
                    "n={n} spread={spread}"
                );
            }
        }
        assert_eq!(median_int(&mut []), None);
        assert_eq!(median_int(&mut [1, 2]), Some(1.5));
        // worked by hand: the middle one, or halfway between the middle two, unsorted input
        assert_eq!(median_int(&mut [5, -1, 3]), Some(3.0));
        assert_eq!(median_int(&mut [40, 10, 30, 20]), Some(25.0));
        assert_eq!(median_int(&mut [7, 7, 1, 7]), Some(7.0));
        let big = 1i64 << 52;
        assert_eq!(
            median_int(&mut [big, big + 1]),
            median(&[big as f64, (big + 1) as f64])
        );
    }

    /// Counting around a guess gives the selection's median whenever the window holds both
    /// middle values (odd and even counts, repeats, a heavy tail, values at the window's
    /// edges), says so when it does not, and the public function then gives it anyway.
    #[test]
    fn the_counted_median_is_the_selected_median() {
        let mut rng = Rng::new(5);
        let mut counts = Vec::new();
        let half = (NEAR / 2) as i64;
        for n in [
            1usize,
            2,
            3,
            4,
            1000,
            1001,
            NEAR_FROM,
            NEAR_FROM + 1,
            200_001,
        ] {
            // delays of ~1-2 us, one in a hundred up to 40 ms
            let v: Vec<i64> = (0..n)
                .map(|_| match rng.below(100) {
                    0 => rng.below(40_000_000) as i64,
                    _ => 500 + rng.below(1500) as i64,
                })
                .collect();
            let want = median_int(&mut v.clone());
            // the two middle values
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let (a, b) = (sorted[(n - 1) / 2], sorted[n / 2]);
            if b - a < half {
                // windows that start at the lower one, end at the upper one, centre on them
                for g in [a + half, b - half + 1, (a + b) / 2] {
                    assert_eq!(counted_median(&v, g, &mut counts), want, "n={n} guess={g}");
                    assert_eq!(median_int_near(&mut v.clone(), g, &mut counts), want);
                }
            }
            // windows that end just below the lower one, start just above the upper one, or
            // are far off
            for g in [a - half, b + 1 + half, -(1 << 40), 1 << 40] {
                assert_eq!(counted_median(&v, g, &mut counts), None, "n={n} guess={g}");
                assert_eq!(median_int_near(&mut v.clone(), g, &mut counts), want);
            }
        }
        // worked by hand: 1, 2, 3, 10 counted from a window starting at 0
        assert_eq!(counted_median(&[10, 3, 1, 2], half, &mut counts), Some(2.5));
        assert_eq!(counted_median(&[], 0, &mut counts), None);
        // values at the ends of i64: no overflow, the window misses them
        let ends = [i64::MIN, i64::MAX, i64::MIN, 0, i64::MAX];
        assert_eq!(counted_median(&ends, 0, &mut counts), Some(0.0));
        assert_eq!(counted_median(&ends, i64::MAX, &mut counts), None);
    }

    /// The in-place quantile is the copying one, for odd and even counts and every kind of
    /// quantile a calibration takes.
    #[test]
    fn quantile_in_place_is_the_copying_quantile() {
        let mut rng = Rng::new(13);
        for n in [0usize, 1, 2, 5, 1000, 1001] {
            let v: Vec<f64> = (0..n)
                .map(|_| rng.below(5000) as f64 * 0.5 - 700.0)
                .collect();
            for q in [0.0, 0.5, 0.9, 0.975, 0.99, 1.0] {
                assert_eq!(
                    quantile_in(&mut v.clone(), q),
                    quantile(&v, q),
                    "n={n} q={q}"
                );
            }
            assert_eq!(median_in(&mut v.clone()), median(&v), "n={n}");
        }
    }

    #[test]
    fn same_seed_same_sequence_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let x = a.below(31);
            assert_eq!(x, b.below(31));
            assert!(x < 31);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    /// Skipping n draws lands where n calls of `next_u64` land, and the draws after it are
    /// theirs, from several seeds and for n around the powers of two the squaring uses.
    #[test]
    fn skip_lands_where_drawing_lands() {
        for seed in [0u64, 1, 7, 0xdead_beef] {
            for n in [0u64, 1, 2, 3, 63, 64, 65, 1000, 4096, 200_017] {
                let (mut drawn, mut skipped) = (Rng::new(seed), Rng::new(seed));
                for _ in 0..n {
                    drawn.next_u64();
                }
                skipped.skip(&Skip::new(n));
                for _ in 0..3 {
                    assert_eq!(drawn.next_u64(), skipped.next_u64(), "seed {seed}, n {n}");
                }
            }
        }
        // a skip moves the generator: not the identity past n = 0
        let (mut a, b) = (Rng::new(5), Rng::new(5));
        a.skip(&Skip::new(1));
        assert_ne!(a.0, b.0);
    }

    /// The reciprocal gives `%`'s remainder at the edges (0, around multiples of n, the
    /// largest numerator) for n from 1 to past every numerator, and the draws are the top
    /// 53 bits of the stream modulo n (n 0 as 1), as they were when `below` divided.
    #[test]
    fn below_by_reciprocal_is_below() {
        let top = (1u64 << 53) - 1;
        let mut ns: Vec<u64> = vec![1, 2, 3, 5, 7, 10, 31, 1000, 100_003, 637_211];
        for k in [16, 31, 32, 33, 52, 53, 54, 63] {
            ns.extend([(1u64 << k) - 1, 1u64 << k, (1u64 << k) + 1]);
        }
        let mut rng = Rng::new(3);
        for &n in &ns {
            let b = Below::new(n as usize);
            let mut a: Vec<u64> = vec![0, 1, top, top - 1, n - 1, n, n + 1];
            for k in [2, 3, 1000, top / n] {
                if let Some(kn) = k.checked_mul(n).filter(|&x| x <= top && x > 0) {
                    a.extend([kn - 1, kn, kn + 1]);
                }
            }
            a.extend((0..2000).map(|_| rng.next_u64() >> 11));
            for x in a.into_iter().filter(|&x| x <= top) {
                assert_eq!(b.reduce(x), x % n, "{x} % {n}");
            }
        }
        for n in [0usize, 1, 2, 31, 50_000, 637_211] {
            let (mut a, mut c, mut d) = (Rng::new(11), Rng::new(11), Rng::new(11));
            let b = Below::new(n);
            for _ in 0..100_000 {
                let want = ((a.next_u64() >> 11) % n.max(1) as u64) as usize;
                assert_eq!(b.draw(&mut c), want, "n {n}");
                assert_eq!(d.below(n), want, "n {n}");
            }
        }
    }

    #[test]
    fn quantiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(quantile(&[0.0, 10.0], 0.25), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(upper_median(&[4, 1, 3, 2]), 3);
        assert_eq!(upper_median(&[]), 0);
    }
}
