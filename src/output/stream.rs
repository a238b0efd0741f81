//! One table written piece by piece. Parquet goes straight to disk, one row group per frame
//! handed in, so memory holds one frame at a time however large the input; CSV and JSON are
//! collected and written at the end. Like [`super::write`], the file appears under its name only
//! when complete (temporary file + rename).

use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::write::{write_frame_to, Dest, FileFormat};
use crate::error::{Error, Result};

enum State {
    /// Nothing received yet.
    Empty,
    /// Parquet being written to a temporary file in the target directory.
    Parquet {
        tmp: tempfile::NamedTempFile,
        writer: Box<polars::io::parquet::write::BatchedWriter<File>>,
    },
    /// CSV/JSON frames kept until [`TableWriter::finish`].
    Memory(Vec<DataFrame>),
}

/// A table file being written.
pub struct TableWriter {
    dest: Dest,
    format: FileFormat,
    state: State,
    /// An empty frame kept for its schema, in case no rows ever come.
    schema: Option<DataFrame>,
    rows: u64,
}

impl TableWriter {
    /// A writer of `path` in `format`; nothing is created before the first frame.
    pub fn new(path: &Path, format: FileFormat) -> Self {
        Self::to(Dest::File(path.to_path_buf()), format)
    }

    /// A writer of a file or of standard output (collected, written at [`TableWriter::finish`]).
    pub fn to(dest: Dest, format: FileFormat) -> Self {
        TableWriter {
            dest,
            format,
            state: State::Empty,
            schema: None,
            rows: 0,
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
            self.state = match (&self.dest, self.format) {
                (Dest::File(path), FileFormat::Parquet) => self.open_parquet(path, &df)?,
                _ => State::Memory(Vec::new()),
            };
        }
        let ctx = |e| Error::polars(format!("writing {}", self.dest.display()), e);
        match &mut self.state {
            State::Parquet { writer, .. } => writer.write_batch(&df).map_err(ctx),
            State::Memory(v) => {
                v.push(df);
                Ok(())
            }
            State::Empty => Ok(()),
        }
    }

    fn open_parquet(&self, path: &Path, df: &DataFrame) -> Result<State> {
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
        let writer = ParquetWriter::new(file)
            .with_compression(ParquetCompression::Zstd(None))
            .batched(df.schema())
            .map_err(self.ctx())?;
        Ok(State::Parquet {
            tmp,
            writer: Box::new(writer),
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
            State::Parquet { tmp, writer } => {
                writer.finish().map_err(self.ctx())?;
                drop(writer);
                let Dest::File(path) = &self.dest else {
                    return Err(Error::Input("parquet stream to standard output".into()));
                };
                super::write::output_mode(tmp.path(), path)?;
                tmp.persist(path)
                    .map_err(|e| Error::io(path.display(), e.error))?;
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
