//! `perf.data` files (`perf record`, file and pipe mode; tools/perf/Documentation/
//! perf.data-file-format.txt) read into [`Event`]s with `source` [`Source::PerfData`], the same
//! events `perf script --ns` prints for the file, so every table lockcast builds from the text
//! comes out of the binary file too.
//!
//! Records are read with the `linux-perf-data` crate (which orders them by time the way perf
//! does, round by round on `FINISHED_ROUND`); the tracing-data feature section's format
//! descriptions decode the tracepoints ([`tracing`]), and their `print fmt` renders the payload
//! text perf script prints ([`print_fmt`]), so [`crate::payload`] reads it unchanged.
//!
//! # What an event holds
//!
//! * `ts_ns`: the sample time in ns (`ts_res_ns` 1, as `--ns`); `cpu`; `tid`; `pid` (perf
//!   script's default output prints no pid: from its text `pid` is empty); `period` (perf script
//!   prints none for tracepoints: from its text it is empty; here a tracepoint's is 1).
//! * `comm`: the thread's name at the sample's time, from the COMM records (a thread created by
//!   a FORK record has its parent's until it sets its own); `:TID` for a thread with none, as perf.
//! * `line`: the 1-based number of the sample among the file's samples (a binary file has no lines).
//! * `payload`: the print fmt of the event rendered over its raw data, trailing blanks trimmed
//!   as perf script's reader sees them. An event whose print fmt this crate cannot evaluate prints
//!   `[FAILED TO PARSE] field=value ...` (raw fields; counted in a note).
//! * `callchain` (`-g`), innermost first: kernel frames named from the kallsyms of the
//!   recording's kernel ([`kallsyms::find`]: the build-id cache perf fills, or `/proc/kallsyms`
//!   when the running kernel has the recording's build-id; otherwise `[unknown]`, and a note says
//!   why), `sym+0xoff` and dso `[kernel.kallsyms]` as perf prints them; user frames as the
//!   address inside the mapped file (`ip - start + pgoff`, as perf prints it) with the file from
//!   the MMAP records as dso and symbol `[unknown]` (perf script names them from the ELF files on
//!   disk, which this reader does not open).
//!
//! # Memory
//!
//! perf.data keeps its feature sections (event names, tracing data, build-ids) after the data
//! section, and the record reader seeks to them, so the whole file is at hand before any record
//! is read. A stream (standard input, gzip, zstd) up to 32 MiB is read into memory whole; a
//! longer one is written to an unlinked temporary file and mapped ([`spill`]). A plain file is
//! mapped and never written ([`view`]); every pass over its data section (the framing check,
//! [`Reader::only`]'s compaction, the record reader, the what-if's walk in
//! [`Reader::typed_samples`]) lets go of the pages it has passed ([`bytes::Behind`]), so the
//! file's share of the resident set stays a few MiB whatever its size (`report` of a 197 MB
//! recording peaked at 248 MiB before, 86 since; of a 590 MB one at 721 and 141). Before the
//! what-if's walk the check leaves the pages for it (they would be faulted in again at once).
//!
//! # Reading some events only
//!
//! [`Reader::only`] (`report`, the lock tables: `contention_begin`/`_end`) leaves the samples
//! of the other events out of what the record reader reads, before it sorts them (`compact`,
//! when the file's round contract allows it), or else passes over them undecoded; they keep
//! their numbers, so the events given are the ones (`line` included) a whole read gives. The
//! kept records are copied as the compaction passes them (up to 16 MiB, in pieces let go as the
//! reader reads them), so the file's pages are not faulted in again for them.
//!
//! # Every sample at once
//!
//! [`Reader::typed_samples`] (the what-if replay: typed fields of seven tracepoints and
//! nothing else per event) walks the data section once without the record reader, when the
//! file's layout lets it (`bulk`): the same samples in the same order with the same fields and
//! payloads, at a fraction of the cost of an [`Event`] each. Other files go to the record
//! reader as before.
//!
//! # Damaged input
//!
//! Before any record is decoded the header and the framing of every record are checked: a file
//! shorter than its magic, a magic other than `PERFILE2`, an attr section past the end, a record
//! whose size is below its own header are [`Error::Binary`] naming the byte offset.
//! `perf record -z` files (PERF_RECORD_COMPRESSED, zstd) are decompressed by the record reader;
//! the framing check sees the compressed records, a damaged zstd stream is an error at the
//! sample it stopped after. A file cut short (its data section or feature
//! sections run past the end, or `perf record` was killed before it wrote the data size) is an
//! error in strict mode; in lenient mode the records before the cut are read, the partial record
//! is counted in [`Reader::diagnostics`], and the tracepoint formats, which were in the lost
//! feature sections, come from [`Options::tracing_fallback`] or the running kernel's tracefs
//! (what perf itself does), with a note saying so.

mod abi;
mod bulk;
mod bytes;
mod compact;
mod deferred;
mod framing;
pub mod kallsyms;
mod names;
mod pipe;
pub mod print_fmt;
mod spill;
pub mod tracing;
mod typed;
mod view;

pub use bulk::{InOrder, Place, Sampled, TypedParts, TypedSample, TypedSamples, NO_PAYLOAD};
pub use bytes::bytes_walked;
pub use deferred::Deferred;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Read};

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, Endianness, EventRecord, PerfEventType, RecordParseInfo, RecordType, SampleFormat,
};
use linux_perf_data::{DsoKey, Feature, PerfFileReader, PerfFileRecord, PerfRecordIter};

use crate::error::{Diagnostic, Diagnostics, Error, LineError, Location};

use crate::event::{CaptureHeader, Event, Frame, Source};
use crate::lines::ReaderOptions;
use abi::{
    PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_RECORD_AUXTRACE,
    PERF_RECORD_HEADER_BUILD_ID, PERF_RECORD_HEADER_FEATURE, PERF_RECORD_HEADER_TRACING_DATA,
    PERF_RECORD_MISC_MMAP_BUILD_ID, PERF_RECORD_MMAP,
};

use print_fmt::{PrintFmt, Record};
use tracing::TracingData;

/// Format name used in errors.
const FORMAT: &str = "perf.data";

/// The magic of a little-endian perf.data file (file and pipe mode).
pub const MAGIC: &[u8] = b"PERFILE2";

/// `struct perf_file_header` is this long in file mode (magic, size, attr_size, three sections
/// and the 256-bit feature bitmap); in pipe mode its `size` is 16.
const FILE_HEADER_LEN: usize = 104;
const PIPE_HEADER_LEN: u64 = 16;

const HEADER_EVENT_DESC: u64 = 12;
const HEADER_TRACING_DATA_BIT: u32 = 1;

/// Options of the perf.data reader beyond the common [`ReaderOptions`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Common options (`lenient`).
    pub common: ReaderOptions,
    /// Tracing data to decode tracepoints with when the file's own is lost (a file cut short).
    /// `None`: the running kernel's tracefs format files.
    pub tracing_fallback: Option<TracingData>,
    /// Kernel symbols to name frames with instead of looking for them ([`kallsyms::find`]).
    pub kallsyms: Option<kallsyms::Kallsyms>,
    /// Where [`Options::kallsyms`] came from (`--kallsyms FILE`): the reader then says it named
    /// the frames, and checks the table against the recording the only way a kallsyms file
    /// allows (it has no build-id): its `_text` must be where the recording's kernel map puts
    /// it (the `[kernel.kallsyms]_text` MMAP record, KASLR included), else it is refused.
    pub kallsyms_from: Option<String>,
    /// A stream (gzip, zstd, standard input) longer than this many bytes is written to an
    /// unlinked temporary file and mapped rather than read into memory ([`spill`]); `None`:
    /// 32 MiB.
    pub spill_above: Option<usize>,
    /// A data section longer than this many bytes is walked in parts side by side (the framing
    /// check, [`Reader::typed_samples`]); `None`: 16 MiB. Fuzzing sets 0 to split every input.
    pub split_above: Option<usize>,
    /// Let the framing check release the pages it has passed even for a typed walk
    /// ([`Reader::typed_fields`]) that follows it and would find them resident: the peak is
    /// then not the whole data section's pages, for a reader that keeps little of it.
    pub let_go_checked: bool,
}

impl Options {
    /// Options that read nothing from the machine: an empty tracing-data fallback (a file that
    /// lost its own decodes no payloads) and empty kernel symbols (no tracefs, no build-id
    /// cache). For damaged inputs read under test and fuzzing.
    pub fn offline(lenient: bool) -> Options {
        Options {
            common: ReaderOptions {
                lenient,
                ..Default::default()
            },
            tracing_fallback: Some(TracingData {
                long_size: 8,
                big_endian: false,
                formats: Default::default(),
                unparsed: Vec::new(),
            }),
            kallsyms: Some(kallsyms::Kallsyms::parse("")),
            kallsyms_from: None,
            spill_above: None,
            split_above: None,
            let_go_checked: false,
        }
    }
}

/// One event attribute of the file: what its samples are called and how to render them.
struct Attr {
    system: Option<String>,
    name: String,
    format: Option<deferred::Format>,
}

/// A user-space mapping from an MMAP/MMAP2 record.
#[derive(Clone)]
struct Map {
    start: u64,
    len: u64,
    pgoff: u64,
    path: String,
}

struct State {
    file: linux_perf_data::PerfFile,
    /// The record reader; `None` once [`Reader::typed_samples`] has read every sample and let
    /// the file's bytes go.
    iter: Option<PerfRecordIter<view::Source>>,
    ctx: Ctx,
    /// The file, shared with `iter`'s view, for [`Reader::typed_samples`]' own walk (`None`
    /// after it).
    buf: Option<Shared>,
    /// File mode: the data section's byte range (the records, checked whole).
    data: Option<(usize, usize)>,
    /// Record starts that split the data section into parts of about equal size
    /// ([`Checked::cuts`]).
    cuts: Vec<usize>,
    /// Per attr: its `sample_type`.
    sample_types: Vec<u64>,
}

