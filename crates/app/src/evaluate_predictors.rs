//! `cosched evaluate-predictors`: every predictor's accuracy on a workload's
//! measured pairs, cross-validated so that a held-out program's pairs never
//! reach the fit; stored rows, a scatter SVG per predictor and, on request,
//! the accuracy section of docs/predictors.md. Also the predictions real
//! runs made against what they measured (`--from-runs`).

use std::path::{Path, PathBuf};

use cosched_model::workload::Workload;
use cosched_predict::{evaluate as cross_validate, predictor_names, Accuracy, CvPrediction, Folds, TrainingSet};
use cosched_report::scatter::{scatter, Point};
use cosched_report::markdown_table;
use cosched_store::EvaluationRecord;
use serde::Serialize;

use crate::common::{create_dir, db_path, file_safe, load_workload, open_existing_store, provenance, write_file, Conditions, Ctx};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use cosched_learn::run_inputs::PAIRS_TABLE;
use cosched_learn::training::{build, training_set, training_set_in, Sources};

/// A slowdown above this is a severe conflict unless a request says otherwise.
pub const DEFAULT_SEVERE: f64 = cosched_predict::DEFAULT_SEVERE;

#[derive(Debug, Clone)]
pub struct EvaluatePredictorsRequest {
    pub workload: PathBuf,
    /// Fold method: leave-one-program-out, in-sample or repeat-halves.
    pub folds: String,
    /// A slowdown above this is a severe conflict.
    pub level: f64,
    /// Predictor specs; empty: every registered one.
    pub predictors: Vec<String>,
    /// Score the predictions real runs made instead.
    pub from_runs: bool,
    /// Cross-workload: fit on the programs and pairs of these workloads
    /// (the store's knowledge base, [`cosched_learn::knowledge`]) and predict every
    /// measured pair of `workload` from its programs' solo
    /// characterizations alone.
    pub train: Vec<PathBuf>,
    /// Directory for one scatter SVG per predictor.
    pub svg_dir: Option<PathBuf>,
    /// Markdown file whose generated accuracy section is rewritten.
    pub markdown: Option<PathBuf>,
    /// Store the results.
    pub store: bool,
    /// The cache regime whose repeats the folds (or the cross-workload
    /// fit and test) use (`shared`, `apart`, `any`); `None`: the node's
    /// now. Not with `from_runs`.
    pub regime: Option<String>,
    /// Cross-workload: both sides' campaigns only from this node and time
    /// on. With `train` only.
    pub kb: cosched_learn::knowledge::KbScope,
    /// Cross-node: the test side's campaigns only from this host (the
    /// training side's from `kb.node`), so `train` may be the workload
    /// under test itself.
    pub test_node: Option<String>,
    pub db: Option<PathBuf>,
}

/// `cosched evaluate-predictors` (and `bench predictors`).
#[derive(Debug, Serialize)]
pub struct EvaluatePredictorsReport {
    pub counts: Counts,
    pub level: f64,
    pub rows: Vec<Row>,
    pub svgs: Vec<PathBuf>,
    /// What the rows were computed on, for people.
    #[serde(skip)]
    pub description: String,
    /// Where the accuracy section was written (`--markdown`).
    #[serde(skip)]
    pub markdown: Option<PathBuf>,
}

impl Render for EvaluatePredictorsReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        d.line(render(&self.rows)).line(&self.description);
        for s in &self.svgs {
            d.line(format!("scatter: {}", s.display()));
        }
        if let Some(md) = &self.markdown {
            d.line(format!("accuracy section written to {}", md.display()));
        }
        d
    }
}

/// One predictor's evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub predictor: String,
    pub folds: String,
    pub accuracy: Accuracy,
    pub predictions: Vec<CvPrediction>,
    /// Cross-workload only: the severe cut set on the training side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trained_cut: Option<cosched_predict::cv::TrainedCut>,
    /// Pearson on only the pairs the repeat-halves row scores (those with
    /// enough repeats to split): the noise floor's own pairs, so the two
    /// compare like for like.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pearson_on_halves_pairs: Option<f64>,
}

/// What an evaluation ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Counts {
    pub workload: String,
    pub programs: usize,
    pub ordered_pairs: usize,
    pub repeats: usize,
    pub sources: Sources,
    /// The node's conditions when the pairs campaign started (and resumed).
    pub pairs_conditions: Vec<Conditions>,
}

/// What the "recall at P" column is, for the notes under the table
/// (spelled out; a test holds it to `DEFAULT_AT_PRECISION`).
const AT_NOTE: &str = "recall at P >= 0.7: the best severe recall of any cut swept over the predictions that keeps precision >= 0.7, and that cut (how well the predictions rank severe pairs, whatever their scale)";

const BEGIN: &str = "<!-- accuracy:begin";
const END: &str = "<!-- accuracy:end -->";

