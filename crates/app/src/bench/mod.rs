//! `cosched bench ...`: benchmarks that measure figures side by side in one
//! run: our kernels against references, the profile sampler's cost, the
//! simulator's speed. (`bench predictors` is [`crate::evaluate_predictors::bench`].)

use std::time::Duration;

use cosched_measure::bench::{build_reference_triad, compare_triad, linearity, Linearity, TriadComparison};
use cosched_measure::kernel::kernel_argv;
use cosched_measure::launch::Launch;
use cosched_measure::profile::{kernel_work_for, sampler_overhead, SamplerOverhead};
use cosched_model::calibration::Calibration;
use cosched_model::stats::Summary;
use cosched_report::{fmt_ci, fmt_spread};

use crate::calibrate::{calibrate_kernels, select};
use crate::common::{node_cpu_count, parse_cpus, Ctx};
use crate::error::bad_input;
use crate::profile::Syscalls;
use crate::render::{Doc, Render};
use serde::Serialize;

pub use cosched_cluster::synthetic::Mix;
/// `bench run`: the node runner's cost per job (issue 42), beside the runner it measures.
pub use crate::run::bench::{run, RunBenchReport, RunBenchRequest};
pub use turns::{turns, Latencies, PairMakespans, TurnLatency, TurnsBenchReport, TurnsBenchRequest};

mod turns;

#[derive(Debug, Clone)]
pub struct KernelsBenchRequest {
    pub repeats: usize,
    /// Triad arrays, MiB each, and passes per run.
    pub array_mib: u64,
    pub passes: u64,
    /// Kernels whose rate to measure; empty: all.
    pub kernels: Vec<String>,
    pub cpus: String,
}

/// `cosched bench kernels`; `--json` is the triad comparison, the kernels'
/// rates and their linearity.
#[derive(Debug, Serialize)]
pub struct KernelsBenchReport {
    /// C STREAM and our stream kernel, alternating; ours over the
    /// reference, repeat by repeat.
    pub triad: TriadComparison,
    #[serde(rename = "kernels")]
    pub calibrations: Vec<Calibration>,
    /// Per kernel: its rate at a quarter of the work over the full work.
    pub linearity: Vec<Linearity>,
}

impl Render for KernelsBenchReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        let t = &self.triad;
        let bw = |v: &[f64]| Summary::of(v).expect("repeats >= 1");
        let interval = cosched_report::interval_name([t.reference_mb_s.len()]);
        d.table(
            &["triad", &format!("bandwidth MB/s median [{interval}]")],
            vec![
                vec!["C STREAM (cc -O2)".into(), fmt_ci(&bw(&t.reference_mb_s), 0)],
                vec!["cosched stream".into(), fmt_ci(&bw(&t.ours_mb_s), 0)],
            ],
        );
        let s = &t.ratio;
        d.line(format!(
            "ratio cosched/C: median {:.3} (min {:.3}, max {:.3}, n={}, {} MiB arrays x {} passes; aim >= 0.98)\n",
            s.median, s.min, s.max, s.n, t.array_mib, t.passes
        ));
        d.line(format!("{}\n", crate::calibrate::render(&self.calibrations)));
        let rows = self
            .linearity
            .iter()
            .map(|l| {
                vec![
                    l.kernel.clone(),
                    format!("{} / {}", l.work, (l.work / 4).max(1)),
                    format!("{:.3}", l.ratio),
                    format!("{:.1}% / {:.1}%", 100.0 * l.rate_full.rel_spread(), 100.0 * l.rate_quarter.rel_spread()),
                ]
            })
            .collect();
        d.table(&["kernel", "work full / quarter", "rate ratio quarter/full", "spread full / quarter"], rows);
        d
    }
}

