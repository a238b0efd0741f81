//! Charts for mail and review: PNG or SVG files drawn with plotters.
//!
//! Text is drawn with an embedded font (DejaVu Sans, through plotters' `ab_glyph` feature), so
//! a PNG has readable labels on a machine without any font package (no fontconfig, no
//! `/usr/share/fonts`). SVG files carry the text as `<text>` elements and leave the font to
//! the viewer.
//!
//! Each chart kind is a typed struct (one module per kind) that implements [`Chart`]; the
//! structs are built from lockcast's own analyses ([`ab`] from a diff, [`waits`] and
//! [`timeline`] from the `contention` table, [`whatif`] from `lockcast whatif --json`) and can
//! also be filled in by callers directly. [`save`] renders one to a file, atomically.

pub mod ab;
pub mod ab_runs;
pub mod bars;
pub mod text;
pub mod timeline;
pub mod waits;
pub mod whatif;

use std::path::Path;
use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::output::write::atomic_write;

/// Image file format, from the output file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG (RGB, 8 bits per channel).
    Png,
    /// SVG (text kept as text).
    Svg,
}

impl ImageFormat {
    /// Format implied by `.png` / `.svg`.
    pub fn from_path(p: &Path) -> Option<Self> {
        match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "png" => Some(ImageFormat::Png),
            "svg" => Some(ImageFormat::Svg),
            _ => None,
        }
    }
}

/// A chart that can draw itself on any plotters backend.
pub trait Chart {
    /// Default image size in pixels (width, height) for this chart's content.
    fn default_size(&self) -> (u32, u32);

    /// Draw on `root` (already cleared to white).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// Result of drawing on backend `DB`.
pub type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The font family every chart uses; registered once from the embedded DejaVu Sans.
pub const FONT: &str = "sans-serif";

fn register_fonts() -> Result<()> {
    static DONE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        // ab_glyph looks fonts up by family name; without this no text can be drawn.
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "embedded DejaVu Sans regular is not a valid font".to_string())?;
        plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold())
            .map_err(|_| "embedded DejaVu Sans bold is not a valid font".to_string())
    })
    .clone()
    .map_err(Error::Plot)
}

/// Render `chart` to `path` (`.png` or `.svg`) at `size` (the chart's default when `None`).
/// The file is written to a temporary name and renamed when complete.
pub fn save(chart: &impl Chart, path: &Path, size: Option<(u32, u32)>) -> Result<()> {
    let format = ImageFormat::from_path(path).ok_or_else(|| {
        Error::Usage(format!(
            "{}: the image format comes from the extension: use .png or .svg",
            path.display()
        ))
    })?;
    let bytes = render(chart, format, size)?;
    atomic_write(path, |w| {
        w.write_all(&bytes)
            .map_err(|e| Error::io(path.display(), e))
    })
}

/// Render `chart` to the bytes of a PNG or SVG file.
pub fn render(
    chart: &impl Chart,
    format: ImageFormat,
    size: Option<(u32, u32)>,
) -> Result<Vec<u8>> {
    register_fonts()?;
    let (w, h) = size.unwrap_or_else(|| chart.default_size());
    if w < 200 || h < 150 || w > 10_000 || h > 10_000 {
        return Err(Error::Usage(format!(
            "image size {w}x{h}: use 200x150 to 10000x10000 pixels"
        )));
    }
    let plot_err = |e: String| Error::Plot(format!("drawing the chart: {e}"));
    match format {
        ImageFormat::Png => {
            let mut rgb = vec![0u8; w as usize * h as usize * 3];
            {
                let backend = text::GlyphText::new(BitMapBackend::with_buffer(&mut rgb, (w, h)))
                    .map_err(|e| Error::Plot(e.to_string()))?;
                let root = backend.into_drawing_area();
                root.fill(&WHITE).map_err(|e| plot_err(e.to_string()))?;
                chart.draw(&root).map_err(|e| plot_err(e.to_string()))?;
                root.present().map_err(|e| plot_err(e.to_string()))?;
            }
            encode_png(&rgb, w, h)
        }
        ImageFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
                root.fill(&WHITE).map_err(|e| plot_err(e.to_string()))?;
                chart.draw(&root).map_err(|e| plot_err(e.to_string()))?;
                root.present().map_err(|e| plot_err(e.to_string()))?;
            }
            Ok(svg.into_bytes())
        }
    }
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let err = |e: png::EncodingError| Error::Plot(format!("encoding PNG: {e}"));
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(err)?;
    writer.write_image_data(rgb).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(out)
}

