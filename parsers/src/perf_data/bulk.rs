//! Every sample of a whole perf.data file in one pass over its data section, for a reader that
//! wants the typed fields of tracepoints ([`super::Reader::typed_fields`]) and of the rest
//! little that the record reader works out per event (no command names or mappings; a call
//! chain's instruction pointers, and the kernel frames' symbols on demand,
//! [`TypedParts::chain_symbols`]): the what-if replay's seven events. The record reader sorts
//! the records of each flush round, parses every record into its own structure and hands out
//! an owned [`crate::event::Event`] (two strings) per sample; here a sample is a few integers
//! read where `perf_event_open(2)` lays them out, each part of the walk put in time order once
//! at its end ([`runs`]), and the parts read in the order of the whole ([`TypedParts::iter`]).
//!
//! Only for what that layout makes simple; anything else is `None` and the record reader
//! reads the file as before ([`eligible`], and a record or sample this walk does not expect).
//! The order is the record reader's: by timestamp, equal timestamps in file order (its sort
//! key is the timestamp and then the record's offset).

use super::kallsyms::{Kallsyms, Recent};
use super::typed::Plan;
use super::{u16_at, u32_at, u64_at, Attr};

use super::abi::sample::{
    id_at, ADDR, CALLCHAIN, CPU, ID, IDENTIFIER, IP, PERIOD, RAW, READ, STREAM_ID, TID, TIME,
};
use super::abi::{
    PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER, PERF_RECORD_AUXTRACE, PERF_RECORD_COMPRESSED,
    PERF_RECORD_FINISHED_INIT, PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES,
    PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_GUEST_KERNEL, PERF_RECORD_MISC_KERNEL,
    PERF_RECORD_MISC_MMAP_BUILD_ID, PERF_RECORD_MMAP2, PERF_RECORD_SAMPLE,
};

/// One sample, in the terms of [`crate::event::Event`], in 32 bytes (a 2 M-event file holds
/// 2 M of them beside its own bytes; they were 48): the options are kept as values no sample
/// has (a walk that meets one leaves the file to the record reader), a sample's typed
/// fields and payload text share one index, as an event has one or the other, and its CPU and
/// event are u16s (past them, the record reader's) to leave room for its call chain's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypedSample {
    /// `PERF_SAMPLE_TIME`, ns.
    pub ts_ns: i64,
    /// 1-based rank among the file's samples in time order ([`TypedSample::line`]), set by
    /// [`TypedParts::join`]; 0 in a walked part, whose samples' ranks [`Sampled::line`] gives.
    line: u32,
    /// `PERF_SAMPLE_CPU`, [`NO_CPU`] when not recorded.
    cpu: u16,
    /// Index of its event in [`TypedSamples::events`].
    pub event: u16,
    /// `PERF_SAMPLE_TID`'s tid, -1 without it.
    pub tid: i32,
    /// `PERF_SAMPLE_TID`'s pid, [`NO_PID`] without it.
    pid: i32,
    /// Where its call chain starts in [`TypedSamples::chains`], [`NO_CHAIN`] without one.
    chain: u32,
    /// An event asked for: its typed fields start at `TypedSamples::values[slot]`. Another:
    /// its payload text is `TypedSamples::payloads[slot]` ([`NO_PAYLOAD`]: none).
    slot: u32,
}

/// [`TypedSample::cpu`] when the file has no CPU (a CPU number Linux does not have: 8192 at
/// most, `CONFIG_NR_CPUS`).
const NO_CPU: u16 = u16::MAX;
/// [`TypedSample::chain`] of a sample without a call chain.
const NO_CHAIN: u32 = u32::MAX;
/// [`TypedSample::pid`] when the file has no pid (no task has it).
const NO_PID: i32 = i32::MIN;

impl TypedSample {
    /// 1-based rank among the file's samples in time order (`Event::line`), in a
    /// [`TypedParts::join`]ed vector (0 before).
    pub fn line(&self) -> u64 {
        u64::from(self.line)
    }

    /// `PERF_SAMPLE_CPU`, when recorded.
    pub fn cpu(&self) -> Option<u32> {
        (self.cpu != NO_CPU).then_some(u32::from(self.cpu))
    }

    /// `PERF_SAMPLE_TID`'s pid, when recorded.
    pub fn pid(&self) -> Option<i32> {
        (self.pid != NO_PID).then_some(self.pid)
    }
}

/// [`TypedSample::payload`] of a sample without a payload text.
pub const NO_PAYLOAD: u32 = u32::MAX;

/// A file's samples ([`super::Reader::typed_samples`]).
#[derive(Debug, Clone, Default)]
pub struct TypedSamples {
    /// Per event of the file: (system, name), as [`crate::event::Event`] names them.
    pub events: Vec<(Option<String>, String)>,
    /// Per event: its fields are decoded ([`super::Reader::typed_fields`] asked for it).
    pub typed: Vec<bool>,
    /// Per event: how many fields each of its samples has in `values`.
    pub fields: Vec<u32>,
    /// The samples, in time order.
    pub samples: Vec<TypedSample>,
    /// Typed fields of all samples, in file order.
    pub values: Vec<i64>,
    /// Payload texts of samples of events not asked for, rendered as the record reader does.
    pub payloads: Vec<String>,
    /// The samples' call chains ([`TypedSamples::chain_of`]), each its length and then its
    /// instruction pointers as recorded (innermost first, with perf's context markers).
    pub chains: Vec<u64>,
}

impl TypedSamples {
    /// The typed fields of `s`.
    #[inline]
    pub fn values_of(&self, s: &TypedSample) -> &[i64] {
        if !self.typed[s.event as usize] {
            return &[];
        }
        let n = self.fields[s.event as usize] as usize;
        &self.values[s.slot as usize..s.slot as usize + n]
    }

    /// The call chain of `s` as recorded: instruction pointers, innermost first, and perf's
    /// context markers (`PERF_CONTEXT_KERNEL`, `_USER`, ...) before each context's frames;
    /// empty without one. A sample of an event recorded without a chain in a file where others
    /// have one gets its own ip under its CPU mode's marker, the one frame `perf script`
    /// prints for it.
    #[inline]
    pub fn chain_of(&self, s: &TypedSample) -> &[u64] {
        if s.chain == NO_CHAIN {
            return &[];
        }
        let at = s.chain as usize;
        let n = self.chains[at] as usize;
        &self.chains[at + 1..at + 1 + n]
    }

    /// The payload text of `s` (empty for a typed one).
    #[inline]
    pub fn payload_of(&self, s: &TypedSample) -> &str {
        if self.typed[s.event as usize] {
            return "";
        }
        self.payloads
            .get(s.slot as usize)
            .map_or("", String::as_str)
    }
}

/// A file's samples as the walks of its parts left them ([`super::Reader::typed_samples`]),
/// the parts in file order, read in the order of the whole with [`TypedParts::iter`].
/// Joining the parts into one vector ([`TypedParts::join`]) copied every sample after the
/// first part's into new pages: on a 2 M-event recording 14.5 ms of both CPUs, where reading
/// the parts in order costs a comparison per sample.
#[derive(Debug, Clone, Default)]
pub struct TypedParts {
    /// Per event of the file: (system, name), as [`crate::event::Event`] names them.
    pub events: Vec<(Option<String>, String)>,
    /// Per event: its fields are decoded ([`super::Reader::typed_fields`] asked for it).
    pub typed: Vec<bool>,
    /// Per event: how many fields each of its samples has.
    pub fields: Vec<u32>,
    /// The parts, each with its [`Runs`].
    parts: Vec<(TypedSamples, Runs)>,
    /// The kernel symbols the reader names kernel frames with ([`TypedParts::chain_symbols`]).
    pub(super) kallsyms: Option<Kallsyms>,
}