/// The whole file in memory, read by the record reader's [`view::View`] and by
/// [`Reader::typed_samples`].
#[derive(Clone)]
struct Shared(std::sync::Arc<bytes::Bytes>);

struct Ctx {
    attrs: Vec<Attr>,
    attr_of_id: IdMap,
    big_endian: bool,
    comms: HashMap<i32, String>,
    maps: HashMap<i32, Vec<Map>>,
    kallsyms: Option<kallsyms::Kallsyms>,
    /// The kernel symbols of the frames named last.
    recent: kallsyms::Recent,
    samples: u64,
    unparsed: u64,
    header: CaptureHeader,
    /// Each attr's record layout: with `attr_of_id` (a file cut short) the record reader knows
    /// no ids and would parse every sample with the first attr's layout.
    parse_infos: Vec<RecordParseInfo>,
    /// Records of a known type whose body does not parse (skipped, said at the end).
    bad_records: u64,
    /// Some attr records call chains (perf script then prints every sample's ip).
    has_chains: bool,
    /// Per attr: whether its samples are given ([`Reader::only`]); `None`: all are.
    wanted: Option<Vec<bool>>,
    /// Samples passed over ([`Reader::only`]).
    skipped: u64,
    /// The numbers of the samples left after [`compact::drop_samples`], in order (empty: the
    /// file is whole, samples are numbered as they come).
    lines: Vec<u64>,
    next_line: usize,
    /// Fields decoded from the raw payload instead of rendering it ([`Reader::typed_fields`]).
    typed: Option<typed::Plan>,
    /// The last event's typed fields, when it had some (`typed_last`).
    values: Vec<i64>,
    typed_last: bool,
    /// The raw payloads of the samples given without their text ([`Reader::defer_payloads`]).
    deferred: Option<Deferred>,
    /// Payloads are neither rendered nor kept ([`Reader::leave_payloads`]).
    leave_payloads: bool,
    /// Events given since the last [`Reader::take_deferred`].
    given: u32,
}

/// Where the file's bytes come from.
enum Input<'a> {
    Stream(Box<dyn BufRead + Send + 'a>),
    /// A plain file and its name: mapped ([`bytes::Bytes::map`]), else read.
    File(std::fs::File, String),
}

/// All of `input`.
fn read_all(mut input: impl Read) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    input.read_to_end(&mut buf)?;
    Ok(buf)
}

/// Streaming reader of perf.data events.
pub struct Reader<'a> {
    input: Option<Input<'a>>,
    opts: Options,
    state: Option<State>,
    diagnostics: Diagnostics,
    finished: bool,
    /// [`Reader::next_event`] was called: [`Reader::typed_samples`] is too late.
    began: bool,
    only: Option<Vec<String>>,
    typed: Option<typed::Want>,
    /// The framing check and [`Reader::typed_samples`] walk a data section larger than this in
    /// `parts` parts, each on its own thread ([`SPLIT_ABOVE`]; one part per CPU, at most
    /// [`MAX_PARTS`]; tests set both).
    split_above: usize,
    parts: usize,
    /// At most this many bytes of kept records are copied when [`Reader::only`] takes samples
    /// out ([`compact::COPY_UP_TO`]; tests set it).
    copy_up_to: usize,
    /// A pipe-mode stream is shown to the record reader in time order when it can be
    /// ([`pipe::plan`]); tests turn it off to compare with the stream as it is.
    pipe_in_order: bool,
    /// What becomes of each sample's payload.
    payloads: Payloads,
}

/// What the reader does with a sample's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Payloads {
    /// Rendered into the event (the default).
    Rendered,
    /// Kept raw for the caller to render ([`Reader::defer_payloads`]).
    Deferred,
    /// Neither rendered nor kept ([`Reader::leave_payloads`]).
    Left,
}

/// A data section above this many bytes is walked in parts side by side, by the framing check
/// ([`framing`]) and by [`Reader::typed_samples`]. The typed walk of a 193 MB recording's took
/// 95 ms on one thread, so below this it takes about 8 ms (likely, not measured), little to
/// split.
const SPLIT_ABOVE: usize = 16 << 20;

/// At most this many parts (and threads) for the walks split at [`SPLIT_ABOVE`].
const MAX_PARTS: usize = 8;

impl<'a> Reader<'a> {
    /// Wrap an input holding a perf.data file (read whole on the first [`Reader::next_event`]).
    pub fn new(input: Box<dyn BufRead + Send + 'a>, opts: &ReaderOptions) -> Self {
        Self::with_options(
            input,
            Options {
                common: opts.clone(),
                ..Options::default()
            },
        )
    }

    /// [`Reader::new`] with perf.data options.
    pub fn with_options(input: Box<dyn BufRead + Send + 'a>, opts: Options) -> Self {
        Self::from_input(Input::Stream(input), opts)
    }

    /// [`Reader::with_options`] on a plain (uncompressed) perf.data file, mapped rather than
    /// read into memory when the system allows (the same records, without a copy of the file).
    /// `name`: the file as the user named it, for the message if another process shortens it
    /// while it is mapped ([`crate::truncation`]).
    pub fn from_file(file: std::fs::File, name: &str, opts: Options) -> Self {
        Self::from_input(Input::File(file, name.to_string()), opts)
    }

