//! Asking a what-if question: the one entry point `whatif`, `validate` and the demo use.
//!
//! [`ask`] looks the policy up in the [`registry`](super::registry) and answers with the right
//! engine: a work policy from its capture directory, the closed-form model when the capture is
//! a `perf lock` table, otherwise a replay of the event trace. [`validate`] replays BASE and
//! reads what AFTER measured. The observer-effect note and a validate AFTER's implied
//! parameters are added here, so no caller needs to know which policy it asked.

use super::des::Metrics;
use super::params::Set;
use super::registry::{self, Engine};
use super::summary::SummaryOutcome;
use super::time_range::TimeSpec;
use super::work::WorkOutcome;
use super::{context, reconstruct, trace, Options, Outcome};
use crate::capture::{self, load, OpenOptions};
use crate::error::{Error, Result};
use crate::input::InputSpec;
use lockcast_parsers::detect::Content;

/// How to answer.
#[derive(Debug, Clone, Default)]
pub struct Ask {
    /// Engine options (calibration, bootstrap, observation rule, lock).
    pub engine: Options,
    /// Skip malformed lines of the capture (counted, noted).
    pub lenient: bool,
    /// `--kallsyms FILE` for perf.data call chains.
    pub kallsyms: Option<std::sync::Arc<std::path::PathBuf>>,
    /// `--time`: replay only this part of an event trace.
    pub time: Option<TimeSpec>,
}

/// An answer, by the engine that gave it.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A replay of an event trace.
    Replay(Box<Outcome>),
    /// The closed-form model on a `perf lock` table.
    ClosedForm(Box<SummaryOutcome>),
    /// A work policy's prediction from a capture directory.
    Work(WorkOutcome),
}

/// Answer `policy` on `capture` with the `--set` pairs `set`.
pub fn ask(policy: &str, capture: &str, set: &Set, a: &Ask) -> Result<Answer> {
    let info = registry::find(policy)?;
    if let Engine::Work(make) = info.engine {
        if let Some(spec) = a.time {
            return Err(Error::Usage(format!(
                "{policy}: --time {spec} replays part of an event trace; a work policy reads its capture directory whole"
            )));
        }
        return Ok(Answer::Work(make(set)?.run(capture)?));
    }
    if is_table(capture)? {
        if let Some(spec) = a.time {
            return Err(Error::Usage(format!(
                "{capture}: --time {spec} replays part of an event trace; a perf lock table has no times"
            )));
        }
        let Some(closed_form) = info.summary else {
            let with: Vec<&str> = registry::POLICIES
                .iter()
                .filter(|p| p.summary.is_some())
                .map(|p| p.name)
                .collect();
            return Err(Error::Usage(format!(
                "{policy}: a perf lock table supports only the closed-form model of {}; replay an event trace for {policy}",
                with.join(", ")
            )));
        };
        let t = load::one_table(capture, &a.open())?;
        return Ok(Answer::ClosedForm(Box::new(closed_form(
            policy, &t.name, &t.rows, set,
        )?)));
    }
    Ok(Answer::Replay(Box::new(replay(policy, capture, set, a)?)))
}

/// A perf lock table (closed-form model) rather than an event trace (replay)? Standard input
/// can be read once, so it is taken as a trace (a table there is reported by the trace reader).
fn is_table(capture: &str) -> Result<bool> {
    let spec = InputSpec::parse(capture);
    if spec.path == "-" {
        return Ok(false);
    }
    let f = capture::format_of(&spec, &OpenOptions::default())?;
    Ok(f.content() == Content::LockTables)
}

impl Ask {
    /// How the capture is opened.
    fn open(&self) -> OpenOptions {
        OpenOptions {
            format: None,
            lenient: self.lenient,
            kallsyms: self.kallsyms.clone(),
            let_go_checked: false,
        }
    }
}

/// Replay `capture` through `policy`.
pub fn replay(policy: &str, capture: &str, set: &Set, a: &Ask) -> Result<Outcome> {
    if !(0.5..=1.0).contains(&a.engine.post_quantile) {
        return Err(Error::Usage(format!(
            "--window-quantile {} must be between 0.5 and 1",
            a.engine.post_quantile
        )));
    }
    let mut t = trace::read_in(capture, &a.open(), a.time)?;
    let time = a.time.map(|spec| t.keep_time(spec)).transpose()?;
    let mut ctx = context(&t);
    if time.is_some() {
        // the meta file's run time is the whole capture's; a part's untraced time is not known
        ctx.untraced_duration_ns = None;
    }
    let p = registry::make_lock(policy, set, &ctx)?;
    let mut o = super::run(t, p.as_ref(), &ctx, &a.engine).map_err(|e| match (&time, e) {
        // what the part lacks is not what the capture lacks
        (Some(c), Error::Input(m)) => Error::Input(format!("{m} (replayed: {c})")),
        (_, e) => e,
    })?;
    o.time = time;
    if let Some(note) = observer_note(&crate::input::resolve_dir(capture)) {
        o.notes.push(note);
    }
    Ok(o)
}

/// What `validate` answers: the prediction from BASE and what AFTER measured.
#[derive(Debug, Clone)]
pub struct Validation {
    /// The prediction.
    pub outcome: Outcome,
    /// The AFTER capture.
    pub after: String,
    /// What it measured.
    pub measured: Metrics,
}

/// Replay `base` through `policy` and read what `after` measured. Parameters the AFTER capture
/// implies (the policy's `after_defaults`) are added to `set` where it does not give them.
pub fn validate(policy: &str, base: &str, after: &str, set: &Set, a: &Ask) -> Result<Validation> {
    let mut set = set.clone();
    let at = trace::read_with(after, &a.open())?;
    if let Some(defaults) = registry::find(policy)?.after_defaults {
        defaults(&at, &mut set)?;
    }
    let rec = reconstruct::reconstruct(&at, &a.engine.reconstruct)?;
    let measured = super::measured(&rec, 0.0);
    let outcome = replay(policy, base, &set, a)?;
    Ok(Validation {
        outcome,
        after: after.to_string(),
        measured,
    })
}

/// fixtures/capture-replay.sh records the same workload once more with the lock events alone
/// (`contention-lockonly.txt` beside `contention.txt`): the ratio of their contended totals is
/// how much the mm events change what is measured. Stated, not applied: predictions are for
/// the capture's own recipe.
pub fn observer_note(capture: &str) -> Option<String> {
    let dir = std::path::Path::new(capture).parent()?;
    let (full, only) = (
        dir.join("contention.txt"),
        dir.join("contention-lockonly.txt"),
    );
    if !full.exists() || !only.exists() {
        return None;
    }
    let opts = OpenOptions {
        format: None,
        lenient: true,
        ..OpenOptions::default()
    };
    let total = |p: &std::path::Path| -> Option<u64> {
        let t = load::one_table(&p.to_string_lossy(), &opts).ok()?;
        Some(t.rows.iter().filter_map(|r| r.contended).sum())
    };
    let (f, l) = (total(&full)?, total(&only)?);
    (f > 0).then(|| {
        format!(
            "observer effect: the same workload recorded with the lock events alone had {:.2}x the contended \
             count (all locks: {l} vs {f}); expect roughly that factor between these same-recipe numbers and \
             an untraced kernel ({})",
            l as f64 / f as f64,
            if l < f {
                "fewer there: the traced events inside the hold lengthen it"
            } else {
                "more there"
            }
        )
    })
}
