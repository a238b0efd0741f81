//! `lockcast export perfetto CAPTURE -o FILE.json`: read the capture the way the what-if
//! replay does, reconstruct its `lru_lock` holds, and write the Chrome trace-event JSON.

use std::path::Path;

use anyhow::Result;

use lockcast::capture::load;
use lockcast::output::{perfetto, write};
use lockcast::whatif::{reconstruct, trace};
use lockcast::Error;

use super::args::{ExportArgs, ExportKind};

/// Run `lockcast export`.
pub fn run(a: ExportArgs) -> Result<()> {
    match a.kind {
        ExportKind::Perfetto(p) => {
            let (n, lock) = perfetto_file(&p.capture, p.lock.clone(), &p.input.open(), &p.output)?;
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

/// Write the Perfetto JSON of `capture` to `output`; what went in and the lock taken as
/// `lru_lock`. Also the demo's.
pub(super) fn perfetto_file(
    capture: &str,
    lock: Option<String>,
    open: &lockcast::capture::OpenOptions,
    output: &Path,
) -> Result<(perfetto::Counts, String)> {
    let t = trace::read_with(capture, open)?;
    let rec = reconstruct::reconstruct(
        &t,
        &reconstruct::Options {
            lock,
            ..Default::default()
        },
    )?;
    let waits = load::load(capture, open)?
        .trace
        .ok_or_else(|| Error::Input(format!("{capture}: expected an event trace")))?;
    let comms = task_names(capture, open)?;
    let procs = vec![perfetto::measured(
        &format!("measured: {capture}"),
        &t,
        &rec,
        &waits.contention,
        &comms,
    )?];
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
