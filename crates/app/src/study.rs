//! `cosched study`: the nOS-V paper's co-execution study. Every pair, and
//! some or all triples, of a workload's programs run for real under each
//! node-sharing strategy; each set's makespans give the paper's
//! performance score (the best makespan among the strategies for that set
//! over this strategy's), summarised per strategy by its median and spread,
//! a box plot and a heatmap over the pairs.
//!
//! A set is run through `cosched run`'s engine ([`crate::run::run_in`]) on
//! a workload made from the parsed one ([`set_workload`]: only the set's
//! jobs), into the one store the study opened, so its runs are stored as
//! series like any run's and `cosched runs` shows them. The jobs all start
//! at once (the paper's setting): `arrival` and `after` are dropped from
//! the set's jobs.
//!
//! Strategies and the policies that play them (docs/policies.md):
//! exclusive (`exclusive`: one after the other, the whole node each),
//! oversubscription with idle and with busy waiting (`overbook:pin=off`,
//! every job on every core, the OS time-sharing them, with
//! `OMP_WAIT_POLICY=passive` and `=active` in every job's environment:
//! OpenMP's runtime then sleeps or spins at its barriers; other programs
//! ignore the variable, so for them the two strategies are the same runs
//! twice), static co-location (`colocate`: the cores split once), dynamic
//! co-location (`colocate:rebalance=on`: the same split, and a finished
//! job's cores moved to the survivors, DLB's lending at the one moment a
//! process-level runner sees a partition free), and co-execution
//! (`timeshare`, turns of 20 ms).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cosched_model::matrix::SlowdownMatrix;
use cosched_model::stats::{quantile_sorted, Summary};
use cosched_report::boxplot::{BoxPlot, BoxStats};
use cosched_report::html::Page;
use serde::Serialize;

use cosched_model::workload::Workload;

use crate::common::{create_dir, db_path, load_workload, open_store, write_file, Ctx};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use crate::run::{run_in, RunRequest, SoloMode};

#[derive(Debug, Clone)]
pub struct StudyRequest {
    pub workload: PathBuf,
    /// Triples run: this many, spread evenly over all of them in
    /// lexicographic order, or all when there are fewer.
    pub triples: usize,
    /// Runs of each strategy on each set.
    pub repeats: u32,
    /// Directory of index.html, study.json, the box plots and heatmaps.
    pub report: Option<PathBuf>,
    pub cgroups: String,
    pub lock: Option<PathBuf>,
    pub db: Option<PathBuf>,
}

/// A node-sharing strategy of the nOS-V paper, as cosched plays it.
#[derive(Debug, Clone, Serialize)]
pub struct Strategy {
    pub name: &'static str,
    /// The policy spec the runner runs it with.
    pub policy: &'static str,
    /// `OMP_WAIT_POLICY` set in every job's environment; `None`: as written.
    pub wait_policy: Option<&'static str>,
}

pub const STRATEGIES: [Strategy; 6] = [
    Strategy { name: "exclusive", policy: "exclusive", wait_policy: None },
    Strategy { name: "oversub-idle", policy: "overbook:pin=off", wait_policy: Some("passive") },
    Strategy { name: "oversub-busy", policy: "overbook:pin=off", wait_policy: Some("active") },
    Strategy { name: "static-coloc", policy: "colocate", wait_policy: None },
    Strategy { name: "dynamic-coloc", policy: "colocate:rebalance=on", wait_policy: None },
    Strategy { name: "timeshare", policy: "timeshare", wait_policy: None },
];

/// One set of programs and what each strategy made of it.
#[derive(Debug, Clone, Serialize)]
pub struct SetResult {
    pub programs: Vec<String>,
    /// Per strategy (in [`STRATEGIES`]' order), the makespan of each repeat
    /// whose jobs all ended ok, seconds.
    pub makespans: Vec<Vec<f64>>,
    /// Per strategy, the performance score of its median makespan.
    pub scores: Vec<Option<f64>>,
    /// The stored series of the set's runs, one per environment.
    pub series: Vec<String>,
}

/// A strategy's scores over the sets of one size.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreSummary {
    pub strategy: String,
    pub pairs: Option<Spread>,
    pub triples: Option<Spread>,
}

