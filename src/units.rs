//! Printing times the way `perf lock` does, so lockcast's tables paste next to perf's.

/// perf's time units (FORMATS.md §1.1), largest first; `m` is minutes.
const UNITS: [(f64, &str); 5] = [
    (3_600e9, "h"),
    (60e9, "m"),
    (1e9, "s"),
    (1e6, "ms"),
    (1e3, "us"),
];

/// `ns` in the largest of perf's units it reaches, with the unit; `None` below 1 us, where
/// perf prints integer ns.
fn perf_unit(ns: u64) -> Option<(f64, &'static str)> {
    let v = ns as f64;
    UNITS
        .iter()
        .find(|(base, _)| v >= *base)
        .map(|&(base, unit)| (v / base, unit))
}

/// Format ns like perf's `lock_stat_key_print_time` (FORMATS.md §1.1): `%.2f` with the largest
/// unit among `h m s ms us` the value reaches, else integer `ns`. `m` is minutes.
pub fn perf_time(ns: u64) -> String {
    match perf_unit(ns) {
        Some((v, unit)) => format!("{v:.2} {unit}"),
        None => format!("{ns} ns"),
    }
}

/// perf's `lock_stat_key_print_time(ns, 12)`, the cell of its tables: `%9.2f` and a
/// 2-character unit (`s `, `m `, `h ` carry their trailing space), or `%9llu ns`. A missing
/// value prints as `-`.
pub fn perf_time_cell(ns: Option<u64>) -> String {
    let Some(ns) = ns else {
        return format!("{:>12}", "-");
    };
    match perf_unit(ns) {
        Some((v, unit)) => format!("{v:>9.2} {unit:<2}"),
        None => format!("{ns:>9} ns"),
    }
}

/// A ratio as printed in A/B tables: `8.11x`; `-` when undefined.
pub fn ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("{r:.2}x"),
        _ => "-".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_in_perf_units() {
        let cases = [
            (643_800_000_000, "10.73 m"),
            (123_600_000_000, "2.06 m"),
            (2_380_000_000, "2.38 s"),
            (18_730_000, "18.73 ms"),
            (30_070, "30.07 us"),
            (880, "880 ns"),
        ];
        for (ns, time) in cases {
            assert_eq!(perf_time(ns), time);
            // perf's table cell: the same number and unit, in its widths
            let (v, unit) = time.split_once(' ').unwrap_or_default();
            assert_eq!(perf_time_cell(Some(ns)), format!("{v:>9} {unit:<2}"));
        }
        assert_eq!(perf_time_cell(None), "           -");
    }
}
