//! Event traces at scale: the input is cut into pieces of [`PIECE_BYTES`] at record boundaries
//! (a line where a new event starts, never inside a call chain or a multi-line payload), the
//! pieces are parsed on several threads into per-event frames ([`crate::frames::events`]), and
//! the frames are handed to a sink in input order, one batch per piece.
//!
//! Memory is bounded by the pieces in flight ([`IN_FLIGHT_PER_THREAD`] per thread), not by the
//! input: a multi-gigabyte trace written to Parquet holds a few pieces and their frames at a
//! time. A plain file is not read but mapped, its pieces ranges of the mapping ([`mapped`]).
//! Line numbers in errors are file lines (each piece's reader starts at its offset).

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use indicatif::ProgressBar;
use polars::prelude::DataFrame;

use lockcast_parsers::detect::Format;
use lockcast_parsers::{ftrace, perf_script, Diagnostic, Diagnostics};

use crate::error::{Error, Result};
use crate::frames::events::{EventCounts, EventTable, EventTables};

mod mapped;

/// Target size of one piece (also roughly one Parquet row group per table).
pub const PIECE_BYTES: usize = 8 << 20;

/// Pieces read but not yet handed to the sink, per thread.
pub const IN_FLIGHT_PER_THREAD: usize = 2;

/// How to read one input.
#[derive(Debug, Clone)]
pub struct Options {
    /// Input name for the `source` column and messages.
    pub source: String,
    /// An event format (a row of the parsers' format table with an event reader).
    pub format: Format,
    /// Tables to build.
    pub tables: Vec<EventTable>,
    /// Skip malformed lines and payloads (counted) instead of failing.
    pub lenient: bool,
    /// Parser threads (1 = parse on the calling thread).
    pub threads: usize,
    /// Piece size in bytes.
    pub piece_bytes: usize,
}

/// What one input gave.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Event counts over all pieces.
    pub counts: EventCounts,
    /// Malformed lines skipped (lenient).
    pub diagnostics: Diagnostics,
    /// First payload skipped (lenient).
    pub first_bad_payload: Option<Diagnostic>,
    /// Uncompressed bytes read.
    pub bytes: u64,
}

/// The frames of one piece (`T`: a frame, or what [`run`]'s `prepare` made of it).
struct PieceOut<T> {
    frames: Vec<(EventTable, T)>,
    counts: EventCounts,
    diagnostics: Diagnostics,
    first_bad: Option<Diagnostic>,
    header: Option<ftrace::Header>,
    bytes: u64,
}

/// Read `input` and call `sink` with each piece's frames, in input order.
pub fn run(
    input: Input,
    opts: &Options,
    progress: Option<&ProgressBar>,
    sink: &mut dyn FnMut(Vec<(EventTable, DataFrame)>) -> Result<()>,
) -> Result<Summary> {
    run_prepared(input, opts, progress, &|_, df| Ok(df), sink)
}

/// What [`run`] reads.
pub struct Input {
    /// The input as a stream (decompressed).
    pub reader: Box<dyn BufRead + Send>,
    /// The same input when it is a plain file (not compressed, not a pipe): then it is mapped
    /// and read in place, and `reader` is not read ([`mapped`]).
    pub plain: Option<std::fs::File>,
}

/// One piece's bytes.
pub(crate) enum Piece {
    /// Read from a stream into a buffer, given back to the reader once parsed.
    Read(Vec<u8>),
    /// A range of the mapped file.
    Mapped(mapped::Span),
}

impl Piece {
    /// The bytes as a buffer (a mapped piece's copied).
    fn into_vec(self) -> Vec<u8> {
        match self {
            Piece::Read(b) => b,
            Piece::Mapped(s) => s.to_vec(),
        }
    }
}

impl std::ops::Deref for Piece {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Piece::Read(b) => b,
            Piece::Mapped(s) => s,
        }
    }
}

/// Where pieces come from: a stream or a mapped file.
pub(crate) enum Pieces<R> {
    Stream(Chunker<R>),
    Mapped(mapped::MapCutter),
}

