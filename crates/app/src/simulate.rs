//! `cosched simulate`: the SX-Aurora paper's Monte-Carlo evaluation of policies on a
//! scenario, as increase rates against sequential execution; the report
//! directory's box plots, HTML, CSV and JSON; one order's event trace.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cosched_report::boxplot::{BoxPlot, BoxStats};
use cosched_report::csv_text;
use cosched_report::html::Page;
use cosched_model::placement::{strategy_by_name, Strategy, STRATEGIES};
use cosched_sched::montecarlo::{
    default_policies, labels, per_order, run_orders_with, summarize_labelled, trace_of_with, MonteCarloError, OrderResult, PerOrder, PolicySummary,
    Spread, SAMPLE_EVERY_S,
};
use cosched_model::compare::{paired, Paired, Verdict};
use cosched_sched::oracle::{oracle, Objective, Oracle, Search};
use cosched_sched::scenario::{MatrixSource, MeasuredMatrix, Measurements, Scenario, Statistic, Told};
use cosched_sched::{Params, Spec};
use cosched_store::{CampaignKind, CampaignParams, CampaignRecord, Store};
use serde::Serialize;

use crate::common::{create_dir, db_path, open_read_only_store, write_file, UsedCampaign};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use crate::policy::Policies;

/// A policy as given (the label keeps only what the spec says), resolved
/// once to refuse mistakes now: a registered one or a Lua script, loaded
/// and checked.
fn policy_spec(spec: &str) -> Result<Spec, String> {
    crate::policy::parse(spec).map(|p| p.spec)
}

#[derive(Debug, Clone)]
pub struct SimulateRequest {
    /// Scenario TOML: pools, programs and slowdowns.
    pub scenario: PathBuf,
    /// Policies as NAME or NAME:KEY=VALUE,...; empty: the defaults.
    pub policies: Vec<String>,
    /// Random orders, and their seed.
    pub orders: usize,
    pub seed: u64,
    /// Directory of the HTML report, SVGs, CSV and JSON.
    pub report: Option<PathBuf>,
    /// File of one order's event trace (JSON if it ends in .json, else CSV).
    pub trace: Option<PathBuf>,
    pub trace_order: usize,
    /// The policy whose trace is written; default: the first.
    pub trace_policy: Option<String>,
    /// Where a scenario's `[slowdown] store` or `profiles` are read from.
    pub db: Option<PathBuf>,
    /// Placement strategies by name (a scenario with a `[topology]`);
    /// several run side by side on the same orders. Empty: the scenario's.
    pub placements: Vec<String>,
    /// What the policies are shown instead of the scenario's slowdowns:
    /// `blind` (every pair 1), `scaled:K[,K...]` (each cell's excess
    /// scaled by K; several are a sweep) or a scenario file over the same
    /// programs; the runs then read progress every 0.25 s of virtual time
    /// (issue 38).
    pub told: Option<String>,
}

/// Every registered placement strategy's name, as `--placement` takes them.
pub fn placement_names() -> Vec<&'static str> {
    STRATEGIES.iter().map(|e| e.name).collect()
}

/// The columns of the placement table of a [`SimulateReport`]: medians
/// over the orders, with the quartiles in brackets.
pub const PLACEMENT_HEAD: [&str; 5] = ["policy", "placement", "makespan s", "worst slowdown", "mean slowdown"];

/// The columns of every table of a [`SimulateReport`].
pub const HEAD: [&str; 7] = ["policy", "median", "q1", "q3", "min", "max", "mean"];

/// The columns of the paired table of a [`SimulateReport`].
pub const PAIRED_HEAD: [&str; 4] = ["policy", "worst slowdown", "makespan", "mean turnaround"];

/// The columns of the per-order table of a [`SimulateReport`].
pub const PER_ORDER_HEAD: [&str; 4] = ["policy", "mean turnaround s", "worst slowdown", "makespan s"];

/// The columns of the misprediction sweep of a [`SimulateReport`].
pub const SWEEP_HEAD: [&str; 5] = ["K", "policy", "worst slowdown", "makespan", "mean turnaround"];

/// The columns of the oracle table of a [`SimulateReport`].
pub const ORACLE_HEAD: [&str; 3] = ["", "makespan s", "vs the oracle's best makespan"];