    fn from_input(input: Input<'a>, opts: Options) -> Self {
        let split_above = opts.split_above.unwrap_or(SPLIT_ABOVE);
        Reader {
            input: Some(input),
            opts,
            state: None,
            diagnostics: Diagnostics::default(),
            finished: false,
            began: false,
            only: None,
            typed: None,
            split_above,
            parts: std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_PARTS)),
            copy_up_to: compact::COPY_UP_TO,
            pipe_in_order: true,
            payloads: Payloads::Rendered,
        }
    }

    /// Records skipped (lenient) and notes (which kallsyms named the frames, lost events).
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// The recording's header context ([`CaptureHeader`]); `None` before the first
    /// [`Reader::next_event`] (the file is opened then) or when it could not be opened.
    pub fn header(&self) -> Option<&CaptureHeader> {
        self.state.as_ref().map(|s| &s.ctx.header)
    }

    /// Give only the samples of events named in `names` (without system: `contention_begin`);
    /// the others are counted (their sample numbers, the events' `line`, stay those of the
    /// whole file) but neither decoded nor rendered: what a reader of the lock events alone
    /// (`report`) would otherwise spend most of its time on.
    pub fn only(&mut self, names: &[&str]) {
        self.only = Some(names.iter().map(|n| n.to_string()).collect());
        if let Some(st) = self.state.as_mut() {
            st.ctx.wanted = wanted_attrs(&st.ctx.attrs, self.only.as_deref());
        }
    }

    /// Decode the integer fields `fields` of the tracepoints named (`system:name` or `name`)
    /// from each sample's raw payload by the offsets, sizes and signedness of the event's own
    /// format description ([`typed`]) instead of rendering its print fmt: such events come with
    /// an empty `payload` and `comm`, and their values, in the order asked, are
    /// [`Reader::fields`]. An event whose format lacks a field (or has it as no 1/2/4/8-byte
    /// integer) is an error at its first sample, a payload shorter than a field's end an error
    /// at that sample. An event without a format (tracing data lost) keeps its text payload.
    pub fn typed_fields(&mut self, want: &[(&str, &[&str])]) {
        let want: typed::Want = want
            .iter()
            .map(|(n, f)| (n.to_string(), f.iter().map(|f| f.to_string()).collect()))
            .collect();
        if let Some(st) = self.state.as_mut() {
            st.ctx.typed = Some(typed::Plan::resolve(&want, &st.ctx.attrs));
        }
        self.typed = Some(want);
    }

    /// The typed fields ([`Reader::typed_fields`]) of the event [`Reader::next_event`] gave
    /// last, `None` when it is not one of those asked for.
    pub fn fields(&self) -> Option<&[i64]> {
        let c = &self.state.as_ref()?.ctx;
        c.typed_last.then_some(c.values.as_slice())
    }

    /// Samples passed over because of [`Reader::only`].
    pub fn skipped(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.ctx.skipped)
    }

    /// The next event, `Ok(None)` at the end of the file.
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        let mut e = Event::empty(Source::PerfData);
        Ok(self.next_event_into(&mut e)?.then_some(e))
    }

    /// [`Reader::next_event`] into `out`, reusing its strings and call chain (`false` at the
    /// end, `out` then unspecified): a reader that gives back the events it was handed makes
    /// no allocation per event for their command and event names.
    pub fn next_event_into(&mut self, out: &mut Event) -> Result<bool, Error> {
        self.began = true;
        if self.finished {
            return Ok(false);
        }
        self.ensure_open()?;
        let Some(st) = self.state.as_mut() else {
            return Ok(false);
        };
        match st.next_into(out) {
            Ok(true) => Ok(true),
            Ok(false) => {
                self.finish();
                Ok(false)
            }
            Err(e) => {
                self.finished = true;
                Err(e)
            }
        }
    }

    /// Every sample of the file at once, in time order ([`TypedParts::iter`]), with the typed
    /// fields asked for ([`Reader::typed_fields`], which must come first), for a reader that
    /// needs little else of each event (no command names, and of a call chain the frames'
    /// symbols alone, [`TypedParts::chain_symbols`]: a typed event's `comm` and `payload` are
    /// empty on [`Reader::next_event`] too). Call instead of the first [`Reader::next_event`];
    /// afterwards the reader is at its end ([`Reader::header`] complete, the notes said).
    /// `Ok(None)`: this file needs the record reader (pipe mode, compressed records, read
    /// values, a file cut short, [`Reader::only`],
    /// or anything the one-pass walk does not expect): read it with [`Reader::next_event`],
    /// which then starts from the beginning. The same samples, order, fields and payloads
    /// either way.
    pub fn typed_samples(&mut self) -> Result<Option<TypedParts>, Error> {
        if self.began || self.finished || self.typed.is_none() || self.only.is_some() {
            return Ok(None);
        }
        self.ensure_open()?;
        let Some(st) = self.state.as_mut() else {
            return Ok(None);
        };
        let Some(plan) = st.ctx.typed.as_ref() else {
            return Ok(None);
        };
        let Some(Walkable {
            bytes,
            from,
            data,
            ids,
        }) = walkable(st)
        else {
            return Ok(None);
        };
        // The walk and the ordering are most of the what-if's reading time and one thread's
        // work; a large section is walked in parts side by side (the check found record
        // starts that split it evenly), each part put in order on its thread (its CPUs' runs,
        // or sorted: `bulk::runs`), and the parts read in order where they are used.
        let cuts: Vec<usize> = match data.len() > self.split_above {
            true => st
                .cuts
                .iter()
                .filter(|&&c| c > from && c < from + data.len())
                .map(|&c| c - from)
                .collect(),
            false => Vec::new(),
        };
        let parts: Vec<(usize, usize)> = std::iter::once(0)
            .chain(cuts.iter().copied())
            .zip(cuts.iter().copied().chain([data.len()]))
            .collect();
        let (sample_types, attrs) = (&st.sample_types, &st.ctx.attrs);
        let n_parts = parts.len();
        let walk_part = |(a, b): (usize, usize)| {
            let mut counts = bulk::Counts::default();
            // What the what-if builds from the samples is about as large as the file (a heap
            // profile of a 197 MB recording: 65 MB of events, then 109 MB of rebuilt holds),
            // so the pages the walk has passed go: the file's pages and the samples are then
            // not resident together.
            let mut behind = bytes::Behind::new(from + a, from + b);
            let mut out = bulk::walk(
                &data[a..b],
                sample_types,
                attrs,
                &ids,
                plan,
                &mut counts,
                |pos| behind.at(bytes, from + a + pos),
            )?;
            // the part's last stretch goes too, and is counted ([`bytes::bytes_walked`])
            behind.done(bytes, from + b);
            let runs = bulk::runs(&mut out, bulk::MAX_RUNS / n_parts);
            Some(((out, runs), counts))
        };
        let walked: Vec<Option<((bulk::TypedSamples, bulk::Runs), bulk::Counts)>> =
            std::thread::scope(|sc| {
                let others: Vec<_> = parts[1..]
                    .iter()
                    .map(|&r| {
                        (
                            r,
                            std::thread::Builder::new().spawn_scoped(sc, move || walk_part(r)),
                        )
                    })
                    .collect();
                let first = walk_part(parts[0]);
                std::iter::once(first)
                    .chain(others.into_iter().map(|(r, h)| match h {
                        Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                        // no thread to be had: walked here
                        Err(_) => walk_part(r),
                    }))
                    .collect()
            });
        let Some(walked) = walked.into_iter().collect::<Option<Vec<_>>>() else {
            return Ok(None);
        };
        let mut counts = bulk::Counts::default();
        for (_, c) in &walked {
            counts.add(c);
        }
        let walked = walked.into_iter().map(|(o, _)| o).collect();
        let Some(mut out) = bulk::TypedParts::new(walked) else {
            return Ok(None);
        };
        // the frames' names: the reader has no more use for its table
        out.kallsyms = st.ctx.kallsyms.take();
        let h = &mut st.ctx.header;
        h.lost_records = h.lost_records.saturating_add(counts.lost_records);
        h.lost_kernel = h.lost_kernel.saturating_add(counts.lost_kernel);
        h.lost_samples = h.lost_samples.saturating_add(counts.lost_samples);
        st.ctx.unparsed += counts.unparsed;
        st.ctx.samples = out.len() as u64;
        // Every sample is decoded into `out`, which owns what it holds
        self.walked_whole();
        Ok(Some(out))
    }

    /// Each task's command name at its first sample (tid → the `comm` [`Reader::next_event`]
    /// gives that sample), from one pass over the file that parses only COMM and FORK records
    /// and each sample's tid and time ([`names`]). Call instead of the first
    /// [`Reader::next_event`]; afterwards the reader is at its end. `Ok(None)`: this file
    /// needs the record reader (pipe mode, compressed records, read values, COMM and FORK
    /// records without a timestamp, or anything the walk does not expect): read it with
    /// [`Reader::next_event`], which then starts from the beginning.
    pub fn task_names(&mut self) -> Result<Option<BTreeMap<i32, String>>, Error> {
        if self.began || self.finished || self.only.is_some() {
            return Ok(None);
        }
        self.ensure_open()?;
        let Some(st) = self.state.as_mut() else {
            return Ok(None);
        };
        // where the record reader takes a COMM or FORK record's timestamp from: one place
        // for every attr, or the attr of each record would have to be found first
        let mut at = st
            .ctx
            .parse_infos
            .iter()
            .map(|p| p.nonsample_record_time_offset_from_end);
        let Some(Some(time_from_end)) = at.next() else {
            return Ok(None);
        };
        if at.any(|t| t != Some(time_from_end)) {
            return Ok(None);
        }
        let Some(w) = walkable(st) else {
            return Ok(None);
        };
        let Some(names) = names::walk(w.data, &st.sample_types, &w.ids, usize::from(time_from_end))
        else {
            return Ok(None);
        };
        self.walked_whole();
        Ok(Some(names))
    }

    /// After a one-pass walk of the whole file: the reader is at its end, and the file's
    /// bytes go (as large as the file, or larger decompressed).
    fn walked_whole(&mut self) {
        if let Some(st) = self.state.as_mut() {
            st.iter = None;
            st.buf = None;
        }
        self.began = true;
        self.finish();
    }

    /// Read the input whole on first use ([`Reader::open`]); an error there ends the reader.
    fn ensure_open(&mut self) -> Result<(), Error> {
        if let Some(input) = self.input.take() {
            match self.open(input) {
                Ok(mut s) => {
                    match self.payloads {
                        Payloads::Rendered => {}
                        Payloads::Deferred => {
                            let by_attr = s.ctx.attrs.iter().map(|a| a.format.clone()).collect();
                            s.ctx.deferred = Some(Deferred::new(deferred::Formats {
                                by_attr: std::sync::Arc::new(by_attr),
                                big_endian: s.ctx.big_endian,
                            }));
                        }
                        Payloads::Left => s.ctx.leave_payloads = true,
                    }
                    self.state = Some(s)
                }
                Err(e) => {
                    self.finished = true;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// At the end of the file: the header is complete, and the notes say what was skipped,
    /// lost or printed raw.
    fn finish(&mut self) {
        self.finished = true;
        let Some(st) = self.state.as_mut() else {
            return;
        };
        st.ctx.header.complete = true;
        if let Some(n) = st.ctx.header.describe() {
            self.diagnostics.notes.push(n);
        }
        let (lost, unparsed, bad) = (
            st.ctx.header.lost_events(),
            st.ctx.unparsed,
            st.ctx.bad_records,
        );
        if bad > 0 {
            self.diagnostics.notes.push(format!(
                "{bad} record(s) whose body does not parse were skipped"
            ));
        }
        if lost > 0 {
            self.diagnostics.notes.push(format!(
                "the recording lost {lost} event(s) ({} PERF_RECORD_LOST record(s)): perf's buffer overflowed, results undercount",
                st.ctx.header.lost_records
            ));
        }
        // with the payloads deferred, the count is complete once the caller rendered them
        if unparsed > 0 && st.ctx.deferred.is_none() {
            self.diagnostics.notes.push(unparsed_note(unparsed));
        }
    }

    /// Give samples without their payload text, keeping their raw bytes to be rendered by the
    /// caller, on another thread ([`deferred`]): after each run of events, take their payloads
    /// with [`Reader::take_deferred`] and render them into those events
    /// ([`Deferred::render_into`]); at the end, report what was printed raw with
    /// [`Reader::deferred_done`]. Call before the first [`Reader::next_event`]; `false` (and
    /// nothing changes) after it.
    pub fn defer_payloads(&mut self) -> bool {
        if self.began {
            return false;
        }
        self.payloads = Payloads::Deferred;
        true
    }

    /// Give samples with an empty payload, neither rendered nor kept: for a caller that reads
    /// no payload (the task names of `export perfetto`), which then pays for none. Call before
    /// the first [`Reader::next_event`]; `false` (and nothing changes) after it.
    pub fn leave_payloads(&mut self) -> bool {
        if self.began {
            return false;
        }
        self.payloads = Payloads::Left;
        true
    }

    /// The payloads deferred since the last call, for the events given since then (`None`:
    /// none were, or payloads are not deferred).
    pub fn take_deferred(&mut self) -> Option<Deferred> {
        let st = self.state.as_mut()?;
        st.ctx.given = 0;
        let d = st.ctx.deferred.as_mut()?;
        let next = d.next();
        let taken = std::mem::replace(d, next);
        (!taken.is_empty()).then_some(taken)
    }

    /// Every deferred payload was rendered, `unparsed` of them raw (the sum of what
    /// [`Deferred::render_into`] returned): the notes say so, as they do without deferring.
    pub fn deferred_done(&mut self, unparsed: u64) {
        let Some(st) = self.state.as_mut() else {
            return;
        };
        if st.ctx.deferred.is_none() {
            return;
        }
        let total = st.ctx.unparsed + unparsed;
        if total > 0 {
            self.diagnostics.notes.push(unparsed_note(total));
        }
    }

    fn open(&mut self, input: Input<'a>) -> Result<State, Error> {
        let mut buf = match input {
            Input::File(f, name) => match bytes::Bytes::map(&f, Some(&name)) {
                Some(b) => b,
                None => {
                    // from the start, whatever the caller read of it
                    let mut f = f;
                    std::io::Seek::rewind(&mut f)?;
                    bytes::Bytes::Owned(read_all(f)?)
                }
            },
            Input::Stream(r) => {
                spill::read(r, self.opts.spill_above.unwrap_or(spill::SPILL_ABOVE))?
            }
        };
        // The what-if's reader walks the data section right after the check and lets go behind
        // itself ([`Reader::typed_samples`]): the check leaves the pages for it rather than
        // letting them go to be faulted in again at once, unless told to keep the peak low.
        let let_go = self.typed.is_none() || self.opts.let_go_checked;
        let lenient = self.opts.common.lenient;
        // a large section's framing is walked in parts side by side, and the typed walk
        // splits it where the check's parts start
        let checked = check(
            &mut buf,
            lenient,
            let_go,
            self.parts,
            self.split_above as u64,
            &mut self.diagnostics,
        )?;
        // samples of events not asked for: out of what the record reader reads, before it sorts
        // them (a file cut short keeps them: its ids come from the attr section, below)
        let mut dropped = match &self.only {
            Some(only) if !checked.pipe && checked.attr_of_id.is_empty() => {
                compact::drop_samples(&buf, only, self.copy_up_to)
            }
            _ => None,
        };
        for (ty, n, at) in &checked.unknown {
            self.diagnostics.notes.push(format!(
                "{n} record(s) of type {ty}, which perf does not define, skipped (the first at byte {at})"
            ));
        }
        let data = (!checked.pipe)
            .then(|| {
                let (off, size) = sect(&buf, 40);
                let from = usize::try_from(off).ok()?;
                Some((from, from.checked_add(usize::try_from(size).ok()?)?))
            })
            .flatten();
        let buf = Shared(std::sync::Arc::new(buf));
        let (file, iter) = if checked.pipe {
            let parse = |plan| {
                let shown = pipe::Shown::new(buf.clone(), checked.skip, plan);
                PerfFileReader::parse_pipe(view::Source::Pipe(shown)).map_err(|e| {
                    binary(
                        PIPE_HEADER_LEN,
                        format!("expected the pipe-mode header records, got: {e}"),
                    )
                })
            };
            // the stream as it is gives the attributes the order is planned with; shown in
            // that order the reader holds two rounds of records, not all of them
            let r = parse(None)?;
            let plan = match self.pipe_in_order {
                true => pipe::plan(
                    &buf.0,
                    checked.skip,
                    r.perf_file.event_attributes(),
                    usize::try_from(checked.records).unwrap_or(0),
                ),
                false => None,
            };
            let r = match plan {
                Some(p) => parse(Some(p))?,
                None => r,
            };
            (r.perf_file, r.record_iter)
        } else {
            let view = match (&mut dropped, data) {
                (Some(d), Some((from, _))) => view::View::compacted(
                    buf.clone(),
                    from,
                    std::mem::take(&mut d.kept),
                    d.copy.take(),
                    std::mem::take(&mut d.index),
                ),
                _ => view::View::whole(buf.clone(), data),
            };
            let r = PerfFileReader::parse_file(view::Source::File(view)).map_err(|e| {
                binary(0, format!("expected a readable perf.data header, got: {e}"))
            })?;
            (r.perf_file, r.record_iter)
        };
        let big_endian = false;
        // tracing data: the feature section (file mode) or the pipe's record
        let section = checked
            .tracing
            .as_deref()
            .or_else(|| file.feature_section_data(Feature::TRACING_DATA));
        let tracing = match section {
            Some(b) => Some(tracing::parse(b).map_err(|e| {
                binary(
                    checked.tracing_offset + e.offset as u64,
                    format!("tracing-data section: expected {}", e.what),
                )
            })?),
            None => None,
        };
        let needs_formats = file
            .event_attributes()
            .iter()
            .any(|a| matches!(a.attr.type_, PerfEventType::Tracepoint(_)));
        let tracing = match tracing {
            Some(t) => Some(t),
            None if needs_formats => {
                let ids: Vec<u64> = file
                    .event_attributes()
                    .iter()
                    .filter_map(|a| match a.attr.type_ {
                        PerfEventType::Tracepoint(id) => Some(id),
                        _ => None,
                    })
                    .collect();
                let (t, from) = match self.opts.tracing_fallback.take() {
                    Some(t) => (Some(t), "the formats given to the reader".to_string()),
                    None => (
                        tracefs_formats(&ids),
                        "the running kernel's tracefs".to_string(),
                    ),
                };
                match t {
                    Some(t) => {
                        self.diagnostics.notes.push(format!(
                            "the file has no tracing data (cut short?): tracepoints decoded with {from}, as perf does; wrong if it was recorded on another kernel"
                        ));
                        Some(t)
                    }
                    None => {
                        return Err(binary(
                            0,
                            "expected the tracing-data section that describes the tracepoints, got none (the file was cut short before its feature sections, and no tracefs is mounted to take the formats from)".into(),
                        ))
                    }
                }
            }
            None => None,
        };
        let long_size = tracing.as_ref().map_or(8, |t| t.long_size);
        let mut attrs = Vec::new();
        for a in file.event_attributes() {
            let attr = match a.attr.type_ {
                PerfEventType::Tracepoint(id) => {
                    match tracing.as_ref().and_then(|t| t.formats.get(&id)) {
                        None if tracing.is_some() => {
                            // without its format the payload would be empty: a typed table
                            // silently missing its fields
                            let name = a.name().unwrap_or("tracepoint");
                            let (at, why) = match tracing.as_ref().and_then(|t| t.unparsed.first()) {
                                Some((o, sys)) => (
                                    checked.tracing_offset + *o as u64,
                                    format!("got a format file of system {sys} there that does not parse"),
                                ),
                                None => (checked.tracing_offset, "got none".to_string()),
                            };
                            let what = format!(
                                "tracing-data section: expected the format of tracepoint id {id} ({name}), {why}"
                            );
                            if !lenient {
                                return Err(binary(at, what));
                            }
                            self.diagnostics.notes.push(format!(
                                "byte {at}: {what}: its events have an empty payload"
                            ));
                            let (system, name) = split_name(name);
                            Attr {
                                system,
                                name,
                                format: None,
                            }
                        }
                        Some(f) => Attr {
                            system: Some(f.system.clone()),
                            name: f.name.clone(),
                            format: Some(std::sync::Arc::new((
                                f.clone(),
                                PrintFmt::parse(&f.print_fmt, long_size),
                            ))),
                        },
                        None => {
                            let (system, name) = split_name(a.name().unwrap_or("tracepoint"));
                            Attr {
                                system,
                                name,
                                format: None,
                            }
                        }
                    }
                }
                _ => Attr {
                    system: None,
                    name: a.name().unwrap_or("unknown").to_string(),
                    format: None,
                },
            };
            attrs.push(attr);
        }
        let has_chains = file.event_attributes().iter().any(|a| {
            a.attr
                .sample_format
                .contains(linux_perf_data::linux_perf_event_reader::SampleFormat::CALLCHAIN)
        });
        let kallsyms = match self.opts.kallsyms.take() {
            Some(k) => {
                if let Some(from) = self.opts.kallsyms_from.clone() {
                    self.diagnostics.notes.push(check_kallsyms(
                        &k,
                        &from,
                        checked.kernel_map.as_ref(),
                    )?);
                }
                Some(k)
            }
            None if has_chains => {
                let bid = checked.kernel_build_id.clone().or_else(|| {
                    file.build_ids()
                        .ok()
                        .and_then(|m| m.get(&DsoKey::Kernel).map(|i| kallsyms::hex(&i.build_id)))
                });
                let (k, found) = kallsyms::find(bid.as_deref());
                self.diagnostics.notes.push(match &found {
                    kallsyms::Found::Cache(p) => format!("kernel frames named from {}", p.display()),
                    kallsyms::Found::Running => format!(
                        "kernel frames named from /proc/kallsyms (the running kernel has the recording's build-id {})",
                        bid.as_deref().unwrap_or("")
                    ),
                    kallsyms::Found::None(why) => format!("kernel frames left as addresses ([unknown]): {why}"),
                });
                k
            }
            None => None,
        };
        let header = header_of(&file, &attrs);
        let wanted = wanted_attrs(&attrs, self.only.as_deref());
        let typed = self.typed.as_ref().map(|w| typed::Plan::resolve(w, &attrs));
        let parse_infos = file
            .event_attributes()
            .iter()
            .map(|a| RecordParseInfo::new(&a.attr, Endianness::LittleEndian))
            .collect();
        let sample_types = file
            .event_attributes()
            .iter()
            .map(|a| a.attr.sample_format.bits())
            .collect();
        Ok(State {
            file,
            iter: Some(iter),
            buf: Some(buf),
            data,
            cuts: checked.cuts.clone(),
            sample_types,
            ctx: Ctx {
                header,
                parse_infos,
                bad_records: 0,
                has_chains,
                attrs,
                attr_of_id: checked.attr_of_id.clone(),
                big_endian,
                comms: HashMap::new(),
                maps: HashMap::new(),
                kallsyms,
                recent: kallsyms::Recent::default(),
                samples: 0,
                unparsed: 0,
                wanted,
                skipped: dropped.as_ref().map_or(0, |d| d.dropped),
                lines: dropped.map(|d| d.lines).unwrap_or_default(),
                next_line: 0,
                typed,
                values: Vec::new(),
                typed_last: false,
                deferred: None,
                leave_payloads: false,
                given: 0,
            },
        })
    }
}

/// Which attrs' samples [`Reader::only`] keeps.
fn wanted_attrs(attrs: &[Attr], only: Option<&[String]>) -> Option<Vec<bool>> {
    only.map(|names| attrs.iter().map(|a| names.contains(&a.name)).collect())
}

/// The header context of an opened file: its feature sections (a section that does not parse
/// is left out: it only informs) and the event names.
fn header_of(file: &linux_perf_data::PerfFile, attrs: &[Attr]) -> CaptureHeader {
    let s = |r: Result<Option<&str>, _>| r.ok().flatten().map(str::to_string);
    let cpus = file.nr_cpus().ok().flatten();
    CaptureHeader {
        nr_cpus_online: cpus.as_ref().map(|c| c.nr_cpus_online),
        nr_cpus_avail: cpus.as_ref().map(|c| c.nr_cpus_available),
        os_release: s(file.os_release()),
        perf_version: s(file.perf_version()),
        hostname: s(file.hostname()),
        arch: s(file.arch()),
        cmdline: file
            .feature_section_data(Feature::CMDLINE)
            .and_then(string_list),
        events: attrs
            .iter()
            .map(|a| match &a.system {
                Some(sys) => format!("{sys}:{}", a.name),
                None => a.name.clone(),
            })
            .collect(),
        ..CaptureHeader::default()
    }
}

/// A `perf_header_string_list` (the CMDLINE feature: u32 count, then per string a u32 length
/// and that many bytes, NUL-padded), read here rather than by the record reader's `cmdline()`,
/// which reserves room for the count it reads before reading any string (a damaged count asked
/// for gigabytes). `None` when a string runs past the section or is not UTF-8.
fn string_list(section: &[u8]) -> Option<Vec<String>> {
    let n = u32_at(section, 0)?;
    let mut out = Vec::new();
    let mut pos = 4usize;
    for _ in 0..n {
        let len = u32_at(section, pos)? as usize;
        let bytes = section.get(pos + 4..(pos + 4).checked_add(len)?)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        out.push(std::str::from_utf8(&bytes[..end]).ok()?.to_string());
        pos += 4 + len;
    }
    Some(out)
}

/// The note for a kallsyms given by the user, or the error refusing it: a kallsyms file has no
/// build-id, but the recording's kernel map says where the kernel's reference symbol
/// (`_text`) was, and a table from another kernel or another boot (KASLR) has it elsewhere.
fn check_kallsyms(
    k: &kallsyms::Kallsyms,
    from: &str,
    map: Option<&(u64, String, u64)>,
) -> Result<String, Error> {
    let unchecked =
        format!("kernel frames named from {from} (build-id not checked: a kallsyms file has none");
    let Some((offset, sym, addr)) = map else {
        return Ok(format!(
            "{unchecked}, and the recording has no kernel map to check it against)"
        ));
    };
    match k.reference(sym) {
        Some(a) if a == *addr => Ok(format!(
            "{unchecked}; its {sym} is at {addr:#x}, where the recording's kernel map puts it)"
        )),
        Some(a) => Err(binary(
            *offset,
            format!(
                "expected --kallsyms {from} to be the recording's kernel: the kernel map here puts {sym} at {addr:#x}, {from} has it at {a:#x} (another kernel or another boot); give the kallsyms of the recording's kernel and boot (perf's build-id cache keeps it: ~/.debug/[kernel.kallsyms]/<build-id>/kallsyms)"
            ),
        )),
        None => Ok(format!(
            "{unchecked}, and it does not list {sym} to check it against the recording's kernel map)"
        )),
    }
}

/// The kernel's MMAP record at `p` (pid -1, `[kernel.kallsyms]_text`): its reference symbol
/// and address (pgoff), as perf synthesizes it (`perf_event__synthesize_kernel_mmap`).
fn kernel_map_at(buf: &[u8], p: usize, end: usize) -> Option<(String, u64)> {
    if u32_at(buf, p)? != PERF_RECORD_MMAP || u32_at(buf, p + 8)? != u32::MAX {
        return None;
    }
    let pgoff = u64_at(buf, p + 32)?;
    let name = buf.get(p + 40..end)?;
    let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
    let sym = name.strip_prefix(b"[kernel.kallsyms]")?;
    Some((String::from_utf8_lossy(sym).into_owned(), pgoff))
}

fn binary(offset: u64, what: String) -> Error {
    Error::Binary {
        format: FORMAT,
        offset,
        what,
    }
}

/// `sys:name` → (Some(sys), name); a name without `:` has no system.
fn split_name(n: &str) -> (Option<String>, String) {
    match n.split_once(':') {
        Some((s, n)) => (Some(s.to_string()), n.to_string()),
        None => (None, n.to_string()),
    }
}

/// What the framing check found.
#[derive(Debug, Default)]
struct Checked {
    pipe: bool,
    /// Pipe mode: the tracing data taken out of the stream.
    tracing: Option<Vec<u8>>,
    /// Pipe mode: how many whole records the stream holds.
    records: u64,
    /// Pipe mode: the bytes of the record that held it, which the record reader is not shown
    /// (it would read the tracing data as records).
    skip: Option<(usize, usize)>,
    /// Where the tracing data starts in the file (for error offsets).
    tracing_offset: u64,
    /// Pipe mode: the kernel's build-id from a HEADER_BUILD_ID record.
    kernel_build_id: Option<String>,
    /// The kernel's MMAP record (pid -1, `[kernel.kallsyms]<sym>`): its byte offset, the
    /// reference symbol's name and its address (the record's pgoff).
    kernel_map: Option<(u64, String, u64)>,
    /// A file cut short: sample id → attr index, from the attr section's id lists (the record
    /// reader takes them from the lost EVENT_DESC section otherwise).
    attr_of_id: IdMap,
    /// Records of a type perf does not define: (type, count, first byte offset), skipped.
    unknown: Vec<(u32, u64, u64)>,
    /// File mode: byte offsets of records that split the data section into up to `parts`
    /// stretches of about equal size, ascending, after its first: where the framing walk's
    /// parts started (fewer when a guessed start was not a record's, [`framing`]; none below
    /// `split_above`).
    cuts: Vec<usize>,
}

/// Record types perf defines: the kernel's (`enum perf_event_type`, 1..=22) and perf's own
/// (`enum perf_user_event_type`, 64..=84).
fn known_record_type(ty: u32) -> bool {
    (1..=22).contains(&ty) || (64..=84).contains(&ty)
}

/// Count `n` records of type `ty` (the first at `pos`) in `unknown` when perf does not define
/// the type.
fn count_unknown(unknown: &mut Vec<(u32, u64, u64)>, ty: u32, n: u64, pos: u64) {
    if known_record_type(ty) {
        return;
    }
    match unknown.iter_mut().find(|u| u.0 == ty) {
        Some(u) => u.1 += n,
        None => unknown.push((ty, n, pos)),
    }
}

/// Where feature `bit`'s (offset, size) entry is in a file-mode perf.data: the feature index
/// follows the data section (data offset + data size), one 16-byte entry per bit set in the
/// header's feature bitmap (bytes 72..104), in bit order. `None` when the bit is not set.
fn feature_entry(buf: &[u8], bit: usize) -> Option<u64> {
    let set = |i: usize| buf.get(72 + i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1);
    if bit >= 256 || !set(bit) {
        return None;
    }
    let (data_off, data_size) = sect(buf, 40);
    let k = (0..bit).filter(|&i| set(i)).count() as u64;
    data_off.checked_add(data_size)?.checked_add(16 * k)
}

/// The size of a file-mode perf.data's data section, from the first 56 bytes of the file
/// (`perf_file_header`: magic, header size, attr size, then the attr and data sections as
/// offset and size); `None` for anything else, or a size of 0 (a recording perf did not
/// finish). What one record pass walks: a progress display's unit ([`bytes_walked`]).
pub fn data_section_size(header: &[u8]) -> Option<u64> {
    if header.get(..8) != Some(MAGIC) {
        return None;
    }
    let (_, size) = sect(header, 40);
    (size > 0).then_some(size)
}

fn sect(b: &[u8], i: usize) -> (u64, u64) {
    (u64_at(b, i).unwrap_or(0), u64_at(b, i + 8).unwrap_or(0))
}
fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?]))
}
fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i..i + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    let s = b.get(i..i + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Check the header and every record's framing ([`framing`]); in lenient mode cut a file cut
/// short back to its last whole record (patching the header in `buf`). Pipe mode: take the
/// tracing data (which follows its record outside the record's size) out of the stream.
/// `let_go`: release the pages of the data section behind the walk ([`bytes::Behind`]); not
/// when the next pass walks it right after and lets go itself ([`Reader::typed_samples`]). A
/// data section above `split_above` bytes is walked in up to `parts` parts side by side, and
/// [`Checked::cuts`] gives where the parts after the first start.
fn check(
    buf: &mut bytes::Bytes,
    lenient: bool,
    let_go: bool,
    parts: usize,
    split_above: u64,
    diags: &mut Diagnostics,
) -> Result<Checked, Error> {
    let len = buf.len() as u64;
    if buf.len() < 16 {
        return Err(binary(
            len,
            format!("expected a perf.data header (magic PERFILE2 and its size), got the end of the file after {len} byte(s)"),
        ));
    }
    if &buf[..8] != MAGIC {
        let what = if &buf[..8] == b"2ELIFREP" {
            "expected a little-endian perf.data file (magic PERFILE2), got a big-endian one (2ELIFREP), which lockcast does not read".to_string()
        } else {
            format!(
                "expected the perf.data magic PERFILE2, got {:?}",
                String::from_utf8_lossy(&buf[..8])
            )
        };
        return Err(binary(0, what));
    }
    let hsize = u64_at(buf, 8).unwrap_or(0);
    if hsize == PIPE_HEADER_LEN {
        return check_pipe(buf, lenient, diags);
    }
    if buf.len() < FILE_HEADER_LEN || hsize < FILE_HEADER_LEN as u64 {
        return Err(binary(
            8,
            format!("expected a perf.data file header of {FILE_HEADER_LEN} bytes, got header size {hsize} in a file of {len} byte(s)"),
        ));
    }
    // struct perf_file_attr: a perf_event_attr (PERF_ATTR_SIZE_VER0 = 64 bytes at least) and
    // the file section of its ids (the record reader divides by this size)
    let entry_size = u64_at(buf, 16).unwrap_or(0);
    if entry_size < 64 + 16 {
        return Err(binary(
            16,
            format!("expected an attr entry size of at least 80 bytes, got {entry_size}"),
        ));
    }
    let (attr_off, attr_size) = sect(buf, 24);
    let (data_off, data_size) = sect(buf, 40);
    if attr_off.saturating_add(attr_size) > len {
        return Err(binary(
            24,
            format!("expected the attr section (bytes {attr_off}..{}) inside the file, got a file of {len} bytes", attr_off.saturating_add(attr_size)),
        ));
    }
    if data_off > len || data_off < FILE_HEADER_LEN as u64 {
        return Err(binary(
            40,
            format!("expected the data section to start inside the file, got offset {data_off} in a file of {len} bytes"),
        ));
    }
    let claimed_end = data_off.saturating_add(data_size);
    check_event_types(buf)?;
    let mut cut: Option<String> = None;
    let mut attr_of_id = IdMap::default();
    if data_size == 0 {
        cut = Some(
            "its data size is 0 (perf record did not finish writing the header: killed?)".into(),
        );
    } else if claimed_end > len {
        cut = Some(format!(
            "its data section claims bytes {data_off}..{claimed_end}"
        ));
    }
    // walk the records
    let end = claimed_end.min(len);
    let end = if data_size == 0 { len } else { end };
    let (walked, mut cuts) = framing::walk_in_parts(buf, data_off, end, let_go, parts, split_above);
    let framing::Framing {
        pos,
        records,
        kernel_map,
        unknown,
        bad,
    } = walked;
    if let Some((at, size, ty)) = bad {
        let what =
            format!("expected a record of at least 8 bytes, got size {size} (record type {ty})");
        if !lenient {
            return Err(binary(at, what));
        }
        push_diag(diags, records + 1, at, what);
    }
    if pos < end && cut.is_none() {
        cut = Some(format!(
            "its data section claims bytes {data_off}..{claimed_end}"
        ));
    }
    // feature sections follow the data
    if cut.is_none() {
        let n_feat: u32 = (0..4)
            .map(|i| u64_at(buf, 72 + 8 * i).unwrap_or(0).count_ones())
            .sum();
        let idx_end = claimed_end + 16 * u64::from(n_feat);
        if idx_end > len {
            cut = Some(format!(
                "its feature index claims bytes {claimed_end}..{idx_end}"
            ));
        } else {
            for k in 0..u64::from(n_feat) {
                let entry = claimed_end + 16 * k;
                let (o, s) = sect(buf, entry as usize);
                if o.saturating_add(s) > len {
                    cut = Some(format!(
                        "the feature index entry at byte {entry} claims bytes {o}..{}",
                        o.saturating_add(s)
                    ));
                    break;
                }
            }
        }
    }
    if cut.is_none() {
        check_feature_counts(buf, claimed_end)?;
    }
    if let Some(why) = cut {
        let lost = len - pos;
        let what = format!(
            "file cut short: {why}, but the file ends at byte {len}; {records} whole record(s) before byte {pos}, {lost} byte(s) after it lost"
        );
        if !lenient {
            return Err(binary(
                pos,
                format!("{what} (--lenient reads the whole records)"),
            ));
        }
        push_diag(diags, records + 1, pos, what);
        // read the whole records only, without the lost feature sections
        buf[48..56].copy_from_slice(&(pos - data_off).to_le_bytes());
        for b in &mut buf[72..104] {
            *b = 0;
        }
        buf.truncate(pos as usize);
        attr_of_id = attr_ids(buf);
        cuts.retain(|&c| (c as u64) < pos);
    }
    let tracing_offset =
        feature_entry(buf, HEADER_TRACING_DATA_BIT as usize).map_or(0, |e| sect(buf, e as usize).0);
    Ok(Checked {
        tracing_offset,
        attr_of_id,
        kernel_map,
        unknown,
        cuts,
        ..Checked::default()
    })
}

/// The record reader sizes its vectors from counts in the file before reading what they count
/// (an abort on a huge count): the EVENT_DESC feature section's event, id and string counts must
/// fit in the section. `index` is where the feature index starts (right after the data).
fn check_feature_counts(buf: &[u8], index: u64) -> Result<(), Error> {
    let mut k = 0u64;
    for bit in 0..256usize {
        if buf[72 + bit / 8] >> (bit % 8) & 1 == 0 {
            continue;
        }
        let entry = index + 16 * k;
        k += 1;
        if bit as u64 != HEADER_EVENT_DESC {
            continue;
        }
        let (o, size) = sect(buf, entry as usize);
        // inside the file: checked by the caller
        check_event_desc(buf, o, o + size, "EVENT_DESC feature section")?;
    }
    Ok(())
}

/// The EVENT_DESC data in bytes `o..end` (a file's feature section, or a pipe's HEADER_FEATURE
/// record): its event, id and string counts must fit, or the record reader allocates what a
/// damaged count says (one fuzzed pipe stream asked for 3.9 GB) before it reads anything.
fn check_event_desc(buf: &[u8], o: u64, end: u64, place: &str) -> Result<(), Error> {
    let bad =
        |at: u64, what: String| binary(at, format!("{place} (bytes {o}..{end}): expected {what}"));
    let nr = u64::from(u32_at(buf, o as usize).ok_or_else(|| bad(o, "an event count".into()))?);
    let attr_size = u64::from(u32_at(buf, o as usize + 4).unwrap_or(0));
    let mut pos = o + 8;
    for i in 0..nr {
        // attr, u32 nr_ids, u32 string length + string, nr_ids u64 ids
        let ids_at = pos + attr_size;
        let n_ids = u64::from(
            u32_at(buf, ids_at as usize)
                .filter(|_| ids_at + 8 <= end)
                .ok_or_else(|| bad(pos, format!("event {} of {nr} inside the section", i + 1)))?,
        );
        let str_len = u64::from(u32_at(buf, ids_at as usize + 4).unwrap_or(0));
        pos = ids_at + 8 + str_len;
        let next = pos.saturating_add(n_ids.saturating_mul(8));
        if next > end {
            return Err(bad(
                ids_at,
                format!(
                    "event {} of {nr}'s name and {n_ids} id(s) inside the section",
                    i + 1
                ),
            ));
        }
        pos = next;
    }
    Ok(())
}

/// The old event_types section (header bytes 56..72, written by perf before 3.x): the record
/// reader reads it when present, each entry an attr and the (offset, size) of its ids, which
/// must lie inside the file.
fn check_event_types(buf: &[u8]) -> Result<(), Error> {
    let (o, size) = sect(buf, 56);
    if size == 0 {
        return Ok(());
    }
    let len = buf.len() as u64;
    if o.saturating_add(size) > len {
        return Err(binary(56, format!("expected the event_types section (bytes {o}..{}) inside the file, got a file of {len} bytes", o.saturating_add(size))));
    }
    let attr_size = u64_at(buf, 16).unwrap_or(0);
    let entry = attr_size + 16;
    for k in 0..size / entry.max(1) {
        let at = o + k * entry + attr_size;
        let (io, is) = sect(buf, at as usize);
        if io.saturating_add(is) > len {
            return Err(binary(at, format!("expected the ids of event type {} (bytes {io}..{}) inside the file, got a file of {len} bytes", k + 1, io.saturating_add(is))));
        }
    }
    Ok(())
}

/// A file-mode data section the one-pass walks ([`bulk`], [`names`]) can take: its records
/// checked whole, no sample ids the check had to guess, samples without read values
/// ([`bulk::eligible`]).
struct Walkable<'a> {
    /// The whole file.
    bytes: &'a bytes::Bytes,
    /// Where the data section starts in it.
    from: usize,
    /// The data section.
    data: &'a [u8],
    /// Each sample id's attr, when there are several attrs.
    ids: IdMap,
}

