//! Wait-time distribution per lock: histograms of traced waits (the `contention` table built
//! from `lock:contention_begin/end`) in log-scaled bins, one panel per lock or caller, one
//! colour per capture (base vs patched). A patch that shortens holds moves mass left; one that
//! removes contention lowers the bars.

use std::collections::HashMap;

use plotters::coord::Shift;
use plotters::prelude::*;
use polars::prelude::DataFrame;
use serde::{Deserialize, Serialize};

use super::{heading, Chart, DrawResult, HouseStyle, AFTER, BASE, FONT, INK, LABEL_PX, MUTED};
use super::{PATCHED, TICK_PX};
use crate::error::{Error, Result};
use crate::frames::schema::contention as c;
use crate::frames::{i64s, strs};
use crate::units::perf_time;

/// Bins per factor of ten of wait time.
pub const BINS_PER_DECADE: u32 = 4;

/// What a panel groups waits by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitKey {
    /// Caller when the trace has call chains for most waits, else the lock address.
    Auto,
    /// The caller perf would name (`sym+0xoff`, needs call chains: `perf record -g`).
    Caller,
    /// The lock address as printed in the trace.
    Lock,
}

/// One capture's waits: (key, wait in ns) per traced wait.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitSet {
    /// Legend text.
    pub label: String,
    /// Key (lock or caller) and wait of every traced wait.
    pub waits: Vec<(String, u64)>,
}

impl WaitKey {
    /// Whether waits are keyed by caller, given the trace's caller column (`Auto`: when most
    /// waits have one). Callers of a trace without call chains are an error.
    fn by_caller(self, label: &str, callers: &[Option<String>]) -> Result<bool> {
        let with_caller = callers.iter().filter(|x| x.is_some()).count();
        if self == WaitKey::Caller && with_caller == 0 && !callers.is_empty() {
            return Err(Error::Input(format!(
                "{label}: the trace has no call chains, so waits have no caller; \
                 record with -g, or group by lock"
            )));
        }
        Ok(match self {
            WaitKey::Caller => true,
            WaitKey::Lock => false,
            WaitKey::Auto => with_caller * 2 > callers.len(),
        })
    }
}

impl WaitSet {
    /// The waits of a `contention` frame, keyed by `key`.
    pub fn from_contention(label: &str, df: &DataFrame, key: WaitKey) -> Result<WaitSet> {
        let caller = strs(df, c::CALLER)?;
        let by_caller = key.by_caller(label, &caller)?;
        let lock = strs(df, c::LOCK)?;
        let ty = strs(df, c::TYPE)?;
        let wait = i64s(df, c::WAIT_NS)?;
        let names = if by_caller {
            HashMap::new()
        } else {
            lock_names(&lock, &caller)
        };
        let waits = (0..df.height())
            .map(|i| {
                let t = ty[i].as_deref().unwrap_or("");
                let k = if by_caller {
                    format!("{t} {}", caller[i].as_deref().unwrap_or("(no caller)"))
                } else {
                    let addr = lock[i].as_deref().unwrap_or("?");
                    match names.get(addr) {
                        Some(n) => format!("{n} ({t})"),
                        None => format!("lock {addr} ({t})"),
                    }
                };
                // A wait of 0 ns (same timestamp at both ends) goes into the first bin.
                (k, wait[i].unwrap_or(0).max(1) as u64)
            })
            .collect();
        Ok(WaitSet {
            label: label.to_string(),
            waits,
        })
    }
}

/// The callers `perf lock contention` shows the LRU lock under (CAPTURE.md): adds drain a
/// per-CPU batch in `folio_batch_move_lru()`, frees take it in `__page_cache_release()`.
const LRU_LOCK_CALLERS: [&str; 2] = ["folio_batch_move_lru", "__page_cache_release"];

/// What a lock address is known as, from its waits' callers (traces with call chains): the
/// LRU lock when any of them is an LRU path ([`LRU_LOCK_CALLERS`]), else the caller most of
/// its waits came from. Addresses without callers are not named (the panel says the address).
fn lock_names(lock: &[Option<String>], caller: &[Option<String>]) -> HashMap<String, String> {
    let mut callers: HashMap<&str, HashMap<&str, u64>> = HashMap::new();
    for (l, c) in lock.iter().zip(caller) {
        if let (Some(l), Some(c)) = (l.as_deref(), c.as_deref()) {
            *callers.entry(l).or_default().entry(c).or_default() += 1;
        }
    }
    callers
        .into_iter()
        .map(|(addr, cs)| {
            let func = |c: &str| c.split('+').next().unwrap_or(c).to_string();
            let lru = cs.keys().any(|c| {
                let f = func(c);
                LRU_LOCK_CALLERS
                    .iter()
                    .any(|l| f == *l || f.starts_with(&format!("{l}.")))
            });
            let name = if lru {
                format!("lru_lock {addr}")
            } else {
                // most waits, then the name, so ties give the same label every run
                let top = cs
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                    .map(|(c, _)| *c)
                    .unwrap_or("?");
                format!("lock {addr} of {top}")
            };
            (addr.to_string(), name)
        })
        .collect()
}

