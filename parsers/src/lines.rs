//! The line reader every format module streams through.
//!
//! One reused buffer, 1-based line numbers, `\n` and `\r\n` endings, a hard cap on line length
//! so a 100 MB line costs no more memory than the cap, and UTF-8 checked per line (a bad line is
//! a [`LineError`], never a panic, so lenient mode can skip it).

use std::io::BufRead;

use crate::error::{cut, Diagnostic, Error, LineError, Location};

/// Default longest line kept: far above any real trace line (perf script frames with C++
/// symbols reach a few KiB) and small enough that a hostile line cannot exhaust memory.
pub const DEFAULT_MAX_LINE_LEN: usize = 1 << 20;

/// Options every reader in this crate takes (each format module re-exports it as `Options`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReaderOptions {
    /// Skip malformed lines, counting them in the reader's `Diagnostics`, instead of failing on
    /// the first one. Default: false.
    pub lenient: bool,
    /// Longest line accepted; longer lines are malformed without being buffered.
    /// Default: [`DEFAULT_MAX_LINE_LEN`].
    pub max_line_len: usize,
    /// Lines of the input before the text this reader gets: added to every line number, so a
    /// reader started on a later piece of a file (parallel parsing) reports file lines.
    /// Default: 0.
    pub line_offset: u64,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            lenient: false,
            max_line_len: DEFAULT_MAX_LINE_LEN,
            line_offset: 0,
        }
    }
}

/// A line-by-line reader over any `BufRead`.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    line_no: u64,
    max_line_len: usize,
    bytes_read: u64,
}

/// One line as read: its number and either its text or why it cannot be used.
pub enum Line<'a> {
    /// A valid line, without its line ending.
    Text(&'a str),
    /// A line that could not be decoded (invalid UTF-8, too long).
    Bad(Diagnostic),
}

impl<R: BufRead> LineReader<R> {
    /// Wrap a reader. Lines longer than [`DEFAULT_MAX_LINE_LEN`] are reported as bad.
    pub fn new(inner: R) -> Self {
        LineReader {
            inner,
            buf: Vec::with_capacity(256),
            line_no: 0,
            max_line_len: DEFAULT_MAX_LINE_LEN,
            bytes_read: 0,
        }
    }

    /// Wrap a reader with the line length cap and line offset of `opts`: how every format's
    /// reader starts.
    pub fn with_options(inner: R, opts: &ReaderOptions) -> Self {
        Self::new(inner)
            .with_max_line_len(opts.max_line_len)
            .with_line_offset(opts.line_offset)
    }

    /// Change the line length cap. Default: [`DEFAULT_MAX_LINE_LEN`].
    pub fn with_max_line_len(mut self, max: usize) -> Self {
        self.max_line_len = max.max(1);
        self
    }

    /// Count `n` lines as already read: the next line is number `n + 1`.
    pub fn with_line_offset(mut self, n: u64) -> Self {
        self.line_no = n;
        self
    }

    /// Number of the line last returned (0 before the first).
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// Bytes consumed so far, for progress reporting.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Read the next line. `Ok(None)` at end of input.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>, Error> {
        self.buf.clear();
        let mut total: u64 = 0;
        let mut too_long = false;
        loop {
            let chunk = self.inner.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            let (take, done) = match memchr(b'\n', chunk) {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            total += take as u64;
            if !too_long {
                let room = self.max_line_len + 2 - self.buf.len().min(self.max_line_len + 2);
                if take > room {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(&chunk[..take]);
                }
            }
            self.inner.consume(take);
            if done {
                break;
            }
        }
        if total == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        self.bytes_read += total;
        let location = Location {
            line: self.line_no,
            col: 1,
        };
        if too_long {
            return Ok(Some(Line::Bad(Diagnostic {
                location,
                kind: LineError::LineTooLong {
                    len: total,
                    max: self.max_line_len,
                },
                line_text: String::new(),
            })));
        }
        let mut end = self.buf.len();
        if end > 0 && self.buf[end - 1] == b'\n' {
            end -= 1;
        }
        if end > 0 && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        if end > self.max_line_len {
            return Ok(Some(Line::Bad(Diagnostic {
                location,
                kind: LineError::LineTooLong {
                    len: end as u64,
                    max: self.max_line_len,
                },
                line_text: String::new(),
            })));
        }
        match std::str::from_utf8(&self.buf[..end]) {
            Ok(s) => Ok(Some(Line::Text(s))),
            Err(e) => {
                let byte = e.valid_up_to();
                let text = String::from_utf8_lossy(&self.buf[..end]);
                Ok(Some(Line::Bad(Diagnostic {
                    location: Location {
                        line: self.line_no,
                        col: byte as u32 + 1,
                    },
                    kind: LineError::InvalidUtf8 { byte },
                    line_text: cut(&text, 120),
                })))
            }
        }
    }
}

