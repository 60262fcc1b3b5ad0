//! `cosched evaluate`: policies compared on real runs of the same seeded
//! job orders, until their difference is resolved or a budget is spent,
//! beside the same comparison in the simulator and the offline oracle.
//!
//! Each order k is one round: a solo pass (one job of each program alone: the round's
//! solo references), then every policy on the workload's jobs listed in
//! the seed's order k (`sched::montecarlo::order`, the orders the SX-Aurora paper's
//! simulation draws), in a rotated sequence so the node's drift favours
//! none. After each round, each policy is compared with the baseline on
//! the same orders (`model::compare::paired`); the series stops once every
//! comparison of the chosen figure is resolved after the minimum number of
//! orders, or when the orders or the time run out, and says which. The
//! cache regime of each round (the CPU 0-1 round trip read before its solo
//! pass) is recorded, and a comparison spanning a regime switch is flagged.
//!
//! The simulator replays the same orders with the stored pairwise
//! slowdowns (the `measured` predictor) and the solo passes' median times,
//! and the oracle (`sched::oracle`) gives the best list schedule of that
//! model: how far each policy is from what the node could have done.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cosched_model::compare::{next_order_fits, paired, stop_rule, Paired, Quartiles, Stop, Verdict};
use cosched_model::regime::CacheRegime;
use cosched_model::metrics::compute;
use cosched_model::workload::{PoolKind, Workload};
use cosched_report::html::Page;
use cosched_sched::oracle::{oracle, Objective, Oracle};
use cosched_sched::{simulate, PairTable, Platform, PoolInfo, SimJob, SlowdownSource};
use cosched_store::Store;
use serde::Serialize;

use crate::common::{create_dir, db_path, load_workload, node_cpu_count, open_store, write_file, Ctx};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use crate::run::{run_in, RunFigures, RunRequest, SoloMode};
use cosched_learn::run_inputs::predicted_source;

#[derive(Debug, Clone)]
pub struct EvaluateRequest {
    pub workload: PathBuf,
    /// Policies to compare with the baseline, as NAME or NAME:KEY=VALUE,...
    pub policies: Vec<String>,
    pub baseline: String,
    /// The figure whose resolution stops the series.
    pub metric: Figure,
    pub predictor: String,
    pub seed: u64,
    pub min_orders: usize,
    pub max_orders: usize,
    /// Wall-clock budget: no new order starts that, at the pace of the
    /// orders so far, would end after it (the first always starts).
    pub budget: Option<Duration>,
    /// Only orders run in this cache regime count: before each order the
    /// regime is read and, if it is another, read again every 30 s for at
    /// most `regime_wait`; orders that switched part-way are left out.
    pub regime: Option<CacheRegime>,
    pub regime_wait: Duration,
    /// Real runs of each oracle schedule after the orders (0: none), so a
    /// policy's real runs are also measured against the oracle's real runs
    /// rather than only against the model's figure for it.
    pub oracle_replays: u32,
    pub report: Option<PathBuf>,
    pub cgroups: String,
    pub lock: Option<PathBuf>,
    pub db: Option<PathBuf>,
    /// Take each order (and oracle replay) the store holds from an earlier
    /// evaluation with the same settings instead of running it again, and
    /// run only what is missing: an interrupted evaluation continues, and a
    /// shipped one (`data/`) is read back without running anything.
    pub resume: bool,
}

/// A figure of a run, lower is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    Makespan,
    MeanTurnaround,
    WorstSlowdown,
}

impl Figure {
    pub const ALL: [Figure; 3] = [Figure::Makespan, Figure::MeanTurnaround, Figure::WorstSlowdown];

    pub fn name(self) -> &'static str {
        match self {
            Figure::Makespan => "makespan",
            Figure::MeanTurnaround => "mean-turnaround",
            Figure::WorstSlowdown => "worst-slowdown",
        }
    }

    fn of(self, f: &RunFigures) -> Option<f64> {
        match self {
            Figure::Makespan => f.makespan,
            Figure::MeanTurnaround => f.avg_turnaround,
            Figure::WorstSlowdown => f.worst_slowdown,
        }
    }
}

impl std::str::FromStr for Figure {
    type Err = String;
    fn from_str(s: &str) -> Result<Figure, String> {
        Figure::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            format!("`{s}`: expected one of {}", Figure::ALL.map(|f| f.name()).join(", "))
        })
    }
}

/// Whether two median differences lean the same way; none when either is
/// no difference at all (a simulator whose policies made the same schedule
/// has no direction to agree or disagree with).
fn same_direction(real: f64, simulated: f64) -> Option<bool> {
    (real != 0.0 && simulated != 0.0).then_some((real > 0.0) == (simulated > 0.0))
}