impl Pieces<Box<dyn BufRead + Send>> {
    /// Pieces of about `target` bytes of `input`, each starting at a line where `starts`
    /// (mapped in place when the input is a plain file; `name` is the file in messages).
    pub(crate) fn of(input: Input, name: &str, target: usize, starts: fn(&str) -> bool) -> Self {
        match input
            .plain
            .as_ref()
            .and_then(|f| mapped::TextMap::open(f, name))
        {
            Some(map) => Pieces::Mapped(mapped::MapCutter::new(map, target, starts)),
            None => Pieces::Stream(Chunker::new(input.reader, target, starts)),
        }
    }
}

impl<R: BufRead> Pieces<R> {
    /// The next piece and the number of input lines before it; `None` at end of input.
    pub(crate) fn next_piece(&mut self) -> std::io::Result<Option<(Piece, u64)>> {
        Ok(match self {
            Pieces::Stream(c) => c.next_piece()?.map(|(b, at)| (Piece::Read(b), at)),
            Pieces::Mapped(m) => m.next_piece().map(|(s, at)| (Piece::Mapped(s), at)),
        })
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        if let Pieces::Stream(c) = self {
            c.recycle(buf);
        }
    }

    /// The whole input as one piece, `first` being the first piece cut from it.
    fn whole(self, first: Piece) -> std::io::Result<Piece> {
        match self {
            Pieces::Stream(c) => {
                let whole = std::io::Cursor::new(first.into_vec()).chain(c.into_inner());
                let mut all = Vec::new();
                std::io::BufReader::new(whole).read_to_end(&mut all)?;
                Ok(Piece::Read(all))
            }
            Pieces::Mapped(m) => Ok(Piece::Mapped(m.whole())),
        }
    }
}

