//! `cosched demo`: the main job, end to end on this node, on a workload
//! where the choice matters here. It reads the node's cache regime and
//! picks the evidence workload whose decisive pairs contend in it:
//! memory-half when the two CPUs share a last-level cache (two STREAM
//! triads side by side slow each other down), io-half when they do not
//! (two file-I/O jobs contend in either regime). Then calibrate -> the
//! shipped dataset's predictions (the project's own measurements, built
//! in: another node's, or another day's, at other work amounts) ->
//! profile -> pairs -> predict -> `evaluate` best-match against noplan on
//! seeded orders with its stop rule, the simulator and the oracle beside
//! them -> a verdict with its intervals, in one HTML report. Each stage is
//! the application's function of the verb of the same name, so the demo
//! shows exactly what the verbs do.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cosched_model::calibration::{job_key, Calibration};
use cosched_model::compare::{Paired, Verdict};
use cosched_model::regime::CacheRegime;
use cosched_model::workload::{Amount, Job, Workload};
use cosched_predict::{predictor_by_name, predictor_names, Params as PredictParams, Predictor};
use cosched_report::html::Page;
use cosched_store::Store;
use serde::Serialize;

use crate::common::{open_store, workload_of_text, Ctx};
use crate::evaluate::{EvaluateReport, EvaluateRequest, Figure};
use crate::error::bad_input;
use crate::pairs::{PairsReport, PairsRequest};
use crate::profile::{ProfileReport, ProfileSettings, Syscalls};
use crate::render::{Doc, Render};
use crate::shipped::{import_shipped, shipped_predictions, Shipped};

/// The evidence workloads, as shipped (embedded, so the demo runs from any directory).
const MEMORY_HALF: &str = include_str!("../../../examples/memory-half.toml");
const IO_HALF: &str = include_str!("../../../examples/io-half.toml");
/// Every job's solo time in both; `--seconds` rescales it.
const EVIDENCE_SOLO_S: f64 = 1.5;
/// The policy under test and the baseline it is read against.
const POLICY: &str = "best-match";
const BASELINE: &str = "noplan";
/// Orders before the series may stop: five orders resolve only when all
/// five differ in the same direction (the sign test's 95 % interval).
const MIN_ORDERS: usize = 5;
const MAX_ORDERS: usize = 12;
/// Seconds kept for the verdict and the report after the oracle's runs.
const REPORT_S: f64 = 3.0;
/// The seed of the orders, so two demos on two nodes run the same orders.
const SEED: u64 = 1;

/// Which evidence workload the demo runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoWorkload {
    /// The one that matters in the cache regime read at the start.
    Auto,
    MemoryHalf,
    IoHalf,
}

impl DemoWorkload {
    pub const NAMES: [&'static str; 3] = ["auto", "memory-half", "io-half"];

    /// The example workload it runs (io-half for `Auto`, as when the
    /// regime cannot be read).
    pub fn name(self) -> &'static str {
        match self {
            DemoWorkload::MemoryHalf => "memory-half",
            _ => "io-half",
        }
    }

    pub fn parse(s: &str) -> Result<DemoWorkload, String> {
        match s {
            "auto" => Ok(DemoWorkload::Auto),
            "memory-half" => Ok(DemoWorkload::MemoryHalf),
            "io-half" => Ok(DemoWorkload::IoHalf),
            _ => Err(format!("`{s}`: expected one of {}", DemoWorkload::NAMES.join(", "))),
        }
    }
}

/// The workload for the regime readings at the start: memory bandwidth
/// decides only when the caches are shared, and only a regime that held
/// through every reading is taken to last (this node's vCPUs flip between
/// the regimes within minutes: a memory-bound demo begun in a shared cache
/// that is gone a minute later spends its orders where triads barely
/// contend); file I/O decides in either regime, so it is the choice
/// otherwise, and when the regime cannot be read (one CPU, no reading).
pub fn workload_for(readings: &[CacheRegime]) -> DemoWorkload {
    if !readings.is_empty() && readings.iter().all(|g| *g == CacheRegime::Shared) {
        DemoWorkload::MemoryHalf
    } else {
        DemoWorkload::IoHalf
    }
}

/// How many times, and how far apart, the demo reads the regime before it
/// picks the workload (each reading takes a fraction of a second).
const REGIME_READS: usize = 3;
const REGIME_READ_GAP: Duration = Duration::from_secs(1);

/// `shared cache (CPU 0-1 round trip 69, 72, 75 ns)`, or the flip seen.
fn describe_readings(round_trips_ns: &[f64]) -> String {
    let ns: Vec<String> = round_trips_ns.iter().map(|n| format!("{n:.0}")).collect();
    let regimes: Vec<CacheRegime> = round_trips_ns.iter().map(|n| CacheRegime::of_round_trip(*n)).collect();
    match regimes.first() {
        None => "unknown (no CPU pair to read)".to_string(),
        Some(first) if regimes.iter().all(|g| g == first) => format!("{} (CPU 0-1 round trip {} ns)", first.name(), ns.join(", ")),
        Some(_) => {
            let names: Vec<&str> = regimes.iter().map(|g| g.name()).collect();
            format!("changing while read (CPU 0-1 round trip {} ns: {})", ns.join(", "), names.join(", then "))
        }
    }
}