pub fn kernels(a: &KernelsBenchRequest, ctx: &Ctx) -> anyhow::Result<KernelsBenchReport> {
    if a.repeats == 0 || a.passes == 0 || a.array_mib == 0 {
        return Err(bad_input("--repeats, --passes and --array-mib must be at least 1"));
    }
    let cpus = parse_cpus(&a.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    let specs = select(&a.kernels)?;
    let _lock = crate::lock::take("bench kernels", None)?;
    let dir = tempfile::tempdir()?;
    ctx.step("stream kernel vs C STREAM triad (cc -O2), alternating, same CPU");
    let exe = build_reference_triad(dir.path())?;
    let p = ctx.progress.task("triad", a.repeats as u64);
    let triad = compare_triad(&exe, a.array_mib, a.passes, a.repeats, &cpus, &mut |d, _| p.set(d as u64, ""))?;
    p.finish();
    ctx.step("each kernel's rate (warm-up sizes work to ~0.3 s, then timed repeats)");
    let calibrations = calibrate_kernels(&specs, 1, a.repeats, 0.3, &cpus, ctx)?;
    ctx.step("linearity: rate at 1/4 of the work over rate at the full work (1.00 = linear)");
    let p = ctx.progress.task("linearity", calibrations.len() as u64);
    let mut lin = Vec::new();
    for (i, c) in calibrations.iter().enumerate() {
        lin.push(linearity(&c.kernel, &c.params, c.work_per_run, a.repeats, &cpus)?);
        p.set(i as u64 + 1, &c.kernel);
    }
    p.finish();
    Ok(KernelsBenchReport { triad, calibrations, linearity: lin })
}

#[derive(Debug, Clone)]
pub struct ProfileBenchRequest {
    /// The kernel to run, sized to `seconds` of work.
    pub kernel: String,
    pub repeats: usize,
    /// Sampling interval; a tenth of it is measured too.
    pub interval: Duration,
    pub seconds: f64,
    pub syscalls: Syscalls,
    pub cpus: String,
}

/// `cosched bench profile`; `--json` is the sampler's overhead as measured.
#[derive(Debug, Serialize)]
pub struct ProfileBenchReport {
    /// Plain and sampled run times, ratio per interval, the sampler's CPU.
    #[serde(flatten)]
    pub overhead: SamplerOverhead,
    #[serde(skip)]
    pub kernel: String,
    #[serde(skip)]
    pub work: u64,
    /// The CPUs the runs were pinned to, as given.
    #[serde(skip)]
    pub cpus: String,
}

impl Render for ProfileBenchReport {
    fn doc(&self) -> Doc {
        let o = &self.overhead;
        let mut d = Doc::new();
        d.line(format!(
            "{} (work {}, CPU {}): {} time without sampling {} s; {} system calls/s counted by {}",
            self.kernel,
            self.work,
            self.cpus,
            o.timing,
            Summary::of(&o.plain_s).map_or("-".into(), |s| fmt_spread(&s, 3)),
            o.syscall_rate.map(cosched_report::si).unwrap_or_else(|| "?".into()),
            o.syscall_source
        ));
        for n in &o.notes {
            d.line(format!("  ({n})"));
        }
        let rows = o
            .intervals
            .iter()
            .map(|iv| {
                vec![
                    format!("{} ({} Hz)", fmt_interval(iv.interval_s), fmt_num(1.0 / iv.interval_s)),
                    format!("{:.0}", iv.samples_per_run),
                    fmt_spread(&iv.ratio, 4),
                    format!("{:+.2}%", 100.0 * (iv.ratio.median - 1.0)),
                    format!("{:.3}%", 100.0 * iv.sampler_core_share.median),
                ]
            })
            .collect();
        d.table(&["sampling every", "samples/run", "time ratio sampled/plain, median (min-max, n)", "overhead", "sampler CPU, % of a core"], rows);
        d.line(format!(
            "ratio = the kernel's {} time sampled over not sampled, same repeat; aim < 1.01 at 1 s. \
The sampler's own CPU time is measured on its thread; the kernel's core is pinned, the sampler's is not. \
Counting system calls with perf costs every call of the job (a few hundred ns on a VM): \
compare --syscalls proc on a syscall-heavy kernel.",
            o.timing
        ));
        d
    }
}

pub fn profile(a: &ProfileBenchRequest, ctx: &Ctx) -> anyhow::Result<ProfileBenchReport> {
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        return Err(bad_input("--seconds must be above 0"));
    }
    let cpus = parse_cpus(&a.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    let spec = select(std::slice::from_ref(&a.kernel))?[0];
    let _lock = crate::lock::take("bench profile", None)?;
    // Ctrl-C unwinds through the runs, whose groups are killed on the way
    // out, instead of leaving the running kernel orphaned.
    cosched_measure::launch::install_interrupt_handler();
    let params = spec.resolve_params(&Default::default()).map_err(anyhow::Error::msg)?;
    ctx.step(&format!("sizing {} to ~{} s of work on CPU {}", spec.name, a.seconds, a.cpus));
    let work = kernel_work_for(spec.name, &params, 1, &cpus, a.seconds)?;
    let launch = Launch::new(kernel_argv(spec.name, work, 1, &params)).pinned(cpus.clone());
    let intervals = [a.interval, a.interval / 10];
    ctx.step(&format!(
        "{} repeats of: plain, sampled every {:?}, sampled every {:?} (order rotates)",
        a.repeats, intervals[0], intervals[1]
    ));
    let bar = ctx.progress.task("profile", (a.repeats * (intervals.len() + 1)) as u64);
    let o = sampler_overhead(&launch, &intervals, a.repeats, node_cpu_count(), a.syscalls.method(), &mut |d, _| {
        bar.set(d as u64, "")
    })?;
    bar.finish();
    Ok(ProfileBenchReport { overhead: o, kernel: spec.name.to_string(), work, cpus: a.cpus.clone() })
}

fn fmt_interval(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", fmt_num(s))
    } else {
        format!("{} ms", fmt_num(s * 1e3))
    }
}

/// A number without trailing zeros: 1, 0.5, 12.5.
fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[derive(Debug, Clone)]
pub struct SimulateBenchRequest {
    pub repeats: usize,
    /// Orders of the Monte-Carlo case.
    pub orders: usize,
    /// Jobs and nodes of the cluster case.
    pub jobs: usize,
    pub nodes: usize,
    /// Case (f), the cluster engine's scaling table, as `KEY=VALUE ...`
    /// ([`ScalingRequest::parse`]; empty: the defaults).
    pub scaling: String,
    /// Only case (f).
    pub only_scaling: bool,
    /// Only the one-node cases (g) and (h).
    pub only_node: bool,
}

/// Case (f) of `bench simulate`: `simulate --swf`'s engine on synthetic
/// traces of every count of jobs on every count of nodes (issue 42's table).
#[derive(Debug, Clone)]
pub struct ScalingRequest {
    pub jobs: Vec<usize>,
    pub nodes: Vec<usize>,
    pub cores: u32,
    /// Offered load: 1 is as much work as the cluster can serve.
    pub load: f64,
    pub mix: Mix,
    pub seed: u64,
    /// Sharing policies run after exclusive EASY on each trace.
    pub policies: Vec<String>,
}

