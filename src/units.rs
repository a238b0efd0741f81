//! Printing times the way `perf lock` does, so lockcast's tables paste next to perf's.

/// Format ns like perf's `lock_stat_key_print_time` (FORMATS.md §1.1): `%.2f` with the largest
/// unit among `h m s ms us` the value reaches, else integer `ns`. `m` is minutes.
pub fn perf_time(ns: u64) -> String {
    const UNITS: [(f64, &str); 5] = [
        (3_600e9, "h"),
        (60e9, "m"),
        (1e9, "s"),
        (1e6, "ms"),
        (1e3, "us"),
    ];
    let v = ns as f64;
    for (base, unit) in UNITS {
        if v >= base {
            return format!("{:.2} {unit}", v / base);
        }
    }
    format!("{ns} ns")
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
    fn perf_time_matches_perf_units() {
        assert_eq!(perf_time(643_800_000_000), "10.73 m");
        assert_eq!(perf_time(880), "880 ns");
        assert_eq!(perf_time(30_070), "30.07 us");
        assert_eq!(perf_time(2_380_000_000), "2.38 s");
        assert_eq!(perf_time(123_600_000_000), "2.06 m");
    }
}
