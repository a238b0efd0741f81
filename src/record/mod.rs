//! `lockcast record`: the capture the what-if models need, made one way for everyone.
//!
//! One directory per capture, every file named as `whatif`, `validate` and `report` look for
//! it (docs/CAPTURE.md):
//!
//! | file | made by | read for |
//! | --- | --- | --- |
//! | `perf-stat.csv` | `perf stat -x,` of the untraced workload | the time scale (`untraced_duration_ns`) |
//! | `perf.data` | `perf record` of the policy's events ([`recipe`]) | the replay |
//! | `contention.txt` | `perf lock contention -i perf.data` | what perf measured, beside the replay |
//! | `contention-lockonly.txt` | a recording of the lock events alone | the observer effect |
//! | `meta` | this module | kernel, CPUs, perf, slowpath, mTHP sizes, the commands run |
//! | `record.log`, `workload*.out` | perf's and the workload's output | when something failed |
//!
//! The directory is written under a temporary name and renamed at the end, so an interrupted
//! or failed recording never leaves a directory that looks whole. No kernel setting changes
//! unless `--mthp` asks; then every size is put back on exit, error or Ctrl-C. The tracefs
//! perf mounts when none is mounted is unmounted likewise ([`tracefs`]).

pub mod mthp;
pub mod probe;
pub mod recipe;
pub mod restore;
pub mod tracefs;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// What to record.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The what-if policy the capture is for (picks the events).
    pub policy: String,
    /// Output directory.
    pub out: PathBuf,
    /// Replace `out` if it exists.
    pub force: bool,
    /// Set this mTHP size (KiB) for the recording, restoring every size after.
    pub mthp_kb: Option<u64>,
    /// The perf binary.
    pub perf: String,
    /// Skip the lock-only run (no observer-effect figure).
    pub no_lockonly: bool,
    /// The workload and its arguments.
    pub cmd: Vec<String>,
    /// `perf record -m` (pages per CPU buffer): big enough that the seed benchmark loses
    /// nothing on 2 CPUs.
    pub mmap_pages: u32,
    /// Record again with a larger buffer when perf lost events ([`larger_buffer`]).
    pub retry_lost: bool,
    /// Events of the recipe left out (fixtures that show what a what-if says without them).
    pub without: Vec<String>,
}

/// What was recorded.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The directory.
    pub dir: PathBuf,
    /// Size of perf.data.
    pub perf_data_bytes: u64,
    /// Lost-event records perf reported.
    pub lost_events: u64,
    /// The slowpath and how it was found.
    pub slowpath: probe::Slowpath,
    /// The folio size the workload faulted with.
    pub mthp_size: String,
    /// The buffer (pages per CPU) of the recording kept.
    pub mmap_pages: u32,
}

/// `perf record -m` when the user gives none.
pub const DEFAULT_MMAP_PAGES: u32 = 4096;

/// The next buffer to try after a recording that lost events: 4× `pages` per CPU, if the
/// buffers of all `cpus` stay within a quarter of `available_kib` (MemAvailable), perf's
/// power of two, and at most 65,536 pages (256 MiB) per CPU; `None` when no larger one fits.
pub fn larger_buffer(pages: u32, cpus: u64, available_kib: u64) -> Option<u32> {
    let next = pages.checked_mul(4)?.next_power_of_two();
    let total_kib = u64::from(next) * 4 * cpus.max(1);
    (next <= 65_536 && total_kib <= available_kib / 4).then_some(next)
}

/// MemAvailable from /proc/meminfo, KiB (0 when unreadable: no retry).
fn mem_available_kib() -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Progress, one line per step (the CLI prints them on stderr).
pub type Progress<'a> = &'a mut dyn FnMut(&str);