/// Series colours: base / measured, patched / predicted, after (colour-blind safe pair from
/// the Okabe-Ito palette, plus a dark green).
pub const BASE: RGBColor = RGBColor(0, 114, 178);
/// Patched / predicted.
pub const PATCHED: RGBColor = RGBColor(230, 159, 0);
/// Measured after the change.
pub const AFTER: RGBColor = RGBColor(0, 158, 115);
/// Text and axes.
pub const INK: RGBColor = RGBColor(40, 40, 40);
/// Secondary text (ratios, notes).
pub const MUTED: RGBColor = RGBColor(90, 90, 90);

/// Font sizes, in pixels.
pub const TITLE_PX: u32 = 22;
/// Axis descriptions and panel captions.
pub const LABEL_PX: u32 = 16;
/// Tick labels, legends, value labels.
pub const TICK_PX: u32 = 13;

/// A unit for a time axis, chosen so the largest value reads as 1..1000.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeUnit {
    /// Nanoseconds per unit.
    pub ns: f64,
    /// Unit name as printed on the axis (`ns`, `µs`, `ms`, `s`).
    pub name: &'static str,
}

impl TimeUnit {
    /// The largest of ns / µs / ms / s that `max_ns` reaches (perf's rule, without minutes:
    /// an axis in minutes is harder to read than one in seconds).
    pub fn for_max(max_ns: f64) -> TimeUnit {
        const UNITS: [(f64, &str); 3] = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")];
        UNITS.iter().find(|(ns, _)| max_ns >= *ns).map_or(
            TimeUnit {
                ns: 1.0,
                name: "ns",
            },
            |&(ns, name)| TimeUnit { ns, name },
        )
    }

    /// `ns` expressed in this unit.
    pub fn of(self, ns: f64) -> f64 {
        ns / self.ns
    }
}

/// A tick on a log time axis, in the [`TimeUnit`] of its own value: `100 ns`, `1 µs`, `31.6 µs`
/// reads as `32 µs`.
pub fn short_time(ns: f64) -> String {
    let unit = TimeUnit::for_max(ns);
    let v = unit.of(ns);
    let s = if v >= 10.0 {
        format!("{v:.0}")
    } else {
        tick_value((v * 10.0).round() / 10.0)
    };
    format!("{s} {}", unit.name)
}

/// A number for an axis tick: no trailing zeros, thousands as `k`/`M` for counts.
pub fn tick_count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else {
        trim(format!("{v:.2}"))
    }
}

/// A number in a unit for an axis tick (`12.5`, `3`).
pub fn tick_value(v: f64) -> String {
    trim(format!("{v:.2}"))
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `folder/file` of an input path, for legends (`micro-16K-r1/script-ns.txt.gz`); a `#N`
/// table selector is kept except `#1`, which every single-table file has.
pub fn short_name(input: &str) -> String {
    let (path, block) = match input.rsplit_once('#') {
        Some((p, b)) if !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()) => (p, Some(b)),
        _ => (input, None),
    };
    let p = Path::new(path);
    let file = p.file_name().map(|f| f.to_string_lossy().into_owned());
    let dir = p
        .parent()
        .and_then(Path::file_name)
        .map(|f| f.to_string_lossy().into_owned());
    let name = match (dir, file) {
        (Some(d), Some(f)) => format!("{d}/{f}"),
        (None, Some(f)) => f,
        _ => path.to_string(),
    };
    match block {
        Some(b) if b != "1" => format!("{name}#{b}"),
        _ => name,
    }
}

/// Cut `s` to at most `max` characters with `…` in the middle, keeping both ends: the start
/// names the function, the end tells rows apart (`+0x58 #2`, the file name of a path).
pub fn ellipsize(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1);
    let head = keep - keep / 2;
    let tail = keep / 2;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    out
}

