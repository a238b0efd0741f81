//! Opening a capture: the one way in.
//!
//! [`open`] takes an input spec (a path, `-` for stdin, `path#N` for the N-th table of a file
//! holding several; gzip and zstd read transparently), detects the format once from the
//! parsers' table of formats ([`lockcast_parsers::detect::FORMATS`]) unless the caller names
//! it, and [`Opened::read`] gives back the typed capture: `perf lock` tables, an event stream,
//! or a call-graph tree. Every command (`parse`, `report`, `diff`, `plot`, `whatif`,
//! `validate`, the work what-ifs) reads its inputs through here, so an input lockcast cannot
//! tell gets the same answer everywhere.
//!
//! [`load`] builds on it for the commands that want `lock_stats` rows.

pub mod load;
pub mod since;
pub mod stream;
pub mod tables;
pub mod walk_progress;

use std::io::{BufRead, Read};

use indicatif::ProgressBar;

use lockcast_parsers::detect::{self, Content, Format, FORMATS};
use lockcast_parsers::event::EventRead;
use lockcast_parsers::lines::ReaderOptions;
use lockcast_parsers::{perf_data, perf_lock, perf_report};

use crate::error::{Error, Result};
use crate::input::{self, InputSpec};

/// How to read an input.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// The format, when the user named it (`--input-format`); detected otherwise.
    pub format: Option<Format>,
    /// Skip malformed lines (counted) instead of failing on the first.
    pub lenient: bool,
    /// `--kallsyms FILE`: the kernel symbols to name perf.data call chains with (plain, gzip or
    /// zstd), checked against the recording's kernel map (a kallsyms file has no build-id).
    pub kallsyms: Option<std::sync::Arc<std::path::PathBuf>>,
    /// perf.data: the framing check lets go of the pages it has passed even when the
    /// what-if's walk follows it (which otherwise finds them still resident, ~4% of a
    /// what-if's time on a 2 M-event recording). For a read that keeps only part of the
    /// capture (`whatif --time`), whose peak memory would else be the whole file's pages.
    pub let_go_checked: bool,
}

impl OpenOptions {
    /// Reader options for the parsers.
    pub fn reader(&self) -> ReaderOptions {
        let mut o = ReaderOptions::default();
        o.lenient = self.lenient;
        o
    }
}

/// An input opened and its format known, nothing parsed yet.
pub struct Opened {
    /// The input as given.
    pub spec: InputSpec,
    /// Its format.
    pub format: Format,
    /// The decompressed bytes.
    pub reader: Box<dyn BufRead + Send>,
    /// Progress over the compressed bytes (shown for large files on a terminal).
    pub progress: Option<ProgressBar>,
    /// The file itself when it is read uncompressed ([`input::Source::plain`]).
    pub plain: Option<std::fs::File>,
    /// Options it was opened with.
    pub opts: OpenOptions,
}

/// A capture, read as far as its format's records.
pub enum Capture {
    /// `perf lock` tables, parsed (they are small: one row per lock or caller).
    LockTables(perf_lock::Parsed),
    /// An event stream, read on demand.
    Events(Box<dyn EventRead + Send>),
    /// A `perf report --stdio` call-graph tree, read on demand.
    Callgraph(Box<perf_report::Reader<Box<dyn BufRead + Send>>>),
}

/// Open `spec` and tell its format. An input whose format cannot be told is an error naming
/// the formats tried and `--input-format`.
pub fn open(spec: &InputSpec, opts: &OpenOptions) -> Result<Opened> {
    open_source(spec, opts, input::open_with_progress(&spec.path)?)
}

fn open_source(spec: &InputSpec, opts: &OpenOptions, source: input::Source) -> Result<Opened> {
    let input::Source {
        mut reader,
        progress,
        plain,
    } = source;
    let format = match opts.format {
        Some(f) => f,
        None => {
            let prefix = reader.fill_buf().map_err(|e| Error::io(&spec.path, e))?;
            match detect::detect_bytes(prefix) {
                Some(f) => f,
                None => return Err(undetected(&spec.path, prefix)),
            }
        }
    };
    Ok(Opened {
        spec: spec.clone(),
        format,
        reader,
        progress,
        plain,
        opts: opts.clone(),
    })
}