pub fn evaluate_predictors(a: &EvaluatePredictorsRequest, ctx: &Ctx) -> anyhow::Result<EvaluatePredictorsReport> {
    let folds = parse_folds(&a.folds)?;
    check_level(a.level)?;
    let specs = specs(&a.predictors)?;
    if a.regime.is_some() && a.from_runs {
        return Err(bad_input("--regime selects the repeats of measured pairs; it does not go with --from-runs (real runs record no regime per job)"));
    }
    if !a.kb.is_empty() && a.train.is_empty() {
        return Err(bad_input("--kb-node and --kb-since narrow the knowledge base of a cross-workload evaluation; give --train"));
    }
    let regime = if a.from_runs {
        None
    } else {
        Some(crate::regime::choose(a.regime.as_deref(), crate::regime::read_now)?)
    };
    let w = load_workload(&a.workload)?;
    let mut store = open_existing_store(&db_path(a.db.as_deref()))?;
    let mut cross_note = None;
    let mut unfitted = Vec::new();
    let choice = regime.as_ref().map_or(cosched_predict::regime::RegimeChoice::Any, |r| r.regime);
    let (counts, mut rows) = if a.from_runs {
        from_runs(&store, &w, a.level)?
    } else if !a.train.is_empty() {
        let (counts, rows, note) = cross_workload_rows(&store, &w, a, &specs, choice, ctx)?;
        cross_note = Some(note);
        (counts, rows)
    } else {
        let (train, sources) = training_set_in(&store, &w, &a.workload, None, choice)?;
        let counts = counts(&store, &w, &train, sources)?;
        let (rows, notes) = compute(&train, &specs, folds, a.level, ctx)?;
        unfitted = notes;
        (counts, rows)
    };

    if a.store {
        let records: Vec<EvaluationRecord> = rows
            .iter()
            .map(|r| EvaluationRecord {
                workload: w.name.clone(),
                predictor: r.predictor.clone(),
                folds: r.folds.clone(),
                level: a.level,
                n: r.accuracy.n as u32,
                within_5: r.accuracy.within_5,
                within_30: r.accuracy.within_30,
                mae: r.accuracy.mae,
                pearson: r.accuracy.pearson,
                spearman: r.accuracy.spearman,
                precision: r.accuracy.precision,
                recall: r.accuracy.recall,
                recall_at_precision: r.accuracy.recall_at.map(|x| x.recall),
                at_precision_cut: r.accuracy.recall_at.and_then(|x| x.cut),
                trained_cut: r.trained_cut.map(|t| t.cut),
                trained_cut_precision: r.trained_cut.and_then(|t| t.precision),
                trained_cut_recall: r.trained_cut.and_then(|t| t.recall),
                sources: serde_json::to_value(&counts.sources).expect("sources serialize"),
                predictions: serde_json::to_value(&r.predictions).expect("predictions serialize"),
            })
            .collect();
        store.add_evaluations(&records, &provenance(ctx))?;
    }
    let mut svgs = Vec::new();
    if let Some(dir) = &a.svg_dir {
        create_dir(dir)?;
        for r in &rows {
            let file = dir.join(format!("predict-{}-{}-{}.svg", file_safe(&w.name), file_safe(&r.predictor), file_safe(&r.folds)));
            write_file(&file, &scatter_of(&w.name, r))?;
            svgs.push(file);
        }
    }
    let description = if let Some(note) = cross_note {
        note
    } else if a.from_runs {
        format!(
            "workload {}: {} job(s) of {} real run(s) that ended ok with a measured slowdown; predicted = the run's \
             source beside the jobs running at the job's start, measured = run time / stored solo time (co-runners may \
             have changed during the job); one row per source the runs decided with; severe: above {}.",
            counts.workload, counts.repeats, counts.programs, a.level
        )
    } else {
        describe(&counts, folds, a.level) + &not_fitted(&unfitted)
    };
    let description = match on_halves_pairs(&mut rows) {
        Some(line) => format!("{description}\n{line}"),
        None => description,
    };
    let description = match (&regime, &counts.sources.regime) {
        (Some(r), Some(used)) => format!("{description}\nFor {}: {}.", r.describe(), used.describe()),
        (Some(r), None) => format!("{description}\nFor {}.", r.describe()),
        _ => description,
    };
    if let Some(md) = &a.markdown {
        let section = markdown_section(&rows, &description, &provenance(ctx), &a.workload);
        rewrite_section(md, &section)?;
    }
    Ok(EvaluatePredictorsReport { counts, level: a.level, rows, svgs, description, markdown: a.markdown.clone() })
}

/// Fills each row's [`Row::pearson_on_halves_pairs`] and says it in a
/// line: the repeat-halves row is scored only on pairs with four or more
/// repeats, the others on every pair, and a pair of two repeats carries
/// more noise than the halves show. `None` without a repeat-halves row.
fn on_halves_pairs(rows: &mut [Row]) -> Option<String> {
    let halves = rows.iter().find(|r| r.folds == Folds::RepeatHalves.name())?;
    let (n, floor) = (halves.accuracy.n, halves.accuracy.pearson);
    let pairs: std::collections::BTreeSet<(&str, &str)> =
        halves.predictions.iter().map(|p| (p.victim.as_str(), p.aggressor.as_str())).collect();
    let on_pairs: Vec<Option<f64>> = rows
        .iter()
        .map(|r| {
            let (p, m): (Vec<f64>, Vec<f64>) = r
                .predictions
                .iter()
                .filter(|p| pairs.contains(&(p.victim.as_str(), p.aggressor.as_str())))
                .map(|p| (p.predicted.slowdown, p.measured))
                .unzip();
            cosched_predict::metrics::pearson(&p, &m)
        })
        .collect();
    let mut parts = Vec::new();
    for (r, pearson) in rows.iter_mut().zip(on_pairs).filter(|(r, _)| r.folds != Folds::RepeatHalves.name()) {
        r.pearson_on_halves_pairs = pearson;
        parts.push(format!("{} {}", r.predictor, opt(pearson, 3)));
    }
    Some(format!(
        "Pearson on only the {n} pairs repeat-halves scores (its own {}; the others above are on every pair): {}.",
        opt(floor, 3),
        parts.join(", ")
    ))
}

/// `cosched bench predictors`: each predictor's accuracy, leave one
/// program out, without the predictions themselves.
#[derive(Debug)]
pub struct PredictorBench {
    pub report: EvaluatePredictorsReport,
}