/// One order as it ran.
#[derive(Debug, Clone, Serialize)]
pub struct OrderRow {
    /// Zero-based order index (the seed's order k).
    pub order: u32,
    /// CPU 0-1 round trip before the order's solo pass, ns.
    pub round_trip_ns: Option<f64>,
    pub regime: Option<CacheRegime>,
    /// A run of the order read another regime than its solo pass: the host
    /// moved the vCPUs within the order.
    pub switched: bool,
    /// Per policy (baseline first): its run's figures.
    pub runs: Vec<RunFigures>,
}

/// A policy against the baseline on one figure.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub policy: String,
    pub figure: Figure,
    /// On the real runs.
    pub real: Option<Paired>,
    /// On the simulator, same orders.
    pub simulated: Option<Paired>,
    /// The medians differ in the same direction on both.
    pub agrees: Option<bool>,
}

/// Per policy and figure, quartiles over the orders.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyFigures {
    pub policy: String,
    pub real: Vec<(Figure, Option<Quartiles>)>,
    pub simulated: Vec<(Figure, Option<Quartiles>)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvaluateReport {
    pub workload: String,
    /// Baseline first, then the policies, as labels.
    pub policies: Vec<String>,
    pub seed: u64,
    pub orders: Vec<OrderRow>,
    pub stop: Stop,
    /// Regimes seen; more than one means the comparison spans a switch.
    pub regimes: Vec<CacheRegime>,
    /// When the orders span a switch: the real comparisons over the orders
    /// that stayed in the most frequent regime (no switch within them).
    pub within_regime: Option<(CacheRegime, usize, Vec<Comparison>)>,
    /// `--regime`: the only regime whose orders count.
    pub required_regime: Option<CacheRegime>,
    /// The series ended because the node stayed in another regime.
    pub waited_out: bool,
    pub figures: Vec<PolicyFigures>,
    pub comparisons: Vec<Comparison>,
    /// The best schedules of the model for makespan and mean turnaround.
    pub oracle: Vec<OracleRow>,
    pub slowdown_source: String,
    pub index: Option<PathBuf>,
    /// The figure the stop rule watched.
    #[serde(skip)]
    pub metric: Figure,
}

/// The oracle for one objective, and each policy's median relative to it.
#[derive(Debug, Clone, Serialize)]
pub struct OracleRow {
    pub objective: Figure,
    pub oracle: Oracle,
    /// (policy, real median / oracle - 1, simulated median / oracle - 1).
    pub above: Vec<(String, Option<f64>, Option<f64>)>,
    /// The oracle's schedule run for real: its figure over the replays.
    pub replayed: Option<Quartiles>,
    /// (policy, real median / replayed median - 1).
    pub above_replayed: Vec<(String, f64)>,
    /// Why the schedule was not replayed, when replays were asked for.
    pub not_replayed: Option<String>,
}

/// Runs the comparison (module doc).
pub fn evaluate(a: &EvaluateRequest, ctx: &Ctx) -> anyhow::Result<EvaluateReport> {
    let w = load_workload(&a.workload)?;
    let specs = checked_specs(a)?;
    // Held across every order's runs, so nothing measures in between.
    let _lock = crate::lock::take("evaluate", a.lock.as_deref())?;
    let mut store = open_store(&db_path(a.db.as_deref()))?;
    evaluate_checked(a, &w, specs, &mut store, ctx)
}

/// [`evaluate`] of a workload the caller has parsed, into the store it
/// holds open (`cosched demo`); `a.workload` and `a.db` only name them in
/// messages and in the commands that resume a run.
pub fn evaluate_in(a: &EvaluateRequest, w: &Workload, store: &mut Store, ctx: &Ctx) -> anyhow::Result<EvaluateReport> {
    let specs = checked_specs(a)?;
    let _lock = crate::lock::take("evaluate", a.lock.as_deref())?;
    evaluate_checked(a, w, specs, store, ctx)
}

/// The baseline's spec, then each policy's, checked before any store is
/// opened so bad input writes nothing.
fn checked_specs(a: &EvaluateRequest) -> anyhow::Result<Vec<crate::policy::PolicySpec>> {
    if a.policies.is_empty() {
        return Err(bad_input("name at least one --policy to compare with the baseline"));
    }
    if a.min_orders == 0 || a.max_orders < a.min_orders {
        return Err(bad_input(format!("--min-orders {} and --max-orders {}: need 1 <= min <= max", a.min_orders, a.max_orders)));
    }
    let mut specs = vec![spec_of(&a.baseline, "--baseline")?];
    for p in &a.policies {
        specs.push(spec_of(p, "--policy")?);
    }
    let labels: Vec<String> = specs.iter().map(crate::policy::PolicySpec::label).collect();
    if labels.iter().collect::<BTreeSet<_>>().len() != labels.len() {
        return Err(bad_input(format!("each policy once: {}", labels.join(", "))));
    }
    Ok(specs)
}

