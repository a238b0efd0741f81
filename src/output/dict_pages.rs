//! Dictionary-encoded Parquet pages of a string column, with the dictionary built in one
//! cheap pass instead of polars' two.
//!
//! For a flat `Utf8View` column polars' writer asks for `RLE_DICTIONARY` and then decides
//! (`encode_as_dictionary_optional`): above 128 rows, a column whose HyperLogLog estimate of
//! distinct values exceeds 3/4 of its rows is written plain; any other is cast to a
//! `Dictionary<u32, Utf8View>` (values in first-seen order, a hash and a compare per row) and
//! written from that. On tracepoint text the estimate and the cast were ~13% of a parse to
//! Parquet, most of it on columns such as `source` (one value per file), `event` and `comm`,
//! where each row repeats the row before.
//!
//! Here the same dictionary array is built with a shortcut for a row whose view equals the
//! previous row's (equal views are equal strings), and handed to polars' own page encoder, so
//! the pages are those polars writes. The estimate is skipped only where its answer is not in
//! doubt: at most 128 rows (always a dictionary), or at most half the rows distinct (the
//! estimate would have to be 50% high to say plain; its standard error with 2^14 registers is
//! under 1%). Any other column is left to polars, after at most half its rows were looked
//! up here: a first rows' sample does not tell (a traced page pointer is new in each of the
//! first thousand rows of a piece and recurs after, 16% distinct in all), and the pass
//! costs less than the cast it replaces.

use polars::prelude::{ArrayRef, PolarsResult};
use polars_arrow::array::{
    Array, DictionaryArray, MutableBinaryViewArray, PrimitiveArray, Utf8ViewArray,
};
use polars_arrow::datatypes::{ArrowDataType, IntegerType};
use polars_parquet::write::{array_to_columns, Encoding, Page, ParquetType, WriteOptions};
use std::collections::HashMap;

/// Rows up to which polars writes a dictionary without estimating.
const ALWAYS_DICT_ROWS: usize = 128;
type Pages = Vec<Box<dyn Iterator<Item = PolarsResult<Page>> + Send>>;

/// The pages of `array` as polars writes them with `encoding`, when it is a string column
/// polars would dictionary-encode; `None` for anything else (polars' path then runs).
pub(super) fn columns(
    array: &ArrayRef,
    type_: &ParquetType,
    options: WriteOptions,
    encoding: &[Encoding],
) -> Option<PolarsResult<Pages>> {
    if encoding != [Encoding::RleDictionary] {
        return None;
    }
    let strings = array.as_any().downcast_ref::<Utf8ViewArray>()?;
    let dict = dictionary(strings)?;
    Some(
        array_to_columns(Box::new(dict) as ArrayRef, type_.clone(), options, encoding).map(
            |cols| {
                cols.into_iter()
                    .map(|p| Box::new(p) as Box<dyn Iterator<Item = _> + Send>)
                    .collect()
            },
        ),
    )
}