impl Serialize for PredictorBench {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Row<'a> {
            accuracy: &'a Accuracy,
            folds: &'a str,
            predictor: &'a str,
        }
        #[derive(Serialize)]
        struct Json<'a> {
            counts: &'a Counts,
            folds: &'a str,
            level: f64,
            rows: Vec<Row<'a>>,
        }
        let r = &self.report;
        let rows = r.rows.iter().map(|x| Row { accuracy: &x.accuracy, folds: &x.folds, predictor: &x.predictor }).collect();
        Json { counts: &r.counts, folds: "leave-one-program-out", level: r.level, rows }.serialize(s)
    }
}

impl Render for PredictorBench {
    fn doc(&self) -> Doc {
        let r = &self.report;
        let mut d = Doc::new();
        d.line(format!("predictors on {} (baselines: c-all of the SX-Aurora paper, scn of Haritatos et al.)", r.counts.workload));
        d.line(render(&r.rows)).line(&r.description);
        d
    }
}

/// `bench predictors`: every registered predictor under
/// leave-one-program-out, the baselines of the SX-Aurora paper (c-all) and the SCN paper
/// (scn) first; nothing stored.
pub fn bench(workload: &Path, level: f64, db: Option<&Path>, ctx: &Ctx) -> anyhow::Result<PredictorBench> {
    check_level(level)?;
    let mut names = vec!["c-all".to_string(), "scn".to_string()];
    for (n, _) in predictor_names() {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    }
    let names = specs(&names)?;
    let w = load_workload(workload)?;
    let store = open_existing_store(&db_path(db))?;
    let (train, sources) = training_set(&store, &w, workload, false)?;
    let c = counts(&store, &w, &train, sources)?;
    let folds = Folds::LeaveOneProgramOut;
    let (rows, unfitted) = compute(&train, &names, folds, level, ctx)?;
    let description = describe(&c, folds, level) + &not_fitted(&unfitted);
    Ok(PredictorBench { report: EvaluatePredictorsReport { counts: c, level, rows, svgs: Vec::new(), description, markdown: None } })
}

fn parse_folds(s: &str) -> anyhow::Result<Folds> {
    Folds::from_name(s).ok_or_else(|| {
        let known: Vec<&str> = Folds::ALL.iter().map(|f| f.name()).collect();
        bad_input(format!("--folds {s}: unknown fold method; expected one of {}", known.join(", ")))
    })
}

fn check_level(level: f64) -> anyhow::Result<()> {
    if !(level.is_finite() && level > 0.0) {
        return Err(bad_input("--level must be a positive slowdown, e.g. 1.3"));
    }
    Ok(())
}

/// The naive baselines (the SCN paper judges its models against such
/// guesses): every accuracy table shows them, so each predictor's figures
/// read against guessing.
const BASELINES: [&str; 2] = ["median", "blind"];

/// The predictors to evaluate, each checked now so a typo is exit code 2
/// before anything is read; the baselines are added when not named.
fn specs(models: &[String]) -> anyhow::Result<Vec<String>> {
    let mut v: Vec<String> = if models.is_empty() {
        predictor_names().iter().map(|(n, _)| n.to_string()).collect()
    } else {
        models.to_vec()
    };
    for b in BASELINES {
        if !v.iter().any(|m| m == b) {
            v.push(b.to_string());
        }
    }
    for s in &v {
        build(s)?;
    }
    Ok(v)
}

fn counts(store: &cosched_store::Store, w: &Workload, train: &TrainingSet, sources: Sources) -> anyhow::Result<Counts> {
    let pairs_conditions = if sources.pairs > 0 {
        store.conditions(cosched_store::CampaignId(sources.pairs))?.iter().map(Conditions::from).collect()
    } else {
        Vec::new()
    };
    Ok(Counts {
        workload: w.name.clone(),
        programs: train.program_keys().len(),
        ordered_pairs: train.pairs.len(),
        repeats: train.pairs.iter().map(|p| p.slowdowns.len()).sum(),
        sources,
        pairs_conditions,
    })
}

