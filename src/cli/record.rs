//! `lockcast record`: options in, [`lockcast::record`] runs it, one line per step on stderr.

use anyhow::Result;

use lockcast::record::{self, mthp, Plan};

use super::args::RecordArgs;

/// Record, then say where the capture is and what to run next.
pub fn run(a: RecordArgs) -> Result<()> {
    let mthp_kb = match &a.mthp {
        Some(s) => Some(mthp::parse_size(s).map_err(lockcast::Error::Usage)?),
        None => None,
    };
    let plan = Plan {
        policy: a.policy.clone(),
        out: a.out.clone(),
        force: a.force,
        mthp_kb,
        perf: a.perf,
        no_lockonly: a.no_lockonly,
        cmd: a.cmd,
        mmap_pages: a.mmap_pages.unwrap_or(record::DEFAULT_MMAP_PAGES),
        retry_lost: a.mmap_pages.is_none(),
        without: a.without,
    };
    let mut say = |s: &str| eprintln!("lockcast record: {s}");
    let r = record::record(&plan, &mut say)?;
    eprintln!(
        "lockcast record: {} ({:.1} MB perf.data, {} lost events, {} folios, slowpath {} from {})",
        r.dir.display(),
        r.perf_data_bytes as f64 / 1e6,
        r.lost_events,
        r.mthp_size,
        r.slowpath.symbol,
        r.slowpath.source
    );
    if r.lost_events > 0 {
        eprintln!(
            "lockcast record: warning: perf lost events (buffer {} pages per CPU); a replay \
             undercounts holds: rerun with a larger --mmap-pages",
            r.mmap_pages
        );
    }
    eprintln!(
        "lockcast record: next: lockcast whatif {} {}",
        a.policy,
        r.dir.display()
    );
    Ok(())
}
