//! What-if engine: replay a baseline capture through a patch's policy and predict the
//! `lruvec->lru_lock` contention the patched kernel would show (MODELS.md §2.1, §4 M4, §5, §6).
//!
//! Pipeline: [`trace`] (the five mm/lock events, plus discarding madvise/munmap calls) →
//! [`reconstruct`] (holds, faults, traced waits) → [`calibrate`] (hold model from the capture)
//! → [`intents`] (per-CPU virtual-time streams) → [`policy`] (lock requests under the patch)
//! → [`des`] (FIFO replay with the tracepoint's observation rule). [`summary`] is the
//! closed-form model for users who only have a `perf lock` table.
//!
//! Uncertainty: the calibration samples are bootstrapped (seeded, so a rerun prints the same
//! interval) and the policy's uncertain parameters (e.g. the RFC's drain rule) are swept; the
//! interval covers both.

pub mod alignment;
pub mod ask;
pub mod calibrate;
pub mod checks;
pub mod des;
pub mod intents;
pub mod lazyfree;
pub mod params;
pub mod policy;
pub mod reconstruct;
pub mod registry;
pub mod report;
pub mod sample;
pub mod summary;
pub mod survey;
pub mod time_range;
pub mod timeline;
pub mod trace;
pub mod verdict;
pub mod work;

mod cpu_map;
pub(crate) use cpu_map::CpuMap;

use std::collections::BTreeMap;

/// A map keyed by CPU, tid, pfn, lock address or index, as the trace reading, reconstruction,
/// calibration and checks keep per event: foldhash's fixed-seed hasher instead of the standard
/// SipHash, which took ~5% of a `--bootstrap 0` run. A capture read from the user's own disk
/// needs no protection against crafted collisions, and the fixed seed makes any iteration order
/// the same on every run.
pub(crate) type IntMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
/// The set of [`IntMap`].
pub(crate) type IntSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

use calibrate::Calibration;
use des::{Metrics, PathMetrics};
use policy::{Context, Policy};
use reconstruct::{Reconstruction, Side, Trigger};
use trace::{Observation, Trace, Via};

use crate::duration::Ns;
use crate::error::{Error, Result};

/// Engine options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Hold reconstruction knobs.
    pub reconstruct: reconstruct::Options,
    /// Observation rule; detected from the capture when `None`.
    pub observation: Option<Observation>,
    /// Quantile of waiters' arrival offsets taken as the edge of a hold (see [`calibrate`]).
    pub post_quantile: f64,
    /// Bootstrap replicates for the interval (0: point estimate only); with [`Options::stop`],
    /// the most that run.
    pub bootstrap: usize,
    /// Stop the replicates early once the interval has settled ([`Stop`]); `None` runs
    /// exactly [`Options::bootstrap`] (what `--bootstrap N` asks for).
    pub stop: Option<Stop>,
    /// Seed of the bootstrap.
    pub seed: u64,
    /// Holds plus folios the bootstrap replicates replay on a capture more than twice this
    /// size: a sample of time windows, scaled to the whole ([`sample`]); 0 replays the whole
    /// capture every time.
    pub sample: usize,
    /// Show a progress bar over the replicates (only when stderr is a terminal).
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            reconstruct: reconstruct::Options::default(),
            observation: None,
            post_quantile: 0.975,
            bootstrap: 200,
            stop: Some(Stop::default()),
            seed: 1,
            sample: DEFAULT_SAMPLE,
            progress: false,
        }
    }
}

/// Default of [`Options::sample`]. A replicate then costs about what a capture of 50,000 holds
/// and folios costs whole; the bundled captures are under twice that and are replayed whole.
pub const DEFAULT_SAMPLE: usize = 50_000;

/// Stopping rule of the bootstrap: the replicates run in blocks of `block`; from `min` on,
/// after each block the interval of the prediction and of the no-change replay (both ends of
/// contended and of total wait) is compared with the one a block earlier, and the run stops
/// when no end moved by more than `tolerance` × that metric's width. The blocks are fixed and
/// replicate `j` is the same draw whatever ran before it, so where it stops depends on the seed
/// and the capture alone, never on the thread count.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Stop {
    /// Replicates per block.
    pub block: usize,
    /// Fewest replicates before the rule may stop.
    pub min: usize,
    /// Largest move of an interval end over the last block, as a fraction of the width.
    pub tolerance: f64,
}

impl Default for Stop {
    fn default() -> Self {
        Stop {
            block: 25,
            min: 50,
            tolerance: 0.1,
        }
    }
}

/// How many bootstrap replicates ran, and why that many.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BootstrapRun {
    /// Replicates the interval is made of.
    pub replicates: usize,
    /// The most that could have run (`--bootstrap`, default 200).
    pub max: usize,
    /// Why the run stopped where it did.
    pub stopped: Stopped,
    /// The rule, in words, when it was applied.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rule: String,
    /// When the replicates replayed a sample of the capture ([`sample`]): its time windows
    /// (0: the whole capture).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub windows: usize,
    /// The share of the capture's holds and folios those windows hold.
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub sampled_share: f64,
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}

fn is_zero_f(x: &f64) -> bool {
    *x == 0.0
}

/// Why a bootstrap run has the replicates it has (JSON: the lowercase name).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stopped {
    /// `--bootstrap 0`: no interval, the point estimates.
    #[default]
    None,
    /// `--bootstrap N`: exactly N.
    Fixed,
    /// The stopping rule found the interval settled.
    Settled,
    /// Ran the most allowed without settling.
    Max,
}

/// A range for each metric.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Range {
    /// Lower end (2.5th percentile over bootstrap × policy alternatives).
    pub low: Metrics,
    /// Upper end (97.5th percentile).
    pub high: Metrics,
}

/// Counting identities (issue #4 validation 1): the kernel's batching rule applied to the
/// reconstructed folio stream must give back the capture's own drain count.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Identities {
    /// Pages put on the LRU.
    pub pages_added: u64,
    /// Folios put on the LRU.
    pub folios_added: u64,
    /// Add-side holds seen in the capture.
    pub add_holds_measured: u64,
    /// Add-side holds the baseline rule gives for the same folios.
    pub add_holds_rule: u64,
    /// Free-side holds seen.
    pub free_holds: u64,
    /// Free-side holds the kernel's mmu_gather + folio_batch rule gives for the same zaps.
    pub free_holds_rule: u64,
    /// Drains by trigger: batch full, large folio, explicit.
    pub drains_full: u64,
    /// Drains triggered by a large folio.
    pub drains_large: u64,
    /// Explicit drains (`lru_add_drain()`).
    pub drains_explicit: u64,
    /// Inserted folios whose allocation is not in the trace (order taken as 0).
    pub unknown_order: u64,
    /// Explicit drains by caller of `lru_add_drain*()`, when the capture has call chains
    /// (`perf record -g`).
    pub drain_sites: BTreeMap<String, u64>,
    /// Folios whose task discarded them before they were drained (dead on the batch), when the
    /// capture has discarding madvise/munmap events.
    pub dead_on_batch: u64,
    /// Folios freed by post-drain release holds (`Via::Release`): should equal `dead_on_batch`.
    pub release_folios: u64,
    /// Post-drain release holds.
    pub release_holds: u64,
    /// `madvise(MADV_FREE)` calls in the capture.
    #[serde(default)]
    pub lazyfree_calls: u64,
    /// Lazyfree holds rebuilt from them (a large folio alone, order-0 by 31), and how many of
    /// those a traced wait placed.
    #[serde(default)]
    pub lazyfree_holds: u64,
    /// Lazyfree holds placed by their own traced wait.
    #[serde(default)]
    pub lazyfree_traced: u64,
}

