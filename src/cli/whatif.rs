//! `lockcast whatif` and `lockcast validate`: read a capture, run the engine, print.

use std::collections::BTreeMap;
use std::io::{self, Write};

use anyhow::Result;
use serde_json::Value;

use lockcast::output::sheet::{Cell, Column, Sheet};
use lockcast::output::table::Align;
use lockcast::units::perf_time;
use lockcast::whatif::des::Metrics;
use lockcast::whatif::trace::Observation;
use lockcast::whatif::{self, policy, registry, summary, Outcome};
use lockcast::Error;

use lockcast::capture::{self, load, OpenOptions};
use lockcast::parsers::detect::Content;

use super::args::{EngineOpts, ObservationArg, OutFormatArg, ValidateArgs, WhatifArgs};

pub fn whatif(a: WhatifArgs) -> Result<()> {
    let set = parse_set(&a.engine.set)?;
    let info = registry::find(&a.policy)?;
    // work what-ifs read a capture directory: src/whatif/work/
    if let registry::Engine::Work(_) = info.engine {
        let o = whatif::work::run(&a.policy, &a.capture, &set)?;
        let out = if a.engine.json || a.engine.format == OutFormatArg::Json {
            serde_json::to_string_pretty(&o)? + "\n"
        } else {
            o.text()
        };
        io::stdout().write_all(out.as_bytes())?;
        return Ok(());
    }
    if is_table(&a.capture)? {
        let opts = OpenOptions {
            format: None,
            lenient: a.engine.lenient,
        };
        let t = load::one_table(&a.capture, &opts)?;
        let Some(closed_form) = info.summary else {
            return Err(Error::Usage(format!(
                "{}: a perf lock table supports only the closed-form model of {}; replay an event trace for {}",
                a.policy,
                closed_form_policies(),
                a.policy
            ))
            .into());
        };
        let s = closed_form(&a.policy, &t.name, &t.rows, &set)?;
        let out = if a.engine.json || a.engine.format == OutFormatArg::Json {
            serde_json::to_string_pretty(&s)? + "\n"
        } else {
            summary::text(&s)
        };
        io::stdout().write_all(out.as_bytes())?;
        return Ok(());
    }
    let o = engine(&a.policy, &a.capture, &set, &a.engine)?;
    let out = render_outcome(&o, None, &a.engine)?;
    io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

pub fn validate(a: ValidateArgs) -> Result<()> {
    let mut set = parse_set(&a.engine.set)?;
    let measured_after = read_after(&a.after, &a.policy, &mut set, &a.engine)?;
    let o = engine(&a.policy, &a.base, &set, &a.engine)?;
    let out = render_outcome(&o, Some((&a.after, &measured_after)), &a.engine)?;
    io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

fn closed_form_policies() -> String {
    registry::POLICIES
        .iter()
        .filter(|p| p.summary.is_some())
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A perf lock table (closed-form model) rather than an event trace (replay)?
fn is_table(spec: &str) -> Result<bool, Error> {
    let path = lockcast::input::InputSpec::parse(spec).path;
    if path == "-" {
        // stdin can be read once: treat it as a trace (a perf lock table there is reported
        // as such by the trace reader)
        return Ok(false);
    }
    let spec = lockcast::input::InputSpec::parse(spec);
    let f = capture::format_of(&spec, &OpenOptions::default())?;
    Ok(f.content() == Content::LockTables)
}

/// Read the AFTER capture of `validate`: what it measured, and for folio-size the target size
/// and untraced run time from its meta file (unless `--set` gives them).
fn read_after(
    path: &str,
    policy: &str,
    set: &mut BTreeMap<String, String>,
    e: &EngineOpts,
) -> Result<Metrics, Error> {
    let after = whatif::trace::read(path, e.lenient)?;
    if let Some(defaults) = registry::find(policy)?.after_defaults {
        defaults(&after, set)?;
    }
    let rec = whatif::reconstruct::reconstruct(&after, &reconstruct_opts(e))?;
    Ok(whatif::measured(&rec))
}

fn render_outcome(o: &Outcome, after: Option<(&str, &Metrics)>, e: &EngineOpts) -> Result<String> {
    Ok(match (e.json, e.format) {
        (true, _) | (_, OutFormatArg::Json) => {
            serde_json::to_string_pretty(&outcome_json(o, after))? + "\n"
        }
        (_, OutFormatArg::Table | OutFormatArg::Text) => outcome_text(o, after),
        (_, OutFormatArg::Markdown) => {
            let mut s = format!(
                "**what-if {}** on `{}` (lock `{}`, {} observation)\n\n",
                o.policy,
                o.capture,
                o.lock,
                whatif::obs_name(o.observation)
            );
            s += &outcome_sheet(o, after).markdown();
            s += &format!(
                "\nreduction (replayed/predicted): contended {}, total wait {}\n",
                opt_ratio(o.ratio_contended()),
                opt_ratio(o.ratio_total_wait())
            );
            s
        }
        (_, OutFormatArg::Csv) => outcome_sheet(o, after).csv(true),
    })
}

/// The result rows as a sheet (text for people, raw ns for programs).
fn outcome_sheet(o: &Outcome, after: Option<(&str, &Metrics)>) -> Sheet {
    let columns = vec![
        Column::new("", "row", Align::Left),
        Column::new("acquisitions", "acquisitions", Align::Right),
        Column::new("contended", "contended", Align::Right),
        Column::new("total wait", "total_wait_ns", Align::Right),
        Column::new("avg wait", "avg_wait_ns", Align::Right),
    ];
    let row = |name: &str, key: &str, m: &Metrics| -> Vec<Cell> {
        let avg = m.avg_wait_ns().round() as u64;
        vec![
            Cell::new(name, key),
            Cell::plain(m.acquisitions.to_string()),
            Cell::plain(m.contended.to_string()),
            Cell::new(
                perf_time(m.total_wait_ns.max(0) as u64),
                m.total_wait_ns.to_string(),
            ),
            Cell::new(perf_time(avg), avg.to_string()),
        ]
    };
    let mut rows = vec![
        row("measured", "measured", &o.measured),
        row("replayed (no change)", "replayed", &o.replayed),
        row(
            &format!("predicted ({})", o.policy),
            "predicted",
            &o.predicted,
        ),
        row("interval low", "interval_low", &o.interval.low),
        row("interval high", "interval_high", &o.interval.high),
    ];
    // low and high are taken per metric, so their ratio is not an average wait
    for r in &mut rows[3..5] {
        r[4] = Cell::new("-", "");
    }
    if let Some((_, m)) = after {
        rows.push(row("measured after", "after", m));
        // (predicted − measured) / measured: percent for people, the fraction for programs
        let err = |p: f64, m: f64| {
            if m == 0.0 {
                Cell::new("-", "")
            } else {
                let e = (p - m) / m;
                Cell::new(format!("{:+.1}%", e * 100.0), format!("{e:.4}"))
            }
        };
        let p = &o.predicted;
        rows.push(vec![
            Cell::new("error", "error"),
            err(p.acquisitions as f64, m.acquisitions as f64),
            err(p.contended as f64, m.contended as f64),
            err(p.total_wait_ns as f64, m.total_wait_ns as f64),
            err(p.avg_wait_ns(), m.avg_wait_ns()),
        ]);
    }
    Sheet { columns, rows }
}

fn parse_set(items: &[String]) -> Result<BTreeMap<String, String>, Error> {
    whatif::params::pairs(items)
}

fn reconstruct_opts(e: &EngineOpts) -> whatif::reconstruct::Options {
    whatif::reconstruct::Options {
        lock: e.lock.clone(),
        ..Default::default()
    }
}

fn engine(
    policy_name: &str,
    capture: &str,
    set: &BTreeMap<String, String>,
    e: &EngineOpts,
) -> Result<Outcome, Error> {
    if !(0.5..=1.0).contains(&e.window_quantile) {
        return Err(Error::Usage(format!(
            "--window-quantile {} must be between 0.5 and 1",
            e.window_quantile
        )));
    }
    let t = whatif::trace::read(capture, e.lenient)?;
    let ctx = whatif::context(&t);
    let p = policy::make(policy_name, set, &ctx)?;
    let opts = whatif::Options {
        reconstruct: reconstruct_opts(e),
        observation: e.observation.map(|o| match o {
            ObservationArg::Paravirt => Observation::Paravirt,
            ObservationArg::BareMetal => Observation::BareMetal,
        }),
        post_quantile: e.window_quantile,
        bootstrap: e.bootstrap,
        seed: e.seed,
        progress: true,
    };
    let mut o = whatif::run(&t, p.as_ref(), &ctx, &opts)?;
    if let Some(note) = observer_note(capture) {
        o.notes.push(note);
    }
    Ok(o)
}

/// fixtures/capture-replay.sh records the same workload once more with the lock events alone
/// (`contention-lockonly.txt` beside `contention.txt`): the ratio of their contended totals is
/// how much the mm events change what is measured. Stated, not applied: predictions are for
/// the capture's own recipe.
fn observer_note(capture: &str) -> Option<String> {
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

/// JSON of an outcome: the library's typed report.
pub fn outcome_json(o: &Outcome, after: Option<(&str, &Metrics)>) -> Value {
    serde_json::to_value(whatif::report::Report::new(o, after)).unwrap_or(Value::Null)
}

/// The by-path table: what `perf lock contention` prints per caller, measured and replayed,
/// and each path's lock time as a share of the CPUs' busy time.
fn path_text(o: &Outcome) -> String {
    // only worth a table when the capture tells paths apart
    if o.by_path.len() < 2 {
        return String::new();
    }
    let mut s = format!(
        "
by path (contended / total wait; lock time = waits + holds, % of busy CPU time):
  {:<36} {:>17} {:>26} {:>26}
",
        "path", "measured", "replayed", "predicted"
    );
    for r in &o.by_path {
        s += &format!(
            "  {:<36} {:>6} {:>10} {:>6} {:>10} {:>6.2}% {:>6} {:>10} {:>6.2}%
",
            r.via.as_str(),
            r.measured_contended,
            perf_time(r.measured_wait_ns.max(0) as u64),
            r.replayed.contended,
            perf_time(r.replayed.total_wait_ns.max(0) as u64),
            r.replayed_share_pct,
            r.predicted.contended,
            perf_time(r.predicted.total_wait_ns.max(0) as u64),
            r.predicted_share_pct,
        );
    }
    s
}

fn opt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |v| format!("{v:.2}x"))
}

/// Terminal text of an outcome.
pub fn outcome_text(o: &Outcome, after: Option<(&str, &Metrics)>) -> String {
    let mut s = String::new();
    let params: Vec<String> = o.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    s += &format!(
        "what-if {} {}\n  capture {}\n  lock {} (lru_lock), observation {} (from {})\n\n",
        o.policy,
        params.join(" "),
        o.capture,
        o.lock,
        whatif::obs_name(o.observation),
        o.observation_source
    );
    s += &outcome_sheet(o, after).text();
    s += &format!(
        "\n  reduction (replayed/predicted): contended {}, total wait {}\n",
        opt_ratio(o.ratio_contended()),
        opt_ratio(o.ratio_total_wait())
    );
    let c = &o.calibration;
    s += &format!(
        "\ncalibration (from the capture, ns): add hold = pre {:.0} + {:.0}/extra folio + post {:.0} \
         (window edge q{}); waiter stamps its grant {:.0} after the release, then holds {:.0} + folios;\n  \
         free side: grant->first free {:.0} + {:.0}/folio, release->first free {:.0}\n  \
         samples: {} multi-folio drains, {} traced add grants, {} traced free grants, {} waits on add holders, {} on free holders\n",
        c.pre_fast, c.s1_add, c.post, c.post_quantile * 100.0, c.gap, c.d_pre, c.c0, c.c1, c.u,
        c.n_spacing, c.n_d_pre, c.n_pre_free, c.n_add_window, c.n_free_window
    );
    let id = &o.identities;
    s += &format!(
        "identities: {} pages in {} folios added; add-side holds {} measured vs {} by the kernel rule \
         ({} full, {} large-folio, {} explicit drains); free-side holds {} measured vs {} by the kernel rule\n",
        id.pages_added, id.folios_added, id.add_holds_measured, id.add_holds_rule,
        id.drains_full, id.drains_large, id.drains_explicit, id.free_holds, id.free_holds_rule
    );
    s += &path_text(o);
    if id.dead_on_batch > 0 || id.release_folios > 0 {
        s += &format!(
            "dead on the batch: {} folios were discarded by their task before a drain put them on the LRU; \
             {} folios freed by {} post-drain release holds\n",
            id.dead_on_batch, id.release_folios, id.release_holds
        );
    }
    if !id.drain_sites.is_empty() {
        let sites: Vec<String> = id
            .drain_sites
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        s += &format!(
            "explicit drains by caller of lru_add_drain: {}\n",
            sites.join(", ")
        );
    }
    s += "sensitivity (contended, total wait):\n";
    for x in &o.sensitivity {
        s += &format!(
            "  {:<24} replayed {:>7} {:>10}   predicted {:>7} {:>10}\n",
            x.choice,
            x.replayed.contended,
            perf_time(x.replayed.total_wait_ns.max(0) as u64),
            x.predicted.contended,
            perf_time(x.predicted.total_wait_ns.max(0) as u64)
        );
    }
    for n in &o.notes {
        s += &format!("note: {n}\n");
    }
    s
}

/// The what-if part of `lockcast demo`: the RFC's policy on a 16K capture, a folio-size
/// prediction checked against a real 4K capture, and the closed-form model on the seed table.
pub fn demo(fixtures: &std::path::Path, out: &std::path::Path) -> Result<Vec<String>> {
    let mut charts = Vec::new();
    let f = |p: &str| fixtures.join(p).to_string_lossy().into_owned();
    let mut stdout = io::stdout().lock();
    let engine_opts = EngineOpts {
        set: Vec::new(),
        observation: None,
        lock: None,
        bootstrap: 50,
        seed: 1,
        window_quantile: 0.975,
        lenient: false,
        json: false,
        format: OutFormatArg::Table,
    };
    let base = f("replay/micro-16K-r1/script-ns.txt.gz");
    writeln!(
        stdout,
        "\n== 4. What-if: RFC v3 lru cache replayed over a real 16K capture (2 threads, perf script --ns)"
    )?;
    let o = engine("lru-cache", &base, &BTreeMap::new(), &engine_opts)?;
    write!(stdout, "{}", outcome_text(&o, None))?;
    let j = outcome_json(&o, None);
    write_json(&out.join("whatif-lru-cache-16K.json"), &j)?;
    charts.push(whatif_chart(&j, &out.join("whatif-lru-cache-16K.png"))?);

    writeln!(
        stdout,
        "\n== 5. Validation: predict the 4K run from the 16K capture, compare with the real 4K capture"
    )?;
    let after_path = f("replay/micro-4K-r1/script-ns.txt.gz");
    let mut set = BTreeMap::new();
    let m = read_after(&after_path, "folio-size", &mut set, &engine_opts)?;
    let v = engine("folio-size", &base, &set, &engine_opts)?;
    write!(stdout, "{}", outcome_text(&v, Some((&after_path, &m))))?;
    let j = outcome_json(&v, Some((&after_path, &m)));
    write_json(&out.join("validate-folio-size-16K-to-4K.json"), &j)?;
    charts.push(whatif_chart(
        &j,
        &out.join("validate-folio-size-16K-to-4K.png"),
    )?);

    writeln!(
        stdout,
        "\n== 6. What-if from the seed's table alone (closed-form model, 20 threads, 16K folios)"
    )?;
    let seed = f("seeds/lru-cache-small-large-folios-rfc-v3.txt");
    let opts = OpenOptions::default();
    let t = load::one_table(&format!("{seed}#1"), &opts)?;
    let (source, rows) = (t.name, t.rows);
    let mut set = BTreeMap::new();
    set.insert("folio_kb".to_string(), "16".to_string());
    set.insert("cpus".to_string(), "20".to_string());
    let s = summary::run("lru-cache", &source, &rows, &set)?;
    write!(stdout, "{}", summary::text(&s))?;
    writeln!(stdout, "  posted: contended 8.11x, total wait 5.21x")?;
    write_json(
        &out.join("whatif-seed-summary.json"),
        &serde_json::to_value(&s)?,
    )?;

    writeln!(
        stdout,
        "\n== 7. What-if: the fbatch-drain series and its fix, from a v6.18 capture of the regression report's workload"
    )?;
    let churn = f("fbatch/churn-4K-r1/script-ns.txt.gz");
    let mut fast = engine_opts.clone();
    fast.bootstrap = 0;
    writeln!(
        stdout,
        "  {:<44} {:>12} {:>10} {:>12} {:>12}",
        "kernel", "acquisitions", "contended", "total wait", "unmap share"
    )?;
    for (label, name, set) in [
        ("v6.18 (captured, replayed)", "baseline", None),
        ("dead-prefree (the report's baseline)", "dead-prefree", None),
        ("fbatch-drain (series as posted)", "fbatch-drain", None),
        (
            "fbatch-drain + lru_add_del_folio fix",
            "fbatch-drain",
            Some("dead_on_batch_takes_lock=false"),
        ),
    ] {
        let set_map = parse_set(&set.map(str::to_string).into_iter().collect::<Vec<_>>())?;
        let o = engine(name, &churn, &set_map, &fast)?;
        let zap = o
            .by_path
            .iter()
            .find(|r| r.via == whatif::trace::Via::Zap)
            .map_or(0.0, |r| r.predicted_share_pct);
        writeln!(
            stdout,
            "  {:<44} {:>12} {:>10} {:>12} {:>11.2}%",
            label,
            o.predicted.acquisitions,
            o.predicted.contended,
            perf_time(o.predicted.total_wait_ns.max(0) as u64),
            zap
        )?;
        let file = format!(
            "whatif-{}{}-churn.json",
            name,
            if set.is_some() { "-fix" } else { "" }
        );
        write_json(&out.join(file), &outcome_json(&o, None))?;
    }
    writeln!(
        stdout,
        "  report (perf, bare metal): _raw_spin_lock_irqsave 0.26% -> 6.97% -> 0.37%, slowpath 0.03% -> 6.62% -> 0.77%"
    )?;
    Ok(charts)
}

fn whatif_chart(j: &Value, path: &std::path::Path) -> Result<String, Error> {
    use lockcast::plots::{self, whatif::WhatIfChart};
    let rows = plots::whatif::rows_from_json(&j.to_string(), "what-if")?;
    plots::save(&WhatIfChart::new(rows), path, None)?;
    Ok(path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default())
}

fn write_json(p: &std::path::Path, v: &Value) -> Result<(), Error> {
    lockcast::output::write::atomic_write(p, |w| {
        serde_json::to_writer_pretty(&mut *w, v).map_err(|e| Error::io(p.display(), e.into()))
    })
}