fn walkable(st: &State) -> Option<Walkable<'_>> {
    let ((from, to), buf) = (st.data?, st.buf.as_ref()?);
    if !st.ctx.attr_of_id.is_empty() || !bulk::eligible(&st.sample_types) {
        return None;
    }
    let bytes: &bytes::Bytes = &buf.0;
    let ids = if st.sample_types.len() > 1 {
        attr_ids(bytes)
    } else {
        IdMap::default()
    };
    Some(Walkable {
        bytes,
        from,
        data: bytes.get(from..to)?,
        ids,
    })
}

/// Sample id → attr index ([`attr_ids`]), looked up once per sample: foldhash's fixed-seed
/// hasher instead of SipHash, whose cost per lookup was a few % of reading a large file (the
/// ids are the kernel's, a few per event and CPU; nothing here needs a keyed hash).
pub(crate) type IdMap = HashMap<u64, usize, foldhash::fast::FixedState>;

/// The attr section: `attr_size`-byte entries, each a `perf_event_attr` followed by the file
/// section (offset, size) of its u64 sample ids. Maps each id to its entry's index.
fn attr_ids(buf: &[u8]) -> IdMap {
    let mut out = IdMap::default();
    let attr_size = u64_at(buf, 16).unwrap_or(0) as usize;
    let (off, size) = sect(buf, 24);
    if attr_size < 16 {
        return out;
    }
    for i in 0..(size as usize / attr_size) {
        let entry = off as usize + i * attr_size;
        let (ids_off, ids_size) = sect(buf, entry + attr_size - 16);
        // ids past the end of the file (a damaged section) are not there to read
        let n = (ids_size / 8).min((buf.len() as u64).saturating_sub(ids_off) / 8);
        for k in 0..n {
            if let Some(id) = u64_at(buf, (ids_off + 8 * k) as usize) {
                out.insert(id, i);
            }
        }
    }
    out
}