fn why_it_matters(w: DemoWorkload) -> &'static str {
    match w {
        DemoWorkload::MemoryHalf => "four STREAM triads and four core-bound loops: two triads side by side share the memory bus and, when the CPUs share a last-level cache, slow each other down; a triad beside a loop barely moves",
        _ => "four file-I/O jobs and four core-bound loops: two I/O jobs side by side contend for the disk in either cache regime; an I/O job beside a loop barely moves",
    }
}

#[derive(Debug, Clone)]
pub struct DemoRequest {
    /// Repeats of each profile and pairs measurement.
    pub repeats: usize,
    /// Every job's solo time, in seconds.
    pub seconds: f64,
    /// The whole demo's time aim: it sets the most orders of the
    /// evaluation (never fewer than five).
    pub budget: Duration,
    pub workload: DemoWorkload,
    /// Directory of the report; default: a new one under the temporary directory.
    pub out: Option<PathBuf>,
    /// Database kept; default: a temporary one.
    pub db: Option<PathBuf>,
}

/// Every stage's result, in stage order.
#[derive(Debug)]
pub struct DemoReport {
    /// CPU 0-1 round trips read at the start, ns; the regime they mean
    /// when they agree (`None` when they do not, or none was read).
    pub round_trips_ns: Vec<f64>,
    pub regime: Option<CacheRegime>,
    /// The readings and their regime in words.
    pub regime_text: String,
    /// The workload chosen, and why.
    pub workload: String,
    pub why: String,
    /// The calibration table.
    pub calibration: String,
    pub profile: ProfileReport,
    /// The shipped dataset: what it added to the store, and its
    /// predictions of the workload's pairs before anything was measured.
    pub shipped: Shipped,
    pub pairs: PairsReport,
    /// Each program pair's slowdown, measured and by every fitted predictor.
    pub predictions: Predictions,
    /// What the predictors were fitted on, and those that could not be.
    pub fitted_on: String,
    pub unfitted: Vec<String>,
    pub evaluation: EvaluateReport,
    /// The verdict sentences, most telling first.
    pub verdict: Vec<String>,
    /// At least one figure resolved in the policy's favour and none against it.
    pub resolved_better: bool,
    pub elapsed_s: f64,
    /// The report's index.html.
    pub index: PathBuf,
    /// The database kept, if one was given.
    pub db: Option<PathBuf>,
}

/// `text` (a workload file) with every `seconds = ` and `arrival = `
/// scaled by `factor`, and with `only`, just those jobs.
pub fn scaled(text: &str, factor: f64, only: Option<&[&str]>) -> String {
    let (head, jobs) = text.split_once("[[jobs]]").expect("the example has jobs");
    let mut out = String::from(head);
    for block in jobs.split("[[jobs]]") {
        let name = block
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = \"").and_then(|r| r.split('"').next()))
            .unwrap_or("");
        if only.is_some_and(|o| !o.contains(&name)) {
            continue;
        }
        out.push_str("[[jobs]]");
        for line in block.split_inclusive('\n') {
            out.push_str(&scale_line(line, factor));
        }
    }
    out
}

fn scale_line(line: &str, factor: f64) -> String {
    let t = line.trim_start();
    for key in ["seconds = ", "arrival = "] {
        if let Some(rest) = t.strip_prefix(key) {
            let num: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            if let Ok(v) = num.parse::<f64>() {
                return format!("{key}{}{}", fmt_num(v * factor), &rest[num.len()..]);
            }
        }
    }
    line.to_string()
}

fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0');
    if s.ends_with('.') {
        format!("{s}0")
    } else {
        s.to_string()
    }
}

/// One job of each program (twins are one program), in workload order.
pub(crate) fn representatives(w: &Workload) -> Vec<&Job> {
    let mut seen = std::collections::BTreeSet::new();
    w.jobs.iter().filter(|j| seen.insert(j.program_key())).collect()
}

/// The predict stage: each program pair (victim beside another), its
/// measured slowdown and every fitted predictor's, as numbers; `--json`
/// is this value and the table is drawn from it in [`Render::doc`].
#[derive(Debug, Clone, Serialize)]
pub struct Predictions {
    /// The fitted predictors, in the order of each row's `predicted`.
    pub predictors: Vec<String>,
    pub rows: Vec<PredictionRow>,
    /// Predictors that gave every pair the same slowdown: their column
    /// carries no information about this workload.
    pub constant: Vec<String>,
}

/// One ordered pair of programs.
#[derive(Debug, Clone, Serialize)]
pub struct PredictionRow {
    /// The program whose slowdown this is.
    pub victim: String,
    /// The program it ran beside.
    pub beside: String,
    /// The median measured slowdown, when the pair was measured.
    pub measured: Option<f64>,
    /// The shipped dataset's slowdown of the two programs (at another
    /// work amount), when it has one.
    pub shipped: Option<f64>,
    /// One slowdown per predictor, in [`Predictions::predictors`] order.
    pub predicted: Vec<f64>,
}