/// The format of `spec`, without reading further (opens and closes the input, drawing no
/// progress bar; not for `-`).
pub fn format_of(spec: &InputSpec, opts: &OpenOptions) -> Result<Format> {
    Ok(open_source(spec, opts, input::open_quiet(&spec.path)?)?.format)
}

/// The parsers' "unknown format" error, with the first non-blank line so the user sees what
/// was given (pass `--input-format` to read it as a given format anyway).
fn undetected(path: &str, prefix: &[u8]) -> Error {
    let text = String::from_utf8_lossy(prefix);
    let first_line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string();
    Error::parse(path, lockcast_parsers::Error::UnknownFormat { first_line })
}

impl Opened {
    /// Read the capture as far as its format's records.
    pub fn read(self) -> Result<Capture> {
        let path = self.spec.path.clone();
        let ro = self.opts.reader();
        Ok(match self.format.content() {
            Content::LockTables => Capture::LockTables(
                self.format
                    .parse_tables(self.reader, &ro)
                    .map_err(|e| Error::parse(&path, e))?,
            ),
            Content::Events if self.format == Format::PerfData => {
                let o = perf_data_options(&self.opts)?;
                match self.plain {
                    Some(file) => {
                        // mapped, not read: the bar follows the record passes instead
                        let section = section_size(&file);
                        let rd = Box::new(perf_data::Reader::from_file(file, &path, o));
                        let follow = match (self.progress, section) {
                            (Some(pb), Some(n)) => walk_progress::Follow::start(pb, n, &path),
                            (pb, _) => {
                                if let Some(pb) = pb {
                                    pb.finish_and_clear();
                                }
                                None
                            }
                        };
                        match follow {
                            Some(f) => Capture::Events(Box::new(walk_progress::Followed {
                                inner: rd,
                                follow: Some(f),
                            })),
                            None => Capture::Events(rd),
                        }
                    }
                    None => {
                        Capture::Events(Box::new(perf_data::Reader::with_options(self.reader, o)))
                    }
                }
            }
            Content::Events => {
                let rd = self.format.open_events(self.reader, &ro).ok_or_else(|| {
                    Error::Input(format!(
                        "{path}: {} has no event reader",
                        self.format.as_str()
                    ))
                })?;
                Capture::Events(rd)
            }
            Content::Callgraph => {
                Capture::Callgraph(Box::new(perf_report::Reader::new(self.reader, &ro)))
            }
        })
    }

    /// The event reader of an event capture; any other content is an error saying what
    /// `needs` (e.g. "a replay") wanted.
    pub fn events(self, needs: &str) -> Result<Box<dyn EventRead + Send>> {
        let (path, format) = (self.spec.path.clone(), self.format);
        match self.read()? {
            Capture::Events(rd) => Ok(rd),
            _ => Err(Error::Input(format!(
                "{path}: {needs} needs an event trace ({}), found {}",
                event_format_names().join(", "),
                format.as_str()
            ))),
        }
    }
}

/// The data section's size of a perf.data `file`, from its header; `None` when it cannot be
/// read (the reader then says what is wrong) or perf did not finish writing it.
fn section_size(file: &std::fs::File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut header = [0u8; 56];
    file.read_exact_at(&mut header, 0).ok()?;
    perf_data::data_section_size(&header)
}

/// The perf.data reader's options, with the `--kallsyms` table when one is given.
fn perf_data_options(opts: &OpenOptions) -> Result<perf_data::Options> {
    let mut o = perf_data::Options {
        common: opts.reader(),
        let_go_checked: opts.let_go_checked,
        ..perf_data::Options::default()
    };
    if let Some(p) = &opts.kallsyms {
        let name = p.display().to_string();
        let mut text = String::new();
        input::open(&name)?
            .read_to_string(&mut text)
            .map_err(|e| Error::io(&name, e))?;
        let k = perf_data::kallsyms::Kallsyms::parse(&text);
        if k.is_empty() {
            return Err(Error::Input(format!(
                "--kallsyms {name}: expected /proc/kallsyms lines (`ffffffff81000000 T _text`), found no symbol with an address (read as an unprivileged user, kallsyms shows zeros)"
            )));
        }
        o.kallsyms = Some(k);
        o.kallsyms_from = Some(name);
    }
    Ok(o)
}

/// Names of the formats that hold events.
pub fn event_format_names() -> Vec<&'static str> {
    FORMATS
        .iter()
        .filter(|f| f.content == Content::Events)
        .map(|f| f.name)
        .collect()
}