fn rec_err(msg: impl Into<String>) -> Error {
    Error::Record(msg.into())
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Check everything that can be checked before the workload runs.
fn preflight(plan: &Plan, r: &recipe::Recipe) -> Result<String> {
    if plan.cmd.is_empty() {
        return Err(Error::Usage(
            "record: no workload: give it after `--`, e.g. `lockcast record -- ./lrufault -t 2`"
                .into(),
        ));
    }
    if plan.out.exists() && !plan.force {
        return Err(Error::Usage(format!(
            "record: {} exists; pass --force to replace it, or -o another directory",
            plan.out.display()
        )));
    }
    if probe::euid() != Some(0) {
        return Err(rec_err(
            "record: run as root (sudo): perf needs it for kernel tracepoints and call chains, --mthp for sysfs",
        ));
    }
    let version = probe::perf_version(&plan.perf).map_err(rec_err)?;
    let names: Vec<&str> = r.events.iter().map(|e| e.name).collect();
    if let Some(missing) = probe::missing_tracepoints(&names) {
        if !missing.is_empty() {
            let hints: Vec<String> = missing
                .iter()
                .map(|m| format!("{m} ({})", probe::enable_hint(m)))
                .collect();
            return Err(rec_err(format!(
                "record: this kernel lacks the tracepoints {}",
                hints.join("; ")
            )));
        }
    }
    Ok(version)
}

/// A step's child process: stdout to `out`, stderr appended to the log.
fn run_step(what: &str, cmd: Command, stdout: &Path, log: &Path, stop: &AtomicBool) -> Result<()> {
    let out = File::create(stdout).map_err(io_err(stdout))?;
    let err = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(io_err(log))?;
    spawn(what, cmd, out.into(), err.into(), log, stop)
}

/// `perf lock contention` prints its table on stderr: keep that as the file, drop stdout.
fn run_step_to_stderr_file(what: &str, cmd: Command, file: &Path, stop: &AtomicBool) -> Result<()> {
    let f = File::create(file).map_err(io_err(file))?;
    spawn(what, cmd, Stdio::null(), f.into(), file, stop)
}

/// Run a step to its end; an interruption or a failure is an error quoting the last lines of
/// `shown` (where its stderr went).
fn spawn(
    what: &str,
    mut cmd: Command,
    stdout: Stdio,
    stderr: Stdio,
    shown: &Path,
    stop: &AtomicBool,
) -> Result<()> {
    let status = cmd
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .status()
        .map_err(|e| rec_err(format!("record: {what}: cannot start: {e}")))?;
    if stop.load(Ordering::SeqCst) {
        return Err(Error::Interrupted(format!(
            "record: interrupted during {what}"
        )));
    }
    if !status.success() {
        let text = fs::read_to_string(shown).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(8)..];
        return Err(rec_err(format!(
            "record: {what} failed ({status}); the last lines of {}:\n  {}",
            shown.display(),
            tail.join("\n  ")
        )));
    }
    Ok(())
}

fn perf(plan: &Plan) -> Command {
    Command::new(&plan.perf)
}

/// `perf stat -x,` fields: value,unit,event,… → the value of `event`.
pub fn stat_field(csv: &str, event: &str) -> Option<f64> {
    csv.lines().find_map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        (f.len() > 2 && f[2] == event)
            .then(|| f[0].parse().ok())
            .flatten()
    })
}

