//! One table written piece by piece. Files go straight to disk as frames are handed in (Parquet
//! one row group per frame, CSV rows after one header, JSON objects of one array), so memory
//! holds one frame at a time however large the input; the bytes are those of writing the whole
//! table at once ([`super::write::write_frame_to`]). Like [`super::write`], a file appears
//! under its name only when complete (temporary file + rename). Standard output is written the
//! same way into an unlinked temporary file (in `$TMPDIR`, else `/tmp`) and copied out when
//! complete: an error then leaves nothing half-printed, and memory still holds one frame at a
//! time (it was collected in memory whole, and is when no temporary file can be made).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::write::{
    copy_out, flatten_lists, open_into, place, row_to_json, write_frame_to, Dest, FileFormat, Place,
};
use crate::error::{Error, Result};

enum State {
    /// Nothing received yet.
    Empty,
    /// Parquet being written to a temporary file, through `buffer`.
    Parquet {
        tmp: Tmp,
        writer: Box<polars::io::parquet::write::BatchedWriter<Shared>>,
        buffer: Shared,
    },
    /// CSV being written: the header with the first frame, rows with every frame.
    Csv {
        tmp: Tmp,
        writer: Box<polars::io::csv::write::BatchedWriter<File>>,
    },
    /// A JSON array being written: `[`, then each frame's objects.
    Json {
        tmp: Tmp,
        out: BufWriter<File>,
        first: bool,
    },
    /// Frames for standard output when no temporary file could be made, kept until
    /// [`TableWriter::finish`].
    Memory(Vec<DataFrame>),
}

/// The Parquet writer's file, buffered. polars writes page headers a few bytes at a time
/// straight into the file it is given: 384 285 `write` calls, 308 128 of them of one byte, for
/// the six tables of a 303 MB tracepoint text; buffered, 335 calls, and the sink thread's
/// samples in a profile of that parse fell from 664 to 344. Its batched writer never gives its
/// file back, so the buffer is shared, and flushed (its error seen) once the writer finished.
#[derive(Clone)]
struct Shared(std::sync::Arc<std::sync::Mutex<BufWriter<File>>>);

impl Shared {
    fn new(file: File) -> Self {
        Shared(std::sync::Arc::new(std::sync::Mutex::new(
            BufWriter::with_capacity(128 << 10, file),
        )))
    }

    fn lock(&self) -> std::io::Result<std::sync::MutexGuard<'_, BufWriter<File>>> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("a Parquet writer thread panicked"))
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock()?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.lock()?.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.lock()?.flush()
    }
}

/// Where a table is written until it is complete.
enum Tmp {
    /// A temporary file beside the target file `path`, renamed onto it.
    Beside {
        tmp: tempfile::NamedTempFile,
        path: PathBuf,
        /// Removes `tmp` if an input is found truncated meanwhile, which ends the process
        /// without running its drop (`lockcast_parsers::truncation`).
        _cleanup: lockcast_parsers::truncation::Registration,
    },
    /// An unlinked temporary file for standard output (`None`) or a device or FIFO
    /// ([`Place::Into`]), copied out.
    Unlinked(File, Option<PathBuf>),
}

/// A table file being written.
pub struct TableWriter {
    dest: Dest,
    format: FileFormat,
    state: State,
    /// An empty frame kept for its schema, in case no rows ever come.
    schema: Option<DataFrame>,
    rows: u64,
    /// Standard output's unlinked temporary file, made with the writer (a file's is made
    /// with its first frame): whether there is one decides where a Parquet table's row groups
    /// are encoded ([`TableWriter::takes_encoded`]) before any frame is built.
    stdout_file: Option<(Tmp, File)>,
}

impl TableWriter {
    /// A writer of `path` in `format`; nothing is created before the first frame.
    pub fn new(path: &Path, format: FileFormat) -> Self {
        Self::to(Dest::File(path.to_path_buf()), format)
    }

    /// A writer of a file or of standard output (written into an unlinked temporary file, or
    /// collected when none can be made, and copied out at [`TableWriter::finish`]).
    pub fn to(dest: Dest, format: FileFormat) -> Self {
        let stdout_file = match dest {
            Dest::Stdout => unlinked(None).ok(),
            Dest::File(_) => None,
        };
        TableWriter {
            dest,
            format,
            state: State::Empty,
            schema: None,
            rows: 0,
            stdout_file,
        }
    }

    /// Where the table goes.
    pub fn dest(&self) -> &Dest {
        &self.dest
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn ctx(&self) -> impl Fn(PolarsError) -> Error + '_ {
        move |e| Error::polars(format!("writing {}", self.dest.display()), e)
    }