fn evaluate_checked(
    a: &EvaluateRequest,
    w: &Workload,
    specs: Vec<crate::policy::PolicySpec>,
    store: &mut Store,
    ctx: &Ctx,
) -> anyhow::Result<EvaluateReport> {
    let labels: Vec<String> = specs.iter().map(crate::policy::PolicySpec::label).collect();
    let started = Instant::now();
    // Ctrl-Z waits for the order in flight to end: its runs' figures are
    // wall times.
    cosched_measure::launch::handle_terminal_stop(cosched_measure::launch::TerminalStop::AtPausePoints);
    let mut orders: Vec<OrderRow> = Vec::new();
    let mut solo_sum: Vec<Vec<f64>> = vec![Vec::new(); w.jobs.len()];
    let mut stop = Stop::Continue;
    let mut page = Page::new("cosched evaluate");
    // With a required regime, the orders that count: read in it before the
    // pass and by every run.
    let keep = |o: &OrderRow| a.regime.is_none_or(|g| o.regime == Some(g) && !o.switched);
    let mut waited_out = false;
    // The pace is that of the orders alone: what came before them (the
    // lock, reading the workload) is not paid again per order.
    let orders_started = Instant::now();
    // Each order's runs say their set-up once, not once per order.
    let once = crate::progress::OnceSteps::new(ctx.progress);
    let run_ctx = Ctx::new(&once, ctx.command.clone());
    while stop == Stop::Continue {
        cosched_measure::launch::pause_point();
        let k = orders.len() as u32;
        if let Some(want) = a.regime.filter(|_| !(a.resume && stored_order(a, store, &w.name, &labels[0], k).unwrap_or(false))) {
            // Every 3 s: this VM gives the shared regime in windows of about
            // a minute, and an order of memory-half takes under half of one.
            if !wait_for_regime(want, a.regime_wait, Duration::from_secs(3), &crate::common::round_trip_now, ctx)? {
                waited_out = true;
                stop = Stop::Budget;
                break;
            }
        }
        ctx.step(&format!("order {} of at most {} (seed {}, order {k})", k + 1, a.max_orders, a.seed));
        let req = RunRequest {
            workload: a.workload.clone(),
            policy: a.baseline.clone(),
            baselines: a.policies.clone(),
            predictor: a.predictor.clone(),
            repeats: 1,
            report: None,
            resume: a.resume,
            cgroups: a.cgroups.clone(),
            lock: a.lock.clone(),
            db: a.db.clone(),
            solo: SoloMode::Interleaved,
            order_seed: Some(a.seed),
            order: None,
            first_repeat: k,
            // The baseline runs as run's policy, the policies as its baselines.
            named_by: ["--baseline", "--policy"],
            continue_with: None,
        };
        let mut scratch = Page::new("");
        let r = run_in(&req, w, store, &run_ctx, &mut scratch)?;
        for (i, m) in r.solo_medians.iter().enumerate() {
            if let Some(t) = m {
                solo_sum[i].push(*t);
            }
        }
        let rt = r.pass_round_trip.get(&k).copied();
        let runs: Vec<RunFigures> =
            labels.iter().filter_map(|l| r.figures.iter().find(|f| &f.policy == l && f.repeat == k).cloned()).collect();
        // A job that did not end ok leaves its run's figures cut short (a
        // missing program makes every order "finish" in milliseconds), so
        // no comparison is drawn from it: the series stops and says where.
        if let Some(bad) = runs.iter().find(|f| f.failed > 0) {
            anyhow::bail!(
                "order {}: {} of the {} job(s) under {} did not end ok (run {}; `cosched runs show {}` says how each ended), so its figures are not comparable; the series stops",
                k + 1,
                bad.failed,
                w.jobs.len(),
                bad.policy,
                bad.run,
                bad.run
            );
        }
        let regime = rt.map(CacheRegime::of_round_trip);
        let switched = runs.iter().filter_map(|f| f.round_trip_ns).any(|ns| Some(CacheRegime::of_round_trip(ns)) != regime);
        orders.push(OrderRow { order: k, round_trip_ns: rt, regime, switched, runs });
        if !keep(orders.last().expect("just pushed")) {
            ctx.step(&format!("order {} ran in another regime or switched part-way: left out of the comparison", k + 1));
        }
        let kept: Vec<OrderRow> = orders.iter().filter(|o| keep(o)).cloned().collect();
        let comps: Vec<Option<Paired>> = labels[1..].iter().map(|l| real_paired(&kept, &labels[0], l, a.metric)).collect();
        // --min-orders run whatever the budget: fewer give no verdict.
        let out_of_time = orders.len() >= a.min_orders
            && a.budget.is_some_and(|b| !next_order_fits(b, started.elapsed(), orders_started.elapsed(), orders.len()));
        // Orders left out still spend the --max-orders allowance, so a
        // series in the wrong regime ends.
        stop = stop_rule(&comps, kept.len(), a.min_orders, a.max_orders, out_of_time || orders.len() >= a.max_orders);
        for (l, c) in labels[1..].iter().zip(&comps) {
            if let Some(c) = c {
                ctx.step(&format!(
                    "{l} vs {}: {} median {:+.1} % [{:+.1}, {:+.1}] over {} orders: {}",
                    labels[0],
                    a.metric.name(),
                    c.median_rel_diff * 100.0,
                    c.ci.0 * 100.0,
                    c.ci.1 * 100.0,
                    c.n,
                    verdict_text(c.verdict)
                ));
            }
        }
    }

    if let Some(g) = a.regime.filter(|_| !orders.iter().any(&keep)) {
        anyhow::bail!(
            "no order ran in the {} regime{} ({} order(s) ran in another or switched part-way)",
            g.name(),
            if waited_out { format!(" within the {:.0} min --regime-wait", a.regime_wait.as_secs_f64() / 60.0) } else { String::new() },
            orders.len()
        );
    }
    // The model: stored pairwise slowdowns, the passes' median solo times.
    let (source, source_note, _) = predicted_source(store, w, "measured")?;
    let n = w.jobs.len();
    let table = PairTable::new((0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { source.slowdown(i, &[j]) }).collect()).collect())
        .map_err(anyhow::Error::msg)?;
    let node = node_cpu_count();
    let pools: Vec<PoolInfo> =
        w.pools.iter().map(|p| PoolInfo { name: p.name.clone(), cores: p.cores.unwrap_or(node), kind: p.kind }).collect();
    if w.pools.iter().any(|p| p.kind != PoolKind::Cpu) {
        ctx.step("accelerator pools share the host's CPUs on this node; the model treats each pool as its own cores");
    }
    let platform = Platform { pools };
    // Twins (one program key) share one solo time, the median of all their
    // passes: more samples, and the oracle can treat them as one class.
    let solo_of = |i: usize| -> f64 {
        let key = w.jobs[i].program_key();
        let all: Vec<f64> =
            (0..w.jobs.len()).filter(|&k| w.jobs[k].program_key() == key).flat_map(|k| solo_sum[k].iter().copied()).collect();
        if all.is_empty() {
            1.0
        } else {
            cosched_model::stats::median(&all)
        }
    };
    let sim: Vec<SimJob> = w
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| SimJob {
            name: j.name.clone(),
            arrival: j.arrival,
            solo: solo_of(i),
            pool: w.pools.iter().position(|p| p.name == j.pool).expect("the parser checked the pool"),
            cores: j.cores,
            program: j.program_key(),
            variants: crate::variants::sim_variants(j, w, solo_of(i)),
        })
        .collect();
    let mut sim_figs: Vec<Vec<RunFigures>> = Vec::new();
    let makers = crate::policy::Policies::simulation();
    for o in orders.iter().filter(|o| keep(o)) {
        let order = cosched_sched::montecarlo::order(n, a.seed, o.order as usize);
        let jobs: Vec<SimJob> = order.iter().map(|&j| sim[j].clone()).collect();
        let t = PairTable::new((0..n).map(|p| (0..n).map(|q| table_cell(&table, order[p], order[q])).collect()).collect())
            .map_err(anyhow::Error::msg)?;
        let mut row = Vec::new();
        // The model's replay has no topology: a spec's placement changes
        // only the real runs.
        for (l, spec) in labels.iter().zip(&specs) {
            let mut policy = makers.build(spec.name(), &spec.params()).map_err(bad_input)?;
            policy.set_priorities(&crate::policy::priorities(w));
            let trace = simulate(&platform, &jobs, &t, policy.as_mut()).map_err(|e| anyhow::anyhow!("simulating {l}: {e}"))?;
            let m = compute(&trace, &jobs.iter().map(|j| j.solo).collect::<Vec<_>>())?;
            row.push(RunFigures {
                policy: l.clone(),
                repeat: o.order,
                run: 0,
                makespan: Some(m.makespan),
                avg_turnaround: Some(m.avg_turnaround),
                worst_turnaround: Some(m.worst_turnaround),
                worst_slowdown: Some(m.worst_slowdown),
                failed: 0,
                round_trip_ns: None,
            });
        }
        sim_figs.push(row);
    }

    let real_rows: Vec<&Vec<RunFigures>> = orders.iter().filter(|o| keep(o)).map(|o| &o.runs).collect();
    let sim_rows: Vec<&Vec<RunFigures>> = sim_figs.iter().collect();
    let quart = |v: Vec<f64>| Quartiles::of(&v.into_iter().filter(|x| x.is_finite()).collect::<Vec<_>>());
    let figures: Vec<PolicyFigures> = labels
        .iter()
        .map(|l| PolicyFigures {
            policy: l.clone(),
            real: Figure::ALL.iter().map(|&f| (f, quart(pick(&real_rows, l, f)))).collect(),
            simulated: Figure::ALL.iter().map(|&f| (f, quart(pick(&sim_rows, l, f)))).collect(),
        })
        .collect();
    let mut comparisons = Vec::new();
    for l in &labels[1..] {
        for f in Figure::ALL {
            let real = paired(&pick(&real_rows, l, f), &pick(&real_rows, &labels[0], f));
            let simulated = paired(&pick(&sim_rows, l, f), &pick(&sim_rows, &labels[0], f));
            let agrees = match (&real, &simulated) {
                (Some(r), Some(s)) => same_direction(r.median_rel_diff, s.median_rel_diff),
                _ => None,
            };
            comparisons.push(Comparison { policy: l.clone(), figure: f, real, simulated, agrees });
        }
    }
    let mut oracle_rows = Vec::new();
    for (fig, obj) in [(Figure::Makespan, Objective::Makespan), (Figure::MeanTurnaround, Objective::MeanTurnaround)] {
        let o = oracle(&platform, &sim, &table, obj, a.seed).map_err(|e| anyhow::anyhow!("oracle: {e}"))?;
        let above = labels
            .iter()
            .map(|l| {
                let med = |rows: &[&Vec<RunFigures>]| {
                    let v: Vec<f64> = pick(rows, l, fig).into_iter().filter(|x| x.is_finite()).collect();
                    (!v.is_empty()).then(|| cosched_model::stats::median(&v) / o.value - 1.0)
                };
                (l.clone(), med(&real_rows), med(&sim_rows))
            })
            .collect();
        oracle_rows.push(OracleRow { objective: fig, oracle: o, above, replayed: None, above_replayed: Vec::new(), not_replayed: None });
    }
    if a.oracle_replays > 0 {
        replay_oracles(a, w, store, &mut oracle_rows, &real_rows, orders.len() as u32, ctx)?;
    }
    let mut regimes: BTreeSet<CacheRegime> = orders.iter().filter_map(|o| o.regime).collect();
    for o in &orders {
        for f in &o.runs {
            if let Some(ns) = f.round_trip_ns {
                regimes.insert(CacheRegime::of_round_trip(ns));
            }
        }
    }
    let regimes: Vec<CacheRegime> = regimes.into_iter().collect();
    let within_regime = (regimes.len() > 1 && a.regime.is_none())
        .then(|| {
            let count = |g: CacheRegime| orders.iter().filter(|o| o.regime == Some(g) && !o.switched).count();
            let g = regimes.iter().copied().max_by_key(|&g| count(g))?;
            let kept: Vec<&Vec<RunFigures>> = orders.iter().filter(|o| o.regime == Some(g) && !o.switched).map(|o| &o.runs).collect();
            let comps = labels[1..]
                .iter()
                .flat_map(|l| {
                    Figure::ALL.map(|f| Comparison {
                        policy: l.clone(),
                        figure: f,
                        real: paired(&pick(&kept, l, f), &pick(&kept, &labels[0], f)),
                        simulated: None,
                        agrees: None,
                    })
                })
                .collect();
            Some((g, kept.len(), comps))
        })
        .flatten();
    let mut report = EvaluateReport {
        workload: w.name.clone(),
        policies: labels,
        seed: a.seed,
        orders,
        stop,
        regimes,
        within_regime,
        required_regime: a.regime,
        waited_out,
        figures,
        comparisons,
        oracle: oracle_rows,
        slowdown_source: source_note,
        index: None,
        metric: a.metric,
    };
    if let Some(dir) = &a.report {
        create_dir(dir)?;
        write_page(&mut page, &report, a.metric);
        write_file(&dir.join("index.html"), &page.render())?;
        write_file(&dir.join("evaluate.json"), &serde_json::to_string_pretty(&report)?)?;
        write_file(&dir.join("orders.csv"), &orders_csv(&report))?;
        report.index = Some(dir.join("index.html"));
    }
    Ok(report)
}