/// Record `plan`.
pub fn record(plan: &Plan, progress: Progress) -> Result<Recorded> {
    let r = recipe::for_policy(&plan.policy)
        .and_then(|r| r.without(&plan.without))
        .map_err(Error::Usage)?;
    let version = preflight(plan, &r)?;
    let stop = Arc::new(AtomicBool::new(false));
    // A handler (not SIG_IGN, which children would inherit) so Ctrl-C stops the workload
    // and perf, and this process lives on to put the settings back.
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| rec_err(format!("record: cannot catch signals: {e}")))?;
    }
    let parent = match plan.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = plan
        .out
        .file_name()
        .ok_or_else(|| {
            Error::Usage(format!(
                "record: -o {}: not a directory name",
                plan.out.display()
            ))
        })?
        .to_string_lossy()
        .into_owned();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}.partial-"))
        .tempdir_in(&parent)
        .map_err(io_err(&parent))?;
    let dir = tmp.path().to_path_buf();

    // before perf runs: it mounts tracefs if none is, and leaves it mounted
    let mut tracefs = tracefs::Mount::note();
    let mut changed = match plan.mthp_kb {
        Some(kb) => Some(mthp::Changed::set(Path::new(mthp::THP), kb).map_err(rec_err)?),
        None => None,
    };
    let settings = mthp::read_all(Path::new(mthp::THP));
    let mthp_size = mthp::fault_size(Path::new(mthp::THP), &settings);
    let steps = if plan.no_lockonly { 4 } else { 5 };
    let mut step = 0;
    let mut next = |what: &str, progress: &mut dyn FnMut(&str)| {
        step += 1;
        progress(&format!("[{step}/{steps}] {what}"));
    };
    let log = dir.join("record.log");
    let workload = plan.cmd.join(" ");

    // 1. untraced: the time scale of the workload at this folio size
    next("untraced run (perf stat)", progress);
    let stat_csv = dir.join("perf-stat.csv");
    let mut c = perf(plan);
    c.args([
        "stat",
        "-x,",
        "-e",
        "task-clock,duration_time,user_time,system_time",
        "-o",
    ])
    .arg(&stat_csv)
    .arg("--")
    .args(&plan.cmd);
    run_step("perf stat", c, &dir.join("workload-stat.out"), &log, &stop)?;
    let stat = fs::read_to_string(&stat_csv).map_err(io_err(&stat_csv))?;

    // 2. the recording the replay reads
    next(&format!("recording ({} events)", r.name), progress);
    let data = dir.join("perf.data");
    // CPUs perf gives a buffer each (and the meta's `nproc`)
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut pages = plan.mmap_pages;
    // events lost by each earlier attempt, whose buffer was too small
    let mut lost_before: Vec<String> = Vec::new();
    let (rec_args, seen_in_data) = loop {
        let mut rec_args: Vec<String> =
            vec!["record".into(), "-q".into(), "-m".into(), pages.to_string()];
        rec_args.extend(r.perf_args());
        let mut c = perf(plan);
        c.args(&rec_args)
            .arg("-o")
            .arg(&data)
            .arg("--")
            .args(&plan.cmd);
        run_step("perf record", c, &dir.join("workload.out"), &log, &stop)?;
        // lockcast's own reader counts what perf lost (PERF_RECORD_LOST / LOST_SAMPLES) and
        // finds the slowpath in the call chains, in one pass
        let seen = scan(&data);
        let retry = seen.lost > 0 && plan.retry_lost && lost_before.len() < 2;
        match retry.then(|| larger_buffer(pages, nproc as u64, mem_available_kib())) {
            Some(Some(b)) => {
                progress(&format!(
                    "perf lost {} events with {pages} pages per CPU: recording again with {b}",
                    seen.lost
                ));
                lost_before.push(format!("{}@{pages}", seen.lost));
                pages = b;
            }
            _ => break (rec_args, seen),
        }
    };
    let mmap = pages.to_string();
    let mut c = perf(plan);
    c.args(["lock", "contention", "-i"]).arg(&data);
    // perf lock prints its table on stderr
    run_step_to_stderr_file(
        "perf lock contention",
        c,
        &dir.join("contention.txt"),
        &stop,
    )?;
    let lost = seen_in_data.lost;

    // 3. the lock events alone: how much the mm events change what is measured
    let lock_only: Vec<String> = recipe::LOCK_ONLY
        .iter()
        .flat_map(|e| ["-e".to_string(), e.to_string()])
        .collect();
    if !plan.no_lockonly {
        next("lock events alone (observer effect)", progress);
        let lock_data = dir.join(".lock.data");
        let mut c = perf(plan);
        c.args(["record", "-q", "-m", &mmap])
            .args(&lock_only)
            .arg("-o")
            .arg(&lock_data)
            .arg("--")
            .args(&plan.cmd);
        run_step(
            "perf record (lock events alone)",
            c,
            &dir.join("workload-lockonly.out"),
            &log,
            &stop,
        )?;
        let mut c = perf(plan);
        c.args(["lock", "contention", "-i"]).arg(&lock_data);
        run_step_to_stderr_file(
            "perf lock contention (lock events alone)",
            c,
            &dir.join("contention-lockonly.txt"),
            &stop,
        )?;
        let _ = fs::remove_file(&lock_data);
    }

    // 4. which slowpath: from call chains (this recording's, an earlier probe's this boot, or
    //    a short probe), a guess from kallsyms only when nothing contended
    next("spinlock slowpath", progress);
    let seen = if r.chains() {
        seen_in_data.slowpath
    } else {
        None
    };
    let slowpath = match seen.or_else(probe::cached) {
        Some(s) => s,
        None => {
            let g = dir.join(".probe.data");
            let mut c = perf(plan);
            c.args(["record", "-q", "-g", "-e", "lock:contention_begin", "-o"])
                .arg(&g)
                .arg("--")
                .args(&plan.cmd);
            run_step(
                "perf record -g (slowpath probe)",
                c,
                &dir.join(".probe.out"),
                &log,
                &stop,
            )?;
            let s = scan(&g).slowpath.unwrap_or_else(probe::guess);
            let _ = fs::remove_file(&g);
            let _ = fs::remove_file(dir.join(".probe.out"));
            s
        }
    };
    if slowpath.source.starts_with("call chains") {
        probe::remember(&slowpath.symbol);
    }

    // 5. the meta file, then the directory under its own name
    next("meta", progress);
    if let Some(c) = changed.as_mut() {
        let bad = c.restore_now();
        if !bad.is_empty() {
            return Err(rec_err(format!(
                "record: mTHP RESTORE FAILED: {}",
                bad.join("; ")
            )));
        }
    }
    // a tracefs still busy is another tracer's to keep: said, not an error
    for b in tracefs.restore_now() {
        progress(&format!(
            "could not unmount the tracefs perf mounted ({b}); `umount` it when done"
        ));
    }
    let bytes = fs::metadata(&data).map_err(io_err(&data))?.len();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let ns = |ev: &str, scale: f64| stat_field(&stat, ev).map(|v| format!("{:.0}", v * scale));
    let mut meta = vec![
        ("capture_date", utc_now()),
        (
            "recorded_by",
            format!("lockcast record {}", env!("CARGO_PKG_VERSION")),
        ),
        ("recipe", r.name.to_string()),
        ("recipe_without", plan.without.join(",")),
        ("policy", plan.policy.clone()),
        ("kernel", kernel.trim().to_string()),
        ("nproc", nproc.to_string()),
        ("perf_version", version),
        ("mthp_size", mthp_size.clone()),
        ("mthp_enabled", mthp::describe(&settings)),
        (
            "mthp_set_by_record",
            plan.mthp_kb.map_or("no".into(), |k| format!("{k}K")),
        ),
        ("workload", plan.cmd[0].clone()),
        ("workload_args", plan.cmd[1..].join(" ")),
        ("spin_slowpath", slowpath.symbol.clone()),
        ("spin_slowpath_source", slowpath.source.clone()),
        (
            "cmd_stat",
            format!(
                "perf stat -x, -e task-clock,duration_time,user_time,system_time -- {workload}"
            ),
        ),
        (
            "cmd_record",
            format!("perf {} -- {workload}", rec_args.join(" ")),
        ),
        (
            "cmd_contention",
            "perf lock contention -i perf.data 2> contention.txt".into(),
        ),
        ("lost_events", lost.to_string()),
        ("mmap_pages", mmap.clone()),
        ("lost_events_before_retry", lost_before.join(",")),
        ("perf_data_bytes", bytes.to_string()),
        (
            "loadavg",
            fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
                .to_string(),
        ),
    ];
    if !plan.no_lockonly {
        meta.push((
            "cmd_record_lockonly",
            format!(
                "perf record -q -m {mmap} {} -- {workload}",
                lock_only.join(" ")
            ),
        ));
    }
    for (k, ev, scale) in [
        ("untraced_duration_ns", "duration_time", 1.0),
        ("untraced_task_clock_ms", "task-clock", 1000.0),
        ("untraced_user_ns", "user_time", 1.0),
        ("untraced_system_ns", "system_time", 1.0),
    ] {
        if let Some(v) = ns(ev, scale) {
            meta.push((k, v));
        }
    }
    let meta_path = dir.join("meta");
    let mut text = String::new();
    for (k, v) in &meta {
        // one line per key: a value never carries a newline into the next key
        text.push_str(&format!("{k}={}\n", v.replace('\n', " ")));
    }
    fs::File::create(&meta_path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(io_err(&meta_path))?;

    if plan.out.exists() {
        fs::remove_dir_all(&plan.out).map_err(io_err(&plan.out))?;
    }
    let kept = tmp.keep();
    fs::rename(&kept, &plan.out).map_err(io_err(&plan.out))?;
    Ok(Recorded {
        dir: plan.out.clone(),
        perf_data_bytes: bytes,
        lost_events: lost,
        slowpath,
        mthp_size,
        mmap_pages: pages,
    })
}