    /// Append one frame (all frames of a table have the same schema).
    pub fn write(&mut self, df: DataFrame) -> Result<()> {
        if self.schema.is_none() {
            self.schema = Some(df.clear());
        }
        if df.height() == 0 {
            return Ok(());
        }
        self.rows += df.height() as u64;
        if matches!(self.state, State::Empty) {
            self.state = match self.temp()? {
                None => State::Memory(Vec::new()),
                Some((tmp, file)) => match self.format {
                    FileFormat::Parquet => self.open_parquet(tmp, file, &df)?,
                    FileFormat::Csv => self.open_csv(tmp, file, &df)?,
                    FileFormat::Json => {
                        let mut out = BufWriter::new(file);
                        out.write_all(b"[\n")
                            .map_err(|e| Error::io(self.dest.display(), e))?;
                        State::Json {
                            tmp,
                            out,
                            first: true,
                        }
                    }
                },
            };
        }
        let name = self.dest.display();
        let ctx = |e| Error::polars(format!("writing {name}"), e);
        match &mut self.state {
            State::Parquet { writer, .. } => writer.write_batch(&df).map_err(ctx),
            State::Csv { writer, .. } => {
                // lists joined as write_frame_to joins them; one chunk per column, as the
                // batched writer requires
                let mut flat = flatten_lists(&df).map_err(ctx)?;
                flat.rechunk_mut();
                writer.write_batch(&flat).map_err(ctx)
            }
            State::Json { out, first, .. } => {
                write_json_rows(out, &df, first).map_err(|e| match e {
                    JsonError::Polars(e) => ctx(e),
                    JsonError::Io(e) => Error::io(&name, e),
                })
            }
            State::Memory(v) => {
                v.push(df);
                Ok(())
            }
            State::Empty => Ok(()),
        }
    }

    /// Append a frame encoded by [`super::row_groups::encode`] (a Parquet file's writer only:
    /// any other destination gets nothing and an error).
    pub fn write_encoded(&mut self, enc: super::row_groups::Encoded) -> Result<()> {
        if self.schema.is_none() {
            self.schema = Some(enc.schema.clone());
        }
        if enc.rows == 0 {
            return Ok(());
        }
        self.rows += enc.rows as u64;
        let dest = self.dest.display();
        let other_format = || {
            Error::Input(format!(
                "{dest}: Parquet row groups for a file of another format"
            ))
        };
        if !self.takes_encoded() {
            return Err(other_format());
        }
        if matches!(self.state, State::Empty) {
            // a file's `temp` makes one (or fails); standard output's was made with the writer
            let (tmp, file) = self.temp()?.ok_or_else(other_format)?;
            self.state = self.open_parquet(tmp, file, &enc.schema)?;
        }
        let State::Parquet { writer, .. } = &mut self.state else {
            return Err(other_format());
        };
        for (rows, pages) in &enc.groups {
            writer
                .write_row_group(*rows as u64, pages)
                .map_err(|e| Error::polars(format!("writing {dest}"), e))?;
        }
        Ok(())
    }

    /// Whether frames for this writer are best encoded where they are built
    /// ([`TableWriter::write_encoded`]): Parquet into a file, or onto standard output through
    /// its temporary file (the same bytes either way).
    pub fn takes_encoded(&self) -> bool {
        self.format == FileFormat::Parquet
            && match self.dest {
                Dest::File(_) => true,
                Dest::Stdout => {
                    self.stdout_file.is_some() || matches!(self.state, State::Parquet { .. })
                }
            }
    }

    /// The temporary file this table is written to and a handle to write it with; `None`:
    /// standard output and no temporary file could be made (the frames are then kept).
    fn temp(&mut self) -> Result<Option<(Tmp, File)>> {
        match &self.dest {
            Dest::File(path) => {
                let path = match place(path) {
                    Place::Beside(p) => p,
                    Place::Into(node) => {
                        let name = node.display().to_string();
                        return unlinked(Some(node))
                            .map(Some)
                            .map_err(|e| Error::io(name, e));
                    }
                };
                self.temp_beside(path)
            }
            Dest::Stdout => Ok(self.stdout_file.take()),
        }
    }

    /// A temporary file beside the file `path`, renamed onto it at the end.
    fn temp_beside(&self, path: PathBuf) -> Result<Option<(Tmp, File)>> {
        temp_in(&path).map(|(tmp, f)| {
            let _cleanup = lockcast_parsers::truncation::remove_on_truncation(tmp.path());
            Some((
                Tmp::Beside {
                    tmp,
                    path,
                    _cleanup,
                },
                f,
            ))
        })
    }