/// One panel: a lock's histogram per capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitPanel {
    /// Lock or caller.
    pub key: String,
    /// Per capture, waits per bin.
    pub counts: Vec<Vec<u64>>,
    /// Per capture: number of waits, median wait ns, total wait ns.
    pub stats: Vec<(u64, u64, u64)>,
}

/// The wait-time distribution chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitsChart {
    /// Title.
    pub title: String,
    /// Capture labels (legend), in colour order.
    pub labels: Vec<String>,
    /// Bin edges in ns (one more than bins), log-spaced.
    pub edges_ns: Vec<f64>,
    /// Panels, largest total wait first.
    pub panels: Vec<WaitPanel>,
}

impl WaitsChart {
    /// Histograms of the `top` keys with the largest total wait over all captures.
    pub fn new(sets: &[WaitSet], top: usize) -> Result<WaitsChart> {
        let all = sets.iter().flat_map(|s| s.waits.iter().map(|w| w.1));
        let (lo, hi) = all.fold((u64::MAX, 0), |(lo, hi), w| (lo.min(w), hi.max(w)));
        if hi == 0 {
            return Err(Error::Input(
                "no traced waits (lock:contention_begin/end pairs) to plot".into(),
            ));
        }
        let per = f64::from(BINS_PER_DECADE);
        let first = ((lo as f64).log10() * per).floor() as i32;
        let last = (((hi as f64).log10() * per).floor() as i32 + 1).max(first + 1);
        let edges_ns: Vec<f64> = (first..=last)
            .map(|k| 10f64.powf(f64::from(k) / per))
            .collect();
        // Bins are [edge_i, edge_i+1); found against the edges that are drawn, so a wait on
        // an edge lands in the bin the axis shows it in.
        let bin_of = |w: u64| -> usize {
            let above = edges_ns.partition_point(|&e| e <= w as f64);
            above.clamp(1, edges_ns.len() - 1) - 1
        };
        let mut totals: Vec<(String, u64)> = Vec::new();
        for s in sets {
            for (k, w) in &s.waits {
                match totals.iter_mut().find(|(tk, _)| tk == k) {
                    Some(t) => t.1 += w,
                    None => totals.push((k.clone(), *w)),
                }
            }
        }
        totals.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let nbins = edges_ns.len() - 1;
        let panels = totals
            .iter()
            .take(top.max(1))
            .map(|(key, _)| {
                let mut counts = Vec::new();
                let mut stats = Vec::new();
                for s in sets {
                    let mut h = vec![0u64; nbins];
                    let mut ws: Vec<u64> = s
                        .waits
                        .iter()
                        .filter(|(k, _)| k == key)
                        .map(|w| w.1)
                        .collect();
                    for &w in &ws {
                        h[bin_of(w)] += 1;
                    }
                    ws.sort_unstable();
                    let median = if ws.is_empty() { 0 } else { ws[ws.len() / 2] };
                    stats.push((ws.len() as u64, median, ws.iter().sum()));
                    counts.push(h);
                }
                WaitPanel {
                    key: key.clone(),
                    counts,
                    stats,
                }
            })
            .collect();
        let what = if sets.len() > 1 {
            sets.iter()
                .map(|s| s.label.as_str())
                .collect::<Vec<_>>()
                .join(" vs ")
        } else {
            sets.first().map(|s| s.label.clone()).unwrap_or_default()
        };
        Ok(WaitsChart {
            title: format!("Wait-time distribution per lock: {what}"),
            labels: sets.iter().map(|s| s.label.clone()).collect(),
            edges_ns,
            panels,
        })
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        p: &WaitPanel,
    ) -> DrawResult<DB> {
        let lo = self.edges_ns.first().copied().unwrap_or(1.0);
        let hi = self.edges_ns.last().copied().unwrap_or(10.0);
        let ymax = p.counts.iter().flatten().copied().max().unwrap_or(1).max(1) as f64 * 1.1;
        // Header: the lock, then one line per capture with its count, median and total.
        let lines = p.stats.len() as u32;
        let (head, body) = area.split_vertically(28 + 18 * lines);
        head.draw(&Text::new(
            super::ellipsize(&p.key, 80),
            (70, 6),
            (FONT, LABEL_PX).into_font().color(&INK),
        ))?;
        let font = (FONT, TICK_PX).into_font().color(&MUTED);
        for (s, (n, med, total)) in p.stats.iter().enumerate() {
            let label = super::ellipsize(self.labels.get(s).map_or("", String::as_str), 44);
            let text = if *n == 0 {
                format!("{label}: no waits")
            } else {
                format!(
                    "{label}: {n} wait{}, median {}, total {}",
                    if *n == 1 { "" } else { "s" },
                    perf_time(*med),
                    perf_time(*total)
                )
            };
            let y = 28 + 18 * s as i32;
            head.draw(&Rectangle::new(
                [(70, y + 2), (80, y + 12)],
                color_of(s).filled(),
            ))?;
            head.draw(&Text::new(text, (86, y), font.clone()))?;
        }
        let mut chart = ChartBuilder::on(&body)
            .margin(8)
            .margin_right(16)
            .x_label_area_size(40)
            .y_label_area_size(62)
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..ymax)?;
        let xfmt = |v: &f64| super::short_time(*v);
        // Counts are whole numbers: no ticks between them.
        let yfmt = |v: &f64| {
            if v.fract().abs() < 1e-9 {
                super::tick_count(*v)
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .house_style()
            // panels are small: axis descriptions one size up from ticks, not LABEL_PX
            .axis_desc_style((FONT, TICK_PX + 1).into_font().color(&INK))
            .x_labels(8)
            .x_label_formatter(&xfmt)
            .y_labels((ymax as usize + 1).min(6))
            .y_label_formatter(&yfmt)
            .x_desc("wait time (log scale)")
            .y_desc("waits (count)")
            .max_light_lines(2)
            .draw()?;
        let m = p.counts.len().max(1) as f64;
        for (s, counts) in p.counts.iter().enumerate() {
            let color = color_of(s);
            chart.draw_series(counts.iter().enumerate().filter(|(_, n)| **n > 0).map(
                |(b, n)| {
                    // Split the bin geometrically so each capture gets an equal-looking slot
                    // on the log axis.
                    let (e0, e1) = (self.edges_ns[b].ln(), self.edges_ns[b + 1].ln());
                    let step = (e1 - e0) / m;
                    let x0 = (e0 + step * s as f64 + step * 0.08).exp();
                    let x1 = (e0 + step * (s as f64 + 1.0) - step * 0.08).exp();
                    Rectangle::new([(x0, 0.0), (x1, *n as f64)], color.filled())
                },
            ))?;
        }
        Ok(())
    }
}

fn color_of(i: usize) -> RGBColor {
    [BASE, PATCHED, AFTER].get(i).copied().unwrap_or(INK)
}

impl Chart for WaitsChart {
    fn default_size(&self) -> (u32, u32) {
        let rows = self.panels.len().div_ceil(2).max(1) as u32;
        let cols = if self.panels.len() > 1 { 2 } else { 1 };
        (if cols == 2 { 1400 } else { 900 }, 110 + 380 * rows)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let note = format!(
            "{BINS_PER_DECADE} bins per decade of wait time; bars of one bin side by side per capture"
        );
        let entries: Vec<(String, RGBColor)> = self
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.clone(), color_of(i)))
            .collect();
        let area = heading(root, &self.title, 34, Some((&note, 4)), &entries)?;
        let cols = if self.panels.len() > 1 { 2 } else { 1 };
        let rows = self.panels.len().div_ceil(cols).max(1);
        let cells = area.split_evenly((rows, cols));
        for (cell, p) in cells.iter().zip(&self.panels) {
            self.draw_panel(cell, p)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_log_spaced_and_hold_every_wait() {
        let set = WaitSet {
            label: "a".into(),
            waits: vec![
                ("x".into(), 900),
                ("x".into(), 1_000),
                ("x".into(), 1_800),
                ("y".into(), 52_030),
            ],
        };
        let ch = WaitsChart::new(&[set], 4).unwrap_or_else(|e| panic!("{e}"));
        // 900 ns is in [10^(11/4), 10^(12/4)) = [562, 1000); 52.03 us in [31.6k, 56.2k)
        assert!((ch.edges_ns[0] - 562.34).abs() < 0.01);
        assert!((ch.edges_ns.last().copied().unwrap_or(0.0) - 56_234.1).abs() < 0.1);
        assert_eq!(ch.panels[0].key, "y");
        assert_eq!(ch.panels[1].counts[0][..3], [1, 1, 1]);
        assert_eq!(ch.panels[1].stats[0], (3, 1_000, 3_700));
        let all: u64 = ch.panels.iter().flat_map(|p| p.counts[0].iter()).sum();
        assert_eq!(all, 4);
    }
}
