//! Horizontal grouped bars, shared by the A/B and what-if charts: one row group per lock or
//! caller (names on the left, where long `sym+0xoff` callers fit), one bar per series, one
//! panel per metric side by side (contended count, total wait), an optional interval whisker
//! per bar and a note (the ratio) at the end of each group.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{heading, Chart, DrawResult, HouseStyle, FONT, INK, TICK_PX};

/// A vertical axis of `n` row slots, first row at the top, with one tick at the centre of each
/// slot (row `i` is centred at `n - i - 0.5`), so tick labels can name the rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowAxis {
    /// Number of rows.
    pub n: usize,
}

impl RowAxis {
    /// Centre of row `i` on the axis.
    pub fn centre(self, i: usize) -> f64 {
        self.n as f64 - i as f64 - 0.5
    }

    /// The row whose centre is `y`, if any.
    pub fn row_at(self, y: f64) -> Option<usize> {
        let i = (self.n as f64 - 0.5 - y).round();
        (0.0..self.n as f64).contains(&i).then_some(i as usize)
    }
}

impl Ranged for RowAxis {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn range(&self) -> Range<f64> {
        0.0..self.n.max(1) as f64
    }

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        // The same linear map as plotters' RangedCoordf64.
        let share = v / self.n.max(1) as f64;
        let len = limit.1 - limit.0;
        limit.0 + (f64::from(len) * share + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            (0..self.n).map(|i| self.centre(i)).collect()
        }
    }
}

/// One series (a colour in the legend).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Bar colour.
    pub color: RGBColor,
}

/// One metric's values for every group.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Axis description with the unit (`total wait (ms)`).
    pub axis: String,
    /// Per group, per series: the bar's length (None = no bar).
    pub values: Vec<Vec<Option<f64>>>,
    /// Per group, per series: an interval drawn as a whisker over the bar.
    pub whiskers: Vec<Vec<Option<(f64, f64)>>>,
    /// Per group: text after the group's longest bar (`8.11x`).
    pub notes: Vec<Option<String>>,
    /// Tick label formatter for the value axis.
    pub tick: fn(f64) -> String,
}

/// The whole figure.
#[derive(Debug, Clone)]
pub struct Bars {
    /// Figure title.
    pub title: String,
    /// A line under the title (inputs, what the ratio means).
    pub subtitle: Option<String>,
    /// Group names (top to bottom).
    pub keys: Vec<String>,
    /// Series, in the order of the bars inside a group.
    pub series: Vec<Series>,
    /// One panel per metric.
    pub panels: Vec<Panel>,
}

/// A chart drawn as grouped bars (the A/B and what-if charts): it is a [`Chart`] through its
/// [`Bars`].
pub trait AsBars {
    /// The figure as grouped bars.
    fn bars(&self) -> Bars;
}

impl<T: AsBars> Chart for T {
    fn default_size(&self) -> (u32, u32) {
        self.bars().default_size()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        self.bars().draw(root)
    }
}

/// Longest key shown in full; longer ones are cut with `…`.
const KEY_CHARS: usize = 40;

impl Bars {
    /// Image height that gives every bar at least ~9 px.
    pub fn default_size(&self) -> (u32, u32) {
        let per_group = 14 + 10 * self.series.len() as u32;
        let h = 150 + per_group * self.keys.len().max(1) as u32;
        (1200, h.clamp(420, 2400))
    }