/// One kernel path's lock traffic: measured (traced waits by call chain), replayed (no
/// change) and predicted.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PathRow {
    /// The path.
    pub via: Via,
    /// Traced waits in the capture.
    pub measured_contended: u64,
    /// Their total.
    pub measured_wait_ns: Ns,
    /// No-change replay.
    pub replayed: PathMetrics,
    /// Under the policy.
    pub predicted: PathMetrics,
    /// Lock time (every wait + hold) of the path as a share of the replayed CPUs' busy time,
    /// no change, percent.
    pub replayed_share_pct: f64,
    /// The same under the policy.
    pub predicted_share_pct: f64,
}

/// One row of the sensitivity table: a calibration choice changed, everything else fixed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Sensitivity {
    /// What was changed.
    pub choice: String,
    /// No-change replay under that choice.
    pub replayed: Metrics,
    /// Prediction under that choice.
    pub predicted: Metrics,
}

/// The answer to one what-if question.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// Policy name.
    pub policy: String,
    /// Its parameters.
    pub params: BTreeMap<String, String>,
    /// Lock address as printed in the capture.
    pub lock: String,
    /// Capture path.
    pub capture: String,
    /// Observation rule used, and where it came from.
    pub observation: Observation,
    /// `call chains`, `meta file`, or `option`.
    pub observation_source: String,
    /// The hold model.
    pub calibration: Calibration,
    /// As measured in the capture (acquisitions = reconstructed holds).
    pub measured: Metrics,
    /// The no-change policy replayed.
    pub replayed: Metrics,
    /// The policy replayed.
    pub predicted: Metrics,
    /// Interval of the prediction.
    pub interval: Range,
    /// Interval of the no-change replay.
    pub replayed_interval: Range,
    /// How many bootstrap replicates the intervals are made of.
    pub bootstrap: BootstrapRun,
    /// Counting identities.
    pub identities: Identities,
    /// Sensitivity to calibration choices.
    pub sensitivity: Vec<Sensitivity>,
    /// Lock traffic by kernel path (drain, post-drain release, unmap).
    pub by_path: Vec<PathRow>,
    /// Things the user must know about this capture.
    pub notes: Vec<String>,
    /// What the answer cannot cover, printed next to it ([`checks`]).
    pub warnings: Vec<checks::Warning>,
    /// How far to trust the answer ([`verdict`]).
    pub verdict: verdict::Verdict,
    /// The part of the capture replayed, with `--time` ([`time_range`]); the whole without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<time_range::TimeCut>,
}

