//! A pipe-mode perf.data (`perf record -o -`) shown to the record reader in the order the
//! reader hands its records out, so that it holds a few thousand of them at a time rather than
//! the whole stream.
//!
//! Why: the record reader (linux-perf-data) sorts records by time round by round, perf's
//! PERF_RECORD_FINISHED_ROUND marking where a round ends, and keeps its own copy of every
//! record of the round it is reading and of the one before. A pipe stream recorded on the
//! project's VM with perf 6.1 (`fixtures/capture-perfdata.sh --pipe-loops 300`, 33.5 MB) has
//! one FINISHED_ROUND, at its very end: CPU 0's ring buffer, then CPU 1's, each in time order
//! and each spanning the run. The reader held all 342,718 records at once, and `parse` peaked
//! at 147 MiB (GNU time). The bundled pipe fixture is laid out the same way.
//!
//! What is shown instead:
//! - the stream's header records, which the reader takes as the attributes and feature
//!   sections (the HEADER_ATTR and HEADER_FEATURE records before the first other record), as
//!   they are;
//! - then the kernel's records (record types below 64), sorted by the reader's own key: the
//!   timestamp it reads with the record's attribute, records without one first, then the
//!   position in the stream;
//! - with a FINISHED_ROUND after every [`ROUND`] of them. Records that come in order leave
//!   the reader's rounds nothing to reorder: it hands them out as they come.
//!
//! perf's own record types after the header (64 and up) are left out. The reader would hand
//! them out as `UserRecord`s, which [`super::State::next`] skips; what lockcast needs of them
//! (the tracing data, the kernel's build-id) the framing check has read already.
//!
//! The sorted order is the reader's own only when the stream keeps the contract of its rounds:
//! no record earlier than the latest record of the rounds before the previous one. Then every
//! round the reader lets go holds records that all come before every record it still holds,
//! and it hands the records out in the order of its key. [`plan`] checks that contract on the
//! kernel's records. A stream that breaks it, or holds records sorted by keys this pass does
//! not see (PERF_RECORD_COMPRESSED, whose records are sorted without a position, and AUX
//! data), gets `None` and is shown as it is, as before.

use std::io::Read;

use byteorder::LittleEndian;
use linux_perf_data::linux_perf_event_reader::{
    get_record_id, get_record_identifier, get_record_timestamp, AttrFlags, Endianness, RawData,
    RecordIdParseInfo, RecordParseInfo, RecordType,
};
use linux_perf_data::AttributeDescription;

use super::abi::{
    PERF_RECORD_AUXTRACE, PERF_RECORD_COMPRESSED, PERF_RECORD_COMPRESSED2,
    PERF_RECORD_FINISHED_ROUND, PERF_RECORD_HEADER_ATTR, PERF_RECORD_HEADER_FEATURE,
    PERF_RECORD_USER_TYPE_START,
};
use super::bytes::{Behind, Bytes};
use super::{u16_at, u32_at, IdMap, Shared, PIPE_HEADER_LEN};

/// A FINISHED_ROUND is shown after this many records: the reader holds at most two rounds
/// (about 0.8 MB of samples of the bundled recordings' 100 bytes).
pub(super) const ROUND: usize = 4096;

/// A FINISHED_ROUND record: type 68, misc 0, size 8 (little-endian `perf_event_header`).
const FINISHED_ROUND: [u8; 8] = [PERF_RECORD_FINISHED_ROUND as u8, 0, 0, 0, 0, 0, 8, 0];

/// The order the kernel's records are shown in.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Plan {
    /// The header records end here: shown as they are up to it.
    head_end: usize,
    /// Where each kernel record without a timestamp starts, in stream order: shown first.
    untimed: Vec<u64>,
    /// Then the others: (timestamp, where it starts), in the order shown. 16 bytes a record
    /// (a sample of the bundled recordings is about 100).
    timed: Vec<(u64, u64)>,
    /// Where each run starts: a stretch of the stream whose kernel records do not go back in
    /// time, which is then shown in stream order. perf writes a ring buffer at a time, so a
    /// stream is a few runs side by side (two in the recordings above, one per CPU); the pages
    /// of each run are let go behind the point it has been shown to.
    runs: Vec<u64>,
}

