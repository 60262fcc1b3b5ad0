//! `cosched demo`: the main job, end to end on this node, on the mixed
//! example workload (embedded, so it runs from any directory):
//! calibrate -> profile -> a small pairs matrix -> predict -> simulate the
//! policies -> real runs of conflict-aware, noplan and exclusive -> one
//! HTML report. Each stage is the application's function of the verb of
//! the same name, called with small settings, so the demo shows exactly
//! what the verbs do.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cosched_model::workload::Workload;
use cosched_predict::{predictor_by_name, predictor_names, Params as PredictParams, Predictor};
use cosched_report::boxplot::{BoxPlot, BoxStats};
use cosched_report::html::Page;
use cosched_sched::montecarlo::{run_orders, summarize};
use cosched_sched::scenario::{Program, Scenario};
use cosched_sched::{Platform, PoolInfo};

use crate::common::{load_workload, open_store, Ctx};
use crate::error::bad_input;
use crate::pairs::{PairsReport, PairsRequest};
use crate::profile::{ProfileReport, ProfileSettings, Syscalls};
use crate::run::{RunReport, RunRequest};

/// The README's mixed example workload, as shipped.
const MIXED: &str = include_str!("../../../examples/mixed.toml");
/// The longest solo time in `MIXED`; `--seconds` rescales it.
const MIXED_LONGEST_S: f64 = 2.0;
/// The programs of the pairs matrix: one per class of the SCN paper (S, N, C)
/// and the SX-Aurora paper's system-call job, single-core, so every pair fits the node.
const PAIR_JOBS: [&str; 4] = ["triad", "flops", "llc", "sys"];
/// Pairs whose worse slowdown is below this many percent over 1 are noise on
/// this node; a threshold below it would refuse pairs that do not hurt.
const NOISE_PCT: f64 = 5.0;

/// A conflict-aware threshold (percent over 1 of a pair's worse slowdown)
/// that bites on the measured matrix: halfway between the median pair and
/// the worst, so the worst pairs are refused and the ordinary ones are not.
/// `None` when no pair reaches [`NOISE_PCT`].
fn biting_threshold(m: &[Vec<f64>]) -> Option<f64> {
    let n = m.len();
    let mut scores: Vec<f64> = Vec::new();
    for i in 0..n {
        for j in i..n {
            scores.push((m[i][j].max(m[j][i]) - 1.0).max(0.0) * 100.0);
        }
    }
    let worst = scores.iter().copied().fold(0.0, f64::max);
    if worst < NOISE_PCT {
        return None;
    }
    let median = cosched_model::stats::median(&scores);
    Some(((median + worst) / 2.0).max(NOISE_PCT).floor())
}

/// The program pairs a threshold refuses, as `a + b (1.42)`.
fn pairs_above(w: &Workload, m: &[Vec<f64>], cut: Option<f64>) -> Vec<String> {
    let Some(t) = cut else { return Vec::new() };
    let mut out = Vec::new();
    for i in 0..m.len() {
        for j in i..m.len() {
            let s = m[i][j].max(m[j][i]);
            if (s - 1.0) * 100.0 > t {
                out.push(format!("{} + {} ({s:.2})", w.jobs[i].name, w.jobs[j].name));
            }
        }
    }
    out
}

/// The simulated policies: noplan, best-match, conflict-aware at the
/// biting threshold (both idle rules) and at inf (= noplan, the control).
fn demo_policies(cut: Option<f64>) -> Vec<cosched_sched::Spec> {
    let spec = |name: &str, kv: &[(&str, String)]| {
        cosched_sched::Spec::new(name, kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<cosched_sched::Params>())
    };
    let mut v = vec![spec("noplan", &[]), spec("best-match", &[])];
    if let Some(t) = cut {
        v.push(spec("conflict-aware", &[("threshold", format!("{t}"))]));
        v.push(spec("conflict-aware", &[("threshold", format!("{t}")), ("idle", "gain".into())]));
    }
    v.push(spec("conflict-aware", &[("threshold", "inf".into())]));
    v
}