impl Outcome {
    /// replayed / predicted contended (the patch's reduction factor, like `diff`'s ratios).
    pub fn ratio_contended(&self) -> Option<f64> {
        ratio(
            self.replayed.contended as f64,
            self.predicted.contended as f64,
        )
    }
    /// replayed / predicted total wait.
    pub fn ratio_total_wait(&self) -> Option<f64> {
        ratio(
            self.replayed.total_wait_ns.as_f64(),
            self.predicted.total_wait_ns.as_f64(),
        )
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Policy context from the capture's meta file.
pub fn context(t: &Trace) -> Context {
    Context {
        untraced_duration_ns: t.meta_f64("untraced_duration_ns"),
        folio_kb: t
            .meta
            .get("mthp_size")
            .and_then(|s| s.trim_end_matches(['K', 'k']).parse().ok()),
        sites: t.sites.clone(),
        discards: t.discards.clone(),
    }
}

/// Run a policy over a capture.
pub fn run(mut t: Trace, policy: &dyn Policy, ctx: &Context, o: &Options) -> Result<Outcome> {
    // what the policy needs from the capture, before anything is rebuilt from it
    let missing = match registry::find(policy.name()).ok().and_then(|p| p.needs) {
        Some(needs) => checks::before(&t, policy.name(), needs, o.observation.is_some())?,
        None => checks::Missing::default(),
    };
    // The coverage check needs only the events and the lock: it runs beside the rebuild's
    // main pass, which leaves the other CPU mostly idle (on a 2 M-event capture it took ~10
    // ms of the calibration's side of the stretch below).
    t.ensure_survey();
    let stages = stage_spinner(o, t.events.len());
    stages.set_message("rebuilding the lock's holds");
    let lock = reconstruct::lock_of(&t, &o.reconstruct)?;
    let (rec, uncovered_waits) = both(
        t.events.len() >= reconstruct::SIDE_BY_SIDE,
        || reconstruct::reconstruct(&t, &o.reconstruct),
        || checks::uncovered_waits(&t, lock),
    );
    let rec = rec?;
    debug_assert_eq!(
        rec.lock, lock,
        "the rebuild took the lock the check was given"
    );
    let (observation, observation_source) = match (o.observation, t.slowpath_seen, t.observation()) {
        (Some(x), _, _) => (x, "option".to_string()),
        (None, Some(x), _) => (x, "call chains".to_string()),
        (None, None, Some(x)) => (x, "meta file".to_string()),
        (None, None, None) => {
            return Err(Error::Usage(format!(
                "{}: cannot tell which spinlock slowpath the kernel runs (no call chains, no meta file); \
                 pass --observation paravirt (a VM guest: every slowpath traced) or bare-metal",
                t.path
            )))
        }
    };
    stages.set_message("calibrating");
    // The calibration and the layouts need only the rebuilt holds, not each other: built side
    // by side, as the serial stretch before the replays is a large share of a what-if's time.
    // The sampled windows go with the calibration, the shorter side when they were moved
    // (2 M events: ~47 ms against the whole capture's layout, ~55; the two sides now end
    // within ~2.5 ms of each other, the layout's first order having got cheaper since).
    let ((samples, cal, win_recs), layout) = both(
        true,
        || {
            let samples = calibrate::samples(&t, &rec);
            let mut cal = calibrate::fit(&samples, o.post_quantile);
            cal.tail_cut_ns = tail_cut(&cal, &rec);
            let win_recs = match o.bootstrap {
                0 => None,
                _ => sample::windows(&t, &rec, &o.reconstruct, o.sample, sample::WINDOWS, o.seed),
            };
            // Nothing after this reads the capture's events, and the replays' buffers are
            // allocated next: without the events under them the peak is lower (on a 2 M-event
            // capture RSS there fell 241 -> 180 MiB). Unmapping them (~3.5 ms) fits in what
            // this side is shorter than the other.
            drop(std::mem::take(&mut t.events));
            (samples, cal, win_recs)
        },
        || intents::Layout::new(&rec),
    );
    let baseline = policy::Baseline;
    // The interval covers the policy and its alternatives: baseline first, then the
    // variants, one replicate's metrics in that order.
    let alts = policy.alternatives();
    let mut variants: Vec<&dyn Policy> = vec![policy];
    variants.extend(alts.iter().map(|b| b.as_ref()));
    let mut all: Vec<&dyn Policy> = vec![&baseline];
    all.extend(variants.iter().copied());
    let variants_cal = sensitivity_calibrations(&samples, &cal, &rec);
    // What the report reads of the rebuilt holds and folios, taken now (the identities by the
    // lead below, off the serial path): the layouts own what their builds read, so the holds
    // and folios (~110 MB on a 2 M-event capture) go before the replays' buffers are
    // allocated, below the peak instead of under it.
    let measured = measured(&rec, cal.tail_cut_ns);
    let policy_notes = policy.notes(&rec);
    let no_site = missing.call_chains.map(|_| checks::NoSite::of(&rec));
    let rec_size = sample::size(&rec);
    let (lock_name, measured_by_via) = (rec.lock_name.clone(), rec.measured_by_via.clone());
    let pair: [&dyn Policy; 2] = [&baseline, policy];
    // Each row is one answer, read on its own: replayed on the whole capture even when the
    // replicates were sampled (a sample's few-% noise is small beside an interval's width but
    // not beside a row's shift).
    let whole = [&layout];
    let (retimed, replay_only): (Vec<usize>, Vec<usize>) = (0..variants_cal.len())
        .partition(|&j| !calibrate::HoldTable::same_timing(&variants_cal[j].1, &cal));
    // Of those that keep the timing, a row the replay cannot tell from the point (the gap
    // scaled when it fits to 0) is the point: not replayed twice more on the whole capture.
    let (point_rows, replay_only): (Vec<usize>, Vec<usize>) = replay_only
        .into_iter()
        .partition(|&j| des::same_replay(&variants_cal[j].1, &cal));
    // Where the replicates may replay a sample of windows and the calibration stalls, the
    // point's replays list their traced waits, where each replicate's calibration draws its
    // stalls.
    let list_traced = win_recs.is_some() && cal.stall_share > 0.0 && !cal.stalls_ns.is_empty();
    // The rows that keep the point's timing (its intents and requests, only replayed under
    // their calibration) and the other observation's row: two replays each.
    let other_obs: Vec<Observation> = [Observation::Paravirt, Observation::BareMetal]
        .into_iter()
        .filter(|&x| x != observation)
        .collect();
    let replays: Vec<(&Calibration, Observation)> = replay_only
        .iter()
        .map(|&j| (&variants_cal[j].1, observation))
        .chain(other_obs.iter().map(|&x| (&cal, x)))
        .collect();
    // One queue of whole-capture work for both CPUs: the re-timed rows first (they start on
    // the other CPU while this thread builds the point estimates), then what replays the
    // point's requests - one replay per policy, with its breakdown by path, and the rows
    // above - which waits for the point. As separate stages, each ended with one CPU idle
    // while the other finished its last item.
    let (n_rows, n_points) = (retimed.len(), all.len());
    stages.set_message(format!(
        "replaying the whole capture: the point estimates and {} sensitivity rows",
        variants_cal.len()
    ));
    let point_cell: std::sync::OnceLock<Option<Point>> = std::sync::OnceLock::new();
    let point = |k: usize, w: &mut Vec<(intents::Scratch, intents::Intents)>| -> WholeJob {
        if k < n_rows {
            let c = &variants_cal[retimed[k]].1;
            return WholeJob::Row(eval_on(&whole, c, &pair, observation, ctx, w));
        }
        // None: the lead failed, and says why below
        let Some(pt) = point_cell.wait() else {
            return WholeJob::Skipped;
        };
        let reqs = &pt.whole_reqs;
        match k - n_rows {
            k if k < n_points => WholeJob::Point(match list_traced {
                true => des::replay_traced(&reqs[k], &cal, observation),
                false => (
                    des::replay_detailed(&reqs[k], &cal, observation),
                    Vec::new(),
                ),
            }),
            k => {
                let (c, obs) = replays[k - n_points];
                let r = des::replay(&reqs[0], c, obs);
                let p = match pt.same_requests {
                    true => r,
                    false => des::replay(&reqs[1], c, obs),
                };
                WholeJob::Replayed(vec![r, p])
            }
        }
    };
    let (lead, jobs) = par_map_lead(
        n_rows + n_points + replays.len(),
        || workers(&whole),
        point,
        || {
            // the waiting jobs must not wait for a lead that unwound
            let guard = SetOnDrop(&point_cell);
            let rec_identities = identities_of(&rec, &t.sites);
            drop(rec);
            // One layout of the streams for every calibration; each calibration re-times it
            // once and every policy replays the same intents.
            let mut scratch = intents::Scratch::default();
            let mut it = layout.empty();
            layout.build_into(&cal, &mut scratch, &mut it);
            // each one's requests under the point calibration, asked for once
            let made = all
                .iter()
                .map(|p| p.requests(&it, ctx))
                .collect::<Result<Vec<Vec<Vec<policy::Request>>>>>();
            let lead = made.map(|whole_reqs| {
                let _ = point_cell.set(Some(Point {
                    identities: with_intents(rec_identities, &it, &whole_reqs[0]),
                    same_requests: whole_reqs[0] == whole_reqs[1],
                    whole_reqs,
                }));
            });
            drop(guard);
            // this thread re-times the rows it takes in the point's buffers
            (lead, vec![(scratch, it)])
        },
    );
    lead?;
    // the point's requests go with it: nothing after this stage replays them
    let Some(Point { identities, .. }) = point_cell.into_inner().flatten() else {
        return Err(Error::Input(
            "the point estimates were not made".to_string(),
        ));
    };
    let mut retimed_rows = Vec::with_capacity(n_rows);
    let mut points = Vec::with_capacity(n_points);
    let mut replayed_rows = Vec::with_capacity(replays.len());
    for j in jobs {
        match j {
            WholeJob::Row(r) => retimed_rows.push(r),
            WholeJob::Point(p) => points.push(p),
            WholeJob::Replayed(m) => replayed_rows.push(m),
            WholeJob::Skipped => {}
        }
    }
    let traced_lists: Vec<Vec<(u32, u32)>> = points
        .iter_mut()
        .map(|p| std::mem::take(&mut p.1))
        .collect();
    let (rd, pd) = (&points[0].0, &points[1].0);
    let (replayed, predicted) = (rd.total, pd.total);
    let by_path = path_rows(&measured_by_via, rd, pd);
    stages.finish_and_clear();
    let bar = progress_bar(o, (o.bootstrap * all.len()) as u64);
    // Each replicate's generator state, drawn in order from the one seeded generator (a
    // resample takes one draw per sample; `skip` jumps over a replicate's draws), so the
    // replicates are the sequential loop's whatever thread replays them, and the first n of a
    // longer run are those of a run of n.
    let mut rng = crate::stats::Rng::new(o.seed);
    let skip = crate::stats::Skip::new(calibrate::resample_draws(&samples) as u64);
    let for_fit = calibrate::ForFit::new(&samples);
    let alt_points: Vec<Metrics> = points[2..].iter().map(|p| p.0.total).collect();
    // The whole capture's point estimates, in `all`'s order.
    let full_points: Vec<Metrics> = [replayed, predicted]
        .into_iter()
        .chain(alt_points.iter().copied())
        .collect();
    // What the replicates replay: the whole capture, or on a large one a sample of time
    // windows whose answers are scaled to the whole by the windows' own point estimates
    // (`sample`); a sample that misses one of the interval's metrics the whole capture has
    // (contention only in bursts between the windows) is dropped for the whole.
    // Half the windows on each CPU (their sums are of integers, the same in any order): this
    // stretch had one CPU idle between the whole-capture stage and the replicates.
    let win_list: Vec<&Reconstruction> = win_recs.iter().flatten().collect();
    let windows_of =
        |rs: &[&Reconstruction]| -> Result<(Vec<intents::Layout>, Option<Vec<Metrics>>)> {
            let ls: Vec<intents::Layout> = rs.iter().map(|r| intents::Layout::new(r)).collect();
            let refs: Vec<&intents::Layout> = ls.iter().collect();
            let m = match refs.is_empty() {
                true => None,
                false => Some(eval_on(
                    &refs,
                    &cal,
                    &all,
                    observation,
                    ctx,
                    &mut workers(&refs),
                )?),
            };
            Ok((ls, m))
        };
    let (first, second) = win_list.split_at(win_list.len().div_ceil(2));
    let (a, b) = both(
        !second.is_empty(),
        || windows_of(first),
        || windows_of(second),
    );
    let ((mut win_layouts, ma), (lb, mb)) = (a?, b?);
    win_layouts.extend(lb);
    let win_refs: Vec<&intents::Layout> = win_layouts.iter().collect();
    let win_points = match (ma, mb) {
        (Some(x), Some(y)) => Some(x.iter().zip(&y).map(|(p, q)| sample::add(p, q)).collect()),
        (x, y) => x.or(y),
    }
    .filter(|wp: &Vec<Metrics>| {
        full_points
            .iter()
            .zip(wp)
            .all(|(f, w)| sample::covers(f, w))
    });
    let layouts: Vec<&intents::Layout> = match win_points {
        Some(_) => win_refs,
        None => vec![&layout],
    };
    // the whole capture's traced waits per policy, where each calibration draws its stalls
    let traced: Vec<Vec<(u32, u32)>> = match win_points {
        Some(_) if list_traced => traced_lists,
        _ => Vec::new(),
    };
    // A capture large enough to sample whose sample could not stand for it costs its replicates
    // the whole capture each (on a 2 M-event recording 4.5 s instead of 1.0): said, with why.
    let sampled_for = o.bootstrap > 0 && sample::worth_sampling(rec_size, o.sample);
    let whole_note = match (sampled_for, &win_recs, &win_points) {
        (true, None, _) => Some(format!(
            "each bootstrap replicate replayed the whole capture (slower): in some eighth of the \
             run none of {} windows of the --sample {} holds + folios held a hold of the lock",
            sample::REDRAWS + 1,
            o.sample
        )),
        (true, Some(_), None) => Some(format!(
            "each bootstrap replicate replayed the whole capture (slower): its {} sampled time \
             windows (--sample {}) held fewer than {} traced waits, or none of a metric the \
             interval is made of; a larger --sample may stand for it",
            sample::WINDOWS,
            o.sample,
            sample::MIN_WINDOW_WAITS
        )),
        _ => None,
    };
    let (windows, sampled_share) = match (&win_points, &win_recs) {
        (Some(_), Some(ws)) => (
            ws.len(),
            ws.iter().map(sample::size).sum::<usize>() as f64 / rec_size.max(1) as f64,
        ),
        _ => (0, 0.0),
    };
    // one replicate's metrics for the policies `all`, scaled to the whole capture
    let eval = |c: &Calibration,
                ps: &[&dyn Policy],
                obs: Observation,
                w: &mut Vec<(intents::Scratch, intents::Intents)>|
     -> Result<Vec<Metrics>> {
        let m = eval_on(&layouts, c, ps, obs, ctx, w)?;
        Ok(match &win_points {
            Some(wp) => m
                .iter()
                .enumerate()
                .map(|(k, x)| {
                    let stall = traced.get(k).map(|w| des::stall_sum(c, w));
                    sample::scale(&full_points[k], &wp[k], x, stall)
                })
                .collect(),
            None => m,
        })
    };
    let worker = || workers(&layouts);
    // the replicates' buffers, kept from one block to the next
    let mut pool = Vec::new();
    // the intervals of the first n replicates, as reported (point estimates inside)
    let point_range = |m: Metrics| Range { low: m, high: m };
    let intervals = |boot: &[Vec<Metrics>]| -> (Range, Range) {
        let col = |k: usize| boot.iter().map(|m| m[k]).collect::<Vec<_>>();
        let mut r = point_range(predicted);
        if !boot.is_empty() {
            r = percentile_range(&col(1));
            for vi in 1..variants.len() {
                widen(&mut r, &percentile_range(&col(1 + vi)));
            }
            widen(&mut r, &point_range(predicted));
        }
        for m in &alt_points {
            widen(&mut r, &point_range(*m));
        }
        let replayed_r = if boot.is_empty() {
            point_range(replayed)
        } else {
            percentile_range(&col(0))
        };
        (r, replayed_r)
    };
    let block = match o.stop {
        Some(s) => s.block.max(1),
        None => o.bootstrap.max(1),
    };
    let mut boot: Vec<Vec<Metrics>> = Vec::with_capacity(o.bootstrap);
    let mut stopped = match (o.bootstrap, o.stop) {
        (0, _) => Stopped::None,
        (_, None) => Stopped::Fixed,
        (_, Some(_)) => Stopped::Max,
    };
    let mut last = None;
    let mut settled_at = None;
    while boot.len() < o.bootstrap {
        let n = block.min(o.bootstrap - boot.len());
        let starts: Vec<crate::stats::Rng> = (0..n)
            .map(|_| {
                let at = rng.clone();
                rng.skip(&skip);
                at
            })
            .collect();
        let got = par_map_pooled(n, &mut pool, worker, |j, w| {
            let mut r = starts[j].clone();
            let c = calibrate::fit(&for_fit.resample(&samples, &mut r), o.post_quantile);
            let m = eval(&c, &all, observation, w);
            bar.inc(all.len() as u64);
            m
        })
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
        boot.extend(got);
        if let Some(s) = o.stop {
            let now = intervals(&boot);
            if boot.len() >= s.min && last.is_some_and(|l| settled(&l, &now, s.tolerance)) {
                stopped = Stopped::Settled;
                settled_at = Some(now);
                break;
            }
            last = Some(now);
        }
    }
    bar.finish_and_clear();
    let (interval, replayed_interval) = settled_at.unwrap_or_else(|| intervals(&boot));
    let bootstrap = BootstrapRun {
        replicates: boot.len(),
        max: o.bootstrap,
        stopped,
        rule: match o.stop {
            Some(s) if o.bootstrap > 0 => format!(
                "blocks of {}, from {} on stop when no interval end moved more than {}% of its width over the last block",
                s.block,
                s.min,
                s.tolerance * 100.0
            ),
            _ => String::new(),
        },
        windows,
        sampled_share,
    };

    // the rows that are the point's, by name, for the note below
    let point_names: Vec<String> = point_rows
        .iter()
        .map(|&j| variants_cal[j].0.clone())
        .collect();
    // every row by its index in `variants_cal`, from whichever run made it
    let mut rows: Vec<(usize, Result<Vec<Metrics>>)> =
        retimed.into_iter().zip(retimed_rows).collect();
    let mut replayed_rows = replayed_rows.into_iter();
    rows.extend(replay_only.into_iter().zip(replayed_rows.by_ref().map(Ok)));
    rows.extend(
        point_rows
            .into_iter()
            .map(|j| (j, Ok(vec![replayed, predicted]))),
    );
    rows.sort_unstable_by_key(|r| r.0);
    let mut sensitivity = Vec::new();
    for ((choice, _), (_, m)) in variants_cal.into_iter().zip(rows) {
        let m = m?;
        sensitivity.push(Sensitivity {
            choice,
            replayed: m[0],
            predicted: m[1],
        });
    }
    // A bare-metal row of 0 with one or two CPUs taking the lock is the observation rule, not
    // the replay: say so
    let mut bare_none = false;
    for (other, m) in other_obs.into_iter().zip(replayed_rows) {
        bare_none |= other == Observation::BareMetal
            && layout.streams() <= 2
            && m.iter().all(|x| x.contended == 0);
        sensitivity.push(Sensitivity {
            choice: format!("observation={}", obs_name(other)),
            replayed: m[0],
            predicted: m[1],
        });
    }

    let mut notes = Vec::new();
    notes.extend(policy_notes);
    notes.extend(whole_note);
    if bare_none {
        // qspinlock fires contention_begin only for a waiter that queues behind the one
        // spinning on the pending bit (docs/MODELS.md, "Caveat: what `contention_begin`
        // reports on a qspinlock")
        let cpus = match layout.streams() {
            1 => "one CPU".to_string(),
            n => format!("{n} CPUs"),
        };
        notes.push(format!(
            "observation=bare-metal traces none of the waits: with {cpus} taking the lock \
             there is never a second waiter, and on a bare-metal kernel the first one spins on \
             the pending bit without a contention_begin; only paravirt spinlocks (a VM guest) \
             trace it"
        ));
    }
    if !point_names.is_empty() {
        // a reader seeing a choice move nothing should not have to guess why
        let family = |f: &str| point_names.iter().any(|r| r.starts_with(f));
        let why: Vec<&str> = [
            (
                family("window edge "),
                "the window edge moved to q90 or q99 fits the point's holds",
            ),
            (
                family("pre_fast "),
                "the fast-path hold before the insertion fits to 0 ns, and a scaled 0 is still 0",
            ),
            (
                family("gap "),
                "the release -> grant gap fits to 0 ns, as the waiters' own path sets their \
                 grants, and a scaled 0 is still 0",
            ),
        ]
        .into_iter()
        .filter_map(|(here, why)| here.then_some(why))
        .collect();
        let why = match why.is_empty() {
            true => String::new(),
            false => format!(" ({})", why.join("; ")),
        };
        notes.push(format!(
            "sensitivity rows {} are the point estimates: on this capture they change nothing \
             the replay reads{why}",
            point_names.join(", ")
        ));
    }
    if cal.n_stalls > 0 {
        notes.push(format!(
            "stalls: {} of the waits placed on a holder ({:.2}%) lasted {} on average beyond what the \
             hold, the release or their own path explains (the holder's vCPU descheduled, a halted waiter \
             kicked late); the replays stall that share of all traced waits alike, as the holder keeping \
             the lock. They are the host's noise as much as the workload's (a rerun can have none or \
             many): the sensitivity row `stalls left out` is the answer without them",
            cal.n_stalls,
            cal.stall_share * 100.0,
            crate::units::perf_time(cal.stall_mean_ns.max(0.0).round() as u64),
        ));
    }
    let lost = t.lost_events();
    if lost > 0 {
        notes.push(format!(
            "{lost} events lost: the replay undercounts (the recording's buffer overflowed, so holds, \
             waits and frees are missing from it; capture again with a larger `perf record -m` or fewer events)"
        ));
    }
    if t.skipped_lines > 0 {
        notes.push(format!(
            "{} malformed lines skipped (--lenient)",
            t.skipped_lines
        ));
    }
    let (mut warnings, uncovered) = checks::after(uncovered_waits, no_site, &identities, &missing);
    warnings.extend(checks::lazyfree_guess(
        &identities,
        &cal,
        replayed.acquisitions,
    ));
    let verdict = verdict::of_replay(
        &measured,
        &replayed,
        cal.n_add_window as u64,
        cal.tail_cut_ns,
        &warnings,
        uncovered,
    );
    Ok(Outcome {
        policy: policy.name().to_string(),
        params: policy.describe(),
        lock: lock_name,
        capture: t.path.clone(),
        observation,
        observation_source,
        calibration: cal,
        measured,
        replayed,
        predicted,
        interval,
        replayed_interval,
        bootstrap,
        identities,
        sensitivity,
        by_path,
        notes,
        warnings,
        verdict,
        time: None,
    })
}

/// The sensitivity rows' calibrations: each a choice the point estimate rests on, moved to
/// a plausible other value.
fn sensitivity_calibrations(
    samples: &calibrate::Samples,
    cal: &Calibration,
    rec: &Reconstruction,
) -> Vec<(String, Calibration)> {
    let mut variants_cal: Vec<(String, Calibration)> = Vec::new();
    for q in [0.9, 0.99] {
        variants_cal.push((
            format!("window edge q{}", q * 100.0),
            calibrate::fit(samples, q),
        ));
    }
    let scaled = |label: &str, f: &dyn Fn(&mut Calibration)| {
        let mut c = cal.clone();
        f(&mut c);
        (label.to_string(), c)
    };
    variants_cal.push(scaled("pre_fast x0", &|c| c.pre_fast_ns = 0.0));
    variants_cal.push(scaled("pre_fast x2", &|c| c.pre_fast_ns *= 2.0));
    variants_cal.push(scaled("gap x0.75", &|c| c.gap_ns *= 0.75));
    variants_cal.push(scaled("gap x1.25", &|c| c.gap_ns *= 1.25));
    variants_cal.push(scaled("s1_add x0.75", &|c| c.s1_add_ns *= 0.75));
    variants_cal.push(scaled("s1_add x1.25", &|c| c.s1_add_ns *= 1.25));
    variants_cal.push(scaled("free hold x0.8", &|c| c.c0_ns *= 0.8));
    variants_cal.push(scaled("free hold x1.2", &|c| c.c0_ns *= 1.2));
    if cal.n_stalls > 0 {
        // the stalls are host noise as much as the workload's: the answer without them
        variants_cal.push(scaled("stalls left out", &|c| c.stall_share = 0.0));
    }
    if !rec.lazyfree_calls.is_empty() {
        // the least-measured hold: fast-path lazyfree holds leave no event at all
        variants_cal.push(scaled("lazyfree hold x0.5", &|c| {
            c.lazy_fast_ns *= 0.5;
            c.lazy_hold_ns *= 0.5;
        }));
        variants_cal.push(scaled("lazyfree hold x1.5", &|c| {
            c.lazy_fast_ns *= 1.5;
            c.lazy_hold_ns *= 1.5;
        }));
    }
    variants_cal
}

/// Replays of the policies `ps` under calibration `c`, summed over `layouts` (the whole
/// capture, or the windows of a sample); `w` holds one set of buffers per layout.
fn eval_on(
    layouts: &[&intents::Layout],
    c: &Calibration,
    ps: &[&dyn Policy],
    obs: Observation,
    ctx: &Context,
    w: &mut [(intents::Scratch, intents::Intents)],
) -> Result<Vec<Metrics>> {
    let mut sum = vec![Metrics::default(); ps.len()];
    for (l, w) in layouts.iter().zip(w.iter_mut()) {
        l.build_into(c, &mut w.0, &mut w.1);
        // Each distinct request set is replayed once: a policy whose batch rule is an earlier
        // one's on these intents is not even built (at 4K lru-cache, its alternative and the
        // baseline are one rule); other policies are built and compared by their requests.
        let mut by_rule: Vec<(policy::Batcher, Metrics)> = Vec::new();
        let mut by_requests: Vec<(Vec<Vec<policy::Request>>, Metrics)> = Vec::new();
        for (k, p) in ps.iter().enumerate() {
            let rule = p.batching(&w.1);
            let m = match rule.and_then(|b| by_rule.iter().find(|(x, _)| *x == b)) {
                Some(&(_, m)) => m,
                None => {
                    let m = replay_once(&mut by_requests, p.requests(&w.1, ctx)?, c, obs);
                    by_rule.extend(rule.map(|b| (b, m)));
                    m
                }
            };
            sum[k] = sample::add(&sum[k], &m);
        }
    }
    Ok(sum)
}

/// The replay of `req`, or of the same requests replayed before (in `done`).
fn replay_once(
    done: &mut Vec<(Vec<Vec<policy::Request>>, Metrics)>,
    req: Vec<Vec<policy::Request>>,
    c: &Calibration,
    obs: Observation,
) -> Metrics {
    if let Some((_, m)) = done.iter().find(|(r, _)| *r == req) {
        return *m;
    }
    let m = des::replay(&req, c, obs);
    done.push((req, m));
    m
}

/// The point estimates' requests, shared by the jobs that replay them.
struct Point {
    identities: Identities,
    /// One request set per policy of `all`.
    whole_reqs: Vec<Vec<Vec<policy::Request>>>,
    /// The baseline's and the policy's requests are the same.
    same_requests: bool,
}

/// Sets an unset point to `None` when dropped: on an unwinding lead, so that no job waits
/// for it forever.
struct SetOnDrop<'a>(&'a std::sync::OnceLock<Option<Point>>);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.set(None);
    }
}