fn push_diag(diags: &mut Diagnostics, record: u64, offset: u64, what: String) {
    diags.push(Diagnostic {
        location: Location {
            line: record,
            col: 1,
        },
        kind: LineError::Expected {
            what: "a whole perf.data record",
            got: format!("byte {offset}: {what}"),
        },
        line_text: String::new(),
    });
}

/// Pipe mode (`perf record -o -`): records follow the 16-byte header with no sections. The
/// tracing data comes as a HEADER_TRACING_DATA record whose u32 `size` bytes follow the record
/// outside its header size; they are taken out here (the record reader is shown the stream
/// without them: [`Checked::skip`]), and the kernel build-id is taken from the
/// HEADER_BUILD_ID records, which perf writes at the end of the stream.
fn check_pipe(
    buf: &mut bytes::Bytes,
    lenient: bool,
    diags: &mut Diagnostics,
) -> Result<Checked, Error> {
    let mut out = Checked {
        pipe: true,
        ..Checked::default()
    };
    let len = buf.len() as u64;
    let mut pos = PIPE_HEADER_LEN;
    let mut records = 0u64;
    let mut cut_at = None;
    // the pages of a mapped stream go as the check passes them: the record reader is shown
    // the stream a few rounds at a time after it ([`pipe`])
    let mut behind = bytes::Behind::new(0, buf.len());
    while pos < len {
        let p = pos as usize;
        behind.at(buf, p);
        bytes::prefetch_ahead(buf, p);
        if pos + 8 > len {
            cut_at = Some(pos);
            break;
        }
        let ty = u32_at(buf, p).unwrap_or(0);
        let size = u64::from(u16_at(buf, p + 6).unwrap_or(0));
        if size < 8 {
            let what = format!(
                "expected a record of at least 8 bytes, got size {size} (record type {ty})"
            );
            if !lenient {
                return Err(binary(pos, what));
            }
            push_diag(diags, records + 1, pos, what);
            cut_at = Some(pos);
            break;
        }
        let mut next = pos + size;
        if ty == PERF_RECORD_HEADER_TRACING_DATA {
            let tsize = u64::from(u32_at(buf, p + 8).unwrap_or(0));
            next += tsize;
            if next <= len {
                out.tracing = Some(buf[(pos + size) as usize..next as usize].to_vec());
                out.tracing_offset = pos + size;
                out.skip = Some((p, next as usize));
            }
        } else if ty == PERF_RECORD_HEADER_FEATURE
            && next <= len
            // the record reader keeps the low 32 bits of the u64 feature id
            && u64_at(buf, p + 8).map(|f| f as u32) == Some(HEADER_EVENT_DESC as u32)
        {
            check_event_desc(buf, pos + 16, next, "EVENT_DESC HEADER_FEATURE record")?;
        } else if ty == PERF_RECORD_AUXTRACE {
            next = next.saturating_add(u64_at(buf, p + 8).unwrap_or(0));
        } else if ty == PERF_RECORD_HEADER_BUILD_ID && next <= len {
            // struct build_id_event: header, pid, build_id[24] (size byte at 20 when misc bit 15), filename
            let misc = u16_at(buf, p + 4).unwrap_or(0);
            let id = &buf[p + 12..(p + 36).min(next as usize)];
            let n = if misc & (1 << 15) != 0 {
                usize::from(buf.get(p + 32).copied().unwrap_or(20)).min(20)
            } else {
                20
            };
            let name_end = buf[p + 36..next as usize]
                .iter()
                .position(|&c| c == 0)
                .map_or(next as usize, |i| p + 36 + i);
            if &buf[p + 36..name_end] == b"[kernel.kallsyms]" && id.len() >= n {
                out.kernel_build_id = Some(kallsyms::hex(&id[..n]));
            }
        }
        if next > len {
            cut_at = Some(pos);
            break;
        }
        if out.kernel_map.is_none() {
            out.kernel_map = kernel_map_at(buf, p, next as usize).map(|(s, a)| (pos, s, a));
        }
        count_unknown(&mut out.unknown, ty, 1, pos);
        pos = next;
        records += 1;
    }
    if let Some(at) = cut_at {
        let what = format!(
            "stream cut short: a record at byte {at} runs past the end at byte {len}; {records} whole record(s) before it"
        );
        if !lenient {
            return Err(binary(
                at,
                format!("{what} (--lenient reads the whole records)"),
            ));
        }
        push_diag(diags, records + 1, at, what);
        buf.truncate(at as usize);
    }
    out.records = records;
    Ok(out)
}

