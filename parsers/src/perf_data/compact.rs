//! Dropping the samples of events nobody asked for ([`super::Reader::only`]) from a file-mode
//! perf.data before the record reader sees it: the reader buffers, sorts and copies every
//! record of a round (`linux-perf-data`'s sorter, perf's ordered events), which is most of
//! the time of reading a file whose lock events are 1 % of its samples.
//!
//! Nothing is moved: the record reader is shown the file with the kept records where its data
//! section was ([`super::view::View`]). Moving them down in place, as this once did, wrote into
//! the mapping: each page written became a private copy, and a mapping written into cannot let
//! its pages go behind the reader ([`super::bytes::Bytes::release`]).
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
//! (`sample_id_all` off, or no `PERF_SAMPLE_TIME`), attrs with different sample layouts and
//! no `PERF_SAMPLE_IDENTIFIER` to tell them apart, compressed (`perf record -z`) or AUX
//! records, a record that does not fit. A sample the record reader would reject as damaged
//! still counts in the numbering here (the file-wide path leaves it out and says so in a
//! note), so on a damaged file later `line`s can differ.

use super::bytes::{Behind, Bytes};
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
    /// The kept records' byte ranges in the file, in file order (adjacent ones merged): the
    /// data section the record reader is shown.
    pub kept: Vec<(usize, usize)>,
    /// The kept records' bytes, copied as the walk passed them, when they came to at most
    /// `copy_up_to` bytes ([`COPY_UP_TO`]), in pieces of at most [`COPY_PIECE`] bytes (whole
    /// records each): the record reader is then shown them from memory, each piece let go once
    /// read, and the file's pages, let go behind the walk, are not read a third time.
    pub copy: Option<Vec<Vec<u8>>>,
    /// The feature index, which the record reader looks for right after the data section (its
    /// entries point at the feature sections, which stay where they are).
    pub index: Vec<u8>,
}

/// At most this many bytes of kept records are copied ([`Dropped::copy`]), so what a copy
/// costs in memory does not grow with the file. The record reader's read of the kept records
/// of a 193 MB recording (9.9 MB of them among its 2 M samples, on 53% of its pages) faulted
/// those pages in again, a seventh of `report`'s time (likely much the same on larger files:
/// on a 585 MB recording the kept records are on 55% of its pages).
pub(super) const COPY_UP_TO: usize = 16 << 20;

/// The copy's pieces are at most this long, so what the reader has read of it goes piece by
/// piece.
pub(super) const COPY_PIECE: usize = 1 << 20;