/// One item of the whole-capture queue in [`run`].
enum WholeJob {
    /// A re-timed sensitivity row: the baseline's and the policy's metrics.
    Row(Result<Vec<Metrics>>),
    /// A policy's point estimate, with its traced waits when listed.
    Point((des::Detailed, Vec<(u32, u32)>)),
    /// A row replayed on the point's requests: the baseline's and the policy's metrics.
    Replayed(Vec<Metrics>),
    /// A job that needed the point, which was not made.
    Skipped,
}

/// Fresh buffers for [`eval_on`] over `layouts`.
fn workers(layouts: &[&intents::Layout]) -> Vec<(intents::Scratch, intents::Intents)> {
    layouts
        .iter()
        .map(|l| (intents::Scratch::default(), l.empty()))
        .collect()
}

fn path_rows(
    measured_by_via: &BTreeMap<Via, (u64, Ns)>,
    rd: &des::Detailed,
    pd: &des::Detailed,
) -> Vec<PathRow> {
    let mut vias: Vec<Via> = rd
        .by_via
        .keys()
        .chain(pd.by_via.keys())
        .chain(measured_by_via.keys())
        .copied()
        .collect();
    vias.sort_unstable();
    vias.dedup();
    let share = |d: &des::Detailed, p: &PathMetrics| {
        let busy = d.busy_ns();
        if busy > 0 {
            100.0 * (p.all_wait_ns + p.hold_ns).as_f64() / busy as f64
        } else {
            0.0
        }
    };
    vias.into_iter()
        .map(|via| {
            let (mc, mw) = measured_by_via.get(&via).copied().unwrap_or((0, Ns(0)));
            let r = rd.by_via.get(&via).copied().unwrap_or_default();
            let p = pd.by_via.get(&via).copied().unwrap_or_default();
            PathRow {
                via,
                measured_contended: mc,
                measured_wait_ns: mw,
                replayed: r,
                predicted: p,
                replayed_share_pct: share(rd, &r),
                predicted_share_pct: share(pd, &p),
            }
        })
        .collect()
}

