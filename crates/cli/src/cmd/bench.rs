//! `cosched bench ...`: benchmarks that print figures measured side by side.

use std::time::Duration;

use clap::{Args, Subcommand};
use cosched_measure::bench::{build_reference_triad, compare_triad, linearity};
use cosched_measure::kernel::kernel_argv;
use cosched_measure::launch::Launch;
use cosched_measure::perf::SyscallMethod;
use cosched_measure::profile::{kernel_work_for, sampler_overhead};
use cosched_report::{fmt_ci, fmt_spread, table};

use super::calibrate::{calibrate_kernels, render, select};
use super::common::parse_cpus;
use crate::exit::bad_input;
use crate::progress::{step, Progress};

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// The stream kernel against a C STREAM triad, and every kernel's rate with spread.
    #[command(after_help = "Examples:\n  cosched bench kernels\n  cosched bench kernels --repeats 9 --kernel stream --kernel compute --json")]
    Kernels(KernelsBench),
    /// What the profile sampler costs a job: its run time sampled over its run time not sampled.
    #[command(after_help = "Each repeat runs the kernel without sampling, sampled every --interval and \
sampled ten times as often, in an order that rotates from repeat to repeat; a ratio is taken within \
one repeat. The aim at 1 s is a ratio below 1.01.\n\n\
Examples:\n  cosched bench profile\n  cosched bench profile --kernel syscall --repeats 9\n  \
cosched bench profile --interval 500ms --syscalls proc --json")]
    Profile(ProfileBench),
    /// How fast the simulator is: Monte-Carlo orders, exhaustive enumeration, a large cluster.
    #[command(after_help = "Prints, as medians with min-max over --repeats:\n  \
(a) seed 000's Monte-Carlo: --orders orders of the 38-job example under 4 policies (aim < 1 s);\n  \
(b) 003(d)'s exhaustive enumeration of N = 10 programs with a random matrix, and the optimum (aim < 5 s);\n  \
(c) a synthetic run of --jobs jobs on --nodes nodes of 4 cores under noplan and best-match (aim < 10 s).\n\n\
Examples:\n  cosched bench simulate\n  cosched bench simulate --repeats 5 --json\n  cosched bench simulate --orders 1000 --jobs 10000 --nodes 100")]
    Simulate(SimulateBench),
    /// Every predictor's accuracy on a workload's measured pairs, c-all and scn as baselines.
    #[command(after_help = "Prints the table of `cosched evaluate-predictors` (leave-one-program-out) with \
the baselines of seeds 000 (c-all) and 003(a) (scn) first, the fold method and the counts behind it; \
nothing is stored. Needs the workload profiled, probed and paired (cosched profile / probe / pairs).\n\n\
Examples:\n  cosched bench predictors --workload examples/predict12.toml\n  \
cosched bench predictors --workload examples/predict12.toml --level 1.5 --json")]
    Predictors(PredictorsBench),
}

#[derive(Args, Debug)]
pub struct PredictorsBench {
    /// Workload whose measured pairs are predicted.
    #[arg(long, value_name = "FILE")]
    pub workload: std::path::PathBuf,
    /// A slowdown above this is a severe conflict.
    #[arg(long, default_value_t = cosched_predict::DEFAULT_SEVERE, value_name = "X")]
    pub level: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: super::common::DbArgs,
}

/// Baselines first, then the other predictors in registry order.
fn predictors_bench(a: PredictorsBench) -> anyhow::Result<()> {
    use super::evaluate::{check_level, compute, counts, describe, render, specs};
    check_level(a.level)?;
    let mut names = vec!["c-all".to_string(), "scn".to_string()];
    for (n, _) in cosched_predict::predictor_names() {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    }
    let names = specs(&names)?;
    let w = super::common::load_workload(&a.workload)?;
    let store = a.db.open_existing()?;
    let (train, sources) = super::predict::training_set(&store, &w, &a.workload)?;
    let c = counts(&store, &w, &train, sources)?;
    let folds = cosched_predict::Folds::LeaveOneProgramOut;
    let rows = compute(&train, &names, folds, a.level)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"counts": c, "level": a.level, "folds": folds.name(),
            "rows": rows.iter().map(|r| serde_json::json!({"predictor": r.predictor, "folds": r.folds, "accuracy": r.accuracy})).collect::<Vec<_>>()}))?);
        return Ok(());
    }
    println!("predictors on {} (baselines: c-all = seed 000, scn = seed 003 a)", w.name);
    println!("{}", render(&rows));
    println!("{}", describe(&c, folds, a.level));
    Ok(())
}