    fn open_csv(&self, tmp: Tmp, file: File, df: &DataFrame) -> Result<State> {
        // the schema after lists are joined: the header names are the same
        let flat = flatten_lists(&df.clear()).map_err(self.ctx())?;
        // unbuffered: the writer serializes whole batches of rows before each write
        let writer = CsvWriter::new(file)
            .batched(flat.schema())
            .map_err(self.ctx())?;
        Ok(State::Csv {
            tmp,
            writer: Box::new(writer),
        })
    }

    fn open_parquet(&self, tmp: Tmp, file: File, df: &DataFrame) -> Result<State> {
        let buffer = Shared::new(file);
        let writer = ParquetWriter::new(buffer.clone())
            .with_compression(super::row_groups::COMPRESSION)
            .batched(df.schema())
            .map_err(self.ctx())?;
        Ok(State::Parquet {
            tmp,
            writer: Box::new(writer),
            buffer,
        })
    }

    /// Finish the file (an empty table is written with its schema); returns the rows written.
    /// A table that never received a frame writes nothing and returns 0.
    pub fn finish(mut self) -> Result<u64> {
        let Some(schema) = self.schema.take() else {
            return Ok(0);
        };
        let state = std::mem::replace(&mut self.state, State::Empty);
        match state {
            State::Empty => write_frame_to(&schema, &self.dest, self.format)?,
            State::Parquet {
                tmp,
                writer,
                mut buffer,
            } => {
                writer.finish().map_err(self.ctx())?;
                drop(writer);
                buffer
                    .flush()
                    .map_err(|e| Error::io(self.dest.display(), e))?;
                self.persist(tmp)?;
            }
            State::Csv { tmp, mut writer } => {
                writer.finish().map_err(self.ctx())?;
                drop(writer);
                self.persist(tmp)?;
            }
            State::Json { tmp, mut out, .. } => {
                let name = self.dest.display();
                out.write_all(b"\n]\n")
                    .and_then(|()| out.flush())
                    .map_err(|e| Error::io(&name, e))?;
                drop(out);
                self.persist(tmp)?;
            }
            State::Memory(frames) => {
                let mut all = schema;
                for f in &frames {
                    all.vstack_mut(f).map_err(self.ctx())?;
                }
                write_frame_to(&all, &self.dest, self.format)?;
            }
        }
        Ok(self.rows)
    }
}

impl TableWriter {
    /// Give the complete temporary file its final name, or copy it to standard output.
    fn persist(&self, tmp: Tmp) -> Result<()> {
        match tmp {
            Tmp::Beside { tmp, path, .. } => {
                super::write::output_mode(tmp.path(), &path)?;
                tmp.persist(&path)
                    .map_err(|e| Error::io(path.display(), e.error))?;
                Ok(())
            }
            Tmp::Unlinked(mut f, None) => {
                copy_out(&mut f, &mut std::io::stdout().lock(), &self.dest.display())
            }
            Tmp::Unlinked(mut f, Some(node)) => {
                copy_out(&mut f, &mut open_into(&node)?, &self.dest.display())
            }
        }
    }
}

/// An unlinked temporary file copied out to standard output (`into` `None`) or a device or
/// FIFO when complete, and a handle to write it with.
fn unlinked(into: Option<PathBuf>) -> std::io::Result<(Tmp, File)> {
    let f = tempfile::tempfile()?;
    let w = f.try_clone()?;
    Ok((Tmp::Unlinked(f, into), w))
}

/// A temporary file next to `path` (so the rename stays on one file system) and a handle to it.
fn temp_in(path: &Path) -> Result<(tempfile::NamedTempFile, File)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".lockcast-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| Error::io(dir.display(), e))?;
    let file = tmp
        .as_file()
        .try_clone()
        .map_err(|e| Error::io(path.display(), e))?;
    Ok((tmp, file))
}

enum JsonError {
    Polars(PolarsError),
    Io(std::io::Error),
}

/// The rows of `df` as elements of the JSON array being written, exactly as
/// `serde_json::to_writer_pretty` prints them inside the whole array: each object pretty-printed
/// and indented one level (two spaces; strings hold no raw newline, so every line is the
/// object's), `,\n` between elements.
fn write_json_rows(
    out: &mut impl Write,
    df: &DataFrame,
    first: &mut bool,
) -> std::result::Result<(), JsonError> {
    for i in 0..df.height() {
        let row = row_to_json(df, i).map_err(JsonError::Polars)?;
        let text = serde_json::to_string_pretty(&row).map_err(|e| JsonError::Io(e.into()))?;
        if !*first {
            out.write_all(b",\n").map_err(JsonError::Io)?;
        }
        *first = false;
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                out.write_all(b"\n").map_err(JsonError::Io)?;
            }
            out.write_all(b"  ").map_err(JsonError::Io)?;
            out.write_all(line.as_bytes()).map_err(JsonError::Io)?;
        }
    }
    Ok(())
}