/// `strings` as the `Dictionary<u32, Utf8View>` polars' cast makes of it (values in
/// first-seen order, a null row a null key), or `None` when polars might write it plain.
fn dictionary(strings: &Utf8ViewArray) -> Option<DictionaryArray<u32>> {
    let len = strings.len();
    if len == 0 {
        return None;
    }
    let limit = if len > ALWAYS_DICT_ROWS { len / 2 } else { len };
    let validity = strings.validity().filter(|v| v.unset_bits() > 0);
    let views = strings.views();
    let mut ids: HashMap<&str, u32, foldhash::fast::FixedState> =
        HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0));
    let mut values = MutableBinaryViewArray::<str>::new();
    let mut keys = Vec::with_capacity(len);
    let mut last: Option<(u128, u32)> = None;
    for (i, view) in views.iter().enumerate() {
        if validity.is_some_and(|v| !v.get_bit(i)) {
            keys.push(0);
            continue;
        }
        let view = view.as_u128();
        if let Some((v, k)) = last {
            if v == view {
                keys.push(k);
                continue;
            }
        }
        // SAFETY: i < len, the array's length
        let s = unsafe { strings.value_unchecked(i) };
        let next = ids.len() as u32;
        let k = *ids.entry(s).or_insert_with(|| {
            values.push_value(s);
            next
        });
        if ids.len() > limit {
            return None;
        }
        keys.push(k);
        last = Some((view, k));
    }
    let keys = PrimitiveArray::new(ArrowDataType::UInt32, keys.into(), validity.cloned());
    let values: Utf8ViewArray = values.into();
    DictionaryArray::try_new(
        ArrowDataType::Dictionary(
            IntegerType::UInt32,
            Box::new(ArrowDataType::Utf8View),
            false,
        ),
        keys,
        values.boxed(),
    )
    .ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::output::row_groups::tests::event_frames;
    use polars::io::parquet::write::get_encodings;
    use polars::prelude::*;
    use polars_parquet::write::{to_parquet_schema, StatisticsOptions, Version};

    fn options() -> WriteOptions {
        WriteOptions {
            statistics: StatisticsOptions::default(),
            compression: polars_parquet::write::CompressionOptions::Uncompressed,
            version: Version::V1,
            data_page_size: None,
        }
    }

    /// Every page of every column of `df`, by polars and by [`columns`] where it applies;
    /// returns how many columns went through [`columns`].
    fn compare(df: &DataFrame) -> usize {
        let arrow = df.schema().to_arrow(CompatLevel::newest());
        let parquet = to_parquet_schema(&arrow).unwrap();
        let encodings = get_encodings(&arrow);
        let mut ours_used = 0;
        for batch in df.iter_chunks(CompatLevel::newest(), false) {
            for ((array, ty), enc) in batch
                .columns()
                .iter()
                .zip(parquet.fields())
                .zip(encodings.iter())
            {
                let Some(ours) = columns(array, ty, options(), enc) else {
                    continue;
                };
                ours_used += 1;
                let theirs = array_to_columns(array, ty.clone(), options(), enc).unwrap();
                let ours = ours.unwrap();
                assert_eq!(ours.len(), theirs.len());
                for (a, b) in ours.into_iter().zip(theirs) {
                    let a: Vec<String> = a.map(|p| format!("{:?}", p.unwrap())).collect();
                    let b: Vec<String> = b.map(|p| format!("{:?}", p.unwrap())).collect();
                    assert_eq!(a, b, "column {}", ty.name());
                }
            }
        }
        ours_used
    }

    /// The bundled tracepoint capture's event tables: every string column this module takes
    /// is paged as polars pages it.
    #[test]
    fn tracepoint_tables_page_as_polars_pages_them() {
        let mut used = 0;
        for df in event_frames() {
            used += compare(&df);
        }
        assert!(used > 20, "{used} columns took the shortcut");
    }

    /// A fixed-seed xorshift, so the columns are the same on every run.
    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// Random columns around the decision's edges: few and many rows, runs, nulls, long and
    /// short strings, and distinct shares from one value to every row its own (2.0).
    #[test]
    fn random_columns_page_as_polars_pages_them() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        let mut used = 0;
        let mut declined = 0;
        for &rows in &[1usize, 2, 100, 128, 129, 300, 5000, 70_000] {
            for &distinct_share in &[0.0, 0.01, 0.3, 0.49, 0.51, 0.74, 0.76, 1.0, 2.0] {
                let distinct = ((rows as f64 * distinct_share) as u64).max(1);
                let values: Vec<Option<String>> = (0..rows)
                    .map(|i| {
                        let r = rng(&mut seed);
                        if r % 17 == 0 {
                            return None;
                        }
                        // runs of a repeated value as well as scattered ones
                        let id = if distinct_share > 1.0 {
                            i as u64 // every row its own value
                        } else if r % 3 == 0 {
                            i as u64 % distinct
                        } else {
                            r % distinct
                        };
                        Some(if r % 2 == 0 {
                            format!("v{id}")
                        } else {
                            format!("a longer value past the inline twelve bytes {id}")
                        })
                    })
                    .collect();
                let s = Series::new("s".into(), values);
                let df = DataFrame::new(rows, vec![s.into()]).unwrap();
                let n = compare(&df);
                used += n;
                declined += 1 - n;
            }
        }
        assert!(used > 20 && declined > 10, "{used} taken, {declined} left");
    }

    #[test]
    fn a_mostly_distinct_column_is_left_to_polars() {
        let s: Vec<String> = (0..5000).map(|i| format!("0x{i:x}")).collect();
        let arr = Utf8ViewArray::from_slice_values(&s);
        assert!(dictionary(&arr).is_none());
        let half: Vec<String> = (0..5000).map(|i| format!("0x{:x}", i / 2)).collect();
        let arr = Utf8ViewArray::from_slice_values(&half);
        let d = dictionary(&arr).unwrap();
        assert_eq!(d.values().len(), 2500);
        assert_eq!(d.keys().value(3), 1);
    }
}