/// The lines of a text already in memory (a piece of a larger input), borrowed from it: the
/// lines, numbers and [`Line::Bad`] cases [`LineReader`] gives for the same bytes, without
/// copying each line into a buffer. UTF-8 is checked once for the whole text; only when that
/// fails is it checked line by line, to name the bad line.
pub struct SliceLines<'a> {
    bytes: &'a [u8],
    /// The whole text, when it is valid UTF-8.
    text: Option<&'a str>,
    pos: usize,
    line_no: u64,
    max_line_len: usize,
}

impl<'a> SliceLines<'a> {
    /// The lines of `bytes`, with the line length cap and line offset of `opts`.
    pub fn new(bytes: &'a [u8], opts: &ReaderOptions) -> Self {
        SliceLines {
            bytes,
            text: std::str::from_utf8(bytes).ok(),
            pos: 0,
            line_no: opts.line_offset,
            max_line_len: opts.max_line_len.max(1),
        }
    }

    /// Number of the line last returned (0 before the first, plus the line offset).
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// The next line, `None` at the end of the text.
    pub fn next_line(&mut self) -> Option<Line<'a>> {
        let start = self.pos;
        let rest = self.bytes.get(start..).filter(|r| !r.is_empty())?;
        let (total, mut end) = match memchr(b'\n', rest) {
            Some(i) => (i + 1, start + i),
            None => (rest.len(), self.bytes.len()),
        };
        self.pos = start + total;
        self.line_no += 1;
        let location = Location {
            line: self.line_no,
            col: 1,
        };
        // as LineReader: over the cap with its ending, the length counts the ending
        if total > self.max_line_len + 2 {
            return Some(Line::Bad(Diagnostic {
                location,
                kind: LineError::LineTooLong {
                    len: total as u64,
                    max: self.max_line_len,
                },
                line_text: String::new(),
            }));
        }
        if end > start && self.bytes[end - 1] == b'\r' {
            end -= 1;
        }
        if end - start > self.max_line_len {
            return Some(Line::Bad(Diagnostic {
                location,
                kind: LineError::LineTooLong {
                    len: (end - start) as u64,
                    max: self.max_line_len,
                },
                line_text: String::new(),
            }));
        }
        // line ends are ASCII, so a valid text's lines are char boundaries
        if let Some(line) = self.text.and_then(|t| t.get(start..end)) {
            return Some(Line::Text(line));
        }
        let raw = &self.bytes[start..end];
        match std::str::from_utf8(raw) {
            Ok(s) => Some(Line::Text(s)),
            Err(e) => {
                let byte = e.valid_up_to();
                let text = String::from_utf8_lossy(raw);
                Some(Line::Bad(Diagnostic {
                    location: Location {
                        line: self.line_no,
                        col: byte as u32 + 1,
                    },
                    kind: LineError::InvalidUtf8 { byte },
                    line_text: cut(&text, 120),
                }))
            }
        }
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    memchr::memchr(needle, hay)
}

/// Test support shared by the format readers.
#[cfg(test)]
pub(crate) mod testing {
    use super::ReaderOptions;

