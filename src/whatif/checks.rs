//! Checks a capture against what a policy needs before it is replayed, and says afterwards
//! which part of the measured contention the answer cannot cover.
//!
//! Each lock-timing policy declares its [`Needs`] in its registry row. [`before`] runs on the
//! read [`Trace`]: a missing essential (an event the model cannot do without, µs timestamps, an
//! unknown spinlock slowpath) is an input error naming the `perf record -e …` and `trace-cmd`
//! options to add. A missing optional event is remembered and becomes a [`Warning`] after the
//! reconstruction ([`after`]), with the share of the lock's traced waits the answer cannot
//! cover. Counting identities that fail by more than [`IDENTITY_TOLERANCE`] are warnings too.

use serde::{Deserialize, Serialize};

use super::reconstruct::{Reconstruction, Side, Trigger};
use super::trace::{Kind, Trace, NO_SITE};
use super::Identities;
use crate::error::{Error, Result};

/// An event (any of `any_of`) a policy reads.
#[derive(Debug, Clone, Copy)]
pub struct Need {
    /// Full tracepoint names (`system:event`); any one of them will do.
    pub any_of: &'static [&'static str],
    /// The model cannot answer without it (an error) rather than answer less (a warning).
    pub essential: bool,
    /// What the model reads from it.
    pub why: &'static str,
}

/// What a lock-timing policy needs from a capture.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// Events.
    pub events: &'static [Need],
    /// Call chains on these events matter (optional): why.
    pub call_chains: Option<&'static str>,
}

/// Needs of every lock-timing replay (MODELS.md §2, §2.1): the lock events give the traced
/// waits, insertions the add-side holds and the lock's identity, allocations the folio order
/// (without it every folio reads as order 0 and today's batching rule is wrong for mTHP), frees
/// the free-side `folios_put_refs` holds, which the replay can do without at a known cost.
pub const REPLAY_EVENTS: &[Need] = &[
    Need {
        any_of: &["lock:contention_begin"],
        essential: true,
        why: "the traced waits",
    },
    Need {
        any_of: &["lock:contention_end"],
        essential: true,
        why: "when each traced waiter was granted the lock",
    },
    Need {
        any_of: &["pagemap:mm_lru_insertion"],
        essential: true,
        why: "the add-side holds (drains) and which lock is lru_lock",
    },
    Need {
        any_of: &["kmem:mm_page_alloc"],
        essential: true,
        why: "the order of each inserted folio (today's batching rule depends on it)",
    },
    Need {
        any_of: &["kmem:mm_page_free"],
        essential: false,
        why: "the free-side holds (folios_put_refs of unmaps)",
    },
    Need {
        any_of: &["syscalls:sys_enter_madvise"],
        essential: false,
        why: "when MADV_FREE marks a task's folios lazyfree (those lru_lock holds leave no event \
              of their own)",
    },
    Need {
        any_of: &["syscalls:sys_exit_madvise"],
        essential: false,
        why: "when the MADV_FREE call returns",
    },
];

/// [`REPLAY_EVENTS`] plus when a task discards its folios: the fbatch-drain and pre-free
/// models decide which folios die on a per-CPU batch from it (MODELS.md §3b).
pub const DISCARD_EVENTS: &[Need] = &[
    REPLAY_EVENTS[0],
    REPLAY_EVENTS[1],
    REPLAY_EVENTS[2],
    REPLAY_EVENTS[3],
    REPLAY_EVENTS[4],
    Need {
        any_of: &["syscalls:sys_enter_madvise", "syscalls:sys_enter_munmap"],
        essential: true,
        why: "when each task discards its folios (which die while still on a per-CPU batch)",
    },
    Need {
        any_of: &["syscalls:sys_exit_madvise", "syscalls:sys_exit_munmap"],
        essential: true,
        why: "when the discarding call returns",
    },
];

