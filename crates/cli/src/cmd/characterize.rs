//! `cosched characterize`: know a new program from solo measurements only.
use std::path::PathBuf;

use clap::Args;
use cosched_app::characterize::{characterize, CharacterizeRequest, ProbeStep};
use cosched_report::table;

use super::common::{ctx, print_json, DbArgs, InRegimeArgs, JsonArgs, WorkloadArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched characterize --workload my-apps.toml\n  \
    cosched characterize --workload my-apps.toml --budget 7 --json\n  \
    cosched characterize --workload my-apps.toml --in-regime shared   # probes in one cache regime\n  \
    cosched evaluate-predictors --workload my-apps.toml --train examples/predict12.toml   # then: how well\n\n\
    Each job whose program the store does not know yet (the same kernel, parameters,\n\
    work and cores, or the same executable content and arguments, measured under any\n\
    workload) runs once alone, profiled, and against a short probe ladder whose\n\
    length the budget buys (3.4 solo times per level as measured, 1 for the profile):\n\
    DistGen at half the LLC and 4x the LLC, then inside L2 and at the LLC's size,\n\
    then the pipe stressor (--budget 18 buys all five). It is\n\
    never co-run with the other programs: predictors place it beside every program\n\
    the store knows from these solo measurements. Twins are one program.\n\n\
    With --in-regime, a program counts as known only once it has probe points in\n\
    that cache regime, and its probe repeats count only when run wholly in it (as\n\
    `probe --in-regime`); the time spent waiting for the regime is not part of its\n\
    cost.")]
pub struct CharacterizeArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Most a new program may cost, in multiples of its solo time.
    #[arg(long, default_value_t = 10.0, value_name = "X")]
    pub budget: f64,
    #[command(flatten)]
    pub regime: InRegimeArgs,
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: CharacterizeArgs) -> anyhow::Result<()> {
    let workload: PathBuf = a.workload.workload;
    let r = characterize(&CharacterizeRequest { workload, budget: a.budget, in_regime: a.regime.in_regime, regime_wait: a.regime.regime_wait, db: a.db.db }, &ctx())?;
    if a.json.json {
        return print_json(&r);
    }
    let f = |x: Option<f64>, d: usize| x.map_or("-".into(), |v| format!("{v:.d$}"));
    let rows: Vec<Vec<String>> = r
        .programs
        .iter()
        .map(|c| vec![c.job.clone(), c.action.clone(), f(c.solo_s, 2), format!("{:.1}", c.cost_s), f(c.cost_ratio, 1), c.identity.clone()])
        .collect();
    println!("{}", table(&["job", "measured now", "solo s", "cost s", "cost / solo", "program"], &rows));
    let ladder: Vec<String> = r
        .ladder
        .iter()
        .map(|p| match p {
            ProbeStep::Distgen(k) => format!("DistGen {k} KiB at intensity 1"),
            ProbeStep::Pipe => "the pipe stressor".to_string(),
        })
        .collect();
    println!("probe ladder: {}; budget {}x solo", ladder.join(", "), r.budget);
    match r.median_ratio {
        Some(m) => println!("median cost of a new program: {m:.1}x its solo time"),
        None => println!("every program was known already: nothing measured"),
    }
    Ok(())
}