impl Predictions {
    /// The rows, with the predictors that say the same of every pair found.
    pub fn new(predictors: Vec<String>, rows: Vec<PredictionRow>) -> Predictions {
        let constant = constant_predictors(&predictors, &rows);
        Predictions { predictors, rows, constant }
    }

    fn head(&self) -> Vec<&str> {
        // `pairs`, not `measured`: the predictor `measured` has a column of its own.
        ["victim", "beside", "pairs", "shipped"].into_iter().chain(self.predictors.iter().map(String::as_str)).collect()
    }

    /// The table's cells, two decimals as the slowdowns are read.
    fn cells(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                let two = |v: Option<f64>| v.map_or("-".into(), |m| format!("{m:.2}"));
                let mut row = vec![r.victim.clone(), r.beside.clone(), two(r.measured), two(r.shipped)];
                row.extend(r.predicted.iter().map(|p| format!("{p:.2}")));
                row
            })
            .collect()
    }
}

impl Render for Predictions {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        d.table(&self.head(), self.cells());
        if !self.constant.is_empty() {
            d.line(format!("constant here (the same for every pair: no information about this workload): {}", self.constant.join(", ")));
        }
        d
    }
}

/// The predictors whose every row reads the same as shown (two decimals):
/// a predictor that says one thing of every pair tells the pairs apart no
/// better than guessing, and the table says so rather than let it look
/// like a finding. One row says nothing either way.
fn constant_predictors(predictors: &[String], rows: &[PredictionRow]) -> Vec<String> {
    let shown = |r: &PredictionRow, c: usize| r.predicted.get(c).map(|p| format!("{p:.2}"));
    (0..predictors.len())
        .filter(|&c| rows.len() > 1 && rows.iter().all(|r| shown(r, c) == shown(&rows[0], c)))
        .map(|c| predictors[c].clone())
        .collect()
}

/// Calibrates each kernel configuration the workload sizes by `seconds`
/// that the store had no calibration of before the shipped dataset joined
/// it, or whose latest calibration the import replaced: a dataset's
/// calibrations are its node's on its day, and this node's jobs are sized
/// by this node's rates (the newest calibration of a key is the one used).
fn calibrate_here(w: &Workload, store: &mut Store, before: &BTreeMap<String, Calibration>, ctx: &Ctx) -> anyhow::Result<()> {
    let after = store.calibrations()?;
    let needed = |key: &str| {
        before.get(key).is_none_or(|c| after.get(key) != Some(c))
            && w.jobs.iter().any(|j| matches!(j.amount, Amount::Seconds(_)) && job_key(j).as_deref() == Some(key))
    };
    if !w.jobs.iter().filter_map(job_key).any(|k| needed(&k)) {
        return Ok(());
    }
    ctx.step("calibrating the kernel configurations this workload sizes by `seconds`, on this node");
    let cals = crate::calibrate::calibrate_jobs(w, 3, 0.3, needed, ctx)?;
    store.put_calibrations(&cals)?;
    Ok(())
}

/// The demo's name of an evidence workload: its own, so the shipped
/// dataset's campaigns and runs of the workload (other `seconds`, another
/// node) never join what the demo measures by job name.
fn demo_name(workload: &str) -> String {
    format!("{workload}-demo")
}

/// The workload file the demo runs: the example (memory-half for
/// [`DemoWorkload::MemoryHalf`], else io-half) with every job `seconds`
/// long alone, under [`demo_name`].
pub(crate) fn demo_workload_text(choice: DemoWorkload, seconds: f64) -> String {
    let (text, name) = match choice {
        DemoWorkload::MemoryHalf => (MEMORY_HALF, "memory-half"),
        _ => (IO_HALF, "io-half"),
    };
    scaled(text, seconds / EVIDENCE_SOLO_S, None).replacen(&format!("\nname = \"{name}\"\n"), &format!("\nname = \"{}\"\n", demo_name(name)), 1)
}