/// Records of the stream from `at` on: (start, type, end), the tracing data's bytes `skip`
/// stepped over. `None` for a record that does not fit (the framing check has cut a stream to
/// its whole records, so only a bug would show one).
fn records(
    buf: &[u8],
    skip: Option<(usize, usize)>,
    mut at: usize,
) -> impl Iterator<Item = Option<(usize, u32, usize)>> + '_ {
    std::iter::from_fn(move || {
        if let Some((a, b)) = skip {
            if at == a {
                at = b;
            }
        }
        if at >= buf.len() {
            return None;
        }
        super::bytes::prefetch_ahead(buf, at);
        let rec = match (u32_at(buf, at), u16_at(buf, at + 6)) {
            (Some(ty), Some(size)) if size >= 8 && at + usize::from(size) <= buf.len() => {
                Some((at, ty, at + usize::from(size)))
            }
            _ => None,
        };
        at = rec.map_or(buf.len(), |r| r.2);
        Some(rec)
    })
}

/// How the record reader finds a record's attribute (its `IdParseInfos`): the only one; by an
/// id every attribute places alike; or by `PERF_SAMPLE_IDENTIFIER`, which the reader demands
/// of every attribute when their layouts differ.
enum Ids {
    One,
    Same(RecordIdParseInfo),
    Identifier { sample_id_all: bool },
}

/// The order to show `buf`'s records in (see the module's doc), or `None` when the stream
/// must be shown as it is. `skip`: the tracing-data record's bytes, taken out by the framing
/// check; `attrs`: the attributes the record reader found in the header records; `room`:
/// how many records the stream holds (the check counted them), room for their keys.
pub(super) fn plan(
    bytes: &Bytes,
    skip: Option<(usize, usize)>,
    attrs: &[AttributeDescription],
    room: usize,
) -> Option<Plan> {
    let buf: &[u8] = bytes;
    let start = usize::try_from(PIPE_HEADER_LEN).ok()?;
    // the header records, as the reader's pipe parser takes them
    let mut head_end = buf.len();
    for r in records(buf, skip, start) {
        let (at, ty, _) = r?;
        if ty != PERF_RECORD_HEADER_ATTR && ty != PERF_RECORD_HEADER_FEATURE {
            head_end = at;
            break;
        }
    }
    // as the reader keys its records (`PerfRecordIter::process_record`)
    let infos: Vec<RecordParseInfo> = attrs
        .iter()
        .map(|a| RecordParseInfo::new(&a.attr, Endianness::LittleEndian))
        .collect();
    let first = infos.first()?;
    let ids = if infos.len() == 1 {
        Ids::One
    } else if infos[1..]
        .iter()
        .all(|i| i.id_parse_info == first.id_parse_info)
    {
        Ids::Same(first.id_parse_info)
    } else {
        Ids::Identifier {
            sample_id_all: attrs[0].attr.flags.contains(AttrFlags::SAMPLE_ID_ALL),
        }
    };
    let mut attr_of_id = IdMap::default();
    for (i, a) in attrs.iter().enumerate() {
        for id in &a.event_ids {
            attr_of_id.insert(*id, i);
        }
    }
    let key = |ty: u32, body: &[u8]| {
        let (rt, data) = (RecordType(ty), RawData::from(body));
        let id = match ids {
            Ids::One => None,
            Ids::Same(ref p) => get_record_id::<LittleEndian>(rt, data, p),
            Ids::Identifier { sample_id_all } => {
                get_record_identifier::<LittleEndian>(rt, data, sample_id_all)
            }
        };
        let a = id.and_then(|id| attr_of_id.get(&id).copied()).unwrap_or(0);
        get_record_timestamp::<LittleEndian>(rt, data, &infos[a])
    };
    let mut untimed: Vec<u64> = Vec::new();
    let mut timed: Vec<(u64, u64)> = Vec::with_capacity(room);
    let mut rounds = Rounds::default();
    let mut runs = Vec::new();
    let mut last = None;
    // a mapped stream's pages go as this pass passes them ([`Shown`] reads them again)
    let mut behind = Behind::new(0, buf.len());
    for r in records(buf, skip, head_end) {
        let (at, ty, end) = r?;
        behind.at(bytes, at);
        match ty {
            PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 | PERF_RECORD_AUXTRACE => return None,
            PERF_RECORD_FINISHED_ROUND => rounds.finish()?,
            ty if ty >= PERF_RECORD_USER_TYPE_START => {}
            ty => {
                let ts = key(ty, &buf[at + 8..end]);
                rounds.add(ts);
                if last.is_none_or(|l| ts < l) {
                    runs.push(at as u64);
                }
                last = Some(ts);
                match ts {
                    Some(t) => timed.push((t, at as u64)),
                    None => untimed.push(at as u64),
                }
            }
        }
    }
    rounds.finish()?;
    // equal times in stream order, the reader's tie-break (the keys are distinct: in place)
    timed.sort_unstable();
    Some(Plan {
        head_end,
        untimed,
        timed,
        runs,
    })
}