/// How a part's samples are read in time order ([`runs`]).
#[derive(Debug, Clone)]
pub(super) enum Runs {
    /// Sorted.
    Sorted,
    /// In file order, read as each CPU's samples, each CPU's in time order: the part cut
    /// where the CPU changes, `(start, end, the next stretch of that CPU or NO_NEXT)` each,
    /// and each CPU's first stretch in `heads`.
    ByCpu {
        stretches: Vec<(u32, u32, u32)>,
        heads: Vec<u32>,
    },
}

/// [`Runs::ByCpu`]'s next stretch after a CPU's last.
const NO_NEXT: u32 = u32::MAX;

/// Most runs [`TypedParts::iter`] reads the parts as, all parts together: past it, each part
/// is sorted and is one run. The iterator finds the next sample among the runs' next ones
/// whenever it leaves a run, and with CPUs' samples interleaved in time that is most samples:
/// a few runs cost a comparison or two each time; many would cost more than the sort (not
/// measured: no capture here has more than 2 CPUs).
pub(super) const MAX_RUNS: usize = 8;

/// Put a walked part in a readable order: as its CPUs' runs when it has at most `max_cpus`
/// CPUs and each CPU's samples are in time order, else sorted ([`sort`]).
///
/// perf writes each CPU's ring buffer, which that CPU fills in time order, in rounds of a
/// stretch per CPU: a part is short runs in time order, a CPU's stretch each. The stable sort
/// found those runs and merged them pairwise, pass after pass over the samples (a part of
/// ~1 M samples of the 2 M-event recording: 25-31 ms). Cutting the part where the CPU changes
/// and chaining each CPU's stretches is one pass that writes an entry per stretch (a link per
/// sample, tried first, made the typed read 5-8 ms slower). Merged by (time, part, place in
/// the part), the runs give the stable sort's order: equal stamps in file order.
pub(super) fn runs(out: &mut TypedSamples, max_cpus: usize) -> Runs {
    match link_by_cpu(&out.samples, max_cpus) {
        Some(r) => r,
        None => {
            sort(out);
            Runs::Sorted
        }
    }
}

fn link_by_cpu(v: &[TypedSample], max_cpus: usize) -> Option<Runs> {
    if v.len() >= NO_NEXT as usize || max_cpus < 2 {
        return None;
    }
    let mut stretches: Vec<(u32, u32, u32)> = Vec::new();
    // per CPU (NO_CPU one of them): its number, first and last stretch so far
    let mut cpus: Vec<(u16, u32, u32)> = Vec::new();
    let mut k = usize::MAX;
    for (i, s) in v.iter().enumerate() {
        let i = i as u32;
        if cpus.get(k).is_some_and(|c| c.0 == s.cpu) {
            // on in the same stretch
            if key(s) < key(&v[i as usize - 1]) {
                return None;
            }
            continue;
        }
        // a new stretch: of a CPU seen before (in time order after its last), or a new CPU
        if let Some(last) = stretches.last_mut() {
            last.1 = i;
        }
        let at = stretches.len() as u32;
        stretches.push((i, v.len() as u32, NO_NEXT));
        match cpus.iter().position(|c| c.0 == s.cpu) {
            Some(j) => {
                let before = stretches[cpus[j].2 as usize];
                if key(s) < key(&v[before.1 as usize - 1]) {
                    return None;
                }
                stretches[cpus[j].2 as usize].2 = at;
                cpus[j].2 = at;
                k = j;
            }
            None if cpus.len() < max_cpus => {
                cpus.push((s.cpu, at, at));
                k = cpus.len() - 1;
            }
            None => return None,
        }
    }
    Some(Runs::ByCpu {
        stretches,
        heads: cpus.iter().map(|c| c.1).collect(),
    })
}

/// One sample of [`TypedParts::iter`].
#[derive(Debug, Clone, Copy)]
pub struct Sampled<'a> {
    /// The sample (its [`TypedSample::line`] is 0: its rank is [`Sampled::line`]).
    pub sample: &'a TypedSample,
    /// 1-based rank among the file's samples in time order (`Event::line`).
    pub line: u64,
    part: &'a TypedSamples,
    /// Its part's index ([`TypedParts::join`]).
    part_at: usize,
}

impl<'a> Sampled<'a> {
    /// Its typed fields (empty for an event not asked for).
    #[inline]
    pub fn values(&self) -> &'a [i64] {
        self.part.values_of(self.sample)
    }

    /// Its payload text (empty for a typed one).
    #[inline]
    pub fn payload(&self) -> &'a str {
        self.part.payload_of(self.sample)
    }

    /// Its call chain ([`TypedSamples::chain_of`]).
    #[inline]
    pub fn chain(&self) -> &'a [u64] {
        self.part.chain_of(self.sample)
    }
}

impl TypedParts {
    /// The walks of consecutive stretches of one data section, each with its [`runs`], as
    /// the parts of one; `None` when the whole has more samples than a u32 numbers (the
    /// record reader's then).
    pub(super) fn new(parts: Vec<(TypedSamples, Runs)>) -> Option<TypedParts> {
        let total: usize = parts.iter().map(|p| p.0.samples.len()).sum();
        if total >= u32::MAX as usize || parts.is_empty() {
            return None;
        }
        let first = &parts[0].0;
        let (events, typed) = (first.events.clone(), first.typed.clone());
        let mut fields = first.fields.clone();
        for (p, _) in &parts[1..] {
            for (f, g) in fields.iter_mut().zip(&p.fields) {
                if *g != 0 {
                    *f = *g;
                }
            }
        }
        Some(TypedParts {
            events,
            typed,
            fields,
            parts,
            kallsyms: None,
        })
    }