/// Where the verdict splits the total wait (MODELS.md §5b): the stall cut past the hold `cal`
/// gives 99% of the capture's holds no more than (the longest alone is one rare batch: a
/// 31-folio add at 128K, timed by a slope from three drains, is 28 µs); 0 (no split) without a
/// stall cut.
fn tail_cut(cal: &Calibration, rec: &Reconstruction) -> f64 {
    if cal.stall_cut_ns <= 0.0 || rec.holds.is_empty() {
        return 0.0;
    }
    // A hold's length is a function of its side and folio count alone: counting the holds of
    // each (a handful of kinds) finds the same order statistic as selecting over every hold's
    // length (~0.6 M on a 2 M-event capture, 7 ms), in one pass over the holds.
    let side = calibrate::HoldTable::side;
    const DENSE: usize = 256;
    let mut dense = vec![[0u64; 3]; DENSE];
    let mut sparse: IntMap<(u32, usize), u64> = IntMap::default();
    for h in &rec.holds {
        match dense.get_mut(h.folios as usize) {
            Some(c) => c[side(h.side)] += 1,
            None => *sparse.entry((h.folios, side(h.side))).or_default() += 1,
        }
    }
    let mut lengths: Vec<(i64, u64)> = dense
        .iter()
        .zip(0u32..)
        .flat_map(|(c, folios)| (0..3).map(move |si| ((folios, si), c[si])))
        .chain(sparse)
        .filter(|&(_, n)| n > 0)
        .map(|((folios, si), n)| {
            let side = calibrate::HoldTable::SIDES[si];
            (cal.hold_after_grant(side, folios), n)
        })
        .collect();
    lengths.sort_unstable();
    let k = (rec.holds.len() - 1) * 99 / 100;
    let mut seen = 0u64;
    let q99 = lengths
        .iter()
        .find(|&&(_, n)| {
            seen += n;
            seen > k as u64
        })
        .map_or(0, |&(len, _)| len);
    cal.stall_cut_ns + q99 as f64
}

