//! Contention over time: a heat map of the share of time each CPU spent waiting for a lock,
//! in equal time bins over the trace, with the number of CPUs waiting (summed) below it.
//!
//! A wait is attributed to the CPU that logged its `contention_begin`. A spinning waiter
//! holds that CPU for the whole wait, so a cell's share is at most 100%; a sleeping waiter
//! (mutex, rwsem) may share its CPU with other waiters, so a cell can exceed 100% and is
//! drawn at full colour. Traces without CPU numbers get one row per task instead.

use plotters::coord::Shift;
use plotters::prelude::*;
use polars::prelude::DataFrame;
use serde::{Deserialize, Serialize};

use super::bars::RowAxis;
use super::{heading, Chart, DrawResult, HouseStyle, TimeUnit, BASE, FONT, TICK_PX};
use crate::error::{Error, Result};
use crate::frames::schema::contention as c;
use crate::frames::{i64s, strs, u32s};

/// Default number of time bins.
pub const DEFAULT_BINS: usize = 240;

/// The heat map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineChart {
    /// Title.
    pub title: String,
    /// Row names (`CPU 0`, or `tid 1234 (comm)`), top first.
    pub rows: Vec<String>,
    /// Width of one bin, ns.
    pub bin_ns: u64,
    /// Per row, per bin: ns spent waiting.
    pub waiting_ns: Vec<Vec<u64>>,
    /// Waits in the trace.
    pub waits: u64,
}

impl TimelineChart {
    /// Bin the waits of a `contention` frame into `bins` equal bins from the first begin to
    /// the last end.
    pub fn from_contention(label: &str, df: &DataFrame, bins: usize) -> Result<TimelineChart> {
        let begin = i64s(df, c::BEGIN_NS)?;
        let end = i64s(df, c::END_NS)?;
        let cpu = u32s(df, c::CPU)?;
        let tid = i64s(df, c::TID)?;
        let comm = strs(df, c::COMM)?;
        let spans: Vec<(i64, i64)> = begin
            .iter()
            .zip(&end)
            .map(|(b, e)| (b.unwrap_or(0), e.unwrap_or(0)))
            .collect();
        let (Some(t0), Some(t1)) = (
            spans.iter().map(|s| s.0).min(),
            spans.iter().map(|s| s.1).max(),
        ) else {
            return Err(Error::Input(format!(
                "{label}: no traced waits (lock:contention_begin/end pairs) to plot"
            )));
        };
        let by_cpu = cpu.iter().all(Option::is_some);
        // Row per CPU (sorted), or per task when the trace has no CPU column.
        let mut row_keys: Vec<(i64, String)> = (0..spans.len())
            .map(|i| {
                if by_cpu {
                    let n = cpu[i].unwrap_or(0);
                    (i64::from(n), format!("CPU {n}"))
                } else {
                    let t = tid[i].unwrap_or(0);
                    (
                        t,
                        format!("tid {t} ({})", comm[i].as_deref().unwrap_or("?")),
                    )
                }
            })
            .collect();
        let row_of: Vec<i64> = row_keys.iter().map(|k| k.0).collect();
        row_keys.sort();
        row_keys.dedup_by_key(|k| k.0);
        let bins = bins.clamp(1, 10_000);
        let span = (t1 - t0).max(1) as u64;
        let bin_ns = span.div_ceil(bins as u64).max(1);
        let mut waiting = vec![vec![0u64; bins]; row_keys.len()];
        for (i, &(b, e)) in spans.iter().enumerate() {
            let r = row_keys.partition_point(|k| k.0 < row_of[i]);
            let (b, e) = ((b - t0) as u64, (e - t0).max(b - t0) as u64);
            let first = (b / bin_ns) as usize;
            let last = ((e / bin_ns) as usize).min(bins - 1);
            for (k, cell) in waiting[r].iter_mut().enumerate().take(last + 1).skip(first) {
                let lo = b.max(k as u64 * bin_ns);
                let hi = e.min((k as u64 + 1) * bin_ns);
                *cell += hi.saturating_sub(lo);
            }
        }
        Ok(TimelineChart {
            title: format!("Lock waiting over time: {label}"),
            rows: row_keys.into_iter().map(|k| k.1).collect(),
            bin_ns,
            waiting_ns: waiting,
            waits: spans.len() as u64,
        })
    }

    /// Top of the colour scale: the largest share rounded up to 5, 10, 20, 25, 50 or 100%, so
    /// a trace with little waiting still shows its structure (the colour bar says where the
    /// scale ends).
    pub fn scale_max(&self) -> f64 {
        let max = (0..self.rows.len())
            .flat_map(|r| (0..self.waiting_ns[r].len()).map(move |k| (r, k)))
            .map(|(r, k)| self.share(r, k))
            .fold(0.0f64, f64::max);
        [0.05, 0.1, 0.2, 0.25, 0.5]
            .into_iter()
            .find(|&s| max <= s)
            .unwrap_or(1.0)
    }

    /// Share of bin `k` that row `r` spent waiting.
    pub fn share(&self, r: usize, k: usize) -> f64 {
        self.waiting_ns[r][k] as f64 / self.bin_ns as f64
    }
}

/// White → orange → dark red, for shares 0..1.
fn heat(x: f64) -> RGBColor {
    const STOPS: [(f64, (f64, f64, f64)); 4] = [
        (0.0, (255.0, 255.0, 255.0)),
        (0.15, (253.0, 208.0, 162.0)),
        (0.5, (241.0, 105.0, 19.0)),
        (1.0, (127.0, 39.0, 4.0)),
    ];
    let x = x.clamp(0.0, 1.0);
    let i = STOPS.iter().rposition(|s| s.0 <= x).unwrap_or(0).min(2);
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let t = (x - a.0) / (b.0 - a.0);
    let mix = |p: f64, q: f64| (p + (q - p) * t).round() as u8;
    RGBColor(
        mix(a.1 .0, b.1 .0),
        mix(a.1 .1, b.1 .1),
        mix(a.1 .2, b.1 .2),
    )
}