fn table_cell(t: &PairTable, i: usize, j: usize) -> f64 {
    if i == j {
        1.0
    } else {
        t.slowdown(i, &[j])
    }
}

/// A policy spec parsed as `cosched run` parses it; its label is the one
/// `run` stores (every parameter, keys sorted), so the runs of each policy
/// are found by it.
fn spec_of(spec: &str, what: &str) -> anyhow::Result<crate::policy::PolicySpec> {
    crate::policy::parse(spec).map_err(|e| bad_input(format!("{what} {spec}: {e}")))
}

/// Figure `f` of policy `l` in each order's runs (NaN where it has none).
fn pick(rows: &[&Vec<RunFigures>], l: &str, f: Figure) -> Vec<f64> {
    rows.iter().map(|r| r.iter().find(|x| x.policy == l).and_then(|x| f.of(x)).unwrap_or(f64::NAN)).collect()
}

/// Runs each oracle schedule for real, `a.oracle_replays` times, and sets
/// every policy's real median against the replays' median. The oracle's
/// order is replayed under noplan, which starts jobs strictly in queue
/// order: the oracle's strict discipline, and its greedy one too when
/// every job of a pool needs the same cores (then a job that does not fit
/// cannot be passed by one that does). Otherwise the schedule cannot be
/// replayed and the row says so. Orders equal for both objectives are run
/// once.
fn replay_oracles(
    a: &EvaluateRequest,
    w: &Workload,
    store: &mut Store,
    rows: &mut [OracleRow],
    real_rows: &[&Vec<RunFigures>],
    first_repeat: u32,
    ctx: &Ctx,
) -> anyhow::Result<()> {
    let uniform = w.pools.iter().all(|p| {
        let mut widths = w.jobs.iter().filter(|j| j.pool == p.name).map(|j| j.cores);
        let first = widths.next();
        widths.all(|c| Some(c) == first)
    });
    let mut done: Vec<(Vec<usize>, Vec<RunFigures>)> = Vec::new();
    let mut next_repeat = first_repeat;
    for row in rows.iter_mut() {
        if !row.oracle.strict && !uniform {
            row.not_replayed = Some("a greedy order of jobs of different widths, which no registered policy carries out".into());
            continue;
        }
        let order = row.oracle.order.clone();
        if !done.iter().any(|(o, _)| *o == order) {
            ctx.step(&format!(
                "the {} oracle's schedule, run for real {} time(s)",
                row.objective.name(),
                a.oracle_replays
            ));
            let req = RunRequest {
                workload: a.workload.clone(),
                policy: "noplan".into(),
                baselines: Vec::new(),
                predictor: a.predictor.clone(),
                repeats: a.oracle_replays,
                report: None,
                resume: a.resume,
                cgroups: a.cgroups.clone(),
                lock: a.lock.clone(),
                db: a.db.clone(),
                // Makespan and turnaround need no solo reference.
                solo: SoloMode::Stored,
                first_repeat: next_repeat,
                order_seed: None,
                order: Some(order.clone()),
                named_by: ["policy", "policy"],
                continue_with: None,
            };
            next_repeat += a.oracle_replays;
            let mut scratch = Page::new("");
            let r = run_in(&req, w, store, ctx, &mut scratch)?;
            done.push((order.clone(), r.figures));
        }
        let figs = &done.iter().find(|(o, _)| *o == order).expect("run above").1;
        let values: Vec<f64> = figs.iter().filter_map(|f| row.objective.of(f)).filter(|x| x.is_finite()).collect();
        let Some(q) = Quartiles::of(&values) else { continue };
        row.above_replayed = row
            .above
            .iter()
            .filter_map(|(l, _, _)| {
                let v: Vec<f64> = pick(real_rows, l, row.objective).into_iter().filter(|x| x.is_finite()).collect();
                (!v.is_empty()).then(|| (l.clone(), cosched_model::stats::median(&v) / q.median - 1.0))
            })
            .collect();
        row.replayed = Some(q);
    }
    Ok(())
}