    /// The symbol of each frame of `chain` ([`Sampled::chain`]) into `out`, innermost first:
    /// the `symbol` of each frame [`super::Reader::next_event`] gives for the same sample (a
    /// kernel frame's kallsyms symbol, `[unknown]` for any other). `recent`: the symbols
    /// looked up last, kept from call to call.
    pub fn chain_symbols<'s>(&'s self, chain: &[u64], recent: &mut Recent, out: &mut Vec<&'s str>) {
        out.clear();
        super::chain_frames(chain.iter().copied(), |ip, kernel| {
            out.push(super::frame_symbol(self.kallsyms.as_ref(), recent, ip, kernel).0)
        });
    }

    /// Every sample left, part by part in file order, not in time order ([`TypedParts::iter`]).
    pub fn unordered(&self) -> impl Iterator<Item = &TypedSample> + '_ {
        self.parts.iter().flat_map(|p| p.0.samples.iter())
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.0.samples.len()).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples in the record reader's order: by timestamp, equal ones in file order.
    /// Each run (a sorted part, or one CPU's samples of a part) is in that order and the
    /// parts are in file order, so the whole is the runs' merge by (timestamp, part, place in
    /// the part), which takes one run's samples for as long as they come before every other
    /// run's next.
    pub fn iter(&self) -> InOrder<'_> {
        let mut cursors = Vec::new();
        for (p, (part, runs)) in self.parts.iter().enumerate() {
            let head = |at: u32, st: u32| ((key(&part.samples[at as usize]), p, at), st);
            match runs {
                Runs::Sorted if part.samples.is_empty() => {}
                Runs::Sorted => cursors.push(head(0, NO_NEXT)),
                Runs::ByCpu { stretches, heads } => {
                    cursors.extend(heads.iter().map(|&h| head(stretches[h as usize].0, h)))
                }
            }
        }
        let mut it = InOrder {
            parts: &self.parts,
            cursors,
            cur: usize::MAX,
            part: 0,
            samples: &[],
            stretches: &[],
            stretch: NO_NEXT,
            at: 0,
            end: 0,
            bound: NO_BOUND,
            line: 0,
        };
        it.pick();
        it
    }

    /// The samples in one vector, as [`TypedParts::iter`] gives them, numbered, each part's
    /// values and payloads after the previous part's; `None` when a slot would not fit a u32
    /// (the record reader's then).
    pub fn join(&self) -> Option<TypedSamples> {
        // where each part's values and payloads start in the whole
        let (mut bases, mut nv, mut np, mut nc) = (Vec::with_capacity(self.parts.len()), 0, 0, 0);
        for (p, _) in &self.parts {
            bases.push((nv, np, nc));
            (nv, np, nc) = (
                nv + p.values.len(),
                np + p.payloads.len(),
                nc + p.chains.len(),
            );
        }
        let mut samples = Vec::with_capacity(self.len());
        for x in self.iter() {
            let mut s = *x.sample;
            let (bv, bp, bc) = bases[x.part_at];
            let base = match self.typed.get(s.event as usize)? {
                true => Some(bv),
                false if s.slot == NO_PAYLOAD => None,
                false => Some(bp),
            };
            if let Some(base) = base {
                s.slot = u32::try_from(s.slot as usize + base)
                    .ok()
                    .filter(|&x| x != NO_PAYLOAD)?;
            }
            if s.chain != NO_CHAIN {
                s.chain = u32::try_from(s.chain as usize + bc)
                    .ok()
                    .filter(|&x| x != NO_CHAIN)?;
            }
            // below u32::MAX: `TypedParts::new` checked the whole
            s.line = x.line as u32;
            samples.push(s);
        }
        Some(TypedSamples {
            events: self.events.clone(),
            typed: self.typed.clone(),
            fields: self.fields.clone(),
            samples,
            values: self
                .parts
                .iter()
                .flat_map(|p| p.0.values.iter().copied())
                .collect(),
            payloads: self
                .parts
                .iter()
                .flat_map(|p| p.0.payloads.iter().cloned())
                .collect(),
            chains: self
                .parts
                .iter()
                .flat_map(|p| p.0.chains.iter().copied())
                .collect(),
        })
    }
}

/// Where a [`TypedParts::iter`] has got to, to go on from ([`TypedParts::resume`]) once the
/// parts it has passed are let go ([`TypedParts::let_go_passed`]).
#[derive(Debug)]
pub struct Place {
    cursors: Vec<((u64, usize, u32), u32)>,
    cur: usize,
    part: usize,
    stretch: u32,
    at: u32,
    end: u32,
    bound: (u64, usize, u32),
    line: u64,
}

impl TypedParts {
    /// The samples from `p` on, as the iterator `p` was taken from would have gone on.
    pub fn resume(&self, p: Place) -> InOrder<'_> {
        let (samples, stretches): (&[TypedSample], &[(u32, u32, u32)]) =
            match self.parts.get(p.part) {
                Some((part, runs)) if p.cur != usize::MAX => (
                    &part.samples,
                    match runs {
                        Runs::Sorted => &[],
                        Runs::ByCpu { stretches, .. } => stretches,
                    },
                ),
                _ => (&[], &[]),
            };
        InOrder {
            parts: &self.parts,
            cursors: p.cursors,
            cur: p.cur,
            part: p.part,
            samples,
            stretches,
            stretch: p.stretch,
            at: p.at,
            end: p.end,
            bound: p.bound,
            line: p.line,
        }
    }

    /// Lets go of the samples, typed values, payloads and call chains of every part the
    /// iterator at `at` has passed (none of its runs has a sample left to give), so a reader
    /// turning samples into its own records holds the walk's whole output only at the start.
    /// The parts are in file order and each is mostly before the next in time, so a part
    /// goes once the pass is past the start of the next. What was let go is not read again: [`TypedParts::len`]
    /// counts only what is left.
    pub fn let_go_passed(&mut self, at: &Place) {
        for (p, (part, _)) in self.parts.iter_mut().enumerate() {
            // a run with samples left has its cursor's place (the current run: where it was
            // taken up), an exhausted one NO_NEXT
            let live = at
                .cursors
                .iter()
                .any(|&((_, q, i), _)| q == p && i != NO_NEXT);
            if !live && !part.samples.is_empty() {
                part.samples = Vec::new();
                part.values = Vec::new();
                part.payloads = Vec::new();
                part.chains = Vec::new();
            }
        }
    }
}

impl InOrder<'_> {
    /// Where it has got to ([`TypedParts::resume`]).
    pub fn place(self) -> Place {
        Place {
            cursors: self.cursors,
            cur: self.cur,
            part: self.part,
            stretch: self.stretch,
            at: self.at,
            end: self.end,
            bound: self.bound,
            line: self.line,
        }
    }
}

/// [`TypedParts::iter`].
#[derive(Debug)]
pub struct InOrder<'a> {
    parts: &'a [(TypedSamples, Runs)],
    /// Per run: (key, part, place) of its next sample and the stretch it is in ([`NO_NEXT`]
    /// for a sorted part), the place [`NO_NEXT`] when it has none left (the current run's as
    /// of when it was taken up). Kept with the key, finding the next run compares these alone.
    cursors: Vec<((u64, usize, u32), u32)>,
    /// The run taken from: its cursor, part, the part's samples and stretches, its stretch,
    /// next sample and the stretch's end, while they come before `bound`.
    cur: usize,
    part: usize,
    samples: &'a [TypedSample],
    stretches: &'a [(u32, u32, u32)],
    stretch: u32,
    at: u32,
    end: u32,
    /// (key, part, place) of the first of the other runs' next samples.
    bound: (u64, usize, u32),
    line: u64,
}

/// [`InOrder::bound`] when no other run has samples left: after every sample.
const NO_BOUND: (u64, usize, u32) = (u64::MAX, usize::MAX, u32::MAX);

impl InOrder<'_> {
    /// Take up the run whose next sample comes first; the (key, part, place) of the next
    /// after it becomes the bound. No run left: nothing taken up.
    fn pick(&mut self) {
        let (mut best, mut best_run, mut second) = (NO_BOUND, usize::MAX, NO_BOUND);
        for (r, &(c, _)) in self.cursors.iter().enumerate() {
            if c.2 == NO_NEXT {
                continue;
            }
            if c < best {
                (second, best, best_run) = (best, c, r);
            } else if c < second {
                second = c;
            }
        }
        self.cur = best_run;
        self.bound = second;
        let Some(&((_, p, at), stretch)) = self.cursors.get(best_run) else {
            (self.samples, self.at, self.end) = (&[], 0, 0);
            return;
        };
        let (part, runs) = &self.parts[p];
        self.part = p;
        self.samples = &part.samples;
        (self.stretches, self.end) = match runs {
            Runs::Sorted => (&[][..], part.samples.len() as u32),
            Runs::ByCpu { stretches, .. } => (&stretches[..], stretches[stretch as usize].1),
        };
        (self.stretch, self.at) = (stretch, at);
    }
}