/// Identities (the kernel's batching rule against the capture's own hold counts) off by more
/// than this are warned about: on the bundled captures they agree within 3.5%, so a larger
/// gap means the reconstruction misread the capture, not run-to-run noise.
pub const IDENTITY_TOLERANCE: f64 = 0.05;

/// Something the answer cannot cover, printed next to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// Short name: `missing kmem:mm_page_free`, `free-side identity`, ...
    pub check: String,
    /// What it means for the answer, and what to do.
    pub message: String,
    /// Share of the lock's traced waits the answer cannot cover, when the warning has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncovered_share: Option<f64>,
}

/// What [`before`] found missing that the model can do without.
#[derive(Debug, Clone, Default)]
pub struct Missing {
    /// Optional events absent from the capture.
    pub events: Vec<&'static Need>,
    /// The policy wants call chains and the capture has none.
    pub call_chains: Option<&'static str>,
}

/// The `perf record` and `trace-cmd` options that record `events`.
fn recipe(events: &[&str]) -> String {
    let e: Vec<String> = events.iter().map(|n| format!("-e {n}")).collect();
    format!(
        "perf record {} -- CMD, then `perf script --ns` (or give lockcast the perf.data); \
         trace-cmd record {} -- CMD, then `trace-cmd report -t`",
        e.join(" "),
        e.join(" ")
    )
}

/// Check `t` against `needs` before anything is replayed. `observation_given`: `--observation`
/// was passed. Missing essentials are one input error listing all of them.
pub fn before(
    t: &Trace,
    policy: &str,
    needs: &'static Needs,
    observation_given: bool,
) -> Result<Missing> {
    let mut missing = Missing::default();
    let mut errors = Vec::new();
    let has = |n: &Need| n.any_of.iter().any(|e| t.count(e) > 0);
    let absent: Vec<&'static Need> = needs.events.iter().filter(|n| !has(n)).collect();
    // recorded (the perf.data header or the meta file's perf record command names it) but
    // not one fired: asking to record it would send the user round in a circle
    let recorded = |n: &Need| n.any_of.iter().any(|e| was_recorded(t, e));
    let mut silent = Vec::new();
    for n in &absent {
        if n.essential {
            if recorded(n) {
                silent.push(n.any_of.join(" or "));
            } else {
                errors.push(format!("no {} events: {}", n.any_of.join(" or "), n.why));
            }
        } else {
            missing.events.push(n);
        }
    }
    if !silent.is_empty() {
        errors.push(format!(
            "{} recorded, but not one fired: {}",
            silent.join(", "),
            if silent.iter().any(|e| e.starts_with("lock:contention")) {
                "no lock was contended while recording, so there is no traced wait to place \
                 the hold model by (a longer or busier run, or more threads, gives some)"
            } else {
                "the workload did not do what the model replays"
            }
        ));
    }
    let absent: Vec<&'static Need> = absent.into_iter().filter(|n| !recorded(n)).collect();
    if t.ts_res_ns > 1 {
        errors.push(format!(
            "timestamps have {} ns resolution, and a hold of this lock is well under 1 µs (a µs \
             replay miscounts contention 2x or more); print the recording with `perf script --ns` \
             or `trace-cmd report -t` (raw tracefs text is µs only)",
            t.ts_res_ns
        ));
    }
    if !observation_given && t.observation().is_none() {
        errors.push(
            "cannot tell which spinlock slowpath the kernel runs (no call chain through \
             *queued_spin_lock_slowpath, no meta file with spin_slowpath=): record \
             lock:contention_begin once with -g, or pass --observation paravirt (a VM guest: \
             every slowpath traced) or bare-metal"
                .to_string(),
        );
    }
    if !errors.is_empty() {
        let all: Vec<&str> = needs
            .events
            .iter()
            .flat_map(|n| n.any_of.first().copied())
            .collect();
        let add: Vec<&str> = absent
            .iter()
            .flat_map(|n| n.any_of.first().copied())
            .collect();
        let mut msg = format!(
            "{}: cannot answer {policy} from this capture:\n  - {}",
            t.path,
            errors.join("\n  - ")
        );
        if !add.is_empty() {
            msg += &format!("\n  add: {}", add.join(", "));
        }
        // the recipe is no help when the recording had every event and nothing fired
        if errors.len() != 1 || silent.is_empty() {
            msg += &format!("\n  record: {}", recipe(&all));
        }
        return Err(Error::Input(msg));
    }
    if let Some(why) = needs.call_chains {
        if t.with_callchain == 0 {
            missing.call_chains = Some(why);
        }
    }
    Ok(missing)
}

