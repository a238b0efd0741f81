//! Printed times → integer nanoseconds, keeping how precisely they were printed.
//!
//! `perf lock` (v6.0+) prints `%.2f` with a unit from `ns us ms s m h` (FORMATS.md §1.1; `m` is
//! minutes), so `10.73 m` only says "between 10.725 and 10.735 minutes". [`TimeNs`] keeps that
//! half-width so a comparison can tell a real difference from rounding.

use serde::Serialize;

/// A duration in integer nanoseconds with the rounding uncertainty of its printed form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TimeNs {
    /// The printed value, in nanoseconds.
    pub ns: u64,
    /// Half the value of the last printed digit, in nanoseconds: the true value lies in
    /// `ns - err_ns ..= ns + err_ns`. 0 for values printed as exact integers of ns.
    pub err_ns: u64,
}

impl TimeNs {
    /// An exactly known duration.
    pub fn exact(ns: u64) -> Self {
        TimeNs { ns, err_ns: 0 }
    }
}

/// Nanoseconds in one unit of each `perf lock` time unit token.
pub fn unit_ns(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Parse a decimal number (`123`, `10.73`) and scale it by `unit_ns` exactly.
///
/// Returns `None` when `num` is not a plain non-negative decimal or the result overflows u64.
pub fn scaled_decimal(num: &str, unit_ns: u64) -> Option<TimeNs> {
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    if frac_part.len() > 18 || int_part.len() > 30 {
        return None;
    }
    let mut mantissa: u128 = 0;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(u128::from(b - b'0'))?;
    }
    let scale = 10u128.pow(frac_part.len() as u32);
    let unit = u128::from(unit_ns);
    // Round to the nearest ns: units below a ns never occur in perf's output, but a value such
    // as `1.005 us` with 3 decimals is still exact.
    let ns = (mantissa * unit + scale / 2) / scale;
    let err = if frac_part.is_empty() && unit_ns == 1 {
        0
    } else {
        // Half of one unit in the last printed place.
        unit / scale / 2
    };
    Some(TimeNs {
        ns: u64::try_from(ns).ok()?,
        err_ns: u64::try_from(err).ok()?,
    })
}

/// Parse `secs.frac` timestamps (`1540823.804575`, `22.498450123`) to integer ns.
///
/// Returns the value and the resolution of the printed form in ns (1000 for 6 decimals, 1 for 9).
/// An integer without a dot (counter clocks) is returned as-is with resolution 1.
pub fn parse_timestamp(s: &str) -> Option<(i64, u32)> {
    match s.split_once('.') {
        None => {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((s.parse::<i64>().ok()?, 1))
        }
        Some((secs, frac)) => {
            if secs.is_empty()
                || frac.is_empty()
                || frac.len() > 9
                || !secs.bytes().all(|b| b.is_ascii_digit())
                || !frac.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let secs: i64 = secs.parse().ok()?;
            let digits = frac.len() as u32;
            let frac_val: i64 = frac.parse().ok()?;
            let res = 10i64.pow(9 - digits);
            let ns = secs
                .checked_mul(1_000_000_000)?
                .checked_add(frac_val * res)?;
            Some((ns, res as u32))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_minutes_are_minutes() {
        let t = scaled_decimal("10.73", unit_ns("m").unwrap()).unwrap();
        assert_eq!(t.ns, 643_800_000_000);
        // ±0.005 min
        assert_eq!(t.err_ns, 300_000_000);
    }

    #[test]
    fn time_integer_ns_is_exact() {
        assert_eq!(
            scaled_decimal("880", 1),
            Some(TimeNs { ns: 880, err_ns: 0 })
        );
    }

    #[test]
    fn time_us_two_decimals() {
        assert_eq!(
            scaled_decimal("30.07", 1_000),
            Some(TimeNs {
                ns: 30_070,
                err_ns: 5
            })
        );
    }

    #[test]
    fn time_overflowing_hours_fit_u64() {
        // corpus report-minutes-hours-blank-name.txt: garbage max wait near ULLONG_MAX
        let t = scaled_decimal("5124095.50", unit_ns("h").unwrap()).unwrap();
        assert_eq!(t.ns, 18_446_743_800_000_000_000);
        assert!(scaled_decimal("9999999.99", unit_ns("h").unwrap()).is_none());
    }

    #[test]
    fn time_rejects_garbage() {
        for s in ["", ".", "1.2.3", "-1", "1e3", "a"] {
            assert!(scaled_decimal(s, 1).is_none(), "{s}");
        }
    }

    #[test]
    fn timestamp_us_and_ns() {
        assert_eq!(
            parse_timestamp("9913.990380"),
            Some((9_913_990_380_000, 1000))
        );
        assert_eq!(parse_timestamp("22.498450123"), Some((22_498_450_123, 1)));
        assert_eq!(parse_timestamp("0.090000"), Some((90_000_000, 1000)));
        assert_eq!(parse_timestamp("123456"), Some((123456, 1)));
        assert_eq!(parse_timestamp("1.2.3"), None);
    }
}