/// Whether the store holds order `k` of this evaluation, done: a stored
/// order is read back, not waited for.
fn stored_order(a: &EvaluateRequest, store: &Store, workload: &str, baseline: &str, k: u32) -> anyhow::Result<bool> {
    Ok(store.runs()?.iter().any(|r| {
        r.workload == workload
            && r.policy == baseline
            && r.repeat == k
            && r.status == cosched_store::RunStatus::Done
            && r.params["order_seed"] == a.seed
    }))
}

/// Reads the regime with `read` until it is `want` (true) or `wait` has
/// passed (false), every `every`, saying what it read (at first, then once
/// a minute).
fn wait_for_regime(want: CacheRegime, wait: Duration, every: Duration, read: &dyn Fn() -> Option<f64>, ctx: &Ctx) -> anyhow::Result<bool> {
    let since = Instant::now();
    let mut said: Option<Instant> = None;
    cosched_measure::launch::install_interrupt_handler();
    loop {
        if let Some(sig) = cosched_measure::launch::interrupted() {
            return Err(crate::error::stopped(sig, "interrupted while waiting for the cache regime; the orders run so far are stored"));
        }
        let now = read();
        if now.map(CacheRegime::of_round_trip) == Some(want) {
            return Ok(true);
        }
        let waited = since.elapsed();
        if waited >= wait {
            ctx.step(&format!("the node did not enter the {} regime within {:.0} min: no further order", want.name(), wait.as_secs_f64() / 60.0));
            return Ok(false);
        }
        if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
            ctx.step(&format!(
                "waiting for the {} regime: CPU 0-1 round trip {} (waited {:.0} of {:.0} min)",
                want.name(),
                now.map_or("unreadable".into(), |ns| format!("{ns:.0} ns")),
                waited.as_secs_f64() / 60.0,
                wait.as_secs_f64() / 60.0
            ));
            said = Some(Instant::now());
        }
        crate::common::nap(every.min(wait.saturating_sub(waited)).max(Duration::from_millis(1)));
    }
}

