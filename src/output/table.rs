//! Plain-text tables: right-aligned numbers, left-aligned text, two spaces between columns,
//! no trailing spaces, so they paste cleanly into a mail or a cover letter.

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// Render rows under headers.
pub fn render(headers: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|(h, _)| h.chars().count()).collect();
    for r in rows {
        for (i, cell) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(cell.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            match headers.get(i).map_or(Align::Left, |h| h.1) {
                Align::Right => {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(cell);
                }
                Align::Left => {
                    s.push_str(cell);
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(headers.iter().map(|h| h.0).collect(), &mut out);
    for r in rows {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_and_has_no_trailing_space() {
        let t = render(
            &[("name", Align::Left), ("n", Align::Right)],
            &[
                vec!["a".into(), "100".into()],
                vec!["bbbb".into(), "2".into()],
            ],
        );
        assert_eq!(t, "name    n\na     100\nbbbb    2\n");
    }
}