/// What lockcast's perf.data reader sees in a recording.
#[derive(Default)]
struct Scan {
    /// Events perf lost.
    lost: u64,
    /// The spinlock slowpath named in a call chain, if any.
    slowpath: Option<probe::Slowpath>,
}

fn scan(data: &Path) -> Scan {
    let spec = crate::input::InputSpec {
        path: data.display().to_string(),
        block: None,
    };
    let opts = crate::capture::OpenOptions {
        lenient: true,
        ..Default::default()
    };
    let mut out = Scan::default();
    let Ok(mut rd) = crate::capture::open(&spec, &opts).and_then(|c| c.events("record")) else {
        return out;
    };
    while let Ok(Some(e)) = rd.next_event() {
        if out.slowpath.is_none() {
            if let Some(s) = e
                .callchain
                .iter()
                .find_map(|f| probe::slowpath_in(&f.symbol))
            {
                out.slowpath = Some(probe::Slowpath {
                    symbol: s.to_string(),
                    source: "call chains".into(),
                });
            }
        }
    }
    out.lost = rd.header().map_or(0, |h| h.lost_events());
    out
}

/// ISO 8601 UTC of now, without a date crate: days from the civil calendar algorithm.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's `civil_from_days`).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4× per retry on this 2-CPU, 24 GiB machine; never past 256 MiB per CPU, nor a quarter
    /// of the available memory over all CPUs (320 CPUs × 64 MiB would be 20 GiB).
    #[test]
    fn a_larger_buffer_fits_the_machine() {
        let avail = 23 << 20; // KiB
        assert_eq!(larger_buffer(4096, 2, avail), Some(16_384));
        assert_eq!(larger_buffer(16_384, 2, avail), Some(65_536));
        assert_eq!(larger_buffer(65_536, 2, avail), None);
        assert_eq!(larger_buffer(4096, 320, avail), None);
        // a user's odd size goes to a power of two, as perf -m wants
        assert_eq!(larger_buffer(1000, 2, avail), Some(4096));
        assert_eq!(larger_buffer(4096, 2, 0), None);
        assert_eq!(larger_buffer(u32::MAX, 2, avail), None);
    }

    /// perf stat's CSV as fixtures/replay/*/perf-stat.csv holds it (perf 6.1).
    #[test]
    fn stat_fields_from_a_real_file() {
        let csv = include_str!("../../fixtures/replay/micro-16K-r1/perf-stat.csv");
        assert_eq!(stat_field(csv, "duration_time"), Some(31_318_176.0));
        assert_eq!(stat_field(csv, "task-clock"), Some(60.80));
        assert_eq!(stat_field(csv, "system_time"), Some(52_689_000.0));
        assert_eq!(stat_field(csv, "cycles"), None);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_788), (2026, 12, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
    }
}