/// Take out of `file` (a whole, checked file-mode perf.data) the samples of tracepoints whose
/// name is not in `only`; `None` when nothing was taken out (all wanted, or the file is one
/// this cannot vouch for: see the module doc). The file is not written: [`Dropped::kept`]
/// says what the record reader is shown ([`super::view::View::compacted`]).
pub(super) fn drop_samples(file: &Bytes, only: &[String], copy_up_to: usize) -> Option<Dropped> {
    let buf: &[u8] = file;
    let (data_off, data_size) = sect(buf, 40);
    let index = data_off.checked_add(data_size)?;
    let bits: [u64; 4] = std::array::from_fn(|i| u64_at(buf, 72 + 8 * i).unwrap_or(0));
    // the tracing data (feature bit 1), for the tracepoints' names
    let (to, ts) = sect(buf, feature_entry(buf, 1)? as usize);
    let section = buf.get(to as usize..to.checked_add(ts)? as usize)?;
    let formats = tracing::parse(section).ok()?.formats;

    // the attrs: every record timed, and each record's layout known: one sample layout for
    // all, or `IDENTIFIER` in each (perf adds it when the layouts differ, as a `-g` on some
    // events and `/call-graph=no/` on others makes them): the id then comes first in a sample
    // and last in another record's `sample_id`, which is where perf's own reader finds it
    let attr_size = u64_at(buf, 16)? as usize;
    let (attr_off, attr_bytes) = sect(buf, 24);
    let n_attrs = attr_bytes as usize / attr_size.max(1);
    let mut types = Vec::with_capacity(n_attrs);
    let mut keep = Vec::with_capacity(n_attrs);
    for i in 0..n_attrs {
        let e = attr_off as usize + i * attr_size;
        let (ty, config) = (u32_at(buf, e)?, u64_at(buf, e + 8)?);
        let (st, flags) = (u64_at(buf, e + 24)?, u64_at(buf, e + 40)?);
        if st & TIME == 0 || flags & SAMPLE_ID_ALL == 0 {
            return None;
        }
        types.push(st);
        keep.push(
            ty != PERF_TYPE_TRACEPOINT
                || formats.get(&config).is_none_or(|f| only.contains(&f.name)),
        );
    }
    let first = *types.first()?;
    let one_layout = types.iter().all(|&t| t == first);
    if !one_layout && types.iter().any(|&t| t & IDENTIFIER == 0) {
        return None;
    }
    if keep.iter().all(|k| *k) {
        return None;
    }
    // per attr: where a sample holds its time, and how far before another record's end its
    // `sample_id` does (tid, time, id, stream_id, cpu, identifier, in that order)
    let count = |st: u64, flags: &[u64]| 8 * flags.iter().filter(|f| st & **f != 0).count();
    let times: Vec<(usize, usize)> = types
        .iter()
        .map(|&st| {
            (
                count(st, &[IDENTIFIER, IP, TID]),
                8 + count(st, &[ID, STREAM_ID, CPU, IDENTIFIER]),
            )
        })
        .collect();
    let sample_id = id_at(first);
    let attr_of = attr_ids(buf);
    if sample_id.is_none() && n_attrs > 1 {
        return None;
    }
    // a record's attr: the first's when there is one layout (its time is where any attr's
    // is), else the one its identifier names, the first for an id no attr has (perf's
    // synthesized records carry id 0, laid out as the first attr's: perf's `evlist__id2evsel`
    // and the record reader both take the first attr then, so its sort key is read so here)
    let layout = |at: usize| -> Option<(usize, usize)> {
        if one_layout {
            return Some(times[0]);
        }
        let id = u64_at(buf, at)?;
        Some(times[attr_of.get(&id).copied().unwrap_or(0)])
    };
    let end = index as usize;
    let mut pos = data_off as usize;
    let mut behind = Behind::new(pos, end);
    // the kept records' byte ranges, adjacent ones merged: what the record reader is shown
    // once the walk has found nothing that sends it the whole file instead
    let mut kept: Vec<(usize, usize)> = Vec::new();
    let mut copy: Option<Vec<Vec<u8>>> = Some(Vec::new());
    let mut copied = 0;
    let mut numbering = Numbering::default();
    // running maximum key through the round before last, and through the last round
    let (mut max_before_last, mut max_last, mut max_now) = (None, None, None);
    while pos < end {
        behind.at(file, pos);
        super::bytes::prefetch_ahead(buf, pos);
        let ty = u32_at(buf, pos)?;
        let size = usize::from(u16_at(buf, pos + 6)?);
        let next = pos.checked_add(size).filter(|n| size >= 8 && *n <= end)?;
        match ty {
            PERF_RECORD_AUXTRACE | PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => return None,
            PERF_RECORD_FINISHED_ROUND => {
                max_before_last = max_last;
                max_last = max_now;
                // no record from here on sorts at or before it
                if let Some(m) = max_before_last {
                    numbering.number_through(m);
                }
            }
            1..=63 => {
                let ts = if ty == PERF_RECORD_SAMPLE {
                    let (sample_time, _) = layout(pos + 8)?;
                    u64_at(buf, pos + 8 + sample_time)?
                } else {
                    let (_, other_time_from_end) = layout(next.checked_sub(8)?)?;
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
                    let attr = match sample_id {
                        Some(at) => attr_of.get(&u64_at(buf, pos + 8 + at)?).copied(),
                        None => Some(0),
                    };
                    let wanted = attr.is_none_or(|a| keep.get(a).copied().unwrap_or(true));
                    numbering.push(key, wanted);
                    if !wanted {
                        pos = next;
                        continue;
                    }
                }
            }
            _ => {}
        }
        match kept.last_mut() {
            Some(last) if last.1 == pos => last.1 = next,
            _ => kept.push((pos, next)),
        }
        if let Some(c) = &mut copy {
            copied += next - pos;
            match (copied <= copy_up_to, c.last_mut()) {
                (false, _) => copy = None,
                (true, Some(p)) if p.len() + (next - pos) <= COPY_PIECE => {
                    p.extend_from_slice(&buf[pos..next])
                }
                (true, _) => {
                    let mut p = Vec::with_capacity(COPY_PIECE.max(next - pos));
                    p.extend_from_slice(&buf[pos..next]);
                    c.push(p);
                }
            }
        }
        pos = next;
    }
    // the last stretch goes too, and is counted ([`super::bytes::bytes_walked`])
    behind.done(file, pos);
    let (lines, dropped) = numbering.finish();
    let n_feat: usize = bits.iter().map(|b| b.count_ones() as usize).sum();
    let index = buf.get(end..end.checked_add(16 * n_feat)?)?.to_vec();
    Some(Dropped {
        lines,
        dropped,
        kept,
        copy,
        index,
    })
}

/// The samples' numbers (1-based, among all the file's samples in (time, offset) order) as the
/// walk meets them, round by round: a sample is numbered once no record still to come can sort
/// before it (the round contract), so only the samples of the last two rounds wait here, not
/// the whole file's (24 bytes each, 47 MB on a 2 M-sample file), and only a round's kept keys
/// are sorted ([`Numbering::number_through`]). With the view's smaller ranges, numbering round
/// by round came in one change that took `report` of a 197 MB recording from 1.06x to 1.00x
/// the time of sorting every key at the end with the pages let go; peak RSS moved little (the
/// keys were freed before the record reader's peak).
#[derive(Default)]
struct Numbering {
    /// Not yet numbered: (key, kept), in the order met.
    waiting: Vec<((u64, usize), bool)>,
    /// Where in `waiting` each run of increasing keys after the first starts.
    runs: Vec<usize>,
    /// Samples numbered so far.
    numbered: u64,
    /// The kept samples' numbers, in order.
    lines: Vec<u64>,
    dropped: u64,
}

