//! `cosched djsb`: the ParaStation paper's Dynamic Job Scheduler Benchmark. A long
//! STREAM "simulation" on every core of the node and short STREAM
//! "analysis" sessions arriving while it runs, under the allocation-internal
//! policies (wait, surpass, overbook, sidestep, with and without spread),
//! scored by `model::djsb` from each run's trace: for real through
//! `cosched run` (journaled, solo passes, resumable), or in virtual time
//! through the simulator with a given pair slowdown.

use std::path::PathBuf;

use cosched_model::djsb::{djsb, Djsb, DjsbJob, DjsbParams};
use cosched_model::metrics::job_times;
use cosched_model::stats::Summary;
use cosched_model::workload::PoolKind;
use cosched_report::html::Page;
use cosched_sched::{policy_from_spec, simulate, PairTable, Platform, PoolInfo, SimJob};

use crate::common::{create_dir, node_cpu_count, workload_of_text, write_file, Ctx};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use crate::run::{run_parsed, RunRequest, SoloMode};

/// The policies the paper compares, its "no threads" configuration.
pub const POLICIES: [&str; 7] =
    ["wait", "surpass", "overbook", "overbook:spread=on", "overbook:pin=off", "sidestep", "sidestep:spread=on"];

/// The ParaStation paper's table, "no threads" column: (policy as above, E_sim, E_ana, W, D).
pub const PAPER: [(&str, [f64; 4]); 5] = [
    ("wait", [1.04, 2.0, 0.55, 1.15]),
    ("surpass", [0.86, 2.0, 1.0, 1.72]),
    ("overbook", [0.87, 1.23, 1.0, 1.07]),
    ("overbook:spread=on", [1.02, 1.02, 1.0, 1.04]),
    ("sidestep", [0.87, 1.61, 1.0, 1.41]),
];
const PAPER_SIDESTEP_SPREAD: [f64; 4] = [1.34, 1.13, 1.0, 1.5];

#[derive(Debug, Clone)]
pub struct DjsbRequest {
    /// Policies as NAME or NAME:key=value,...; empty: [`POLICIES`].
    pub policies: Vec<String>,
    pub repeats: u32,
    /// Solo seconds of the simulation (all cores) and of each analysis
    /// session (one core).
    pub simulation_s: f64,
    pub analysis_s: f64,
    pub sessions: u32,
    /// Arrival of the first analysis session and the time between two.
    pub first_at: f64,
    pub every: f64,
    /// STREAM's array per thread, MiB.
    pub array_mib: u64,
    pub params: DjsbParams,
    /// Virtual time (the simulator) with this pair slowdown, instead of
    /// real processes.
    pub simulate: Option<f64>,
    /// Where the workload file and the run report go.
    pub dir: PathBuf,
    pub db: Option<PathBuf>,
    pub cgroups: String,
    pub lock: Option<PathBuf>,
    pub resume: bool,
}

/// One policy's figures over the repeats.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DjsbRow {
    pub policy: String,
    pub e_simulation: Option<Summary>,
    pub e_analysis: Option<Summary>,
    pub w_analysis: Option<Summary>,
    pub dynamicity: Option<Summary>,
    /// The paper's E_sim, E_ana, W, D for this policy, when it has them.
    pub paper: Option<[f64; 4]>,
}

/// `cosched djsb`; also written as djsb.json beside the workload.
#[derive(Debug, serde::Serialize)]
pub struct DjsbReport {
    pub engine: String,
    pub params: DjsbParams,
    #[serde(rename = "policies")]
    pub rows: Vec<DjsbRow>,
    /// Every run's figures.
    pub runs: Vec<DjsbRun>,
    pub workload: PathBuf,
}

/// One run's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DjsbRun {
    pub policy: String,
    pub repeat: u32,
    pub djsb: Djsb,
}

impl Render for DjsbReport {
    fn doc(&self) -> Doc {
        let f = |s: &Option<Summary>| s.as_ref().map_or("-".into(), |s| cosched_report::fmt_spread(s, 2));
        let rows = self
            .rows
            .iter()
            .map(|x| {
                let paper = x.paper.map_or("-".into(), |p| format!("{:.2} / {:.2} / {:.2} / {:.2}", p[0], p[1], p[2], p[3]));
                vec![x.policy.clone(), f(&x.e_simulation), f(&x.e_analysis), f(&x.w_analysis), f(&x.dynamicity), paper]
            })
            .collect();
        let mut d = Doc::new();
        d.line(format!("djsb on {} ({}):", self.engine, self.workload.display()));
        d.table(&["policy", "E simulation", "E analysis", "W analysis", "D", "paper E_sim / E_ana / W / D"], rows);
        d
    }
}

fn paper(label: &str) -> Option<[f64; 4]> {
    let name = |s: &str| cosched_sched::registry::resolve_spec(s).map(|p| p.label()).ok();
    let l = name(label)?;
    if let Some((_, v)) = PAPER.iter().find(|(p, _)| name(p).as_deref() == Some(&l)) {
        return Some(*v);
    }
    (name("sidestep:spread=on").as_deref() == Some(&l)).then_some(PAPER_SIDESTEP_SPREAD)
}

/// The scenario as a workload file: STREAM on every core, then
/// single-core STREAM sessions.
pub fn workload_toml(r: &DjsbRequest, cores: u32) -> String {
    let mut t = format!(
        "name = \"djsb\"\ndescription = \"ParaStation's djsb: a STREAM simulation on all cores, STREAM analysis sessions arriving\"\n\
         [[pools]]\nname = \"host\"\ncores = {cores}\n\
         [[jobs]]\nname = \"simulation\"\nkernel = \"stream\"\nparams = {{ array_mib = {mib} }}\nthreads = {cores}\nseconds = {s}\n",
        mib = r.array_mib,
        s = r.simulation_s
    );
    for i in 0..r.sessions {
        t.push_str(&format!(
            "[[jobs]]\nname = \"analysis-{}\"\nkernel = \"stream\"\nparams = {{ array_mib = {} }}\nseconds = {}\narrival = {}\n",
            i + 1,
            r.array_mib,
            r.analysis_s,
            r.first_at + i as f64 * r.every
        ));
    }
    t
}

