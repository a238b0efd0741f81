//! Opening inputs: files, `-` for stdin, gzip and zstd detected from their magic bytes, and
//! `path#N` to pick the N-th table of a file holding several.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::{Error, Result};

/// Buffer size for inputs: large enough that `fill_buf` shows format detection a good prefix.
const BUF_SIZE: usize = 256 * 1024;

/// A file operand as given on the command line: `path` or `path#N` (N-th table, 1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// Path, or `-` for stdin.
    pub path: String,
    /// Table selected with `#N`, if any.
    pub block: Option<u32>,
}

/// The capture files a capture directory may hold, in the order one is picked: what
/// `lockcast record` writes, then what the fixture scripts write (`perf script --ns`), then
/// what the validation matrix's trace-cmd recipe writes (`trace-cmd report -t`).
pub const CAPTURE_NAMES: [&str; 9] = [
    "perf.data",
    "perf.data.gz",
    "perf.data.zst",
    "script-ns.txt",
    "script-ns.txt.gz",
    "script-ns.txt.zst",
    "report-t.txt",
    "report-t.txt.gz",
    "report-t.txt.zst",
];

/// What opening a directory with none of [`CAPTURE_NAMES`] in it says.
fn no_capture_in(path: &str) -> Error {
    let dat = std::path::Path::new(path).join("trace.dat").is_file();
    Error::Input(format!(
        "{path}: a directory, with none of the capture files lockcast looks for in one ({}){}; \
         pass the capture file itself",
        CAPTURE_NAMES.join(", "),
        if dat {
            "; its trace.dat is trace-cmd's binary format: read it with `trace-cmd report -t` \
             and pass that text"
        } else {
            ""
        }
    ))
}

/// A capture directory stands for the capture in it (`lockcast record -o DIR`); any other
/// path is itself.
pub fn resolve_dir(path: &str) -> String {
    let p = std::path::Path::new(path);
    if path == "-" || !p.is_dir() {
        return path.to_string();
    }
    CAPTURE_NAMES
        .iter()
        .map(|n| p.join(n))
        .find(|f| f.is_file())
        .map_or_else(|| path.to_string(), |f| f.to_string_lossy().into_owned())
}

impl InputSpec {
    /// Parse `path` or `path#N`. A `#` not followed by digits only is part of the path. A
    /// capture directory is replaced by the capture in it ([`resolve_dir`]).
    pub fn parse(s: &str) -> Self {
        if let Some((p, n)) = s.rsplit_once('#') {
            if !p.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(block) = n.parse::<u32>() {
                    return InputSpec {
                        path: resolve_dir(p),
                        block: Some(block),
                    };
                }
            }
        }
        InputSpec {
            path: resolve_dir(s),
            block: None,
        }
    }

    /// How the input is named in messages and tables.
    pub fn display(&self) -> String {
        match self.block {
            Some(b) => format!("{}#{b}", self.path),
            None => self.path.clone(),
        }
    }
}

/// Open `path` (or stdin for `-`) for reading, decompressing gzip/zstd transparently.
///
/// A progress bar (hidden unless stderr is a terminal and the file is larger than 64 MiB)
/// follows the compressed bytes read.
pub fn open(path: &str) -> Result<Box<dyn BufRead + Send>> {
    open_with_progress(path).map(|s| s.reader)
}

/// An input as [`open_with_progress`] opened it.
pub struct Source {
    /// The decompressed bytes.
    pub reader: Box<dyn BufRead + Send>,
    /// The progress bar, when one is shown.
    pub progress: Option<ProgressBar>,
    /// The file itself when it is a regular file read as it is (neither compressed nor
    /// standard input), for a reader that maps it instead of reading it (perf.data).
    pub plain: Option<File>,
}

/// [`open`], also returning the progress bar (when one is shown) so the caller can report
/// events/s in its message and clear it at the end, and the plain file.
pub fn open_with_progress(path: &str) -> Result<Source> {
    open_source(path, true)
}

/// [`open_with_progress`] without a bar: for a look at an input's first bytes (its format),
/// which would otherwise draw a bar for a moment and leave it to the real read's to overwrite.
pub fn open_quiet(path: &str) -> Result<Source> {
    open_source(path, false)
}