fn real_paired(orders: &[OrderRow], base: &str, l: &str, f: Figure) -> Option<Paired> {
    let get = |p: &str| -> Vec<f64> {
        orders.iter().map(|o| o.runs.iter().find(|x| x.policy == p).and_then(|x| f.of(x)).unwrap_or(f64::NAN)).collect()
    };
    paired(&get(l), &get(base))
}

mod render;
pub use render::{fmt_paired, fmt_quartiles, stop_text, verdict_text};
use render::{orders_csv, write_page};

#[cfg(test)]
mod tests {
    use super::render::tables;
    use super::*;

    #[test]
    fn an_order_waits_for_the_required_regime_and_gives_up_after_the_wait() {
        use std::cell::Cell;
        let silent = crate::progress::Silent;
        let ctx = Ctx::new(&silent, "test");
        // Apart, apart, unreadable, then shared: the fourth reading ends the wait.
        let readings = [380.0, 360.0, f64::NAN, 44.0];
        let i = Cell::new(0);
        let read = || {
            let k = i.get();
            i.set(k + 1);
            readings.get(k).copied().filter(|x| x.is_finite())
        };
        let ms = Duration::from_millis(1);
        assert!(wait_for_regime(CacheRegime::Shared, Duration::from_secs(60), ms, &read, &ctx).unwrap());
        assert_eq!(i.get(), 4);
        // Never apart within the wait: false, after reading at least once.
        let always_shared = || Some(50.0);
        assert!(!wait_for_regime(CacheRegime::Apart, Duration::from_millis(5), ms, &always_shared, &ctx).unwrap());
    }