/// Draw `title` at the top of `root`, and in a band of `band_px` under it a line of
/// explanation (`note`: the text and its distance from the band's top) and the legend of
/// `entries`; returns the area below the band.
pub fn heading<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    band_px: u32,
    note: Option<(&str, i32)>,
    entries: &[(String, RGBColor)],
) -> std::result::Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let title_font = (FONT, TITLE_PX, FontStyle::Bold).into_font().color(&INK);
    let area = root.titled(title, title_font)?;
    let (band, rest) = area.split_vertically(band_px);
    let mut note_end = 0;
    if let Some((text, y)) = note {
        let font = (FONT, TICK_PX).into_font().color(&MUTED);
        note_end = 12
            + band
                .estimate_text_size(text, &font)
                .map_or(0, |s| s.0 as i32);
        band.draw(&Text::new(text.to_string(), (12, y), font))?;
    }
    legend(&band, entries, note_end)?;
    Ok(rest)
}

/// The look every chart's axes share: tick labels and axis descriptions in ink, light grey
/// grid lines.
pub trait HouseStyle {
    /// Apply it (calls after this one override it).
    fn house_style(&mut self) -> &mut Self;
}

impl<X: Ranged, Y: Ranged, DB: DrawingBackend> HouseStyle for MeshStyle<'_, '_, X, Y, DB> {
    fn house_style(&mut self) -> &mut Self {
        self.label_style((FONT, TICK_PX).into_font().color(&INK))
            .axis_desc_style((FONT, LABEL_PX).into_font().color(&INK))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
    }
}

/// Draw a legend box of coloured squares and labels in the top-right corner of `area`; when it
/// would reach left of `note_end` (the explanation line's right edge: long capture names), one
/// line lower, so the two never overlap.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBColor)],
    note_end: i32,
) -> DrawResult<DB> {
    let font = (FONT, TICK_PX).into_font().color(&INK);
    let (w, _) = area.dim_in_pixel();
    let widths: Vec<u32> = entries
        .iter()
        .map(|(l, _)| area.estimate_text_size(l, &font).map_or(80, |s| s.0))
        .collect();
    let total: u32 = widths.iter().map(|w| w + 34).sum();
    let mut x = w.saturating_sub(total + 10) as i32;
    let y = if note_end > 0 && x < note_end + 16 {
        24
    } else {
        8
    };
    for ((label, color), tw) in entries.iter().zip(widths) {
        area.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], color.filled()))?;
        area.draw(&Text::new(label.clone(), (x + 20, y), font.clone()))?;
        x += tw as i32 + 34;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_unit_follows_the_largest_value() {
        // ns, its unit, the log-axis tick of it
        let cases = [
            (100.0, "ns", "100 ns"),
            (999.0, "ns", "999 ns"),
            (1_000.0, "µs", "1 µs"),
            (3_162.3, "µs", "3.2 µs"),
            (31_623.0, "µs", "32 µs"),
            (18_730_000.0, "ms", "19 ms"),
            (643.8e9, "s", "644 s"),
        ];
        for (ns, unit, tick) in cases {
            assert_eq!(
                (TimeUnit::for_max(ns).name, short_time(ns)),
                (unit, tick.into())
            );
        }
        assert_eq!(TimeUnit::for_max(1_000.0).of(2_500.0), 2.5);
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick_count(14082.0), "14.1k");
        assert_eq!(tick_count(21_414_857.0), "21.41M");
        assert_eq!(tick_count(250.0), "250");
        assert_eq!(tick_value(2.50), "2.5");
        assert_eq!(ellipsize("folio_batch_move_lru+0x88", 10), "folio…0x88");
        assert_eq!(
            ellipsize("spinlock __page_cache_release.part.0+0x58 #2", 40),
            "spinlock __page_cach…ease.part.0+0x58 #2"
        );
    }

    #[test]
    fn format_comes_from_the_extension() {
        assert_eq!(
            ImageFormat::from_path(Path::new("a/b.PNG")),
            Some(ImageFormat::Png)
        );
        assert_eq!(
            ImageFormat::from_path(Path::new("b.svg")),
            Some(ImageFormat::Svg)
        );
        assert_eq!(ImageFormat::from_path(Path::new("b.jpg")), None);
        assert_eq!(
            short_name("fixtures/captures/micro-16K-r1/contention.txt#1"),
            "micro-16K-r1/contention.txt"
        );
        assert_eq!(short_name("a/seed.txt#2"), "a/seed.txt#2");
        assert_eq!(short_name("x.json"), "x.json");
    }
}