/// Lazyfree holds are at least this share of the replay's acquisitions before a guessed
/// length of theirs is worth a warning.
pub const LAZYFREE_SHARE: f64 = 0.05;

/// A warning when the capture's MADV_FREE holds are a real share of the lock's traffic and
/// their length could not be measured on waiters (no two calls overlapped): it is then bounded
/// by the calls' timing only (MODELS.md §2.2), and the answer is no better than rough.
pub fn lazyfree_guess(
    id: &Identities,
    cal: &super::calibrate::Calibration,
    acquisitions: u64,
) -> Option<Warning> {
    let share = share(id.lazyfree_holds, acquisitions);
    (id.lazyfree_holds > 0 && share >= LAZYFREE_SHARE && !cal.lazy_from_waiters).then(|| Warning {
        check: "lazyfree hold guessed".into(),
        message: format!(
            "{} lazyfree (MADV_FREE) holds, {} of the acquisitions, have no event inside and too \
             few waiters held up by one to measure them: their fast-path length ({:.0} ns) is \
             bounded by the calls' time per hold; the sensitivity table shows the answer with it \
             halved and 1.5x",
            id.lazyfree_holds,
            pct(share),
            cal.lazy_fast_ns
        ),
        uncovered_share: None,
    })
}

/// The recording asked for `event`: the perf.data header lists it, or the meta file's `perf
/// record` command (`cmd_record`, lockcast record and the capture scripts) has `-e event`.
fn was_recorded(t: &Trace, event: &str) -> bool {
    t.header
        .as_ref()
        .is_some_and(|h| h.events.iter().any(|e| e == event))
        || t.meta.get("cmd_record").is_some_and(|c| {
            c.split_whitespace()
                .any(|w| w.split('/').next() == Some(event))
        })
}