    #[test]
    fn labels_are_the_ones_run_stores_whatever_the_order_given() {
        let label = |s: &str| spec_of(s, "--policy").unwrap().label();
        let a = label("conflict-aware:threshold=50,idle=gain");
        assert_eq!(a, label("conflict-aware:idle=gain,threshold=50"));
        assert_eq!(a, "conflict-aware:idle=gain,threshold=50");
        assert_eq!(label("noplan:placement=scatter"), "noplan:placement=scatter");
        assert_eq!(label("conflict-aware:placement=compact"), "conflict-aware:idle=always,placement=compact,threshold=100");
    }

    #[test]
    fn figures_parse_by_their_names_and_refuse_others() {
        for f in Figure::ALL {
            assert_eq!(f.name().parse::<Figure>(), Ok(f));
        }
        assert!("speed".parse::<Figure>().unwrap_err().contains("makespan, mean-turnaround, worst-slowdown"));
    }

    #[test]
    fn a_difference_of_zero_neither_agrees_nor_disagrees_in_sign() {
        assert_eq!(same_direction(-0.188, -0.05), Some(true));
        assert_eq!(same_direction(0.025, -0.01), Some(false));
        assert_eq!(same_direction(-0.188, 0.0), None, "the simulator made the same schedule for both");
        assert_eq!(same_direction(0.0, 0.1), None);
    }