/// `cosched simulate`: `--json` and the report's summary.json are its
/// `Serialize`, the tables its [`Render`].
#[derive(Debug, Serialize)]
pub struct SimulateReport {
    pub scenario: String,
    pub jobs: usize,
    pub nodes: usize,
    pub orders: usize,
    pub seed: u64,
    pub elapsed_seconds: f64,
    /// Where the slowdowns came from.
    pub slowdowns: String,
    /// The stored campaigns the scenario's measured cells and host loads
    /// came from; empty when it read none.
    pub campaigns: Vec<UsedCampaign>,
    /// What the rates are against: always `exclusive`.
    pub baseline: &'static str,
    /// Exclusive execution's performance score.
    pub baseline_score: Spread,
    /// The policies as given.
    pub policies: Vec<String>,
    /// The scenario's topology file, when it has one.
    pub topology: Option<String>,
    /// The placement strategies the outcomes ran under.
    pub placements: Vec<&'static str>,
    /// On a scenario with a topology: each policy under each placement in
    /// absolute figures, medians over the orders with the quartiles.
    pub placement_table: Option<Vec<PlacementRow>>,
    /// What the policies were shown when not the scenario's slowdowns
    /// (`--told`), in words.
    pub told: Option<String>,
    /// `--told scaled:K,K,...`: for each scale, each policy after the
    /// first against the first on the same orders (the tables above are
    /// the first scale's); empty otherwise.
    pub told_sweep: Vec<SweepRow>,
    /// Each policy after the first against the first, order by order:
    /// worst slowdown, makespan and mean turnaround (`model::compare`);
    /// empty with one policy.
    pub paired: Vec<PairedRow>,
    /// Each policy's per-order figures in seconds and ratios, with the
    /// spread of its per-order difference to the first.
    pub per_order: Vec<PerOrder>,
    /// Each policy's increase rates and score over the orders.
    pub summaries: Vec<PolicySummary>,
    /// The oracle's best schedules and each policy's median makespan
    /// against them, or why there is none.
    pub oracle: OracleFigures,
    pub median_makespans: Vec<MedianMakespan>,
    /// What Lua policies reported (script errors, fallbacks), one line per
    /// kind with its count and first occurrence; empty without them.
    pub policy_notes: Vec<String>,
    /// What the placement table is on (topology, levels).
    #[serde(skip)]
    pub placement_title: Option<String>,
    /// The report's index.html and the trace file, when written.
    #[serde(skip)]
    pub index: Option<PathBuf>,
    #[serde(skip)]
    pub trace: Option<PathBuf>,
}

/// One policy under one placement ([`PLACEMENT_HEAD`]): `median (q1-q3)`.
#[derive(Debug, Clone, Serialize)]
pub struct PlacementRow {
    pub policy: String,
    pub placement: String,
    pub makespan: String,
    pub worst_slowdown: String,
    pub mean_slowdown: String,
}

/// One policy against the first on the same orders: each figure's median
/// paired relative difference with its interval (`None`: no pair).
#[derive(Debug, Clone, Serialize)]
pub struct PairedRow {
    pub policy: String,
    pub against: String,
    pub worst_slowdown: Option<Paired>,
    pub makespan: Option<Paired>,
    pub mean_turnaround: Option<Paired>,
}

/// One scale of a `--told scaled:K,...` sweep: the told cells are
/// `1 + scale (s - 1)`; the paired rows as [`SimulateReport::paired`].
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub scale: f64,
    pub paired: Vec<PairedRow>,
}

/// A policy's median makespan over the orders, seconds.
#[derive(Debug, Clone, Serialize)]
pub struct MedianMakespan {
    pub policy: String,
    pub seconds: f64,
}

/// The oracle of a scenario, or why it has none (`{"none": why}`).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum OracleFigures {
    Found {
        makespan: BestMakespan,
        mean_turnaround: BestTurnaround,
        makespan_lower_bound: f64,
        policies: Vec<AboveOracle>,
    },
    None {
        none: String,
    },
}

/// The schedule of the shortest makespan, and its mean turnaround.
#[derive(Debug, Clone, Serialize)]
pub struct BestMakespan {
    pub value: f64,
    pub search: Search,
    pub mean_turnaround: f64,
}

/// The schedule of the shortest mean turnaround, and its makespan.
#[derive(Debug, Clone, Serialize)]
pub struct BestTurnaround {
    pub value: f64,
    pub search: Search,
    pub makespan: f64,
}

