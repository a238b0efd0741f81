//! A `list<str>` column whose equal strings share one copy: `samples`' call-chain symbols and
//! DSOs, where a capture's chains repeat a few thousand strings over millions of frames.
//!
//! An arrow string view holds a string of up to 12 bytes inline and points at a longer one in
//! a data buffer (buffer, offset, length and the first 4 bytes). polars' list builder copies
//! every string into its buffer; here a longer string is copied once per frame and every later
//! occurrence gets the same view. So equal strings have equal views, which the Parquet writer's
//! dictionary relies on to key values by view (`output::list_pages`), and the column's buffer
//! holds only its distinct strings.

use lockcast_parsers::event::FrameKey;
use polars::prelude::*;
use polars_arrow::array::{ListArray, Utf8ViewArray, View};
use polars_arrow::bitmap::MutableBitmap;
use polars_arrow::offset::OffsetsBuffer;
use std::collections::HashMap;

/// Longest string a view holds inline.
const INLINE: usize = View::MAX_INLINE_SIZE as usize;

/// Builds one `list<str>` column row by row (items with [`SharedStrLists::push`], each row
/// closed by [`SharedStrLists::end_row`]); nulls are allowed as items, not as lists.
pub(crate) struct SharedStrLists {
    name: &'static str,
    offsets: Vec<i64>,
    views: Vec<View>,
    /// Item validity, made at the first null item.
    validity: Option<MutableBitmap>,
    /// Full data buffers (a view's offset is a `u32`).
    done: Vec<Vec<u8>>,
    buffer: Vec<u8>,
    /// The view of every longer string copied so far.
    seen: HashMap<Box<[u8]>, View, foldhash::fast::FixedState>,
    /// The views of keyed frames' strings ([`SharedStrLists::push_keyed`]), by the key's line
    /// index, for the reader whose number is first.
    keyed: (u64, Vec<Option<View>>),
}