/// The contract of the stream's own rounds, on the kernel records' timestamps (`None`, no
/// timestamp, sorts first, as in the reader's key; equal timestamps are ordered by position,
/// so a later record's key is never below an earlier one's with the same time).
///
/// The latest times are `Option<Option<u64>>`, whose order is that of "no record yet" <
/// "a record without a time" < "a time": the latest of nothing is then the outer `None`, and
/// `max` keeps the latest of several as it is.
#[derive(Default)]
struct Rounds {
    /// The latest timestamp of the rounds before the previous one.
    before_previous: Option<Option<u64>>,
    /// ... of the rounds up to the previous one.
    through_previous: Option<Option<u64>>,
    /// The current round's earliest (`None`: no record yet) and latest.
    low: Option<Option<u64>>,
    high: Option<Option<u64>>,
}

impl Rounds {
    fn add(&mut self, ts: Option<u64>) {
        self.low = Some(self.low.map_or(ts, |l| l.min(ts)));
        self.high = self.high.max(Some(ts));
    }

    /// The current round ends: `None` when it holds a record earlier than the rounds before
    /// the previous one allow.
    fn finish(&mut self) -> Option<()> {
        if let (Some(low), Some(before)) = (self.low, self.before_previous) {
            if low < before {
                return None;
            }
        }
        self.before_previous = self.through_previous;
        self.through_previous = self.through_previous.max(self.high);
        (self.low, self.high) = (None, None);
        Some(())
    }
}

/// Where the bytes being shown come from.
#[derive(Clone, Copy)]
enum Src {
    File,
    Round,
}

/// The stream as the record reader reads it: as it is (the tracing data stepped over), or in
/// a [`Plan`]'s order.
pub(super) struct Shown {
    buf: Shared,
    skip: Option<(usize, usize)>,
    plan: Option<Plan>,
    /// Header bytes (all of them without a plan) are shown up to here.
    head_end: usize,
    /// The next header byte to show.
    pos: usize,
    /// The next record of the plan to show (counting its untimed ones first), and how many of
    /// them since the last round.
    next: usize,
    in_round: usize,
    /// The bytes being shown: from where, and the range left.
    from: Src,
    range: (usize, usize),
    /// Lets go of the pages read: behind the stream shown as it is.
    behind: Behind,
    /// In a plan's order, per run: how far it has been shown, and let go.
    shown_to: Vec<usize>,
    let_go: Vec<usize>,
    /// Runs shown further since the last round, and a mark per run of being among them.
    moved: Vec<usize>,
    marked: Vec<bool>,
}

impl Shown {
    /// Show `buf` in `plan`'s order, or as it is.
    pub(super) fn new(buf: Shared, skip: Option<(usize, usize)>, plan: Option<Plan>) -> Shown {
        let len = buf.0.len();
        let head_end = plan.as_ref().map_or(len, |p| p.head_end);
        let starts: Vec<usize> = plan
            .as_ref()
            .map_or(Vec::new(), |p| p.runs.iter().map(|&r| r as usize).collect());
        Shown {
            buf,
            skip,
            plan,
            head_end,
            pos: 0,
            next: 0,
            in_round: 0,
            from: Src::File,
            range: (0, 0),
            behind: Behind::new(0, len),
            marked: vec![false; starts.len()],
            shown_to: starts.clone(),
            let_go: starts,
            moved: Vec::new(),
        }
    }