/// [`run`], with each frame passed through `prepare` on the thread that built it (a parser
/// thread when `opts.threads` > 1) before it goes to `sink`: work done there, such as encoding
/// the frame for its file, runs in parallel instead of on the sink's thread.
pub fn run_prepared<T: Send>(
    input: Input,
    opts: &Options,
    progress: Option<&ProgressBar>,
    prepare: &(dyn Fn(EventTable, DataFrame) -> Result<T> + Sync),
    sink: &mut dyn FnMut(Vec<(EventTable, T)>) -> Result<()>,
) -> Result<Summary> {
    let parse_piece =
        |data: &[u8], line_offset: u64, opts: &Options, header: Option<&ftrace::Header>| {
            parse_piece(data, line_offset, opts, header).and_then(|out| out.prepared(prepare))
        };
    let info = opts.format.info();
    let starts = match (info.starts_record, info.open_events) {
        (Some(s), _) => s,
        // an event format that cannot be cut at record starts is read by one reader
        (None, Some(_)) => |_: &str| false,
        (None, None) => {
            return Err(Error::Input(format!(
                "{}: {} holds no events",
                opts.source,
                opts.format.as_str()
            )))
        }
    };
    let mut chunker = Pieces::of(input, &opts.source, opts.piece_bytes, starts);
    // a mapped file is not read through the progress bar's reader: its position is set here
    let mapped = matches!(chunker, Pieces::Mapped(_));
    let io = |e| Error::io(&opts.source, e);
    let mut summary = Summary::default();
    let started = std::time::Instant::now();
    let mut absorb = |out: PieceOut<T>, summary: &mut Summary| -> Result<()> {
        summary.counts.events += out.counts.events;
        summary.counts.bad_payloads += out.counts.bad_payloads;
        summary.diagnostics.merge(out.diagnostics);
        if summary.first_bad_payload.is_none() {
            summary.first_bad_payload = out.first_bad;
        }
        summary.bytes += out.bytes;
        if let Some(pb) = progress {
            if mapped {
                pb.set_position(summary.bytes);
            }
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            pb.set_message(format!(
                "{}: {} events, {:.0} events/s",
                opts.source,
                summary.counts.events,
                summary.counts.events as f64 / secs
            ));
        }
        sink(out.frames)
    };

    // The first piece on this thread: it holds the preamble (ftrace header). An HTML systrace
    // file, and a format with no record starts to cut at, are read whole.
    let Some((first, offset)) = chunker.next_piece().map_err(io)? else {
        let out = parse_piece(b"", 0, opts, None)?;
        absorb(out, &mut summary)?;
        return Ok(summary);
    };
    if info.starts_record.is_none() || (opts.format == Format::Ftrace && looks_html(&first)) {
        let all = chunker.whole(first).map_err(io)?;
        let out = parse_piece(&all, 0, opts, None)?;
        return absorb(out, &mut summary).map(|()| summary);
    }
    let out = parse_piece(&first, offset, opts, None)?;
    let header = out.header.clone();
    absorb(out, &mut summary)?;
    drop(first);

    if opts.threads <= 1 {
        while let Some((piece, offset)) = chunker.next_piece().map_err(io)? {
            let out = parse_piece(&piece, offset, opts, header.as_ref())?;
            absorb(out, &mut summary)?;
        }
        return Ok(summary);
    }

    // Reader thread → workers → this thread, which puts pieces back in order. Credits bound
    // the pieces in flight: the reader takes one per piece, this thread returns it once the
    // piece's frames went to the sink.
    let in_flight = opts.threads * IN_FLIGHT_PER_THREAD + 1;
    let result: Result<()> = std::thread::scope(|scope| {
        let (credit_tx, credit_rx) = mpsc::sync_channel::<()>(in_flight);
        for _ in 0..in_flight {
            let _ = credit_tx.send(());
        }
        let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Piece, u64)>(opts.threads);
        let work_rx = Arc::new(Mutex::new(work_rx));
        let (done_tx, done_rx) = mpsc::channel::<(usize, Result<PieceOut<T>>)>();
        let (spare_tx, spare_rx) = mpsc::channel::<Vec<u8>>();
        let reader = scope.spawn(move || -> std::io::Result<()> {
            let mut idx = 0;
            while credit_rx.recv().is_ok() {
                while let Ok(b) = spare_rx.try_recv() {
                    chunker.recycle(b);
                }
                let Some((piece, offset)) = chunker.next_piece()? else {
                    break;
                };
                if work_tx.send((idx, piece, offset)).is_err() {
                    break;
                }
                idx += 1;
            }
            Ok(())
        });
        for _ in 0..opts.threads {
            let work_rx = Arc::clone(&work_rx);
            let done_tx = done_tx.clone();
            let spare_tx = spare_tx.clone();
            let header = header.as_ref();
            scope.spawn(move || loop {
                let job = match work_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok((idx, piece, offset)) = job else {
                    return;
                };
                let out = parse_piece(&piece, offset, opts, header);
                // the reader may have stopped; the buffer is then freed here (a mapped
                // piece's pages are given back here)
                if let Piece::Read(buf) = piece {
                    let _ = spare_tx.send(buf);
                }
                if done_tx.send((idx, out)).is_err() {
                    return;
                }
            });
        }
        drop(done_tx);
        drop(spare_tx);
        let mut next = 0usize;
        let mut waiting: BTreeMap<usize, PieceOut<T>> = BTreeMap::new();
        for (idx, out) in done_rx.iter() {
            waiting.insert(idx, out?);
            while let Some(out) = waiting.remove(&next) {
                absorb(out, &mut summary)?;
                next += 1;
                let _ = credit_tx.send(());
            }
        }
        drop(credit_tx);
        match reader.join() {
            Ok(r) => r.map_err(io),
            Err(_) => Err(Error::Input(format!(
                "{}: reader thread panicked",
                opts.source
            ))),
        }
    });
    result?;
    Ok(summary)
}

impl PieceOut<DataFrame> {
    fn prepared<T>(
        self,
        prepare: &(dyn Fn(EventTable, DataFrame) -> Result<T> + Sync),
    ) -> Result<PieceOut<T>> {
        let frames = self
            .frames
            .into_iter()
            .map(|(t, df)| prepare(t, df).map(|x| (t, x)))
            .collect::<Result<Vec<_>>>()?;
        Ok(PieceOut {
            frames,
            counts: self.counts,
            diagnostics: self.diagnostics,
            first_bad: self.first_bad,
            header: self.header,
            bytes: self.bytes,
        })
    }
}

