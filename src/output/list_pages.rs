//! Parquet pages of a list column's leaf (`samples`' call-chain columns: `list<u64>`,
//! `list<str>`), without polars' generic level iterator, and with the strings as a
//! dictionary.
//!
//! polars computes a nested page's repetition and definition levels with one iterator that
//! walks any nesting (list, struct, fixed-size list, at any depth) through a ring buffer, three
//! times per page (the level count, then each level stream); on the call-chain columns that was
//! a fifth of all the CPU time of `parse --table samples` to Parquet. A list of one level has
//! simple levels: per row, one entry per item (repetition 0 for the first, 1 for the rest;
//! definition "present" or "null item"), or a single entry for an empty (or null) list. Those
//! are computed here in one pass over the offsets.
//!
//! A `u64` leaf's pages are the ones polars' `array_to_pages` makes: the plain-encoded values
//! and their statistics are those of the same leaf slice written as a flat optional column
//! (polars' `array_to_page_simple`; its buffer starts with the flat column's definition levels,
//! which are cut off and replaced by the list's), and page boundaries follow polars' rule
//! (rows per page from the leaf's estimated size and the 1 MiB default page size).
//!
//! A string leaf polars writes plain, every symbol and DSO of every frame compressed, copied
//! and compared for the statistics one by one. Call chains repeat a few thousand strings over
//! millions of frames, so here it gets a dictionary page and `RLE_DICTIONARY` data pages (the
//! encoding polars gives a flat string column of few distinct values), unless more than half
//! its values are distinct. Each data page carries the statistics polars would give the same
//! rows written plain. Anything else (deeper nesting, other leaf types, a null list with items
//! behind it) is left to polars. `tests::pages_are_polars_pages` compares every plain page with
//! polars' own and reads every dictionary page back.

use polars::prelude::ArrayRef;
use polars_arrow::array::{Array, Utf8ViewArray, View};
use polars_arrow::compute::aggregate::estimated_bytes_size;
use polars_arrow::datatypes::ArrowDataType;
use polars_parquet::parquet::encoding::hybrid_rle::encode;
use polars_parquet::parquet::page::{DataPage, DataPageHeader, DataPageHeaderV1, DictPage};
use polars_parquet::parquet::schema::types::PrimitiveType;
use polars_parquet::parquet::CowBuffer;
use polars_parquet::read::ParquetError;
use polars_parquet::write::{
    array_to_page_simple, slice_parquet_array, to_leaves, to_nested, to_parquet_leaves, Encoding,
    Nested, Page, ParquetType, Version, WriteOptions,
};

use std::collections::HashMap;

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
    let ty = ty.clone();
    let rows = nested[0].len();
    if let Some(strings) = leaf.as_any().downcast_ref::<Utf8ViewArray>() {
        if let Some(dict) = Dictionary::of(strings) {
            return Some(Ok(vec![Box::new(dict.pages(nested, ty, options, rows))]));
        }
    }
    let leaf = leaf.clone();
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
    let [_, Nested::Primitive(item)] = nested else {
        return Err(out_of_spec("not a list of one level"));
    };
    let (flat, mut header) = flat_page(leaf, ty, options)?;
    // the flat column's definition levels: a 4-byte length and the levels, when optional
    let values = if item.is_optional {
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
    let (mut buffer, num_values) = levels(nested, rows, values.len())?;
    buffer.extend_from_slice(values);
    header.num_values = num_values;
    Ok(Page::Data(DataPage::new(
        DataPageHeader::V1(header),
        CowBuffer::Owned(buffer),
        flat.descriptor.clone(),
        rows,
    )))
}

