//! `cosched simulate`: seed 000's Monte-Carlo evaluation of policies on a
//! scenario, as increase rates against sequential execution.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use cosched_report::boxplot::{BoxPlot, BoxStats};
use cosched_report::html::Page;
use cosched_report::table;
use cosched_sched::montecarlo::{
    default_policies, parse_spec, run_orders, spec_label, summarize, trace_of, MonteCarloError, OrderResult, PolicySummary, Spread,
};
use cosched_sched::policy_names;
use cosched_sched::scenario::{MatrixSource, MeasuredMatrix, Measurements, Scenario, Statistic};
use cosched_sched::Params;
use cosched_store::{CampaignKind, CampaignRecord, CampaignStatus, Store};

use super::common::DbArgs;

use crate::exit::bad_input;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched simulate --scenario examples/scenarios/seed000.toml --orders 10000 --seed 1\n  \
    cosched simulate --scenario s.toml --policy noplan --policy conflict-aware:threshold=100\n  \
    cosched simulate --scenario s.toml --orders 1000 --json | jq '.summaries[0].makespan.median'\n  \
    cosched simulate --scenario examples/scenarios/seed000.toml --report out/ \\\n      \
    --policy conflict-aware:threshold=100 --policy best-match --policy auto-threshold:bound=1.5\n  \
    cosched simulate --scenario examples/scenarios/seed000-measured.toml --db cosched.db\n  \
    cosched simulate --scenario s.toml --orders 1 --trace trace.csv --trace-policy best-match\n  \
    cosched simulate --list-policies\n\n\
    Each order is a random permutation of the scenario's jobs (all arriving at 0),\n\
    run under every policy and under `exclusive`; rates are (policy - exclusive) /\n\
    exclusive for that order, so -25 % is 25 % shorter than sequential execution.\n\
    Run time is finish - start of a job (seed 000's turn-around time, measured as\n\
    slowdown since solo times may differ); turnaround adds the wait in the queue.\n\
    Default policies: noplan and conflict-aware at threshold 50, 100, 150, inf.\n\
    The performance score (seed 004) of a policy on an order is the shortest\n\
    makespan of all strategies run on it (exclusive included) over its own.\n\
    --report DIR writes index.html (box plots like seed 000's figures 11-13 and\n\
    tables), the plots as SVG, summary.csv/json and orders.csv.\n\
    A bad scenario or policy exits with code 2.")]
pub struct SimulateArgs {
    /// Scenario TOML: [[pools]], [[programs]] and [slowdown] (a matrix, or measured cells from the store or a file).
    #[arg(long, value_name = "FILE", required_unless_present = "list_policies")]
    pub scenario: Option<PathBuf>,
    /// A policy as NAME or NAME:KEY=VALUE,...; repeat for several.
    #[arg(long = "policy", value_name = "P")]
    pub policies: Vec<String>,
    /// Number of random orders.
    #[arg(long, default_value_t = 10_000)]
    pub orders: usize,
    /// Seed of the orders; the same seed gives the same orders on any machine.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// List the registered policies and exit.
    #[arg(long)]
    pub list_policies: bool,
    /// Write an HTML report with box plots, the tables as CSV and JSON, and
    /// every order's figures (orders.csv) into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Write one order's event trace in the one trace format (`cosched run --report` writes it too): JSON if FILE ends in .json, else CSV.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The order whose trace --trace writes.
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub trace_order: usize,
    /// The policy whose trace --trace writes; default: the first policy.
    #[arg(long, value_name = "P")]
    pub trace_policy: Option<String>,
    /// Where a scenario's `[slowdown] store` or `profiles` are read from.
    #[command(flatten)]
    pub db: DbArgs,
}

/// Measurements for scenarios: pairs campaigns and profiles from the store
/// (opened only if a scenario asks), matrices from `cosched pairs --json` files.
struct Fetch<'a> {
    db: &'a DbArgs,
    store: std::cell::OnceCell<Result<Store, String>>,
}