    fn figs(policy: &str, makespan: f64, tat: f64, worst: f64) -> RunFigures {
        RunFigures {
            policy: policy.into(),
            repeat: 0,
            run: 0,
            makespan: Some(makespan),
            avg_turnaround: Some(tat),
            worst_turnaround: None,
            worst_slowdown: Some(worst),
            failed: 0,
            round_trip_ns: None,
        }
    }

    #[test]
    fn orders_pair_each_policy_with_the_baseline_of_the_same_order() {
        let orders: Vec<OrderRow> = (0..5)
            .map(|k| OrderRow {
                order: k,
                round_trip_ns: Some(60.0),
                regime: Some(CacheRegime::Shared),
                switched: false,
                runs: vec![figs("noplan", 10.0 + k as f64, 6.0, 1.5), figs("best-match", 9.5 + k as f64, 5.0, 1.05)],
            })
            .collect();
        let c = real_paired(&orders, "noplan", "best-match", Figure::WorstSlowdown).unwrap();
        assert_eq!(c.n, 5);
        assert_eq!(c.verdict, Verdict::FirstBetter);
        assert!((c.median_rel_diff - (1.05 / 1.5 - 1.0)).abs() < 1e-12);
        // Makespans rise with k in both; paired by order, best-match is lower every time.
        assert_eq!(real_paired(&orders, "noplan", "best-match", Figure::Makespan).unwrap().verdict, Verdict::FirstBetter);
    }

    /// A report of these orders, nothing else filled in.
    fn report(policies: &[&str], orders: Vec<OrderRow>, regimes: Vec<CacheRegime>, required_regime: Option<CacheRegime>) -> EvaluateReport {
        let (workload, policies, seed, stop, metric) = ("w".into(), policies.iter().map(|p| p.to_string()).collect(), 1, Stop::Budget, Figure::Makespan);
        let (figures, comparisons, oracle, slowdown_source) = (vec![], vec![], vec![], String::new());
        EvaluateReport { workload, policies, seed, orders, stop, regimes, within_regime: None, required_regime, waited_out: false, figures, comparisons, oracle, slowdown_source, index: None, metric }
    }

    #[test]
    fn the_orders_csv_quotes_labels_with_commas() {
        let orders = vec![OrderRow { order: 0, round_trip_ns: None, regime: None, switched: false, runs: vec![figs("a:x=1,y=2", 1.0, 2.0, 3.0)] }];
        let csv = orders_csv(&report(&["a:x=1,y=2"], orders, vec![], None));
        assert_eq!(csv.lines().nth(1), Some("0,,\"a:x=1,y=2\",0,1,2,3,0"));
    }

    /// Issue 40: the page mixed all orders' medians with verdicts over those of one regime, unsaid.
    #[test]
    fn every_table_says_which_orders_it_counts() {
        let runs = vec![figs("noplan", 10.0, 6.0, 1.5), figs("best-match", 9.5, 5.0, 1.05)];
        let order = |order: u32, regime: CacheRegime, switched: bool| OrderRow { order, round_trip_ns: Some(60.0), regime: Some(regime), switched, runs: runs.clone() };
        let (shared, apart) = (CacheRegime::Shared, CacheRegime::Apart);
        let orders = vec![order(0, shared, false), order(1, apart, false), order(2, shared, true), order(3, shared, false)];
        let mut r = report(&["noplan", "best-match"], orders, vec![shared, apart], Some(shared));
        let titles = |r: &EvaluateReport| tables(r).into_iter().map(|t| t.0).collect::<Vec<_>>();
        let (t, counted) = (titles(&r), "the 2 of 4 orders run in the shared cache regime throughout");
        assert!(t[0].starts_with(&format!("Real runs over {counted}")) && t[1].starts_with("Simulated, all 4 orders"), "{t:?}");
        assert!(t[2].contains(&format!("order by order over {counted}")) && t.last().is_some_and(|l| l == "Every order"), "{t:?}");
        r.required_regime = None;
        let t = titles(&r);
        assert!(t[0].starts_with("Real runs over all 4 orders") && t[2].contains("order by order over all 4 orders"), "{t:?}");
        let text = r.doc().text();
        assert!(text.contains("warning: the orders span a cache-regime switch"), "{text}");
    }
}