/// Cross-workload rows: each predictor fitted on the knowledge base of the
/// programs of the `train` workload files (without any pair of a program of
/// `w`), scored on the measured pairs of `w`'s programs (either side's
/// pairs from whichever workload's campaigns measured them); `measured` on
/// repeat halves of `w` beside them, the node's own noise floor in the same
/// campaigns. Both sides take each pair's repeats of `regime` where it has
/// any. Programs a workload's campaigns measured that its file no longer
/// runs (a command since changed) are on neither side.
fn cross_workload_rows(
    store: &cosched_store::Store,
    w: &Workload,
    a: &EvaluatePredictorsRequest,
    specs: &[String],
    regime: cosched_predict::regime::RegimeChoice,
    ctx: &Ctx,
) -> anyhow::Result<(Counts, Vec<Row>, String)> {
    use cosched_learn::knowledge::{jobs_by_program, knowledge_base, KbFilter};
    let mut names = Vec::new();
    let mut train_programs = std::collections::BTreeSet::new();
    let (train_files, level, scope) = (&a.train, a.level, &a.kb);
    // Another node's pairs of the same programs train, this node's test.
    let cross_node = a.test_node.is_some() && a.test_node != scope.node;
    for f in train_files {
        let t = load_workload(f)?;
        if t.name == w.name && !cross_node {
            return Err(bad_input(format!(
                "--train {}: the workload under test, `{}`, cannot train itself (on the same node; --kb-node A --test-node B trains on A's pairs and tests on B's)",
                f.display(),
                w.name
            )));
        }
        train_programs.extend(jobs_by_program(store, &t)?.into_keys());
        names.push(t.name);
    }
    let regime = regime.only();
    let filter = |programs| KbFilter {
        workloads: Vec::new(),
        node: scope.node.clone(),
        since_unix: scope.since_unix,
        regime,
        programs: Some(programs),
        // Scored and fitted on the regime's own measurements only.
        strict_regime: true,
    };
    // Each side is its programs and their pairs measured under any
    // workload file: a program added to a workload later (`pairs
    // --skip-known`) keeps the pairs its first workload measured.
    let train = knowledge_base(store, &filter(train_programs))?;
    let test_programs = jobs_by_program(store, w)?.into_keys().collect();
    let mut test_filter = filter(test_programs);
    if let Some(n) = &a.test_node {
        test_filter.node = Some(n.clone());
    }
    let test = knowledge_base(store, &test_filter)?;
    if train.set.pairs.is_empty() {
        return Err(bad_input(format!("--train: the store holds no measured pairs of {}; run `cosched pairs` on them first", names.join(", "))));
    }
    if test.set.pairs.is_empty() {
        return Err(bad_input(format!(
            "{}: the store holds no measured pairs to test on{}; run `cosched pairs --workload` on it first",
            w.name,
            a.test_node.as_ref().map_or(String::new(), |n| format!(" from node {n} (`cosched db info` lists each campaign's node)"))
        )));
    }
    let progress = ctx.progress.task("evaluate", specs.len() as u64 + 1);
    let mut rows = Vec::new();
    // Across workloads some programs may lack a profile or probe: a
    // predictor that cannot be fitted is reported, the others still scored.
    let mut unfitted = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        progress.set(i as u64, spec);
        let spec2 = spec.clone();
        let make = move || build(&spec2).expect("checked before");
        let fitted = if cross_node {
            cosched_predict::cv::cross_node(&make, &train.set, &test.set)
        } else {
            cosched_predict::cv::cross_workload(&make, &train.set, &test.set)
        };
        match fitted {
            Ok(predictions) => {
                let scored = cosched_predict::cv::scored(&predictions);
                let accuracy = Accuracy::of(&scored, level);
                let at = cosched_predict::DEFAULT_AT_PRECISION;
                let trained_cut = if cross_node {
                    cosched_predict::cv::cross_node_cut(&make, &train.set, &scored, level, at)
                } else {
                    cosched_predict::cv::cross_workload_cut(&make, &train.set, &test.set, &scored, level, at)
                };
                let folds = if cross_node { "cross-node" } else { "cross-workload" };
                rows.push(Row { predictor: spec.clone(), folds: folds.into(), accuracy, predictions, trained_cut, pearson_on_halves_pairs: None });
            }
            Err(e) => unfitted.push(format!("{spec}: {e}")),
        }
    }
    if let Some(m) = specs.iter().find(|s| s.split(':').next() == Some("measured")) {
        let m2 = m.clone();
        let make = move || build(&m2).expect("checked before");
        let (predictions, accuracy) = cross_validate(&make, &test.set, Folds::RepeatHalves, level)?;
        rows.push(Row { predictor: m.clone(), folds: Folds::RepeatHalves.name().into(), accuracy, predictions, trained_cut: None, pearson_on_halves_pairs: None });
    }
    progress.finish();
    let counts = Counts {
        workload: w.name.clone(),
        programs: test.set.program_keys().len(),
        ordered_pairs: test.set.pairs.len(),
        repeats: test.set.pairs.iter().map(|p| p.slowdowns.len()).sum(),
        sources: Sources {
            profile: Vec::new(),
            probe: Vec::new(),
            pairs: 0,
            pairs_status: String::new(),
            pair_runs: 0,
            run_pairs: 0,
            online_pairs: 0,
            campaigns: test.parts.iter().flat_map(|p| p.campaigns.clone()).collect(),
            knowledge: None,
            regime: None,
            older_pairs: 0,
            other_amounts: None,
        },
        pairs_conditions: Vec::new(),
    };
    let used = |kb: &cosched_learn::knowledge::KnowledgeBase| -> String {
        let all: Vec<crate::common::UsedCampaign> = kb.parts.iter().flat_map(|p| p.campaigns.iter().cloned()).collect();
        crate::common::describe_campaigns(&all).into_iter().map(|line| format!("\n  {line}")).collect()
    };
    let severe = severe_pairs_with_solo(store, w, &test, level)?;
    let note = format!(
        "{}: fitted on {} ({}), from:{}\ntested on the measured pairs of {}: {} from their programs' \
         solo characterizations, from:{}\nrepeat-halves: `measured` on the tested pairs' own repeats, the node's noise floor; Pearson -1: the lowest Pearson with any one pair left out; severe: measured slowdown above {level:.2}; {AT_NOTE}; trained cut: that cut chosen on the training programs' own leave-one-program-out predictions, then applied to the tested pairs (what a scheduler fitted on them would get){}.{}{}",
        if cross_node { "cross-node" } else { "cross-workload" },
        train.describe(),
        if cross_node {
            format!("node {}'s pairs, the tested programs' own included", scope.node.as_deref().unwrap_or("?"))
        } else {
            "without any pair of a tested program".to_string()
        },
        used(&train),
        w.name,
        test.describe(),
        used(&test),
        scope.describe(),
        severe.iter().map(|l| format!("\n  {l}")).collect::<String>(),
        unfitted.iter().map(|u| format!("\nnot fitted: {u}")).collect::<String>()
    );
    Ok((counts, rows, note))
}