pub fn demo(a: &DemoRequest, ctx: &Ctx) -> anyhow::Result<DemoReport> {
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        return Err(bad_input(format!("--seconds must be a positive number of seconds, got {}", a.seconds)));
    }
    let started = Instant::now();
    let work = tempfile::Builder::new().prefix("cosched-demo-").tempdir()?;
    let out = match &a.out {
        Some(d) => d.clone(),
        None => tempfile::Builder::new().prefix("cosched-demo-report-").tempdir()?.keep(),
    };
    crate::common::create_dir(&out)?;
    let db_path = a.db.clone().unwrap_or_else(|| work.path().join(cosched_store::DB_FILE));
    // Opened first, so an unusable --db fails before anything runs.
    let _lock = crate::lock::take("demo", None)?;
    let mut store = open_store(&db_path)?;
    // The profile and pairs stages are library calls on this store; their
    // verbs would install these.
    cosched_measure::launch::install_interrupt_handler();
    cosched_measure::launch::handle_terminal_stop(cosched_measure::launch::TerminalStop::AtPausePoints);
    let stage = |n: u32, what: &str| ctx.step(&format!("stage {n}/7 [{:.0}s]: {what}", started.elapsed().as_secs_f64()));

    stage(1, "read the cache regime: CPU 0-1 round trip");
    let mut round_trips_ns = Vec::new();
    for k in 0..REGIME_READS {
        if k > 0 {
            std::thread::sleep(REGIME_READ_GAP);
        }
        match crate::common::round_trip_now() {
            Some(ns) => round_trips_ns.push(ns),
            None => break,
        }
    }
    let readings: Vec<CacheRegime> = round_trips_ns.iter().map(|n| CacheRegime::of_round_trip(*n)).collect();
    let regime = readings.first().copied().filter(|first| readings.iter().all(|g| g == first));
    let choice = match a.workload {
        DemoWorkload::Auto => workload_for(&readings),
        w => w,
    };
    let wl_name = choice.name();
    let regime_text = describe_readings(&round_trips_ns);
    let why = format!(
        "{wl_name}: {}{}",
        why_it_matters(choice),
        match a.workload {
            DemoWorkload::Auto if regime.is_none() && !readings.is_empty() => ", so it is the workload where the choice matters in either regime",
            DemoWorkload::Auto => ", so it is the workload where the choice matters in this regime",
            _ => " (chosen by --workload)",
        }
    );
    ctx.step(&format!("cache regime: {regime_text}; workload {why}"));
    // The workload is kept beside the report, so `cosched evaluate
    // --workload` can run it again, and each stage is handed it parsed.
    let wl_text = demo_workload_text(choice, a.seconds);
    let wl_path = out.join(format!("{}.toml", demo_name(wl_name)));
    crate::common::write_file(&wl_path, &wl_text)?;
    let w = workload_of_text(&wl_text, &wl_path.display().to_string())?;
    let mut page = Page::new(&format!("cosched demo: {wl_name}, best-match against noplan"));
    page.note(&format!(
        "{} jobs of the {wl_name} example workload, each {}s alone; {} repeat(s) per profile and pair; database {}.",
        w.jobs.len(),
        a.seconds,
        a.repeats,
        if a.db.is_some() { db_path.display().to_string() } else { "temporary".into() }
    ));
    page.section("1. Cache regime").paragraph(&format!(
        "Cache regime at the start: {regime_text}. Tens of nanoseconds mean the two CPUs share a last-level cache, hundreds that a cache line crosses between caches (a VM's vCPUs may move between the two). Workload: {why}."
    ));
    page.link(&format!("{}.toml", demo_name(wl_name)), "The workload as run (`cosched evaluate --workload` runs it again)");

    // The shipped dataset joins the store before anything is calibrated:
    // the calibrations it brings are its node's, and stage 2 calibrates
    // every key whose newest calibration the import replaced.
    let cals_before = store.calibrations()?;
    let bundles = import_shipped(&mut store)?;
    stage(2, "calibrate each kernel configuration the workload sizes by seconds");
    calibrate_here(&w, &mut store, &cals_before, ctx)?;
    // The workload's own: the dataset brought other kernels' too.
    let cals: Vec<_> = store.calibrations()?.into_values().filter(|c| w.jobs.iter().any(|j| job_key(j).as_deref() == Some(c.key.as_str()))).collect();
    let cal_text = crate::calibrate::render(&cals);
    page.section("2. Calibrate")
        .paragraph("Each kernel's solo rate on this node (work units per second), so a job given in seconds does a fixed amount of work.")
        .table(&crate::calibrate::head(&cals).each_ref().map(String::as_str), &crate::calibrate::rows(&cals));

    stage(3, "predict the workload's pairs from the shipped dataset, before measuring any");
    let reps = representatives(&w);
    let here = crate::common::provenance(ctx).hostname;
    let shipped = shipped_predictions(&store, &w, &reps, regime, bundles, &here)?;
    for l in shipped.bundle_lines() {
        ctx.step(&l);
    }
    ctx.step(&if shipped.rows.is_empty() {
        "the shipped dataset has no pair of this workload's programs at any work amount".to_string()
    } else {
        let pairs: Vec<String> = shipped.rows.iter().map(|r| format!("{} beside {} {:.2}", r.victim, r.beside, r.slowdown)).collect();
        format!("{}: {}", shipped.label(), pairs.join(", "))
    });
    {
        let sec = page.section("3. Shipped dataset");
        sec.paragraph(&format!(
            "The project's own measurements ship with cosched (data/, built into the binary) and were imported into this demo's store: {}. Before the demo measures anything, they predict the workload's pairs: {}. Stage 6 sets them beside what this node measures; the policies decide with this node's measurements.",
            shipped.bundle_lines().join("; "),
            shipped.caveat()
        ));
        if shipped.rows.is_empty() {
            sec.paragraph("The shipped dataset has no pair of this workload's programs at any work amount.");
        } else {
            sec.paragraph(&format!("{}:", shipped.label()));
            sec.table(&Shipped::head(), &shipped.cells());
        }
        if !shipped.missing.is_empty() && !shipped.rows.is_empty() {
            sec.note(&format!("Not in the shipped dataset at any work amount: {}.", shipped.missing.join(", ")));
        }
    }

    stage(4, "profile one job of each program alone (solo time, host load U, system calls, I/O)");
    let settings = ProfileSettings { interval: Duration::from_millis(100), repeats: a.repeats, syscalls: Syscalls::PROC };
    let profile = crate::profile::profile_in(&w, &reps, &mut store, &settings, ctx)?;
    let m = store.measurements(&w.name)?;
    let mut prof_rows = Vec::new();
    for (_, p) in &m.profiles {
        let jp = &p.summary;
        prof_rows.push(vec![
            p.job.clone(),
            cosched_report::fmt_spread(&jp.solo_s, 3),
            format!("{:.2}", jp.summary.host_load_mean),
            jp.syscall_rate.or(jp.summary.syscall_rate).map_or("-".into(), |r| format!("{r:.0}")),
        ]);
    }
    page.section("4. Profile")
        .paragraph("One job of each program alone, pinned as when shared, its process tree sampled every 100 ms.")
        .table(&["job", "solo s, median (min-max)", "host load U", "syscalls/s (/proc, lower bound)"], &prof_rows);

    stage(5, &format!("pairs: every pair of programs co-run, {} repeat(s)", a.repeats));
    let svg_path = out.join("pairs-heatmap.svg");
    let pairs = crate::pairs::pairs_in(
        &PairsRequest {
            workload: wl_path.clone(),
            repeats: a.repeats,
            min_repeats: a.repeats,
            target: 0.05,
            resume: false,
            in_regime: None,
            regime_wait: Duration::ZERO,
            skip_known: false,
            settle: None,
            svg: Some(svg_path.clone()),
            db: Some(db_path.clone()),
        },
        &w,
        &mut store,
        ctx,
    )?;
    let m = store.measurements(&w.name)?;
    let matrix = cosched_learn::matrix::matrix_of(&w, m.pairs.as_ref().map(|p| p.1.as_slice()).unwrap_or(&[]));
    page.section("5. Pairs")
        .paragraph("Each pair co-run on its own cores, the shorter job re-launched until the longer ends; slowdown = co-run time / solo time of the same repeat. Twins (copies of one program) are measured once.")
        .svg(&std::fs::read_to_string(&svg_path).unwrap_or_default());

    stage(6, "predict: fit every registered predictor on the store's measurements");
    let (train, sources) = cosched_learn::training::available_training_set(&m, &w)?;
    let mut fitted: Vec<(String, Box<dyn Predictor>)> = Vec::new();
    let mut unfitted = Vec::new();
    for (name, _) in predictor_names() {
        let mut p = predictor_by_name(name, &PredictParams::new()).map_err(anyhow::Error::msg)?;
        match p.fit(&train) {
            Ok(()) => fitted.push((name.to_string(), p)),
            Err(e) => unfitted.push(format!("{name}: {e}")),
        }
    }
    let mut rows = Vec::new();
    let index_of = |j: &Job| w.jobs.iter().position(|x| x.name == j.name).expect("a job of the workload");
    for v in &reps {
        for o in &reps {
            rows.push(PredictionRow {
                victim: v.name.clone(),
                beside: o.name.clone(),
                measured: matrix.get(index_of(v), index_of(o)).map(|s| s.median),
                shipped: shipped.rows.iter().find(|r| r.victim == v.name && r.beside == o.name).map(|r| r.slowdown),
                predicted: fitted.iter().map(|(_, p)| p.predict_pair(&train.programs[&v.name], &train.programs[&o.name]).slowdown).collect(),
            });
        }
    }
    let predictions = Predictions::new(fitted.iter().map(|(n, _)| n.clone()).collect(), rows);
    page.section("6. Predict")
        .paragraph(&format!(
            "Predicted slowdown of each pair of programs (1.00 = no harm; 1.50 = 50 % longer than alone) by every predictor that could be fitted, fitted on this demo's measurements ({}); held-out accuracy is `cosched evaluate-predictors`. `pairs` is the median stage 5 measured; `shipped` is the shipped dataset's slowdown of the same two programs (stage 3: another work amount, another node's or another day's). The policies below decide with the predictor `measured`: the measured pairs of every campaign of these programs.",
            sources.describe()
        ))
        .table(&predictions.head(), &predictions.cells());
    if !predictions.constant.is_empty() {
        page.note(&format!(
            "Constant here (the same slowdown for every pair, so no information about this workload): {}.",
            predictions.constant.join(", ")
        ));
    }
    if !unfitted.is_empty() {
        page.note(&format!("Not fitted: {}", unfitted.join("; ")));
    }

    // The orders get what the time aim leaves after the stages so far and
    // the oracle's schedules run for real after them (about the jobs' solo
    // time each, plus launches); evaluate starts no order that, at the pace
    // of the orders before it, would end after that, and runs the five a
    // verdict needs whatever the aim. A fixed count estimated up front
    // left time unused: 10 orders and 152 s on 2026-11-28, where 12 fit.
    let solo_sum: f64 = w.jobs.len() as f64 * a.seconds;
    let oracle_s = solo_sum + 0.25 * 2.0 * w.jobs.len() as f64;
    let room = (a.budget.as_secs_f64() - started.elapsed().as_secs_f64() - oracle_s - REPORT_S).max(0.0);
    stage(7, &format!(
        "evaluate {POLICY} against {BASELINE}: seeded orders until resolved, {MIN_ORDERS} to {MAX_ORDERS} as {room:.0} s of the time aim allow"
    ));
    let eval_dir = out.join("evaluate");
    let evaluation = crate::evaluate::evaluate_in(
        &EvaluateRequest {
            workload: wl_path.clone(),
            policies: vec![POLICY.into()],
            baseline: BASELINE.into(),
            metric: Figure::WorstSlowdown,
            predictor: "measured".into(),
            seed: SEED,
            min_orders: MIN_ORDERS,
            max_orders: MAX_ORDERS,
            budget: Some(Duration::from_secs_f64(room)),
            regime: None,
            regime_wait: Duration::ZERO,
            oracle_replays: 1,
            report: Some(eval_dir.clone()),
            cgroups: "auto".into(),
            lock: None,
            db: Some(db_path.clone()),
            resume: false,
        },
        &w,
        &mut store,
        ctx,
    )?;
    let (verdict, resolved_better) = verdict_of(&evaluation, wl_name);
    page.section("7. Evaluate");
    page.paragraph(&format!(
        "The workload run for real under {POLICY} and {BASELINE} on the same seeded job orders (seed {SEED}), each order after a solo pass that gives every job its solo reference, until the worst-slowdown comparison is resolved (at least {MIN_ORDERS} orders, at most {MAX_ORDERS}, no order started that would end past the demo's time aim); the same orders simulated on the measured pairs, and the oracle's best schedule of that model run for real beside them."
    ));
    for v in &verdict {
        page.paragraph(v);
    }
    page.link("evaluate/index.html", "The evaluation's own report: every order, figure and interval");
    let elapsed = started.elapsed().as_secs_f64();
    page.note(&format!("The demo took {elapsed:.0} s."));
    let index = out.join("index.html");
    crate::common::write_file(&index, &page.render())?;
    Ok(DemoReport {
        round_trips_ns,
        regime,
        regime_text,
        workload: wl_name.to_string(),
        why,
        calibration: cal_text,
        profile,
        shipped,
        pairs,
        predictions,
        fitted_on: sources.describe(),
        unfitted,
        evaluation,
        verdict,
        resolved_better,
        elapsed_s: elapsed,
        index,
        db: a.db.clone(),
    })
}

