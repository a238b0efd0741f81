//! Text for bitmap output, drawn with ab_glyph from the embedded DejaVu Sans.
//!
//! plotters 0.3.7's own ab_glyph text path drops each glyph's left side bearing and places
//! glyphs vertically by half the font size, so `1.00x` is drawn as `1·00x` and narrow letters
//! collide (`fdio` for `folio`). [`GlyphText`] wraps a backend and lays text out the usual
//! way instead: glyphs on one baseline at the font's ascent, advanced by their advance width
//! and kerning. Everything but text goes straight to the wrapped backend.

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use plotters::prelude::DrawingBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind, FontStyle,
};

/// A backend whose text is laid out by ab_glyph with correct metrics.
pub struct GlyphText<B> {
    inner: B,
    regular: FontRef<'static>,
    bold: FontRef<'static>,
}

/// The embedded fonts could not be read (a packaging bug).
#[derive(Debug, thiserror::Error)]
#[error("embedded DejaVu Sans font is invalid")]
pub struct BadFont;

impl<B: DrawingBackend> GlyphText<B> {
    /// Wrap `inner`.
    pub fn new(inner: B) -> Result<Self, BadFont> {
        Ok(GlyphText {
            inner,
            regular: FontRef::try_from_slice(dejavu::sans::regular()).map_err(|_| BadFont)?,
            bold: FontRef::try_from_slice(dejavu::sans::bold()).map_err(|_| BadFont)?,
        })
    }

    fn font(&self, style: FontStyle) -> &FontRef<'static> {
        match style {
            FontStyle::Bold => &self.bold,
            _ => &self.regular,
        }
    }
}

/// Caret positions of each glyph and the text's (width, height), for a font at `size` px.
fn layout(
    font: &FontRef<'static>,
    size: f32,
    text: &str,
) -> (Vec<(ab_glyph::GlyphId, f32)>, f32, f32) {
    let scaled = font.as_scaled(PxScale::from(size));
    let mut caret = 0.0f32;
    let mut prev = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            caret += scaled.kern(p, id);
        }
        glyphs.push((id, caret));
        caret += scaled.h_advance(id);
        prev = Some(id);
    }
    (glyphs, caret, scaled.ascent() - scaled.descent())
}

/// Text is ours; every other primitive goes to the wrapped backend. Only the primitives
/// plotters' bitmap backend draws its own way are forwarded: paths, circles and polygons use
/// the trait's default rasterizer, which draws them through `draw_line` and `draw_pixel`, as
/// the bitmap backend's own (default) versions do.
impl<B: DrawingBackend> DrawingBackend for GlyphText<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (_, w, h) = layout(self.font(style.style()), style.size() as f32, text);
        Ok((w.ceil() as u32, h.ceil() as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let size = style.size() as f32;
        let font = self.font(style.style()).clone();
        let (glyphs, w, h) = layout(&font, size, text);
        let (w, h) = (w.round() as i32, h.round() as i32);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -w,
            HPos::Center => -w / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -h / 2,
            VPos::Bottom => -h,
        };
        let trans = style.transform();
        let scale = PxScale::from(size);
        let ascent = font.as_scaled(scale).ascent();
        let mut pixels = Vec::new();
        for (id, x) in glyphs {
            let glyph = id.with_scale_and_position(scale, point(x, ascent));
            if let Some(outline) = font.outline_glyph(glyph) {
                let b = outline.px_bounds();
                outline.draw(|gx, gy, cover| {
                    if cover > 0.0 {
                        pixels.push((
                            b.min.x as i32 + gx as i32,
                            b.min.y as i32 + gy as i32,
                            cover,
                        ));
                    }
                });
            }
        }
        for (x, y, cover) in pixels {
            let (x, y) = trans.transform(x + dx, y + dy);
            let c = BackendColor {
                alpha: color.alpha * f64::from(cover.min(1.0)),
                rgb: color.rgb,
            };
            self.inner.draw_pixel((pos.0 + x, pos.1 + y), c)?;
        }
        Ok(())
    }
}