/// Share of the lock's traced waits after which the waiter's CPU shows no LRU hold: the next
/// replay event on that CPU (other locks' waits skipped) is neither an `mm_lru_insertion` nor
/// an `mm_page_free`. Those waits were for holds the replay does not rebuild (free-side holds
/// when the capture has no frees; reclaim, compaction, isolation), so it cannot reproduce them.
/// A wait of a task inside `madvise(MADV_FREE)` is covered: it was for a lazyfree hold.
/// (count, traced waits on the lock).
pub fn uncovered_waits(t: &Trace, lock: u32) -> (u64, u64) {
    // CPU → a wait on the lock ended there and its hold has not shown yet
    let mut open: super::CpuMap<bool> = Default::default();
    // tasks inside madvise(MADV_FREE): their waits are for lazyfree holds, which the replay
    // rebuilds from the call (super::lazyfree) though nothing follows them
    let mut in_lazy: super::IntSet<i32> = Default::default();
    let (mut uncovered, mut waits) = (0u64, 0u64);
    for e in &t.events {
        if let Kind::Lazyfree { enter } = e.kind {
            if enter {
                in_lazy.insert(e.tid);
            } else {
                in_lazy.remove(&e.tid);
            }
        }
        let awaiting = open.get(e.cpu).copied().unwrap_or(false);
        match e.kind {
            Kind::Begin { lock: l, .. } | Kind::End { lock: l } if l != lock => continue,
            Kind::Begin { .. } => {
                if awaiting {
                    uncovered += 1;
                    open.insert(e.cpu, false);
                }
            }
            Kind::End { .. } => {
                if awaiting {
                    uncovered += 1;
                }
                waits += 1;
                open.insert(e.cpu, !in_lazy.contains(&e.tid));
            }
            Kind::Insert { .. } | Kind::Free { .. } => {
                open.insert(e.cpu, false);
            }
            Kind::Alloc { .. } | Kind::Discard { .. } | Kind::Lazyfree { .. } => {
                if awaiting {
                    uncovered += 1;
                    open.insert(e.cpu, false);
                }
            }
        }
    }
    uncovered += open.values().filter(|a| **a).count() as u64;
    (uncovered, waits)
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The explicit drains of a reconstruction with no known site (no call chain named it), the
/// traced waits on them, and all traced waits on the lock: what [`after`]'s `no call chains`
/// warning reads, taken before the holds go.
#[derive(Debug, Clone, Copy)]
pub struct NoSite {
    /// Explicit drains whose site is [`NO_SITE`].
    pub drains: u64,
    /// Those of them a traced wait is attached to.
    pub traced: u64,
    /// Traced waits on the lock ([`Reconstruction::measured_contended`]).
    pub contended: u64,
}

impl NoSite {
    pub fn of(rec: &Reconstruction) -> NoSite {
        let mut n = NoSite {
            drains: 0,
            traced: 0,
            contended: rec.measured_contended(),
        };
        for h in &rec.holds {
            if h.side == Side::Add && h.trigger == Trigger::Explicit && h.site == NO_SITE {
                n.drains += 1;
                n.traced += u64::from(h.traced.get().is_some());
            }
        }
        n
    }
}

/// The warnings of a reconstructed capture: the optional parts [`before`] found missing, with
/// the share of traced waits they leave uncovered, and identities that fail badly. Also
/// returns the uncovered share of the answer (of all traced waits on the lock).
pub fn after(
    (unc, waits): (u64, u64),
    no_site: Option<NoSite>,
    id: &Identities,
    missing: &Missing,
) -> (Vec<Warning>, f64) {
    let mut w = Vec::new();
    let unc_share = share(unc, waits);
    let mut explained = false;
    // Without the madvise events a capture of a workload that never calls MADV_FREE loses
    // nothing: they are named only when waits go uncovered (below), not on every capture.
    let no_madvise = missing
        .events
        .iter()
        .any(|n| n.any_of.contains(&"syscalls:sys_enter_madvise"));
    for n in &missing.events {
        let name = n.any_of.first().copied().unwrap_or_default();
        if name.starts_with("syscalls:") {
            continue;
        }
        if name == "kmem:mm_page_free" {
            explained = true;
            w.push(Warning {
                check: format!("missing {name}"),
                message: format!(
                    "the capture has no {name}: {} cannot be rebuilt; {unc} of {waits} traced waits \
                     on the lock ({}) are followed by no LRU hold on their CPU, and the answer \
                     does not cover them (record with -e {name})",
                    n.why,
                    pct(unc_share)
                ),
                uncovered_share: Some(unc_share),
            });
        } else {
            w.push(Warning {
                check: format!("missing {name}"),
                message: format!("the capture has no {name}: {} is not modelled", n.why),
                uncovered_share: None,
            });
        }
    }
    if !explained && unc_share > super::verdict::UNCOVERED_ROUGH {
        w.push(Warning {
            check: "waits without an LRU hold".into(),
            message: format!(
                "{unc} of {waits} traced waits on the lock ({}) are followed by no LRU insertion or \
                 free on their CPU: their holders (reclaim, compaction, isolation, ...) are not \
                 modelled, and the answer does not cover them{}",
                pct(unc_share),
                if no_madvise {
                    " (if the workload calls madvise(MADV_FREE), record -e \
                     syscalls:sys_enter_madvise -e syscalls:sys_exit_madvise: its lazyfree \
                     holds leave no other event)"
                } else {
                    ""
                }
            ),
            uncovered_share: Some(unc_share),
        });
    }
    if let (Some(why), Some(n)) = (missing.call_chains, no_site) {
        let (unknown, on_unknown) = (n.drains, n.traced);
        if unknown > 0 {
            let s = share(on_unknown, n.contended);
            w.push(Warning {
                check: "no call chains".into(),
                message: format!(
                    "the capture has no call chains ({why}): {unknown} explicit drains have no \
                     known site, {on_unknown} traced waits ({}) are on them (record \
                     pagemap:mm_lru_insertion with -g to name the sites)",
                    pct(s)
                ),
                uncovered_share: Some(s),
            });
        }
    }
    let off = |rule: u64, measured: u64| -> Option<f64> {
        (measured > 0).then(|| (rule as f64 - measured as f64) / measured as f64)
    };
    if let Some(e) = off(id.add_holds_rule, id.add_holds_measured) {
        if e.abs() > IDENTITY_TOLERANCE {
            w.push(Warning {
                check: "add-side identity".into(),
                message: format!(
                    "the kernel's batching rule gives {} add-side holds for the capture's folios, \
                     the capture shows {} ({:+.1}%): the reconstruction misreads the drains, so \
                     the policy's re-batching starts from a wrong baseline",
                    id.add_holds_rule,
                    id.add_holds_measured,
                    100.0 * e
                ),
                uncovered_share: None,
            });
        }
    }
    if let Some(e) = off(id.free_holds_rule, id.free_holds) {
        if e.abs() > IDENTITY_TOLERANCE {
            w.push(Warning {
                check: "free-side identity".into(),
                message: format!(
                    "the free-side holds rebuilt from the capture ({}) disagree with the kernel's \
                     mmu_gather + folio_batch rule for the same unmaps ({}, {:+.1}%): the frees \
                     are split or merged differently than the kernel does, so free-side waits are \
                     placed on the wrong holds",
                    id.free_holds,
                    id.free_holds_rule,
                    100.0 * e
                ),
                uncovered_share: None,
            });
        }
    }
    (w, unc_share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whatif::trace::TRACKED;

    /// A read capture with `counts` events of each of [`TRACKED`] (none kept: the checks
    /// look at the counts) and the perf.data header or meta file given.
    fn trace(counts: [u64; TRACKED.len()], header_events: &[&str], cmd_record: &str) -> Trace {
        Trace {
            slowpath_seen: Some(crate::whatif::trace::Observation::Paravirt),
            meta: [("cmd_record".to_string(), cmd_record.to_string())]
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .collect(),
            header: (!header_events.is_empty()).then(|| lockcast_parsers::event::CaptureHeader {
                events: header_events.iter().map(|e| e.to_string()).collect(),
                ..Default::default()
            }),
            seen: counts,
            ..Trace::empty("t")
        }
    }

    const NEEDS: Needs = Needs {
        events: REPLAY_EVENTS,
        call_chains: None,
    };

    #[test]
    fn recorded_events_that_never_fired_are_not_asked_for_again() {
        // every replay event but the lock ones fired; the lock ones were recorded
        let mut c = [5u64; TRACKED.len()];
        c[0] = 0;
        c[1] = 0;
        for t in [
            trace(c, &["lock:contention_begin", "lock:contention_end"], ""),
            trace(
                c,
                &[],
                "perf record -q -e lock:contention_begin -e lock:contention_end/call-graph=no/ -- x",
            ),
        ] {
            let e = before(&t, "baseline", &NEEDS, false).unwrap_err().to_string();
            assert!(e.contains("recorded, but not one fired"), "{e}");
            assert!(e.contains("no lock was contended"), "{e}");
            assert!(!e.contains("add:") && !e.contains("record: perf record"), "{e}");
        }
        // not recorded at all: named as events to add, with the recipe
        let e = before(&trace(c, &[], ""), "baseline", &NEEDS, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no lock:contention_begin events"), "{e}");
        assert!(
            e.contains("add: lock:contention_begin, lock:contention_end"),
            "{e}"
        );
        assert!(e.contains("record: perf record"), "{e}");
    }
}
