//! `lockcast flamegraph`: a capture's traced waits as folded stacks or an interactive SVG flame
//! graph; with `--diff`, the differential graph of base vs patched; with `--whatif`, the
//! predicted waits by path beside the measured ones.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

use lockcast::analyses::flame::{self, Folded, Root, Weight, WhatifSide};
use lockcast::output::flamegraph::{self as fg, Labels};
use lockcast::output::write::Dest;
use lockcast::whatif::ask::{self, Answer, Ask};
use lockcast::whatif::params;

use super::args::InputOpts;

pub const HELP: &str = "\
One stack per traced wait, root first: the lock type (or, --root lock, its address) is the root
frame, then the call chain from the outermost frame to the lock slowpath, `+0x` offsets
stripped so that stacks of two runs or kernels line up. Inputs with call chains: `perf script -g`
text and perf.data recorded with `-g` (lock:contention_begin paired with contention_end as
`report` pairs them, so the weights sum to the total wait `report` prints), and
`perf lock contention -v` tables (a row's stack, at most 8 frames as perf prints them, weighted
by its printed total wait). A capture without call chains is refused: record with -g.

-o FILE.folded (or `-o -`, standard output) writes the folded-stack text that FlameGraph.pl,
inferno and speedscope read (with --diff: inferno's diff-folded `stack BASE PATCHED` lines);
-o FILE.svg an interactive flame graph: click to zoom, Search (or Ctrl-F) by regular
expression, a tooltip per frame with its weight and share. --diff draws boxes sized by PATCHED,
coloured red where a frame grew and blue where it shrank (--normalize: by its share of the
total, base scaled to patched's total first).

--whatif POLICY replays CAPTURE through a what-if policy (no bootstrap) and writes the predicted
waits by kernel path to FILE and the measured ones beside it, FILE-measured.svg (or .folded).
The engine keeps one path per wait, not whole call chains, so those stacks are `lru_lock;PATH`.

Examples:
  lockcast flamegraph fixtures/perfdata/micro-16K-g/perf.data.gz -o lru.svg
  lockcast flamegraph fixtures/captures/micro-16K-r1/contention-v.txt -o - | flamegraph.pl > v.svg
  lockcast flamegraph base/contention-v.txt --diff patched/contention-v.txt --normalize -o diff.svg
  lockcast flamegraph trace.txt --weight count --type spinlock --caller folio_batch_move_lru -o f.folded
  lockcast flamegraph fixtures/replay/micro-16K-r1 --whatif folio-size --set folio_kb=64 -o pred.svg";

/// `lockcast flamegraph`.
#[derive(Debug, Args)]
pub struct FlamegraphArgs {
    /// The capture: perf script -g text, perf.data (-g), perf lock contention -v output; a
    /// capture directory with --whatif.
    pub capture: String,
    #[command(flatten)]
    pub input: InputOpts,
    /// Output: FILE.svg (flame graph), FILE.folded (folded stacks), `-` (folded, stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// What a stack weighs: the wait in integer ns, or the number of waits.
    #[arg(long, value_enum, default_value_t = WeightArg::Wait)]
    pub weight: WeightArg,
    /// Root frame: the lock type (lines up across runs) or the lock address.
    #[arg(long, value_enum, default_value_t = RootArg::Type)]
    pub root: RootArg,
    /// --lock (with --whatif: the one lock address to replay as lru_lock), --caller, --type.
    #[command(flatten)]
    pub filter: super::filter::FilterArgs,
    /// Title (default: says what is drawn and from what).
    #[arg(long, value_name = "T")]
    pub title: Option<String>,
    /// The patched capture: draw the differential flame graph of CAPTURE (base) vs it.
    #[arg(long, value_name = "PATCHED", conflicts_with = "whatif")]
    pub diff: Option<String>,
    /// With --diff: scale the base to the patched total, so colours show the change of share.
    #[arg(long, requires = "diff")]
    pub normalize: bool,
    /// Replay CAPTURE through this what-if policy and draw the predicted waits by path.
    #[arg(long, value_name = "POLICY")]
    pub whatif: Option<String>,
    /// What-if policy parameter (repeatable), with --whatif.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "whatif")]
    pub set: Vec<String>,
}

/// `--weight` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightArg {
    /// The wait, integer ns.
    Wait,
    /// The number of waits.
    Count,
}

/// `--root` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RootArg {
    /// The lock type (spinlock, rwsem:R, ...).
    Type,
    /// The lock address.
    Lock,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    Svg,
    Folded,
}