    /// Move on to the next bytes to show; false at the end.
    fn advance(&mut self) -> bool {
        if self.pos < self.head_end {
            let mut end = self.head_end;
            if let Some((a, b)) = self.skip {
                if self.pos == a {
                    self.pos = b.min(self.head_end);
                    return self.advance();
                }
                if self.pos < a {
                    end = end.min(a);
                }
            }
            (self.from, self.range) = (Src::File, (self.pos, end));
            self.pos = end;
            return true;
        }
        let Some(plan) = &self.plan else {
            return false;
        };
        if self.in_round == ROUND {
            self.in_round = 0;
            (self.from, self.range) = (Src::Round, (0, FINISHED_ROUND.len()));
            // a run is shown in stream order: nothing of it before where it has been shown
            // to is read again
            for r in self.moved.drain(..) {
                self.buf.0.let_go(&mut self.let_go[r], self.shown_to[r]);
                self.marked[r] = false;
            }
            return true;
        }
        let at = match plan.untimed.get(self.next) {
            Some(&at) => at,
            None => match plan.timed.get(self.next - plan.untimed.len()) {
                Some(&(_, at)) => at,
                None => return false,
            },
        };
        let at = at as usize;
        let size = u16_at(&self.buf.0, at + 6).map_or(0, usize::from);
        let run = plan
            .runs
            .partition_point(|&r| r as usize <= at)
            .saturating_sub(1);
        if let Some(to) = self.shown_to.get_mut(run) {
            *to = at + size;
            if !std::mem::replace(&mut self.marked[run], true) {
                self.moved.push(run);
            }
        }
        self.next += 1;
        self.in_round += 1;
        (self.from, self.range) = (Src::File, (at, at + size));
        true
    }
}

impl Read for Shown {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let mut done = 0;
        while done < out.len() {
            if self.range.0 == self.range.1 && !self.advance() {
                break;
            }
            let (a, b) = self.range;
            let n = (b - a).min(out.len() - done);
            let src = match self.from {
                Src::Round => &FINISHED_ROUND[a..a + n],
                Src::File => {
                    let bytes = self.buf.0.get(a..a + n).ok_or_else(|| {
                        std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            format!("bytes {a}..{} are past the end of the stream", a + n),
                        )
                    })?;
                    if self.plan.is_none() {
                        self.behind.at(&self.buf.0, a + n);
                    }
                    bytes
                }
            };
            out[done..done + n].copy_from_slice(src);
            done += n;
            self.range.0 += n;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::abi::{PERF_RECORD_HEADER_TRACING_DATA, PERF_RECORD_SAMPLE};
    use super::super::tests::gunzip;
    use super::super::{Options, Reader};
    use super::*;
    use crate::error::Diagnostics;
    use crate::event::Event;

    const PIPE: &str = "fixtures/perfdata/micro-16K-pipe/perf.data.gz";

    /// Every event of `bytes` read with the stream shown in time order or as it is, the
    /// diagnostics, and the plan it was shown with.
    fn read(
        bytes: &[u8],
        in_order: bool,
        opts: Options,
    ) -> (Result<Vec<Event>, String>, Diagnostics, Option<Plan>) {
        let mut r = Reader::with_options(Box::new(std::io::Cursor::new(bytes.to_vec())), opts);
        r.pipe_in_order = in_order;
        let mut out = Vec::new();
        let res = loop {
            match r.next_event() {
                Ok(Some(e)) => out.push(e),
                Ok(None) => break Ok(out),
                Err(e) => break Err(e.to_string()),
            }
        };
        let plan = r.state.as_ref().and_then(|st| {
            let attrs = st.file.event_attributes();
            in_order.then(|| plan(&st.buf.as_ref()?.0, skip_of(bytes), attrs, 0))?
        });
        (res, r.diagnostics().clone(), plan)
    }

    /// The tracing-data record's bytes, as the framing check finds them.
    fn skip_of(b: &[u8]) -> Option<(usize, usize)> {
        let mut at = 16;
        while at + 8 <= b.len() {
            let ty = u32_at(b, at)?;
            let end = at + usize::from(u16_at(b, at + 6)?);
            if ty == PERF_RECORD_HEADER_TRACING_DATA {
                return Some((at, end + u32_at(b, at + 8)? as usize));
            }
            at = end;
        }
        None
    }