/// A policy's median makespan against the oracle's best.
#[derive(Debug, Clone, Serialize)]
pub struct AboveOracle {
    pub policy: String,
    pub median_makespan: f64,
    pub above_oracle: f64,
}

impl Render for SimulateReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        for (title, pick, _) in SECTIONS {
            d.line(format!("Increase rate of {title} vs exclusive (sequential):"));
            d.table(&HEAD, self.summaries.iter().map(|s| rate_row(&s.policy, pick(s))).collect()).line("");
        }
        if let Some(first) = self.paired.first() {
            d.line(format!(
                "Against {}, order by order (median of policy / {} - 1 [{}]; * resolved):",
                first.against,
                first.against,
                cosched_report::interval_name(self.paired.iter().flat_map(|p| [&p.worst_slowdown, &p.makespan, &p.mean_turnaround]).flatten().map(|c| c.n))
            ));
            d.table(&PAIRED_HEAD, self.paired.iter().map(paired_row).collect()).line("");
        }
        if self.per_order.len() > 1 {
            d.line("Per order (median [q1, q3] over the orders; under each policy after the first, each order's policy / first - 1):");
            d.table(&PER_ORDER_HEAD, per_order_rows(&self.per_order)).line("");
        }
        if let Some(first) = self.told_sweep.first().and_then(|s| s.paired.first()) {
            d.line(format!(
                "Misprediction sweep: policies told 1 + K x (s - 1) for each true cell s (K = 0 blind, 1 the truth); against {}, order by order (* resolved):",
                first.against
            ));
            let rows = self
                .told_sweep
                .iter()
                .flat_map(|s| s.paired.iter().map(move |r| std::iter::once(format!("{}", s.scale)).chain(paired_row(r)).collect()))
                .collect();
            d.table(&SWEEP_HEAD, rows).line("");
        }
        d.line("Performance score (nOS-V: best makespan of all strategies on the order / this one's; 1 = best):");
        d.table(&HEAD, score_rows(&self.baseline_score, &self.summaries)).line("");
        if let (Some(title), Some(rows)) = (&self.placement_title, &self.placement_table) {
            d.line(format!("Placement on {title} (medians over the orders, quartiles in brackets):"));
            d.table(&PLACEMENT_HEAD, placement_rows(rows)).line("");
        }
        match &self.oracle {
            OracleFigures::Found { makespan: m, mean_turnaround: t, makespan_lower_bound: bound, policies } => {
                let mut rows = vec![
                    vec![format!("oracle, best makespan ({})", search(&m.search)), format!("{:.3}", m.value), "-".into()],
                    vec![
                        format!("oracle, best mean turnaround {:.3} s ({})", t.value, search(&t.search)),
                        format!("{:.3}", t.makespan),
                        pct(t.makespan / m.value - 1.0),
                    ],
                    vec!["lower bound of any schedule".into(), format!("{bound:.3}"), pct(bound / m.value - 1.0)],
                ];
                rows.extend(policies.iter().map(|p| vec![format!("{}, median", p.policy), format!("{:.3}", p.median_makespan), pct(p.above_oracle)]));
                d.line("Oracle (the best list schedule of the scenario's jobs, knowing every slowdown; docs/commands.md, simulate):");
                d.table(&ORACLE_HEAD, rows).line("");
            }
            OracleFigures::None { none } => {
                d.line(format!("oracle: none ({none})\n"));
            }
        }
        if let Some(index) = &self.index {
            d.line(format!("report: {}", index.display()));
        }
        if let Some(file) = &self.trace {
            d.line(format!("trace: {}", file.display()));
        }
        for n in &self.policy_notes {
            d.line(format!("lua policy: {n}"));
        }
        d.line(format!("slowdowns: {}", self.slowdowns));
        if let Some(told) = &self.told {
            d.line(format!("policies told: {told}"));
        }
        for line in crate::common::describe_campaigns(&self.campaigns) {
            d.line(format!("from {line}"));
        }
        d.line(format!("{} jobs, {} orders, seed {}, {:.2} s", self.jobs, self.orders, self.seed, self.elapsed_seconds));
        d
    }
}

fn score_rows(baseline: &Spread, summaries: &[PolicySummary]) -> Vec<Vec<String>> {
    let mut rows = vec![score_row("exclusive", baseline)];
    rows.extend(summaries.iter().map(|s| score_row(&s.policy, &s.score)));
    rows
}