/// Tracepoint formats of the running kernel, for the ids the file's events name.
fn tracefs_formats(ids: &[u64]) -> Option<TracingData> {
    let root = [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).is_dir())?;
    let mut formats = HashMap::new();
    for sys in std::fs::read_dir(root).ok()?.flatten() {
        let Ok(events) = std::fs::read_dir(sys.path()) else {
            continue;
        };
        for ev in events.flatten() {
            let Ok(id) = std::fs::read_to_string(ev.path().join("id")) else {
                continue;
            };
            let Ok(id) = id.trim().parse::<u64>() else {
                continue;
            };
            if !ids.contains(&id) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(ev.path().join("format")) else {
                continue;
            };
            let system = sys.file_name().to_string_lossy().into_owned();
            if let Some(f) = tracing::parse_format(&system, &text, 8) {
                formats.insert(f.id, f);
            }
        }
    }
    (!formats.is_empty()).then_some(TracingData {
        long_size: 8,
        big_endian: false,
        formats,
        unparsed: Vec::new(),
    })
}

/// Whether the record reader can parse `record` without panicking on a damaged field (found by
/// fuzzing): a sample's call-chain length, which it multiplies by 8 unchecked (an overflow
/// panic in debug builds, a wrong length in release ones), and an MMAP2 record's build-id
/// length, which it asserts is at most 20. Such records are skipped and counted.
fn parses_safely(record: &linux_perf_data::linux_perf_event_reader::RawEventRecord) -> bool {
    if record.record_type == RecordType::MMAP2 {
        // pid, tid, addr, len, pgoff, then the build-id's length byte
        return record.misc & PERF_RECORD_MISC_MMAP_BUILD_ID == 0
            || record.data.as_slice().get(32).is_none_or(|&n| n <= 20);
    }
    record.record_type != RecordType::SAMPLE || callchain_fits(record)
}