impl<'a> Iterator for InOrder<'a> {
    type Item = Sampled<'a>;

    #[inline]
    fn next(&mut self) -> Option<Sampled<'a>> {
        loop {
            if self.at < self.end {
                let s = &self.samples[self.at as usize];
                let k = (key(s), self.part, self.at);
                if k < self.bound {
                    self.at += 1;
                    if self.at == self.end {
                        // on to the CPU's next stretch, if any
                        if let Some(&(_, _, n)) = self.stretches.get(self.stretch as usize) {
                            if let Some(&(next_at, next_end, _)) = self.stretches.get(n as usize) {
                                (self.stretch, self.at, self.end) = (n, next_at, next_end);
                            }
                        }
                    }
                    self.line += 1;
                    return Some(Sampled {
                        sample: s,
                        line: self.line,
                        part: &self.parts[self.part].0,
                        part_at: self.part,
                    });
                }
                // another run's next comes first: this one waits with its key
                self.cursors[self.cur] = (k, self.stretch);
            } else if self.bound == NO_BOUND {
                return None;
            } else {
                self.cursors[self.cur].0 .2 = NO_NEXT;
            }
            self.pick();
        }
    }
}

/// What the walk counted besides the samples (the record reader's header counts).
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub lost_records: u64,
    pub lost_kernel: u64,
    pub lost_samples: u64,
    /// Samples whose payload rendered raw (`[FAILED TO PARSE]`).
    pub unparsed: u64,
}

impl Counts {
    /// Another part's counts added.
    pub fn add(&mut self, o: &Counts) {
        self.lost_records += o.lost_records;
        self.lost_kernel = self.lost_kernel.saturating_add(o.lost_kernel);
        self.lost_samples = self.lost_samples.saturating_add(o.lost_samples);
        self.unparsed += o.unparsed;
    }
}

/// Whether every attr's samples have the layout this walk reads: no `READ` (a variable field
/// before `RAW` whose length depends on `read_format`; a `CALLCHAIN` says its own), a
/// timestamp, and a way to tell the attr of a sample (one attr, `IDENTIFIER` in all, or `ID`
/// at one offset in all).
pub(super) fn eligible(sample_types: &[u64]) -> bool {
    let Some(&first) = sample_types.first() else {
        return false;
    };
    let plain = sample_types.iter().all(|&t| t & READ == 0 && t & TIME != 0);
    let told = sample_types.len() == 1
        || (id_at(first).is_some() && sample_types.iter().all(|&t| id_at(t) == id_at(first)));
    plain && told
}

/// Walk the records of `data` (the data section, records whole: the file was checked) and
/// decode every sample, in file order ([`runs`] and [`TypedParts::iter`] put them in time
/// order).
/// `None`: something here needs the record reader. `passed` is told where each record ends
/// (to let go of the pages behind).
pub(super) fn walk(
    data: &[u8],
    sample_types: &[u64],
    attrs: &[Attr],
    attr_of_id: &super::IdMap,
    plan: &Plan,
    counts: &mut Counts,
    mut passed: impl FnMut(usize),
) -> Option<TypedSamples> {
    let mut out = TypedSamples {
        events: attrs
            .iter()
            .map(|a| (a.system.clone(), a.name.clone()))
            .collect(),
        typed: (0..attrs.len()).map(|i| plan.covers(i)).collect(),
        fields: vec![0; attrs.len()],
        ..TypedSamples::default()
    };
    // in file order: `sort` is stable
    out.samples.reserve(data.len() / 64);
    // a file where some events have call chains gives the others their ip as one frame
    let chained = sample_types.iter().any(|&t| t & CALLCHAIN != 0);
    // Those one-frame chains repeat a few ips (the call sites of a tracepoint), so each is
    // kept once and shared by the samples that have it: (ip, context, where), by ip. Bounded,
    // so a file of many distinct ips costs what one entry per sample did.
    let mut one_frame = [(0u64, 0u64, NO_CHAIN); 64];
    let mut vals = Vec::new();
    let mut pos = 0usize;
    while pos + 8 <= data.len() {
        super::bytes::prefetch_ahead(data, pos);
        let ty = u32_at(data, pos)?;
        let misc = u16_at(data, pos + 4)?;
        let size = usize::from(u16_at(data, pos + 6)?);
        let mut next = pos.checked_add(size)?;
        if size < 8 || next > data.len() {
            return None;
        }
        let body = &data[pos + 8..next];
        match ty {
            PERF_RECORD_SAMPLE => {
                let s = read_sample(body, sample_types, attr_of_id)?;
                let ai = s.attr;
                // a value kept for none, or more samples than a u32 line: the record reader's
                let cpu = match s.cpu {
                    Some(c) => u16::try_from(c).ok().filter(|&c| c != NO_CPU)?,
                    None => NO_CPU,
                };
                if s.pid == Some(NO_PID) || out.samples.len() >= u32::MAX as usize {
                    return None;
                }
                let mut ts = TypedSample {
                    line: 0,
                    ts_ns: s.time as i64,
                    cpu,
                    event: u16::try_from(ai).ok()?,
                    tid: s.tid.unwrap_or(-1),
                    pid: s.pid.unwrap_or(NO_PID),
                    chain: NO_CHAIN,
                    slot: NO_PAYLOAD,
                };
                match (s.chain, s.ip) {
                    (Some(ips), _) => {
                        ts.chain = chain_at(&out.chains)?;
                        out.chains.push(ips.len() as u64 / 8);
                        out.chains.extend(
                            ips.chunks_exact(8)
                                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
                        );
                    }
                    // perf script's one frame for an event without a chain among others with
                    // one: its ip, in the context its CPU mode says
                    (None, Some(ip)) if chained => {
                        let kernel = matches!(
                            misc & PERF_RECORD_MISC_CPUMODE_MASK,
                            PERF_RECORD_MISC_KERNEL | PERF_RECORD_MISC_GUEST_KERNEL
                        );
                        let context = match kernel {
                            true => PERF_CONTEXT_KERNEL,
                            false => PERF_CONTEXT_USER,
                        };
                        // no context marker is 0, so an unused entry never matches
                        let known =
                            &mut one_frame[(ip.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize];
                        if (known.0, known.1) == (ip, context) {
                            ts.chain = known.2;
                        } else {
                            ts.chain = chain_at(&out.chains)?;
                            out.chains.extend([2, context, ip]);
                            *known = (ip, context, ts.chain);
                        }
                    }
                    _ => {}
                }
                if plan.covers(ai) {
                    ts.slot = u32::try_from(out.values.len()).ok()?;
                    // a field the format cannot give, or a payload too short for it: the
                    // record reader says which sample, in its words
                    plan.decode(ai, s.raw.unwrap_or(&[]), false, &mut vals)
                        .ok()?;
                    *out.fields.get_mut(ai)? = vals.len() as u32;
                    out.values.extend_from_slice(&vals);
                } else if let (Some(f), Some(raw)) = (&attrs.get(ai)?.format, s.raw) {
                    let (fmt, pf) = &**f;
                    let rec = super::Record {
                        data: raw,
                        format: fmt,
                        big_endian: false,
                    };
                    // about the longest payload of the replay events
                    let mut text = String::with_capacity(128);
                    if !super::print_fmt::render_payload(pf.as_ref(), &rec, &mut text) {
                        counts.unparsed += 1;
                    }
                    ts.slot = u32::try_from(out.payloads.len()).ok()?;
                    out.payloads.push(text);
                }
                out.samples.push(ts);
            }
            PERF_RECORD_LOST => {
                // struct { u64 id; u64 lost; }
                counts.lost_records += 1;
                counts.lost_kernel = counts.lost_kernel.saturating_add(u64_at(body, 8)?);
            }
            PERF_RECORD_LOST_SAMPLES => {
                counts.lost_samples = counts.lost_samples.saturating_add(u64_at(body, 0)?);
            }
            PERF_RECORD_MMAP2
                if misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0
                    && body.get(32).is_some_and(|&n| n > 20) =>
            {
                // the record reader counts it as a record that does not parse
                return None;
            }
            PERF_RECORD_AUXTRACE => {
                next = next.checked_add(usize::try_from(u64_at(data, pos + 8)?).ok()?)?;
                if next > data.len() {
                    return None;
                }
            }
            // the kernel's records the record reader parses and this walk has no use for
            // (mmap, comm, fork, exit, throttle, ..., text_poke) and perf's own (finished
            // round, id index, thread and cpu maps, time conversion, ...), but not compressed
            // ones; anything else (a type perf does not define) is the record reader's to say
            1..=8 | 10..=12 | 14..=20 => {}
            t if (64..=PERF_RECORD_FINISHED_INIT).contains(&t) && t != PERF_RECORD_COMPRESSED => {}
            _ => return None,
        }
        pos = next;
        passed(pos);
    }
    if pos != data.len() {
        return None;
    }
    Some(out)
}

/// Where the next call chain starts in `chains`, if a [`TypedSample::chain`] can say so.
fn chain_at(chains: &[u64]) -> Option<u32> {
    u32::try_from(chains.len())
        .ok()
        .filter(|&at| at != NO_CHAIN)
}

/// The record reader's order: the u64 timestamp, then the file offset (a stable sort of
/// samples in file order).
fn key(s: &TypedSample) -> u64 {
    s.ts_ns as u64
}

/// Put the samples of one [`walk`] in time order ([`key`]; stable, as they are in file order).
pub(super) fn sort(out: &mut TypedSamples) {
    out.samples.sort_by_key(key);
}

/// A sample body's fields up to `RAW`.
pub(super) struct Sample<'a> {
    attr: usize,
    ip: Option<u64>,
    pub(super) time: u64,
    cpu: Option<u32>,
    pid: Option<i32>,
    pub(super) tid: Option<i32>,
    /// The call chain's u64s (without their count), when recorded.
    chain: Option<&'a [u8]>,
    raw: Option<&'a [u8]>,
}

