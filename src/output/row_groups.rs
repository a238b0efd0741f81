//! Parquet row groups encoded away from the writer: a frame's columns are encoded and
//! zstd-compressed into pages wherever the frame was built (the parser threads of
//! [`crate::ingest`]), and [`super::stream::TableWriter`] only appends the pages to the file.
//!
//! The pages are those polars' `BatchedWriter::write_batch` makes of the same frame (the same
//! arrow schema, Parquet schema, per-column encodings and write options: zstd at its default
//! level, min/max/null-count statistics, format version 1, 1 MiB data pages), so the file is
//! byte for byte the one writing the frames on the writer thread gives; only where the CPU
//! time is spent changes.

use polars::io::parquet::write::{get_encodings, ParquetCompression, StatisticsOptions};
use polars::prelude::*;
use polars_parquet::parquet::page::{CompressedDictPage, DataPageHeader};
use polars_parquet::parquet::CowBuffer;
use polars_parquet::read::ParquetError;
use polars_parquet::write::{
    array_to_columns, compress, to_parquet_schema, CompressedDataPage, CompressedPage,
    CompressionOptions, Page, Version, WriteOptions,
};
use std::cell::RefCell;

use crate::error::{Error, Result};

/// The compression every lockcast Parquet file uses (zstd, the library's default level).
pub const COMPRESSION: ParquetCompression = ParquetCompression::Zstd(None);

/// One frame's row groups, ready to be appended to a Parquet file of its schema.
pub struct Encoded {
    /// The frame without rows (its schema; what a table with no rows is written from).
    pub schema: DataFrame,
    /// Rows over all groups.
    pub rows: usize,
    /// Per row group: its rows and each leaf column's compressed pages.
    pub groups: Vec<(usize, Vec<Vec<CompressedPage>>)>,
}

/// The write options `ParquetWriter::new(..).with_compression(COMPRESSION)` materializes.
fn options() -> WriteOptions {
    WriteOptions {
        statistics: StatisticsOptions::default(),
        compression: COMPRESSION.into(),
        version: Version::V1,
        data_page_size: None,
    }
}

/// Encode and compress `df` into row groups, one per chunk of its columns (as `write_batch`
/// cuts them).
pub fn encode(df: &DataFrame) -> Result<Encoded> {
    let ctx = |e| Error::polars("encoding a Parquet row group", e);
    let arrow = df.schema().to_arrow(CompatLevel::newest());
    let parquet = to_parquet_schema(&arrow).map_err(ctx)?;
    let encodings = get_encodings(&arrow);
    let options = options();
    let mut groups = Vec::new();
    for batch in df.iter_chunks(CompatLevel::newest(), false) {
        let rows = batch.len();
        if rows == 0 {
            continue;
        }
        let mut columns = Vec::new();
        for ((array, ty), enc) in batch
            .columns()
            .iter()
            .zip(parquet.fields())
            .zip(encodings.iter())
        {
            let ours = super::list_pages::columns(array, ty, options)
                .or_else(|| super::dict_pages::columns(array, ty, options, enc));
            let leaves: Vec<Box<dyn Iterator<Item = _> + Send>> = match ours {
                Some(pages) => pages.map_err(ctx)?,
                None => array_to_columns(array, ty.clone(), options, enc)
                    .map_err(ctx)?
                    .into_iter()
                    .map(|p| Box::new(p) as Box<dyn Iterator<Item = _> + Send>)
                    .collect(),
            };
            for pages in leaves {
                // as polars' writer hands encoding errors to the compressor
                let pages = pages.map(|r| {
                    r.map_err(|e| {
                        ParquetError::FeatureNotSupported(format!("reraised in polars: {e}"))
                    })
                });
                let compressed: Vec<CompressedPage> = pages
                    .map(|p| compress_page(p?, options.compression))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| ctx(e.into()))?;
                columns.push(compressed);
            }
        }
        groups.push((rows, columns));
    }
    Ok(Encoded {
        schema: df.clear(),
        rows: df.height(),
        groups,
    })
}

thread_local! {
    /// This thread's zstd context and its level, made on its first page. polars' page
    /// compressor calls `zstd::bulk::compress_to_buffer`, which makes and frees a context per
    /// page (`ZSTD_createCCtx` was 2.5% of parsing a tracepoint text to Parquet).
    static ZSTD: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
}

/// `input` zstd-compressed at `level` with this thread's context. A context's parameters are
/// set when it is made, and a frame depends on nothing else, so the bytes are those of a
/// fresh context.
fn zstd_with_context(level: i32, input: &[u8]) -> std::io::Result<Vec<u8>> {
    ZSTD.with(|cell| {
        let mut cell = cell.borrow_mut();
        let mut z = match cell.take() {
            Some((l, z)) if l == level => z,
            _ => zstd::bulk::Compressor::new(level)?,
        };
        let out = z.compress(input);
        *cell = Some((level, z));
        out
    })
}