    /// `b`'s kernel records (types below 64): (start, end).
    fn kernel_records(b: &[u8]) -> Vec<(usize, usize)> {
        records(b, skip_of(b), 16)
            .map(|r| r.expect("a whole record"))
            .filter(|r| r.1 < PERF_RECORD_USER_TYPE_START)
            .map(|(at, _, end)| (at, end))
            .collect()
    }

    /// `bytes` read with its records shown in time order and as they are: the same events
    /// and diagnostics. The events, the diagnostics and the plan.
    fn both_ways(bytes: &[u8], lenient: bool) -> (Vec<Event>, Diagnostics, Option<Plan>) {
        let (ordered, d1, plan) = read(bytes, true, Options::offline(lenient));
        let (as_is, d2, _) = read(bytes, false, Options::offline(lenient));
        let (ordered, as_is) = (ordered.unwrap(), as_is.unwrap());
        assert!(
            ordered == as_is,
            "events differ (planned: {})",
            plan.is_some()
        );
        assert_eq!(d1, d2);
        (ordered, d1, plan)
    }

    /// `b` with a FINISHED_ROUND record inserted before each byte offset of `at` (record
    /// starts).
    fn with_rounds(b: &[u8], at: &[usize]) -> Vec<u8> {
        let mut out = Vec::with_capacity(b.len() + 8 * at.len());
        let mut from = 0;
        for &a in at {
            out.extend_from_slice(&b[from..a]);
            out.extend_from_slice(&FINISHED_ROUND);
            from = a;
        }
        out.extend_from_slice(&b[from..]);
        out
    }

    /// Whether rounds of these timestamps keep the contract.
    fn keeps(rounds: &[&[Option<u64>]]) -> bool {
        let mut r = Rounds::default();
        rounds.iter().all(|round| {
            round.iter().for_each(|&t| r.add(t));
            r.finish().is_some()
        })
    }

    #[test]
    fn a_round_may_reach_back_into_the_previous_round_but_no_further() {
        let t = Some;
        // into the previous round, and to the time that ends the one before it
        assert!(keeps(&[&[t(10)], &[t(5)], &[t(10), t(12)], &[t(11)]]));
        // before the latest of every round up to the one before the previous: round 1's 10,
        // though round 2 ended at 5
        assert!(!keeps(&[&[t(10)], &[t(5)], &[t(12)], &[t(7)]]));
        assert!(!keeps(&[&[t(10)], &[t(12)], &[t(9)]]));
        // a record without a time sorts first: only in the first two rounds, or after others
        // without one
        assert!(keeps(&[&[None, t(3)], &[None]]));
        assert!(!keeps(&[&[t(3)], &[], &[None]]));
        assert!(keeps(&[&[None], &[t(1)], &[None, t(2)]]));
        // empty rounds move the window on
        assert!(keeps(&[&[t(10)], &[], &[], &[t(11)]]));
    }

