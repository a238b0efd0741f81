//! Tables in `perf lock`'s own column layout (FORMATS.md §1.1, §1.2, §1.5), so lockcast's
//! numbers paste into a cover letter next to, or instead of, perf's: `report` layout
//! (`%20s` Name, `%10` counts, 12-wide times) when the rows have acquisitions, `contention`
//! layout (`%10` contended, 12-wide times, then `  %10s   %s` type and caller) otherwise.
//! Trailing spaces are perf's: every cell is followed by one space.

use crate::analyses::stat_row::StatRow;
use crate::units::perf_time_cell;

/// One row in perf's terms: the names perf prints, and the row's values.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfRow<'a> {
    /// `Name` (report layout) or caller / symbol / comm (contention layout).
    pub name: String,
    /// Lock type (`spinlock`, `rwsem:R`), contention layout only.
    pub lock_type: String,
    /// Counts and waits.
    pub values: &'a StatRow,
}

fn count_cell(n: Option<u64>) -> String {
    match n {
        Some(n) => format!("{n:>10}"),
        None => format!("{:>10}", "-"),
    }
}

/// perf's name cell: right-aligned in 20; names of 20 characters or more are cut to 16 and
/// `...` (perf ≥ 5.18).
fn name_cell(name: &str) -> String {
    if name.chars().count() < 20 {
        format!("{name:>20}")
    } else {
        let cut: String = name.chars().take(16).collect();
        format!("{:>20}", format!("{cut}..."))
    }
}

/// `perf lock report` layout: `Name acquired contended avg wait total wait max wait min wait`.
pub fn report_layout(rows: &[PerfRow]) -> String {
    let mut s = format!(
        "{:>20} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} \n\n",
        "Name", "acquired", "contended", "avg wait", "total wait", "max wait", "min wait"
    );
    for r in rows {
        s.push_str(&format!(
            "{} {} {} {} {} {} {} \n",
            name_cell(&r.name),
            count_cell(r.values.acquired),
            count_cell(r.values.contended),
            perf_time_cell(r.values.avg_wait_ns),
            perf_time_cell(r.values.total_wait_ns),
            perf_time_cell(r.values.max_wait_ns),
            perf_time_cell(r.values.min_wait_ns),
        ));
    }
    s
}

/// `perf lock contention` layout (default fields `contended,wait_total,wait_max,avg_wait`)
/// with the tail columns `tail` (`("type", "caller")` by default).
pub fn contention_layout(rows: &[PerfRow], tail: (&str, &str)) -> String {
    let mut s = format!(
        "{:>10} {:>12} {:>12} {:>12}   {:>10}   {}\n\n",
        "contended", "total wait", "max wait", "avg wait", tail.0, tail.1
    );
    for r in rows {
        s.push_str(&format!(
            "{} {} {} {}   {:>10}   {}\n",
            count_cell(r.values.contended),
            perf_time_cell(r.values.total_wait_ns),
            perf_time_cell(r.values.max_wait_ns),
            perf_time_cell(r.values.avg_wait_ns),
            r.lock_type,
            r.name
        ));
    }
    s
}

/// The layout perf would have printed: `report` when the rows have acquisitions.
pub fn layout(rows: &[PerfRow], tail: (&str, &str)) -> String {
    if rows.iter().any(|r| r.values.acquired.is_some()) {
        report_layout(rows)
    } else {
        contention_layout(rows, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_like_perf() {
        assert_eq!(name_cell("folio_batch_move..."), " folio_batch_move...");
        assert_eq!(
            name_cell("&sb->s_type->i_lock_key#23"),
            " &sb->s_type->i_l..."
        );
    }

    #[test]
    fn headers_match_perf_output() {
        // fixtures/captures/*/report.txt and contention.txt, first line
        assert!(report_layout(&[]).starts_with(
            "                Name   acquired  contended     avg wait   total wait     max wait     min wait \n\n"
        ));
        assert!(contention_layout(&[], ("type", "caller")).starts_with(
            " contended   total wait     max wait     avg wait         type   caller\n\n"
        ));
    }
}