fn open_source(path: &str, bar: bool) -> Result<Source> {
    let (raw, len, plain): (Box<dyn Read + Send>, Option<u64>, Option<File>) = if path == "-" {
        (Box::new(stdin_copy()?), None, None)
    } else {
        if std::path::Path::new(path).is_dir() {
            // a caller that reads one file, not a capture directory (`plot whatif`): the
            // directory may well hold a capture, and saying it holds none was wrong
            let inside = resolve_dir(path);
            return Err(match inside == path {
                true => no_capture_in(path),
                false => Error::Input(format!(
                    "{path}: a directory, where this input is one file (the capture in it is \
                     {inside})"
                )),
            });
        }
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = f.metadata().ok();
        let plain = meta
            .as_ref()
            .filter(|m| m.is_file())
            .and_then(|_| f.try_clone().ok());
        (Box::new(f), meta.map(|m| m.len()), plain)
    };
    let pb = progress_bar(path, len.filter(|_| bar));
    let raw: Box<dyn Read + Send> = match &pb {
        Some(pb) => Box::new(pb.wrap_read(raw)),
        None => raw,
    };
    let mut buf = BufReader::with_capacity(BUF_SIZE, raw);
    let magic = buf.fill_buf().map_err(|e| Error::io(path, e))?;
    let (reader, plain): (Box<dyn BufRead + Send>, _) = if magic.starts_with(&[0x1f, 0x8b]) {
        let dec = Named("gzip", flate2::bufread::MultiGzDecoder::new(buf));
        (Box::new(BufReader::with_capacity(BUF_SIZE, dec)), None)
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        let dec = zstd::stream::read::Decoder::with_buffer(buf).map_err(|e| Error::io(path, e))?;
        let dec = Named("zstd", dec);
        (Box::new(BufReader::with_capacity(BUF_SIZE, dec)), None)
    } else {
        (Box::new(buf), plain)
    };
    Ok(Source {
        reader,
        progress: pb,
        plain,
    })
}

/// Standard input, from a copy: it can be read only once, and a command may read an input
/// twice (format detection, then the parse; `lock_stats` from one reader, the per-event tables
/// from another). The first open copies it into an unlinked temporary file (disk, not memory,
/// whatever its size; the system removes it when lockcast exits); every open reads that copy
/// from the start with its own offset.
fn stdin_copy() -> Result<StdinCopy> {
    use std::sync::{Arc, Mutex, OnceLock};
    static COPY: OnceLock<Mutex<Option<Arc<File>>>> = OnceLock::new();
    let io_err = |e| Error::io("-", e);
    let mut guard = COPY
        .get_or_init(|| Mutex::new(None))
        .lock()
        .map_err(|_| Error::Input("-: standard input copy poisoned".into()))?;
    let file = match guard.as_ref() {
        Some(f) => Arc::clone(f),
        None => {
            let mut tmp = tempfile::tempfile().map_err(io_err)?;
            io::copy(&mut io::stdin().lock(), &mut tmp).map_err(io_err)?;
            let f = Arc::new(tmp);
            *guard = Some(Arc::clone(&f));
            f
        }
    };
    Ok(StdinCopy { file, pos: 0 })
}

/// A reader of the standard-input copy with its own position (positioned reads, so several
/// readers never move each other's offset).
struct StdinCopy {
    file: std::sync::Arc<File>,
    pos: u64,
}

impl Read for StdinCopy {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// A decompressor whose errors say which compression failed: flate2 reports a cut-short
/// stream as a bare "incomplete deflate stream", and a mailed or half-copied `.gz` is the
/// usual cause.
struct Named<R>(&'static str, R);

impl<R: Read> Read for Named<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.1.read(buf).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{} stream damaged or cut short: {e}", self.0),
            )
        })
    }
}

fn progress_bar(path: &str, len: Option<u64>) -> Option<ProgressBar> {
    use std::io::IsTerminal;
    let len = len?;
    if len < 64 << 20 || !io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "[{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {msg}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(path.to_string());
    Some(pb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_block_suffix() {
        assert_eq!(
            InputSpec::parse("a/seed.txt#2"),
            InputSpec {
                path: "a/seed.txt".into(),
                block: Some(2)
            }
        );
        assert_eq!(InputSpec::parse("x#y").block, None);
        assert_eq!(InputSpec::parse("#3").path, "#3");
    }

    #[test]
    fn a_capture_directory_is_its_capture() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_string_lossy().into_owned();
        assert_eq!(resolve_dir(&dir), dir, "nothing in it: itself");
        let e = open(&dir).err().unwrap().to_string();
        assert!(
            e.contains("none of the capture files") && e.contains("perf.data"),
            "{e}"
        );
        std::fs::write(d.path().join("trace.dat"), b"").unwrap();
        let e = open(&dir).err().unwrap().to_string();
        assert!(e.contains("trace-cmd report -t"), "{e}");
        std::fs::write(d.path().join("report-t.txt.gz"), b"").unwrap();
        assert!(resolve_dir(&dir).ends_with("/report-t.txt.gz"));
        std::fs::write(d.path().join("script-ns.txt.gz"), b"").unwrap();
        assert!(resolve_dir(&dir).ends_with("/script-ns.txt.gz"));
        std::fs::write(d.path().join("perf.data"), b"").unwrap();
        assert!(InputSpec::parse(&dir).path.ends_with("/perf.data"));
        // opened as one file, a directory that holds a capture says which, not that it has none
        let e = open(&dir).err().unwrap().to_string();
        assert!(
            e.contains("where this input is one file") && e.ends_with("/perf.data)"),
            "{e}"
        );
        assert_eq!(resolve_dir("-"), "-");
    }
}
