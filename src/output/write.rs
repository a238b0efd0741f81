//! Files out. Every file is written to a temporary file in the target directory and renamed
//! into place only when complete, so an error or a kill never leaves a half-written output.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};

/// File formats for tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    /// Comma-separated, with a header; list columns are joined with `;`.
    Csv,
    /// Parquet with zstd compression; list columns kept as lists.
    Parquet,
    /// A JSON array of objects, one per row.
    Json,
}

impl FileFormat {
    /// File extension.
    pub fn ext(self) -> &'static str {
        match self {
            FileFormat::Csv => "csv",
            FileFormat::Parquet => "parquet",
            FileFormat::Json => "json",
        }
    }

    /// Format implied by a file name's extension.
    pub fn from_path(p: &Path) -> Option<Self> {
        match p.extension()?.to_str()? {
            "csv" => Some(FileFormat::Csv),
            "parquet" | "pq" => Some(FileFormat::Parquet),
            "json" => Some(FileFormat::Json),
            _ => None,
        }
    }
}

/// Where one table's bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// Standard output.
    Stdout,
    /// A file, written atomically (temporary file renamed into place).
    File(PathBuf),
}

impl Dest {
    /// The destination `-o PATH` names: `-` is standard output.
    pub fn of(path: &Path) -> Dest {
        match path.as_os_str() == "-" {
            true => Dest::Stdout,
            false => Dest::File(path.to_path_buf()),
        }
    }

    /// Write `f`'s output here: a file atomically ([`atomic_write`]), standard output
    /// directly (for callers that make the whole output before the first byte, so that only
    /// the write itself can fail there).
    pub fn write(&self, f: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
        match self {
            Dest::File(path) => atomic_write(path, f),
            Dest::Stdout => {
                let mut out = std::io::stdout().lock();
                f(&mut out)?;
                out.flush().map_err(|e| Error::io("standard output", e))
            }
        }
    }

    /// How the destination is named in messages.
    pub fn display(&self) -> String {
        match self {
            Dest::Stdout => "standard output".into(),
            Dest::File(p) => p.display().to_string(),
        }
    }
}

/// What an output path names now, and so how a complete output gets there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// Nothing yet, or a regular file: a temporary file beside it is renamed onto this path
    /// (a symlink's target, so the link stays a link).
    Beside(PathBuf),
    /// A device, FIFO or socket (`/dev/null`, `/dev/stdout`, a shell's `>(gzip > f)`): a
    /// file renamed onto it would replace the node itself (as root, `/dev/null` too), so the
    /// complete output is copied into it instead, as to standard output.
    Into(PathBuf),
}

/// Where the output for `path` goes ([`Place`]). A directory, or a path that cannot be
/// looked at, is left to the writing to fail on and name. A symlink is written through, also
/// one whose target does not exist yet (as a shell's `>` creates it).
pub(crate) fn place(path: &Path) -> Place {
    // through symlinks
    match fs::metadata(path) {
        Ok(m) if m.is_file() => {
            let link = fs::symlink_metadata(path).is_ok_and(|l| l.file_type().is_symlink());
            match link.then(|| fs::canonicalize(path).ok()).flatten() {
                Some(target) => Place::Beside(target),
                None => Place::Beside(path.to_path_buf()),
            }
        }
        Ok(m) if !m.is_dir() => Place::Into(path.to_path_buf()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Place::Beside(dangling_target(path)),
        _ => Place::Beside(path.to_path_buf()),
    }
}

/// Where a path that does not resolve points: the end of its chain of symlinks (each relative
/// one read from its own directory), or the path itself when it is no symlink. Renamed onto
/// the link instead, the output replaced it with a file and the target stayed missing.
fn dangling_target(path: &Path) -> PathBuf {
    let mut at = path.to_path_buf();
    // the kernel's limit on symlinks followed in one lookup (MAXSYMLINKS)
    for _ in 0..40 {
        let Ok(next) = fs::read_link(&at) else {
            return at;
        };
        at = match at.parent() {
            Some(dir) => dir.join(next),
            None => next,
        };
    }
    path.to_path_buf()
}

/// Copy the complete output in `tmp` (an unlinked temporary file) to `out`, named `name`.
pub(crate) fn copy_out(tmp: &mut fs::File, out: &mut dyn Write, name: &str) -> Result<()> {
    use std::io::Seek;
    tmp.rewind()
        .and_then(|()| std::io::copy(tmp, out))
        .and_then(|_| out.flush())
        .map_err(|e| Error::io(name, e))
}

/// Open the node `path` of a [`Place::Into`] for writing.
pub(crate) fn open_into(path: &Path) -> Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path.display(), e))
}