/// Median, quartiles and extremes of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub n: usize,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
    pub mean: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        Some(Spread {
            n: v.len(),
            min: v[0],
            q1: quantile_sorted(&v, 0.25),
            median: quantile_sorted(&v, 0.5),
            q3: quantile_sorted(&v, 0.75),
            max: v[v.len() - 1],
            mean: v.iter().sum::<f64>() / v.len() as f64,
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct StudyReport {
    pub workload: String,
    pub programs: Vec<String>,
    pub strategies: Vec<Strategy>,
    pub repeats: u32,
    pub pairs: Vec<SetResult>,
    pub triples: Vec<SetResult>,
    /// How many triples the workload has in all.
    pub triples_in_all: usize,
    pub summary: Vec<ScoreSummary>,
    /// Jobs that did not end ok (their run's makespan is left out).
    pub not_ok: Vec<String>,
    pub index: Option<PathBuf>,
}

/// The nOS-V paper's performance score of each strategy on one set: the best
/// (smallest) makespan among the strategies over this one's. The best scores
/// exactly 1; a strategy without a makespan has no score.
pub fn scores(makespans: &[Option<f64>]) -> Vec<Option<f64>> {
    let best = makespans.iter().flatten().copied().filter(|m| m.is_finite() && *m > 0.0).fold(f64::INFINITY, f64::min);
    makespans
        .iter()
        .map(|m| m.filter(|m| m.is_finite() && *m > 0.0 && best.is_finite()).map(|m| if m == best { 1.0 } else { best / m }))
        .collect()
}

/// `k` of the `total` items `0..total` spread evenly, in order: all when
/// `k >= total`.
pub fn spread_pick(total: usize, k: usize) -> Vec<usize> {
    if k >= total {
        return (0..total).collect();
    }
    (0..k).map(|i| i * total / k).collect()
}

/// Every `size`-subset of `0..n`, in lexicographic order.
pub fn subsets(n: usize, size: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    fn go(start: usize, n: usize, size: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == size {
            out.push(cur.clone());
            return;
        }
        for i in start..n {
            cur.push(i);
            go(i + 1, n, size, cur, out);
            cur.pop();
        }
    }
    go(0, n, size, &mut cur, &mut out);
    out
}

/// The set's workload: `w`'s jobs of the programs in `keep` (each program
/// by the name its file gives it, so every copy of a `count` comes along),
/// all starting at once, `OMP_WAIT_POLICY` set to `wait` in each when given,
/// named `label`.
pub fn set_workload(w: &Workload, keep: &[String], label: &str, wait: Option<&str>) -> Workload {
    let jobs = w
        .jobs
        .iter()
        .filter(|j| keep.contains(&j.base_name))
        .map(|j| {
            let mut j = j.clone();
            j.arrival = 0.0;
            j.after.clear();
            if let Some(v) = wait {
                j.env.insert("OMP_WAIT_POLICY".into(), v.into());
            }
            j
        })
        .collect();
    Workload { name: label.into(), jobs, ..w.clone() }
}

pub fn study(a: &StudyRequest, ctx: &Ctx) -> anyhow::Result<StudyReport> {
    let w = load_workload(&a.workload)?;
    let shown = a.workload.display().to_string();
    if a.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    let mut programs: Vec<String> = Vec::new();
    for j in &w.jobs {
        if !programs.contains(&j.base_name) {
            programs.push(j.base_name.clone());
        }
    }
    if programs.len() < 2 {
        return Err(bad_input(format!("{shown}: a study needs at least two jobs; it has {}", programs.len())));
    }
    let _lock = crate::lock::take("study", a.lock.as_deref())?;
    let mut store = open_store(&db_path(a.db.as_deref()))?;
    if let Some(r) = &a.report {
        create_dir(r)?;
    }
    let pair_sets = subsets(programs.len(), 2);
    let all_triples = subsets(programs.len(), 3);
    let triple_sets: Vec<Vec<usize>> = spread_pick(all_triples.len(), a.triples).into_iter().map(|i| all_triples[i].clone()).collect();
    let sets: Vec<&Vec<usize>> = pair_sets.iter().chain(&triple_sets).collect();
    let envs: Vec<Option<&str>> = STRATEGIES.iter().map(|s| s.wait_policy).collect::<BTreeSet<_>>().into_iter().collect();
    ctx.step(&format!(
        "study of {} programs: {} pairs and {} of {} triples, {} strategies, {} repeats",
        programs.len(),
        pair_sets.len(),
        triple_sets.len(),
        all_triples.len(),
        STRATEGIES.len(),
        a.repeats,
    ));
    let started = Instant::now();
    let mut results = Vec::new();
    let mut not_ok = Vec::new();
    for (k, set) in sets.iter().enumerate() {
        let names: Vec<String> = set.iter().map(|&i| programs[i].clone()).collect();
        let label = names.join("+");
        let eta = if k == 0 { "-".to_string() } else { format!("{:.0} s", started.elapsed().as_secs_f64() / k as f64 * (sets.len() - k) as f64) };
        ctx.step(&format!("set {} of {}: {label} (eta {eta})", k + 1, sets.len()));
        let mut makespans = vec![Vec::new(); STRATEGIES.len()];
        let mut series = Vec::new();
        for env in &envs {
            let which: Vec<usize> = (0..STRATEGIES.len()).filter(|&i| STRATEGIES[i].wait_policy == *env).collect();
            let tag = env.map_or("as-written".to_string(), |e| format!("omp-{e}"));
            let set = set_workload(&w, &names, &format!("{} {label} {tag}", w.name), *env);
            let req = RunRequest {
                workload: a.workload.clone(),
                policy: STRATEGIES[which[0]].policy.into(),
                baselines: which[1..].iter().map(|&i| STRATEGIES[i].policy.to_string()).collect(),
                predictor: "measured".into(),
                repeats: a.repeats,
                report: None,
                resume: false,
                cgroups: a.cgroups.clone(),
                lock: a.lock.clone(),
                db: a.db.clone(),
                // Scores need makespans only; the solo passes would add an
                // exclusive run of each job per repeat.
                solo: SoloMode::Stored,
                first_repeat: 0,
                order_seed: None,
                order: None,
                named_by: ["strategy", "strategy"],
                // A set is no file of its own that `run --resume` could continue.
                continue_with: Some(format!(
                    "`cosched study` has no --resume: the sets that ended are stored as series (`cosched runs`); set {label} ({tag}) runs again from its start"
                )),
            };
            let r = run_in(&req, &set, &mut store, ctx, &mut Page::new(""))?;
            not_ok.extend(r.not_ok.iter().map(|n| format!("{label} {tag}: {n}")));
            if let Some(run) = r.runs.first() {
                series.push(run.run.series.clone());
            }
            for (&i, l) in which.iter().zip(&r.labels) {
                makespans[i] = r.figures.iter().filter(|f| &f.policy == l && f.failed == 0).filter_map(|f| f.makespan).collect();
            }
        }
        let medians: Vec<Option<f64>> = makespans.iter().map(|m| Summary::of(m).map(|s| s.median)).collect();
        let sc = scores(&medians);
        ctx.step(&format!(
            "{label}: {}",
            STRATEGIES.iter().zip(&sc).map(|(s, x)| format!("{} {}", s.name, x.map_or("-".into(), |x| format!("{x:.3}")))).collect::<Vec<_>>().join(", ")
        ));
        results.push(SetResult { programs: names, makespans, scores: sc, series });
    }
    let triples = results.split_off(pair_sets.len());
    let mut report = StudyReport {
        workload: shown,
        programs,
        strategies: STRATEGIES.to_vec(),
        repeats: a.repeats,
        summary: summarise(&results, &triples),
        pairs: results,
        triples,
        triples_in_all: all_triples.len(),
        not_ok,
        index: None,
    };
    if let Some(d) = &a.report {
        report.index = Some(write_report(d, &report)?);
    }
    Ok(report)
}

fn summarise(pairs: &[SetResult], triples: &[SetResult]) -> Vec<ScoreSummary> {
    let of = |sets: &[SetResult], i: usize| Spread::of(&sets.iter().filter_map(|s| s.scores[i]).collect::<Vec<_>>());
    STRATEGIES.iter().enumerate().map(|(i, s)| ScoreSummary { strategy: s.name.into(), pairs: of(pairs, i), triples: of(triples, i) }).collect()
}

fn fmt_spread(s: &Option<Spread>) -> String {
    s.map_or("-".into(), |s| format!("{:.3} [{:.3}, {:.3}] ({:.3} .. {:.3}, n {})", s.median, s.q1, s.q3, s.min, s.max, s.n))
}

/// The score table: per strategy, median [quartiles] (extremes, n) over
/// the pairs and over the triples.
fn score_rows(r: &StudyReport) -> Vec<Vec<String>> {
    r.summary.iter().map(|s| vec![s.strategy.clone(), fmt_spread(&s.pairs), fmt_spread(&s.triples)]).collect()
}

pub const SCORE_HEAD: [&str; 3] = ["strategy", "pairs: median [q1, q3] (min .. max, n)", "triples: median [q1, q3] (min .. max, n)"];

fn set_rows(sets: &[SetResult]) -> Vec<Vec<String>> {
    sets.iter()
        .map(|s| {
            let mut row = vec![s.programs.join("+")];
            row.extend(s.scores.iter().map(|x| x.map_or("-".into(), |x| format!("{x:.3}"))));
            row
        })
        .collect()
}

fn set_head() -> Vec<&'static str> {
    std::iter::once("set").chain(STRATEGIES.iter().map(|s| s.name)).collect()
}

fn box_plot(r: &StudyReport, title: &str, pick: impl Fn(&ScoreSummary) -> Option<Spread>) -> String {
    let boxes = r
        .summary
        .iter()
        .filter_map(|s| {
            pick(s).map(|p| BoxStats { label: s.strategy.clone(), min: p.min, q1: p.q1, median: p.median, q3: p.q3, max: p.max, mean: p.mean })
        })
        .collect();
    BoxPlot { title: title.into(), y_label: "performance score".into(), boxes, percent: false, reference: Some(1.0) }.svg()
}

/// Per strategy, the pairs' makespans over the pair's best median makespan:
/// 1 / score, each repeat a sample, so the cell shows the repeats' spread.
fn heatmap(r: &StudyReport, i: usize) -> String {
    let mut m = SlowdownMatrix::new(r.programs.clone());
    for s in &r.pairs {
        let best = s.scores.iter().zip(&s.makespans).find(|(x, _)| **x == Some(1.0)).and_then(|(_, ms)| Summary::of(ms)).map(|x| x.median);
        let (Some(best), Some(a), Some(b)) =
            (best, r.programs.iter().position(|p| *p == s.programs[0]), r.programs.iter().position(|p| *p == s.programs[1]))
        else {
            continue;
        };
        let cell = Summary::of(&s.makespans[i].iter().map(|m| m / best).collect::<Vec<_>>());
        m.cells[a][b] = cell;
        m.cells[b][a] = cell;
    }
    cosched_report::svg::heatmap_captioned(
        &m,
        &format!("{}: makespan over the pair's best", r.strategies[i].name),
        &format!(
            "1.00 = the best strategy for that pair (score 1); 1 / cell is the score; median [{}] (repeats)",
            cosched_report::interval_name(m.cells.iter().flatten().flatten().map(|s| s.n))
        ),
    )
}

/// What the study ran, in words: the page and the terminal say it alike.
fn sizes(r: &StudyReport) -> String {
    format!("{} programs, {} pairs, {} of {} triples, {} repeats", r.programs.len(), r.pairs.len(), r.triples.len(), r.triples_in_all, r.repeats)
}

fn write_report(dir: &Path, r: &StudyReport) -> anyhow::Result<PathBuf> {
    let mut page = Page::new("cosched study");
    page.section("Performance score per strategy").paragraph(&format!(
        "The nOS-V paper's score: for each set, the best makespan among the strategies over this strategy's (1 = best). {}.",
        sizes(r)
    ));
    page.table(&SCORE_HEAD, &score_rows(r));
    for (name, svg) in [
        ("scores-pairs.svg", box_plot(r, "Performance score over the pairs", |s| s.pairs)),
        ("scores-triples.svg", box_plot(r, "Performance score over the triples", |s| s.triples)),
    ] {
        write_file(&dir.join(name), &svg)?;
        page.svg(&svg);
    }
    page.section("Heatmaps over the pairs");
    for i in 0..r.strategies.len() {
        let svg = heatmap(r, i);
        write_file(&dir.join(format!("heatmap-{}.svg", r.strategies[i].name)), &svg)?;
        page.svg(&svg);
    }
    page.section("Scores per set");
    page.table(&set_head(), &set_rows(&r.pairs));
    page.table(&set_head(), &set_rows(&r.triples));
    write_file(&dir.join("study.json"), &serde_json::to_string_pretty(r)?)?;
    let index = dir.join("index.html");
    write_file(&index, &page.render())?;
    Ok(index)
}

impl Render for StudyReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        d.line(format!("Performance score (best makespan for the set / this strategy's; 1 = best), {}:", sizes(self)));
        d.table(&SCORE_HEAD, score_rows(self)).line("");
        d.line("Pairs:").table(&set_head(), set_rows(&self.pairs)).line("");
        if !self.triples.is_empty() {
            d.line("Triples:").table(&set_head(), set_rows(&self.triples)).line("");
        }
        for n in &self.not_ok {
            d.line(format!("not ok (makespan left out): {n}"));
        }
        if let Some(i) = &self.index {
            d.line(format!("report: {}", i.display()));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_score_is_the_best_makespan_over_each_strategys_and_the_best_is_exactly_one() {
        let s = scores(&[Some(10.0), Some(8.0), None, Some(16.0), Some(7.3)]);
        assert_eq!(s, vec![Some(7.3 / 10.0), Some(7.3 / 8.0), None, Some(7.3 / 16.0), Some(1.0)]);
        assert_eq!(scores(&[Some(4.0), Some(4.0)]), vec![Some(1.0), Some(1.0)]);
        assert_eq!(scores(&[None, None]), vec![None, None]);
    }

    #[test]
    fn spread_pick_takes_evenly_spaced_sets_or_all() {
        assert_eq!(spread_pick(35, 10), vec![0, 3, 7, 10, 14, 17, 21, 24, 28, 31]);
        assert_eq!(spread_pick(4, 10), vec![0, 1, 2, 3]);
        assert_eq!(spread_pick(5, 0), Vec::<usize>::new());
    }

    #[test]
    fn seven_programs_have_21_pairs_and_35_triples() {
        assert_eq!(subsets(7, 2).len(), 21);
        assert_eq!(subsets(7, 3).len(), 35);
        assert_eq!(subsets(4, 3), vec![vec![0, 1, 2], vec![0, 1, 3], vec![0, 2, 3], vec![1, 2, 3]]);
    }

    #[test]
    fn a_sets_workload_keeps_its_programs_jobs_starting_at_once_with_the_wait_policy() {
        let text = "name = \"w\"\n[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nseconds = 1\narrival = 3\ncount = 2\n\
                    [[jobs]]\nname = \"b\"\nkernel = \"stream\"\nseconds = 1\nafter = [\"a\"]\nenv = { X = \"1\" }\n\
                    [[jobs]]\nname = \"c\"\nkernel = \"compute\"\nseconds = 1\n";
        let w = cosched_model::workload::parse_workload(text, "w.toml", Some(2)).unwrap();
        let set = set_workload(&w, &["a".into(), "b".into()], "w a+b", Some("active"));
        let names: Vec<&str> = set.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["a.1", "a.2", "b"], "every copy of a counted program comes along");
        assert!(set.jobs.iter().all(|j| j.arrival == 0.0 && j.after.is_empty()));
        assert!(set.jobs.iter().all(|j| j.env.get("OMP_WAIT_POLICY").map(String::as_str) == Some("active")));
        assert_eq!(set.jobs[2].env.get("X").map(String::as_str), Some("1"));
        assert_eq!(set.name, "w a+b");
        assert_eq!(set.pools, w.pools);
        let as_written = set_workload(&w, &["c".into()], "w c", None);
        assert_eq!(as_written.jobs, [w.jobs[3].clone()], "no wait policy: the job as the file has it");
    }
}
