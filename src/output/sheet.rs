//! A table held once and written several ways: aligned text for terminals, Markdown for web
//! review tools, CSV for spreadsheets. Each cell keeps the text people read (`18.73 ms`) and
//! the raw value programs read (`18730000`); CSV headers are the machine names
//! (`total_wait_ns`), the others show the human headers.

use super::table::{render, Align};

/// One column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Header shown to people (`total wait`).
    pub title: String,
    /// Header in CSV (`total_wait_ns`).
    pub key: String,
    /// Alignment in text and Markdown.
    pub align: Align,
}

impl Column {
    /// A column with a human title, a CSV key and an alignment.
    pub fn new(title: &str, key: &str, align: Align) -> Column {
        Column {
            title: title.to_string(),
            key: key.to_string(),
            align,
        }
    }
}

/// A column and how each of its cells is made from a row of type `T`.
pub type Field<T> = (Column, fn(&T) -> Cell);

/// A [`Field`]: the column (human title, CSV key, alignment) and its cell.
pub fn field<T>(title: &str, key: &str, align: Align, cell: fn(&T) -> Cell) -> Field<T> {
    (Column::new(title, key, align), cell)
}

/// A [`Field`] of a CSV-only sheet, where the title is the key.
pub fn csv_field<T>(key: &str, cell: fn(&T) -> Cell) -> Field<T> {
    field(key, key, Align::Left, cell)
}

/// One cell: what people read and what programs read.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Human text (units, `-` for missing).
    pub text: String,
    /// Raw value (integer ns, plain numbers, empty for missing).
    pub raw: String,
}

impl Cell {
    /// A cell whose text and raw value are the same.
    pub fn plain(s: impl Into<String>) -> Cell {
        let s = s.into();
        Cell {
            text: s.clone(),
            raw: s,
        }
    }

    /// A cell with separate human text and raw value.
    pub fn new(text: impl Into<String>, raw: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            raw: raw.into(),
        }
    }
}

/// Columns and rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sheet {
    /// Columns.
    pub columns: Vec<Column>,
    /// Rows of cells, one per column.
    pub rows: Vec<Vec<Cell>>,
}

impl Sheet {
    /// One column per field and one row per item of `rows`.
    pub fn of<'r, T: 'r>(fields: &[Field<T>], rows: impl IntoIterator<Item = &'r T>) -> Sheet {
        Sheet {
            columns: fields.iter().map(|f| f.0.clone()).collect(),
            rows: rows
                .into_iter()
                .map(|r| fields.iter().map(|f| (f.1)(r)).collect())
                .collect(),
        }
    }

    /// Aligned plain text (two spaces between columns, no trailing spaces).
    pub fn text(&self) -> String {
        let headers: Vec<(&str, Align)> = self
            .columns
            .iter()
            .map(|c| (c.title.as_str(), c.align))
            .collect();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| c.text.clone()).collect())
            .collect();
        render(&headers, &rows)
    }

    /// A GitHub-flavoured Markdown table (numbers right-aligned; `|` escaped).
    pub fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('\\', "\\\\").replace('|', "\\|");
        let mut out = String::new();
        let line = |cells: Vec<String>, out: &mut String| {
            out.push_str("| ");
            out.push_str(&cells.join(" | "));
            out.push_str(" |\n");
        };
        line(
            self.columns.iter().map(|c| esc(&c.title)).collect(),
            &mut out,
        );
        line(
            self.columns
                .iter()
                .map(|c| match c.align {
                    Align::Left => ":---".to_string(),
                    Align::Right => "---:".to_string(),
                })
                .collect(),
            &mut out,
        );
        for r in &self.rows {
            line(r.iter().map(|c| esc(&c.text)).collect(), &mut out);
        }
        out
    }

    /// CSV (RFC 4180: fields with commas, quotes or line breaks are quoted) with the raw
    /// values under the machine names; `header` = print the header line.
    pub fn csv(&self, header: bool) -> String {
        let field = |s: &str| {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut out = String::new();
        if header {
            let h: Vec<String> = self.columns.iter().map(|c| field(&c.key)).collect();
            out.push_str(&h.join(","));
            out.push('\n');
        }
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|c| field(&c.raw)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sheet() -> Sheet {
        Sheet {
            columns: vec![
                Column::new("caller", "caller", Align::Left),
                Column::new("total wait", "total_wait_ns", Align::Right),
            ],
            rows: vec![
                vec![
                    Cell::plain("folio_batch_move_lru+0x88"),
                    Cell::new("18.73 ms", "18730000"),
                ],
                vec![Cell::plain("a|b, \"c\""), Cell::new("-", "")],
            ],
        }
    }

    #[test]
    fn markdown_aligns_numbers_and_escapes_pipes() {
        assert_eq!(
            sheet().markdown(),
            "| caller | total wait |\n| :--- | ---: |\n| folio_batch_move_lru+0x88 | 18.73 ms |\n| a\\|b, \"c\" | - |\n"
        );
    }

    #[test]
    fn csv_has_raw_values_and_quotes() {
        assert_eq!(
            sheet().csv(true),
            "caller,total_wait_ns\nfolio_batch_move_lru+0x88,18730000\n\"a|b, \"\"c\"\"\",\n"
        );
    }
}
