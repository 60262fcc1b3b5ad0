//! `cosched probe`: a job's sensitivity and contentiousness curves against
//! the DistGen stressor (Weidendorfer and Breitbart), measured, stored and
//! plotted; or its one point against the pipe stressor.

use std::path::PathBuf;

use clap::Args;
use cosched_app::probe::{fits_in, probe, DistgenMode, JobProbe, ProbeRequest, Stressor, StressorSetup};
use cosched_report::curves::{fmt_intensity, fmt_kib};
use cosched_report::{fmt_ci, table};

use super::common::{ctx, print_json, DbArgs, InRegimeArgs, JsonArgs, WorkloadArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched probe --workload examples/characterize.toml --job stream --job compute\n  \
    cosched probe --workload examples/characterize.toml --repeats 5 --svg-dir plots/\n  \
    cosched probe --workload w.toml --sizes-kib 256,16384,131072 --intensities 1.0\n  \
    cosched probe --workload w.toml --stressor pipe --repeats 4\n  \
    cosched probe --workload w.toml --stressor-threads 2 --stressor-mode chase\n  \
    cosched probe --workload w.toml --in-regime apart --regime-wait 2h   # caches apart only\n  \
    cosched classify --workload examples/characterize.toml   # N / C / S from the probes\n\n\
    Each job runs where `cosched run` would put it and the distgen stressor where a\n\
    one-core host job would go beside it; odd repeats trade their CPUs where they\n\
    can (a CPU that takes the disk's interrupts is then not charged to the job).\n\
    Each repeat records its cache regime (the CPU round trip read just before and\n\
    after it). At each level (working-set size x intensity) a repeat runs the job\n\
    alone, the stressor alone, then both together with the shorter re-launched until\n\
    the longer ends. Sensitivity is the job's slowdown, contentiousness the stressor's.\n\
    The default ladder comes from this node's L2 and LLC sizes: half of L2, a quarter,\n\
    half and all of the LLC, 4x and 16x the LLC, at intensities 1.0 and 0.5. The\n\
    stressor is sized by calibration (stored, reused by later probes). Probing a few\n\
    levels again (--sizes-kib, --intensities) replaces just those levels of the\n\
    curve that predictors read.\n\n\
    --stressor-threads N runs DistGen on N cores of the host pool (a host job of N\n\
    cores beside the probed one); --stressor-mode picks the DistGen paper's access\n\
    order: stream (address order), random (a fixed pseudo-random order of the same\n\
    blocks) or chase (a linked list, one dependent load at a time). Any setup but\n\
    one thread in stream mode is stored under its own stressor name\n\
    (distgen:mode=chase,threads=2), a curve of its own that the predictors' distgen\n\
    curve never mixes with.\n\n\
    --stressor pipe measures one point instead: the job beside the `pipe` kernel\n\
    (bytes streamed through a pipe between two processes on one CPU), a resource\n\
    DistGen does not exercise. Predictors read it beside the curve.\n\n\
    With --in-regime, only repeats run wholly in that cache regime count: before\n\
    each repeat the two CPUs' round trip is read and, while it reads the other\n\
    regime, the probe waits (checking every 3 s). A repeat that switched is stored,\n\
    not counted, and taken again; predictors fitting on that regime read the\n\
    repeats that ran in it.")]
pub struct ProbeArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// A job to probe (repeatable); default: every job of the workload.
    #[arg(long = "job", value_name = "NAME")]
    pub jobs: Vec<String>,
    /// Repeats per level.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// The stressor: distgen (a ladder of working sets: caches and memory)
    /// or pipe (one point: the kernel's pipe path).
    #[arg(long, default_value = "distgen", value_name = "NAME", value_parser = ["distgen", "pipe"])]
    pub stressor: String,
    /// DistGen's threads, each on a core of the host pool (the DistGen
    /// paper's multi-threaded stressor).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub stressor_threads: u32,
    /// DistGen's access order: stream, random or chase.
    #[arg(long, default_value = "stream", value_name = "MODE", value_parser = ["stream", "random", "chase"])]
    pub stressor_mode: String,
    /// Stressor working-set sizes in KiB, comma-separated (default: the
    /// ladder for this node's caches).
    #[arg(long, value_name = "LIST")]
    pub sizes_kib: Option<String>,
    /// Stressor intensities (share of time spent accessing memory, 0 < x <= 1),
    /// comma-separated (default: 1.0,0.5).
    #[arg(long, value_name = "LIST")]
    pub intensities: Option<String>,
    /// How long the stressor runs alone at each level, in seconds; its work
    /// is sized from its calibration at that level.
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub stressor_seconds: f64,
    /// Directory for the curves, one SVG per job: probe-<workload>-<job>.svg
    /// (default: figures/ beside the database).
    #[arg(long, value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
    #[command(flatten)]
    pub regime: InRegimeArgs,
    // With --json: the curves.
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: ProbeArgs) -> anyhow::Result<()> {
    let req = ProbeRequest {
        workload: a.workload.workload.clone(),
        jobs: a.jobs,
        repeats: a.repeats,
        stressor: Stressor::parse(&a.stressor).expect("clap admits only the stressors' names"),
        setup: StressorSetup {
            threads: a.stressor_threads,
            mode: DistgenMode::parse(&a.stressor_mode).expect("clap admits only the modes' names"),
        },
        sizes_kib: a.sizes_kib,
        intensities: a.intensities,
        stressor_seconds: a.stressor_seconds,
        svg_dir: a.svg_dir,
        in_regime: a.regime.in_regime,
        regime_wait: a.regime.regime_wait,
        db: a.db.db,
    };
    let done = probe(&req, &ctx())?;
    if a.json.json {
        return print_json(&done);
    }
    for p in &done {
        show(p);
    }
    println!(
        "sensitivity = the job's slowdown beside the stressor, contentiousness = the stressor's slowdown beside the job;\n\
         slowdown = co-run / solo time of the same repeat; median [95% CI] (the range below 6 repeats).\n\
         Classes: cosched classify --workload {}",
        a.workload.workload.display()
    );
    Ok(())
}

fn show(p: &JobProbe) {
    let interval = cosched_report::interval_name(p.points.iter().map(|pt| pt.job_slowdown.n));
    println!(
        "{} (campaign {}): job on CPU {}, {} on CPU {}{}",
        p.job,
        p.campaign,
        cosched_model::topology::format_cpulist(&p.job_cpus),
        p.stressor,
        cosched_model::topology::format_cpulist(&p.stressor_cpus),
        if p.shared_cpus { " (shared)" } else { "" }
    );
    let rows: Vec<Vec<String>> = p
        .points
        .iter()
        .map(|pt| {
            let pipe = p.stressor == "pipe";
            vec![
                if pipe { "-".to_string() } else { fmt_kib(pt.level.size_kib) },
                if pipe { "-".to_string() } else { fits_in(pt.level.size_kib, p.l2_kib, p.llc_kib).to_string() },
                fmt_intensity(pt.level.intensity),
                fmt_ci(&pt.job_slowdown, 3),
                fmt_ci(&pt.stressor_slowdown, 3),
                pt.job_slowdown.n.to_string(),
            ]
        })
        .collect();
    println!(
        "{}",
        table(&["working set", "fits in", "intensity", &format!("sensitivity [{interval}]"), &format!("contentiousness [{interval}]"), "n"], &rows)
    );
    let g = &p.regimes;
    if g.read > 0 {
        println!(
            "cache regime of the {} repeats read: {} shared cache, {} caches apart, {} changed during the repeat{}",
            g.read,
            g.shared,
            g.apart,
            g.changed_within,
            if g.switches.is_empty() { String::new() } else { format!("; warning: {} repeat(s) away from the first ({})", g.switches.len(), g.first.as_deref().unwrap_or("-")) }
        );
    }
    match &p.svg {
        Some(svg) => println!("curves: {}\n", svg.display()),
        None => println!(),
    }
}

