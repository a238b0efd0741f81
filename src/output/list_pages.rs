//! Parquet pages of a list column's leaf (`samples`' call-chain columns: `list<u64>`,
//! `list<str>`), the same pages polars' `array_to_pages` makes, without its generic level
//! iterator.
//!
//! polars computes a nested page's repetition and definition levels with one iterator that
//! walks any nesting (list, struct, fixed-size list, at any depth) through a ring buffer, three
//! times per page (the level count, then each level stream); on the call-chain columns that was
//! a fifth of all the CPU time of `parse --table samples` to Parquet. A list of one level has
//! simple levels: per row, one entry per item (repetition 0 for the first, 1 for the rest;
//! definition "present" or "null item"), or a single entry for an empty (or null) list. Those
//! are computed here in one pass over the offsets.
//!
//! The rest of a page does not depend on the nesting: the plain-encoded leaf values and their
//! statistics are those of the same leaf slice written as a flat optional column, which is what
//! polars' `array_to_page_simple` makes (its buffer starts with the flat column's definition
//! levels, which are cut off and replaced by the list's). Page boundaries follow polars' rule
//! (rows per page from the leaf's estimated size and the 1 MiB default page size). Anything
//! else (deeper nesting, other leaf types, a null list with items behind it) is left to polars.
//! `tests::pages_are_polars_pages` compares every page with polars' own.

use polars::prelude::ArrayRef;
use polars_arrow::array::Array;
use polars_arrow::compute::aggregate::estimated_bytes_size;
use polars_arrow::datatypes::ArrowDataType;
use polars_parquet::parquet::encoding::hybrid_rle::encode;
use polars_parquet::parquet::page::{DataPage, DataPageHeader};
use polars_parquet::parquet::schema::types::PrimitiveType;
use polars_parquet::parquet::CowBuffer;
use polars_parquet::read::ParquetError;
use polars_parquet::write::{
    array_to_page_simple, slice_parquet_array, to_leaves, to_nested, to_parquet_leaves, Encoding,
    Nested, Page, ParquetType, Version, WriteOptions,
};

type PolarsResult<T> = std::result::Result<T, polars::prelude::PolarsError>;