/// What a capture measured, in replay terms: acquisitions = reconstructed holds, contended and
/// waits = traced waits on the lock (only traced waits are seen, so all = traced); the tail is
/// the waits longer than `tail_cut_ns` (none when it is 0).
pub fn measured(rec: &Reconstruction, tail_cut_ns: f64) -> Metrics {
    let tail: &[Ns] = if tail_cut_ns > 0.0 {
        let cut = tail_cut_ns.round() as u64;
        let from = rec.measured_waits.partition_point(|w| w.0 <= cut);
        &rec.measured_waits[from..]
    } else {
        &[]
    };
    let (contended, wait) = (rec.measured_contended(), rec.measured_wait_ns());
    Metrics {
        acquisitions: rec.holds.len() as u64,
        contended,
        total_wait_ns: wait,
        max_wait_ns: rec.measured_max_wait_ns(),
        all_wait_ns: wait,
        slowpath: contended,
        tail_waits: tail.len() as u64,
        tail_wait_ns: tail.iter().copied().sum(),
        stall_ns: Ns(0),
    }
}

/// Name of an observation rule as on the command line.
pub fn obs_name(o: Observation) -> &'static str {
    match o {
        Observation::Paravirt => "paravirt",
        Observation::BareMetal => "bare-metal",
    }
}

/// The identities read off the rebuilt holds and folios, and the explicit drains by site
/// (`sites`: the capture's drain sites, [`Trace::sites`]); [`with_intents`] adds the rest.
fn identities_of(rec: &Reconstruction, sites: &[String]) -> Identities {
    let mut id = Identities {
        unknown_order: rec.unknown_order,
        lazyfree_calls: rec.lazyfree_calls.len() as u64,
        ..Default::default()
    };
    for f in &rec.faults {
        id.folios_added += 1;
        id.pages_added += 1u64 << f.order;
        if f.death
            .get()
            .is_some_and(|(b, _)| b < rec.holds[f.hold as usize].first_ts)
        {
            id.dead_on_batch += 1;
        }
        if f.freed_in
            .is_some_and(|h| rec.holds[h as usize].via == Via::Release)
        {
            id.release_folios += 1;
        }
    }
    // explicit drains by site number, named below (a handful of sites, ~10^6 drains)
    let mut by_site: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for h in &rec.holds {
        id.release_holds += u64::from(h.via == Via::Release);
        match h.side {
            Side::Add => {
                id.add_holds_measured += 1;
                match h.trigger {
                    Trigger::Full => id.drains_full += 1,
                    Trigger::Large => id.drains_large += 1,
                    Trigger::Explicit => {
                        id.drains_explicit += 1;
                        *by_site.entry(h.site).or_default() += 1;
                    }
                }
            }
            Side::Free => id.free_holds += 1,
            Side::Lazyfree => {
                id.lazyfree_holds += 1;
                id.lazyfree_traced += u64::from(h.traced.get().is_some());
            }
        }
    }
    // by name: a site number no name is known for counts as one unknown site
    for (site, n) in by_site {
        let name = sites.get(site as usize).map_or(
            "no lru_add_drain in the call chain (or none captured)",
            String::as_str,
        );
        *id.drain_sites.entry(name.to_string()).or_default() += n;
    }
    id
}

