//! `whatif --time`: replay only part of a capture, chosen as `perf report --time` and
//! `perf script --time` choose one (tools/perf/util/time-utils.c).
//!
//! Two forms, as perf takes them:
//! - `START,STOP`: timestamps in seconds as `perf script` and ftrace print them
//!   (`seconds.fraction`, at most nine fraction digits). Either side may be left empty: from
//!   the first event, or to the last. Both ends are included, as perf's
//!   `perf_time__skip_sample()` keeps a sample stamped exactly at either end.
//! - `A%-B%`: from A% to B% of the span between the first and the last replayed event (perf's
//!   percent form, there of the first and last sample in the file).
//!
//! Times stay integer nanoseconds throughout: `12.000001` is 12 000 001 000 ns, not a float
//! rounded to it. A long capture can then be replayed in its steady state only (without its
//! start-up and tear-down), or a slice of it asked again and again while a policy's
//! parameters are tried: the rebuild, the calibration and every replay see only the slice.

use std::fmt;
use std::str::FromStr;

/// A `--time` argument as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeSpec {
    /// `START,STOP` in ns; `None`: from the first event, to the last.
    Between { from: Option<i64>, to: Option<i64> },
    /// `A%-B%` of the capture's span, `0 <= from <= to <= 100`.
    Percent { from: f64, to: f64 },
}

/// The range a [`TimeSpec`] selected in one capture: events stamped `from_ns..=to_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimeRange {
    /// First timestamp kept, ns as printed.
    pub from_ns: i64,
    /// Last timestamp kept, ns as printed (inclusive).
    pub to_ns: i64,
}

/// What `--time` kept of a capture: the range, as given and as resolved, and how many of the
/// replay's events fell in it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimeCut {
    /// The argument as given (normalised: `12.5,` prints as `12.500000000,`).
    pub spec: String,
    /// The timestamps kept.
    #[serde(flatten)]
    pub range: TimeRange,
    /// The capture's first and last replayed event.
    pub capture_from_ns: i64,
    pub capture_to_ns: i64,
    /// Replayed events kept, of how many the capture has.
    pub events: u64,
    pub of_events: u64,
}

impl TimeCut {
    /// `time A..B s (--time SPEC)`: the part, as the report's line and the chart's subtitle
    /// begin.
    pub fn label(&self) -> String {
        format!("time {} (--time {})", self.range, self.spec)
    }

    /// The capture's own span, from its first to its last replayed event.
    pub fn capture(&self) -> TimeRange {
        TimeRange {
            from_ns: self.capture_from_ns,
            to_ns: self.capture_to_ns,
        }
    }
}

/// The line every report of a part gives before its numbers (text, Markdown, errors).
impl fmt::Display for TimeCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} of the capture's {} replayed events, which span {}",
            self.label(),
            self.events,
            self.of_events,
            self.capture()
        )
    }
}

impl TimeRange {
    /// Does the range hold a timestamp?
    pub fn holds(&self, ts: i64) -> bool {
        self.from_ns <= ts && ts <= self.to_ns
    }
}

impl fmt::Display for TimeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{} s", seconds(self.from_ns), seconds(self.to_ns))
    }
}

/// `ns` as `seconds.nanoseconds`, the way `perf script --ns` prints a timestamp.
pub fn seconds(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

impl TimeSpec {
    /// The range this spec selects in a capture whose events are stamped `first..=last` (an
    /// open side of `START,STOP` is the first or the last event).
    pub fn resolve(&self, first: i64, last: i64) -> TimeRange {
        match *self {
            TimeSpec::Between { from, to } => TimeRange {
                from_ns: from.unwrap_or(first),
                to_ns: to.unwrap_or(last),
            },
            TimeSpec::Percent { from, to } => {
                // in i128: a span of up to 2^64 ns times a percentage does not overflow, and
                // the ends are exact for whole percentages (perf multiplies in doubles)
                let span = i128::from(last) - i128::from(first);
                let at = |p: f64| {
                    let bp = (p * 1e4).round() as i128; // hundredths of a basis point
                    let off = span * bp / 1_000_000;
                    (i128::from(first) + off).clamp(i128::from(i64::MIN), i128::from(i64::MAX))
                        as i64
                };
                TimeRange {
                    from_ns: at(from),
                    to_ns: if to >= 100.0 { last } else { at(to) },
                }
            }
        }
    }

    /// The timestamps a `START,STOP` spec keeps in any capture (an open side: every event
    /// before or after the other); `None` for a percent range, which depends on the
    /// capture's span. Holds what [`TimeSpec::resolve`]'s range holds of the capture's events.
    pub fn absolute(&self) -> Option<TimeRange> {
        match *self {
            TimeSpec::Between { from, to } => Some(TimeRange {
                from_ns: from.unwrap_or(i64::MIN),
                to_ns: to.unwrap_or(i64::MAX),
            }),
            TimeSpec::Percent { .. } => None,
        }
    }
}

impl fmt::Display for TimeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimeSpec::Between { from, to } => {
                let side = |x: Option<i64>| x.map(seconds).unwrap_or_default();
                write!(f, "{},{}", side(from), side(to))
            }
            TimeSpec::Percent { from, to } => write!(f, "{from}%-{to}%"),
        }
    }
}

