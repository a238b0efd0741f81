//! `lockcast export perfetto CAPTURE -o FILE.json`: read the capture the way the what-if
//! replay does, reconstruct its `lru_lock` holds, and write the Chrome trace-event JSON.

use std::path::Path;

use anyhow::Result;

use lockcast::capture::load;
use lockcast::output::{perfetto, write};
use lockcast::whatif::trace::Observation;
use lockcast::whatif::{self, params, reconstruct, registry, trace};
use lockcast::Error;

use super::args::{ExportArgs, ExportKind, ObservationArg};

/// Run `lockcast export`.
pub fn run(a: ExportArgs) -> Result<()> {
    match a.kind {
        ExportKind::Perfetto(p) => {
            let whatif = match &p.whatif {
                Some(name) => Some(Whatif {
                    policy: name.clone(),
                    set: params::pairs(&p.set)?,
                    observation: p.observation.map(|o| match o {
                        ObservationArg::Paravirt => Observation::Paravirt,
                        ObservationArg::BareMetal => Observation::BareMetal,
                    }),
                }),
                None => None,
            };
            let (n, lock) = perfetto_file(
                &p.capture,
                p.lock.clone(),
                whatif.as_ref(),
                &p.input.open(),
                &p.output,
            )?;
            eprintln!(
                "lockcast: wrote {} ({} lru_lock holds on {lock}, {} traced waits, {} other events, {} tracks); \
                 open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing",
                write::Dest::of(&p.output).display(),
                n.holds,
                n.waits,
                n.instants,
                n.tracks
            );
            Ok(())
        }
    }
}

/// `--whatif`: the policy to replay the capture through.
pub(super) struct Whatif {
    policy: String,
    set: params::Set,
    observation: Option<Observation>,
}

/// Write the Perfetto JSON of `capture` to `output`; what went in and the lock taken as
/// `lru_lock`. Also the demo's.
pub(super) fn perfetto_file(
    capture: &str,
    lock: Option<String>,
    whatif: Option<&Whatif>,
    open: &lockcast::capture::OpenOptions,
    output: &Path,
) -> Result<(perfetto::Counts, String)> {
    // The task names, on another CPU beside the other two reads: through the record reader
    // (every event with its command name) they were the longest read; a perf.data the
    // one-pass walk can take gives them in 0.08 s of CPU. Tried and not kept, on a 2 M-event
    // recording: the timeline built beside the record reader's names read, 1.14-1.18 ->
    // 1.10 s for 342-358 -> 464-465 MiB of peak RSS (the reader's memory and the built
    // timeline held at once); the `contention` table read beside the trace's, 0.755 -> 0.708 s for
    // 340-348 -> 377-384 MiB.
    let (read, comms) = std::thread::scope(|s| {
        let names = s.spawn(|| task_names(capture, open));
        let read = read_measured(capture, lock, open);
        // a panic there is this program's fault: it stays one (exit code 1), as on this thread
        let comms = names
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (read, comms)
    });
    let (t, ropts, rec, waits) = read?;
    let comms = comms?;
    let mut procs = vec![perfetto::measured(
        &format!("measured: {capture}"),
        &t,
        &rec,
        &waits.contention,
        &comms,
    )?];
    if let Some(w) = whatif {
        let ctx = whatif::context(&t);
        let policy = registry::make_lock(&w.policy, &w.set, &ctx)?;
        let o = whatif::Options {
            reconstruct: ropts,
            observation: w.observation,
            ..Default::default()
        };
        let (cpus, _, grants) = whatif::timeline::grants(&t, &rec, policy.as_ref(), &ctx, &o)?;
        procs.push(perfetto::predicted(
            &format!("predicted: {}", w.policy),
            &cpus,
            &grants,
            &rec.lock_name,
        ));
    }
    // `-o -`: standard output (it made a file named `-`); the whole timeline is built before a
    // byte is written. The writer gets the text in blocks of 1 MiB: no buffer here.
    let dest = write::Dest::of(output);
    dest.write(|w| {
        perfetto::write(w, &procs)
            .and_then(|()| w.flush())
            .map_err(|e| Error::io(dest.display(), e))
    })?;
    Ok((perfetto::counts(&procs), rec.lock_name))
}

/// The capture read the way the replay reads it, its holds rebuilt, and its `contention` table.
fn read_measured(
    capture: &str,
    lock: Option<String>,
    open: &lockcast::capture::OpenOptions,
) -> Result<(
    trace::Trace,
    reconstruct::Options,
    reconstruct::Reconstruction,
    load::TraceWaits,
)> {
    let t = trace::read_with(capture, open)?;
    let ropts = reconstruct::Options {
        lock,
        ..Default::default()
    };
    let rec = reconstruct::reconstruct(&t, &ropts)?;
    // the wait slices name the caller, not the frames
    let waits = load::load_without_chains(capture, open)?
        .trace
        .ok_or_else(|| Error::Input(format!("{capture}: expected an event trace")))?;
    Ok((t, ropts, rec, waits))
}

/// tid → comm of every task in the capture (the replay's trace keeps tids only), the first
/// name seen: a task that execs keeps the name it had when it first appears.
fn task_names(
    path: &str,
    open: &lockcast::capture::OpenOptions,
) -> Result<std::collections::BTreeMap<i32, String>> {
    let spec = lockcast::input::InputSpec {
        path: lockcast::input::resolve_dir(path),
        block: None,
    };
    let mut rd = lockcast::capture::open(&spec, open)?.events("an export")?;
    // A perf.data the one-pass walk can take: only its COMM and FORK records and each
    // sample's tid and time (on a 2 M-event recording 0.08 s of CPU, against ~1 s for the
    // read below)
    if let Some(names) = rd.task_names().map_err(|e| Error::parse(path, e))? {
        return Ok(names);
    }
    // Only tids and command names are read: a perf.data reader leaves the payloads
    // unrendered, and one event is reused. On a 2 M-event recording this read took 1.55 s
    // rendering every payload into a new event (the export's reads one after another).
    rd.leave_payloads();
    // (text readers replace the event whole; only a perf.data reader fills it in place)
    let mut e = lockcast_parsers::event::Event::empty(lockcast_parsers::event::Source::PerfData);
    let mut names = std::collections::BTreeMap::new();
    while rd
        .next_event_into(&mut e)
        .map_err(|e| Error::parse(path, e))?
    {
        // the event is reused: its comm is copied once per task, not taken
        if let std::collections::btree_map::Entry::Vacant(v) = names.entry(e.tid) {
            v.insert(e.comm.clone());
        }
    }
    Ok(names)
}