impl Fetch<'_> {
    fn store(&self) -> Result<&Store, String> {
        self.store
            .get_or_init(|| self.db.open_existing().map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The newest finished campaign of a kind over a workload, else the
    /// newest one with runs (an interrupted campaign's cells still count).
    fn campaign(&self, kind: CampaignKind, workload: &str) -> Result<CampaignRecord, String> {
        let all = self.store()?.campaigns().map_err(|e| e.to_string())?;
        let of: Vec<&CampaignRecord> = all.iter().filter(|c| c.kind == kind && c.workload == workload).collect();
        of.iter()
            .rev()
            .find(|c| c.status == CampaignStatus::Done)
            .or_else(|| of.iter().rev().find(|c| c.runs > 0))
            .map(|c| (*c).clone())
            .ok_or_else(|| format!("no {} campaign of workload `{workload}` in {}", kind.as_str(), self.db.path().display()))
    }
}

impl Measurements for Fetch<'_> {
    fn matrix(&self, source: &MatrixSource, statistic: Statistic) -> Result<MeasuredMatrix, String> {
        match source {
            MatrixSource::Store { workload } => {
                let c = self.campaign(CampaignKind::Pairs, workload)?;
                let runs = self.store()?.pair_runs(c.id).map_err(|e| e.to_string())?;
                // The campaign's own job list keeps jobs in workload order.
                let mut jobs: Vec<String> = c.params["jobs"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|j| j["name"].as_str().map(String::from)).collect())
                    .unwrap_or_default();
                for r in &runs {
                    for n in [&r.fg_job, &r.bg_job] {
                        if !jobs.contains(n) {
                            jobs.push(n.clone());
                        }
                    }
                }
                let index = |n: &str| jobs.iter().position(|x| x == n).expect("listed above");
                let samples: Vec<(usize, usize, f64)> = runs
                    .iter()
                    .flat_map(|r| {
                        let (i, j) = (index(&r.fg_job), index(&r.bg_job));
                        [(i, j, r.fg_slowdown()), (j, i, r.bg_slowdown())]
                    })
                    .collect();
                let origin = format!("pairs campaign {} of `{workload}` ({} repeats, {})", c.id, runs.len(), c.status.as_str());
                Ok(MeasuredMatrix::from_samples(jobs, samples, statistic, origin))
            }
            MatrixSource::File { path } => {
                if statistic == Statistic::Mean {
                    return Err("a `cosched pairs --json` matrix holds each cell's median only; use statistic = \"median\" or the store".into());
                }
                let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let m: cosched_model::matrix::SlowdownMatrix =
                    serde_json::from_str(&text).map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
                let cells = m.cells.iter().map(|r| r.iter().map(|c| c.as_ref().map(|s| s.median)).collect()).collect();
                Ok(MeasuredMatrix { jobs: m.jobs, cells, origin: path.display().to_string() })
            }
        }
    }

    fn host_loads(&self, workload: &str, jobs: &[String]) -> Result<Vec<Option<f64>>, String> {
        let c = self.campaign(CampaignKind::Profile, workload)?;
        let profiles = self.store()?.profiles(c.id).map_err(|e| e.to_string())?;
        Ok(jobs
            .iter()
            .map(|j| {
                let p = profiles.iter().find(|p| &p.job == j)?;
                p.summary["summary"]["host_load_mean"].as_f64()
            })
            .collect())
    }
}