fn figure_words(f: Figure) -> &'static str {
    match f {
        Figure::WorstSlowdown => "worst slowdown",
        Figure::MeanTurnaround => "mean turnaround",
        Figure::Makespan => "makespan",
    }
}

/// `worst slowdown 1.12 against 1.71: -30.1 % [-45.0, -10.2], resolved`.
fn figure_sentence(f: Figure, p: &Paired) -> String {
    let unit = if f == Figure::WorstSlowdown { "" } else { " s" };
    format!(
        "{} {:.2}{unit} against {:.2}{unit}: {:+.1} % [{:+.1}, {:+.1}], {}",
        figure_words(f),
        p.first.median,
        p.second.median,
        p.median_rel_diff * 100.0,
        p.ci.0 * 100.0,
        p.ci.1 * 100.0,
        match p.verdict {
            Verdict::FirstBetter => "resolved: lower",
            Verdict::SecondBetter => "resolved: higher",
            Verdict::Unresolved if p.n < cosched_model::compare::MIN_PAIRS_TO_RESOLVE => "unresolved (fewer than five orders)",
            Verdict::Unresolved => "unresolved (the interval holds 0)",
        }
    )
}

/// The verdict sentences of an evaluation of one policy against the
/// baseline, read within one cache regime when the orders spanned two,
/// and whether the policy won at least one figure beyond noise and lost none.
pub fn verdict_of(r: &EvaluateReport, workload: &str) -> (Vec<String>, bool) {
    let (comps, scope) = match &r.within_regime {
        Some((g, n, comps)) => (comps.as_slice(), format!("the {n} orders that stayed in the {} regime", g.name())),
        None => {
            let regime = match r.regimes.as_slice() {
                [g] => format!(" in the {} regime", g.name()),
                _ => String::new(),
            };
            let n = r.comparisons.iter().filter_map(|c| c.real.as_ref().map(|p| p.n)).max().unwrap_or(0);
            (r.comparisons.as_slice(), format!("{n} orders{regime}"))
        }
    };
    let order = [Figure::WorstSlowdown, Figure::MeanTurnaround, Figure::Makespan];
    let found: Vec<(Figure, &Paired)> =
        order.iter().filter_map(|&f| comps.iter().find(|c| c.figure == f).and_then(|c| c.real.as_ref()).map(|p| (f, p))).collect();
    let won: Vec<&str> = found.iter().filter(|(_, p)| p.verdict == Verdict::FirstBetter).map(|(f, _)| figure_words(*f)).collect();
    let lost: Vec<&str> = found.iter().filter(|(_, p)| p.verdict == Verdict::SecondBetter).map(|(f, _)| figure_words(*f)).collect();
    let headline = if found.is_empty() {
        format!("Verdict: no order of {workload} gave {POLICY} and {BASELINE} both a figure, so there is nothing to compare.")
    } else if !won.is_empty() && lost.is_empty() {
        format!("Verdict: on {workload}, over {scope}, {POLICY} beat {BASELINE} beyond noise on {}.", won.join(" and "))
    } else if !lost.is_empty() {
        format!("Verdict: on {workload}, over {scope}, {POLICY} did worse than {BASELINE} beyond noise on {}{}.", lost.join(" and "), if won.is_empty() { String::new() } else { format!(" and better on {}", won.join(" and ")) })
    } else {
        format!(
            "Verdict: on {workload}, over {scope}, no difference between {POLICY} and {BASELINE} is resolved yet: every interval holds 0. More orders narrow it: `cosched demo --budget 10m`, or `cosched evaluate` on the workload."
        )
    };
    let mut out = vec![headline];
    for (f, p) in &found {
        out.push(format!("{POLICY} against {BASELINE}, {}.", figure_sentence(*f, p)));
    }
    if r.within_regime.is_some() {
        if let Some(p) = r.comparisons.iter().find(|c| c.figure == Figure::WorstSlowdown).and_then(|c| c.real.as_ref()) {
            out.push(format!(
                "Over all {} orders, across the regime switch (a mixed reading, shown for completeness): {}.",
                r.orders.len(),
                figure_sentence(Figure::WorstSlowdown, p)
            ));
        }
    }
    for o in &r.oracle {
        if let Some((_, d)) = o.above_replayed.iter().find(|(l, _)| l.starts_with(POLICY)) {
            out.push(format!(
                "The oracle's best {} schedule of the model, run for real: {POLICY}'s median is {:+.1} % from it.",
                figure_words(o.objective),
                d * 100.0
            ));
        }
    }
    (out, !won.is_empty() && lost.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_workloads_scale_every_duration_and_stay_valid() {
        for text in [MEMORY_HALF, IO_HALF] {
            let half = scaled(text, 0.5, None);
            let w = cosched_model::workload::parse_workload(&half, "w.toml", Some(2)).unwrap();
            assert_eq!(w.jobs.len(), 8);
            let secs: Vec<&str> = half.lines().filter(|l| l.starts_with("seconds = ")).collect();
            assert_eq!(secs, ["seconds = 0.75"; 2]);
            assert_eq!(representatives(&w).len(), 2, "four twins of each of two programs");
        }
        for (choice, name) in [(DemoWorkload::IoHalf, "io-half-demo"), (DemoWorkload::MemoryHalf, "memory-half-demo")] {
            let w = cosched_model::workload::parse_workload(&demo_workload_text(choice, 0.75), "w.toml", Some(2)).unwrap();
            assert_eq!(w.name, name, "the shipped campaigns of the example never join the demo's by job name");
            assert!(w.jobs.iter().all(|j| j.amount == cosched_model::workload::Amount::Seconds(0.75)), "every job 0.75 s alone");
        }
        let one = scaled(MEMORY_HALF, 1.0, Some(&["triad"]));
        let w = cosched_model::workload::parse_workload(&one, "w.toml", Some(2)).unwrap();
        assert!(w.jobs.iter().all(|j| j.name.starts_with("triad")), "only the named job's block is kept");
    }

    #[test]
    fn scaled_numbers_print_plainly() {
        assert_eq!(fmt_num(0.15), "0.15");
        assert_eq!(fmt_num(1.0), "1.0");
        assert_eq!(fmt_num(0.3333333), "0.333");
    }

    #[test]
    fn the_regime_picks_the_workload_where_the_choice_matters() {
        use CacheRegime::{Apart, Shared};
        assert_eq!(workload_for(&[Shared, Shared, Shared]), DemoWorkload::MemoryHalf);
        assert_eq!(workload_for(&[Apart, Apart, Apart]), DemoWorkload::IoHalf);
        assert_eq!(workload_for(&[Shared, Shared, Apart]), DemoWorkload::IoHalf, "a regime that flips while read is not taken to last");
        assert_eq!(workload_for(&[]), DemoWorkload::IoHalf, "I/O contends whatever the regime");
        assert_eq!(describe_readings(&[69.4, 72.0]), "shared cache (CPU 0-1 round trip 69, 72 ns)");
        assert_eq!(
            describe_readings(&[69.0, 420.0]),
            "changing while read (CPU 0-1 round trip 69, 420 ns: shared cache, then caches apart)"
        );
        assert_eq!(describe_readings(&[]), "unknown (no CPU pair to read)");
        assert_eq!(DemoWorkload::parse("io-half"), Ok(DemoWorkload::IoHalf));
        assert!(DemoWorkload::parse("mixed").unwrap_err().contains("auto, memory-half, io-half"));
    }

    fn report(comparisons: Vec<crate::evaluate::Comparison>, within: Option<(CacheRegime, usize, Vec<crate::evaluate::Comparison>)>) -> EvaluateReport {
        EvaluateReport {
            workload: "w".into(),
            policies: vec![BASELINE.into(), POLICY.into()],
            seed: SEED,
            metric: Figure::WorstSlowdown,
            orders: Vec::new(),
            stop: cosched_model::compare::Stop::Resolved,
            regimes: if within.is_some() { vec![CacheRegime::Shared, CacheRegime::Apart] } else { vec![CacheRegime::Shared] },
            within_regime: within,
            required_regime: None,
            waited_out: false,
            figures: Vec::new(),
            comparisons,
            oracle: Vec::new(),
            slowdown_source: String::new(),
            index: None,
        }
    }

    fn comparison(f: Figure, policy: &[f64], baseline: &[f64]) -> crate::evaluate::Comparison {
        crate::evaluate::Comparison { policy: POLICY.into(), figure: f, real: cosched_model::compare::paired(policy, baseline), simulated: None, agrees: None }
    }

    #[test]
    fn the_verdict_names_each_figure_won_with_its_medians_and_interval() {
        let r = report(
            vec![
                comparison(Figure::WorstSlowdown, &[1.1, 1.2, 1.1, 1.0, 1.1], &[1.7, 1.6, 1.8, 1.7, 1.5]),
                comparison(Figure::MeanTurnaround, &[10.0, 11.0, 12.0, 10.0, 11.0], &[11.0, 10.0, 12.5, 10.5, 11.0]),
            ],
            None,
        );
        let (v, won) = verdict_of(&r, "memory-half");
        assert!(won);
        assert_eq!(v[0], "Verdict: on memory-half, over 5 orders in the shared cache regime, best-match beat noplan beyond noise on worst slowdown.");
        // Differences -0.353, -0.250, -0.389, -0.412, -0.267: the median and the full range of five.
        assert_eq!(v[1], "best-match against noplan, worst slowdown 1.10 against 1.70: -35.3 % [-41.2, -25.0], resolved: lower.");
        assert!(v[2].starts_with("best-match against noplan, mean turnaround 11.00 s against 11.00 s: ") && v[2].ends_with("unresolved (the interval holds 0)."), "{}", v[2]);
    }

    #[test]
    fn a_verdict_reads_the_orders_of_one_regime_and_never_resolves_on_fewer_than_five() {
        let all = vec![comparison(Figure::WorstSlowdown, &[1.1; 6], &[1.7; 6])];
        let few = vec![comparison(Figure::WorstSlowdown, &[1.1; 3], &[1.7; 3])];
        let (v, won) = verdict_of(&report(all, Some((CacheRegime::Shared, 3, few))), "memory-half");
        assert!(!won, "three orders in the regime resolve nothing");
        assert!(v[0].contains("over the 3 orders that stayed in the shared cache regime, no difference"), "{}", v[0]);
        assert!(v[1].ends_with("unresolved (fewer than five orders)."), "{}", v[1]);
        assert!(v[2].starts_with("Over all 0 orders, across the regime switch"), "the mixed reading is labelled: {}", v[2]);
        let lost = report(vec![comparison(Figure::Makespan, &[2.0; 5], &[1.0; 5])], None);
        let (v, won) = verdict_of(&lost, "io-half");
        assert!(!won && v[0].contains("best-match did worse than noplan beyond noise on makespan"), "{}", v[0]);
    }

    #[test]
    fn a_predictor_that_says_the_same_of_every_pair_is_flagged_constant() {
        let row = |b: &str, m: Option<f64>, p: [f64; 2]| PredictionRow { victim: "a".into(), beside: b.into(), measured: m, shipped: None, predicted: p.to_vec() };
        let names: Vec<String> = ["mechanism", "pairwise"].map(String::from).to_vec();
        let p = Predictions::new(names.clone(), vec![row("a", Some(1.5), [1.101, 1.4]), row("b", None, [1.099, 1.02])]);
        assert_eq!(p.constant, ["mechanism"], "1.101 and 1.099 both read 1.10");
        assert!(Predictions::new(names, vec![row("a", Some(1.5), [1.1, 1.4])]).constant.is_empty(), "one row says nothing either way");
    }

    #[test]
    fn the_prediction_table_is_drawn_from_the_typed_rows_and_json_keeps_the_numbers() {
        let p = Predictions::new(
            vec!["mechanism".into()],
            vec![
                PredictionRow { victim: "triad".into(), beside: "loop".into(), measured: Some(1.234), shipped: Some(1.5), predicted: vec![1.1] },
                PredictionRow { victim: "loop".into(), beside: "triad".into(), measured: None, shipped: None, predicted: vec![1.1] },
            ],
        );
        let text = p.doc().text();
        let want = cosched_report::table(
            &["victim", "beside", "pairs", "shipped", "mechanism"],
            &[["triad", "loop", "1.23", "1.50", "1.10"].map(String::from).to_vec(), ["loop", "triad", "-", "-", "1.10"].map(String::from).to_vec()],
        );
        assert!(text.starts_with(&want), "{text}");
        assert!(text.ends_with("no information about this workload): mechanism\n"), "{text}");
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["rows"][0]["measured"], 1.234);
        assert_eq!(json["rows"][1]["measured"], serde_json::Value::Null);
        assert_eq!(json["rows"][0]["shipped"], 1.5);
        assert_eq!(json["rows"][0]["predicted"][0], 1.1);
        assert_eq!(json["constant"][0], "mechanism");
    }
}