/// `id` ([`identities_of`]) with the counts of the point's intents `it` and of `base_reqs`, the
/// baseline's requests on them (the kernel rule's add-side holds).
fn with_intents(
    mut id: Identities,
    it: &intents::Intents,
    base_reqs: &[Vec<policy::Request>],
) -> Identities {
    for s in &it.streams {
        let mut zaps: BTreeMap<u32, (u32, u64)> = BTreeMap::new();
        for i in s {
            if let intents::Intent::Free {
                zap, folios, pages, ..
            } = *i
            {
                let z = zaps.entry(zap).or_default();
                z.0 += folios;
                z.1 += pages;
            }
        }
        for (folios, pages) in zaps.values() {
            let large = *pages > u64::from(*folios);
            id.free_holds_rule += reconstruct::free_holds_rule(*folios, large).len() as u64;
        }
    }
    id.add_holds_rule = base_reqs
        .iter()
        .flatten()
        .filter(|r| r.side == Side::Add)
        .count() as u64;
    id
}

/// `a()` and `b()`, `b` on a second thread when `side_by_side` (the calling thread runs `a`);
/// a panic in either goes on in the caller.
pub(crate) fn both<A: Send, B: Send>(
    side_by_side: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !side_by_side {
        return (a(), b());
    }
    std::thread::scope(|sc| {
        let other = sc.spawn(b);
        let x = a();
        match other.join() {
            Ok(y) => (x, y),
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}

/// `f(0..n)` in order, on up to as many threads as the machine has CPUs, each thread with its
/// own state (reused buffers), taken from `pool` (made with `make` when it is empty) and put
/// back when done, so blocks of items run one after another keep their buffers instead of
/// making and faulting in new ones each block. The results do not depend on the thread count.
fn par_map_pooled<T: Send, S: Send>(
    n: usize,
    pool: &mut Vec<S>,
    make: impl Fn() -> S + Sync,
    f: impl Fn(usize, &mut S) -> T + Sync,
) -> Vec<T> {
    let shared = std::sync::Mutex::new(std::mem::take(pool));
    let take = || {
        let kept = shared.lock().ok().and_then(|mut p| p.pop());
        kept.unwrap_or_else(&make)
    };
    let keep = |s: S| {
        if let Ok(mut p) = shared.lock() {
            p.push(s);
        }
    };
    let out = par_run(n, take, f, || ((), take()), keep).1;
    *pool = shared.into_inner().unwrap_or_default();
    out
}

/// `f(0..n)` in order, on up to as many threads as the machine has CPUs, each thread with its
/// own `state` (reused buffers), with `lead` run first on the calling thread while the other
/// threads start on `f` (the calling thread joins them when `lead` is done): serial work
/// that the first items do not need overlaps them. `lead` also gives the calling thread's
/// state for its items, so buffers the lead filled are reused rather than freed and made
/// again (fresh pages cost a fault each). The results do not depend on the thread count; an
/// item that needs what the lead makes must wait for it (see `run`'s point).
fn par_map_lead<T: Send, S, L>(
    n: usize,
    state: impl Fn() -> S + Sync,
    f: impl Fn(usize, &mut S) -> T + Sync,
    lead: impl FnOnce() -> (L, S),
) -> (L, Vec<T>) {
    par_run(n, state, f, lead, drop)
}

/// The loop of [`par_map_lead`], each thread's state handed to `keep` when it is done.
fn par_run<T: Send, S, L>(
    n: usize,
    state: impl Fn() -> S + Sync,
    f: impl Fn(usize, &mut S) -> T + Sync,
    lead: impl FnOnce() -> (L, S),
    keep: impl Fn(S) + Sync,
) -> (L, Vec<T>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads <= 1 || n == 0 {
        let (l, mut s) = lead();
        let out = (0..n).map(|j| f(j, &mut s)).collect();
        keep(s);
        return (l, out);
    }
    let next = AtomicUsize::new(0);
    let work = |mut s: S| {
        let mut out = Vec::new();
        loop {
            let j = next.fetch_add(1, Ordering::Relaxed);
            if j >= n {
                keep(s);
                break out;
            }
            out.push((j, f(j, &mut s)));
        }
    };
    let (l, mut done) = std::thread::scope(|sc| {
        let helpers: Vec<_> = (1..threads.min(n + 1))
            .map(|_| sc.spawn(|| work(state())))
            .collect();
        let (l, s) = lead();
        let mut done = work(s);
        for h in helpers {
            match h.join() {
                Ok(v) => done.extend(v),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        (l, done)
    });
    done.sort_unstable_by_key(|(j, _)| *j);
    (l, done.into_iter().map(|(_, t)| t).collect())
}

/// Per metric of [`sample::INTERVAL`] (and only those: [`sample::covers`] lets sampled
/// replicates miss the others), its 2.5th and 97.5th percentiles over `v`.
fn percentile_range(v: &[Metrics]) -> Range {
    let pick = |f: &fn(&Metrics) -> u64| -> (u64, u64) {
        let mut x: Vec<u64> = v.iter().map(f).collect();
        x.sort_unstable();
        if x.is_empty() {
            return (0, 0);
        }
        let lo = x[((x.len() - 1) as f64 * 0.025).round() as usize];
        let hi = x[((x.len() - 1) as f64 * 0.975).round() as usize];
        (lo, hi)
    };
    let [(al, ah), (cl, ch), (wl, wh)] = sample::INTERVAL.each_ref().map(pick);
    Range {
        low: Metrics {
            acquisitions: al,
            contended: cl,
            total_wait_ns: Ns(wl),
            ..Default::default()
        },
        high: Metrics {
            acquisitions: ah,
            contended: ch,
            total_wait_ns: Ns(wh),
            ..Default::default()
        },
    }
}

/// Every end of `now` (contended and total wait, prediction and no-change replay) within
/// `tol` × its width of where it was in `before`.
fn settled(before: &(Range, Range), now: &(Range, Range), tol: f64) -> bool {
    let ends = |r: &Range| {
        [
            (r.low.contended as f64, r.high.contended as f64),
            (r.low.total_wait_ns.as_f64(), r.high.total_wait_ns.as_f64()),
        ]
    };
    [(&before.0, &now.0), (&before.1, &now.1)]
        .into_iter()
        .all(|(b, n)| {
            ends(b).iter().zip(ends(n)).all(|(&(bl, bh), (nl, nh))| {
                let allowed = tol * (nh - nl);
                (nl - bl).abs() <= allowed && (nh - bh).abs() <= allowed
            })
        })
}

fn widen(r: &mut Range, o: &Range) {
    r.low.acquisitions = r.low.acquisitions.min(o.low.acquisitions);
    r.low.contended = r.low.contended.min(o.low.contended);
    r.low.total_wait_ns = r.low.total_wait_ns.min(o.low.total_wait_ns);
    r.high.acquisitions = r.high.acquisitions.max(o.high.acquisitions);
    r.high.contended = r.high.contended.max(o.high.contended);
    r.high.total_wait_ns = r.high.total_wait_ns.max(o.high.total_wait_ns);
}

/// Captures of at least this many events get a spinner naming the stage before the
/// replicates: on the 2-CPU VMs this is measured on, the 2 M-event recording takes ~0.4 s
/// from the rebuild to the replicates (temporary timers), so a million events about half
/// that (by scale, not measured), and a spinner shown for much less only flickers.
const STAGES_FROM_EVENTS: usize = 1_000_000;

/// A spinner naming the what-if's stage until the replicates' bar takes over, on a terminal
/// and for a capture of [`STAGES_FROM_EVENTS`] or more; hidden otherwise.
fn stage_spinner(o: &Options, events: usize) -> indicatif::ProgressBar {
    // cleared also when an error ends the run, so the message is not left under it
    let b = terminal_bar(
        o.progress && events >= STAGES_FROM_EVENTS,
        || indicatif::ProgressBar::new_spinner().with_finish(indicatif::ProgressFinish::AndClear),
        "{spinner} {msg} [{elapsed_precise}]",
    );
    // a hidden bar gets no ticker thread
    if !b.is_hidden() {
        b.enable_steady_tick(std::time::Duration::from_millis(100));
    }
    b
}

/// The replicates' bar: `len` replays.
fn progress_bar(o: &Options, len: u64) -> indicatif::ProgressBar {
    // by default the bootstrap stops once the interval settles, short of the count (near
    // half way on the 2 M-event recording); `--bootstrap N` runs all N
    let template = match o.stop {
        Some(_) => {
            "{spinner} the interval's replays {pos}/{len} at most [{elapsed_precise}] {per_sec}"
        }
        None => "{spinner} the interval's replays {pos}/{len} [{elapsed_precise}] {per_sec}",
    };
    terminal_bar(o.progress, || indicatif::ProgressBar::new(len), template)
}

/// `make()` styled by `template` when `show` and stderr is a terminal, else a hidden bar.
fn terminal_bar(
    show: bool,
    make: impl FnOnce() -> indicatif::ProgressBar,
    template: &str,
) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let b = make();
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        b.set_style(style);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail cut counted by hold kind is the 99th percentile a selection over every hold's
    /// length gives: on bundled captures (16K and 4K, where the add side has batches of many
    /// sizes), and with holds of more folios than the dense table (the map's share).
    #[test]
    fn the_tail_cut_is_the_selected_99th_percentile() {
        let by_selection = |cal: &Calibration, rec: &Reconstruction| {
            let mut v: Vec<i64> = rec
                .holds
                .iter()
                .map(|h| cal.hold_after_grant(h.side, h.folios))
                .collect();
            let k = (v.len() - 1) * 99 / 100;
            cal.stall_cut_ns + *v.select_nth_unstable(k).1 as f64
        };
        for rel in [
            "fixtures/replay/micro-16K-r1/script-ns.txt.gz",
            "fixtures/replay/micro-4K-r1/script-ns.txt.gz",
        ] {
            let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
            let t = trace::read(&path, false).expect("bundled capture reads");
            let mut rec = reconstruct::reconstruct(&t, &Default::default()).expect("rebuilds");
            let cal = calibrate::fit(&calibrate::samples(&t, &rec), 0.975);
            assert!(cal.stall_cut_ns > 0.0, "{rel}");
            assert_eq!(tail_cut(&cal, &rec), by_selection(&cal, &rec), "{rel}");
            // a fifth of the holds made large: the 99th percentile moves among them
            for (i, h) in rec.holds.iter_mut().enumerate() {
                if i % 5 == 0 {
                    h.folios = 300 + (i % 7) as u32 * 100;
                }
            }
            assert_eq!(
                tail_cut(&cal, &rec),
                by_selection(&cal, &rec),
                "{rel} large"
            );
        }
    }

    #[test]
    fn the_interval_reads_only_the_metrics_sampled_windows_must_cover() {
        // 41 replicates: the 2.5th and 97.5th percentiles are the 2nd and 40th values
        let reps: Vec<Metrics> = (0..41u64)
            .rev()
            .map(|i| Metrics {
                acquisitions: 1000 + i,
                contended: 100 + 2 * i,
                total_wait_ns: Ns(50_000 + 1000 * i),
                ..Default::default()
            })
            .collect();
        let r = percentile_range(&reps);
        assert_eq!(
            (r.low.acquisitions, r.low.contended, r.low.total_wait_ns),
            (1001, 102, Ns(51_000))
        );
        assert_eq!(
            (r.high.acquisitions, r.high.contended, r.high.total_wait_ns),
            (1039, 178, Ns(89_000))
        );
        // what sampled replicates may leave at the whole capture's point changes nothing
        let other: Vec<Metrics> = reps
            .iter()
            .enumerate()
            .map(|(i, m)| Metrics {
                max_wait_ns: Ns(7 * i as u64),
                all_wait_ns: Ns(3 * i as u64),
                slowpath: i as u64,
                tail_waits: 41 - i as u64,
                tail_wait_ns: Ns(11 * i as u64),
                stall_ns: Ns(i as u64),
                ..*m
            })
            .collect();
        let o = percentile_range(&other);
        assert_eq!((o.low, o.high), (r.low, r.high));
    }

    #[test]
    fn par_map_lead_returns_the_items_in_order_and_the_leads_value() {
        for n in [0, 1, 2, 7, 100] {
            let (l, v) = par_map_lead(n, || 10, |j, s| j * *s, || ("lead", 10));
            assert_eq!(l, "lead");
            assert_eq!(v, (0..n).map(|j| j * 10).collect::<Vec<_>>(), "n = {n}");
        }
    }

    /// Blocks run one after another reuse the states the threads made: no more are made than
    /// there are threads, and every item ran on one that went back to the pool.
    #[test]
    fn par_map_pooled_keeps_the_states_between_calls() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let made = AtomicUsize::new(0);
        let mut pool: Vec<usize> = Vec::new(); // a state: how many items ran on it
        for n in [0, 5, 40, 1] {
            let v = par_map_pooled(
                n,
                &mut pool,
                || {
                    made.fetch_add(1, Ordering::Relaxed);
                    0
                },
                |j, ran| {
                    *ran += 1;
                    j * 2
                },
            );
            assert_eq!(v, (0..n).map(|j| j * 2).collect::<Vec<_>>(), "n = {n}");
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let made = made.load(Ordering::Relaxed);
        assert!(
            (1..=threads).contains(&made),
            "{made} states for {threads} threads"
        );
        assert_eq!(pool.len(), made);
        assert_eq!(pool.iter().sum::<usize>(), 46);
    }

    #[test]
    fn par_map_lead_runs_the_items_while_the_lead_works() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return; // one CPU: the lead runs first by design
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        // the lead waits for an item: it returns true only if an item ran before it ended
        let (seen, v) = par_map_lead(
            3,
            || (),
            |j, _| {
                let _ = tx.lock().map(|t| t.send(j));
                j
            },
            || {
                (
                    rx.recv_timeout(std::time::Duration::from_secs(20)).is_ok(),
                    (),
                )
            },
        );
        assert!(seen, "no item ran while the lead worked");
        assert_eq!(v, vec![0, 1, 2]);
    }
}