pub(super) fn read_sample<'a>(
    b: &'a [u8],
    sample_types: &[u64],
    attr_of_id: &super::IdMap,
) -> Option<Sample<'a>> {
    let first = sample_types[0];
    let attr = if sample_types.len() == 1 {
        0
    } else {
        *attr_of_id.get(&u64_at(b, id_at(first)?)?)?
    };
    let t = *sample_types.get(attr)?;
    let mut p = 0usize;
    let mut take = |bit: u64| -> Option<Option<u64>> {
        if t & bit == 0 {
            return Some(None);
        }
        let v = u64_at(b, p)?;
        p += 8;
        Some(Some(v))
    };
    take(IDENTIFIER)?;
    let ip = take(IP)?;
    let pid_tid = take(TID)?;
    let time = take(TIME)??;
    take(ADDR)?;
    take(ID)?;
    take(STREAM_ID)?;
    // u32 cpu, u32 res: the low half (little-endian)
    let cpu = take(CPU)?.map(|v| v as u32);
    take(PERIOD)?;
    let chain = if t & CALLCHAIN != 0 {
        // u64 nr, then nr ips: a count past the record is the record reader's to skip
        let nr = usize::try_from(u64_at(b, p)?).ok()?;
        let ips = b.get(p + 8..nr.checked_mul(8)?.checked_add(p + 8)?)?;
        p += 8 + ips.len();
        Some(ips)
    } else {
        None
    };
    let raw = if t & RAW != 0 {
        let n = u32_at(b, p)? as usize;
        Some(b.get(p + 4..(p + 4).checked_add(n)?)?)
    } else {
        None
    };
    Some(Sample {
        attr,
        ip,
        time,
        cpu,
        pid: pid_tid.map(|v| v as u32 as i32),
        tid: pid_tid.map(|v| (v >> 32) as u32 as i32),
        chain,
        raw,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::perf_data::tests::gunzip;
    use crate::perf_data::{Options, Reader};

    #[test]
    fn a_sample_is_32_bytes_and_its_options_read_back() {
        assert_eq!(std::mem::size_of::<TypedSample>(), 32);
        let mut s = TypedSample {
            ts_ns: 5,
            line: 7,
            cpu: NO_CPU,
            tid: -1,
            pid: NO_PID,
            event: 0,
            chain: NO_CHAIN,
            slot: NO_PAYLOAD,
        };
        assert_eq!((s.line(), s.cpu(), s.pid()), (7, None, None));
        (s.cpu, s.pid) = (0, -1);
        assert_eq!((s.cpu(), s.pid()), (Some(0), Some(-1)));
    }

    const WANT: [(&str, &[&str]); 4] = [
        ("mm_page_alloc", &["pfn", "order"]),
        ("mm_lru_insertion", &["pfn"]),
        ("contention_begin", &["lock_addr"]),
        ("contention_end", &["lock_addr", "ret"]),
    ];

    fn reader(bytes: Vec<u8>) -> Reader<'static> {
        let mut r = Reader::with_options(Box::new(Cursor::new(bytes)), Options::offline(false));
        r.typed_fields(&WANT);
        r
    }

    /// The one-pass walk gives what the record reader gives for the same file, sample by
    /// sample (order, numbers, typed fields, the payload text of events not asked for), and the
    /// same lost counts and notes.
    #[test]
    fn one_pass_gives_the_record_readers_samples() {
        for (path, n) in [
            // `perf script -i` of the same file: 66,447 lines, one per sample
            ("fixtures/perfdata/micro-16K-replay/perf.data.gz", 66_447),
            // 1,408 lines, with 2 LOST and 10 LOST_SAMPLES records (`perf report --stats`)
            ("fixtures/perfdata/micro-16K-lost/perf.data.gz", 1_408),
        ] {
            let bytes = gunzip(path);
            let mut slow = reader(bytes.clone());
            let mut fast = reader(bytes);
            fast.ensure_open().unwrap();
            let file =
                std::sync::Arc::downgrade(&fast.state.as_ref().unwrap().buf.as_ref().unwrap().0);
            let all = fast.typed_samples().unwrap().expect("read in one pass");
            assert_eq!(all.len(), n, "{path}");
            // the samples own what they hold: the file's bytes are gone, nothing else kept them
            assert!(
                file.upgrade().is_none(),
                "{path}: the bytes outlive the walk"
            );
            for x in all.iter() {
                let s = x.sample;
                let e = slow.next_event().unwrap().expect("as many events");
                let (system, name) = &all.events[s.event as usize];
                assert_eq!(
                    (e.line, e.ts_ns, e.cpu, e.tid, e.pid),
                    (x.line, Some(s.ts_ns), s.cpu(), s.tid, s.pid()),
                    "{path}"
                );
                assert_eq!((&e.system, &e.name), (system, name));
                let typed = all.typed[s.event as usize].then(|| x.values());
                assert_eq!(slow.fields(), typed, "{path}:{}", e.line);
                assert_eq!(e.payload, x.payload(), "{path}:{}", e.line);
            }
            assert!(slow.next_event().unwrap().is_none());
            assert_eq!(fast.next_event().unwrap(), None, "the reader is at its end");
            let (hs, hf) = (slow.header().unwrap(), fast.header().unwrap());
            assert!(hf.complete);
            assert_eq!(
                (hs.lost_records, hs.lost_kernel, hs.lost_samples),
                (hf.lost_records, hf.lost_kernel, hf.lost_samples)
            );
            assert_eq!(slow.diagnostics().notes, fast.diagnostics().notes);
        }
        // the first sample as `perf script --ns` prints it:
        // 24435 [001] 11637.240356491: kmem:mm_page_alloc: page=0x147f5c pfn=0x147f5c order=0 ...
        let all = reader(gunzip("fixtures/perfdata/micro-16K-replay/perf.data.gz"))
            .typed_samples()
            .unwrap()
            .unwrap();
        let x = all.iter().next().unwrap();
        let s = x.sample;
        assert_eq!(
            (x.line, s.ts_ns, s.cpu(), s.tid),
            (1, 11_637_240_356_491, Some(1), 24_435)
        );
        assert_eq!(all.events[s.event as usize].1, "mm_page_alloc");
        assert_eq!(x.values(), [0x147f5c, 0]);
        // kmem:mm_page_free is not asked for: its payload is the text perf prints
        let free = all
            .iter()
            .find(|x| all.events[x.sample.event as usize].1 == "mm_page_free")
            .unwrap();
        assert!(free.payload().starts_with("page="), "{}", free.payload());
        assert!(free.values().is_empty());
        // and the lost file's counts are perf's: 2 LOST records, 10 LOST_SAMPLES
        let mut r = reader(gunzip("fixtures/perfdata/micro-16K-lost/perf.data.gz"));
        r.typed_samples().unwrap().unwrap();
        assert_eq!(r.header().unwrap().lost_records, 2);
    }

    /// Recordings with call chains are read in one pass too: `-g` on every event, `-g` on
    /// some and `/call-graph=no/` on the others (`lockcast record`'s fbatch recipe: the
    /// layouts differ, so each sample says its attr), and cpu-clock samples. Each sample's
    /// chain names, frame by frame, the symbols of the record reader's frames, kernel frames
    /// from the recording's kallsyms; an event without a chain among events with one has its
    /// ip as its one frame, as `perf script` prints it.
    #[test]
    fn one_pass_gives_the_record_readers_call_chains() {
        for (dir, n) in [
            // samples: the lines of its script-ns.txt that start a sample (`COMM TID [CPU]
            // SECS:`, or without the CPU for cpu-clock), not a frame's
            ("fbatch-churn-4K", 21_411),
            ("fbatch-churn-4K-g", 5_481),
            ("micro-16K-g", 37_239),
            ("micro-16K-cpu-clock-g", 9_462),
        ] {
            let path = format!("fixtures/perfdata/{dir}/perf.data.gz");
            let ks = gunzip(&format!("fixtures/perfdata/{dir}/kallsyms.gz"));
            let ks = crate::perf_data::kallsyms::Kallsyms::parse(std::str::from_utf8(&ks).unwrap());
            let open = |bytes: Vec<u8>| {
                let mut o = Options::offline(false);
                o.kallsyms = Some(ks.clone());
                let mut r = Reader::with_options(Box::new(Cursor::new(bytes)), o);
                r.typed_fields(&WANT);
                r
            };
            let bytes = gunzip(&path);
            let mut slow = open(bytes.clone());
            let mut fast = open(bytes);
            let all = fast.typed_samples().unwrap().expect("read in one pass");
            assert_eq!(all.len(), n, "{path}");
            let (mut recent, mut symbols) = (Recent::default(), Vec::new());
            // the per-folio events' samples, and those of them with one frame
            let (mut chained, mut named, mut folio, mut one_frame) = (0, 0, 0, 0);
            for x in all.iter() {
                let s = x.sample;
                let e = slow.next_event().unwrap().expect("as many events");
                assert_eq!(
                    (e.line, e.ts_ns, e.cpu, e.tid, e.pid, &e.name),
                    (
                        x.line,
                        Some(s.ts_ns),
                        s.cpu(),
                        s.tid,
                        s.pid(),
                        &all.events[s.event as usize].1
                    ),
                    "{path}"
                );
                let typed = all.typed[s.event as usize].then(|| x.values());
                assert_eq!(slow.fields(), typed, "{path}:{}", e.line);
                assert_eq!(e.payload, x.payload(), "{path}:{}", e.line);
                all.chain_symbols(x.chain(), &mut recent, &mut symbols);
                let theirs: Vec<&str> = e.callchain.iter().map(|f| f.symbol.as_str()).collect();
                assert_eq!(symbols, theirs, "{path}:{}", e.line);
                chained += usize::from(!symbols.is_empty());
                named += symbols.iter().filter(|s| !s.starts_with('[')).count();
                if e.name.starts_with("mm_") {
                    folio += 1;
                    one_frame += usize::from(symbols.len() == 1);
                }
            }
            assert!(slow.next_event().unwrap().is_none());
            assert_eq!(slow.diagnostics().notes, fast.diagnostics().notes, "{path}");
            assert_eq!(chained, n, "{path}: every sample has a chain or its ip");
            assert!(named > n, "{path}: kernel frames named");
            // the fbatch recipe's per-folio events have no chain of their own, the -g
            // recordings' do
            match dir {
                "fbatch-churn-4K" => {
                    assert!(folio > 0 && one_frame == folio, "{path}");
                    // and their few ips are kept once each, not once per sample
                    let kept: std::collections::HashSet<(usize, u32)> = all
                        .iter()
                        .filter(|x| all.events[x.sample.event as usize].1.starts_with("mm_"))
                        .map(|x| (x.part_at, x.sample.chain))
                        .collect();
                    assert!(
                        kept.len() * 100 < folio,
                        "{path}: {} of {folio}",
                        kept.len()
                    );
                }
                "micro-16K-cpu-clock-g" => assert_eq!(folio, 0),
                _ => assert!(
                    folio > 0 && one_frame == 0,
                    "{path}: {one_frame} of {folio}"
                ),
            }
        }
    }

    /// A data section walked in parts side by side gives the samples of one walk: the same
    /// order (equal timestamps in file order), numbers, fields, payloads and counts, for any
    /// number of parts, including parts shorter than one of perf's rounds.
    #[test]
    fn a_walk_in_parts_gives_the_walk_of_the_whole() {
        let mut all_ties = 0;
        for path in [
            "fixtures/perfdata/micro-16K-replay/perf.data.gz",
            "fixtures/perfdata/micro-16K-lost/perf.data.gz",
            // call chains on some events, one-frame chains on the others
            "fixtures/perfdata/fbatch-churn-4K/perf.data.gz",
        ] {
            let bytes = gunzip(path);
            let mut whole = reader(bytes.clone());
            whole.split_above = usize::MAX;
            let one = whole.typed_samples().unwrap().expect("read in one pass");
            assert!(one.len() > 1000, "{path}");
            let one = one.join().expect("one part joins");
            // 146 in the first file: a cut between two of them is the case the merge keeps
            // in file order
            let ties = one
                .samples
                .windows(2)
                .filter(|w| w[0].ts_ns == w[1].ts_ns)
                .count();
            for parts in [2, 3, 8, 61] {
                let mut r = reader(bytes.clone());
                (r.split_above, r.parts) = (0, parts);
                r.ensure_open().unwrap();
                let cuts = r.state.as_ref().unwrap().cuts.len();
                assert_eq!(cuts, parts - 1, "{path}: {parts} parts");
                let got = r.typed_samples().unwrap().expect("read in parts");
                assert_eq!(got.len(), one.samples.len(), "{path}");
                // read in order from the parts, and joined into one vector: both the whole's
                assert_eq!(got.iter().count(), one.samples.len(), "{path}");
                for (x, o) in got.iter().zip(&one.samples) {
                    let what = format!("{path}, {parts} parts, sample {}", o.line());
                    let g = x.sample;
                    assert_eq!(
                        (x.line, g.ts_ns, g.cpu(), g.tid, g.pid(), g.event),
                        (o.line(), o.ts_ns, o.cpu(), o.tid, o.pid(), o.event),
                        "{what}"
                    );
                    assert_eq!(x.values(), one.values_of(o), "{what}");
                    assert_eq!(x.payload(), one.payload_of(o), "{what}");
                    assert_eq!(x.chain(), one.chain_of(o), "{what}");
                }
                assert_eq!(got.fields, one.fields, "{path}");
                let joined = got.join().expect("joins");
                // where a chain starts differs: each part keeps its own shared one-frame chains
                let unchained = |v: &[TypedSample]| -> Vec<TypedSample> {
                    v.iter().map(|s| TypedSample { chain: 0, ..*s }).collect()
                };
                assert_eq!(
                    unchained(&joined.samples),
                    unchained(&one.samples),
                    "{path}, {parts} parts"
                );
                for (j, o) in joined.samples.iter().zip(&one.samples) {
                    let what = format!("{path}, {parts} parts, sample {}", o.line());
                    assert_eq!(joined.chain_of(j), one.chain_of(o), "{what}");
                }
                assert_eq!(
                    joined.values_of(&joined.samples[0]),
                    one.values_of(&one.samples[0])
                );
                let (hr, hw) = (r.header().unwrap(), whole.header().unwrap());
                assert_eq!(
                    (hr.lost_records, hr.lost_kernel, hr.lost_samples),
                    (hw.lost_records, hw.lost_kernel, hw.lost_samples),
                    "{path}"
                );
                assert_eq!(r.diagnostics().notes, whole.diagnostics().notes);
            }
            all_ties += ties;
        }
        assert!(all_ties > 0, "no equal stamps to keep in file order");
    }

    /// Sorted parts read in order ([`TypedParts::iter`]) and joined ([`TypedParts::join`])
    /// give the stable sort of the whole: parts overlapping at a seam (equal stamps across
    /// it), a part reaching back past its neighbour into the first's time, an empty part;
    /// numbered from 1, each payload with its sample.
    #[test]
    fn parts_join_in_the_order_of_one_stable_sort() {
        // (timestamp, tid): the tid says where in the file a sample was
        let part = |v: &[(i64, i32)]| {
            let mut t = TypedSamples {
                events: vec![(None, "e".into())],
                typed: vec![false],
                fields: vec![0],
                ..TypedSamples::default()
            };
            for &(ts_ns, tid) in v {
                t.payloads.push(format!("at {tid}"));
                t.samples.push(TypedSample {
                    ts_ns,
                    line: 0,
                    cpu: 0,
                    tid,
                    pid: 0,
                    event: 0,
                    chain: NO_CHAIN,
                    slot: t.payloads.len() as u32 - 1,
                });
            }
            if let Some(first) = t.samples.first_mut() {
                first.slot = NO_PAYLOAD;
            }
            sort(&mut t);
            t
        };
        let files: [&[&[(i64, i32)]]; 3] = [
            // two rounds overlapping, with stamps equal across the cut
            &[
                &[(1, 0), (5, 1), (9, 2), (7, 3)],
                &[(6, 4), (9, 5), (12, 6), (7, 7)],
            ],
            // a last part reaching back past the middle one into the first's time: the
            // whole is sorted
            &[
                &[(1, 0), (10, 1), (20, 2)],
                &[(25, 3), (26, 4)],
                &[(5, 5), (30, 6)],
            ],
            // parts already in order, one empty
            &[&[(1, 0), (2, 1)], &[], &[(2, 2), (3, 3)]],
        ];
        for parts in files {
            let mut whole: Vec<(i64, i32)> = parts.concat();
            whole.sort_by_key(|x| x.0);
            let merged =
                TypedParts::new(parts.iter().map(|p| (part(p), Runs::Sorted)).collect()).unwrap();
            assert_eq!(merged.len(), whole.len());
            let got = merged.join().unwrap();
            let seen: Vec<(i64, i32)> = got.samples.iter().map(|s| (s.ts_ns, s.tid)).collect();
            assert_eq!(seen, whole);
            // read in order from the parts: the joined samples, numbers and payloads
            let read: Vec<(i64, i32, u64, &str)> = merged
                .iter()
                .map(|x| (x.sample.ts_ns, x.sample.tid, x.line, x.payload()))
                .collect();
            let joined: Vec<(i64, i32, u64, &str)> = got
                .samples
                .iter()
                .map(|s| (s.ts_ns, s.tid, s.line(), got.payload_of(s)))
                .collect();
            assert_eq!(read, joined);
            // numbered in the order of the whole, from 1
            let lines: Vec<u64> = got.samples.iter().map(|s| s.line()).collect();
            assert_eq!(lines, (1..=whole.len() as u64).collect::<Vec<_>>());
            // each payload went with its sample; each part's first has none
            let firsts: Vec<i32> = parts
                .iter()
                .filter_map(|p| p.first().map(|x| x.1))
                .collect();
            for s in &got.samples {
                let want = match firsts.contains(&s.tid) {
                    true => String::new(),
                    false => format!("at {}", s.tid),
                };
                assert_eq!(got.payload_of(s), want);
            }
        }
    }

    /// Parts read as their CPUs' runs give the stable sort of the whole file by time: files
    /// of rounds of a stretch per CPU, each CPU's stamps rising (ties within a CPU and across
    /// CPUs and parts), cut into parts anywhere; a part with more CPUs than allowed, or a CPU
    /// whose stamps go back, is sorted instead, and reads the same.
    #[test]
    fn runs_by_cpu_read_in_the_order_of_one_stable_sort() {
        let mut seed = 7u64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        // (timestamp, cpu, tid): the tid is the sample's place in the file
        let part = |v: &[(i64, u32, i32)]| TypedSamples {
            events: vec![(None, "e".into())],
            typed: vec![false],
            fields: vec![0],
            payloads: v.iter().map(|x| format!("at {}", x.2)).collect(),
            samples: v
                .iter()
                .enumerate()
                .map(|(i, &(ts_ns, cpu, tid))| TypedSample {
                    ts_ns,
                    line: 0,
                    cpu: cpu as u16,
                    tid,
                    pid: 0,
                    event: 0,
                    chain: NO_CHAIN,
                    slot: i as u32,
                })
                .collect(),
            ..TypedSamples::default()
        };
        let (mut linked, mut sorted, mut let_go_early) = (0, 0, 0);
        for round in 0..200 {
            let cpus = 1 + rand(3) as u32;
            let mut last = vec![100i64; cpus as usize];
            let mut file = Vec::new();
            for _ in 0..1 + rand(6) {
                for c in 0..cpus {
                    for _ in 0..rand(5) {
                        last[c as usize] += rand(3) as i64;
                        file.push((last[c as usize], c, file.len() as i32));
                    }
                }
            }
            if round % 10 == 0 && file.len() > 2 {
                // a CPU's stamp going back: that part is sorted
                let i = 1 + rand(file.len() as u64 - 1) as usize;
                file[i].0 -= 5;
            }
            let mut cuts: Vec<usize> = (0..rand(4))
                .map(|_| rand(file.len() as u64 + 1) as usize)
                .collect();
            cuts.sort_unstable();
            let bounds: Vec<usize> = std::iter::once(0).chain(cuts).chain([file.len()]).collect();
            let max_cpus = [4, 2][round % 2];
            let parts: Vec<(TypedSamples, Runs)> = bounds
                .windows(2)
                .map(|w| {
                    let mut p = part(&file[w[0]..w[1]]);
                    let r = runs(&mut p, max_cpus);
                    match r {
                        Runs::ByCpu { .. } => linked += 1,
                        Runs::Sorted => sorted += 1,
                    }
                    (p, r)
                })
                .collect();
            // the record reader's key: the stamp as perf's u64
            let mut want = file.clone();
            want.sort_by_key(|x| x.0 as u64);
            let all = TypedParts::new(parts).unwrap();
            let got: Vec<(i64, u32, i32, u64, &str)> = all
                .iter()
                .map(|x| {
                    (
                        x.sample.ts_ns,
                        u32::from(x.sample.cpu),
                        x.sample.tid,
                        x.line,
                        x.payload(),
                    )
                })
                .collect();
            let want: Vec<(i64, u32, i32, u64, String)> = want
                .iter()
                .enumerate()
                .map(|(i, &(t, c, tid))| (t, c, tid, i as u64 + 1, format!("at {tid}")))
                .collect();
            assert_eq!(got.len(), want.len(), "round {round}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(
                    (g.0, g.1, g.2, g.3, g.4),
                    (w.0, w.1, w.2, w.3, w.4.as_str()),
                    "round {round}"
                );
            }
            // joined into one vector: the same
            let joined = all.join().unwrap();
            let j: Vec<(i64, i32, u64)> = joined
                .samples
                .iter()
                .map(|s| (s.ts_ns, s.tid, s.line()))
                .collect();
            let w: Vec<(i64, i32, u64)> = want.iter().map(|w| (w.0, w.2, w.3)).collect();
            assert_eq!(j, w, "round {round}");
            // taken up again every few samples, the parts passed let go of in between: the
            // same samples, lines and payloads (a part let go of too soon has none to give),
            // and at the end only the part read last is left
            let mut all = all;
            let every = 1 + rand(5) as usize;
            let (mut got, mut place) = (Vec::new(), None);
            loop {
                let mut it = match place.take() {
                    None => all.iter(),
                    Some(p) => all.resume(p),
                };
                let before = got.len();
                for x in it.by_ref().take(every) {
                    got.push((
                        x.sample.ts_ns,
                        x.sample.tid,
                        x.line,
                        x.payload().to_string(),
                    ));
                }
                let p = it.place();
                let left = all.len();
                all.let_go_passed(&p);
                if all.len() < left && !all.is_empty() {
                    let_go_early += 1;
                }
                if got.len() < before + every {
                    break;
                }
                place = Some(p);
            }
            let w: Vec<(i64, i32, u64, String)> =
                want.iter().map(|w| (w.0, w.2, w.3, w.4.clone())).collect();
            assert_eq!(got, w, "round {round}, every {every}");
            let kept = all.parts.iter().filter(|p| !p.0.samples.is_empty()).count();
            assert!(
                kept <= 1,
                "round {round}: {kept} parts kept at the end, the last at most"
            );
        }
        assert!(
            linked > 100 && sorted > 20,
            "both orders met: {linked} linked, {sorted} sorted"
        );
        assert!(
            let_go_early > 50,
            "parts let go of before the end: {let_go_early}"
        );
    }

    /// Files whose records need the record reader: `None`, and the reader then reads them
    /// whole with `next_event`.
    #[test]
    fn pipe_and_compressed_files_go_to_the_record_reader() {
        for path in [
            "fixtures/perfdata/micro-16K-pipe/perf.data.gz",
            "fixtures/perfdata/micro-16K-z/perf.data.gz",
        ] {
            let bytes = gunzip(path);
            let mut whole = reader(bytes.clone());
            let mut n = 0;
            while whole.next_event().unwrap().is_some() {
                n += 1;
            }
            let mut r = reader(bytes);
            assert!(r.typed_samples().unwrap().is_none(), "{path}");
            let mut m = 0;
            while r.next_event().unwrap().is_some() {
                m += 1;
            }
            assert!(n > 1000, "{path}: {n}");
            assert_eq!(m, n, "{path}");
        }
        // too late once the record reader began, and without typed fields asked for
        let bytes = gunzip("fixtures/perfdata/micro-16K-replay/perf.data.gz");
        let mut r = reader(bytes.clone());
        r.next_event().unwrap();
        assert!(r.typed_samples().unwrap().is_none());
        let mut r = Reader::with_options(Box::new(Cursor::new(bytes)), Options::offline(false));
        assert!(r.typed_samples().unwrap().is_none());
    }

    #[test]
    fn layouts_the_walk_reads() {
        const IP_TID_TIME_ID_CPU_PERIOD_RAW: u64 = IP | TID | TIME | ID | CPU | PERIOD | RAW;
        assert!(eligible(&[IP_TID_TIME_ID_CPU_PERIOD_RAW; 7]));
        assert_eq!(id_at(IP_TID_TIME_ID_CPU_PERIOD_RAW), Some(24));
        assert_eq!(id_at(TIME | ADDR | IDENTIFIER), Some(0));
        assert_eq!(id_at(IP | TIME), None);
        // a call chain before the payload says its length; a read_format's values depend on
        // the attr's read_format; without a timestamp there is no order
        assert!(eligible(&[IP_TID_TIME_ID_CPU_PERIOD_RAW | CALLCHAIN]));
        assert!(!eligible(&[IP_TID_TIME_ID_CPU_PERIOD_RAW | READ]));
        assert!(!eligible(&[TID | RAW]));
        // two layouts: the id must sit at one offset, or come first (IDENTIFIER)
        assert!(!eligible(&[TIME | ID, TIME | ADDR | ID]));
        assert!(eligible(&[TIME | IDENTIFIER, TIME | ADDR | IDENTIFIER]));
        assert!(!eligible(&[]));
    }
}
