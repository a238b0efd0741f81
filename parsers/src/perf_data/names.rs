//! Each task's command name at its first sample, as the record reader names it, from one pass
//! over a file-mode data section ([`super::Reader::task_names`]).
//!
//! The record reader gives each sample the name its tid has at that point (`Event::comm`): the
//! last COMM record for the tid, or its parent's name when a FORK record made it, else `:TID`.
//! It reads the records in time order (the timestamp, then the file offset, as
//! [`super::bulk`] orders samples), parsing every one of them. A caller that wants only the
//! name each task has when it first appears (the perfetto export's tracks) needs the few COMM
//! and FORK records and, per tid, its earliest sample: here those are put in that order and
//! played through the same rules, without a record parsed or a sample sorted.
//!
//! A COMM or FORK record's timestamp is the `sample_id` trailer's (`attr.sample_id_all`), at
//! the offset from the record's end the record reader takes it from; a file without it, or
//! with attrs that place it differently, is left to the record reader.

use std::collections::{BTreeMap, HashMap};

use super::abi::{
    PERF_RECORD_AUXTRACE, PERF_RECORD_COMM, PERF_RECORD_COMPRESSED, PERF_RECORD_COMPRESSED2,
    PERF_RECORD_FINISHED_INIT, PERF_RECORD_FORK, PERF_RECORD_SAMPLE,
};
use super::{u32_at, u64_at, IdMap};

/// What happens to the names at one point of the record reader's order.
enum Step {
    /// A COMM record: `tid` is named `name`.
    Comm { tid: i32, name: String },
    /// A FORK record: `tid` takes `ptid`'s name, when `ptid` has one.
    Fork { tid: i32, ptid: i32 },
    /// `tid`'s first sample: its name is the one it has now.
    First { tid: i32 },
}

/// The name of every tid with a sample in `data` (the data section, records whole), at its
/// first sample; `None`: something here needs the record reader. `time_from_end`: where a
/// non-sample record's timestamp is, counted back from the record's end.
pub(super) fn walk(
    data: &[u8],
    sample_types: &[u64],
    attr_of_id: &IdMap,
    time_from_end: usize,
) -> Option<BTreeMap<i32, String>> {
    // per tid, the (timestamp, offset) of its earliest sample
    let mut first: HashMap<i32, (u64, usize)> = HashMap::new();
    let mut steps: Vec<(u64, usize, Step)> = Vec::new();
    let mut pos = 0usize;
    while pos + 8 <= data.len() {
        super::bytes::prefetch_ahead(data, pos);
        let ty = u32_at(data, pos)?;
        let size = usize::from(super::u16_at(data, pos + 6)?);
        let mut next = pos.checked_add(size)?;
        if size < 8 || next > data.len() {
            return None;
        }
        let body = &data[pos + 8..next];
        let time = || u64_at(body, body.len().checked_sub(time_from_end)?);
        match ty {
            PERF_RECORD_SAMPLE => {
                let s = super::bulk::read_sample(body, sample_types, attr_of_id)?;
                // the record reader's tid of a sample without one
                let tid = s.tid.unwrap_or(-1);
                let at = (s.time, pos);
                first
                    .entry(tid)
                    .and_modify(|k| *k = (*k).min(at))
                    .or_insert(at);
            }
            PERF_RECORD_COMM => {
                let tid = u32_at(body, 4)? as i32;
                let name = body.get(8..)?;
                let name = &name[..memchr::memchr(0, name)?];
                let name = String::from_utf8_lossy(name).into_owned();
                steps.push((time()?, pos, Step::Comm { tid, name }));
            }
            PERF_RECORD_FORK => {
                let (tid, ptid) = (u32_at(body, 8)? as i32, u32_at(body, 12)? as i32);
                steps.push((time()?, pos, Step::Fork { tid, ptid }));
            }
            PERF_RECORD_AUXTRACE => {
                next = next.checked_add(usize::try_from(u64_at(data, pos + 8)?).ok()?)?;
                if next > data.len() {
                    return None;
                }
            }
            // records inside records, and types perf does not define: the record reader's
            PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => return None,
            1..=20 => {}
            t if (64..=PERF_RECORD_FINISHED_INIT).contains(&t) => {}
            _ => return None,
        }
        pos = next;
    }
    if pos != data.len() {
        return None;
    }
    steps.extend(
        first
            .into_iter()
            .map(|(tid, (ts, at))| (ts, at, Step::First { tid })),
    );
    // each record has its own offset: the order is total
    steps.sort_unstable_by_key(|&(ts, at, _)| (ts, at));
    let mut now: HashMap<i32, String> = HashMap::new();
    let mut names = BTreeMap::new();
    for (_, _, step) in steps {
        match step {
            Step::Comm { tid, name } => {
                now.insert(tid, name);
            }
            Step::Fork { tid, ptid } => {
                if let Some(p) = now.get(&ptid).cloned() {
                    now.insert(tid, p);
                }
            }
            Step::First { tid } => {
                let name = now.get(&tid).cloned().unwrap_or_else(|| format!(":{tid}"));
                names.insert(tid, name);
            }
        }
    }
    Some(names)
}
