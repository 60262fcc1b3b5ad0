//! `cosched djsb`: ParaStation's Dynamic Job Scheduler Benchmark.

use std::path::PathBuf;

use clap::Args;
use cosched_app::djsb::{run_djsb, DjsbRequest};
use cosched_model::djsb::DjsbParams;

use super::common::{ctx, emit, DbArgs, JsonArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched djsb --dir djsb/ --repeats 3\n  \
    cosched djsb --dir djsb/ --policy surpass --policy sidestep:spread=on --simulation-s 20\n  \
    cosched djsb --dir djsb/ --simulate 1.3 --json | jq '.policies[].dynamicity.median'\n\n\
    A STREAM \"simulation\" on every core of this node and --sessions single-core\n\
    STREAM \"analysis\" sessions arriving from --first-at every --every seconds, run\n\
    under each policy (default: wait, surpass, overbook with and without spread and\n\
    pinning, sidestep with and without spread) through `cosched run` (solo pass\n\
    first, journaled, --resume after a crash), or with --simulate S in virtual time\n\
    with pair slowdown S. Printed: E_sim, E_ana, W (--normalisation C seconds), D =\n\
    E_sim * E_ana * W as median (min-max, n) beside the ParaStation paper's values.")]
pub struct DjsbArgs {
    /// Policy as NAME or NAME:KEY=VALUE,...; repeat for several.
    #[arg(long = "policy", value_name = "P")]
    pub policies: Vec<String>,
    /// Runs per policy.
    #[arg(long, default_value_t = 1)]
    pub repeats: u32,
    /// Directory of the workload file and the run report.
    #[arg(long, value_name = "DIR", default_value = "djsb")]
    pub dir: PathBuf,
    #[arg(long, default_value_t = 40.0, value_name = "S")]
    pub simulation_s: f64,
    #[arg(long, default_value_t = 4.0, value_name = "S")]
    pub analysis_s: f64,
    #[arg(long, default_value_t = 3)]
    pub sessions: u32,
    #[arg(long, default_value_t = 5.0, value_name = "S")]
    pub first_at: f64,
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub every: f64,
    /// STREAM array per thread, MiB.
    #[arg(long, default_value_t = 64)]
    pub array_mib: u64,
    /// The wait coefficient's normalisation constant C, seconds.
    #[arg(long, default_value_t = DjsbParams::default().normalisation, value_name = "C")]
    pub normalisation: f64,
    /// Simulate in virtual time with this slowdown of a session beside another.
    #[arg(long, value_name = "SLOWDOWN")]
    pub simulate: Option<f64>,
    /// cgroup hierarchy: auto, v1, v2 or none (SIGSTOP/SIGCONT and sched_setaffinity).
    #[arg(long, default_value = "auto", value_name = "MODE", value_parser = ["auto", "v1", "v2", "none"])]
    pub cgroups: String,
    /// Continue the newest unfinished series with these settings.
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub json: JsonArgs,
}

pub fn run(a: DjsbArgs) -> anyhow::Result<()> {
    let req = DjsbRequest {
        policies: a.policies,
        repeats: a.repeats,
        simulation_s: a.simulation_s,
        analysis_s: a.analysis_s,
        sessions: a.sessions,
        first_at: a.first_at,
        every: a.every,
        array_mib: a.array_mib,
        params: DjsbParams { normalisation: a.normalisation, static_wait: 0.0 },
        simulate: a.simulate,
        dir: a.dir,
        db: a.db.db,
        cgroups: a.cgroups,
        lock: None,
        resume: a.resume,
    };
    emit(&run_djsb(&req, &ctx())?, a.json.json)
}
