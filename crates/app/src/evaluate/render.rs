//! How an evaluation reads: its tables, its page and its orders.csv, kept
//! apart from the loop that runs the orders so each file stays one job.

use super::*;

/// `better`, `worse` or `unresolved`, from the first policy's side.
pub fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::FirstBetter => "better",
        Verdict::SecondBetter => "worse",
        Verdict::Unresolved => "unresolved",
    }
}

/// Why the series ended, for people.
pub fn stop_text(s: Stop) -> &'static str {
    match s {
        Stop::Resolved => "every comparison of the chosen figure was resolved",
        Stop::Budget => "the orders or the time budget ran out before every comparison was resolved",
        Stop::Continue => "still running",
    }
}

/// `1.23 [1.10, 1.31]`: median [q1, q3].
pub fn fmt_quartiles(q: &Option<Quartiles>) -> String {
    q.map_or("-".into(), |q| format!("{:.2} [{:.2}, {:.2}]", q.median, q.q1, q.q3))
}

/// `-3.1 % [-5.0, -1.2]`.
pub fn fmt_paired(p: &Option<Paired>) -> String {
    p.as_ref().map_or("-".into(), |p| format!("{:+.1} % [{:+.1}, {:+.1}]", p.median_rel_diff * 100.0, p.ci.0 * 100.0, p.ci.1 * 100.0))
}

/// Policy, figure, real difference, verdict, whether the IQRs are apart.
fn real_row(c: &Comparison) -> Vec<String> {
    vec![
        c.policy.clone(),
        c.figure.name().to_string(),
        fmt_paired(&c.real),
        c.real.as_ref().map_or("-".into(), |p| verdict_text(p.verdict).to_string()),
        c.real.as_ref().map_or("-".into(), |p| if p.first.disjoint(&p.second) { "yes" } else { "no" }.to_string()),
    ]
}

/// The orders whose real runs the figures and verdicts count: all of them,
/// or with `--regime` those run in that regime throughout.
pub(super) fn counted(r: &EvaluateReport) -> Vec<&Vec<RunFigures>> {
    r.orders.iter().filter(|o| r.required_regime.is_none_or(|g| o.regime == Some(g) && !o.switched)).map(|o| &o.runs).collect()
}

/// Which orders a table counts, as its title says it.
fn counted_text(r: &EvaluateReport) -> String {
    let n = counted(r).len();
    match r.required_regime {
        Some(g) => format!("the {n} of {} orders run in the {} regime throughout", r.orders.len(), g.name()),
        None => format!("all {n} orders"),
    }
}

/// The tables of a report: (title, headers, rows), in the order people read
/// them; the text and the HTML page show them.
pub(super) fn tables(r: &EvaluateReport) -> Vec<(String, Vec<String>, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    let which = counted_text(r);
    let heads: Vec<String> = std::iter::once("policy".to_string())
        .chain(Figure::ALL.iter().map(|f| format!("{} median [q1, q3]", f.name())))
        .collect();
    let real: Vec<Vec<String>> = r
        .figures
        .iter()
        .map(|p| std::iter::once(p.policy.clone()).chain(p.real.iter().map(|(_, q)| fmt_quartiles(q))).collect())
        .collect();
    out.push((format!("Real runs over {which} (seconds; worst slowdown against each order's solo pass)"), heads.clone(), real));
    let sim: Vec<Vec<String>> = r
        .figures
        .iter()
        .map(|p| std::iter::once(p.policy.clone()).chain(p.simulated.iter().map(|(_, q)| fmt_quartiles(q))).collect())
        .collect();
    out.push((format!("Simulated, all {} orders on the stored pairwise slowdowns", r.orders.len()), heads, sim));
    let base = r.policies.first().cloned().unwrap_or_default();
    let comp: Vec<Vec<String>> = r
        .comparisons
        .iter()
        .map(|c| {
            let mut row = real_row(c);
            row.push(fmt_paired(&c.simulated));
            row.push(c.agrees.map_or("-".into(), |a| if a { "yes" } else { "no" }.to_string()));
            row
        })
        .collect();
    out.push((
        format!(
            "Against {base}, order by order over {which}: median relative difference [{}] (negative = lower = better)",
            cosched_report::interval_name(r.comparisons.iter().filter_map(|c| c.real.as_ref()).map(|p| p.n))
        ),
        ["policy", "figure", "real", "verdict", "IQRs apart", "simulated", "same sign"].map(String::from).to_vec(),
        comp,
    ));
    if let Some((g, n, comps)) = &r.within_regime {
        let rows: Vec<Vec<String>> = comps.iter().map(real_row).collect();
        out.push((
            format!("The same, over the {n} orders that stayed in one regime ({})", g.name()),
            ["policy", "figure", "real", "verdict", "IQRs apart"].map(String::from).to_vec(),
            rows,
        ));
    }
    let oracle: Vec<Vec<String>> = r
        .oracle
        .iter()
        .flat_map(|o| {
            let search = match o.oracle.search {
                cosched_sched::oracle::Search::Exhaustive { schedules } => format!("all {schedules} orders"),
                cosched_sched::oracle::Search::Local { schedules, .. } => format!("local search, {schedules} schedules"),
            };
            let replayed = match (&o.replayed, &o.not_replayed) {
                (Some(q), _) => format!("{:.2} s [{:.2}, {:.2}]", q.median, q.q1, q.q3),
                (None, Some(why)) => format!("- ({why})"),
                (None, None) => "-".into(),
            };
            o.above.iter().map(move |(l, real, sim)| {
                let pct = |v: &Option<f64>| v.map_or("-".into(), |v| format!("{:+.1} %", v * 100.0));
                let vs_replay = o.above_replayed.iter().find(|(k, _)| k == l).map(|(_, v)| *v);
                vec![
                    o.objective.name().to_string(),
                    format!("{:.2} s ({search})", o.oracle.value),
                    replayed.clone(),
                    l.clone(),
                    pct(real),
                    pct(&vs_replay),
                    pct(sim),
                ]
            })
        })
        .collect();
    out.push((
        "Distance to the oracle (the model's best list schedule, and that schedule run for real): each policy's median above it"
            .to_string(),
        ["figure", "oracle (model)", "oracle run for real, median [q1, q3]", "policy", "real vs model", "real vs real", "simulated"]
            .map(String::from)
            .to_vec(),
        oracle,
    ));
    let orders: Vec<Vec<String>> = r
        .orders
        .iter()
        .map(|o| {
            let mut row = vec![
                (o.order + 1).to_string(),
                o.round_trip_ns.map_or("-".into(), |ns| format!("{ns:.0} ns")),
                o.regime.map_or("-".into(), |g| g.name().to_string()) + if o.switched { " (switched within the order)" } else { "" },
            ];
            for l in &r.policies {
                let f = o.runs.iter().find(|x| &x.policy == l);
                row.push(f.map_or("-".into(), |f| {
                    let v = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}"));
                    format!("{} / {} / {}", v(f.makespan), v(f.avg_turnaround), v(f.worst_slowdown))
                }));
            }
            row
        })
        .collect();
    let mut h = vec!["order".to_string(), "CPU 0-1 round trip".to_string(), "regime".to_string()];
    h.extend(r.policies.iter().map(|l| format!("{l}: makespan / mean TAT / worst slowdown")));
    out.push(("Every order".to_string(), h, orders));
    out
}