fn per_order_rows(rows: &[PerOrder]) -> Vec<Vec<String>> {
    let num = |x: &Spread| format!("{:.3} [{:.3}, {:.3}]", x.median, x.q1, x.q3);
    let rel = |x: &Spread| format!("{:+.1} % [{:+.1}, {:+.1}]", x.median * 100.0, x.q1 * 100.0, x.q3 * 100.0);
    let mut out = Vec::new();
    for r in rows {
        out.push(vec![r.policy.clone(), num(&r.mean_turnaround), num(&r.worst_slowdown), num(&r.makespan)]);
        if let Some(p) = &r.paired {
            out.push(vec![format!("  vs {}", p.against), rel(&p.mean_turnaround), rel(&p.worst_slowdown), rel(&p.makespan)]);
        }
    }
    out
}

fn paired_row(r: &PairedRow) -> Vec<String> {
    let cell = |p: &Option<Paired>| match p {
        Some(p) => format!(
            "{:+.1} % [{:+.1}, {:+.1}]{}",
            p.median_rel_diff * 100.0,
            p.ci.0 * 100.0,
            p.ci.1 * 100.0,
            if p.verdict == Verdict::Unresolved { "" } else { " *" }
        ),
        None => "-".into(),
    };
    vec![r.policy.clone(), cell(&r.worst_slowdown), cell(&r.makespan), cell(&r.mean_turnaround)]
}

/// Each policy after the first against the first on the same orders.
fn paired_rows(labels: &[String], results: &[OrderResult]) -> Vec<PairedRow> {
    let col = |i: usize, f: fn(&cosched_model::metrics::Metrics) -> f64| -> Vec<f64> { results.iter().map(|r| f(&r.outcomes[i].metrics)).collect() };
    (1..labels.len())
        .map(|i| PairedRow {
            policy: labels[i].clone(),
            against: labels[0].clone(),
            worst_slowdown: paired(&col(i, |m| m.worst_slowdown), &col(0, |m| m.worst_slowdown)),
            makespan: paired(&col(i, |m| m.makespan), &col(0, |m| m.makespan)),
            mean_turnaround: paired(&col(i, |m| m.avg_turnaround), &col(0, |m| m.avg_turnaround)),
        })
        .collect()
}

/// The scales of `--told scaled:K[,K...]`, `None` for another `--told`.
fn told_scales(told: &str) -> anyhow::Result<Option<Vec<f64>>> {
    let Some(list) = told.strip_prefix("scaled:") else { return Ok(None) };
    let scales = list
        .split(',')
        .map(|k| match k.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(bad_input(format!("--told scaled:{list}: `{k}` is not a scale (a number >= 0, e.g. scaled:0,0.5,1)"))),
        })
        .collect::<anyhow::Result<Vec<f64>>>()?;
    Ok(Some(scales))
}

/// What `--told` names: `blind`, `scaled:K` (the first of a sweep), or a
/// scenario file over the same programs (its measured cells fetched as
/// the scenario's are).
fn told_of(scenario: &Scenario, told: &str, measured: &ScenarioMeasurements) -> anyhow::Result<(Told, String)> {
    if told == "blind" {
        return Ok((Told::Blind, "blind (every pair 1)".into()));
    }
    if let Some(scales) = told_scales(told)? {
        let t = scenario.told_scaled(scales[0]).map_err(|e| bad_input(format!("--told: {e}")))?;
        let words = match &t {
            Told::Matrix { origin, .. } => origin.clone(),
            Told::Blind => unreachable!("a scaled matrix is a matrix"),
        };
        return Ok((t, words));
    }
    let path = Path::new(told);
    let other = Scenario::load_with(path, Some(measured)).map_err(|e| bad_input(format!("--told: {e}")))?;
    let t = scenario.told_from(&other).map_err(|e| bad_input(format!("--told: {}: {e}", path.display())))?;
    Ok((t, format!("{} ({})", path.display(), other.origin)))
}

fn placement_rows(rows: &[PlacementRow]) -> Vec<Vec<String>> {
    rows.iter().map(|r| vec![r.policy.clone(), r.placement.clone(), r.makespan.clone(), r.worst_slowdown.clone(), r.mean_slowdown.clone()]).collect()
}

/// Measurements for scenarios: pairs campaigns and profiles from the store
/// (opened only if a scenario asks), matrices from `cosched pairs --json` files.
pub(crate) struct ScenarioMeasurements<'a> {
    db: &'a Path,
    store: std::cell::OnceCell<Result<Store, String>>,
    /// The campaigns read, in the order the scenario asked for them.
    used: std::cell::RefCell<Vec<UsedCampaign>>,
}