/// Write `bytes`-producing closure output to `path` atomically: into a temporary file renamed
/// into place when complete, or, for a device or FIFO ([`Place::Into`]), copied into it.
pub fn atomic_write(path: &Path, f: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let path = match place(path) {
        Place::Beside(p) => p,
        Place::Into(node) => {
            let name = node.display().to_string();
            let mut tmp = tempfile::tempfile().map_err(|e| Error::io(&name, e))?;
            {
                let mut w = BufWriter::new(&mut tmp);
                f(&mut w)?;
                w.flush().map_err(|e| Error::io(&name, e))?;
            }
            return copy_out(&mut tmp, &mut open_into(&node)?, &name);
        }
    };
    let path = path.as_path();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".lockcast-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| Error::io(dir.display(), e))?;
    // a truncated input ends the process without running drops (`lockcast_parsers::truncation`)
    let _cleanup = lockcast_parsers::truncation::remove_on_truncation(tmp.path());
    {
        let mut w = BufWriter::new(tmp.as_file());
        f(&mut w)?;
        w.flush().map_err(|e| Error::io(path.display(), e))?;
    }
    output_mode(tmp.path(), path)?;
    tmp.persist(path)
        .map_err(|e| Error::io(path.display(), e.error))?;
    Ok(())
}

/// tempfile creates 0600; an output file should get the usual 0666 minus umask, like any file
/// a shell redirect creates. `tmp` is the temporary file, `path` its final name (for errors).
pub(crate) fn output_mode(tmp: &Path, path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = 0o666 & !current_umask();
        fs::set_permissions(tmp, fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io(path.display(), e))?;
    }
    Ok(())
}

/// The process umask, read from /proc (setting it to read it back would race other threads).
#[cfg(unix)]
fn current_umask() -> u32 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// Write one frame to `path` in `format`.
pub fn write_frame(df: &DataFrame, path: &Path, format: FileFormat) -> Result<()> {
    write_frame_to(df, &Dest::File(path.to_path_buf()), format)
}

/// Write one frame to a file (atomically) or to standard output.
pub fn write_frame_to(df: &DataFrame, dest: &Dest, format: FileFormat) -> Result<()> {
    let name = dest.display();
    let ctx = |e: PolarsError| Error::polars(format!("writing {name}"), e);
    let body = |w: &mut dyn Write| -> Result<()> {
        match format {
            FileFormat::Csv => {
                let mut flat = flatten_lists(df).map_err(ctx)?;
                CsvWriter::new(w).finish(&mut flat).map_err(ctx)
            }
            FileFormat::Parquet => {
                let mut df = df.clone();
                ParquetWriter::new(w)
                    .with_compression(ParquetCompression::Zstd(None))
                    .finish(&mut df)
                    .map(|_| ())
                    .map_err(ctx)
            }
            FileFormat::Json => {
                let v = frame_to_json(df).map_err(ctx)?;
                serde_json::to_writer_pretty(&mut *w, &v)
                    .map_err(|e| Error::io(&name, e.into()))?;
                w.write_all(b"\n").map_err(|e| Error::io(&name, e))
            }
        }
    };
    dest.write(body)
}

/// CSV cannot hold lists: join list-of-string cells with `;` (the folded-stack convention).
pub(crate) fn flatten_lists(df: &DataFrame) -> PolarsResult<DataFrame> {
    let mut out = df.clone();
    let names: Vec<PlSmallStr> = df
        .columns()
        .iter()
        .filter(|c| matches!(c.dtype(), DataType::List(_)))
        .map(|c| c.name().clone())
        .collect();
    for name in names {
        let col = df.column(&name)?;
        let lists = col.list()?;
        let joined: Vec<Option<String>> = lists
            .amortized_iter()
            .map(|s| {
                s.map(|s| {
                    let s = s
                        .as_ref()
                        .cast(&DataType::String)
                        .unwrap_or_else(|_| s.as_ref().clone());
                    s.str()
                        .map(|ca| ca.iter().flatten().collect::<Vec<_>>().join(";"))
                        .unwrap_or_default()
                })
            })
            .collect();
        out.with_column(Column::new(name, joined))?;
    }
    Ok(out)
}

