//! `cosched evaluate-predictors`: every predictor's accuracy on a workload's
//! measured pairs, cross-validated so that a held-out program's pairs never
//! reach the fit; a table, JSON, stored rows, a scatter SVG per predictor
//! and, on request, the accuracy section of docs/predictors.md.

use std::path::PathBuf;

use clap::Args;
use cosched_app::evaluate_predictors::{evaluate_predictors, EvaluatePredictorsRequest};

use super::common::{ctx, emit, DbArgs, JsonArgs, KbArgs, WorkloadArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched evaluate-predictors --workload examples/predict12.toml\n  \
    cosched evaluate-predictors --workload examples/predict12.toml --predictor scn --predictor learned --json\n  \
    cosched evaluate-predictors --workload examples/predict12.toml --svg-dir plots/ --level 1.5\n  \
    cosched evaluate-predictors --workload examples/predict12.toml --markdown docs/predictors.md\n  \
    cosched evaluate-predictors --workload examples/predict12.toml --train examples/characterize.toml\n  \
    cosched evaluate-predictors --workload examples/predict12.toml --train examples/apps/apps.toml --regime apart --kb-since 2026-11-24\n  \
    # another node's pairs (an imported bundle's) predicting this node's\n  \
    cosched evaluate-predictors --workload examples/io-half.toml --train examples/io-half.toml --kb-node theirs --test-node $(hostname)\n\n\
    Leave-one-program-out: for each program, every predictor is fitted on the pairs\n\
    that do not involve it and predicts the measured pairs in which it is the victim,\n\
    so every measured ordered pair is predicted once by a fit that never saw its\n\
    victim beside anything (its solo profile and probe are used: they are known\n\
    before scheduling). `measured` is then its fallback; its repeat-halves row (the\n\
    median of repeats 0, 1, 4, 5, ... of each pair predicting the median of\n\
    repeats 2, 3, 6, 7, ...; in blocks of two, so each half holds both CPU placements)\n\
    shows the node's noise floor instead.\n\
    Within 5 % / 30 %: share of pairs with |predicted - measured| / measured below\n\
    that; Pearson -1: the lowest Pearson with any one pair left out (a set of\n\
    near-equal slowdowns around one large one correlates on that pair alone);\n\
    severe: slowdown above --level, flagged where the prediction is above it;\n\
    recall at P >= 0.7: the cut swept down the predictions, the best severe\n\
    recall of a cut that keeps precision >= 0.7 and that cut (the ranking's\n\
    best; a cut well below --level says the predictions shrink towards 1).\n\
    With --train, trained cut: that cut chosen on the training programs' own\n\
    leave-one-program-out predictions, and its precision / recall on the\n\
    tested pairs (what a scheduler fitted on them would get). A line under\n\
    the table gives each predictor's Pearson on only the pairs repeat-halves\n\
    scores (four or more repeats), like for like with the floor. Results are\n\
    stored (table predictor_evaluations).\n\
    With --train (repeatable): cross-workload. Every predictor is fitted on the\n\
    store's measurements of the --train workloads, joined by program (the same\n\
    kernel, parameters, work and cores, or the same executable content and\n\
    arguments, in any workload file) and without any pair of a program of\n\
    --workload, then predicts --workload's measured pairs from its programs' solo\n\
    profiles and probes alone. Both sides hold the programs the workload files run\n\
    now and their pairs measured under any workload file (so a workload grown\n\
    with `pairs --skip-known` is whole), each pair from the newest campaign of a\n\
    workload that measured it (re-measured pairs replace older ones), only its\n\
    repeats of --regime (pairs without one are left out).")]
pub struct EvaluatePredictorsArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Fold method: leave-one-program-out, in-sample or repeat-halves.
    #[arg(long, default_value = "leave-one-program-out", value_name = "METHOD")]
    pub folds: String,
    /// A slowdown above this is a severe conflict (precision and recall).
    #[arg(long, default_value_t = cosched_app::evaluate_predictors::DEFAULT_SEVERE, value_name = "X")]
    pub level: f64,
    /// A predictor to evaluate, NAME or NAME:key=value (repeatable);
    /// default: every registered one.
    #[arg(long = "predictor", alias = "model", value_name = "M")]
    pub predictors: Vec<String>,
    /// Evaluate the predictions made during real runs against their outcomes.
    #[arg(long, conflicts_with = "train")]
    pub from_runs: bool,
    /// Train on this workload's programs and pairs (repeatable) and test on
    /// --workload's pairs: cross-workload instead of --folds.
    #[arg(long, value_name = "FILE")]
    pub train: Vec<PathBuf>,
    /// Directory for one scatter SVG per predictor,
    /// predict-<workload>-<predictor>.svg (default: none written).
    #[arg(long, value_name = "DIR")]
    pub svg_dir: Option<PathBuf>,
    /// Rewrite the generated accuracy section of this Markdown file (between
    /// its `<!-- accuracy:begin -->` and `<!-- accuracy:end -->` lines).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Do not store the results.
    #[arg(long)]
    pub no_store: bool,
    /// Fit and score on the repeats of this cache regime: shared, apart or
    /// any (each pair's and probe's repeats in it where it has any, else all
    /// of them). Default: the node's regime now, any when it cannot be read.
    #[arg(long, value_name = "REGIME", conflicts_with = "from_runs")]
    pub regime: Option<String>,
    #[command(flatten)]
    pub kb: KbArgs,
    /// Cross-node: test on the pairs measured on this host only, while
    /// --kb-node names the host whose campaigns train (an imported
    /// dataset's node). --train may then name --workload itself: how well
    /// another node's knowledge predicts this node's pairs.
    #[arg(long, value_name = "HOST", requires = "kb_node")]
    pub test_node: Option<String>,
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: EvaluatePredictorsArgs) -> anyhow::Result<()> {
    let req = EvaluatePredictorsRequest {
        workload: a.workload.workload,
        folds: a.folds,
        level: a.level,
        predictors: a.predictors,
        from_runs: a.from_runs,
        train: a.train,
        svg_dir: a.svg_dir,
        markdown: a.markdown.clone(),
        store: !a.no_store,
        regime: a.regime,
        kb: a.kb.scope()?,
        test_node: a.test_node,
        db: a.db.db,
    };
    emit(&evaluate_predictors(&req, &ctx())?, a.json.json)
}