/// The real runs: best-match under test, conflict-aware at the biting
/// threshold when there is one, then the exclusive and noplan baselines.
fn run_policies(cut: Option<f64>) -> Vec<String> {
    let mut v = vec!["best-match".to_string()];
    if let Some(t) = cut {
        v.push(format!("conflict-aware:threshold={t}"));
    }
    v.extend(["exclusive".to_string(), "noplan".to_string()]);
    v
}

#[derive(Debug, Clone)]
pub struct DemoRequest {
    /// Repeats of each profile and pairs measurement.
    pub repeats: usize,
    /// Solo time of the workload's longest jobs, in seconds.
    pub seconds: f64,
    /// Directory of the report; default: a new one under the temporary directory.
    pub out: Option<PathBuf>,
    /// Database kept; default: a temporary one.
    pub db: Option<PathBuf>,
}

/// Every stage's result, in stage order.
#[derive(Debug)]
pub struct DemoReport {
    /// The calibration table.
    pub calibration: String,
    pub profile: ProfileReport,
    pub pairs: PairsReport,
    /// Each measured pair's slowdown by every fitted predictor: header and rows.
    pub predictions: (Vec<String>, Vec<Vec<String>>),
    /// What the predictors were fitted on, and those that could not be.
    pub fitted_on: String,
    pub unfitted: Vec<String>,
    pub predict_note: String,
    /// Simulated increase rates: orders, jobs, header and rows.
    pub simulation: (usize, usize, Vec<String>, Vec<Vec<String>>),
    pub run: RunReport,
    pub elapsed_s: f64,
    /// The report's index.html.
    pub index: PathBuf,
    /// The database kept, if one was given.
    pub db: Option<PathBuf>,
}