impl SharedStrLists {
    pub(crate) fn new(name: &'static str) -> Self {
        SharedStrLists {
            name,
            offsets: vec![0],
            views: Vec::new(),
            validity: None,
            done: Vec::new(),
            buffer: Vec::new(),
            seen: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0)),
            keyed: (0, Vec::new()),
        }
    }

    /// Append an item to the row being built.
    #[inline]
    pub(crate) fn push(&mut self, s: Option<&str>) {
        let Some(s) = s else {
            let n = self.views.len();
            self.validity
                .get_or_insert_with(|| {
                    let mut v = MutableBitmap::with_capacity(n + 1);
                    v.extend_constant(n, true);
                    v
                })
                .push(false);
            self.views.push(View::default());
            return;
        };
        let b = s.as_bytes();
        let view = if b.len() <= INLINE {
            View::new_inline(b)
        } else if let Some(v) = self.seen.get(b) {
            *v
        } else {
            self.copy(b)
        };
        self.views.push(view);
        if let Some(v) = self.validity.as_mut() {
            v.push(true);
        }
    }

    /// The view of a longer string's first copy.
    #[cold]
    fn copy(&mut self, b: &[u8]) -> View {
        if u32::try_from(self.buffer.len() + b.len()).is_err() {
            self.done.push(std::mem::take(&mut self.buffer));
        }
        let v = View::new_from_bytes(b, self.done.len() as u32, self.buffer.len() as u32);
        self.buffer.extend_from_slice(b);
        self.seen.insert(b.into(), v);
        v
    }

    /// [`SharedStrLists::push`] of a call-chain frame's string: a frame keyed by its reader
    /// ([`FrameKey`]: the same key, the same frame) takes the view its first occurrence got,
    /// without the string being hashed and compared again.
    #[inline]
    pub(crate) fn push_keyed(&mut self, key: FrameKey, s: Option<&str>) {
        let (Some((reader, i)), Some(s)) = (key.get(), s) else {
            return self.push(s);
        };
        if self.keyed.0 != reader {
            self.keyed = (reader, Vec::new());
        }
        if let Some(&Some(v)) = self.keyed.1.get(i) {
            self.views.push(v);
            if let Some(b) = self.validity.as_mut() {
                b.push(true);
            }
            return;
        }
        self.push(Some(s));
        let views = &mut self.keyed.1;
        if views.len() <= i {
            views.resize(i + 1, None);
        }
        views[i] = self.views.last().copied();
    }

    /// Close the row: its items are those pushed since the last call.
    #[inline]
    pub(crate) fn end_row(&mut self) {
        self.offsets.push(self.views.len() as i64);
    }

    /// The column, typed `list<str>` as polars' list builder types it.
    pub(crate) fn finish(self) -> Column {
        let mut buffers = self.done;
        buffers.push(self.buffer);
        let total: usize = buffers.iter().map(Vec::len).sum();
        let buffers: Vec<_> = buffers.into_iter().map(Into::into).collect();
        // SAFETY: every view was made from a UTF-8 string, and a non-inline one points inside
        // the buffer it was copied into (its index, offset and length are those of the copy)
        let values = unsafe {
            Utf8ViewArray::new_unchecked(
                ArrowDataType::Utf8View,
                self.views.into(),
                buffers.into(),
                self.validity.map(Into::into),
                None,
                total,
            )
        };
        // SAFETY: the offsets start at 0 and never decrease (one per closed row)
        let offsets = unsafe { OffsetsBuffer::new_unchecked(self.offsets.into()) };
        let dtype = ListArray::<i64>::default_datatype(ArrowDataType::Utf8View);
        let list = ListArray::<i64>::new(dtype, offsets, values.boxed(), None);
        let ca = ListChunked::with_chunk(self.name.into(), list);
        ca.into_series().into()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Rows of every shape: empty, short (inline) and long strings, repeats, null items.
    fn rows() -> Vec<Vec<Option<String>>> {
        let mut x = 7u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..3000)
            .map(|_| {
                let n = (next() % 9) as usize;
                (0..n)
                    .map(|_| match next() % 6 {
                        0 => None,
                        1 => Some(format!("f{}", next() % 4)),
                        2 => Some(String::new()),
                        3 => Some("exactly12byt".to_string()),
                        _ => Some(format!("a_kernel_function_{}", next() % 50)),
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_column_is_polars_list_builders() {
        let rows = rows();
        let mut ours = SharedStrLists::new("s");
        let mut theirs = ListStringChunkedBuilder::new("s".into(), 0, 0);
        for r in &rows {
            for s in r {
                ours.push(s.as_deref());
            }
            ours.end_row();
            theirs.append_trusted_len_iter(r.iter().map(Option::as_deref));
        }
        let (a, b) = (ours.finish(), theirs.finish().into_series());
        assert_eq!(a.dtype(), b.dtype());
        assert_eq!(a.name(), b.name());
        assert!(a.as_materialized_series().equals_missing(&b));
        // every long string copied once, equal strings under equal views
        let inner = a.list().unwrap().get_inner();
        let arr = inner.str().unwrap().downcast_iter().next().unwrap().clone();
        assert_eq!(arr.data_buffers().iter().map(|b| b.len()).sum::<usize>(), {
            let mut d: Vec<&str> = arr
                .values_iter()
                .filter(|s| s.len() > INLINE)
                .collect::<Vec<_>>();
            d.sort_unstable();
            d.dedup();
            d.iter().map(|s| s.len()).sum::<usize>()
        });
        let mut by: HashMap<&str, u128> = HashMap::new();
        for (v, s) in arr.views().iter().zip(arr.iter()) {
            if let Some(s) = s {
                assert_eq!(*by.entry(s).or_insert(v.as_u128()), v.as_u128(), "{s}");
            }
        }
    }

    #[test]
    fn no_nulls_no_validity() {
        let mut ours = SharedStrLists::new("s");
        ours.push(Some("a_kernel_function"));
        ours.end_row();
        ours.end_row();
        let c = ours.finish();
        assert_eq!(c.null_count(), 0);
        let inner = c.list().unwrap().get_inner();
        assert_eq!(inner.len(), 1);
        assert_eq!(inner.null_count(), 0);
    }
}
