//! `cosched demo`: the main job, end to end on this node.
//!
//! Today: calibrate two kernels, run them alone and together (stream with
//! stream, compute with stream) and print the slowdowns. Later stages of the
//! pipeline (profile, predict, decide, execute, learn) join as they land.

use std::collections::BTreeMap;

use clap::Args;
use cosched_measure::corun::{measure_pair, PairMeasurement};
use cosched_measure::kernel::kernel_argv;
use cosched_measure::launch::Launch;
use cosched_model::calibration::Calibration;
use cosched_model::kernel::kernel;
use cosched_model::stats::Summary;
use cosched_report::{fmt_spread, table};
use serde::Serialize;

use super::calibrate::{calibrate_kernels, render};
use super::common::store_input_error;
use crate::exit::bad_input;
use crate::progress::{step, Progress};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Repeats of each measurement (solo A, solo B, A with B).
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Solo run time each job is sized to, in seconds.
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub seconds: f64,
    /// Print the results as JSON on stdout (progress still goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Keep results in this database instead of a temporary one.
    #[arg(long, env = "COSCHED_DB", value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct PairResult {
    jobs: [String; 2],
    cpus: [Vec<u32>; 2],
    work: [u64; 2],
    measurement: PairMeasurement,
    solo_s: [Summary; 2],
    corun_s: [Summary; 2],
    slowdown: [Summary; 2],
}

const PAIRS: [[&str; 2]; 2] = [["stream", "stream"], ["compute", "stream"]];

pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    if a.repeats == 0 || !(a.seconds > 0.0) {
        return Err(bad_input("--repeats must be >= 1 and --seconds > 0"));
    }
    let tmp;
    let db_path = match &a.db {
        Some(p) => p.clone(),
        None => {
            tmp = tempfile::Builder::new().prefix("cosched-demo-").tempdir()?;
            tmp.path().join(cosched_store::DB_FILE)
        }
    };
    // Opened before measuring, so an unusable --db fails at once.
    let mut store = cosched_store::Store::open(&db_path).map_err(store_input_error)?;
    let ncpu = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    let cpus: [Vec<u32>; 2] = if ncpu >= 2 { [vec![0], vec![1]] } else { [vec![0], vec![0]] };
    if ncpu < 2 {
        step("this node has one CPU: co-runs share it, so slowdowns include time-slicing");
    }

    step("1/2 calibrate: each kernel's solo rate on this node");
    let specs = vec![kernel("stream").expect("catalogue"), kernel("compute").expect("catalogue")];
    let cals = calibrate_kernels(&specs, 1, a.repeats.max(3), 0.3, &cpus[0])?;
    store.put_calibrations(&cals)?;
    if !a.json {
        println!("{}\n", render(&cals));
    }

    step(&format!(
        "2/2 co-run: each pair {} times (solo A, solo B, then A with B; the shorter is re-launched until the longer ends)",
        a.repeats
    ));
    let progress = Progress::new("co-run", (PAIRS.len() * a.repeats * 3) as u64);
    let mut results = Vec::new();
    for (pi, pair) in PAIRS.iter().enumerate() {
        let work = pair.map(|k| work_for(&cals, k, a.seconds));
        let argv = [0, 1].map(|i| kernel_argv(pair[i], work[i], 1, &default_params(pair[i])));
        let launches = [0, 1].map(|i| Launch::new(argv[i].clone()).pinned(cpus[i].clone()));
        let base = (pi * a.repeats * 3) as u64;
        let label = format!("{} + {}", pair[0], pair[1]);
        let m = measure_pair([&launches[0], &launches[1]], a.repeats, &mut |done, _, what| {
            progress.set(base + done as u64, &format!("{label}: {what}"));
        })?;
        let s = |v: &[f64]| Summary::of(v).expect("repeats >= 1");
        results.push(PairResult {
            jobs: pair.map(String::from),
            cpus: cpus.clone(),
            work,
            solo_s: [s(&m.solo_s[0]), s(&m.solo_s[1])],
            corun_s: [s(&m.corun_s[0]), s(&m.corun_s[1])],
            slowdown: [s(&m.slowdowns(0)), s(&m.slowdowns(1))],
            measurement: m,
        });
    }
    progress.finish();

    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({
            "calibrations": cals,
            "pairs": results,
            "db": db_path,
        }))?);
    } else {
        println!("{}", render_pairs(&results));
        println!(
            "\nslowdown = co-run time / solo time of the same repeat (median, min-max over {} repeats);\n\
             times are each kernel's work phase (its set-up, allocation and first touch, is not counted).",
            a.repeats
        );
        match &a.db {
            Some(p) => println!("calibrations stored in {}", p.display()),
            None => println!("calibrations were kept in a temporary database; pass --db PATH to keep them"),
        }
    }
    Ok(())
}

fn default_params(k: &str) -> BTreeMap<String, String> {
    kernel(k).expect("catalogue").resolve_params(&BTreeMap::new()).expect("defaults are valid")
}

fn work_for(cals: &[Calibration], k: &str, seconds: f64) -> u64 {
    cals.iter().find(|c| c.kernel == k).expect("calibrated above").work_for_seconds(seconds)
}

fn render_pairs(results: &[PairResult]) -> String {
    let mut rows = Vec::new();
    for r in results {
        for i in 0..2 {
            rows.push(vec![
                format!("{} + {}", r.jobs[0], r.jobs[1]),
                format!("{}{}", r.jobs[i], if r.jobs[0] == r.jobs[1] { format!(" ({})", ["A", "B"][i]) } else { String::new() }),
                format!("{:?}", r.cpus[i]),
                fmt_spread(&r.solo_s[i], 3),
                fmt_spread(&r.corun_s[i], 3),
                fmt_spread(&r.slowdown[i], 3),
            ]);
        }
    }
    table(&["pair", "job", "cpus", "solo s", "co-run s", "slowdown"], &rows)
}