/// Parse one piece into frames.
fn parse_piece(
    data: &[u8],
    line_offset: u64,
    opts: &Options,
    header: Option<&ftrace::Header>,
) -> Result<PieceOut<DataFrame>> {
    let mut ro = lockcast_parsers::lines::ReaderOptions::default();
    ro.lenient = opts.lenient;
    ro.line_offset = line_offset;
    let mut tables = EventTables::new(&opts.source, &opts.tables, opts.lenient);
    let err = |e| Error::parse(&opts.source, e);
    let (diagnostics, header) = match opts.format {
        Format::Ftrace => {
            let mut rd = match header {
                Some(h) => ftrace::Reader::resume(data, &ro, h),
                None => ftrace::Reader::new(data, &ro),
            };
            while let Some(e) = rd.next_event().map_err(err)? {
                tables.push(&e)?;
            }
            (rd.diagnostics().clone(), Some(rd.header().clone()))
        }
        // perf script text, samples and tracepoints: borrowed from the piece, nothing copied
        // per event or frame before it reaches the column builders
        Format::PerfScript => {
            let mut rd = perf_script::PieceReader::new(data, &ro);
            while let Some(s) = rd.next_sample().map_err(err)? {
                tables.push_ref(&s.view())?;
                rd.recycle(s);
            }
            (rd.diagnostics().clone(), None)
        }
        // every other event format: its reader from the format table
        format => {
            let mut rd = format.open_events(Box::new(data), &ro).ok_or_else(|| {
                Error::Input(format!(
                    "{}: {} holds no events",
                    opts.source,
                    format.as_str()
                ))
            })?;
            while let Some(e) = rd.next_event().map_err(err)? {
                tables.push(&e)?;
            }
            (rd.diagnostics().clone(), None)
        }
    };
    let first_bad = tables.first_bad().cloned();
    Ok(PieceOut {
        frames: tables.take()?,
        counts: tables.counts(),
        diagnostics,
        first_bad,
        header,
        bytes: data.len() as u64,
    })
}