/// The tested pairs measured severe, each with how far apart its victim's
/// own solo runs were in the pairs campaigns the test used
/// (`pairs::solo_spreads`): a victim whose solo runs spread beyond
/// `pairs::UNSTABLE_SOLO` may be "severe" by its own two speeds, which no
/// predictor can foresee (docs/measurements.md, 2026-11-25).
fn severe_pairs_with_solo(
    store: &cosched_store::Store,
    w: &Workload,
    test: &cosched_learn::knowledge::KnowledgeBase,
    level: f64,
) -> anyhow::Result<Vec<String>> {
    let jobs = cosched_learn::knowledge::jobs_by_program(store, w)?;
    let mut campaigns = Vec::new();
    for c in test.parts.iter().flat_map(|p| &p.campaigns).filter(|c| c.kind == "pairs" && c.workload == w.name) {
        let id = cosched_store::CampaignId(c.id);
        let record = anyhow::Context::with_context(store.campaign(id)?, || format!("pairs campaign {id} is no longer stored"))?;
        campaigns.push((cosched_learn::knowledge::identities(&record)?, store.pair_runs(id)?));
    }
    let spreads = cosched_learn::matrix::solo_spreads(&runs_by_program(campaigns));
    let spread_of = |key: &str| -> Option<f64> { spreads.iter().find(|s| s.job == key).map(|s| s.spread()) };
    let name_of = |key: &str| jobs.get(key).and_then(|j| j.first()).cloned().unwrap_or_else(|| key.to_string());
    Ok(severe_lines(&test.set.pairs, level, &spread_of, &name_of))
}

/// A campaign's job names and their program keys and cores
/// (`knowledge::identities`).
type JobKeys = std::collections::BTreeMap<String, (String, u32)>;

/// Each campaign's pair runs with their two jobs named by program key.
/// Solo times are gathered by program, not by job name: a job whose
/// command changed between campaigns is another program under the same
/// name, and its old solo runs say nothing of the new one's. A run of a
/// job without a key is left out.
fn runs_by_program(campaigns: Vec<(JobKeys, Vec<cosched_store::PairRunRecord>)>) -> Vec<cosched_store::PairRunRecord> {
    let mut out = Vec::new();
    for (ids, runs) in campaigns {
        for mut r in runs {
            let (Some((v, _)), Some((a, _))) = (ids.get(&r.fg_job), ids.get(&r.bg_job)) else { continue };
            (r.fg_job, r.bg_job) = (v.clone(), a.clone());
            out.push(r);
        }
    }
    out
}

/// One line per pair measured above `level`, worst first, with its victim's
/// solo spread; a header line first, none when no pair is severe.
fn severe_lines(
    pairs: &[cosched_predict::PairSamples],
    level: f64,
    spread_of: &dyn Fn(&str) -> Option<f64>,
    name_of: &dyn Fn(&str) -> String,
) -> Vec<String> {
    let mut severe: Vec<(&cosched_predict::PairSamples, f64)> =
        pairs.iter().map(|p| (p, p.median())).filter(|(_, m)| *m > level).collect();
    severe.sort_by(|a, b| b.1.total_cmp(&a.1));
    if severe.is_empty() {
        return Vec::new();
    }
    let unstable = cosched_learn::matrix::UNSTABLE_SOLO;
    let mut out = vec![format!("measured severe, with the victim's own solo spread (10th-90th percentile; above {unstable} it may be the victim's two speeds, not its co-runner):")];
    for (p, m) in severe {
        let spread = match spread_of(&p.victim) {
            Some(x) if x > unstable => format!("solo {x:.2}x apart: unstable"),
            Some(x) => format!("solo {x:.2}x"),
            None => "solo spread not known".to_string(),
        };
        out.push(format!("{} beside {}: {m:.2} ({spread})", name_of(&p.victim), name_of(&p.aggressor)));
    }
    out
}

/// Cross-validates every predictor; under leave-one-program-out `measured`
/// is also scored on repeat halves: the noise floor of the pair matrix. One
/// whose inputs were never measured refuses to be fitted: it is returned by
/// name and reason, and the others are still scored, as across workloads.
fn compute(train: &TrainingSet, specs: &[String], folds: Folds, level: f64, ctx: &Ctx) -> anyhow::Result<(Vec<Row>, Vec<String>)> {
    let mut jobs: Vec<(String, Folds)> = specs.iter().map(|s| (s.clone(), folds)).collect();
    if folds == Folds::LeaveOneProgramOut {
        if let Some(m) = specs.iter().find(|s| s.split(':').next() == Some("measured")) {
            jobs.push((m.clone(), Folds::RepeatHalves));
        }
    }
    let progress = ctx.progress.task("evaluate", jobs.len() as u64);
    let (mut rows, mut unfitted) = (Vec::new(), Vec::new());
    for (i, (spec, f)) in jobs.iter().enumerate() {
        progress.set(i as u64, &format!("{spec} ({})", f.name()));
        let spec2 = spec.clone();
        let make = move || build(&spec2).expect("checked before");
        let (predictions, accuracy) = match cross_validate(&make, train, *f, level) {
            Ok(scored) => scored,
            Err(e @ cosched_predict::PredictError::Fit { .. }) => {
                unfitted.push(format!("{spec}: {e}"));
                continue;
            }
            Err(e) => return Err(anyhow::anyhow!("evaluating {spec}: {e}")),
        };
        rows.push(Row { predictor: spec.clone(), folds: f.name().to_string(), accuracy, predictions, trained_cut: None, pearson_on_halves_pairs: None });
    }
    progress.finish();
    Ok((rows, unfitted))
}