/// polars' plain page of `leaf` written as a flat column, and its version 1 header (the
/// header, statistics and descriptor a list page of the same values takes).
fn flat_page(
    leaf: &dyn Array,
    ty: PrimitiveType,
    options: WriteOptions,
) -> PolarsResult<(DataPage, DataPageHeaderV1)> {
    let flat = match array_to_page_simple(leaf, ty, options, Encoding::Plain)? {
        Page::Data(p) => p,
        Page::Dict(_) => return Err(out_of_spec("a dictionary page for a plain column")),
    };
    let DataPageHeader::V1(header) = flat.header().clone() else {
        return Err(out_of_spec(
            "a version 2 page where version 1 was asked for",
        ));
    };
    Ok((flat, header))
}

/// The repetition and definition levels of the sliced one-level list `nested` (`rows` rows),
/// each RLE-encoded after its 4-byte length as version 1 pages hold them, in a buffer with
/// room for `extra` more bytes; and the page's level count (its `num_values`).
fn levels(nested: &[Nested], rows: usize, extra: usize) -> PolarsResult<(Vec<u8>, i32)> {
    let [Nested::LargeList(list), Nested::Primitive(item)] = nested else {
        return Err(out_of_spec("not a list of one level"));
    };
    let item_optional = item.is_optional;
    let o = list.offsets.buffer();
    let first = o[0];
    let items = (o[rows] - first) as usize;
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
    let mut rep = Vec::with_capacity(items + rows);
    let mut def = Vec::with_capacity(items + rows);
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
    let mut buffer = Vec::with_capacity(extra + rep.len() / 2 + 16);
    for (levels, max) in [(&rep, 1u8), (&def, present)] {
        let at = buffer.len();
        buffer.extend_from_slice(&[0; 4]);
        encode::<u32, _, _>(
            &mut buffer,
            levels.iter().map(|&l| u32::from(l)),
            bit_width(max.into()),
        )?;
        let len = (buffer.len() - at - 4) as u32;
        buffer[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
    let num_values = i32::try_from(rep.len())
        .map_err(|_| out_of_spec("more than 2^31 level entries in one page"))?;
    Ok((buffer, num_values))
}

/// Bits to hold every value up to `max` (0 for 0), as Parquet's RLE/bit-packed runs use.
fn bit_width(max: u32) -> u32 {
    u32::BITS - max.leading_zeros()
}

/// A string leaf's values as a Parquet dictionary: the call chains' symbols and DSOs repeat
/// from sample to sample (a few thousand distinct strings in millions of frames), so each
/// page holds bit-packed keys instead of every string. Written plain (as polars writes any
/// nested string column), the strings were compressed, copied and compared for statistics
/// one by one.
struct Dictionary {
    /// One key per leaf value (0 for a null item).
    keys: Vec<u32>,
    /// The distinct values, plain-encoded (a 4-byte length and the bytes, in key order): the
    /// dictionary page's buffer.
    plain: Vec<u8>,
    /// Where each key's bytes start in `plain`, and their length.
    spans: Vec<(u32, u32)>,
    /// Each key's place among the values in byte order (a page's statistics are the values
    /// of its lowest and highest place).
    rank: Vec<u32>,
    /// The leaf itself: polars' slicing of the nested levels for each page slices the leaf
    /// along (the keys and statistics come from the fields above).
    leaf: Utf8ViewArray,
}

impl Dictionary {
    /// `leaf` as dictionary keys, or `None` when more than half its values (of more than 128)
    /// are distinct: the rule polars applies to flat string columns, where a dictionary
    /// does not pay.
    fn of(leaf: &Utf8ViewArray) -> Option<Dictionary> {
        let len = leaf.len();
        let limit = if len > 128 { len / 2 } else { len };
        let validity = leaf.validity().filter(|v| v.unset_bits() > 0);
        let hasher = foldhash::fast::FixedState::with_seed(0);
        // keyed by view first: equal views are equal strings, and the call-chain columns share
        // one view per distinct string (`frames::str_lists`), so only a new string is hashed
        // whole. A longer string's view is looked up by its place in the data buffers (a
        // table of each place's length and key + 1), when the buffers are small enough to
        // hold little more than the distinct strings; any other view by hashing it.
        let mut by_view: HashMap<u128, u32, _> = HashMap::with_hasher(hasher.clone());
        let mut ids: HashMap<&[u8], u32, _> = HashMap::with_hasher(hasher.clone());
        let mut starts = Vec::new();
        let mut total = 0usize;
        for b in leaf.data_buffers().iter() {
            starts.push(total);
            total += b.len();
        }
        let mut by_place: Vec<(u32, u32)> = if total <= len {
            vec![(0, 0); total]
        } else {
            Vec::new()
        };
        let places = by_place.len();
        let place = |v: &View| {
            (v.length > View::MAX_INLINE_SIZE && places > 0)
                .then(|| {
                    starts
                        .get(v.buffer_idx as usize)
                        .map(|s| s + v.offset as usize)
                })
                .flatten()
                .filter(|&at| at < places)
        };
        let mut keys = Vec::with_capacity(len);
        let mut plain = Vec::new();
        let mut spans = Vec::new();
        let views = leaf.views();
        for i in 0..len {
            if validity.is_some_and(|v| !v.get_bit(i)) {
                keys.push(0);
                continue;
            }
            let at = place(&views[i]);
            match at {
                Some(at) => {
                    let (n, k) = by_place[at];
                    if k != 0 && n == views[i].length {
                        keys.push(k - 1);
                        continue;
                    }
                }
                None => {
                    if let Some(&k) = by_view.get(&views[i].as_u128()) {
                        keys.push(k);
                        continue;
                    }
                }
            }
            // SAFETY: i < len, the array's length
            let s = unsafe { leaf.value_unchecked(i) }.as_bytes();
            let next = ids.len() as u32;
            let k = *ids.entry(s).or_insert_with(|| {
                spans.push((plain.len() as u32 + 4, s.len() as u32));
                plain.extend_from_slice(&(s.len() as u32).to_le_bytes());
                plain.extend_from_slice(s);
                next
            });
            if ids.len() > limit {
                return None;
            }
            // a new string's view only: a leaf whose equal strings have their own views
            // (polars' list builder, as `callgraph`'s paths are built) would otherwise grow
            // this map by one entry per value
            if k == next {
                match at {
                    Some(at) => by_place[at] = (views[i].length, k + 1),
                    None => {
                        by_view.insert(views[i].as_u128(), k);
                    }
                }
            }
            keys.push(k);
        }
        // a leaf's strings are under 2 GiB (one arrow buffer's offsets are u32)
        u32::try_from(plain.len()).ok()?;
        let value = |k: u32| {
            let (at, n) = spans[k as usize];
            &plain[at as usize..(at + n) as usize]
        };
        let mut order: Vec<u32> = (0..spans.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| value(a).cmp(value(b)));
        let mut rank = vec![0; order.len()];
        for (r, &k) in order.iter().enumerate() {
            rank[k as usize] = r as u32;
        }
        Some(Dictionary {
            keys,
            plain,
            spans,
            rank,
            leaf: leaf.clone(),
        })
    }

    fn value(&self, k: u32) -> &str {
        let (at, n) = self.spans[k as usize];
        let b = &self.plain[at as usize..(at + n) as usize];
        // SAFETY: copied whole from a UTF-8 value of the leaf
        unsafe { std::str::from_utf8_unchecked(b) }
    }

    /// The dictionary page, then one data page of keys per page range (cut as polars cuts a
    /// dictionary column's pages: by the keys' size).
    fn pages(
        self,
        nested: Vec<Nested>,
        ty: PrimitiveType,
        options: WriteOptions,
        rows: usize,
    ) -> impl Iterator<Item = PolarsResult<Page>> + Send {
        let dict = Page::Dict(DictPage::new(
            CowBuffer::Owned(self.plain.clone()),
            self.spans.len(),
            false,
        ));
        let ranges = page_ranges(rows, self.keys.len() * size_of::<u32>());
        std::iter::once(Ok(dict)).chain(ranges.map(move |(at, len)| {
            let mut leaf = self.leaf.clone();
            let mut nested = nested.clone();
            slice_parquet_array(&mut leaf, &mut nested, at, len);
            self.page(&nested, ty.clone(), options, len)
        }))
    }

    /// One data page of the sliced list `nested` (`rows` rows): its levels, then the bit width
    /// and the RLE/bit-packed keys of its present items. Its statistics are those polars
    /// gives the same values written plain (found from the lowest and highest value's place,
    /// with the page's null items counted).
    fn page(
        &self,
        nested: &[Nested],
        ty: PrimitiveType,
        options: WriteOptions,
        rows: usize,
    ) -> PolarsResult<Page> {
        let [Nested::LargeList(list), Nested::Primitive(item)] = nested else {
            return Err(out_of_spec("not a list of one level"));
        };
        let o = list.offsets.buffer();
        let (a, b) = (o[0] as usize, o[rows] as usize);
        let keys = &self.keys[a..b];
        let present: Vec<u32> = match item.validity.as_ref().filter(|v| v.unset_bits() > 0) {
            None => keys.to_vec(),
            Some(v) => keys
                .iter()
                .zip(v.iter())
                .filter_map(|(&k, ok)| ok.then_some(k))
                .collect(),
        };
        let nulls = keys.len() - present.len();
        let (mut lo, mut hi, mut max) = (None::<u32>, None::<u32>, 0u32);
        for &k in &present {
            let r = self.rank[k as usize];
            if lo.is_none_or(|l| r < self.rank[l as usize]) {
                lo = Some(k);
            }
            if hi.is_none_or(|h| r > self.rank[h as usize]) {
                hi = Some(k);
            }
            max = max.max(k);
        }
        // polars' statistics of the page's values written plain: those of its two extremes,
        // with the page's null count
        let ends: Vec<&str> = lo.into_iter().chain(hi).map(|k| self.value(k)).collect();
        let ends = Utf8ViewArray::from_slice_values(ends);
        let (flat, mut header) = flat_page(&ends, ty, options)?;
        if let Some(s) = header.statistics.as_mut() {
            if s.null_count.is_some() {
                s.null_count = Some(nulls as i64);
            }
        }
        let (mut buffer, num_values) = levels(nested, rows, present.len() * 2 + 8)?;
        let bits = bit_width(max);
        buffer.push(bits as u8);
        encode::<u32, _, _>(&mut buffer, present.into_iter(), bits)?;
        header.num_values = num_values;
        header.encoding = Encoding::RleDictionary.into();
        Ok(Page::Data(DataPage::new(
            DataPageHeader::V1(header),
            CowBuffer::Owned(buffer),
            flat.descriptor.clone(),
            rows,
        )))
    }
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

    /// Every page of every list column of `df`, ours and polars', compared; returns the pages
    /// compared. A plain column's pages are polars' own (Debug shows the header with its
    /// statistics, the row count and the buffer's bytes). A dictionary-encoded one (polars
    /// writes nested strings plain) decodes to the leaf's values, each page's statistics are
    /// those polars gives the same rows' values written plain, and its levels are the plain
    /// page's. Returns the pages compared and how many columns were dictionary-encoded.
    fn same_pages(df: &DataFrame) -> (usize, usize) {
        let arrow = df.schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow).unwrap();
        let (mut n, mut dicts) = (0, 0);
        for batch in df.iter_chunks(CompatLevel::newest(), false) {
            for (array, ty) in batch.columns().iter().zip(parquet.fields()) {
                let Some(ours) = columns(array, ty, options()) else {
                    continue;
                };
                let ours: Vec<Page> = ours
                    .unwrap()
                    .into_iter()
                    .flatten()
                    .map(Result::unwrap)
                    .collect();
                if let Some(Page::Dict(_)) = ours.first() {
                    n += same_dictionary_pages(array, ty, &ours);
                    dicts += 1;
                    continue;
                }
                let ours: Vec<String> = ours.iter().map(|p| format!("{p:?}")).collect();
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
        (n, dicts)
    }

    /// Reads the keys back from `pages` (a dictionary page, then data pages) of the list column
    /// `array` and checks each data page against the plain page of the same rows.
    fn same_dictionary_pages(array: &ArrayRef, ty: &ParquetType, pages: &[Page]) -> usize {
        let mut nested = to_nested(array.as_ref(), ty).unwrap().remove(0);
        let mut leaves = Vec::new();
        to_leaves(array.as_ref(), &mut leaves);
        let leaf_type = to_parquet_leaves(ty.clone()).remove(0);
        let strings = leaves[0]
            .as_any()
            .downcast_ref::<Utf8ViewArray>()
            .unwrap()
            .clone();
        // the dictionary: 4-byte lengths and bytes
        let Page::Dict(d) = &pages[0] else { panic!() };
        let mut dict: Vec<&[u8]> = Vec::new();
        let mut b: &[u8] = &d.buffer;
        while !b.is_empty() {
            let n = u32::from_le_bytes(b[..4].try_into().unwrap()) as usize;
            dict.push(&b[4..4 + n]);
            b = &b[4 + n..];
        }
        assert_eq!(dict.len(), d.num_values);
        let rows = nested[0].len();
        let mut at = 0;
        for p in &pages[1..] {
            let Page::Data(p) = p else {
                panic!("a second dictionary page")
            };
            let DataPageHeader::V1(h) = p.header() else {
                panic!()
            };
            assert_eq!(h.encoding, Encoding::RleDictionary.into());
            let len = p.num_rows().unwrap();
            // the plain page of the same rows: the same levels, and its statistics
            let (mut leaf, mut sliced) = (strings.clone().boxed(), nested.clone());
            slice_parquet_array(leaf.as_mut(), &mut sliced, at, len);
            let Page::Data(plain) =
                page(leaf.as_ref(), &sliced, leaf_type.clone(), options(), len).unwrap()
            else {
                panic!()
            };
            let DataPageHeader::V1(ph) = plain.header() else {
                panic!()
            };
            assert_eq!(h.statistics, ph.statistics, "page at row {at}");
            assert_eq!(h.num_values, ph.num_values);
            let (levels, _) = levels(&sliced, len, 0).unwrap();
            assert_eq!(&p.buffer()[..levels.len()], &levels[..]);
            // the keys: a bit width, then RLE/bit-packed runs of the present items
            let keys = &p.buffer()[levels.len()..];
            let present: Vec<&[u8]> = leaf
                .as_any()
                .downcast_ref::<Utf8ViewArray>()
                .unwrap()
                .non_null_values_iter()
                .map(str::as_bytes)
                .collect();
            let decoded: Vec<u32> =
                polars_parquet::parquet::encoding::hybrid_rle::HybridRleDecoder::new(
                    &keys[1..],
                    u32::from(keys[0]),
                    present.len(),
                )
                .collect()
                .unwrap();
            let values: Vec<&[u8]> = decoded.iter().map(|&k| dict[k as usize]).collect();
            assert_eq!(values, present, "page at row {at}");
            at += len;
        }
        assert_eq!(at, rows);
        nested.clear();
        pages.len()
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
        let mut syms: Vec<Option<Series>> = Vec::new();
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
            // few distinct values, short (inline in a view) and long: a dictionary
            let y: Vec<Option<String>> = n
                .iter()
                .map(|v| {
                    v.map(|v| match v % 7 {
                        0 => format!("f{}", v % 3),
                        _ => format!("a_kernel_function_{}", v % 300),
                    })
                })
                .collect();
            let null_list = kind == 3 && next() % 2 == 0;
            nums.push((!null_list).then(|| Series::new("".into(), n)));
            strs.push((!null_list).then(|| Series::new("".into(), s)));
            syms.push((!null_list).then(|| Series::new("".into(), y)));
        }
        let nums = Series::new("nums".into(), nums);
        let strs = Series::new("strs".into(), strs);
        let syms = Series::new("syms".into(), syms);
        DataFrame::new(rows, vec![nums.into(), strs.into(), syms.into()]).unwrap()
    }

    #[test]
    fn pages_are_polars_pages() {
        // one page and many pages, with and without null lists
        let (mut total, mut dicts) = (0, 0);
        for (rows, seed) in [(1, 1), (7, 2), (500, 3), (60_000, 4), (120_000, 5)] {
            let df = lists(rows, seed);
            assert!(df.column("nums").unwrap().null_count() > 0 || rows < 100);
            let (n, d) = same_pages(&df);
            total += n;
            dicts += d;
        }
        assert!(total >= 10, "{total} pages");
        // `syms` in every frame with items; `strs` (mostly distinct) stays plain but in the
        // one-row frame
        assert!(dicts >= 4, "{dicts} dictionary columns");
    }

    /// Leaves whose views the dictionary looks up by place: one copy per distinct string
    /// (as the call chains are built), and views that share a place with another length.
    #[test]
    fn views_looked_up_by_place_read_back() {
        use crate::frames::str_lists::SharedStrLists;
        let df = lists(60_000, 9);
        let syms = df.column("syms").unwrap().list().unwrap().clone();
        let mut shared = SharedStrLists::new("shared");
        for row in syms.amortized_iter().flatten() {
            let row = row.as_ref();
            for s in row.str().unwrap().iter() {
                shared.push(s);
            }
            shared.end_row();
        }
        let shared = shared.finish();
        // views that start at the same place with different lengths, and an inline one
        let long = "a_kernel_function_and_more";
        // 30 rows of 5 (the buffer's 26 bytes must not outnumber the items for the table)
        let views: Vec<View> = [20u32, 26, 20, 5, 26]
            .iter()
            .cycle()
            .take(150)
            .map(|&n| View::new_from_bytes(&long.as_bytes()[..n as usize], 0, 0))
            .collect();
        let leaf = unsafe {
            Utf8ViewArray::new_unchecked(
                polars_arrow::datatypes::ArrowDataType::Utf8View,
                views.into(),
                vec![long.as_bytes().to_vec().into()].into(),
                None,
                None,
                long.len(),
            )
        };
        let offsets = unsafe {
            polars_arrow::offset::OffsetsBuffer::new_unchecked(
                (0..=30).map(|r| 5 * r as i64).collect::<Vec<_>>().into(),
            )
        };
        let dtype = LargeListArray::default_datatype(ArrowDataType::Utf8View);
        let list = LargeListArray::new(dtype, offsets, leaf.boxed(), None);
        let overlapping = ListChunked::with_chunk("overlapping".into(), list);
        let frame = DataFrame::new(shared.len(), vec![shared]).unwrap();
        let (_, dicts) = same_pages(&frame);
        assert_eq!(dicts, 1);
        let frame = DataFrame::new(30, vec![overlapping.into_series().into()]).unwrap();
        let (_, dicts) = same_pages(&frame);
        assert_eq!(dicts, 1);
    }

    #[test]
    fn call_chain_pages_are_polars_pages() {
        let frames = super::super::row_groups::tests::sample_frames();
        let (mut n, mut dicts) = (0, 0);
        for df in &frames {
            let (p, d) = same_pages(df);
            n += p;
            dicts += d;
        }
        // four list columns per frame, the symbols and DSOs as dictionaries
        assert!(n >= 4 * frames.len(), "{n} pages");
        assert_eq!(dicts, 2 * frames.len());
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
