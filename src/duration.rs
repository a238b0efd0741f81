//! Durations in integer nanoseconds: the one type for a wait or a hold.
//!
//! A duration is never negative, so the type cannot hold one: a difference of two timestamps
//! becomes an [`Ns`] through [`Ns::between`], which says what happens to a negative difference
//! (it counts as zero: an event stamped before its cause is a clock artefact, and the parsers
//! count those separately). Printing uses perf's units ([`crate::units::perf_time`]).

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// A non-negative duration in nanoseconds; serialised as a plain integer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Ns(pub u64);

impl Ns {
    /// `to − from`; a negative difference is zero.
    pub fn between(from: i64, to: i64) -> Ns {
        Ns::from_i64(to.saturating_sub(from))
    }

    /// A signed nanosecond count that is a duration by construction; negative values are zero.
    pub fn from_i64(ns: i64) -> Ns {
        Ns(u64::try_from(ns).unwrap_or(0))
    }

    /// The count.
    pub fn get(self) -> u64 {
        self.0
    }

    /// As `f64`, for ratios and means.
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }
}

impl Add for Ns {
    type Output = Ns;
    fn add(self, o: Ns) -> Ns {
        Ns(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Ns {
    fn add_assign(&mut self, o: Ns) {
        *self = *self + o;
    }
}

impl Sum for Ns {
    fn sum<I: Iterator<Item = Ns>>(it: I) -> Ns {
        it.fold(Ns(0), |a, b| a + b)
    }
}

/// perf's layout: `18.73 ms`, `880 ns`.
impl fmt::Display for Ns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::units::perf_time(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_negative_and_prints_like_perf() {
        assert_eq!(Ns::between(10, 4), Ns(0));
        assert_eq!(Ns::between(4, 10), Ns(6));
        assert_eq!(Ns::from_i64(-5), Ns(0));
        assert_eq!(Ns(18_730_000).to_string(), "18.73 ms");
        assert_eq!([Ns(1), Ns(2)].into_iter().sum::<Ns>(), Ns(3));
        assert_eq!(serde_json::to_string(&Ns(7)).ok().as_deref(), Some("7"));
    }
}