/// The mixed workload with every duration scaled by `factor`; with
/// `only`, just those jobs (same name, so their measurements are the
/// workload's).
pub fn scaled_mixed(factor: f64, only: Option<&[&str]>) -> String {
    let (head, jobs) = MIXED.split_once("[[jobs]]").expect("the example has jobs");
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
    if let Some(i) = line.find("--cpu-ops ") {
        let start = i + "--cpu-ops ".len();
        let num: String = line[start..].chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(v) = num.parse::<f64>() {
            let ops = ((v * factor).round() as u64).max(1);
            return format!("{}{ops}{}", &line[..start], &line[start + num.len()..]);
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

    let factor = a.seconds / MIXED_LONGEST_S;
    let wl_path = work.path().join("mixed.toml");
    let pairs_path = work.path().join("mixed-pairs.toml");
    crate::common::write_file(&wl_path, &scaled_mixed(factor, None))?;
    crate::common::write_file(&pairs_path, &scaled_mixed(factor, Some(&PAIR_JOBS)))?;
    let w = load_workload(&wl_path)?;
    let pw = load_workload(&pairs_path)?;
    let mut page = Page::new("cosched demo: the mixed workload, end to end");
    page.note(&format!(
        "{} jobs of the mixed example workload scaled to {}s for the longest; {} repeat(s) per profile and pair; database {}.",
        w.jobs.len(),
        a.seconds,
        a.repeats,
        if a.db.is_some() { db_path.display().to_string() } else { "temporary".into() }
    ));
    let stage = |n: u32, what: &str| ctx.step(&format!("stage {n}/6 [{:.0}s]: {what}", started.elapsed().as_secs_f64()));

    stage(1, "calibrate each kernel configuration the workload sizes by seconds");
    crate::calibrate::calibrate_missing(&w, &mut store, ctx)?;
    let cals: Vec<_> = store.calibrations()?.into_values().collect();
    let cal_text = crate::calibrate::render(&cals);
    page.section("1. Calibrate")
        .paragraph("Each kernel's solo rate on this node (work units per second), so a job given in seconds does a fixed amount of work.")
        .table(&crate::calibrate::HEAD, &crate::calibrate::rows(&cals));

    stage(2, "profile every job alone (solo time, host load U, system calls, I/O)");
    let all: Vec<&cosched_model::workload::Job> = w.jobs.iter().collect();
    let settings = ProfileSettings { interval: Duration::from_millis(100), repeats: a.repeats, syscalls: Syscalls::PROC };
    let profile = crate::profile::profile_in(&w, &all, &mut store, &settings, ctx)?;
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
    page.section("2. Profile")
        .paragraph("Every job alone, pinned as when shared, its process tree sampled every 100 ms.")
        .table(&["job", "solo s, median (min-max)", "host load U", "syscalls/s (/proc, lower bound)"], &prof_rows);

    stage(3, &format!("pairs matrix of {}: every pair co-run, {} repeat(s)", PAIR_JOBS.join(", "), a.repeats));
    let svg_path = out.join("pairs-heatmap.svg");
    crate::calibrate::calibrate_missing(&pw, &mut store, ctx)?;
    let pairs = crate::pairs::pairs_in(
        &PairsRequest {
            workload: pairs_path.clone(),
            repeats: a.repeats,
            min_repeats: a.repeats,
            target: 0.05,
            resume: false,
            in_regime: None,
            regime_wait: std::time::Duration::ZERO,
            skip_known: false,
            settle: None,
            svg: Some(svg_path.clone()),
            db: Some(db_path.clone()),
        },
        &pw,
        &mut store,
        ctx,
    )?;
    let m = store.measurements(&w.name)?;
    let matrix = cosched_learn::matrix::matrix_of(&pw, m.pairs.as_ref().map(|p| p.1.as_slice()).unwrap_or(&[]));
    page.section("3. Pairs")
        .paragraph("Each pair co-run on its own cores, the shorter job re-launched until the longer ends; slowdown = co-run time / solo time of the same repeat.")
        .svg(&std::fs::read_to_string(&svg_path).unwrap_or_default());

    stage(4, "predict: fit every registered predictor on the store's measurements");
    let (train, sources) = crate::training::available_training_set(&m, &w)?;
    let mut fitted: Vec<(String, Box<dyn Predictor>)> = Vec::new();
    let mut unfitted = Vec::new();
    for (name, _) in predictor_names() {
        let mut p = predictor_by_name(name, &PredictParams::new()).map_err(anyhow::Error::msg)?;
        match p.fit(&train) {
            Ok(()) => fitted.push((name.to_string(), p)),
            Err(e) => unfitted.push(format!("{name}: {e}")),
        }
    }
    let mut head = vec!["victim", "beside", "matrix"];
    head.extend(fitted.iter().map(|(n, _)| n.as_str()));
    let mut pred_rows = Vec::new();
    for (i, v) in PAIR_JOBS.iter().enumerate() {
        for (j, o) in PAIR_JOBS.iter().enumerate() {
            let mut row = vec![v.to_string(), o.to_string(), matrix.get(i, j).map_or("-".into(), |s| format!("{:.2}", s.median))];
            for (_, p) in &fitted {
                row.push(format!("{:.2}", p.predict_pair(&train.programs[*v], &train.programs[*o]).slowdown));
            }
            pred_rows.push(row);
        }
    }
    page.section("4. Predict")
        .paragraph(&format!(
            "Predicted slowdown of each pair (1.00 = no harm; 1.50 = 50 % longer than alone) by every predictor that could be fitted, fitted on all measured pairs ({}); held-out accuracy is `cosched evaluate-predictors`.",
            sources.describe()
        ))
        .table(&head, &pred_rows);
    let note = "matrix: the measured median of each pair.";
    page.note(note);
    if !unfitted.is_empty() {
        page.note(&format!("Not fitted: {}", unfitted.join("; ")));
    }

    stage(5, "simulate the policies on a scenario built from the measured matrix");
    let scenario = scenario_of(&pw, &train, &matrix, 3);
    let cut = biting_threshold(&scenario.slowdown);
    let avoided = pairs_above(&pw, &scenario.slowdown, cut);
    let policies = demo_policies(cut);
    let orders = 500;
    let results = run_orders(&scenario, &policies, orders, 1).map_err(|e| anyhow::anyhow!("{e}"))?;
    let summaries = summarize(&policies, &results);
    let pct = |v: f64| format!("{:+.1} %", v * 100.0);
    let sim_rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| vec![s.policy.clone(), pct(s.makespan.median), pct(s.makespan.q1), pct(s.makespan.q3), pct(s.worst_slowdown.median)])
        .collect();
    let sim_head = ["policy", "makespan median", "q1", "q3", "worst run time median"];
    let boxes = BoxPlot {
        title: "Simulated makespan, increase rate vs exclusive (negative = shorter)".into(),
        y_label: "makespan increase rate vs exclusive".into(),
        boxes: summaries
            .iter()
            .map(|s| BoxStats {
                label: s.policy.clone(),
                min: s.makespan.min,
                q1: s.makespan.q1,
                median: s.makespan.median,
                q3: s.makespan.q3,
                max: s.makespan.max,
                mean: s.makespan.mean,
            })
            .collect(),
        percent: true,
        reference: Some(0.0),
    };
    let why = match cut {
        Some(t) => format!(
            "conflict-aware's threshold is set from the measured matrix so that it bites: T = {t:.0} means a pair is avoided when either job would run more than {:.2} times slower than alone, which here holds for {}; best-match picks, at each start, the waiting job of least predicted extra slowdown instead of refusing.",
            1.0 + t / 100.0,
            avoided.join(", ")
        ),
        None => "No measured pair slows a job down by 5 % or more on this node now, so no threshold can bite: every policy co-runs as noplan does, and the figures differ only by chance.".to_string(),
    };
    page.section("5. Simulate")
        .paragraph(&format!(
            "The SX-Aurora co-execution paper's Monte-Carlo evaluation: {orders} random orders of 3 instances of each paired program, solo times from the profiles, slowdowns from the measured matrix; increase rates against exclusive (sequential) execution: makespan, and the worst job's run time over its solo time. {why}"
        ))
        .svg(&boxes.svg())
        .table(&sim_head, &sim_rows);
    drop(store);

    let run_policies = run_policies(cut);
    stage(6, &format!("real runs of the mixed workload: {}", run_policies.join(", ")));
    page.section("6. Real runs");
    page.paragraph("The workload executed on this node under each policy, each repeat after a solo pass that gives every job its solo reference; the policies decide with the `measured` predictor (measured pairs, else `learned`). The section \"Pairs each policy held apart\" below says which pairs each one avoided.");
    let run = crate::run::run_into(
        &RunRequest {
            workload: wl_path.clone(),
            policy: run_policies[0].clone(),
            baselines: run_policies[1..].to_vec(),
            predictor: "measured".into(),
            repeats: 1,
            report: Some(out.clone()),
            resume: false,
            cgroups: "auto".into(),
            lock: None,
            db: Some(db_path.clone()),
            solo: crate::run::SoloMode::Interleaved,
            order_seed: None,
            order: None,
            first_repeat: 0,
        },
        ctx,
        &mut page,
    )?;
    let elapsed = started.elapsed().as_secs_f64();
    page.note(&format!("The demo took {elapsed:.0} s."));
    let index = out.join("index.html");
    crate::common::write_file(&index, &page.render())?;
    Ok(DemoReport {
        calibration: cal_text,
        profile,
        pairs,
        predictions: (head.iter().map(|h| h.to_string()).collect(), pred_rows),
        fitted_on: sources.describe(),
        unfitted,
        predict_note: note.to_string(),
        simulation: (orders, scenario.job_program.len(), sim_head.iter().map(|h| h.to_string()).collect(), sim_rows),
        run,
        elapsed_s: elapsed,
        index,
        db: a.db.clone(),
    })
}

/// A simulation scenario of `count` instances of each job of `w`: solo
/// times from the profiles (else 1 s), slowdowns from the measured matrix
/// (1 where not measured).
fn scenario_of(w: &Workload, train: &cosched_predict::TrainingSet, matrix: &cosched_model::matrix::SlowdownMatrix, count: usize) -> Scenario {
    let n = w.jobs.len();
    let programs: Vec<Program> = w
        .jobs
        .iter()
        .map(|j| {
            let prof = train.programs.get(&j.name).and_then(|c| c.profile.as_ref());
            Program {
                name: j.name.clone(),
                pool: 0,
                solo: prof.map_or(1.0, |p| p.solo_s.median.max(1e-3)),
                count,
                cores: j.cores,
                // Without host loads the conflict score is the worse measured
                // slowdown of a pair (in percent over 1), as the real runs'
                // predictors score it, so simulated and real thresholds agree.
                host_load: None,
                measured: j.name.clone(),
                variants: Vec::new(),
            }
        })
        .collect();
    let slowdown = (0..n).map(|i| (0..n).map(|j| matrix.get(i, j).map_or(1.0, |s| s.median.max(1e-6))).collect()).collect();
    let cores = w.host_pool().and_then(|p| p.cores).unwrap_or(2);
    Scenario {
        platform: Platform { pools: vec![PoolInfo { name: "host".into(), cores, kind: cosched_model::workload::PoolKind::Cpu }] },
        nodes: 1,
        programs,
        slowdown,
        measured_matrix: true,
        origin: format!("the pairs measured by this demo on {}", w.name),
        job_program: (0..n).flat_map(|i| std::iter::repeat(i).take(count)).collect(),
        topology: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_workload_scales_every_duration_and_keeps_a_subset_valid() {
        let half = scaled_mixed(0.5, None);
        let w = cosched_model::workload::parse_workload(&half, "mixed.toml", Some(2)).unwrap();
        assert_eq!(w.jobs.len(), 8);
        let secs: Vec<&str> = half.lines().filter(|l| l.starts_with("seconds = ")).collect();
        assert_eq!(secs, ["seconds = 1.0"; 7].iter().enumerate().map(|(i, s)| match i {
            3 => "seconds = 0.75",
            5 => "seconds = 0.5",
            _ => s,
        }).collect::<Vec<_>>());
        assert!(half.contains("--cpu-ops 1000\""));
        assert!(half.contains("arrival = 0.5"));
        let sub = scaled_mixed(1.0, Some(&PAIR_JOBS));
        let s = cosched_model::workload::parse_workload(&sub, "mixed.toml", Some(2)).unwrap();
        assert_eq!(s.name, "mixed");
        assert_eq!(s.jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(), PAIR_JOBS);
        assert_eq!(sub.matches("seconds = 2.0").count(), 3, "factor 1 changes nothing");
    }

    #[test]
    fn scaled_numbers_print_plainly() {
        assert_eq!(fmt_num(0.15), "0.15");
        assert_eq!(fmt_num(1.0), "1.0");
        assert_eq!(fmt_num(0.3333333), "0.333");
    }
}

#[cfg(test)]
mod threshold_tests {
    use super::*;

    #[test]
    fn the_demo_threshold_refuses_the_worst_pairs_and_not_the_ordinary_ones() {
        // Scores (percent over 1 of each pair's worse slowdown): aa 80, ab 2,
        // ac 0, bb 0, bc 10, cc 40: median 6, worst 80 -> T = 43.
        let m = vec![vec![1.80, 1.02, 1.00], vec![1.00, 1.00, 1.10], vec![1.00, 1.05, 1.40]];
        assert_eq!(biting_threshold(&m), Some(43.0));
        // Only pairs above it are avoided: a + a (80) but not c + c (40).
        let w = cosched_model::workload::parse_workload(
            "[[jobs]]\nname = \"a\"\nkernel = \"idle\"\nwork = 1\n[[jobs]]\nname = \"b\"\nkernel = \"idle\"\nwork = 1\n[[jobs]]\nname = \"c\"\nkernel = \"idle\"\nwork = 1\n",
            "w.toml",
            Some(2),
        )
        .unwrap();
        assert_eq!(pairs_above(&w, &m, Some(43.0)), vec!["a + a (1.80)".to_string()]);
    }

    #[test]
    fn no_threshold_when_no_pair_hurts_and_conflict_aware_is_left_out() {
        let m = vec![vec![1.01, 1.03], vec![0.98, 1.00]];
        assert_eq!(biting_threshold(&m), None);
        assert_eq!(run_policies(None), ["best-match", "exclusive", "noplan"]);
        assert_eq!(run_policies(Some(43.0)), ["best-match", "conflict-aware:threshold=43", "exclusive", "noplan"]);
    }
}