impl Numbering {
    fn push(&mut self, key: (u64, usize), kept: bool) {
        if self.waiting.last().is_some_and(|(k, _)| key < *k) {
            self.runs.push(self.waiting.len());
        }
        self.waiting.push((key, kept));
    }

    /// Number every waiting sample whose key is at or before `upto`.
    ///
    /// The waiting keys come as a few increasing runs (each CPU's buffer within a round, after
    /// the rests of the runs before: 177 runs in the 116 rounds of a 2 M-sample file), and
    /// only the kept samples' numbers are wanted: a kept sample's number is the count of keys
    /// at or before its own, which each run gives by a walk beside the kept keys in order.
    /// Nothing but the kept keys is sorted (sorting every waiting key took 23-24 ms of
    /// `report`'s 0.23 s on that file).
    fn number_through(&mut self, upto: (u64, usize)) {
        let w = &self.waiting;
        // each run: (start, end of the keys at or before `upto`, end)
        let bounds = std::iter::once(0)
            .chain(self.runs.iter().copied())
            .zip(self.runs.iter().copied().chain([w.len()]));
        let runs: Vec<(usize, usize, usize)> = bounds
            .map(|(a, b)| (a, a + w[a..b].partition_point(|(k, _)| *k <= upto), b))
            .collect();
        let before = self.lines.len();
        if let [(a, cut, _)] = runs[..] {
            // one run: its keys are in order, each numbered by its place
            for (i, x) in w[a..cut].iter().enumerate() {
                if x.1 {
                    self.lines.push(self.numbered + i as u64 + 1);
                }
            }
        } else {
            let mut kept: Vec<(u64, usize)> = runs
                .iter()
                .flat_map(|&(a, cut, _)| w[a..cut].iter().filter(|x| x.1).map(|x| x.0))
                .collect();
            kept.sort_unstable();
            let mut rank = vec![self.numbered; kept.len()];
            for &(a, cut, _) in &runs {
                let run = &w[a..cut];
                let mut i = 0;
                for (r, k) in rank.iter_mut().zip(&kept) {
                    while i < run.len() && run[i].0 <= *k {
                        i += 1;
                    }
                    // a kept key counts itself: its number is its rank
                    *r += i as u64;
                }
            }
            self.lines.extend(rank);
        }
        let taken: usize = runs.iter().map(|&(a, cut, _)| cut - a).sum();
        self.numbered += taken as u64;
        self.dropped += (taken - (self.lines.len() - before)) as u64;
        // what waits on: each run's rest, in order, each still a run
        let mut to = 0;
        self.runs.clear();
        for &(_, cut, end) in &runs {
            if cut < end {
                if to > 0 {
                    self.runs.push(to);
                }
                self.waiting.copy_within(cut..end, to);
                to += end - cut;
            }
        }
        self.waiting.truncate(to);
    }

    /// The kept samples' numbers in order, and how many were not kept.
    fn finish(mut self) -> (Vec<u64>, u64) {
        self.number_through((u64::MAX, usize::MAX));
        (self.lines, self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::Numbering;

    #[test]
    fn numbering_round_by_round_is_the_rank_in_the_sorted_whole() {
        // rounds of samples whose times overlap the round before (not the one before that, as
        // the round contract allows), some kept; the walk's bookkeeping of maxima as in
        // drop_samples
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        // the times of a round: in any order (many runs), or as perf writes them, each CPU's
        // buffer in time order (a run per CPU; one CPU: one run)
        for case in 0..60 {
            let cpus = [0, 3, 1][case / 20];
            let mut all = Vec::new();
            let mut numbering = Numbering::default();
            let (mut before_last, mut last, mut now) = (None, None, None);
            let mut pos = 0usize;
            for round in 0..(1 + case % 7) as u64 {
                let mut times: Vec<Vec<u64>> = (0..cpus.max(1))
                    .map(|_| (0..rand(50)).map(|_| 1000 * round + rand(2000)).collect())
                    .collect();
                if cpus > 0 {
                    times.iter_mut().for_each(|t| t.sort_unstable());
                }
                for ts in times.into_iter().flatten() {
                    // overlapping the next round's stretch, never the one after it
                    let key = (ts, pos);
                    pos += 8 + rand(3) as usize;
                    assert!(before_last.is_none_or(|m| key > m));
                    now = now.max(Some(key));
                    let kept = rand(3) == 0;
                    numbering.push(key, kept);
                    all.push((key, kept));
                }
                before_last = last;
                last = now;
                if let Some(m) = before_last {
                    numbering.number_through(m);
                }
            }
            let (lines, dropped) = numbering.finish();
            all.sort();
            let want: Vec<u64> = (1..=all.len() as u64)
                .zip(&all)
                .filter(|(_, (_, kept))| *kept)
                .map(|(n, _)| n)
                .collect();
            assert_eq!(lines, want, "case {case}");
            assert_eq!(dropped, all.iter().filter(|(_, k)| !k).count() as u64);
        }
    }
}