impl Default for ScalingRequest {
    /// Issue 42's table: 16 cores a node at load 0.95.
    fn default() -> ScalingRequest {
        ScalingRequest {
            jobs: vec![10_000, 100_000],
            nodes: vec![100, 1_000, 10_000, 100_000],
            cores: 16,
            load: 0.95,
            mix: Mix::default(),
            seed: 7,
            policies: vec!["conflict-aware:threshold=50".into()],
        }
    }
}

impl ScalingRequest {
    /// `jobs=N,... nodes=N,... cores=C load=L mix=S,N,W seed=S sharing=SPEC`,
    /// any of them, the rest default; `sharing=` repeats, `sharing=none`
    /// runs exclusive EASY only.
    pub fn parse(spec: &str) -> Result<ScalingRequest, String> {
        let mut r = ScalingRequest { policies: Vec::new(), ..ScalingRequest::default() };
        let mut sharing_given = false;
        let counts = |v: &str| v.split(',').map(|x| x.trim().parse::<usize>().map_err(|_| format!("`{x}` is not a count"))).collect::<Result<Vec<_>, _>>();
        for item in spec.split_whitespace() {
            let (key, value) = item.split_once('=').ok_or_else(|| format!("`{item}`: expected KEY=VALUE (jobs, nodes, cores, load, mix, seed, sharing)"))?;
            let bad = |e: String| format!("`{item}`: {e}");
            match key {
                "jobs" => r.jobs = counts(value).map_err(bad)?,
                "nodes" => r.nodes = counts(value).map_err(bad)?,
                "cores" => r.cores = value.parse().map_err(|_| bad("not a count of cores".into()))?,
                "load" => r.load = value.parse().map_err(|_| bad("not a number".into()))?,
                "mix" => r.mix = Mix::parse(value).map_err(bad)?,
                "seed" => r.seed = value.parse().map_err(|_| bad("not a seed (a whole number)".into()))?,
                "sharing" => {
                    sharing_given = true;
                    if value != "none" {
                        r.policies.push(value.to_string());
                    }
                }
                _ => return Err(format!("`{item}`: unknown key `{key}`; expected jobs, nodes, cores, load, mix, seed or sharing")),
            }
        }
        if !sharing_given {
            r.policies = ScalingRequest::default().policies;
        }
        Ok(r)
    }
}

/// One row of `bench simulate`'s table: a case, its wall and CPU seconds,
/// the aim in wall seconds (`-`: none) and what a unit of its work cost.
#[derive(Debug, Clone)]
pub struct BenchCase {
    pub case: String,
    pub wall: Summary,
    pub cpu: Summary,
    pub aim: String,
    pub cost: String,
}

impl BenchCase {
    fn new(case: impl Into<String>, t: &Timing, aim: &str, cost: impl Into<String>) -> BenchCase {
        BenchCase { case: case.into(), wall: t.0, cpu: t.1, aim: aim.to_string(), cost: cost.into() }
    }
}

/// `cosched bench simulate`: the table of cases and, for `--json`, each
/// case's figures under its own key (a case not run is left out).
#[derive(Debug, Serialize)]
pub struct SimulateBenchReport {
    pub threads: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub montecarlo: Option<MonteCarloRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enumeration: Option<EnumerationRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lua: Option<LuaRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Vec<ClusterRun>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swf: Option<Vec<SwfRun>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<ScalingRuns>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeRuns>,
    /// The node's load average (1, 5, 15 min) at the end: wall times mean
    /// little on a busy node.
    pub load_average: Option<[f64; 3]>,
    /// The table's rows, in case order.
    #[serde(skip)]
    pub cases: Vec<BenchCase>,
}

impl Render for SimulateBenchReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        let rows = self
            .cases
            .iter()
            .map(|c| vec![c.case.clone(), fmt_spread(&c.wall, 3), fmt_spread(&c.cpu, 3), c.aim.clone(), c.cost.clone()])
            .collect();
        d.table(&["case", "wall s, median (min-max, n)", "CPU s (all threads)", "aim, wall s", "cost"], rows);
        d.line(format!("{} threads; (a) and (d) are parallel over orders, (b), (c) and (e)-(h) run on one thread.", self.threads));
        if let Some(l) = self.load_average {
            d.line(format!("load average (1, 5, 15 min) at the end: {} {} {}", l[0], l[1], l[2]));
        }
        d
    }
}

/// (a) as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct MonteCarloRun {
    pub orders: usize,
    pub jobs: usize,
    pub policies: usize,
    pub simulations: usize,
    pub seconds: Summary,
    pub cpu_seconds: Summary,
}

/// (b) as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct EnumerationRun {
    pub programs: usize,
    pub placements: u64,
    pub seconds: Summary,
    pub cpu_seconds: Summary,
}

/// (c) as `--json` prints it: one policy's run.
#[derive(Debug, Serialize)]
pub struct ClusterRun {
    pub policy: &'static str,
    pub jobs: usize,
    pub nodes: usize,
    pub events: usize,
    pub seconds: Summary,
    pub cpu_seconds: Summary,
}

/// (e) and each run of (f) as `--json` prints them: one schedule's run.
#[derive(Debug, Serialize)]
pub struct SwfRun {
    pub schedule: String,
    pub jobs: usize,
    pub nodes: usize,
    pub cores: u32,
    pub shared_jobs: usize,
    /// The schedule's makespan, seconds (in (f) only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub makespan: Option<f64>,
    pub seconds: Summary,
    pub cpu_seconds: Summary,
}