impl Render for EvaluateReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        for (title, heads, rows) in tables(self) {
            let h: Vec<&str> = heads.iter().map(String::as_str).collect();
            d.line(format!("{title}:")).table(&h, rows).line("");
        }
        d.line(format!("Stopped after {} orders: {} ({}).", self.orders.len(), stop_text(self.stop), self.metric.name()));
        if let Some(g) = self.required_regime {
            let kept = self.orders.iter().filter(|o| o.regime == Some(g) && !o.switched).count();
            d.line(format!("Counted {kept} of {} orders: those in the {} regime throughout.", self.orders.len(), g.name()));
            if self.waited_out {
                d.line("The series ended waiting for that regime (--regime-wait).");
            }
        } else if self.regimes.len() > 1 {
            d.line("warning: the orders span a cache-regime switch (see the round trips above); compare within one regime.");
        }
        d.line(format!("slowdowns of the model: {}", self.slowdown_source));
        if let Some(i) = &self.index {
            d.line(format!("report: {}", i.display()));
        }
        d
    }
}

pub(super) fn write_page(page: &mut Page, r: &EvaluateReport, metric: Figure) {
    page.set_title(&format!("cosched evaluate: {}", r.workload));
    page.paragraph(&format!(
        "Workload `{}`; policies compared with `{}` on {} seeded orders (seed {}); stopped because {} ({}).",
        r.workload,
        r.policies.first().map_or("", String::as_str),
        r.orders.len(),
        r.seed,
        stop_text(r.stop),
        metric.name()
    ));
    if r.regimes.len() > 1 {
        page.note("The orders span a cache-regime switch: compare within one regime (see the orders table).");
    }
    for (title, heads, rows) in tables(r) {
        let h: Vec<&str> = heads.iter().map(String::as_str).collect();
        page.section(&title).table(&h, &rows);
    }
    // What the verdicts rest on: each counted order's paired difference,
    // one dot an order, per figure.
    let rows = counted(r);
    let base = r.policies.first().cloned().unwrap_or_default();
    for f in Figure::ALL {
        let diffs: Vec<(String, Vec<f64>)> = r.policies[1.min(r.policies.len())..]
            .iter()
            .map(|l| (l.clone(), pick(&rows, l, f).iter().zip(pick(&rows, &base, f)).map(|(a, b)| a / b - 1.0).collect()))
            .collect();
        let (boxes, dots): (Vec<_>, Vec<_>) =
            diffs.into_iter().filter_map(|(l, d)| cosched_report::boxplot::BoxStats::of(&l, &d).map(|b| (b, d))).unzip();
        if boxes.is_empty() {
            continue;
        }
        let plot = cosched_report::boxplot::BoxPlot {
            title: format!("{}: each order against {base}", f.name()),
            y_label: format!("{} / {base}'s - 1", f.name()),
            boxes,
            percent: true,
            reference: Some(0.0),
        };
        page.section(&format!("{}, order by order over {}", f.name(), counted_text(r)))
            .paragraph("Each dot is one order's relative difference against the baseline (negative = lower = better); the box spans its quartiles.")
            .svg(&plot.svg_with_dots(&dots));
    }
    page.section("Data").link("evaluate.json", "everything above (JSON)").link("orders.csv", "every order's figures (CSV)");
}

/// Every run of every order, one line each, through the one CSV writer.
pub(super) fn orders_csv(r: &EvaluateReport) -> String {
    let head = ["order", "round_trip_ns", "policy", "run", "makespan_s", "mean_turnaround_s", "worst_slowdown", "failed"];
    let o = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let rows = r.orders.iter().flat_map(|row| {
        row.runs.iter().map(move |f| {
            vec![
                row.order.to_string(),
                o(row.round_trip_ns),
                f.policy.clone(),
                f.run.to_string(),
                o(f.makespan),
                o(f.avg_turnaround),
                o(f.worst_slowdown),
                f.failed.to_string(),
            ]
        })
    });
    cosched_report::csv_text(&head, rows)
}
