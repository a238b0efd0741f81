//! Dropping the samples of events nobody asked for ([`super::Reader::only`]) from a file-mode
//! perf.data before the record reader sees it: the reader buffers, sorts and copies every
//! record of a round (`linux-perf-data`'s sorter, perf's ordered events), which is most of
//! the time of reading a file whose lock events are 1 % of its samples.
//!
//! What stays equal to reading the whole file:
//!
//! * The order of the records kept. The record reader emits a round's records sorted by
//!   (time, file offset) once no later round can precede them; when every record of round
//!   N + 2 sorts after all of round N (the `FINISHED_ROUND` contract, checked here over every
//!   record) that is the global (time, offset) order, for any subset of the records too, and
//!   dropping records keeps the others' offsets in order.
//! * The samples' numbers (`line`): each kept sample's rank among all samples in that order.
//!
//! Anything this cannot vouch for leaves the file as it is (the reader then skips the
//! unwanted samples one by one, undecoded): a broken round contract, records without a time
//! (`sample_id_all` off, or no `PERF_SAMPLE_TIME`), attrs with different sample layouts,
//! compressed (`perf record -z`) or AUX records, a record that does not fit. A sample the
//! record reader would reject as damaged still counts in the numbering here (the file-wide
//! path leaves it out and says so in a note), so on a damaged file later `line`s can differ.

use super::{attr_ids, feature_entry, sect, tracing, u16_at, u32_at, u64_at};

use super::abi::sample::{id_at, CPU, ID, IDENTIFIER, IP, STREAM_ID, TID, TIME};
use super::abi::{
    PERF_RECORD_AUXTRACE, PERF_RECORD_COMPRESSED, PERF_RECORD_COMPRESSED2,
    PERF_RECORD_FINISHED_ROUND, PERF_RECORD_SAMPLE,
};

/// `perf_event_attr` flag bit `sample_id_all` (after disabled .. mmap_data).
const SAMPLE_ID_ALL: u64 = 1 << 18;
const PERF_TYPE_TRACEPOINT: u32 = 2;

/// What [`drop_samples`] did.
pub(super) struct Dropped {
    /// The number (1-based, among all the file's samples in time order) of each kept sample,
    /// in the order the record reader will give them.
    pub lines: Vec<u64>,
    /// Samples taken out.
    pub dropped: u64,
}