/// Lines naming the predictors that could not be fitted, and why.
fn not_fitted(unfitted: &[String]) -> String {
    unfitted.iter().map(|u| format!("\nnot fitted: {u}")).collect()
}

fn pct(v: f64) -> String {
    format!("{:.0} %", v * 100.0)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.d$}", d = digits)).unwrap_or_else(|| "-".into())
}

/// The accuracy table, one row per predictor. "recall at P >= 0.7" sweeps
/// the cut over the predictions (the ranking's best); "trained cut" is the
/// cross-workload cut set on the training side, with its precision and
/// recall on the tested pairs.
pub fn render(rows: &[Row]) -> String {
    let trained = rows.iter().any(|r| r.trained_cut.is_some());
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let a = &r.accuracy;
            let mut row = vec![
                r.predictor.clone(),
                r.folds.clone(),
                a.n.to_string(),
                pct(a.within_5),
                pct(a.within_30),
                format!("{:.3}", a.mae),
                opt(a.pearson, 3),
                opt(a.pearson_less_one, 3),
                opt(a.spearman, 3),
                opt(a.precision, 2),
                opt(a.recall, 2),
                recall_at(a.recall_at),
            ];
            if trained {
                row.push(r.trained_cut.map_or_else(
                    || "-".into(),
                    |t| format!("{:.2}: {} / {}", t.cut, opt(t.precision, 2), opt(t.recall, 2)),
                ));
            }
            row
        })
        .collect();
    let at = format!("recall at P >= {}", cosched_predict::DEFAULT_AT_PRECISION);
    let mut head = vec![
        "predictor",
        "folds",
        "pairs",
        "within 5 %",
        "within 30 %",
        "MAE",
        "Pearson",
        "Pearson -1",
        "Spearman",
        "severe precision",
        "severe recall",
        at.as_str(),
    ];
    if trained {
        head.push("trained cut: P / R");
    }
    markdown_table(&head, &body)
}

/// "0.80 (cut 1.16)": the best recall at the precision and the cut it
/// takes; "0.00" when no cut keeps the precision, "-" with nothing severe.
fn recall_at(r: Option<cosched_predict::RecallAt>) -> String {
    match r {
        None => "-".into(),
        Some(r) => match r.cut {
            Some(cut) => format!("{:.2} (cut {cut:.2})", r.recall),
            None => format!("{:.2}", r.recall),
        },
    }
}

fn describe(c: &Counts, folds: Folds, level: f64) -> String {
    let severe = "Pearson -1: the lowest Pearson with any one pair left out; severe: measured slowdown above";
    let used: String = crate::common::describe_campaigns(&c.sources.campaigns).into_iter().map(|line| format!("\nfrom {line}")).collect();
    let text = format!(
        "workload {}: {} programs, {} measured ordered pairs ({} repeats) from pairs campaign {} ({}{}){}, \
         profiles {:?}, probes {:?}.\nfolds: {}{}; {severe} {level:.2}; {AT_NOTE}.",
        c.workload,
        c.programs,
        c.ordered_pairs,
        c.repeats,
        c.sources.pairs,
        c.sources.pairs_status,
        c.pairs_conditions
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let when = if i == 0 { "at its start".to_string() } else { format!("at resume {i}") };
                format!("; node {when}: {}", k.describe())
            })
            .collect::<String>(),
        if c.sources.older_pairs > 0 {
            format!(" and {} from other campaigns of its programs (older ones, or other workload files)", c.sources.older_pairs)
        } else {
            String::new()
        },
        c.sources.profile,
        c.sources.probe,
        folds.name(),
        if folds == Folds::LeaveOneProgramOut {
            " (each pair predicted by a fit without any pair of its victim's program)"
        } else if folds == Folds::InSample {
            " (fitted and tested on the same pairs: not a prediction)"
        } else {
            " (fitted on repeats 0, 1, 4, 5, ..., tested on the median of repeats 2, 3, 6, 7, ...)"
        },
    );
    text + &used
}

fn scatter_of(workload: &str, r: &Row) -> String {
    let a = &r.accuracy;
    let points: Vec<Point> = r
        .predictions
        .iter()
        .map(|p| Point {
            measured: p.measured,
            predicted: p.predicted.slowdown,
            lo: p.predicted.lo,
            hi: p.predicted.hi,
            label: format!("{} beside {}", p.victim, p.aggressor),
        })
        .collect();
    scatter(
        &format!("{} on {workload} ({})", r.predictor, r.folds),
        &format!(
            "within 5 %: {}, within 30 %: {}, MAE {:.3}, Pearson {}\nsevere (> {:.2}): recall {} at precision {}; recall at precision >= {}: {}",
            pct(a.within_5),
            pct(a.within_30),
            a.mae,
            opt(a.pearson, 3),
            a.level,
            opt(a.recall, 2),
            opt(a.precision, 2),
            cosched_predict::DEFAULT_AT_PRECISION,
            recall_at(a.recall_at),
        ),
        &points,
        Some(a.level),
    )
}

fn markdown_section(rows: &[Row], description: &str, prov: &cosched_model::provenance::Provenance, path: &Path) -> String {
    format!(
        "{BEGIN} generated by `cosched evaluate-predictors --workload {} --markdown FILE`; edits are overwritten -->\n\
         Measured on `{}` ({}, {} cores), cosched {} ({}), {}.\n\n{}\n\n{}\n{END}",
        path.display(),
        prov.hostname,
        prov.cpu_model,
        prov.cores,
        prov.cosched_version,
        prov.git_commit,
        cosched_store::format_unix_utc(prov.started_unix),
        render(rows),
        description.replace('\n', "\n\n"),
    )
}