    /// Mutated real input (bytes deleted, inserted, lines cut) must never panic, in either
    /// mode: 300 pieces of `base` with up to 20 bytes deleted or inserted each (a fixed
    /// xorshift seed, so every run reads the same inputs), read strictly and leniently with
    /// lines capped at 300 bytes. `count` reads one piece and returns how many items it got
    /// before the end or the first error, stopping after `piece.len() + 1`: more items than
    /// bytes means the reader loops.
    pub(crate) fn mutations_never_panic(
        base: &[u8],
        count: impl Fn(&[u8], &ReaderOptions) -> usize,
    ) {
        let alphabet: &[u8] = b" \t\n|-%()[]:./0123456789abcdef#x\xff\xc3\xa9";
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..300 {
            let start = (next() as usize) % base.len();
            let len = (next() as usize) % 4000;
            let mut buf = base[start..(start + len).min(base.len())].to_vec();
            for _ in 0..(next() % 20) {
                if buf.is_empty() {
                    break;
                }
                let at = (next() as usize) % buf.len();
                if next() % 2 == 0 {
                    buf.remove(at);
                } else {
                    buf.insert(at, alphabet[(next() as usize) % alphabet.len()]);
                }
            }
            for lenient in [false, true] {
                let opts = ReaderOptions {
                    lenient,
                    max_line_len: 300,
                    ..ReaderOptions::default()
                };
                assert!(count(&buf, &opts) <= buf.len());
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn collect(input: &[u8], max: usize) -> Vec<Result<String, LineError>> {
        let mut r = LineReader::new(input).with_max_line_len(max);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push(match l {
                Line::Text(s) => Ok(s.to_string()),
                Line::Bad(d) => Err(d.kind),
            });
        }
        out
    }

    #[test]
    fn slice_lines_agree_with_line_reader() {
        let input: &[u8] = b"a\r\nbb\n\n\xff\xfeok\n0123456789\n012345678901\r\n\r\nlast\r";
        for max in [1, 3, 10, 11, 12, 100] {
            let opts = ReaderOptions {
                max_line_len: max,
                line_offset: 7,
                ..ReaderOptions::default()
            };
            let mut want = Vec::new();
            let mut r = LineReader::with_options(input, &opts);
            loop {
                let n = r.line_no() + 1;
                let Some(l) = r.next_line().unwrap() else {
                    break;
                };
                want.push(show(l, n));
            }
            let mut got = Vec::new();
            let mut s = SliceLines::new(input, &opts);
            while let Some(l) = s.next_line() {
                got.push(show(l, s.line_no()));
            }
            assert_eq!(got, want, "max {max}");
            assert_eq!(want.len(), 8);
        }
        // a valid text takes the one-check path; the same lines
        let mut s = SliceLines::new(b"x\r\n\ny", &ReaderOptions::default());
        let mut got = Vec::new();
        while let Some(l) = s.next_line() {
            got.push(show(l, s.line_no()));
        }
        assert_eq!(got, ["1:x", "2:", "3:y"]);
    }

    fn show(l: Line<'_>, n: u64) -> String {
        match l {
            Line::Text(t) => format!("{n}:{t}"),
            Line::Bad(d) => format!("{n}:bad {:?} {:?} {}", d.location, d.kind, d.line_text),
        }
    }

    #[test]
    fn lines_crlf_and_missing_final_newline() {
        let got = collect(b"a\r\nb\n\nc", 100);
        assert_eq!(
            got,
            vec![
                Ok("a".into()),
                Ok("b".into()),
                Ok("".into()),
                Ok("c".into())
            ]
        );
    }

    #[test]
    fn lines_too_long_is_reported_and_skipped() {
        let got = collect(b"12345678\nok\n", 4);
        assert_eq!(got[0], Err(LineError::LineTooLong { len: 9, max: 4 }));
        assert_eq!(got[1], Ok("ok".into()));
    }

    #[test]
    fn lines_invalid_utf8_names_the_byte() {
        let got = collect(b"ab\xffc\nok\n", 100);
        assert_eq!(got[0], Err(LineError::InvalidUtf8 { byte: 2 }));
        assert_eq!(got[1], Ok("ok".into()));
    }
}