impl FromStr for TimeSpec {
    type Err = String;

    /// `START,STOP` or `A%-B%`; the error says which form was expected and what was wrong.
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.contains('%') {
            let (a, b) = s.split_once('-').ok_or_else(|| {
                format!("expected A%-B% (percent of the capture's span), got {s:?}")
            })?;
            let pct = |x: &str| -> Result<f64, String> {
                let v = x
                    .trim()
                    .strip_suffix('%')
                    .and_then(|n| n.trim().parse::<f64>().ok())
                    .filter(|v| v.is_finite() && (0.0..=100.0).contains(v));
                v.ok_or_else(|| format!("expected a percentage from 0% to 100%, got {x:?}"))
            };
            let (from, to) = (pct(a)?, pct(b)?);
            if from > to {
                return Err(format!("expected A%-B% with A <= B, got {s:?}"));
            }
            return Ok(TimeSpec::Percent { from, to });
        }
        let (a, b) = s.split_once(',').ok_or_else(|| {
            format!("expected START,STOP in seconds (either may be empty) or A%-B%, got {s:?}")
        })?;
        let (from, to) = (side(a)?, side(b)?);
        if let (Some(x), Some(y)) = (from, to) {
            if x > y {
                return Err(format!("expected START <= STOP, got {s:?}"));
            }
        }
        Ok(TimeSpec::Between { from, to })
    }
}

/// One side of `START,STOP`: empty, or `seconds[.fraction]` read exactly into ns.
fn side(x: &str) -> Result<Option<i64>, String> {
    let x = x.trim();
    if x.is_empty() {
        return Ok(None);
    }
    let bad = || format!("expected a time in seconds such as 1234.567890, got {x:?}");
    let (sec, frac) = x.split_once('.').unwrap_or((x, ""));
    if sec.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if !sec.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    if frac.len() > 9 {
        return Err(format!(
            "expected at most nine digits after the point (ns), got {x:?}"
        ));
    }
    let sec: i64 = match sec {
        "" => 0,
        s => s.parse().map_err(|_| bad())?,
    };
    let ns: i64 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
    sec.checked_mul(1_000_000_000)
        .and_then(|s| s.checked_add(ns))
        .map(Some)
        .ok_or_else(|| format!("expected a time that fits in 64-bit ns, got {x:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn between(s: &str) -> (Option<i64>, Option<i64>) {
        match s.parse::<TimeSpec>().unwrap() {
            TimeSpec::Between { from, to } => (from, to),
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn seconds_are_read_exactly() {
        assert_eq!(
            between("1234.567890,1235"),
            (Some(1_234_567_890_000), Some(1_235_000_000_000))
        );
        assert_eq!(between("0.000000001,"), (Some(1), None));
        assert_eq!(between(",12.5"), (None, Some(12_500_000_000)));
        assert_eq!(between(","), (None, None));
        // the closest double to 0.3 s is not 300 000 000 ns; the integer read is
        assert_eq!(between(".3,.3"), (Some(300_000_000), Some(300_000_000)));
    }

    #[test]
    fn bad_specs_say_what_was_expected() {
        for (s, want) in [
            ("12", "START,STOP"),
            ("12.5.1,13", "in seconds"),
            ("-1,3", "in seconds"),
            ("3,1", "START <= STOP"),
            ("1.0000000001,2", "nine digits"),
            ("99999999999,", "64-bit"),
            ("10%", "A%-B%"),
            ("50%-20%", "A <= B"),
            ("10%-120%", "0% to 100%"),
            ("x%-20%", "percentage"),
        ] {
            let e = s.parse::<TimeSpec>().unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn percentages_cut_the_span_as_perf_does() {
        let p: TimeSpec = "10%-20%".parse().unwrap();
        // first 1 000 s, last 2 000 s: 10% and 20% of the 1 000 s between them
        let r = p.resolve(1_000_000_000_000, 2_000_000_000_000);
        assert_eq!(r.from_ns, 1_100_000_000_000);
        assert_eq!(r.to_ns, 1_200_000_000_000);
        let all: TimeSpec = "0%-100%".parse().unwrap();
        let r = all.resolve(5, 17);
        assert_eq!((r.from_ns, r.to_ns), (5, 17));
        assert!(r.holds(5) && r.holds(17) && !r.holds(4) && !r.holds(18));
        let half: TimeSpec = "0.5%-50.25%".parse().unwrap();
        let r = half.resolve(0, 1_000_000);
        assert_eq!((r.from_ns, r.to_ns), (5_000, 502_500));
    }

    #[test]
    fn both_ends_are_kept() {
        let r = "1.5,2.5".parse::<TimeSpec>().unwrap().resolve(0, 10);
        assert!(r.holds(1_500_000_000) && r.holds(2_500_000_000));
        assert!(!r.holds(1_499_999_999) && !r.holds(2_500_000_001));
        assert_eq!(r.to_string(), "1.500000000..2.500000000 s");
    }
}
