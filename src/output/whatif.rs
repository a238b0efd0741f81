//! What-if answers for people and programs: the full text report (terminal), the result
//! table as Markdown or CSV, and JSON (the library's typed report, [`crate::whatif::report`]).

use crate::output::formats::Format;
use crate::output::sheet::{Cell, Column, Sheet};
use crate::output::table::Align;
use crate::units::perf_time;
use crate::whatif::ask::Answer;
use crate::whatif::des::Metrics;
use crate::whatif::report::Report;
use crate::whatif::{self, summary, Outcome, Stopped};

/// An answer in `format`; `after` is `validate`'s AFTER capture and what it measured.
pub fn render(a: &Answer, after: Option<(&str, &Metrics)>, format: Format) -> String {
    let json = |v: serde_json::Result<String>| v.unwrap_or_default() + "\n";
    match (a, format) {
        (Answer::Work(w), Format::Json) => json(serde_json::to_string_pretty(w)),
        (Answer::Work(w), _) => w.text(),
        (Answer::ClosedForm(s), Format::Json) => json(serde_json::to_string_pretty(s)),
        (Answer::ClosedForm(s), _) => summary::text(s),
        (Answer::Replay(o), f) => render_outcome(o, after, f),
    }
}

/// A replay's outcome in `format`.
pub fn render_outcome(o: &Outcome, after: Option<(&str, &Metrics)>, format: Format) -> String {
    match format {
        Format::Json => {
            serde_json::to_string_pretty(&Report::new(o, after)).unwrap_or_default() + "\n"
        }
        Format::Table | Format::Text => outcome_text(o, after),
        Format::Markdown => {
            let mut s = format!(
                "**what-if {}** on `{}` (lru_lock `{}`, {} observation)\n\n",
                o.policy,
                o.capture,
                o.lock,
                whatif::obs_name(o.observation)
            );
            if let Some(t) = &o.time {
                s += &format!("{t}\n\n");
            }
            s += &outcome_sheet(o, after).markdown();
            s += &format!(
                "\nreduction (replayed/predicted): contended {}, total wait {}\n",
                opt_ratio(o.ratio_contended()),
                opt_ratio(o.ratio_total_wait())
            );
            s += &format!(
                "\n**verdict: {}** ({})\n",
                o.verdict.level.as_str(),
                o.verdict.summary
            );
            for w in &o.warnings {
                s += &format!("\n- warning: {}\n", w.message);
            }
            s
        }
        Format::Csv => outcome_sheet(o, after).csv(true),
    }
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
                m.total_wait_ns.to_string(),
                m.total_wait_ns.get().to_string(),
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
            err(p.total_wait_ns.as_f64(), m.total_wait_ns.as_f64()),
            err(p.avg_wait_ns(), m.avg_wait_ns()),
        ]);
    }
    Sheet { columns, rows }
}

/// How many replicates the interval rows are made of, and why that many.
fn bootstrap_text(b: &whatif::BootstrapRun) -> String {
    let why = match b.stopped {
        Stopped::None => {
            return "  interval: none (--bootstrap 0): the point estimates\n".to_string()
        }
        Stopped::Fixed => "as asked (--bootstrap N)".to_string(),
        Stopped::Settled => format!("settled before {}: {}", b.max, b.rule),
        Stopped::Max => format!("the most allowed, without settling ({})", b.rule),
    };
    let mut s = format!(
        "  interval: 2.5th-97.5th percentiles of {} bootstrap replicates, {why}\n",
        b.replicates
    );
    if b.windows > 0 {
        s += &format!(
            "  each replicate replayed {} time windows holding {:.1}% of the capture's holds and folios, \
             scaled to the whole by the windows' own point estimates (--sample 0: the whole capture)\n",
            b.windows,
            b.sampled_share * 100.0
        );
    }
    s
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
            r.measured_wait_ns.to_string(),
            r.replayed.contended,
            r.replayed.total_wait_ns.to_string(),
            r.replayed_share_pct,
            r.predicted.contended,
            r.predicted.total_wait_ns.to_string(),
            r.predicted_share_pct,
        );
    }
    s
}