fn out_kind(p: &Path) -> Result<Out> {
    if p.as_os_str() == "-" {
        return Ok(Out::Folded);
    }
    match p.extension().and_then(|e| e.to_str()) {
        Some("svg") => Ok(Out::Svg),
        Some("folded") | Some("txt") => Ok(Out::Folded),
        _ => Err(lockcast::Error::Usage(format!(
            "-o {}: expected FILE.svg (flame graph), FILE.folded (folded stacks) or - (folded, to standard output)",
            p.display()
        ))
        .into()),
    }
}

fn write_out(p: &Path, text: &str) -> Result<()> {
    let dest = Dest::of(p);
    dest.write(|w| {
        w.write_all(text.as_bytes())
            .map_err(|e| lockcast::Error::io(dest.display(), e))
    })?;
    Ok(())
}

/// Run `lockcast flamegraph`.
pub fn run(a: FlamegraphArgs) -> Result<()> {
    let kind = out_kind(&a.output)?;
    let opts = flame::Options {
        weight: match a.weight {
            WeightArg::Wait => Weight::Wait,
            WeightArg::Count => Weight::Count,
        },
        root: match a.root {
            RootArg::Type => Root::Type,
            RootArg::Lock => Root::Lock,
        },
        filter: a.filter.filter()?,
    };
    if let Some(policy) = &a.whatif {
        return whatif(&a, policy, kind, opts.weight);
    }
    let open = a.input.open();
    let base = flame::from_capture(&a.capture, &open, &opts)?;
    match &a.diff {
        None => {
            let text = match kind {
                Out::Folded => base.to_text(),
                Out::Svg => fg::svg(
                    &base,
                    &Labels {
                        title: a
                            .title
                            .clone()
                            .unwrap_or_else(|| format!("Lock contention: {}", base.source)),
                        subtitle: fg::describe(&base),
                    },
                ),
            };
            write_out(&a.output, &text)
        }
        Some(p) => {
            let patched = flame::from_capture(p, &open, &opts)?;
            let text = match kind {
                Out::Folded => flame::diff_text(&base, &patched),
                Out::Svg => fg::diff_svg(
                    &base,
                    &patched,
                    a.normalize,
                    &Labels {
                        title: a.title.clone().unwrap_or_else(|| {
                            format!("Lock contention: {} → {}", base.source, patched.source)
                        }),
                        subtitle: format!(
                            "width = patched ({} {u}, base {} {u}); red grew, blue shrank{}",
                            fg::thousands(patched.total()),
                            fg::thousands(base.total()),
                            if a.normalize {
                                " (share of the total: base scaled to the patched total)"
                            } else {
                                ""
                            },
                            u = base.weight.unit()
                        ),
                    },
                ),
            };
            write_out(&a.output, &text)
        }
    }
}

/// `--whatif`: the predicted flame graph to `-o`, the measured one beside it.
fn whatif(a: &FlamegraphArgs, policy: &str, kind: Out, weight: Weight) -> Result<()> {
    if a.output.as_os_str() == "-" {
        bail!(
            "--whatif writes two files (predicted and measured): give -o FILE.svg or FILE.folded"
        );
    }
    if !a.filter.caller.is_empty() || !a.filter.lock_type.is_empty() {
        bail!("--caller and --type do not apply to --whatif: the replay keeps one path per wait on lru_lock");
    }
    let lock = match a.filter.lock.as_slice() {
        [] => None,
        [l] if !l.starts_with('/') => Some(l.clone()),
        _ => bail!("--whatif takes one --lock ADDRESS (the lock to replay as lru_lock), not a /REGEX/ or several"),
    };
    let set = params::pairs(&a.set)?;
    let mut engine = lockcast::whatif::Options {
        bootstrap: 0,
        ..Default::default()
    };
    engine.reconstruct.lock = lock;
    let ask_opts = Ask {
        engine,
        lenient: a.input.lenient,
        kallsyms: a.input.kallsyms.clone().map(std::sync::Arc::new),
        time: None,
    };
    let outcome = match ask::ask(policy, &a.capture, &set, &ask_opts)? {
        Answer::Replay(o) => o,
        _ => bail!(
            "{}: --whatif draws the replay's predicted waits by path; {policy} on this capture is not a replay (give an event trace and a lock policy)",
            a.capture
        ),
    };
    let measured_path = beside(&a.output, "measured");
    for (side, path, what) in [
        (WhatifSide::Predicted, a.output.clone(), "predicted"),
        (WhatifSide::Measured, measured_path, "measured"),
    ] {
        let f: Folded = flame::from_whatif(&outcome, side, weight);
        let text = match kind {
            Out::Folded => f.to_text(),
            Out::Svg => fg::svg(
                &f,
                &Labels {
                    title: a.title.clone().map_or_else(
                        || {
                            format!(
                                "lru_lock waits by path, {what}: {policy} on {}",
                                outcome.capture
                            )
                        },
                        |t| format!("{t} ({what})"),
                    ),
                    subtitle: match weight {
                        Weight::Wait => format!(
                            "{} {what} waits on lru_lock, {} ns of wait; width = share of the wait",
                            fg::thousands(f.waits),
                            fg::thousands(f.total())
                        ),
                        Weight::Count => format!(
                            "{} {what} waits on lru_lock; width = share of the waits",
                            fg::thousands(f.total())
                        ),
                    },
                },
            ),
        };
        write_out(&path, &text)?;
        eprintln!("lockcast: {what}: {}", path.display());
    }
    Ok(())
}