/// Take out of `buf` (a whole, checked file-mode perf.data) the samples of tracepoints whose
/// name is not in `only`; `None` when nothing was taken out (all wanted, or the file is one
/// this cannot vouch for: see the module doc).
pub(super) fn drop_samples(buf: &mut [u8], only: &[String]) -> Option<Dropped> {
    let (data_off, data_size) = sect(buf, 40);
    let index = data_off.checked_add(data_size)?;
    let bits: [u64; 4] = std::array::from_fn(|i| u64_at(buf, 72 + 8 * i).unwrap_or(0));
    // the tracing data (feature bit 1), for the tracepoints' names
    let (to, ts) = sect(buf, feature_entry(buf, 1)? as usize);
    let section = buf.get(to as usize..to.checked_add(ts)? as usize)?;
    let formats = tracing::parse(section).ok()?.formats;

    // the attrs: one sample layout, every record timed
    let attr_size = u64_at(buf, 16)? as usize;
    let (attr_off, attr_bytes) = sect(buf, 24);
    let n_attrs = attr_bytes as usize / attr_size.max(1);
    let mut sample_type = None;
    let mut keep = Vec::with_capacity(n_attrs);
    for i in 0..n_attrs {
        let e = attr_off as usize + i * attr_size;
        let (ty, config) = (u32_at(buf, e)?, u64_at(buf, e + 8)?);
        let (st, flags) = (u64_at(buf, e + 24)?, u64_at(buf, e + 40)?);
        if sample_type.is_some_and(|s| s != st) || st & TIME == 0 || flags & SAMPLE_ID_ALL == 0 {
            return None;
        }
        sample_type = Some(st);
        keep.push(
            ty != PERF_TYPE_TRACEPOINT
                || formats.get(&config).is_none_or(|f| only.contains(&f.name)),
        );
    }
    let st = sample_type?;
    if keep.iter().all(|k| *k) {
        return None;
    }
    let count = |flags: &[u64]| 8 * flags.iter().filter(|f| st & **f != 0).count();
    let sample_time = count(&[IDENTIFIER, IP, TID]);
    let sample_id = id_at(st);
    // sample_id_all of the other records: tid, time, id, stream_id, cpu, identifier at the end
    let other_time_from_end = 8 + count(&[ID, STREAM_ID, CPU, IDENTIFIER]);
    let attr_of = attr_ids(buf);
    if sample_id.is_none() && n_attrs > 1 {
        return None;
    }

    let end = index as usize;
    let mut pos = data_off as usize;
    // the kept records' byte ranges, adjacent ones merged: moved down in place once the walk
    // has found nothing that sends the file to the record reader (which needs it untouched)
    let mut kept: Vec<(usize, usize)> = Vec::new();
    let mut all_samples: Vec<(u64, usize)> = Vec::new();
    let mut kept_samples: Vec<(u64, usize)> = Vec::new();
    // running maximum key through the round before last, and through the last round
    let (mut max_before_last, mut max_last, mut max_now) = (None, None, None);
    while pos < end {
        let ty = u32_at(buf, pos)?;
        let size = usize::from(u16_at(buf, pos + 6)?);
        let next = pos.checked_add(size).filter(|n| size >= 8 && *n <= end)?;
        match ty {
            PERF_RECORD_AUXTRACE | PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => return None,
            PERF_RECORD_FINISHED_ROUND => {
                max_before_last = max_last;
                max_last = max_now;
            }
            1..=63 => {
                let ts = if ty == PERF_RECORD_SAMPLE {
                    u64_at(buf, pos + 8 + sample_time)?
                } else {
                    let at = next
                        .checked_sub(other_time_from_end)
                        .filter(|a| *a >= pos + 8)?;
                    u64_at(buf, at)?
                };
                let key = (ts, pos);
                if max_before_last.is_some_and(|m| key <= m) {
                    return None;
                }
                max_now = max_now.max(Some(key));
                if ty == PERF_RECORD_SAMPLE {
                    all_samples.push(key);
                    let attr = match sample_id {
                        Some(at) => attr_of.get(&u64_at(buf, pos + 8 + at)?).copied(),
                        None => Some(0),
                    };
                    if !attr.is_none_or(|a| keep.get(a).copied().unwrap_or(true)) {
                        pos = next;
                        continue;
                    }
                    kept_samples.push(key);
                }
            }
            _ => {}
        }
        match kept.last_mut() {
            Some(last) if last.1 == pos => last.1 = next,
            _ => kept.push((pos, next)),
        }
        pos = next;
    }
    let dropped = (all_samples.len() - kept_samples.len()) as u64;
    // The keys come as a few sorted runs (each CPU's buffer within a round), which the stable
    // sort merges instead of partitioning: the keys are distinct (a file offset each), so the
    // order is the unstable sort's.
    all_samples.sort();
    kept_samples.sort();
    // a kept sample's line: its place among all samples, found by walking both in order
    let mut at = 0;
    let lines = kept_samples
        .iter()
        .map(|k| {
            while all_samples.get(at).is_some_and(|a| a < k) {
                at += 1;
            }
            at as u64 + 1
        })
        .collect();

    // the kept records where the data was, the feature index right after them (the record
    // reader looks for it at data offset + data size; its entries point at the sections,
    // which stay where they are)
    let n_feat: usize = bits.iter().map(|b| b.count_ones() as usize).sum();
    let index_bytes = buf.get(end..end.checked_add(16 * n_feat)?)?.to_vec();
    let d = data_off as usize;
    // each range moves to at or below where it was, so the ones after it are not yet touched
    let mut len = 0;
    for &(from, to) in &kept {
        buf.copy_within(from..to, d + len);
        len += to - from;
    }
    buf[d + len..d + len + index_bytes.len()].copy_from_slice(&index_bytes);
    buf[48..56].copy_from_slice(&(len as u64).to_le_bytes());
    Some(Dropped { lines, dropped })
}