/// Replaces the generated section of a Markdown file, or appends one.
fn rewrite_section(path: &Path, section: &str) -> anyhow::Result<()> {
    // Read as the sudo user too: the text goes back out in a file of theirs.
    let text = cosched_measure::files::as_user(cosched_measure::node::invoking_user(), || std::fs::read_to_string(path))
        .map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    let out = match (text.find(BEGIN), text.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{}{}", &text[..b], section, &text[e + END.len()..]),
        (None, None) => format!("{}\n\n{}\n", text.trim_end_matches('\n'), section),
        _ => {
            return Err(bad_input(format!(
                "{}: the accuracy markers are unbalanced; keep one `{BEGIN} ... -->` line before one `{END}` line",
                path.display()
            )))
        }
    };
    crate::common::write_file(path, &out)
}


/// The predictions real runs made before each job started against the
/// slowdowns the runs measured, one row per source the runs decided with
/// (`cosched run` records it; `pairs-table` for runs from before it did).
/// In the counts, `programs` is the number of runs and `repeats` of jobs.
fn from_runs(store: &cosched_store::Store, w: &Workload, level: f64) -> anyhow::Result<(Counts, Vec<Row>)> {
    let runs: Vec<_> = store.runs()?.into_iter().filter(|r| r.workload == w.name).collect();
    let mut by_source: std::collections::BTreeMap<String, Vec<CvPrediction>> = Default::default();
    let mut run_ids = Vec::new();
    for r in &runs {
        let source = r.params.get("predictor").and_then(|v| v.as_str()).unwrap_or(PAIRS_TABLE).to_string();
        for j in store.run_jobs(r.id)? {
            let Some(measured) = j.end.as_ref().filter(|e| e.status.is_ok()).and_then(|e| e.slowdown) else { continue };
            by_source.entry(source.clone()).or_default().push(CvPrediction {
                victim: format!("{} (run {})", j.start.job, r.id.0),
                aggressor: if j.start.beside.is_empty() { "-".into() } else { j.start.beside.join("+") },
                held_out: None,
                measured,
                repeats: 1,
                predicted: cosched_predict::Prediction::exact(j.start.predicted),
            });
            if run_ids.last() != Some(&r.id.0) {
                run_ids.push(r.id.0);
            }
        }
    }
    if by_source.is_empty() {
        anyhow::bail!(
            "{}: no job of a real run of `{}` ended ok with a measured slowdown; run `cosched run --workload FILE` first",
            store.path().display(),
            w.name
        );
    }
    let rows: Vec<Row> = by_source
        .into_iter()
        .map(|(source, predictions)| {
            let pairs: Vec<(f64, f64)> = predictions.iter().map(|p| (p.predicted.slowdown, p.measured)).collect();
            Row { predictor: source, folds: "real-runs".into(), accuracy: Accuracy::of(&pairs, level), predictions, trained_cut: None, pearson_on_halves_pairs: None }
        })
        .collect();
    let jobs = rows.iter().map(|r| r.predictions.len()).sum();
    let sources = Sources {
        profile: Vec::new(),
        probe: Vec::new(),
        pairs: 0,
        pairs_status: format!("runs {}", run_ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")),
        pair_runs: 0,
        run_pairs: 0,
        online_pairs: 0,
        campaigns: Vec::new(),
        knowledge: None,
        regime: None,
        older_pairs: 0,
        other_amounts: None,
    };
    Ok((Counts { workload: w.name.clone(), programs: run_ids.len(), ordered_pairs: jobs, repeats: jobs, sources, pairs_conditions: Vec::new() }, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_the_node_at_the_start_and_at_each_resume() {
        let k = |ns: f64| Conditions { taken_unix: 0, load: [1.0, 0.5, 0.25], c2c: Some((vec![0, 1], ns)), huge_pages: None };
        let c = Counts {
            workload: "w".into(),
            programs: 2,
            ordered_pairs: 4,
            repeats: 8,
            sources: Sources {
                profile: vec![1],
                probe: vec![2],
                pairs: 3,
                pairs_status: "done".into(),
                pair_runs: 4,
                run_pairs: 0,
                online_pairs: 0,
                campaigns: Vec::new(),
                knowledge: None,
                regime: None,
                older_pairs: 0,
                other_amounts: None,
            },
            pairs_conditions: vec![k(76.0), k(452.0)],
        };
        let text = describe(&c, Folds::LeaveOneProgramOut, 1.3);
        assert!(
            text.contains("pairs campaign 3 (done; node at its start: load 1.00 0.50 0.25, CPU 0-1 round trip 76 ns; node at resume 1: load 1.00 0.50 0.25, CPU 0-1 round trip 452 ns)"),
            "{text}"
        );
    }

    #[test]
    fn severe_pairs_are_listed_worst_first_with_an_unstable_victim_marked() {
        let ps = |v: &str, a: &str, s: &[f64]| cosched_predict::PairSamples { victim: v.into(), aggressor: a.into(), slowdowns: s.to_vec() };
        let pairs = [ps("k-ssl", "k-ssl", &[1.5, 1.52, 1.4]), ps("k-fio", "k-fiow", &[1.32]), ps("k-ssl", "k-bc", &[0.99])];
        let spread = |k: &str| match k {
            "k-ssl" => Some(1.72),
            "k-fio" => Some(1.04),
            _ => None,
        };
        let name = |k: &str| k.trim_start_matches("k-").to_string();
        let lines = severe_lines(&pairs, 1.3, &spread, &name);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[1], "ssl beside ssl: 1.50 (solo 1.72x apart: unstable)");
        assert_eq!(lines[2], "fio beside fiow: 1.32 (solo 1.04x)");
        assert!(severe_lines(&pairs, 1.6, &spread, &name).is_empty());
    }

    #[test]
    fn a_job_whose_command_changed_has_the_solo_spread_of_its_new_program_only() {
        // `numpy-add` ran 1.0 s or 1.4 s alone under its old command (huge
        // pages by luck) and 1.20-1.22 s under its new one, in a later
        // campaign of the same workload.
        let run = |job: &str, i: usize, solo: f64| cosched_store::PairRunRecord {
            repeat: i as u32,
            fg_solo_s: solo,
            fg_corun_s: solo,
            ..crate::pairs::twin_tests::rec(job, "loop", 1.0, 1.0)
        };
        let keys = |add: &str| -> JobKeys {
            [("numpy-add".to_string(), (add.to_string(), 1)), ("loop".to_string(), ("k-loop".to_string(), 1))].into()
        };
        let old: Vec<_> = (0..6).map(|i| run("numpy-add", i, if i % 2 == 0 { 1.0 } else { 1.4 })).collect();
        let new: Vec<_> = (0..6).map(|i| run("numpy-add", i, 1.2 + 0.004 * i as f64)).collect();
        let mut stray = run("other", 0, 9.0);
        stray.bg_job = "unknown".into();
        let runs = runs_by_program(vec![(keys("k-old"), old), (keys("k-new"), [new, vec![stray]].concat())]);
        assert_eq!(runs.len(), 12, "the run of jobs without a key is left out");
        let s = cosched_learn::matrix::solo_spreads(&runs);
        let of = |k: &str| s.iter().find(|x| x.job == k).unwrap();
        assert!(of("k-old").unstable() && !of("k-new").unstable(), "{s:?}");
        assert_eq!((of("k-old").n, of("k-new").n, of("k-loop").n), (6, 6, 12));
        // By job name the two programs would have read as one unstable job.
        let by_name = cosched_learn::matrix::solo_spreads(&runs.iter().map(|r| cosched_store::PairRunRecord { fg_job: "numpy-add".into(), ..r.clone() }).collect::<Vec<_>>());
        assert!(by_name.iter().find(|x| x.job == "numpy-add").unwrap().unstable());
    }

    #[test]
    fn pearson_on_the_halves_pairs_leaves_out_the_pairs_too_few_repeats_could_split() {
        let pred = |v: &str, o: &str, p: f64, m: f64| CvPrediction {
            victim: v.into(),
            aggressor: o.into(),
            held_out: None,
            measured: m,
            repeats: 4,
            predicted: cosched_predict::Prediction::exact(p),
        };
        let row = |name: &str, folds: Folds, predictions: Vec<CvPrediction>| Row {
            predictor: name.into(),
            folds: folds.name().into(),
            accuracy: Accuracy::of(&cosched_predict::cv::scored(&predictions), 1.3),
            predictions,
            trained_cut: None,
            pearson_on_halves_pairs: None,
        };
        // The halves split (a, b), (b, a), (a, a); (b, b) had two repeats.
        let halves = vec![pred("a", "b", 1.1, 1.0), pred("b", "a", 1.4, 1.5), pred("a", "a", 1.2, 1.2)];
        // On the three, predictions 1.0, 1.5, 1.2 against 1.0, 1.5, 1.2:
        // Pearson 1; the fourth pair, far off, would pull it down.
        let all = vec![pred("a", "b", 1.0, 1.0), pred("b", "a", 1.5, 1.5), pred("a", "a", 1.2, 1.2), pred("b", "b", 2.0, 1.0)];
        let mut rows = vec![row("p", Folds::LeaveOneProgramOut, all), row("measured", Folds::RepeatHalves, halves)];
        let line = on_halves_pairs(&mut rows).unwrap();
        assert!((rows[0].pearson_on_halves_pairs.unwrap() - 1.0).abs() < 1e-12, "{line}");
        assert!(rows[0].accuracy.pearson.unwrap() < 0.5, "on every pair the outlier counts");
        assert_eq!(rows[1].pearson_on_halves_pairs, None, "the halves row is the floor itself");
        assert!(line.starts_with("Pearson on only the 3 pairs repeat-halves scores") && line.contains("p 1.000"), "{line}");
        assert_eq!(on_halves_pairs(&mut rows[..1]), None);
    }

    #[test]
    fn the_notes_name_the_precision_the_sweep_keeps() {
        let p = cosched_predict::DEFAULT_AT_PRECISION;
        assert!(AT_NOTE.starts_with(&format!("recall at P >= {p}: ")) && AT_NOTE.contains(&format!("precision >= {p},")), "{AT_NOTE}");
        let r = cosched_predict::RecallAt { min_precision: p, recall: 0.8, precision: Some(0.75), cut: Some(1.156) };
        assert_eq!(recall_at(Some(r)), "0.80 (cut 1.16)");
        assert_eq!(recall_at(Some(cosched_predict::RecallAt { cut: None, precision: None, recall: 0.0, ..r })), "0.00");
        assert_eq!(recall_at(None), "-");
    }

    #[test]
    fn the_generated_section_replaces_only_itself() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.md");
        std::fs::write(&p, format!("# T\n\nintro\n\n{BEGIN} old -->\nstale\n{END}\n\n## After\n")).unwrap();
        rewrite_section(&p, &format!("{BEGIN} new -->\nfresh\n{END}")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            format!("# T\n\nintro\n\n{BEGIN} new -->\nfresh\n{END}\n\n## After\n")
        );
        std::fs::write(&p, format!("{END}\n{BEGIN}")).unwrap();
        assert!(rewrite_section(&p, "x").is_err());
    }
}