/// `x.svg` → `x-measured.svg`.
fn beside(p: &Path, tag: &str) -> PathBuf {
    let stem = p
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let name = match p.extension() {
        Some(e) => format!("{stem}-{tag}.{}", e.to_string_lossy()),
        None => format!("{stem}-{tag}"),
    };
    p.with_file_name(name)
}

/// The flame-graph part of `lockcast demo`: a perf.data `-g` recording drawn, and the
/// differential graph of the 16K and 4K `perf lock contention -v` stacks. Returns the files.
pub fn demo(fixtures: &Path, out: &Path) -> Result<Vec<String>> {
    let f = |p: &str| fixtures.join(p).to_string_lossy().into_owned();
    let mut stdout = io::stdout().lock();
    writeln!(
        stdout,
        "\n== 8. Flame graphs: where the waits come from (perf record -g), and what 4K pages change (perf lock contention -v)"
    )?;
    let pd = f("perfdata/micro-16K-g/perf.data.gz");
    let open = lockcast::capture::OpenOptions {
        kallsyms: Some(std::sync::Arc::new(
            fixtures.join("perfdata/micro-16K-g/kallsyms.gz"),
        )),
        ..Default::default()
    };
    let one = flame::from_capture(&pd, &open, &flame::Options::default())?;
    let labels = Labels {
        title: "lru_lock and friends, 16K mTHP (perf record -g)".to_string(),
        subtitle: fg::describe(&one),
    };
    let mut files = Vec::new();
    for (name, text) in [
        ("flame-16K-g.svg", fg::svg(&one, &labels)),
        ("flame-16K-g.folded", one.to_text()),
    ] {
        write_out(&out.join(name), &text)?;
        files.push(name.to_string());
    }
    writeln!(
        stdout,
        "  {}: {} stacks, {} ns of wait ({} traced waits)",
        one.source,
        one.stacks.len(),
        fg::thousands(one.total()),
        fg::thousands(one.waits)
    )?;
    let plain = lockcast::capture::OpenOptions::default();
    let base = flame::from_capture(
        &f("captures/micro-16K-r1/contention-v.txt"),
        &plain,
        &flame::Options::default(),
    )?;
    let patched = flame::from_capture(
        &f("captures/micro-4K-r1/contention-v.txt"),
        &plain,
        &flame::Options::default(),
    )?;
    let labels = Labels {
        title: "16K mTHP → 4K pages: lock waits by call stack".to_string(),
        subtitle: format!(
            "width = 4K ({} ns); red grew, blue shrank, by share of the total (16K: {} ns)",
            fg::thousands(patched.total()),
            fg::thousands(base.total())
        ),
    };
    for (name, text) in [
        (
            "flamediff-16K-vs-4K.svg",
            fg::diff_svg(&base, &patched, true, &labels),
        ),
        (
            "flamediff-16K-vs-4K.folded",
            flame::diff_text(&base, &patched),
        ),
    ] {
        write_out(&out.join(name), &text)?;
        files.push(name.to_string());
    }
    let share = |x: &Folded| {
        let fb: u64 = x
            .stacks
            .iter()
            .filter(|(s, _)| s.iter().any(|n| n == "folio_batch_move_lru"))
            .map(|(_, w)| w)
            .sum();
        100.0 * fb as f64 / x.total().max(1) as f64
    };
    writeln!(
        stdout,
        "  folio_batch_move_lru: {:.1}% of the wait at 16K, {:.1}% at 4K (blue in the differential graph)",
        share(&base),
        share(&patched)
    )?;
    Ok(files)
}