/// (f) as `--json` prints it: the traces' settings and every run.
#[derive(Debug, Serialize)]
pub struct ScalingRuns {
    pub cores: u32,
    pub load: f64,
    pub mix: Mix,
    pub seed: u64,
    pub depth: usize,
    pub slowdowns: &'static str,
    pub runs: Vec<SwfRun>,
}

/// A case's rows in the table and its figures for `--json`.
struct Case<J> {
    rows: Vec<BenchCase>,
    json: J,
}

/// Wall seconds and process CPU seconds of each of `repeats` runs of `f`,
/// and its last result.
fn timed<T>(
    repeats: usize,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<((cosched_model::stats::Summary, cosched_model::stats::Summary), T)> {
    use cosched_measure::profile::process_cpu_s;
    let (mut wall, mut cpu) = (Vec::with_capacity(repeats), Vec::with_capacity(repeats));
    let mut last = None;
    for _ in 0..repeats {
        let (t, c) = (std::time::Instant::now(), process_cpu_s());
        last = Some(f()?);
        wall.push(t.elapsed().as_secs_f64());
        cpu.push(process_cpu_s() - c);
    }
    let s = |v: &[f64]| cosched_model::stats::Summary::of(v).expect("repeats >= 1");
    Ok(((s(&wall), s(&cpu)), last.expect("repeats >= 1")))
}

pub fn simulate(a: &SimulateBenchRequest, ctx: &Ctx) -> anyhow::Result<SimulateBenchReport> {
    use cosched_sched::montecarlo::run_orders;
    use cosched_sched::registry::resolve;
    use cosched_sched::scenario::Scenario;
    use cosched_sched::{simulate_with, synthetic, SimOptions, Spec};
    // Parsed and resolved once, so a mistake here fails before any timing.
    let parse = |p: &str| Spec::parse(p).and_then(|s| resolve(&s).map(|r| (s, r))).map_err(anyhow::Error::msg);
    if a.repeats == 0 || a.orders == 0 || a.jobs == 0 || a.nodes == 0 {
        return Err(bad_input("--repeats, --orders, --jobs and --nodes must be at least 1"));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load_average = || cosched_measure::provenance::load_average().ok();
    let report = |cases| SimulateBenchReport {
        threads,
        montecarlo: None,
        enumeration: None,
        lua: None,
        cluster: None,
        swf: None,
        scaling: None,
        node: None,
        load_average: None,
        cases,
    };
    if a.only_node {
        let node = node_case(a, ctx)?;
        return Ok(SimulateBenchReport { node: Some(node.json), load_average: load_average(), ..report(node.rows) });
    }
    if a.only_scaling {
        let scaling = scaling_case(a, ctx)?;
        return Ok(SimulateBenchReport { scaling: Some(scaling.json), load_average: load_average(), ..report(scaling.rows) });
    }
    let scenario = Scenario::parse(include_str!("../../../../examples/scenarios/seed000.toml"), "examples/scenarios/seed000.toml")
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // best-match's greedy rule, as before its window default: the bench
    // measures the engine, and a rollout per start would measure the policy.
    let policies = ["noplan", "conflict-aware:threshold=100", "best-match:window=0", "auto-threshold"]
        .iter()
        .map(|p| parse(p).map(|(s, _)| s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    ctx.step(&format!("(a) {} orders x 38 jobs x {} policies (+ exclusive as baseline), {} threads", a.orders, policies.len(), std::thread::available_parallelism().map_or(1, |n| n.get())));
    let (mc, _) = timed(a.repeats, || run_orders(&scenario, &policies, a.orders, 1).map_err(anyhow::Error::new))?;
    let sims = a.orders * (policies.len() + 1);

    ctx.step("(b) enumeration of N = 10 programs, 2 instances each, on 10 dual-core nodes, with a random matrix");
    let n = 10;
    let m: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| 1.0 + ((i * 7 + j * 13) % 17) as f64 / 10.0).collect()).collect();
    let (en, land) = timed(a.repeats, || {
        let land = cosched_model::enumerate::landscape(&m, 40).map_err(|e| anyhow::anyhow!("{e}"))?;
        let best = cosched_model::enumerate::optimal_placement(&m, false).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok((land.all.count, best.map(|b| b.slowdown.average)))
    })?;

    ctx.step(&format!("(c) {} jobs on {} nodes of 4 cores, Poisson arrivals at load 0.95, window 64", a.jobs, a.nodes));
    let w = synthetic::cluster(a.nodes, 4, a.jobs, 20, 0.95, 7);
    let opts = SimOptions { nodes: a.nodes, window: Some(64) };
    let mut cluster = Vec::new();
    for spec in ["noplan", "best-match:window=0"] {
        let (_, resolved) = parse(spec)?;
        let (t, events) = timed(a.repeats, || {
            let mut p = resolved.build().map_err(anyhow::Error::msg)?;
            let tr = simulate_with(&w.platform, &w.jobs, &w.table, &w.table, p.as_mut(), &opts)?;
            Ok(tr.events.len())
        })?;
        cluster.push((spec, t, events));
    }

    let lua = lua_beside_rust(&scenario, a, ctx)?;
    let swf = swf_case(a, ctx)?;
    let scaling = scaling_case(a, ctx)?;
    let node = node_case(a, ctx)?;

    let per = |s: &Summary, k: usize| format!("{:.1}", s.median * 1e6 / k as f64);
    let mut rows = vec![
        BenchCase::new(
            format!("(a) Monte-Carlo: {} orders x 38 jobs x {} policies + exclusive", a.orders, policies.len()),
            &mc,
            "1",
            format!("{} CPU us / simulation", per(&mc.1, sims)),
        ),
        BenchCase::new(
            format!("(b) enumeration N = 10: {} placements + optimum", land.0),
            &en,
            "5",
            format!("{} CPU us / placement", per(&en.1, land.0 as usize)),
        ),
    ];
    for (p, t, e) in &cluster {
        rows.push(BenchCase::new(format!("(c) {} jobs on {} nodes, {p}", a.jobs, a.nodes), t, "10", format!("{} CPU us / event ({e} events)", per(&t.1, *e))));
    }
    rows.extend(lua.rows);
    for r in &swf {
        let t = (r.seconds, r.cpu_seconds);
        let case = format!("(e) trace of {} jobs on {} nodes x 16 cores, {}", a.jobs, a.nodes, r.schedule);
        rows.push(BenchCase::new(case, &t, "10", format!("{} CPU us / job ({} jobs shared a node)", per(&t.1, a.jobs), r.shared_jobs)));
    }
    rows.extend(scaling.rows);
    rows.extend(node.rows);
    Ok(SimulateBenchReport {
        montecarlo: Some(MonteCarloRun { orders: a.orders, jobs: 38, policies: policies.len(), simulations: sims, seconds: mc.0, cpu_seconds: mc.1 }),
        enumeration: Some(EnumerationRun { programs: n, placements: land.0, seconds: en.0, cpu_seconds: en.1 }),
        lua: Some(lua.json),
        cluster: Some(
            cluster
                .iter()
                .map(|(p, t, e)| ClusterRun { policy: p, jobs: a.jobs, nodes: a.nodes, events: *e, seconds: t.0, cpu_seconds: t.1 })
                .collect(),
        ),
        swf: Some(swf),
        scaling: Some(scaling.json),
        node: Some(node.json),
        load_average: load_average(),
        ..report(rows)
    })
}

/// (f) The scaling table: one synthetic trace per (jobs, nodes), each run
/// under exclusive EASY and under each sharing policy, `repeats` times.
/// The slowdowns are the built-in few-bad matrix, as in (e).
fn scaling_case(a: &SimulateBenchRequest, ctx: &Ctx) -> anyhow::Result<Case<ScalingRuns>> {
    use cosched_cluster::{simulate, synthetic, Config, Scheduler};
    use cosched_sched::{policy_from_spec, Policy, ProgramTable};
    // Beside the other cases, the first row without its 100k
    // nodes, so the whole bench stays within seconds.
    let spec = if a.only_scaling || !a.scaling.trim().is_empty() { a.scaling.as_str() } else { "jobs=10000 nodes=100,1000,10000" };
    let s = &ScalingRequest::parse(spec).map_err(|e| bad_input(format!("--scaling: {e}")))?;
    if s.jobs.is_empty() || s.nodes.is_empty() || s.jobs.contains(&0) || s.nodes.contains(&0) || s.cores == 0 {
        return Err(bad_input("--scaling: jobs, nodes and cores need counts of at least 1"));
    }
    if !(s.load.is_finite() && s.load > 0.0) {
        return Err(bad_input("--scaling: load must be a positive number (1 = as much work as the cluster serves)"));
    }
    // Resolved before any timing, so a mistake fails at once.
    for p in &s.policies {
        policy_from_spec(p).map_err(|e| bad_input(format!("--scaling: sharing={p}: {e}")))?;
    }
    let m = cosched_sched::scenario::Scenario::parse(include_str!("../../../../examples/scenarios/few-bad.toml"), "few-bad.toml")
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .slowdown;
    let names: Vec<String> = (0..m.len()).map(|i| format!("p{i}")).collect();
    ctx.step(&format!(
        "(f) scaling: synthetic traces of {:?} jobs on {:?} nodes of {} cores, load {}, mix {}/{}/{} (part of a node / 1-4 nodes / wide), seed {}; EASY depth 100",
        s.jobs, s.nodes, s.cores, s.load, s.mix.small, s.mix.nodes, s.mix.wide, s.seed
    ));
    let mut schedules: Vec<(String, Option<&str>)> = vec![("exclusive EASY".into(), None)];
    schedules.extend(s.policies.iter().map(|p| (format!("EASY + {p}"), Some(p.as_str()))));
    let (mut rows, mut runs) = (Vec::new(), Vec::new());
    for &jobs in &s.jobs {
        for &nodes in &s.nodes {
            let trace = synthetic::trace_of(nodes, s.cores, jobs, m.len(), s.load, s.mix, s.seed);
            let table = ProgramTable::new(trace.iter().map(|j| j.program).collect(), m.clone(), None).map_err(anyhow::Error::msg)?;
            let cfg = Config::new(nodes, s.cores, Scheduler::Easy);
            for (label, spec) in &schedules {
                let (t, (shared, makespan)) = timed(a.repeats, || {
                    let mut p: Option<Box<dyn Policy>> = spec.map(policy_from_spec).transpose().map_err(anyhow::Error::msg)?;
                    let sc = simulate(&trace, &names, &cfg, &table, &table, p.as_deref_mut().map(|p| p as &mut dyn Policy), &mut |_| {})?;
                    Ok((sc.shared.iter().filter(|&&x| x).count(), sc.finish.iter().copied().fold(0.0, f64::max)))
                })?;
                // Issue 42's bars, where a cell is one of theirs.
                let aim = match (jobs, nodes, s.cores) {
                    (100_000, 10_000, 16) => "1",
                    (1_000_000, 100_000, 16) => "10",
                    _ => "-",
                };
                rows.push(BenchCase::new(
                    format!("(f) {jobs} jobs on {nodes} nodes x {}, {label}", s.cores),
                    &t,
                    aim,
                    format!("{:.1} CPU us / job ({shared} jobs shared a node)", t.1.median * 1e6 / jobs as f64),
                ));
                runs.push(SwfRun {
                    schedule: label.clone(),
                    jobs,
                    nodes,
                    cores: s.cores,
                    shared_jobs: shared,
                    makespan: Some(makespan),
                    seconds: t.0,
                    cpu_seconds: t.1,
                });
            }
        }
    }
    let json = ScalingRuns { cores: s.cores, load: s.load, mix: s.mix, seed: s.seed, depth: 100, slowdowns: "examples/scenarios/few-bad.toml", runs };
    Ok(Case { rows, json })
}

type Timing = (cosched_model::stats::Summary, cosched_model::stats::Summary);

/// Jobs of the one-node cases (g) and (h): the oracle's most.
const NODE_JOBS: usize = 10_000;

/// (g) and (h) as `--json` prints them.
#[derive(Debug, Serialize)]
pub struct NodeRuns {
    runs: Vec<NodeRun>,
    oracle: NodeOracle,
}

/// (g): one policy's run.
#[derive(Debug, Serialize)]
pub struct NodeRun {
    pub policy: &'static str,
    pub jobs: usize,
    pub events: usize,
    pub seconds: Summary,
    pub cpu_seconds: Summary,
}

/// (h): the oracle's search within its budget.
#[derive(Debug, Serialize)]
pub struct NodeOracle {
    pub search: cosched_sched::oracle::Search,
    pub jobs: usize,
    pub job_starts: u64,
    pub value: f64,
    pub bound: f64,
    pub seconds: Summary,
    pub cpu_seconds: Summary,
}

/// (g) [`NODE_JOBS`] jobs on one node of 4 cores (`synthetic::cluster` at
/// load 0.95 by solo times; pair slowdowns multiply, so the queue runs to
/// thousands) under the common policies and a list order (shortest first),
/// greedy and strict, each by its index and by the plain scan of the queue,
/// which must give the same trace or the case fails; (h) the oracle on the
/// same jobs, stopped by its start budget (issue 36).
fn node_case(a: &SimulateBenchRequest, ctx: &Ctx) -> anyhow::Result<Case<NodeRuns>> {
    use cosched_sched::oracle::{oracle, ListOrder, Objective};
    use cosched_sched::registry::resolve;
    use cosched_sched::{simulate_with, synthetic, Policy, SimOptions, Spec};
    let w = synthetic::cluster(1, 4, NODE_JOBS, 20, 0.95, 7);
    let mut by_solo: Vec<usize> = (0..NODE_JOBS).collect();
    by_solo.sort_by(|&x, &y| w.jobs[x].solo.total_cmp(&w.jobs[y].solo));
    let (mut rows, mut runs) = (Vec::new(), Vec::new());
    let per = |s: &cosched_model::stats::Summary| format!("{:.1} CPU us / job", s.median * 1e6 / NODE_JOBS as f64);
    let list = |strict: bool| if strict { ListOrder::strict(&by_solo) } else { ListOrder::greedy(&by_solo) };
    let names = ["noplan", "exclusive", "best-match:window=0", "list greedy", "list greedy, scan", "list strict", "list strict, scan"];
    let mut last: Option<Vec<cosched_sched::Event>> = None;
    for name in names {
        ctx.step(&format!("(g) {NODE_JOBS} jobs on one node of 4 cores, {name}"));
        let build = || -> anyhow::Result<Box<dyn Policy>> {
            Ok(match name {
                "list greedy" => Box::new(list(false)),
                "list greedy, scan" => Box::new(list(false).plain()),
                "list strict" => Box::new(list(true)),
                "list strict, scan" => Box::new(list(true).plain()),
                spec => resolve(&Spec::parse(spec).map_err(anyhow::Error::msg)?).and_then(|r| r.build()).map_err(anyhow::Error::msg)?,
            })
        };
        let (t, events) = timed(a.repeats, || {
            let mut p = build()?;
            Ok(simulate_with(&w.platform, &w.jobs, &w.table, &w.table, p.as_mut(), &SimOptions::default())?.events)
        })?;
        if name.ends_with(", scan") && last.as_ref() != Some(&events) {
            anyhow::bail!("(g) {name}: the plain scan gave another trace than the index");
        }
        rows.push(BenchCase::new(format!("(g) {NODE_JOBS} jobs on one node of 4 cores, {name}"), &t, "1", per(&t.1)));
        runs.push(NodeRun { policy: name, jobs: NODE_JOBS, events: events.len(), seconds: t.0, cpu_seconds: t.1 });
        last = Some(events);
    }
    ctx.step(&format!("(h) the oracle (makespan) on the same {NODE_JOBS} jobs, within its start budget"));
    let (t, o) = timed(1, || oracle(&w.platform, &w.jobs, &w.table, Objective::Makespan, 1).map_err(anyhow::Error::new))?;
    let gap = 100.0 * (o.value / o.makespan_bound - 1.0);
    rows.push(BenchCase::new(
        format!("(h) oracle on the same jobs: {:?}, {} job starts, {gap:.1} % above its lower bound", o.search, o.job_starts),
        &t,
        "10",
        per(&t.1),
    ));
    let oracle = NodeOracle { search: o.search, jobs: NODE_JOBS, job_starts: o.job_starts, value: o.value, bound: o.makespan_bound, seconds: t.0, cpu_seconds: t.1 };
    Ok(Case { rows, json: NodeRuns { runs, oracle } })
}

/// (e) `cosched simulate --swf`'s engine on a synthetic trace (cosched-cluster):
/// exclusive EASY, and EASY with conflict-aware sharing nodes over the
/// built-in few-bad matrix.
fn swf_case(a: &SimulateBenchRequest, ctx: &Ctx) -> anyhow::Result<Vec<SwfRun>> {
    use cosched_cluster::{simulate, synthetic, Config, Scheduler};
    use cosched_sched::{policy_from_spec, Policy, ProgramTable};
    let m = cosched_sched::scenario::Scenario::parse(include_str!("../../../../examples/scenarios/few-bad.toml"), "few-bad.toml")
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .slowdown;
    let names: Vec<String> = (0..m.len()).map(|i| format!("p{i}")).collect();
    ctx.step(&format!("(e) a synthetic SWF-like trace of {} jobs on {} nodes of 16 cores at load 0.95, EASY depth 100", a.jobs, a.nodes));
    let jobs = synthetic::trace(a.nodes, 16, a.jobs, m.len(), 0.95, 7);
    let table = ProgramTable::new(jobs.iter().map(|j| j.program).collect(), m, None).map_err(anyhow::Error::msg)?;
    let cfg = Config::new(a.nodes, 16, Scheduler::Easy);
    let mut out = Vec::new();
    for (label, spec) in [("exclusive EASY", None), ("EASY + conflict-aware:threshold=50", Some("conflict-aware:threshold=50"))] {
        let (t, shared) = timed(a.repeats, || {
            let mut p: Option<Box<dyn Policy>> = spec.map(policy_from_spec).transpose().map_err(anyhow::Error::msg)?;
            let s = simulate(&jobs, &names, &cfg, &table, &table, p.as_deref_mut().map(|p| p as &mut dyn Policy), &mut |_| {})?;
            Ok(s.shared.iter().filter(|&&x| x).count())
        })?;
        out.push(SwfRun {
            schedule: label.to_string(),
            jobs: a.jobs,
            nodes: a.nodes,
            cores: 16,
            shared_jobs: shared,
            makespan: None,
            seconds: t.0,
            cpu_seconds: t.1,
        });
    }
    Ok(out)
}

/// Case (d) as `--json` prints it: the Rust and the Lua policy's seconds
/// and their ratio within a repeat.
#[derive(Debug, Serialize)]
pub struct LuaRun {
    pub orders: usize,
    pub rust_seconds: Summary,
    pub lua_seconds: Summary,
    pub rust_cpu_seconds: Summary,
    pub lua_cpu_seconds: Summary,
    pub ratio_wall: Summary,
    pub ratio_cpu: Summary,
    /// Questions the engine asked the policy over all orders (each side
    /// is asked the same).
    pub decide_calls: usize,
    /// The Lua run's CPU time less the Rust run's, per question, in ns.
    pub extra_cpu_ns_per_call: Summary,
    pub aim: f64,
}

/// Issue 42's bar (Lua at most 2x Rust; issue 17's was 5x): `examples/lua/conflict-aware.lua` and the Rust
/// `conflict-aware` each run the Monte-Carlo (the policy and the exclusive
/// baseline on every order), side by side in each repeat, which goes first
/// alternating; the ratio Lua / Rust is taken within a repeat. The two must
/// give the same figures on every order, or the case fails.
fn lua_beside_rust(scenario: &cosched_sched::scenario::Scenario, a: &SimulateBenchRequest, ctx: &Ctx) -> anyhow::Result<Case<LuaRun>> {
    use cosched_measure::profile::process_cpu_s;
    use cosched_sched::montecarlo::run_orders_with;
    use cosched_sched::Params;
    ctx.step(&format!("(d) {} orders under examples/lua/conflict-aware.lua and under the Rust conflict-aware, side by side", a.orders));
    let makers = crate::policy::Policies::simulation();
    let script = std::path::Path::new("examples/lua/conflict-aware.lua");
    makers.preload(script, include_str!("../../../../examples/lua/conflict-aware.lua"));
    let mut rust = Params::new();
    rust.insert("threshold".into(), "100".into());
    let mut lua = rust.clone();
    lua.insert("path".into(), script.display().to_string());
    let specs = [vec![cosched_sched::Spec::new("conflict-aware", rust)], vec![cosched_sched::Spec::new(cosched_lua::NAME, lua)]];
    let build = |n: &str, p: &Params| makers.build(n, p);
    let (mut wall, mut cpu): ([Vec<f64>; 2], [Vec<f64>; 2]) = Default::default();
    let (mut wall_ratio, mut cpu_ratio) = (Vec::new(), Vec::new());
    for r in 0..a.repeats {
        let mut figures = Vec::new();
        let first = r % 2;
        for k in [first, 1 - first] {
            let (t, c) = (std::time::Instant::now(), process_cpu_s());
            let res = run_orders_with(scenario, &specs[k], a.orders, 1, &build).map_err(anyhow::Error::new)?;
            wall[k].push(t.elapsed().as_secs_f64());
            cpu[k].push(process_cpu_s() - c);
            figures.push((k, res.into_iter().map(|o| o.outcomes[0].metrics).collect::<Vec<_>>()));
        }
        if figures[0].1 != figures[1].1 {
            anyhow::bail!("the Lua and the Rust conflict-aware differ on some order: examples/lua/conflict-aware.lua is not the Rust policy");
        }
        wall_ratio.push(wall[1][r] / wall[0][r]);
        cpu_ratio.push(cpu[1][r] / cpu[0][r]);
    }
    let notes = makers.log().summary();
    if !notes.is_empty() {
        anyhow::bail!("the Lua policy reported: {}", notes.join("; "));
    }
    let decisions = decisions_asked(scenario, &specs[0], a.orders, &build)?;
    let s = |v: &[f64]| cosched_model::stats::Summary::of(v).expect("repeats >= 1");
    let (wr, cr) = (s(&wall_ratio), s(&cpu_ratio));
    // What the script costs beyond the Rust policy, per question the engine
    // asks: the CPU time of each repeat's Lua run less its Rust run.
    let extra: Vec<f64> = cpu[1].iter().zip(&cpu[0]).map(|(l, r)| (l - r) * 1e9 / decisions.max(1) as f64).collect();
    let extra = s(&extra);
    let rows = vec![
        BenchCase::new(
            format!("(d) Monte-Carlo: {} orders, Rust conflict-aware + exclusive", a.orders),
            &(s(&wall[0]), s(&cpu[0])),
            "-",
            format!("{decisions} decide calls"),
        ),
        BenchCase::new(
            "(d) the same, examples/lua/conflict-aware.lua + exclusive",
            &(s(&wall[1]), s(&cpu[1])),
            "Lua / Rust <= 2",
            format!(
                "Lua / Rust: {:.2}x ({:.2}-{:.2}) wall, {:.2}x CPU; {:.0} CPU ns more per decide call",
                wr.median, wr.min, wr.max, cr.median, extra.median
            ),
        ),
    ];
    let json = LuaRun {
        orders: a.orders,
        rust_seconds: s(&wall[0]),
        lua_seconds: s(&wall[1]),
        rust_cpu_seconds: s(&cpu[0]),
        lua_cpu_seconds: s(&cpu[1]),
        ratio_wall: wr,
        ratio_cpu: cr,
        decide_calls: decisions,
        extra_cpu_ns_per_call: extra,
        aim: 2.0,
    };
    Ok(Case { rows, json })
}

/// How many times the engine asks `spec`'s policy to decide over `orders`
/// orders (the exclusive baselines' questions left out), counted in a run
/// of its own: a counter in the timed runs would cost both sides its call.
fn decisions_asked(scenario: &cosched_sched::scenario::Scenario, spec: &[cosched_sched::Spec], orders: usize, build: &cosched_sched::montecarlo::Build<'_>) -> anyhow::Result<usize> {
    use cosched_sched::{Decision, JobOutcome, Params, Policy, View};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    struct Counted(Box<dyn Policy>, Arc<AtomicUsize>);
    impl Policy for Counted {
        fn decide(&mut self, view: &View) -> Vec<Decision> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.decide(view)
        }
        fn observe(&mut self, outcome: &JobOutcome) {
            self.0.observe(outcome);
        }
        fn acts_on_running(&self) -> bool {
            self.0.acts_on_running()
        }
        fn shares_nodes(&self) -> bool {
            self.0.shares_nodes()
        }
        fn wake_at(&self) -> Option<f64> {
            self.0.wake_at()
        }
    }
    let asked = Arc::new(AtomicUsize::new(0));
    let name = spec.first().map(|s| s.name.clone()).unwrap_or_default();
    let counting = |n: &str, p: &Params| -> Result<Box<dyn Policy>, String> {
        let inner = build(n, p)?;
        Ok(if n == name { Box::new(Counted(inner, asked.clone())) } else { inner })
    };
    cosched_sched::montecarlo::run_orders_with(scenario, spec, orders, 1, &counting).map_err(anyhow::Error::new)?;
    Ok(asked.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_without_trailing_zeros() {
        assert_eq!(fmt_interval(1.0), "1 s");
        assert_eq!(fmt_interval(0.1), "100 ms");
        assert_eq!(fmt_num(10.0), "10");
        assert_eq!(fmt_num(0.5), "0.5");
    }

    #[test]
    fn a_scaling_spec_sets_what_it_names_and_refuses_what_it_does_not_know() {
        let r = ScalingRequest::parse("jobs=1000,2000 nodes=50 seed=3 sharing=noplan sharing=no-twins").unwrap();
        assert_eq!((r.jobs, r.nodes, r.seed, r.cores, r.load), (vec![1000, 2000], vec![50], 3, 16, 0.95));
        assert_eq!(r.policies, vec!["noplan", "no-twins"]);
        assert_eq!(ScalingRequest::parse("").unwrap().policies, vec!["conflict-aware:threshold=50"]);
        assert!(ScalingRequest::parse("sharing=none").unwrap().policies.is_empty());
        assert_eq!(ScalingRequest::parse("mix=1,0,0").unwrap().mix, Mix { small: 1.0, nodes: 0.0, wide: 0.0 });
        for bad in ["jobs", "jobs=ten", "mix=0.5,0.5,0.5", "cores=-1", "colour=red"] {
            let e = ScalingRequest::parse(bad).unwrap_err();
            assert!(e.contains(bad.split('=').next().unwrap()), "{bad}: {e}");
        }
    }
}