impl Chart for TimelineChart {
    fn default_size(&self) -> (u32, u32) {
        let rows = self.rows.len().max(1) as u32;
        (1200, (300 + 34 * rows).clamp(460, 2000) + 220)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let note = format!(
            "{} traced waits; colour = share of each {} bin a CPU spent waiting",
            self.waits,
            crate::units::perf_time(self.bin_ns)
        );
        let area = heading(root, &self.title, 26, Some((&note, 2)), &[])?;
        let bins = self.waiting_ns.first().map_or(0, Vec::len);
        let total_ns = self.bin_ns * bins as u64;
        let unit = TimeUnit::for_max(total_ns as f64);
        let (_, h) = area.dim_in_pixel();
        let (heat_area, line_area) = area.split_vertically(h.saturating_sub(220));
        let (heat_area, bar_area) = {
            let (w, _) = heat_area.dim_in_pixel();
            heat_area.split_horizontally(w.saturating_sub(110))
        };
        let x_end = unit.of(total_ns as f64);
        let n = self.rows.len();
        let axis = RowAxis { n };
        let centres: Vec<f64> = (0..n).map(|i| axis.centre(i)).collect();
        let label_w = self
            .rows
            .iter()
            .map(|r| {
                root.estimate_text_size(r, &(FONT, TICK_PX).into_font().into())
                    .map_or(80, |s| s.0)
            })
            .max()
            .unwrap_or(60)
            + 14;
        let axis_desc = format!("time since the first traced wait ({})", unit.name);
        let rows = &self.rows;
        let row_label = |y: &f64| -> String {
            axis.row_at(*y)
                .and_then(|i| rows.get(i).cloned())
                .unwrap_or_default()
        };
        let xfmt = |v: &f64| super::tick_value(*v);
        let mut chart = ChartBuilder::on(&heat_area)
            .margin(8)
            .x_label_area_size(42)
            .y_label_area_size(label_w.max(70))
            .build_cartesian_2d(0f64..x_end, axis)?;
        chart
            .configure_mesh()
            .house_style()
            .disable_mesh()
            .x_labels(10)
            .x_label_formatter(&xfmt)
            .y_label_formatter(&row_label)
            .x_desc(axis_desc.clone())
            .draw()?;
        let bin_u = unit.of(self.bin_ns as f64);
        let top_share = self.scale_max();
        for (r, row) in self.waiting_ns.iter().enumerate() {
            let y = centres[r];
            chart.draw_series(
                row.iter()
                    .enumerate()
                    .filter(|(_, w)| **w > 0)
                    .map(|(k, _)| {
                        let x0 = bin_u * k as f64;
                        Rectangle::new(
                            [(x0, y - 0.45), (x0 + bin_u, y + 0.45)],
                            heat(self.share(r, k) / top_share).filled(),
                        )
                    }),
            )?;
        }

        // Colour bar.
        let mut cb = ChartBuilder::on(&bar_area)
            .margin(8)
            .margin_left(4)
            .x_label_area_size(42)
            .y_label_area_size(0)
            .right_y_label_area_size(50)
            .build_cartesian_2d(0f64..1.0, 0f64..top_share)?;
        let pct = |v: &f64| format!("{:.0}%", v * 100.0);
        cb.configure_mesh()
            .house_style()
            .disable_mesh()
            .disable_x_axis()
            .y_labels(6)
            .y_label_formatter(&pct)
            .draw()?;
        cb.draw_series((0..100).map(|i| {
            let y = f64::from(i) / 100.0;
            Rectangle::new(
                [(0.0, y * top_share), (1.0, (y + 0.01) * top_share)],
                heat(y + 0.005).filled(),
            )
        }))?;

        // CPUs waiting, summed over rows, per bin.
        let sums: Vec<f64> = (0..bins)
            .map(|k| (0..n).map(|r| self.share(r, k)).sum())
            .collect();
        let ymax = sums.iter().copied().fold(0.0f64, f64::max).max(0.1) * 1.1;
        let (lw, _) = line_area.dim_in_pixel();
        let (line_area, _) = line_area.split_horizontally(lw.saturating_sub(110));
        let mut lc = ChartBuilder::on(&line_area)
            .margin(8)
            .x_label_area_size(42)
            .y_label_area_size(label_w.max(70))
            .build_cartesian_2d(0f64..x_end, 0f64..ymax)?;
        let yfmt = |v: &f64| super::tick_value(*v);
        lc.configure_mesh()
            .house_style()
            .x_labels(10)
            .x_label_formatter(&xfmt)
            .y_labels(4)
            .y_label_formatter(&yfmt)
            .x_desc(axis_desc)
            .y_desc("CPUs waiting")
            .max_light_lines(2)
            .draw()?;
        let pts: Vec<(f64, f64)> = sums
            .iter()
            .enumerate()
            .map(|(k, s)| (bin_u * (k as f64 + 0.5), *s))
            .collect();
        lc.draw_series(std::iter::once(PathElement::new(pts, BASE.stroke_width(2))))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_ramp_ends() {
        assert_eq!(heat(0.0), RGBColor(255, 255, 255));
        assert_eq!(heat(1.0), RGBColor(127, 39, 4));
        assert_eq!(heat(7.0), RGBColor(127, 39, 4));
    }
}