    /// Draw the figure.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let entries: Vec<(String, RGBColor)> = self
            .series
            .iter()
            .map(|s| (s.label.clone(), s.color))
            .collect();
        let band = if self.subtitle.is_some() { 50 } else { 30 };
        let note = self.subtitle.as_deref().map(|s| (s, 2));
        let area = heading(root, &self.title, band, note, &entries)?;

        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|k| super::ellipsize(k, KEY_CHARS))
            .collect();
        let tick_font: TextStyle = (FONT, TICK_PX).into_font().into();
        let key_w = keys
            .iter()
            .map(|k| root.estimate_text_size(k, &tick_font).map_or(200, |s| s.0))
            .max()
            .unwrap_or(60)
            + 16;
        let (w, _) = area.dim_in_pixel();
        let n = self.panels.len().max(1) as u32;
        let each = w.saturating_sub(key_w) / n;
        let mut rest = area;
        for (i, panel) in self.panels.iter().enumerate() {
            let width = if i == 0 { key_w + each } else { each };
            let (this, next) = rest.split_horizontally(width);
            self.draw_panel(&this, panel, &keys, if i == 0 { key_w } else { 8 })?;
            rest = next;
        }
        Ok(())
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        panel: &Panel,
        keys: &[String],
        label_w: u32,
    ) -> DrawResult<DB> {
        let n = keys.len().max(1);
        let m = self.series.len().max(1);
        let max = panel
            .values
            .iter()
            .zip(&panel.whiskers)
            .flat_map(|(v, w)| {
                v.iter()
                    .flatten()
                    .copied()
                    .chain(w.iter().flatten().map(|&(_, hi)| hi))
            })
            .fold(0.0f64, f64::max);
        // Room on the right for the notes: a fifth of the axis, more where a long note (a
        // ratio with its interval) after a long bar would be cut at the panel's edge.
        let mut x_max = if max > 0.0 { max * 1.22 } else { 1.0 };
        let note_style: TextStyle = (FONT, TICK_PX, FontStyle::Bold).into_font().into();
        let plot_w = f64::from(area.dim_in_pixel().0.saturating_sub(label_w + 14).max(1));
        for (g, note) in panel.notes.iter().enumerate() {
            let Some(note) = note else { continue };
            let right = panel.values.get(g).into_iter().flatten().flatten().copied();
            let hi = panel
                .whiskers
                .get(g)
                .into_iter()
                .flatten()
                .flatten()
                .map(|w| w.1);
            let right = right.chain(hi).fold(0.0f64, f64::max);
            let px = area
                .estimate_text_size(note, &note_style)
                .map_or(0, |s| s.0);
            let share = (f64::from(px) + 14.0) / plot_w;
            if right > 0.0 && share < 0.7 {
                x_max = x_max.max(right / (1.0 - share));
            }
        }
        let axis = RowAxis { n };
        let centres: Vec<f64> = (0..n).map(|i| axis.centre(i)).collect();
        let mut chart = ChartBuilder::on(area)
            .margin_right(14)
            .margin_top(6)
            .x_label_area_size(44)
            .y_label_area_size(label_w)
            .build_cartesian_2d(0f64..x_max, axis)?;
        let key_of = |y: &f64| -> String {
            match axis.row_at(*y) {
                Some(i) if label_w > 8 => keys.get(i).cloned().unwrap_or_default(),
                _ => String::new(),
            }
        };
        let tick = panel.tick;
        let x_fmt = move |v: &f64| tick(*v);
        chart
            .configure_mesh()
            .house_style()
            .disable_y_mesh()
            .x_labels(6)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&key_of)
            .x_desc(panel.axis.clone())
            .x_max_light_lines(2)
            .draw()?;

        // Bars at most 26 px thick: with one or two groups a full band would be a slab.
        let px_per_group = f64::from(chart.plotting_area().dim_in_pixel().1) / n as f64;
        let band = (26.0 * m as f64 / px_per_group.max(1.0)).min(0.8);
        let bar = band / m as f64;
        let note_font = (FONT, TICK_PX, FontStyle::Bold).into_font().color(&INK);
        for (g, vals) in panel.values.iter().enumerate() {
            let top = centres[g] + band / 2.0;
            let mut right = 0.0f64;
            for (s, v) in vals.iter().enumerate() {
                let y1 = top - bar * s as f64;
                let y0 = y1 - bar * 0.9;
                if let Some(v) = v {
                    let color = self.series.get(s).map_or(INK, |x| x.color);
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(0.0, y0), (*v, y1)],
                        color.filled(),
                    )))?;
                    right = right.max(*v);
                }
                if let Some(Some((lo, hi))) = panel.whiskers.get(g).and_then(|w| w.get(s)) {
                    let yc = (y0 + y1) / 2.0;
                    let cap = bar * 0.3;
                    let style = INK.stroke_width(2);
                    chart.draw_series([
                        PathElement::new(vec![(*lo, yc), (*hi, yc)], style),
                        PathElement::new(vec![(*lo, yc - cap), (*lo, yc + cap)], style),
                        PathElement::new(vec![(*hi, yc - cap), (*hi, yc + cap)], style),
                    ])?;
                    right = right.max(*hi);
                }
            }
            if let Some(Some(note)) = panel.notes.get(g) {
                // Offset in pixels so the gap after the bar is the same at every scale.
                chart.draw_series(std::iter::once(
                    EmptyElement::at((right, centres[g]))
                        + Text::new(note.clone(), (6, -(TICK_PX as i32) / 2), note_font.clone()),
                ))?;
            }
        }
        Ok(())
    }
}