/// The first non-blank line starts an HTML document (systrace).
fn looks_html(piece: &[u8]) -> bool {
    let head = &piece[..piece.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    let starts = |p: &str| t.get(..p.len()).is_some_and(|s| s.eq_ignore_ascii_case(p));
    starts("<!doctype html") || starts("<html")
}

/// Cuts a stream into pieces that end just before a line where a record starts.
pub(crate) struct Chunker<R> {
    inner: R,
    carry: Vec<u8>,
    /// Buffers of parsed pieces, given back to hold the next ones ([`Chunker::recycle`]).
    spare: Vec<Vec<u8>>,
    line_offset: u64,
    target: usize,
    starts: fn(&str) -> bool,
    eof: bool,
}

impl<R: BufRead> Chunker<R> {
    /// Pieces of about `target` bytes; `starts(line)` says where a piece may begin.
    fn new(inner: R, target: usize, starts: fn(&str) -> bool) -> Self {
        Chunker {
            inner,
            carry: Vec::new(),
            spare: Vec::new(),
            line_offset: 0,
            target: target.max(1),
            starts,
            eof: false,
        }
    }

    /// The unread rest of the input (the carried-over bytes are lost: call before any piece
    /// was cut, or after the first piece only when it ended at end of input).
    fn into_inner(self) -> std::io::Chain<std::io::Cursor<Vec<u8>>, R> {
        std::io::Cursor::new(self.carry).chain(self.inner)
    }

    fn fill(&mut self, buf: &mut Vec<u8>, upto: usize) -> std::io::Result<()> {
        // the piece's room at once: grown by `read_to_end`, an 8 MiB piece was copied by
        // realloc on its way up from the carried-over tail
        buf.reserve(upto.saturating_sub(buf.len()));
        while buf.len() < upto && !self.eof {
            let want = (upto - buf.len()) as u64;
            let n = (&mut self.inner).take(want).read_to_end(buf)?;
            if n == 0 {
                self.eof = true;
            }
        }
        Ok(())
    }

    /// Give back a parsed piece's buffer: the next piece is read into it (a stream's; a plain
    /// file is mapped instead, [`mapped`]). A fresh 8 MiB
    /// buffer per piece is first touched by the kernel's copy of the file: in a profile of a
    /// tracepoint text's parse on this project's VMs that copy was 19% of the samples with
    /// fresh buffers and 2.5% with given-back ones (wall time 3% less; that first touches
    /// cost more than the copy is the likely reason, not measured apart).
    fn recycle(&mut self, buf: Vec<u8>) {
        // two are enough to overlap reading with the workers' parsing
        if self.spare.len() < 2 && buf.capacity() >= self.target {
            self.spare.push(buf);
        }
    }

    /// The next piece and the number of input lines before it; `None` at end of input.
    fn next_piece(&mut self) -> std::io::Result<Option<(Vec<u8>, u64)>> {
        let mut buf = match self.spare.pop() {
            Some(mut b) => {
                b.clear();
                b.extend_from_slice(&self.carry);
                self.carry.clear();
                b
            }
            None => std::mem::take(&mut self.carry),
        };
        self.fill(&mut buf, self.target)?;
        if buf.is_empty() {
            return Ok(None);
        }
        // Look for a record start from a little before the target, so most pieces end near it.
        let mut pos = self.target.saturating_sub(self.target / 8).min(buf.len());
        let cut = loop {
            match scan_cut(&buf, &mut pos, self.eof, self.starts) {
                Scan::Cut(c) => break Some(c),
                Scan::NoCut => break None,
                Scan::More => {
                    let more = buf.len() + (1 << 20);
                    self.fill(&mut buf, more)?;
                }
            }
        };
        if let Some(cut) = cut {
            self.carry.clear();
            self.carry.extend_from_slice(&buf[cut..]);
            buf.truncate(cut);
        }
        let offset = self.line_offset;
        self.line_offset += count_lines(&buf);
        Ok(Some((buf, offset)))
    }
}

/// What [`scan_cut`] found.
enum Scan {
    /// A record starts at this byte, the first line after the search began that starts one.
    Cut(usize),
    /// None does up to the end of the input.
    NoCut,
    /// None does in the bytes at hand, and more may follow.
    More,
}

/// Look for the first line after `*pos` in `buf` that starts a record; `eof`: `buf` ends where
/// the input does. On [`Scan::More`], `*pos` is where the search goes on once more bytes are
/// in (the lines before it were looked at).
fn scan_cut(buf: &[u8], pos: &mut usize, eof: bool, starts: fn(&str) -> bool) -> Scan {
    let more = if eof { Scan::NoCut } else { Scan::More };
    loop {
        // the start of the next line after `pos`
        let Some(nl) = memchr(b'\n', &buf[*pos..]) else {
            return more;
        };
        let ls = *pos + nl + 1;
        let Some(le) = memchr(b'\n', &buf[ls..]).map(|i| ls + i) else {
            return more;
        };
        let line = &buf[ls..le];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if std::str::from_utf8(line).is_ok_and(starts) {
            return Scan::Cut(ls);
        }
        *pos = ls;
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    memchr::memchr(needle, hay)
}

/// Newlines in `b` (this runs over every input byte once, on the reader thread).
fn count_lines(b: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', b).count() as u64
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn chunker_cuts_before_record_starts_and_counts_lines() {
        let text = "a 1\n x\n x\na 2\n x\na 3\n";
        let mut c = Chunker::new(text.as_bytes(), 5, |l: &str| l.starts_with('a'));
        let mut pieces = Vec::new();
        while let Some((p, off)) = c.next_piece().unwrap() {
            pieces.push((String::from_utf8(p).unwrap(), off));
        }
        assert_eq!(
            pieces,
            vec![
                ("a 1\n x\n x\n".to_string(), 0),
                ("a 2\n x\n".to_string(), 3),
                ("a 3\n".to_string(), 5)
            ]
        );
    }

    /// Pieces read into given-back buffers are the pieces read into fresh ones: the carried
    /// tail goes first, and a buffer too small for a piece is not kept.
    #[test]
    fn recycled_buffers_hold_the_same_pieces() {
        let mut text = String::new();
        for i in 0..3000 {
            text.push_str(&format!("a {i}\n"));
            for _ in 0..i % 7 {
                text.push_str(" frame line\n");
            }
        }
        let pieces = |recycle: bool| {
            let mut c = Chunker::new(text.as_bytes(), 256, |l: &str| l.starts_with('a'));
            let mut out = Vec::new();
            while let Some((p, off)) = c.next_piece().unwrap() {
                assert!(p.starts_with(b"a "), "{off}");
                out.push((p.clone(), off));
                if recycle {
                    c.recycle(p);
                    c.recycle(Vec::with_capacity(8));
                }
            }
            assert!(c.spare.iter().all(|b| b.capacity() >= 256));
            out
        };
        let fresh = pieces(false);
        assert!(fresh.len() > 100, "{} pieces", fresh.len());
        assert_eq!(pieces(true), fresh);
        let whole: Vec<u8> = fresh.iter().flat_map(|(p, _)| p.iter().copied()).collect();
        assert_eq!(whole, text.as_bytes());
    }
}