/// One page compressed as polars' `write::compress` would with `compression`: the same
/// header, sizes and bytes. zstd (what [`COMPRESSION`] is) on version 1 data pages (what
/// [`options`] asks for) and dictionary pages is done here, at polars' level (its default: 0);
/// anything else goes through polars' own function.
fn compress_page(
    page: Page,
    compression: CompressionOptions,
) -> std::result::Result<CompressedPage, ParquetError> {
    let CompressionOptions::Zstd(level) = compression else {
        return compress(page, Vec::new(), compression);
    };
    let level = level.map_or(0, |l| l.compression_level());
    match page {
        Page::Data(p) if matches!(p.header(), DataPageHeader::V1(_)) => {
            let buf = zstd_with_context(level, p.buffer())?;
            let num_rows = p.num_rows().ok_or_else(|| {
                ParquetError::OutOfSpec("a data page to write without its row count".into())
            })?;
            Ok(CompressedPage::Data(CompressedDataPage::new(
                p.header().clone(),
                CowBuffer::Owned(buf),
                compression.into(),
                p.buffer().len(),
                p.descriptor,
                num_rows,
            )))
        }
        Page::Dict(d) => {
            let buf = zstd_with_context(level, &d.buffer)?;
            Ok(CompressedPage::Dict(CompressedDictPage::new(
                CowBuffer::Owned(buf),
                compression.into(),
                d.buffer.len(),
                d.num_values,
                d.is_sorted,
            )))
        }
        other => compress(other, Vec::new(), compression),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::*;
    use crate::frames::events::{EventTable, EventTables};
    use crate::output::stream::TableWriter;
    use crate::output::write::FileFormat;

    /// The `samples` frames of the bundled cpu-clock capture, cut every 1000 rows.
    pub(in crate::output) fn sample_frames() -> Vec<DataFrame> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/samples/micro-16K-cpu-clock-g/script.txt.gz"
        );
        let input = crate::input::open(path).unwrap();
        let mut rd = lockcast_parsers::detect::Format::PerfScript
            .open_events(input, &Default::default())
            .unwrap();
        let mut tables = EventTables::new(path, &[EventTable::Samples], false);
        let mut frames = Vec::new();
        while let Some(e) = rd.next_event().unwrap() {
            tables.push(&e).unwrap();
            if tables.rows() == 1000 {
                frames.extend(tables.take().unwrap().into_iter().map(|(_, df)| df));
            }
        }
        frames.extend(tables.take().unwrap().into_iter().map(|(_, df)| df));
        frames
    }

    /// The event tables (`events` and five typed ones) of the bundled tracepoint capture,
    /// cut every 5000 rows.
    pub(in crate::output) fn event_frames() -> Vec<DataFrame> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/replay/micro-16K-r1/script-ns.txt.gz"
        );
        let input = crate::input::open(path).unwrap();
        let mut rd = lockcast_parsers::detect::Format::PerfScript
            .open_events(input, &Default::default())
            .unwrap();
        let wanted = [
            "events",
            "contention_begin",
            "contention_end",
            "lru_insertion",
        ]
        .into_iter()
        .chain(["page_alloc", "page_free"])
        .map(|n| EventTable::from_name(n).unwrap())
        .collect::<Vec<_>>();
        let mut tables = EventTables::new(path, &wanted, false);
        let mut frames = Vec::new();
        while let Some(e) = rd.next_event().unwrap() {
            tables.push(&e).unwrap();
            if tables.rows() >= 5000 {
                frames.extend(tables.take().unwrap().into_iter().map(|(_, df)| df));
            }
        }
        frames.extend(tables.take().unwrap().into_iter().map(|(_, df)| df));
        frames
    }

    /// The tracepoint tables written with the dictionary shortcut, byte for byte the file
    /// polars' writer makes of the same frames.
    #[test]
    fn event_row_groups_write_the_file_write_batch_writes() {
        let frames = event_frames();
        assert!(frames.len() > 6, "{} frames", frames.len());
        let dir = tempfile::tempdir().unwrap();
        let mut by_schema: Vec<(DataFrame, TableWriter, TableWriter)> = Vec::new();
        for df in &frames {
            let i = match by_schema
                .iter()
                .position(|(s, ..)| s.schema() == df.schema())
            {
                Some(i) => i,
                None => {
                    let n = by_schema.len();
                    let a = TableWriter::new(
                        &dir.path().join(format!("a{n}.parquet")),
                        FileFormat::Parquet,
                    );
                    let b = TableWriter::new(
                        &dir.path().join(format!("b{n}.parquet")),
                        FileFormat::Parquet,
                    );
                    by_schema.push((df.clear(), a, b));
                    n
                }
            };
            let (_, a, b) = &mut by_schema[i];
            a.write(df.clone()).unwrap();
            b.write_encoded(encode(df).unwrap()).unwrap();
        }
        assert_eq!(by_schema.len(), 6);
        for (n, (_, a, b)) in by_schema.into_iter().enumerate() {
            assert_eq!(a.finish().unwrap(), b.finish().unwrap());
            let a = std::fs::read(dir.path().join(format!("a{n}.parquet"))).unwrap();
            let b = std::fs::read(dir.path().join(format!("b{n}.parquet"))).unwrap();
            assert_eq!(a, b, "table {n}");
        }
    }

    /// The `samples` frames encoded here and written by polars' writer: the same rows read
    /// back, every column chunk byte for byte polars' but the call chains' symbols and DSOs,
    /// which are dictionary-encoded here (polars writes nested strings plain; their pages are
    /// checked in `list_pages`).
    #[test]
    fn encoded_samples_are_write_batch_files_but_for_the_call_chain_dictionaries() {
        let frames = sample_frames();
        assert!(frames.len() > 2, "{} frames", frames.len());
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.parquet"), dir.path().join("b.parquet"));
        let mut wa = TableWriter::new(&a, FileFormat::Parquet);
        let mut wb = TableWriter::new(&b, FileFormat::Parquet);
        assert!(wb.takes_encoded());
        for df in &frames {
            wa.write(df.clone()).unwrap();
            wb.write_encoded(encode(df).unwrap()).unwrap();
        }
        let rows: usize = frames.iter().map(DataFrame::height).sum();
        assert_eq!(wa.finish().unwrap(), rows as u64);
        assert_eq!(wb.finish().unwrap(), rows as u64);
        let (fa, fb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        let meta = |path: &std::path::Path| {
            polars_parquet::read::read_metadata(&mut std::fs::File::open(path).unwrap()).unwrap()
        };
        let (ma, mb) = (meta(&a), meta(&b));
        assert_eq!(ma.row_groups.len(), frames.len());
        assert_eq!(mb.row_groups.len(), frames.len());
        let mut dicts = 0;
        for (ga, gb) in ma.row_groups.iter().zip(&mb.row_groups) {
            assert_eq!(ga.num_rows(), gb.num_rows());
            for (ca, cb) in ga.parquet_columns().iter().zip(gb.parquet_columns()) {
                let name = cb.descriptor().path_in_schema[0].as_str();
                assert_eq!(ca.num_values(), cb.num_values(), "{name}");
                if matches!(name, "stack_symbol" | "stack_dso") {
                    assert!(ca.dictionary_page_offset().is_none(), "{name}");
                    assert!(cb.dictionary_page_offset().is_some(), "{name}");
                    dicts += 1;
                    continue;
                }
                let (ra, rb) = (ca.byte_range(), cb.byte_range());
                assert_eq!(
                    fa[ra.start as usize..ra.end as usize],
                    fb[rb.start as usize..rb.end as usize],
                    "{name}"
                );
            }
        }
        assert_eq!(dicts, 2 * frames.len());
        // and it reads back as the frames
        let back = ParquetReader::new(std::fs::File::open(&b).unwrap())
            .finish()
            .unwrap();
        let mut all = frames[0].clone();
        for df in &frames[1..] {
            all.vstack_mut(df).unwrap();
        }
        assert!(back.equals_missing(&all));
        let stacks = back
            .column("stack_symbol")
            .unwrap()
            .list()
            .unwrap()
            .get_inner();
        assert!(stacks.len() > 10_000, "{} frames", stacks.len());
    }

    /// Every page of a frame, data and dictionary, compressed here and by polars' own
    /// `compress`: the same header, sizes and bytes (Debug prints them all).
    #[test]
    fn pages_compress_as_polars_compresses_them() {
        let frames = sample_frames();
        let df = &frames[0];
        let arrow = df.schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow).unwrap();
        let encodings = get_encodings(&arrow);
        let (mut data, mut dict) = (0, 0);
        for batch in df.iter_chunks(CompatLevel::newest(), false) {
            for ((array, ty), enc) in batch
                .columns()
                .iter()
                .zip(parquet.fields())
                .zip(encodings.iter())
            {
                for pages in array_to_columns(array, ty.clone(), options(), enc).unwrap() {
                    for page in pages {
                        let page = page.unwrap();
                        let copy = match &page {
                            Page::Data(p) => {
                                data += 1;
                                Page::Data(p.clone())
                            }
                            Page::Dict(p) => {
                                dict += 1;
                                Page::Dict(p.clone())
                            }
                        };
                        let theirs = compress(copy, Vec::new(), options().compression).unwrap();
                        let ours = compress_page(page, options().compression).unwrap();
                        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
                    }
                }
            }
        }
        assert!(
            data > 0 && dict > 0,
            "{data} data and {dict} dictionary pages"
        );
    }

    #[test]
    fn encoded_row_groups_refuse_a_csv_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TableWriter::new(&dir.path().join("x.csv"), FileFormat::Csv);
        assert!(!w.takes_encoded());
        let df = sample_frames().remove(0);
        assert!(w.write_encoded(encode(&df).unwrap()).is_err());
    }
}