pub fn run(a: SimulateArgs) -> anyhow::Result<()> {
    if a.list_policies {
        let rows: Vec<Vec<String>> = policy_names()
            .into_iter()
            .map(|(n, d)| vec![n.to_string(), d.to_string()])
            .collect();
        if a.json {
            let v: Vec<_> = policy_names()
                .into_iter()
                .map(|(n, d)| serde_json::json!({"name": n, "description": d}))
                .collect();
            println!("{}", serde_json::Value::Array(v));
        } else {
            println!("{}", table(&["policy", "description"], &rows));
        }
        return Ok(());
    }
    let path = a.scenario.as_ref().expect("clap requires --scenario");
    let fetch = Fetch { db: &a.db, store: std::cell::OnceCell::new() };
    let scenario = Scenario::load_with(path, Some(&fetch)).map_err(|e| bad_input(e.to_string()))?;
    if a.orders == 0 {
        return Err(bad_input("--orders must be at least 1"));
    }
    let policies = if a.policies.is_empty() {
        default_policies()
    } else {
        a.policies
            .iter()
            .map(|s| parse_spec(s).map_err(|e| bad_input(format!("--policy: {e}"))))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let started = Instant::now();
    let results = run_orders(&scenario, &policies, a.orders, a.seed).map_err(|e| match e {
        MonteCarloError::Policy(m) => bad_input(m),
        other => anyhow::Error::new(other),
    })?;
    let summaries = summarize(&policies, &results);
    let elapsed = started.elapsed().as_secs_f64();
    let jobs = scenario.job_program.len();

    let baseline_score = Spread::of(&results.iter().map(|r| r.baseline_score).collect::<Vec<_>>()).expect("orders >= 1");
    let doc = serde_json::json!({
        "scenario": path.display().to_string(),
        "jobs": jobs,
        "nodes": scenario.nodes,
        "orders": a.orders,
        "seed": a.seed,
        "elapsed_seconds": elapsed,
        "slowdowns": scenario.origin,
        "baseline": "exclusive",
        "baseline_score": baseline_score,
        "policies": policies.iter().map(|(n, p)| spec_label(n, p)).collect::<Vec<_>>(),
        "summaries": summaries,
    });
    if let Some(dir) = &a.report {
        write_report(dir, path, &a, &summaries, &baseline_score, &results, &policies, &doc)?;
    }
    if let Some(file) = &a.trace {
        let (name, params) = match &a.trace_policy {
            Some(spec) => parse_spec(spec).map_err(|e| bad_input(format!("--trace-policy: {e}")))?,
            None => policies[0].clone(),
        };
        write_trace(&scenario, &name, &params, a.seed, a.trace_order, file)?;
    }
    if a.json {
        println!("{doc}");
        return Ok(());
    }
    for (title, pick, _) in SECTIONS {
        println!("Increase rate of {title} vs exclusive (sequential):");
        let rows: Vec<Vec<String>> = summaries.iter().map(|s| rate_row(&s.policy, pick(s))).collect();
        println!("{}\n", table(&["policy", "median", "q1", "q3", "min", "max", "mean"], &rows));
    }
    println!("Performance score (seed 004: best makespan of all strategies on the order / this one's; 1 = best):");
    let mut rows = vec![score_row("exclusive", &baseline_score)];
    rows.extend(summaries.iter().map(|s| score_row(&s.policy, &s.score)));
    println!("{}\n", table(&["policy", "median", "q1", "q3", "min", "max", "mean"], &rows));
    if let Some(dir) = &a.report {
        println!("report: {}", dir.join("index.html").display());
    }
    if let Some(file) = &a.trace {
        println!("trace: {}", file.display());
    }
    println!("slowdowns: {}", scenario.origin);
    println!(
        "{jobs} jobs, {} orders, seed {}, {elapsed:.2} s",
        a.orders, a.seed
    );
    Ok(())
}

type Pick = fn(&PolicySummary) -> &Spread;

/// Seed 000's turnaround is a job's own run time; ours counts the wait
/// behind the list too, so both are shown, seed 000's figures first. The
/// third field names the figure's files.
const SECTIONS: [(&str, Pick, &str); 5] = [
    ("average run time (seed 000 fig. 11, its `turn-around time`)", |s| &s.avg_slowdown, "fig11-avg-run-time"),
    ("makespan (seed 000 fig. 12)", |s| &s.makespan, "fig12-makespan"),
    ("worst run time (seed 000 fig. 13)", |s| &s.worst_slowdown, "fig13-worst-run-time"),
    ("average turnaround, queue wait included", |s| &s.avg_turnaround, "avg-turnaround"),
    ("worst turnaround, queue wait included", |s| &s.worst_turnaround, "worst-turnaround"),
];

fn score_row(name: &str, x: &Spread) -> Vec<String> {
    let mut r = vec![name.to_string()];
    r.extend([x.median, x.q1, x.q3, x.min, x.max, x.mean].map(|v| format!("{v:.3}")));
    r
}

fn rate_row(name: &str, x: &Spread) -> Vec<String> {
    let mut r = vec![name.to_string()];
    r.extend([x.median, x.q1, x.q3, x.min, x.max, x.mean].map(pct));
    r
}

fn boxes(summaries: &[PolicySummary], pick: Pick) -> Vec<BoxStats> {
    summaries
        .iter()
        .map(|s| {
            let x = pick(s);
            BoxStats { label: s.policy.clone(), min: x.min, q1: x.q1, median: x.median, q3: x.q3, max: x.max, mean: x.mean }
        })
        .collect()
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

fn write_trace(scenario: &Scenario, name: &str, params: &Params, seed: u64, index: usize, file: &Path) -> anyhow::Result<()> {
    let (jobs, trace) = trace_of(scenario, name, params, seed, index).map_err(|e| match e {
        MonteCarloError::Policy(m) => bad_input(m),
        other => anyhow::Error::new(other),
    })?;
    let trace = trace.export(&scenario.platform, &jobs);
    let text = if file.extension().is_some_and(|e| e == "json") {
        serde_json::to_string_pretty(&trace)?
    } else {
        trace.to_csv()
    };
    write_file(file, &text)
}

#[allow(clippy::too_many_arguments)]
fn write_report(
    dir: &Path,
    scenario: &Path,
    a: &SimulateArgs,
    summaries: &[PolicySummary],
    baseline_score: &Spread,
    results: &[OrderResult],
    policies: &[(String, Params)],
    doc: &serde_json::Value,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    let headers = ["policy", "median", "q1", "q3", "min", "max", "mean"];
    let mut page = Page::new(&format!("Simulation of {}", scenario.display()));
    page.note(&format!(
        "{} jobs, {} random orders (seed {}), every order run under each policy and under exclusive (sequential execution). \
         Rates are (policy - exclusive) / exclusive on the same order; boxes span the quartiles, whiskers the whole range, \
         the red line is the median and the dot the mean. Slowdowns: {}.",
        doc["jobs"], a.orders, a.seed, doc["slowdowns"].as_str().unwrap_or("")
    ));
    let mut csv = String::from("policy,metric,median,q1,q3,min,max,mean\n");
    let push_csv = |csv: &mut String, policy: &str, metric: &str, x: &Spread| {
        csv.push_str(&format!("{},{metric},{},{},{},{},{},{}\n", csv_field(policy), x.median, x.q1, x.q3, x.min, x.max, x.mean));
    };
    for (title, pick, file) in SECTIONS {
        let plot = BoxPlot {
            title: format!("Increase rate of {title}"),
            y_label: "increase rate vs sequential".into(),
            boxes: boxes(summaries, pick),
            percent: true,
            reference: Some(0.0),
        };
        let svg = plot.svg();
        write_file(&dir.join(format!("{file}.svg")), &svg)?;
        let rows: Vec<Vec<String>> = summaries.iter().map(|s| rate_row(&s.policy, pick(s))).collect();
        page.section(&format!("Increase rate of {title}")).svg(&svg).table(&headers, &rows);
        for s in summaries {
            push_csv(&mut csv, &s.policy, file, pick(s));
        }
    }
    let mut score_boxes = vec![BoxStats {
        label: "exclusive".into(),
        min: baseline_score.min,
        q1: baseline_score.q1,
        median: baseline_score.median,
        q3: baseline_score.q3,
        max: baseline_score.max,
        mean: baseline_score.mean,
    }];
    score_boxes.extend(boxes(summaries, |s| &s.score));
    let svg = BoxPlot {
        title: "Performance score (seed 004)".into(),
        y_label: "best makespan / own makespan".into(),
        boxes: score_boxes,
        percent: false,
        reference: Some(1.0),
    }
    .svg();
    write_file(&dir.join("score.svg"), &svg)?;
    let mut rows = vec![score_row("exclusive", baseline_score)];
    rows.extend(summaries.iter().map(|s| score_row(&s.policy, &s.score)));
    page.section("Performance score (seed 004)")
        .paragraph("On each order, the shortest makespan of all strategies run on it (every policy and exclusive) over this strategy's: 1 is the best strategy on that order.")
        .svg(&svg)
        .table(&headers, &rows);
    push_csv(&mut csv, "exclusive", "score", baseline_score);
    for s in summaries {
        push_csv(&mut csv, &s.policy, "score", &s.score);
    }
    write_file(&dir.join("summary.csv"), &csv)?;
    write_file(&dir.join("summary.json"), &serde_json::to_string_pretty(doc)?)?;
    let mut orders = String::from("order,policy,makespan,avg_turnaround,worst_turnaround,avg_slowdown,worst_slowdown,avg_wait,score\n");
    for r in results {
        let line = |orders: &mut String, name: &str, m: &cosched_model::metrics::Metrics, score: f64| {
            orders.push_str(&format!(
                "{},{},{},{},{},{},{},{},{}\n",
                r.index,
                csv_field(name),
                m.makespan,
                m.avg_turnaround,
                m.worst_turnaround,
                m.avg_slowdown,
                m.worst_slowdown,
                m.avg_wait,
                score
            ));
        };
        line(&mut orders, "exclusive", &r.baseline, r.baseline_score);
        for ((n, p), o) in policies.iter().zip(&r.outcomes) {
            line(&mut orders, &spec_label(n, p), &o.metrics, o.score);
        }
    }
    write_file(&dir.join("orders.csv"), &orders)?;
    page.section("Files")
        .link("summary.csv", "summary.csv: every table above")
        .link("summary.json", "summary.json: the same as `cosched simulate --json`")
        .link("orders.csv", "orders.csv: each order's absolute figures under every strategy (seconds, slowdown ratios)");
    write_file(&dir.join("index.html"), &page.render())
}

/// Policy labels hold commas (`name:k=v,k=v`), so they are quoted in CSV.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn pct(rate: f64) -> String {
    format!("{:+.1} %", rate * 100.0)
}