fn opt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |v| format!("{v:.2}x"))
}

/// The verdict and the warnings, printed next to the answer.
fn verdict_text(o: &Outcome) -> String {
    let v = &o.verdict;
    let mut s = format!("  verdict: {} ({})\n", v.level.as_str(), v.summary);
    if let Some(fit) = v.reasons.first() {
        s += &format!("    {fit}\n");
    }
    if let Some(tail) = v.tail_reason() {
        s += &format!("    {tail}\n");
    }
    for w in &o.warnings {
        s += &format!("  warning: {}\n", w.message);
    }
    s
}

/// Terminal text of an outcome.
pub fn outcome_text(o: &Outcome, after: Option<(&str, &Metrics)>) -> String {
    let mut s = String::new();
    let params: Vec<String> = o.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    s += &format!(
        "what-if {} {}\n  capture {}\n  lock {} (lru_lock), observation {} (from {})\n",
        o.policy,
        params.join(" "),
        o.capture,
        o.lock,
        whatif::obs_name(o.observation),
        o.observation_source
    );
    if let Some(t) = &o.time {
        // before the table: every number below is of this part alone
        s += &format!("  {t}\n");
    }
    s += "\n";
    s += &outcome_sheet(o, after).text();
    s += &format!(
        "\n  reduction (replayed/predicted): contended {}, total wait {}\n",
        opt_ratio(o.ratio_contended()),
        opt_ratio(o.ratio_total_wait())
    );
    s += &bootstrap_text(&o.bootstrap);
    s += &verdict_text(o);
    let c = &o.calibration;
    s += &format!(
        "\ncalibration (from the capture, ns): add hold = pre {:.0} + {:.0}/extra folio + post {:.0} \
         (window edge q{}); waiter stamps its grant {:.0} after the release and no sooner than {:.0} after its begin, then holds {:.0} + folios;\n  \
         free side: grant->first free {:.0} + {:.0}/folio, release->first free {:.0}\n  \
         samples: {} multi-folio drains, {} traced add grants, {} traced free grants, {} waits on add holders, {} on free holders\n",
        c.pre_fast_ns, c.s1_add_ns, c.post_ns, c.post_quantile * 100.0, c.gap_ns, c.wait_min_ns, c.d_pre_ns, c.c0_ns, c.c1_ns, c.u_ns,
        c.n_spacing, c.n_d_pre, c.n_pre_free, c.n_add_window, c.n_free_window
    );
    if o.identities.lazyfree_calls > 0 {
        s += &format!(
            "  lazyfree (MADV_FREE) hold of {:.1} folios: {:.0} after a traced grant, {:.0} on the fast path \
             ({} waits on traced lazyfree holders, {} other requests during the calls)\n",
            c.lazy_folios_mean, c.lazy_hold_ns, c.lazy_fast_ns, c.n_lazy_window, c.n_during_lazy
        );
    }
    let id = &o.identities;
    s += &format!(
        "identities: {} pages in {} folios added; add-side holds {} measured vs {} by the kernel rule \
         ({} full, {} large-folio, {} explicit drains); free-side holds {} measured vs {} by the kernel rule\n",
        id.pages_added, id.folios_added, id.add_holds_measured, id.add_holds_rule,
        id.drains_full, id.drains_large, id.drains_explicit, id.free_holds, id.free_holds_rule
    );
    if id.lazyfree_calls > 0 {
        s += &format!(
            "  lazyfree: {} madvise(MADV_FREE) calls, {} holds rebuilt from the folios their tasks faulted \
             (a large folio alone, order-0 by 31), {} of them placed by their own traced wait\n",
            id.lazyfree_calls, id.lazyfree_holds, id.lazyfree_traced
        );
    }
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
            x.replayed.total_wait_ns.to_string(),
            x.predicted.contended,
            x.predicted.total_wait_ns.to_string()
        );
    }
    for n in &o.notes {
        s += &format!("note: {n}\n");
    }
    s
}
