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
                p.output.display(),
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
    let t = trace::read_with(capture, open)?;
    let ropts = reconstruct::Options {
        lock,
        ..Default::default()
    };
    let rec = reconstruct::reconstruct(&t, &ropts)?;
    let waits = load::load(capture, open)?
        .trace
        .ok_or_else(|| Error::Input(format!("{capture}: expected an event trace")))?;
    let comms = task_names(capture, open)?;
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
    write::atomic_write(output, |w| {
        let mut buf = std::io::BufWriter::new(w);
        perfetto::write(&mut buf, &procs)
            .and_then(|()| std::io::Write::flush(&mut buf))
            .map_err(|e| Error::io(output.display(), e))
    })?;
    Ok((perfetto::counts(&procs), rec.lock_name))
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
    let mut names = std::collections::BTreeMap::new();
    while let Some(e) = rd.next_event().map_err(|e| Error::parse(path, e))? {
        names.entry(e.tid).or_insert(e.comm);
    }
    Ok(names)
}