pub fn run_djsb(r: &DjsbRequest, ctx: &Ctx) -> anyhow::Result<DjsbReport> {
    if r.repeats == 0 || r.sessions == 0 {
        return Err(bad_input("--repeats and --sessions must be at least 1"));
    }
    for (what, v) in [("--simulation-s", r.simulation_s), ("--analysis-s", r.analysis_s), ("--every", r.every)] {
        if !(v.is_finite() && v > 0.0) {
            return Err(bad_input(format!("{what} {v} must be a positive number of seconds")));
        }
    }
    if !(r.first_at.is_finite() && r.first_at >= 0.0) {
        return Err(bad_input(format!("--first-at {} must be a non-negative number of seconds", r.first_at)));
    }
    let policies: Vec<String> = if r.policies.is_empty() { POLICIES.iter().map(|s| s.to_string()).collect() } else { r.policies.clone() };
    let mut labels = Vec::new();
    for p in &policies {
        labels.push(cosched_sched::registry::resolve_spec(p).map_err(|e| bad_input(format!("--policy: {e}")))?.label());
    }
    let cores = node_cpu_count();
    create_dir(&r.dir)?;
    // Kept beside the report, so the benchmark's workload can be run again
    // by hand; the runner is handed it parsed.
    let workload = r.dir.join("djsb.toml");
    let text = workload_toml(r, cores);
    write_file(&workload, &text)?;
    let djsb_jobs: Vec<DjsbJob> = std::iter::once(DjsbJob { solo: r.simulation_s, threads: cores })
        .chain((0..r.sessions).map(|_| DjsbJob { solo: r.analysis_s, threads: 1 }))
        .collect();
    let mut runs: Vec<(String, u32, Djsb)> = Vec::new();
    let engine;
    match r.simulate {
        Some(pair) => {
            engine = format!("simulator (virtual time), pair slowdown {pair}");
            if !(pair.is_finite() && pair > 0.0) {
                return Err(bad_input(format!("--simulate {pair}: the pair slowdown must be a positive number")));
            }
            let platform = Platform { pools: vec![PoolInfo { name: "host".into(), cores, kind: PoolKind::Cpu }] };
            let mut jobs = vec![SimJob { name: "simulation".into(), arrival: 0.0, solo: r.simulation_s, pool: 0, cores, program: "stream".into(), variants: vec![] }];
            for i in 0..r.sessions {
                jobs.push(SimJob {
                    name: format!("analysis-{}", i + 1),
                    arrival: r.first_at + i as f64 * r.every,
                    solo: r.analysis_s,
                    pool: 0,
                    cores: 1,
                    program: "stream".into(),
                    variants: vec![],
                });
            }
            let n = jobs.len();
            let table = PairTable::new((0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { pair }).collect()).collect())
                .map_err(anyhow::Error::msg)?;
            for (p, label) in policies.iter().zip(&labels) {
                let mut policy = policy_from_spec(p).map_err(bad_input)?;
                let events = simulate(&platform, &jobs, &table, policy.as_mut()).map_err(|e| anyhow::anyhow!("policy {label}: {e}"))?;
                let times = job_times(&events, n)?;
                runs.push((label.clone(), 0, djsb(&times, &djsb_jobs, cores, &r.params).map_err(anyhow::Error::msg)?));
            }
        }
        None => {
            engine = "this node (real processes, `cosched run`)".into();
            let req = RunRequest {
                workload: workload.clone(),
                policy: policies[0].clone(),
                baselines: policies[1..].to_vec(),
                predictor: "measured".into(),
                repeats: r.repeats,
                report: Some(r.dir.join("report")),
                resume: r.resume,
                cgroups: r.cgroups.clone(),
                lock: r.lock.clone(),
                db: r.db.clone(),
                solo: SoloMode::Interleaved,
                first_repeat: 0,
                order_seed: None,
                order: None,
                named_by: ["--policy", "--policy"],
                continue_with: None,
            };
            let w = workload_of_text(&text, &workload.display().to_string())?;
            cosched_measure::launch::handle_terminal_stop(cosched_measure::launch::TerminalStop::Refused);
            let rep = run_parsed(&req, &w, ctx, &mut Page::new("cosched run"))?;
            runs = rep.djsb.into_iter().map(|d| (d.policy, d.repeat, d.figures)).collect();
        }
    }
    let rows: Vec<DjsbRow> = labels
        .iter()
        .map(|l| {
            let of = |f: fn(&Djsb) -> f64| {
                let v: Vec<f64> = runs.iter().filter(|x| &x.0 == l).map(|x| f(&x.2)).collect();
                Summary::of(&v)
            };
            DjsbRow {
                policy: l.clone(),
                e_simulation: of(|d| d.e_simulation),
                e_analysis: of(|d| d.e_analysis),
                w_analysis: of(|d| d.w_analysis),
                dynamicity: of(|d| d.dynamicity),
                paper: paper(l),
            }
        })
        .collect();
    let runs = runs.into_iter().map(|(policy, repeat, djsb)| DjsbRun { policy, repeat, djsb }).collect();
    let report = DjsbReport { engine, params: r.params, rows, runs, workload };
    // Beside the workload, so a campaign's figures outlive the terminal.
    write_file(&r.dir.join("djsb.json"), &serde_json::to_string_pretty(&report)?)?;
    Ok(report)
}