/// The page iterators of `array`'s leaf columns (one for a list column), or `None` when the
/// column is not a one-level list of `u64` or strings written with version 1 pages and
/// polars' default page size (the only shape lockcast writes that polars encodes slowly).
#[allow(clippy::type_complexity)]
pub(super) fn columns(
    array: &ArrayRef,
    type_: &ParquetType,
    options: WriteOptions,
) -> Option<PolarsResult<Vec<Box<dyn Iterator<Item = PolarsResult<Page>> + Send>>>> {
    if options.version != Version::V1 || options.data_page_size.is_some() {
        return None;
    }
    if !matches!(array.dtype(), ArrowDataType::LargeList(_)) {
        return None;
    }
    let mut nested = match to_nested(array.as_ref(), type_) {
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    let mut leaves = Vec::new();
    to_leaves(array.as_ref(), &mut leaves);
    let types = to_parquet_leaves(type_.clone());
    let ([nested], [leaf], [ty]) = (nested.as_mut_slice(), leaves.as_slice(), types.as_slice())
    else {
        return None;
    };
    let [Nested::LargeList(list), Nested::Primitive(_)] = nested.as_slice() else {
        return None;
    };
    if !matches!(
        leaf.dtype(),
        ArrowDataType::UInt64 | ArrowDataType::Utf8View
    ) {
        return None;
    }
    // a null list with items behind it: polars skips them in the levels; leave it to polars
    if let Some(v) = &list.validity {
        let o = list.offsets.buffer();
        if (0..v.len()).any(|i| !v.get_bit(i) && o[i + 1] != o[i]) {
            return None;
        }
    }
    let nested = std::mem::take(nested);
    let leaf = leaf.clone();
    let ty = ty.clone();
    let rows = nested[0].len();
    let pages = page_ranges(rows, estimated_bytes_size(leaf.as_ref())).map(move |(at, len)| {
        let mut leaf = leaf.clone();
        let mut nested = nested.clone();
        slice_parquet_array(leaf.as_mut(), &mut nested, at, len);
        page(leaf.as_ref(), &nested, ty.clone(), options, len)
    });
    Some(Ok(vec![Box::new(pages)]))
}

/// polars' page boundaries for `rows` rows of `byte_size` estimated bytes (default 1 MiB
/// pages): every page but the last holds `1 MiB / (bytes per row + 1)` rows, at least one.
fn page_ranges(rows: usize, byte_size: usize) -> impl Iterator<Item = (usize, usize)> {
    const PAGE: usize = 1024 * 1024;
    let per_row = if rows == 0 {
        0
    } else {
        (byte_size as f64 / rows as f64) as usize
    };
    let per_page = (PAGE / (per_row + 1)).max(1);
    (0..rows)
        .step_by(per_page)
        .map(move |at| (at, (at + per_page).min(rows) - at))
}

/// One data page of the sliced list `nested` over `leaf` (`rows` rows).
fn page(
    leaf: &dyn Array,
    nested: &[Nested],
    ty: PrimitiveType,
    options: WriteOptions,
    rows: usize,
) -> PolarsResult<Page> {
    let [Nested::LargeList(list), Nested::Primitive(item)] = nested else {
        return Err(out_of_spec("not a list of one level"));
    };
    let item_optional = item.is_optional;
    let flat = match array_to_page_simple(leaf, ty, options, Encoding::Plain)? {
        Page::Data(p) => p,
        Page::Dict(_) => return Err(out_of_spec("a dictionary page for a plain column")),
    };
    let DataPageHeader::V1(mut header) = flat.header().clone() else {
        return Err(out_of_spec(
            "a version 2 page where version 1 was asked for",
        ));
    };
    // the flat column's definition levels: a 4-byte length and the levels, when optional
    let values = if item_optional {
        let b = flat.buffer();
        let n = b
            .get(..4)
            .map(|l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
            .ok_or_else(|| out_of_spec("a page shorter than its level length"))?;
        b.get(4 + n..)
            .ok_or_else(|| out_of_spec("a page shorter than its levels"))?
    } else {
        flat.buffer()
    };

    // levels: one pass over the offsets
    let o = list.offsets.buffer();
    let first = o[0];
    let (present, missing) = (
        u8::from(list.is_optional) + 1 + u8::from(item_optional),
        u8::from(list.is_optional) + 1,
    );
    let empty = u8::from(list.is_optional);
    // the items' definition levels, one per leaf value of the page
    let item_def: Option<Vec<u8>> =
        item.validity
            .as_ref()
            .filter(|v| v.unset_bits() > 0)
            .map(|v| {
                v.iter()
                    .map(|ok| if ok { present } else { missing })
                    .collect()
            });
    let mut rep = Vec::with_capacity(leaf.len() + rows);
    let mut def = Vec::with_capacity(leaf.len() + rows);
    for i in 0..rows {
        let (a, b) = (o[i], o[i + 1]);
        if a == b {
            let null = list.validity.as_ref().is_some_and(|v| !v.get_bit(i));
            rep.push(0u8);
            def.push(if null { 0 } else { empty });
            continue;
        }
        let n = (b - a) as usize;
        rep.push(0);
        rep.resize(rep.len() + n - 1, 1);
        match &item_def {
            None => def.resize(def.len() + n, present),
            Some(d) => def.extend_from_slice(&d[(a - first) as usize..(b - first) as usize]),
        }
    }
    let bits = |max: u8| u8::BITS - max.leading_zeros();
    let mut buffer = Vec::with_capacity(values.len() + rep.len() / 2 + 16);
    for (levels, max) in [(&rep, 1u8), (&def, present)] {
        let at = buffer.len();
        buffer.extend_from_slice(&[0; 4]);
        encode::<u32, _, _>(&mut buffer, levels.iter().map(|&l| u32::from(l)), bits(max))?;
        let len = (buffer.len() - at - 4) as u32;
        buffer[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
    buffer.extend_from_slice(values);
    header.num_values = i32::try_from(rep.len())
        .map_err(|_| out_of_spec("more than 2^31 level entries in one page"))?;
    Ok(Page::Data(DataPage::new(
        DataPageHeader::V1(header),
        CowBuffer::Owned(buffer),
        flat.descriptor.clone(),
        rows,
    )))
}

fn out_of_spec(what: &str) -> polars::prelude::PolarsError {
    ParquetError::OutOfSpec(format!("list page: {what}")).into()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use polars::prelude::*;
    use polars_parquet::write::{array_to_columns, to_parquet_schema};

    fn options() -> WriteOptions {
        WriteOptions {
            statistics: polars::io::parquet::write::StatisticsOptions::default(),
            compression: super::super::row_groups::COMPRESSION.into(),
            version: Version::V1,
            data_page_size: None,
        }
    }

    /// Every page of every list column of `df`, ours and polars', printed (Debug shows the
    /// header with its statistics, the row count and the buffer's bytes); returns the pages
    /// compared.
    fn same_pages(df: &DataFrame) -> usize {
        let arrow = df.schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow).unwrap();
        let mut n = 0;
        for batch in df.iter_chunks(CompatLevel::newest(), false) {
            for (array, ty) in batch.columns().iter().zip(parquet.fields()) {
                let Some(ours) = columns(array, ty, options()) else {
                    continue;
                };
                let ours: Vec<String> = ours
                    .unwrap()
                    .into_iter()
                    .flatten()
                    .map(|p| format!("{:?}", p.unwrap()))
                    .collect();
                let enc = polars_parquet::write::get_dtype_encoding(array.dtype());
                let theirs: Vec<String> = array_to_columns(array, ty.clone(), options(), &enc)
                    .unwrap()
                    .into_iter()
                    .flatten()
                    .map(|p| format!("{:?}", p.unwrap()))
                    .collect();
                assert_eq!(ours.len(), theirs.len(), "pages of {}", ty.name());
                for (a, b) in ours.iter().zip(&theirs) {
                    assert_eq!(a, b, "column {}", ty.name());
                }
                n += ours.len();
            }
        }
        n
    }

    /// Lists of every shape: empty, one item, long, null items, null lists, and enough rows for
    /// several pages.
    fn lists(rows: usize, seed: u64) -> DataFrame {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut nums: Vec<Option<Series>> = Vec::new();
        let mut strs: Vec<Option<Series>> = Vec::new();
        for _ in 0..rows {
            let kind = next() % 10;
            let len = match kind {
                0 => 0,
                1 => 1,
                2 => 40 + (next() % 60) as usize,
                _ => (next() % 12) as usize,
            };
            let null_items = next() % 3 == 0;
            let n: Vec<Option<u64>> = (0..len)
                .map(|_| {
                    let v = next();
                    (!null_items || v % 4 != 0).then_some(v >> (v % 64))
                })
                .collect();
            let s: Vec<Option<String>> = n
                .iter()
                .map(|v| v.map(|v| format!("sym_{:x}+0x{}", v % 5000, v % 97)))
                .collect();
            let null_list = kind == 3 && next() % 2 == 0;
            nums.push((!null_list).then(|| Series::new("".into(), n)));
            strs.push((!null_list).then(|| Series::new("".into(), s)));
        }
        let nums = Series::new("nums".into(), nums);
        let strs = Series::new("strs".into(), strs);
        DataFrame::new(rows, vec![nums.into(), strs.into()]).unwrap()
    }

    #[test]
    fn pages_are_polars_pages() {
        // one page and many pages, with and without null lists
        let mut total = 0;
        for (rows, seed) in [(1, 1), (7, 2), (500, 3), (60_000, 4), (120_000, 5)] {
            let df = lists(rows, seed);
            assert!(df.column("nums").unwrap().null_count() > 0 || rows < 100);
            total += same_pages(&df);
        }
        assert!(total >= 10, "{total} pages");
    }

    #[test]
    fn call_chain_pages_are_polars_pages() {
        let frames = super::super::row_groups::tests::sample_frames();
        let n: usize = frames.iter().map(same_pages).sum();
        // four list columns per frame
        assert!(n >= 4 * frames.len(), "{n} pages");
    }

    #[test]
    fn page_ranges_follow_polars() {
        // 1 MiB / (10 + 1) rows per page
        let r: Vec<_> = page_ranges(200_000, 2_000_000).collect();
        assert_eq!(r, vec![(0, 95_325), (95_325, 95_325), (190_650, 9_350)]);
        assert_eq!(page_ranges(0, 0).count(), 0);
        // a row bigger than a page: one row per page
        assert_eq!(page_ranges(3, 10 << 20).count(), 3);
    }
}