/// A frame as a JSON array of objects (column order kept).
pub fn frame_to_json(df: &DataFrame) -> PolarsResult<serde_json::Value> {
    let rows = (0..df.height())
        .map(|i| row_to_json(df, i))
        .collect::<PolarsResult<Vec<_>>>()?;
    Ok(serde_json::Value::Array(rows))
}

/// Row `i` of `df` as one element of [`frame_to_json`]'s array: a writer of many rows builds
/// one at a time instead of the whole array (`contention` JSON of a 1 GB trace, written from
/// pieces of 65 536 rows, peaked at 183 MiB with the whole piece's array, 44 without).
pub(crate) fn row_to_json(df: &DataFrame, i: usize) -> PolarsResult<serde_json::Value> {
    let mut obj = serde_json::Map::new();
    for c in df.columns() {
        obj.insert(c.name().to_string(), any_to_json(c.get(i)?));
    }
    Ok(serde_json::Value::Object(obj))
}

fn any_to_json(v: AnyValue<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        AnyValue::Null => J::Null,
        AnyValue::Boolean(b) => J::Bool(b),
        AnyValue::String(s) => J::String(s.to_string()),
        AnyValue::StringOwned(s) => J::String(s.to_string()),
        AnyValue::UInt8(x) => J::from(x),
        AnyValue::UInt16(x) => J::from(x),
        AnyValue::UInt32(x) => J::from(x),
        AnyValue::UInt64(x) => J::from(x),
        AnyValue::Int8(x) => J::from(x),
        AnyValue::Int16(x) => J::from(x),
        AnyValue::Int32(x) => J::from(x),
        AnyValue::Int64(x) => J::from(x),
        AnyValue::Float32(x) => J::from(f64::from(x)),
        AnyValue::Float64(x) => J::from(x),
        AnyValue::List(s) => J::Array(
            (0..s.len())
                .map(|i| s.get(i).map(any_to_json).unwrap_or(J::Null))
                .collect(),
        ),
        other => J::String(other.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A symlink to a file is written through (the link stays a link, the file it names gets
    /// the output); a FIFO is written into; anything else is written beside and renamed.
    #[test]
    fn outputs_go_where_the_path_points() {
        let dir = tempfile::tempdir().unwrap();
        // `text` written to `path`, which is still a symlink afterwards
        let write_through = |path: &Path, text: &str| {
            atomic_write(path, |w| {
                w.write_all(text.as_bytes()).map_err(|e| Error::io("t", e))
            })
            .unwrap();
            assert!(fs::symlink_metadata(path).unwrap().file_type().is_symlink());
        };
        let file = dir.path().join("t.csv");
        fs::write(&file, "old").unwrap();
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(
            place(&link),
            Place::Beside(fs::canonicalize(&file).unwrap())
        );
        write_through(&link, "new");
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        let fresh = dir.path().join("fresh.csv");
        assert_eq!(place(&fresh), Place::Beside(fresh.clone()));
        // a dangling symlink, relative, through another: the output is created where it points
        fs::create_dir(dir.path().join("sub")).unwrap();
        let (hop, dangling) = (dir.path().join("sub/hop"), dir.path().join("dangling.csv"));
        std::os::unix::fs::symlink("made.csv", &hop).unwrap();
        std::os::unix::fs::symlink("sub/hop", &dangling).unwrap();
        write_through(&dangling, "made");
        assert_eq!(
            fs::read_to_string(dir.path().join("sub/made.csv")).unwrap(),
            "made"
        );
        assert_eq!(place(dir.path()), Place::Beside(dir.path().to_path_buf()));
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(place(&fifo), Place::Into(fifo.clone()));
    }
}