impl<'a> ScenarioMeasurements<'a> {
    /// Reads `db` only if a scenario asks for stored figures (`cosched simulate --swf` shares it).
    pub(crate) fn new(db: &'a Path) -> ScenarioMeasurements<'a> {
        ScenarioMeasurements { db, store: std::cell::OnceCell::new(), used: Default::default() }
    }

    pub(crate) fn used(&self) -> Vec<UsedCampaign> {
        self.used.borrow().clone()
    }

    fn store(&self) -> Result<&Store, String> {
        self.store
            .get_or_init(|| open_read_only_store(self.db).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The campaign the workload's figures of `kind` come from
    /// (`Store::figures_campaign`), noted as used.
    fn campaign(&self, kind: CampaignKind, workload: &str) -> Result<CampaignRecord, String> {
        let store = self.store()?;
        let c = store
            .figures_campaign(kind, workload)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no {} campaign of workload `{workload}` in {}", kind.as_str(), self.db.display()))?;
        let used = UsedCampaign::of(store, &c).map_err(|e| format!("{e:#}"))?;
        let mut all = self.used.borrow_mut();
        if !all.iter().any(|u| u.id == used.id) {
            all.push(used);
        }
        Ok(c)
    }
}

impl Measurements for ScenarioMeasurements<'_> {
    fn matrix(&self, source: &MatrixSource, statistic: Statistic) -> Result<MeasuredMatrix, String> {
        match source {
            MatrixSource::Store { workload } => {
                let c = self.campaign(CampaignKind::Pairs, workload)?;
                let runs = self.store()?.pair_runs(c.id).map_err(|e| e.to_string())?;
                // The campaign's own job list keeps jobs in workload order.
                let mut jobs: Vec<String> = match c.parameters().map_err(|e| e.to_string())? {
                    CampaignParams::Pairs(p) => p.jobs.into_iter().map(|j| j.name).collect(),
                    _ => Vec::new(),
                };
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
                let text = cosched_sched::scenario::read_bounded(path, cosched_sched::scenario::limits::MAX_INPUT_BYTES).map_err(|e| format!("{}: {e}", path.display()))?;
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
                Some(p.summary.summary.host_load_mean)
            })
            .collect())
    }
}

/// Reads and validates a scenario file as `simulate` would, fetching any
/// measured slowdowns it names from the database at `db` (default path if
/// `None`); what `cosched check` runs on scenario files.
pub fn load_scenario(path: &Path, db: Option<&Path>) -> Result<Scenario, String> {
    let db = db_path(db);
    let measured = ScenarioMeasurements { db: &db, store: std::cell::OnceCell::new(), used: Default::default() };
    Scenario::load_with(path, Some(&measured)).map_err(|e| e.to_string())
}

pub fn simulate(a: &SimulateRequest) -> anyhow::Result<SimulateReport> {
    let path = &a.scenario;
    let db = db_path(a.db.as_deref());
    let measured = ScenarioMeasurements { db: &db, store: std::cell::OnceCell::new(), used: Default::default() };
    let mut scenario = Scenario::load_with(path, Some(&measured)).map_err(|e| bad_input(e.to_string()))?;
    if a.orders == 0 {
        return Err(bad_input("--orders must be at least 1"));
    }
    let mut told_words = None;
    if let Some(told) = &a.told {
        let (t, words) = told_of(&scenario, told, &measured)?;
        scenario = scenario.with_told(t);
        told_words = Some(format!("{words}; progress read every {SAMPLE_EVERY_S} s of virtual time, so policies also see online estimates"));
    }
    let mut strategies: Vec<Strategy> = Vec::new();
    for name in &a.placements {
        let s = strategy_by_name(name).map_err(|e| bad_input(format!("--placement: {e}")))?;
        if strategies.contains(&s) {
            return Err(bad_input(format!("--placement: `{name}` given twice")));
        }
        strategies.push(s);
    }
    if let Some(&first) = strategies.first() {
        scenario = scenario.with_placement(first).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    }
    let given = if a.policies.is_empty() {
        default_policies()
    } else {
        a.policies
            .iter()
            .map(|s| policy_spec(s).map_err(|e| bad_input(format!("--policy: {e}"))))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    for s in given.iter().filter_map(|s| s.placement.map(|p| (s, p))) {
        scenario.with_placement(s.1).map_err(|e| bad_input(format!("--policy {}: {}: {e}", s.0, path.display())))?;
    }
    // One placement is the scenario's own; several are a sweep that sets
    // `placement=NAME` on each spec, side by side on the same orders.
    let policies: Vec<Spec> = if strategies.len() > 1 {
        if let Some(s) = given.iter().find(|s| s.placement.is_some()) {
            return Err(bad_input(format!("--policy {s} names its placement; --placement with several strategies sets it on every policy")));
        }
        strategies.iter().flat_map(|&st| given.iter().map(move |s| s.clone().placed(Some(st)))).collect()
    } else {
        given.clone()
    };
    let makers = Policies::simulation();
    let build = |n: &str, p: &Params| makers.build(n, p);
    let started = Instant::now();
    let results = run_orders_with(&scenario, &policies, a.orders, a.seed, &build).map_err(|e| match e {
        MonteCarloError::Policy(m) | MonteCarloError::Input(m) => bad_input(m),
        other => anyhow::Error::new(other),
    })?;
    let labels = labels(&policies);
    let summaries = summarize_labelled(&labels, &results);
    let paired = paired_rows(&labels, &results);
    let per_order = per_order(&labels, &results);
    let mut told_sweep = Vec::new();
    if let Some(scales) = a.told.as_deref().map(told_scales).transpose()?.flatten().filter(|s| s.len() > 1) {
        told_sweep.push(SweepRow { scale: scales[0], paired: paired.clone() });
        for &k in &scales[1..] {
            let told = scenario.told_scaled(k).map_err(|e| bad_input(format!("--told: {e}")))?;
            let at_k = scenario.clone().with_told(told);
            let r = run_orders_with(&at_k, &policies, a.orders, a.seed, &build).map_err(|e| match e {
                MonteCarloError::Policy(m) | MonteCarloError::Input(m) => bad_input(m),
                other => anyhow::Error::new(other),
            })?;
            told_sweep.push(SweepRow { scale: k, paired: paired_rows(&labels, &r) });
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let jobs = scenario.job_program.len();

    let baseline_score = Spread::of(&results.iter().map(|r| r.baseline_score).collect::<Vec<_>>()).expect("orders >= 1");
    let medians: Vec<(String, f64)> = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let v: Vec<f64> = results.iter().map(|r| r.outcomes[i].metrics.makespan).collect();
            (label.clone(), Spread::of(&v).expect("orders >= 1").median)
        })
        .collect();
    let (placement_title, placement_table) = match placement_table(&scenario, &policies, &results) {
        Some((t, rows)) => (Some(t), Some(rows)),
        None => (None, None),
    };
    let oracle = match best_schedules(&scenario, a.seed) {
        Ok((m, t)) => OracleFigures::Found {
            makespan: BestMakespan { value: m.value, search: m.search, mean_turnaround: m.metrics.avg_turnaround },
            mean_turnaround: BestTurnaround { value: t.value, search: t.search, makespan: t.metrics.makespan },
            makespan_lower_bound: m.makespan_bound,
            policies: medians.iter().map(|(p, v)| AboveOracle { policy: p.clone(), median_makespan: *v, above_oracle: v / m.value - 1.0 }).collect(),
        },
        Err(why) => OracleFigures::None { none: why },
    };
    let mut report = SimulateReport {
        scenario: path.display().to_string(),
        jobs,
        nodes: scenario.nodes,
        orders: a.orders,
        seed: a.seed,
        elapsed_seconds: elapsed,
        slowdowns: scenario.origin.clone(),
        campaigns: measured.used.take(),
        baseline: "exclusive",
        baseline_score,
        policies: given.iter().map(Spec::label).collect(),
        topology: scenario.topology.as_ref().map(|t| t.file.clone()),
        placements: placed_names(&scenario, &policies),
        placement_table,
        told: told_words,
        told_sweep,
        paired,
        per_order,
        summaries,
        oracle,
        median_makespans: medians.into_iter().map(|(policy, seconds)| MedianMakespan { policy, seconds }).collect(),
        policy_notes: makers.log().summary(),
        placement_title,
        index: None,
        trace: None,
    };
    if let Some(dir) = &a.report {
        write_report(dir, path, a, &report, &results, &labels)?;
        report.index = Some(dir.join("index.html"));
    }
    if let Some(file) = &a.trace {
        let spec = match &a.trace_policy {
            Some(spec) => policy_spec(spec).map_err(|e| bad_input(format!("--trace-policy: {e}")))?,
            None => policies[0].clone(),
        };
        write_trace(&scenario, &spec, a.seed, a.trace_order, file, &build)?;
        report.trace = Some(file.clone());
    }
    Ok(report)
}

/// The oracle's best list schedules for makespan and for mean turnaround,
/// when it applies: one node, every job arriving at 0 (a scenario has no
/// arrivals, so only `nodes` can rule it out).
fn best_schedules(scenario: &Scenario, seed: u64) -> Result<(Oracle, Oracle), String> {
    if scenario.nodes != 1 {
        return Err(format!("the oracle schedules one node; this scenario has {}", scenario.nodes));
    }
    if scenario.programs.iter().any(|p| !p.variants.is_empty()) {
        // Its list schedules run each job its own way and its bound assumes so.
        return Err("the oracle does not choose among job variants".into());
    }
    if scenario.by_level() {
        return Err("its slowdowns depend on where jobs are placed, which the oracle's list schedules do not choose".into());
    }
    let all: Vec<usize> = (0..scenario.job_program.len()).collect();
    let (jobs, table) = (scenario.jobs_in(&all), scenario.source_in(&all));
    let best = |o| oracle(&scenario.platform, &jobs, &table, o, seed).map_err(|e| e.to_string());
    Ok((best(Objective::Makespan)?, best(Objective::MeanTurnaround)?))
}

fn search(s: &Search) -> String {
    match s {
        Search::Exhaustive { schedules } => format!("exhaustive, {schedules} schedules"),
        Search::Local { schedules, seed } => format!("local search, best of {schedules} schedules within its budget, seed {seed}"),
    }
}

type Pick = fn(&PolicySummary) -> &Spread;

/// The SX-Aurora paper's turnaround is a job's own run time; ours counts the wait
/// behind the list too, so both are shown, the SX-Aurora paper's figures first. The
/// third field names the figure's files.
const SECTIONS: [(&str, Pick, &str); 5] = [
    ("average run time (SX-Aurora paper fig. 11, its `turn-around time`)", |s| &s.avg_slowdown, "fig11-avg-run-time"),
    ("makespan (SX-Aurora paper fig. 12)", |s| &s.makespan, "fig12-makespan"),
    ("worst run time (SX-Aurora paper fig. 13)", |s| &s.worst_slowdown, "fig13-worst-run-time"),
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

fn write_trace(
    scenario: &Scenario,
    spec: &Spec,
    seed: u64,
    index: usize,
    file: &Path,
    build: &cosched_sched::montecarlo::Build<'_>,
) -> anyhow::Result<()> {
    let (jobs, trace) = trace_of_with(scenario, spec, seed, index, build).map_err(|e| match e {
        MonteCarloError::Policy(m) | MonteCarloError::Input(m) => bad_input(m),
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

fn write_report(dir: &Path, scenario: &Path, a: &SimulateRequest, doc: &SimulateReport, results: &[OrderResult], labels: &[String]) -> anyhow::Result<()> {
    let (summaries, baseline_score) = (&doc.summaries, &doc.baseline_score);
    create_dir(dir)?;
    let headers = HEAD;
    let mut page = Page::new(&format!("Simulation of {}", scenario.display()));
    page.note(&format!(
        "{} jobs, {} random orders (seed {}), every order run under each policy and under exclusive (sequential execution). \
         Rates are (policy - exclusive) / exclusive on the same order; boxes span the quartiles, whiskers the whole range, \
         the red line is the median and the dot the mean. Slowdowns: {}.",
        doc.jobs, a.orders, a.seed, doc.slowdowns
    ));
    if let (Some(title), Some(rows)) = (&doc.placement_title, &doc.placement_table) {
        page.section("Placement")
            .paragraph(&format!("{title}. Each policy under each placement strategy, medians over the orders with the quartiles (docs/placement.md)."))
            .table(&PLACEMENT_HEAD, &placement_rows(rows));
    }
    let mut csv: Vec<Vec<String>> = Vec::new();
    let push_csv = |csv: &mut Vec<Vec<String>>, policy: &str, metric: &str, x: &Spread| {
        let figures = [x.median, x.q1, x.q3, x.min, x.max, x.mean].map(|v| v.to_string());
        csv.push([policy.to_string(), metric.to_string()].into_iter().chain(figures).collect());
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
        title: "Performance score (nOS-V)".into(),
        y_label: "best makespan / own makespan".into(),
        boxes: score_boxes,
        percent: false,
        reference: Some(1.0),
    }
    .svg();
    write_file(&dir.join("score.svg"), &svg)?;
    let rows = score_rows(baseline_score, summaries);
    page.section("Performance score (nOS-V)")
        .paragraph("On each order, the shortest makespan of all strategies run on it (every policy and exclusive) over this strategy's: 1 is the best strategy on that order.")
        .svg(&svg)
        .table(&headers, &rows);
    push_csv(&mut csv, "exclusive", "score", baseline_score);
    for s in summaries {
        push_csv(&mut csv, &s.policy, "score", &s.score);
    }
    write_file(&dir.join("summary.csv"), &csv_text(&["policy", "metric", "median", "q1", "q3", "min", "max", "mean"], csv))?;
    write_file(&dir.join("summary.json"), &serde_json::to_string_pretty(doc)?)?;
    let mut orders: Vec<Vec<String>> = Vec::new();
    for r in results {
        let line = |orders: &mut Vec<Vec<String>>, name: &str, m: &cosched_model::metrics::Metrics, score: f64| {
            let figures = [m.makespan, m.avg_turnaround, m.worst_turnaround, m.avg_slowdown, m.worst_slowdown, m.avg_wait, score];
            orders.push([r.index.to_string(), name.to_string()].into_iter().chain(figures.map(|v| v.to_string())).collect());
        };
        line(&mut orders, "exclusive", &r.baseline, r.baseline_score);
        for (label, o) in labels.iter().zip(&r.outcomes) {
            line(&mut orders, label, &o.metrics, o.score);
        }
    }
    let head = ["order", "policy", "makespan", "avg_turnaround", "worst_turnaround", "avg_slowdown", "worst_slowdown", "avg_wait", "score"];
    write_file(&dir.join("orders.csv"), &csv_text(&head, orders))?;
    page.section("Files")
        .link("summary.csv", "summary.csv: every table above")
        .link("summary.json", "summary.json: the same as `cosched simulate --json`")
        .link("orders.csv", "orders.csv: each order's absolute figures under every strategy (seconds, slowdown ratios)");
    write_file(&dir.join("index.html"), &page.render())
}

fn pct(rate: f64) -> String {
    format!("{:+.1} %", rate * 100.0)
}

/// The strategy each outcome ran under: its spec's, else the scenario's
/// own; `None` without a topology.
fn placed_name(scenario: &Scenario, spec: &Spec) -> Option<&'static str> {
    scenario.placement().map(|own| spec.placement_name().unwrap_or(own.name()))
}

/// The strategies the outcomes ran under, each once, in order; none
/// without a topology.
fn placed_names(scenario: &Scenario, policies: &[Spec]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for n in policies.iter().filter_map(|s| placed_name(scenario, s)) {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
}

/// Each policy under each placement in absolute figures, medians over the
/// orders with the quartiles: what placement changes, side by side.
fn placement_table(scenario: &Scenario, policies: &[Spec], results: &[OrderResult]) -> Option<(String, Vec<PlacementRow>)> {
    let topo = scenario.topology.as_ref()?;
    let mut rows = Vec::new();
    for (col, spec) in policies.iter().enumerate() {
        let cell = |f: fn(&cosched_model::metrics::Metrics) -> f64, digits: usize| {
            let v: Vec<f64> = results.iter().map(|r| f(&r.outcomes[col].metrics)).collect();
            let x = Spread::of(&v).expect("orders >= 1");
            format!("{:.d$} ({:.d$}-{:.d$})", x.median, x.q1, x.q3, d = digits)
        };
        rows.push(PlacementRow {
            policy: spec.policy_label(),
            placement: placed_name(scenario, spec).unwrap_or("-").to_string(),
            makespan: cell(|m| m.makespan, 1),
            worst_slowdown: cell(|m| m.worst_slowdown, 3),
            mean_slowdown: cell(|m| m.avg_slowdown, 3),
        });
    }
    let levels: Vec<&str> = topo.levels.levels().iter().map(|l| l.name()).collect();
    let title = format!(
        "{} ({} PUs); pair slowdowns by sharing level: {}",
        topo.file,
        topo.pus,
        if levels.is_empty() { "none given, one number per pair".to_string() } else { levels.join(", ") }
    );
    Some((title, rows))
}