/// Whether a sample's call-chain length fits in the record. The chain follows the fixed u64
/// fields of `sample_format` (perf_event_open(2) order); with `READ` (variable) the check is
/// left to the reader.
fn callchain_fits(record: &linux_perf_data::linux_perf_event_reader::RawEventRecord) -> bool {
    let f = record.parse_info.sample_format;
    if !f.contains(SampleFormat::CALLCHAIN) || f.contains(SampleFormat::READ) {
        return true;
    }
    let before = [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ]
    .iter()
    .filter(|b| f.contains(**b))
    .count()
        * 8;
    let data = record.data.as_slice();
    match data.get(before..before + 8) {
        Some(b) => {
            let nr = u64::from_le_bytes(b.try_into().unwrap_or([0xff; 8]));
            nr <= ((data.len() - before - 8) / 8) as u64
        }
        None => true, // too short: the reader's own error
    }
}

impl State {
    fn next_into(&mut self, out: &mut Event) -> Result<bool, Error> {
        loop {
            let samples = self.ctx.samples;
            let ctx = &mut self.ctx;
            let Some(iter) = self.iter.as_mut() else {
                return Ok(false);
            };
            let rec = iter.next_record(&mut self.file).map_err(|e| {
                binary(
                    0,
                    format!(
                        "expected a readable record after sample {}, got: {e}",
                        samples
                    ),
                )
            })?;
            let Some(rec) = rec else { return Ok(false) };
            let PerfFileRecord::EventRecord {
                mut attr_index,
                mut record,
            } = rec
            else {
                continue;
            };
            if !ctx.attr_of_id.is_empty() && record.record_type == RecordType::SAMPLE {
                // a sample starts with its id when the attrs' layouts differ (IDENTIFIER)
                let first = ctx.parse_infos.first().map(|p| p.sample_format);
                if first.is_some_and(|f| f.contains(SampleFormat::IDENTIFIER)) {
                    let data = record.data.as_slice();
                    let id = data
                        .get(..8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
                    if let Some(&i) = id.and_then(|id| ctx.attr_of_id.get(&id)) {
                        if let Some(p) = ctx.parse_infos.get(i) {
                            record.parse_info = *p;
                            attr_index = i;
                        }
                    }
                }
            }
            if !parses_safely(&record) {
                ctx.bad_records += 1;
                continue;
            }
            // a sample of an event not asked for: numbered, not decoded (with the ids of a
            // file cut short the attr is only known once parsed, below)
            if record.record_type == RecordType::SAMPLE && ctx.attr_of_id.is_empty() {
                if let Some(w) = &ctx.wanted {
                    if !w.get(attr_index).copied().unwrap_or(true) {
                        ctx.number_sample();
                        ctx.skipped += 1;
                        continue;
                    }
                }
            }
            if record.record_type == RecordType::LOST_SAMPLES {
                // struct perf_record_lost_samples { header; u64 lost; sample_id }
                if let Some(n) = u64_at(&record.data.as_slice(), 0) {
                    ctx.header.lost_samples = ctx.header.lost_samples.saturating_add(n);
                }
                continue;
            }
            let Ok(parsed) = record.parse() else {
                ctx.bad_records += 1;
                continue;
            };
            match parsed {
                EventRecord::Comm(c) => {
                    let name = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
                    ctx.comms.insert(c.tid, name);
                }
                EventRecord::Fork(f) => {
                    if let Some(parent) = ctx.comms.get(&f.ptid).cloned() {
                        ctx.comms.insert(f.tid, parent);
                    }
                    // a new process starts with its parent's mappings (perf's thread__fork),
                    // so its user frames name the same files
                    if f.pid != f.ppid && !ctx.maps.contains_key(&f.pid) {
                        if let Some(m) = ctx.maps.get(&f.ppid).cloned() {
                            ctx.maps.insert(f.pid, m);
                        }
                    }
                }
                EventRecord::Mmap(m) => {
                    let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                    ctx.add_map(m.pid, m.address, m.length, m.page_offset, path);
                }
                EventRecord::Mmap2(m) => {
                    let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                    ctx.add_map(m.pid, m.address, m.length, m.page_offset, path);
                }
                EventRecord::Lost(l) => {
                    ctx.header.lost_records = ctx.header.lost_records.saturating_add(1);
                    ctx.header.lost_kernel = ctx.header.lost_kernel.saturating_add(l.count);
                }
                EventRecord::Sample(s) => {
                    ctx.number_sample();
                    let tid = s.tid.unwrap_or(-1);
                    let pid = s.pid;
                    let attr_index =
                        s.id.and_then(|id| ctx.attr_of_id.get(&id).copied())
                            .unwrap_or(attr_index);
                    if let Some(w) = &ctx.wanted {
                        if !w.get(attr_index).copied().unwrap_or(true) {
                            ctx.skipped += 1;
                            continue;
                        }
                    }
                    let attr = ctx.attrs.get(attr_index);
                    // into the strings `out` already has: no allocation once they are long
                    // enough
                    let (system, name) = attr
                        .map(|a| (a.system.as_deref(), a.name.as_str()))
                        .unwrap_or((None, "unknown"));
                    match (system, &mut out.system) {
                        (Some(s), Some(o)) => {
                            o.clear();
                            o.push_str(s);
                        }
                        (s, o) => *o = s.map(str::to_string),
                    }
                    out.name.clear();
                    out.name.push_str(name);
                    let typed = ctx.typed.as_ref().filter(|p| p.covers(attr_index));
                    ctx.typed_last = typed.is_some();
                    out.comm.clear();
                    if typed.is_none() {
                        match ctx.comms.get(&tid) {
                            Some(c) => out.comm.push_str(c),
                            None => {
                                use std::fmt::Write;
                                let _ = write!(out.comm, ":{tid}");
                            }
                        }
                    }
                    out.payload.clear();
                    let payload = &mut out.payload;
                    if let Some(plan) = typed {
                        let raw = s.raw.as_ref().map(|r| r.as_slice());
                        let data: &[u8] = raw.as_deref().unwrap_or(&[]);
                        plan.decode(attr_index, data, ctx.big_endian, &mut ctx.values)
                            .map_err(|why| {
                                binary(
                                    0,
                                    format!(
                                        "sample {} ({}{}{}): {why}",
                                        ctx.samples,
                                        system.unwrap_or(""),
                                        if system.is_some() { ":" } else { "" },
                                        name
                                    ),
                                )
                            })?;
                    } else if let (false, Some(a), Some(raw)) =
                        (ctx.leave_payloads, attr, s.raw.as_ref())
                    {
                        if let Some(f) = &a.format {
                            let data = raw.as_slice();
                            match ctx.deferred.as_mut() {
                                Some(d) => d.push(ctx.given, attr_index, &data),
                                None => {
                                    if !deferred::render(f, &data, ctx.big_endian, payload) {
                                        ctx.unparsed += 1;
                                    }
                                }
                            }
                        }
                    }
                    // the chain's frames written over the ones `out` has, then cut to length
                    let callchain = &mut out.callchain;
                    let mut frames = 0;
                    let task = pid.unwrap_or(tid);
                    let has_chains = ctx.has_chains;
                    let mut put = |ip: u64, kernel: bool| {
                        if frames == callchain.len() {
                            callchain.push(Frame::default());
                        }
                        ctx.frame_into(ip, kernel, task, &mut callchain[frames]);
                        frames += 1;
                    };
                    if s.callchain.is_none() && has_chains {
                        // perf script prints the sample's ip in place of the call chain of an
                        // event recorded without one when others in the file have one
                        // (`-g` with `/call-graph=no/`)
                        if let Some(ip) = s.ip {
                            let kernel =
                                matches!(s.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel);
                            put(ip, kernel);
                        }
                    }
                    if let Some(cc) = &s.callchain {
                        chain_frames((0..cc.len()).map_while(|i| cc.get(i)), &mut put);
                    }
                    callchain.truncate(frames);
                    ctx.given = ctx.given.wrapping_add(1);
                    out.line = ctx.samples;
                    out.ts_ns = s.timestamp.map(|t| t as i64);
                    out.ts_res_ns = if s.timestamp.is_some() { 1 } else { 0 };
                    out.cpu = s.cpu;
                    out.tid = tid;
                    out.pid = pid;
                    out.irq_flags = None;
                    out.period = s.period;
                    out.source = Source::PerfData;
                    return Ok(true);
                }
                _ => {}
            }
        }
    }
}

/// Each frame of a recorded call chain (instruction pointers innermost first, perf's context
/// markers before each context's frames), and whether it is a kernel frame: a frame is in the
/// context of the last marker before it, user space before any.
fn chain_frames(chain: impl Iterator<Item = u64>, mut frame: impl FnMut(u64, bool)) {
    let mut kernel = false;
    for ip in chain {
        if ip >= PERF_CONTEXT_MAX {
            kernel = ip == PERF_CONTEXT_KERNEL || ip == PERF_CONTEXT_GUEST_KERNEL;
            continue;
        }
        frame(ip, kernel);
    }
}

/// What perf prints for a frame's symbol or DSO it does not know.
const UNKNOWN: &str = "[unknown]";

/// The symbol of a frame the reader names: a kernel frame's kallsyms symbol, `[unknown]` for
/// any other (user-space symbols are never looked up) and for a kernel address in no symbol.
fn frame_symbol<'k>(
    kallsyms: Option<&'k kallsyms::Kallsyms>,
    recent: &mut kallsyms::Recent,
    ip: u64,
    kernel: bool,
) -> (&'k str, Option<u64>) {
    match kallsyms
        .filter(|_| kernel)
        .and_then(|k| recent.lookup(k, ip))
    {
        Some((sym, off)) => (sym, Some(off)),
        None => (UNKNOWN, None),
    }
}