#[derive(Args, Debug)]
pub struct ProfileBench {
    /// The kernel to run (fixed work, sized by a warm-up run).
    #[arg(long, default_value = "compute", value_name = "NAME")]
    pub kernel: String,
    /// Repeats of each variant.
    #[arg(long, default_value_t = 7)]
    pub repeats: usize,
    /// Sampling interval (`1s`, `250ms`, `0.5s`); a tenth of it is measured too.
    #[arg(long, default_value = "1s", value_parser = parse_interval, value_name = "DURATION")]
    pub interval: Duration,
    /// Seconds of work per run.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// How to count system calls: auto, tracepoint, perf-stat or proc.
    #[arg(long, default_value = "auto", value_name = "METHOD")]
    pub syscalls: SyscallMethod,
    /// CPUs to pin every run to.
    #[arg(long, default_value = "0", value_name = "LIST")]
    pub cpus: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Parses a sampling interval: a number with `ms` or `s` (a bare number is
/// seconds), above zero.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("`{s}` is not a duration; expected e.g. 1s, 250ms, 0.5s"))?;
    let secs = v * scale;
    if !(secs.is_finite() && secs >= 1e-3) {
        return Err(format!("`{s}`: the interval must be at least 1ms"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[derive(Args, Debug)]
pub struct KernelsBench {
    /// Repeats of each measurement.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Array size of the triad comparison, MiB per array (>= 4x the LLC).
    #[arg(long, default_value_t = 64)]
    pub array_mib: u64,
    /// Triad passes per run.
    #[arg(long, default_value_t = 20)]
    pub passes: u64,
    /// Kernels whose rate to measure (repeatable); default: all.
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
    /// CPUs to pin every run to.
    #[arg(long, default_value = "0", value_name = "LIST")]
    pub cpus: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchArgs) -> anyhow::Result<()> {
    match a.what {
        BenchWhat::Kernels(k) => kernels(k),
        BenchWhat::Profile(p) => profile(p),
        BenchWhat::Simulate(s) => simulate_bench(s),
        BenchWhat::Predictors(p) => predictors_bench(p),
    }
}

fn profile(a: ProfileBench) -> anyhow::Result<()> {
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        return Err(bad_input("--seconds must be above 0"));
    }
    let cpus = parse_cpus(&a.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    let spec = select(std::slice::from_ref(&a.kernel))?[0];
    // Ctrl-C unwinds through the runs, whose groups are killed on the way
    // out, instead of leaving the running kernel orphaned.
    cosched_measure::launch::install_interrupt_handler();
    let params = spec.resolve_params(&Default::default()).map_err(anyhow::Error::msg)?;
    let host_cores = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    step(&format!("sizing {} to ~{} s of work on CPU {}", spec.name, a.seconds, a.cpus));
    let work = kernel_work_for(spec.name, &params, 1, &cpus, a.seconds)?;
    let launch = Launch::new(kernel_argv(spec.name, work, 1, &params)).pinned(cpus.clone());
    let intervals = [a.interval, a.interval / 10];
    step(&format!(
        "{} repeats of: plain, sampled every {:?}, sampled every {:?} (order rotates)",
        a.repeats, intervals[0], intervals[1]
    ));
    let bar = Progress::new("profile", (a.repeats * (intervals.len() + 1)) as u64);
    let o = sampler_overhead(&launch, &intervals, a.repeats, host_cores, a.syscalls, &mut |d, _| bar.set(d as u64, ""))?;
    bar.finish();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&o)?);
        return Ok(());
    }
    let plain = cosched_model::stats::Summary::of(&o.plain_s).expect("repeats >= 1");
    println!(
        "{} (work {work}, CPU {}): {} time without sampling {} s; {} system calls/s counted by {}",
        spec.name,
        a.cpus,
        o.timing,
        fmt_spread(&plain, 3),
        o.syscall_rate.map(cosched_report::si).unwrap_or_else(|| "?".into()),
        o.syscall_source
    );
    for n in &o.notes {
        println!("  ({n})");
    }
    let rows: Vec<Vec<String>> = o
        .intervals
        .iter()
        .map(|iv| {
            vec![
                format!("{} ({} Hz)", fmt_interval(iv.interval_s), fmt_hz(1.0 / iv.interval_s)),
                format!("{:.0}", iv.samples_per_run),
                fmt_spread(&iv.ratio, 4),
                format!("{:+.2}%", 100.0 * (iv.ratio.median - 1.0)),
                format!("{:.3}%", 100.0 * iv.sampler_core_share.median),
            ]
        })
        .collect();
    println!(
        "{}",
        table(
            &["sampling every", "samples/run", "time ratio sampled/plain, median (min-max, n)", "overhead", "sampler CPU, % of a core"],
            &rows,
        )
    );
    println!(
        "ratio = the kernel's {} time sampled over not sampled, same repeat; aim < 1.01 at 1 s. \
The sampler's own CPU time is measured on its thread; the kernel's core is pinned, the sampler's is not. \
Counting system calls with perf costs every call of the job (a few hundred ns on a VM): \
compare --syscalls proc on a syscall-heavy kernel.",
        o.timing
    );
    Ok(())
}

fn fmt_interval(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", fmt_num(s))
    } else {
        format!("{} ms", fmt_num(s * 1e3))
    }
}

fn fmt_hz(hz: f64) -> String {
    fmt_num(hz)
}

/// A number without trailing zeros: 1, 0.5, 12.5.
fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn kernels(a: KernelsBench) -> anyhow::Result<()> {
    if a.repeats == 0 || a.passes == 0 || a.array_mib == 0 {
        return Err(bad_input("--repeats, --passes and --array-mib must be at least 1"));
    }
    let cpus = parse_cpus(&a.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    let specs = select(&a.kernels)?;
    let dir = tempfile::tempdir()?;
    step("stream kernel vs C STREAM triad (cc -O2), alternating, same CPU");
    let exe = build_reference_triad(dir.path())?;
    let p = Progress::new("triad", a.repeats as u64);
    let cmp = compare_triad(&exe, a.array_mib, a.passes, a.repeats, &cpus, &mut |d, _| p.set(d as u64, ""))?;
    p.finish();
    step("each kernel's rate (warm-up sizes work to ~0.3 s, then timed repeats)");
    let cals = calibrate_kernels(&specs, 1, a.repeats, 0.3, &cpus)?;
    step("linearity: rate at 1/4 of the work over rate at the full work (1.00 = linear)");
    let p = Progress::new("linearity", cals.len() as u64);
    let mut lin = Vec::new();
    for (i, c) in cals.iter().enumerate() {
        lin.push(linearity(&c.kernel, &c.params, c.work_per_run, a.repeats, &cpus)?);
        p.set(i as u64 + 1, &c.kernel);
    }
    p.finish();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"triad": cmp, "kernels": cals, "linearity": lin}))?
        );
        return Ok(());
    }
    let bw = |v: &[f64]| cosched_model::stats::Summary::of(v).expect("repeats >= 1");
    println!(
        "{}",
        table(
            &["triad", "bandwidth MB/s median [95% CI]"],
            &[
                vec!["C STREAM (cc -O2)".into(), fmt_ci(&bw(&cmp.reference_mb_s), 0)],
                vec!["cosched stream".into(), fmt_ci(&bw(&cmp.ours_mb_s), 0)],
            ],
        )
    );
    println!(
        "ratio cosched/C: median {:.3} (min {:.3}, max {:.3}, n={}, {} MiB arrays x {} passes; aim >= 0.95)\n",
        cmp.ratio.median, cmp.ratio.min, cmp.ratio.max, cmp.ratio.n, a.array_mib, a.passes
    );
    println!("{}\n", render(&cals));
    let rows: Vec<Vec<String>> = lin
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
    println!("{}", table(&["kernel", "work full / quarter", "rate ratio quarter/full", "spread full / quarter"], &rows));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse_in_seconds_and_milliseconds() {
        assert_eq!(parse_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_interval("0.5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_interval("2"), Ok(Duration::from_secs(2)));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("fast").unwrap_err().contains("250ms"));
    }

    #[test]
    fn numbers_print_without_trailing_zeros() {
        assert_eq!(fmt_interval(1.0), "1 s");
        assert_eq!(fmt_interval(0.1), "100 ms");
        assert_eq!(fmt_hz(10.0), "10");
        assert_eq!(fmt_hz(0.5), "0.5");
    }
}

#[derive(Args, Debug)]
pub struct SimulateBench {
    /// Repeats of each measurement.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Orders of the Monte-Carlo case.
    #[arg(long, default_value_t = 10_000)]
    pub orders: usize,
    /// Jobs of the cluster case.
    #[arg(long, default_value_t = 100_000)]
    pub jobs: usize,
    /// Nodes of the cluster case.
    #[arg(long, default_value_t = 1_000)]
    pub nodes: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
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

fn simulate_bench(a: SimulateBench) -> anyhow::Result<()> {
    use cosched_sched::montecarlo::{parse_spec, run_orders};
    use cosched_sched::scenario::Scenario;
    use cosched_sched::{policy_by_name, simulate_with, synthetic, Params, SimOptions};
    if a.repeats == 0 || a.orders == 0 || a.jobs == 0 || a.nodes == 0 {
        return Err(bad_input("--repeats, --orders, --jobs and --nodes must be at least 1"));
    }
    let scenario = Scenario::parse(include_str!("../../../../examples/scenarios/seed000.toml"), "examples/scenarios/seed000.toml")
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let policies = ["noplan", "conflict-aware:threshold=100", "best-match", "auto-threshold"]
        .iter()
        .map(|p| parse_spec(p).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    step(&format!("(a) {} orders x 38 jobs x {} policies (+ exclusive as baseline), {} threads", a.orders, policies.len(), std::thread::available_parallelism().map_or(1, |n| n.get())));
    let (mc, _) = timed(a.repeats, || run_orders(&scenario, &policies, a.orders, 1).map_err(anyhow::Error::new))?;
    let sims = a.orders * (policies.len() + 1);

    step("(b) enumeration of N = 10 programs, 2 instances each, on 10 dual-core nodes, with a random matrix");
    let n = 10;
    let m: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| 1.0 + ((i * 7 + j * 13) % 17) as f64 / 10.0).collect()).collect();
    let (en, land) = timed(a.repeats, || {
        let land = cosched_model::enumerate::landscape(&m, 40).map_err(|e| anyhow::anyhow!("{e}"))?;
        let best = cosched_model::enumerate::optimal_placement(&m, false).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok((land.all.count, best.map(|b| b.slowdown.average)))
    })?;

    step(&format!("(c) {} jobs on {} nodes of 4 cores, Poisson arrivals at load 0.95, window 64", a.jobs, a.nodes));
    let w = synthetic::cluster(a.nodes, 4, a.jobs, 20, 0.95, 7);
    let opts = SimOptions { nodes: a.nodes, window: Some(64) };
    let mut cluster = Vec::new();
    for spec in ["noplan", "best-match"] {
        let (name, params): (String, Params) = parse_spec(spec).map_err(anyhow::Error::msg)?;
        let (t, events) = timed(a.repeats, || {
            let mut p = policy_by_name(&name, &params).map_err(anyhow::Error::msg)?;
            let tr = simulate_with(&w.platform, &w.jobs, &w.table, &w.table, p.as_mut(), &opts)?;
            Ok(tr.events.len())
        })?;
        cluster.push((spec, t, events));
    }

    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
                "montecarlo": {"orders": a.orders, "jobs": 38, "policies": policies.len(), "simulations": sims, "seconds": mc.0, "cpu_seconds": mc.1},
                "enumeration": {"programs": n, "placements": land.0, "seconds": en.0, "cpu_seconds": en.1},
                "cluster": cluster.iter().map(|(p, t, e)| serde_json::json!({"policy": p, "jobs": a.jobs, "nodes": a.nodes, "events": e, "seconds": t.0, "cpu_seconds": t.1})).collect::<Vec<_>>(),
            })
        );
        return Ok(());
    }
    let per = |s: &cosched_model::stats::Summary, k: usize| format!("{:.1}", s.median * 1e6 / k as f64);
    let mut rows = vec![
        vec![
            format!("(a) Monte-Carlo: {} orders x 38 jobs x {} policies + exclusive", a.orders, policies.len()),
            fmt_spread(&mc.0, 3),
            fmt_spread(&mc.1, 3),
            "1".into(),
            format!("{} CPU us / simulation", per(&mc.1, sims)),
        ],
        vec![
            format!("(b) enumeration N = 10: {} placements + optimum", land.0),
            fmt_spread(&en.0, 3),
            fmt_spread(&en.1, 3),
            "5".into(),
            format!("{} CPU us / placement", per(&en.1, land.0 as usize)),
        ],
    ];
    for (p, t, e) in &cluster {
        rows.push(vec![
            format!("(c) {} jobs on {} nodes, {p}", a.jobs, a.nodes),
            fmt_spread(&t.0, 3),
            fmt_spread(&t.1, 3),
            "10".into(),
            format!("{} CPU us / event ({e} events)", per(&t.1, *e)),
        ]);
    }
    println!(
        "{}",
        table(&["case", "wall s, median (min-max, n)", "CPU s (all threads)", "aim, wall s", "cost"], &rows)
    );
    println!("{} threads; (a) is parallel over orders, (b) and (c) run on one thread.", std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Wall times mean little on a busy node; say how busy it was.
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average (1, 5, 15 min) at the end: {}", l.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    }
    Ok(())
}