    #[test]
    fn the_bundled_pipe_stream_is_shown_in_time_order_and_reads_as_it_is_read_whole() {
        let b = gunzip(PIPE);
        let (events, _, plan) = both_ways(&b, false);
        let plan = plan.expect("the bundled stream keeps its rounds' contract");
        // perf wrote CPU 0's ring buffer, then CPU 1's (the stream's samples go back in time
        // once, at byte 648920), and one FINISHED_ROUND, at the end
        assert_eq!(plan.runs.len(), 2);
        assert_eq!(plan.runs[1], 648_920);
        // the kernel's records: 13,426 samples (as `perf script` prints them), 4 MMAP2, 3
        // EXIT, 2 COMM, 2 FORK and the kernel's MMAP, all with a time
        assert_eq!(kernel_records(&b).len(), 13_438);
        assert_eq!((plan.untimed.len(), plan.timed.len()), (0, 13_438));
        assert!(plan.timed.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(events.len(), 13_426);
    }

    #[test]
    fn the_stream_shown_has_its_records_in_time_order_and_a_round_every_round_records() {
        let b = gunzip(PIPE);
        let (_, _, plan) = read(&b, true, Options::offline(false));
        let plan = plan.unwrap();
        let n = plan.timed.len();
        let mut shown = Vec::new();
        let buf = Shared(std::sync::Arc::new(Bytes::Owned(b.clone())));
        let (skip, head_end) = (skip_of(&b).unwrap(), plan.head_end);
        Shown::new(buf, Some(skip), Some(plan))
            .read_to_end(&mut shown)
            .unwrap();
        // the header as it is without the tracing data, then only kernel records and rounds
        let head = [&b[..skip.0], &b[skip.1..head_end]].concat();
        assert!(shown[..head.len()] == head[..], "the header differs");
        let (mut rounds, mut since, mut last) = (0, 0, 0u64);
        let mut at = head.len();
        while at < shown.len() {
            let (ty, size) = (u32_at(&shown, at).unwrap(), u16_at(&shown, at + 6).unwrap());
            if ty == PERF_RECORD_FINISHED_ROUND {
                assert_eq!(since, ROUND, "a round after {since} records");
                (rounds, since) = (rounds + 1, 0);
            } else {
                assert!(ty < 64, "type {ty} shown");
                since += 1;
                if ty == PERF_RECORD_SAMPLE {
                    // IP, TID, then TIME in this recording's samples
                    let t = u64::from_le_bytes(shown[at + 24..at + 32].try_into().unwrap());
                    assert!(t >= last, "a sample at byte {at} goes back in time");
                    last = t;
                }
            }
            at += usize::from(size);
        }
        assert_eq!(at, shown.len());
        assert_eq!(rounds, n / ROUND);
        let kernel: usize = kernel_records(&b).iter().map(|r| r.1 - r.0).sum();
        assert_eq!(shown.len() - head.len(), kernel + 8 * rounds);
    }

    #[test]
    fn rounds_that_keep_their_contract_are_shown_in_order_and_others_as_they_are() {
        let b = gunzip(PIPE);
        let second_run = 648_920;
        // the 101st kernel record, and the latest time before it
        let first = kernel_records(&b)[100].0 as u64;
        let timed = read(&b, true, Options::offline(false)).2.unwrap().timed;
        let latest = timed
            .iter()
            .filter(|t| t.1 < first)
            .map(|t| t.0)
            .max()
            .unwrap();
        // the first record of CPU 1's buffer not before it
        let caught_up = timed
            .iter()
            .filter(|t| t.1 >= second_run && t.0 >= latest)
            .map(|t| t.1)
            .min()
            .unwrap();
        // rounds: 100 records of CPU 0, the rest of it and CPU 1's up to that time, the rest:
        // no round holds a record before the latest of the round before the previous one
        let kept = with_rounds(&b, &[first as usize, caught_up as usize]);
        // rounds: 100 records of CPU 0, the rest of it, then CPU 1's buffer, which goes back
        // before the first round's end
        let broken = with_rounds(&b, &[first as usize, second_run as usize]);
        for (stream, keeps) in [(&kept, true), (&broken, false)] {
            let (events, _, plan) = both_ways(stream, false);
            assert_eq!(plan.is_some(), keeps);
            assert_eq!(events.len(), 13_426);
        }
    }

    #[test]
    fn a_stream_cut_short_or_spilled_to_a_file_reads_in_order_as_it_is() {
        let b = gunzip(PIPE);
        // cut in the middle of a sample of CPU 1's buffer: read leniently up to it
        let cut = &b[..b.len() * 3 / 5 + 3];
        let (events, diags, plan) = both_ways(cut, true);
        assert!(plan.is_some());
        assert!(events.len() > 1000 && events.len() < 13_426);
        assert!(diags.skipped > 0, "the cut is said");
        // a stream longer than the spill threshold: mapped from a temporary file, its pages
        // let go behind each run
        let spilled = Options {
            spill_above: Some(1000),
            ..Options::offline(false)
        };
        let (ordered, _, _) = read(&b, true, spilled);
        let (whole, _, _) = read(&b, false, Options::offline(false));
        assert!(ordered.unwrap() == whole.unwrap());
    }
}