/// The note on payloads printed raw.
fn unparsed_note(n: u64) -> String {
    format!(
        "{n} tracepoint event(s) printed raw ([FAILED TO PARSE]): their print fmt uses what lockcast does not evaluate"
    )
}

impl Ctx {
    /// The next sample's number: its rank among the file's samples.
    fn number_sample(&mut self) {
        self.samples += 1;
        if let Some(&l) = self.lines.get(self.next_line) {
            self.samples = l;
            self.next_line += 1;
        }
    }

    fn add_map(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, path: String) {
        if pid == -1 {
            return; // kernel and module maps: frames are named from kallsyms
        }
        self.maps.entry(pid).or_default().push(Map {
            start,
            len,
            pgoff,
            path,
        });
    }

    /// The call-chain frame at `ip` into `f`, its strings reused: a chain is rewritten in
    /// place event after event ([`Reader::next_event_into`]), where a new symbol and DSO
    /// string per frame were most of the allocations of reading a `-g` recording.
    fn frame_into(&mut self, ip: u64, kernel: bool, pid: i32, f: &mut Frame) {
        const KERNEL: &str = "[kernel.kallsyms]";
        let (addr, symbol, offset, dso) = if kernel {
            let (sym, off) = frame_symbol(self.kallsyms.as_ref(), &mut self.recent, ip, true);
            (ip, sym, off, KERNEL)
        } else {
            let map = self.maps.get(&pid).and_then(|ms| {
                ms.iter()
                    .rev()
                    .find(|m| ip >= m.start && ip - m.start < m.len)
            });
            match map {
                Some(m) => {
                    let addr = if m.path.starts_with("//anon")
                        || m.path.starts_with("[") && m.path != "[vdso]"
                    {
                        ip
                    } else {
                        (ip - m.start).wrapping_add(m.pgoff)
                    };
                    (addr, UNKNOWN, None, m.path.as_str())
                }
                None => (ip, UNKNOWN, None, UNKNOWN),
            }
        };
        f.addr = addr;
        f.offset = offset;
        f.symbol.clear();
        f.symbol.push_str(symbol);
        match &mut f.dso {
            Some(d) => {
                d.clear();
                d.push_str(dso);
            }
            None => f.dso = Some(dso.to_string()),
        }
    }
}

impl crate::event::EventRead for Reader<'_> {
    fn next_event(&mut self) -> Result<Option<Event>, Error> {
        Reader::next_event(self)
    }
    fn next_event_into(&mut self, out: &mut Event) -> Result<bool, Error> {
        Reader::next_event_into(self, out)
    }
    fn diagnostics(&self) -> &Diagnostics {
        Reader::diagnostics(self)
    }
    fn header(&self) -> Option<&CaptureHeader> {
        Reader::header(self)
    }
    fn only(&mut self, names: &[&str]) {
        Reader::only(self, names)
    }
    fn skipped(&self) -> u64 {
        Reader::skipped(self)
    }
    fn typed_fields(&mut self, want: &[(&str, &[&str])]) -> bool {
        Reader::typed_fields(self, want);
        true
    }
    fn fields(&self) -> Option<&[i64]> {
        Reader::fields(self)
    }
    fn typed_samples(&mut self) -> Result<Option<TypedParts>, Error> {
        Reader::typed_samples(self)
    }
    fn task_names(&mut self) -> Result<Option<BTreeMap<i32, String>>, Error> {
        Reader::task_names(self)
    }
    fn defer_payloads(&mut self) -> bool {
        Reader::defer_payloads(self)
    }
    fn leave_payloads(&mut self) -> bool {
        Reader::leave_payloads(self)
    }
    fn take_deferred(&mut self) -> Option<Deferred> {
        Reader::take_deferred(self)
    }
    fn deferred_done(&mut self, unparsed: u64) {
        Reader::deferred_done(self, unparsed)
    }
}

#[cfg(test)]
mod tests;
