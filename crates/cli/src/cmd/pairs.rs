//! `cosched pairs`: the interference matrix of a workload, measured and stored.

use std::path::PathBuf;

use clap::Args;
use cosched_measure::kernel::job_argv;
use cosched_measure::launch::{install_interrupt_handler, interrupted};
use cosched_measure::pairs::{run_campaign, CampaignError, PairJob, PairRun};
use cosched_model::matrix::{matrix_from_samples, unordered_pairs, SlowdownMatrix, StopRule};
use cosched_model::workload::Workload;
use cosched_report::svg::heatmap;
use cosched_report::table;
use cosched_store::{CampaignKind, CampaignStatus, PairRunRecord};

use super::calibrate::calibrate_missing;
use super::common::{load_workload, DbArgs};
use crate::exit::{bad_input, Interrupted};
use crate::progress::{step, Progress};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched pairs --workload examples/characterize.toml\n  \
    cosched pairs --workload examples/characterize.toml --repeats 9 --target 0.03\n  \
    cosched pairs --workload examples/characterize.toml --resume     # after Ctrl-C\n  \
    cosched pairs --workload examples/characterize.toml --resume --ratio   # seed 001's view\n\n\
    Every unordered pair (twins included) is co-run: solo A, solo B, then A with B,\n\
    the shorter re-launched until the longer ends, repeated until the 95% interval\n\
    of both slowdowns is within --target or --repeats is reached. Each repeat is\n\
    stored as soon as it is measured.")]
pub struct PairsArgs {
    /// Workload file whose jobs are paired.
    #[arg(long, value_name = "FILE")]
    pub workload: PathBuf,
    /// Most repeats per pair.
    #[arg(long, default_value_t = 6)]
    pub repeats: usize,
    /// Fewest repeats per pair.
    #[arg(long, default_value_t = 3)]
    pub min_repeats: usize,
    /// Stop a pair once each slowdown's 95% interval is within +- this share
    /// of its median (with fewer than 6 repeats the interval is the range).
    #[arg(long, default_value_t = 0.05, value_name = "SHARE")]
    pub target: f64,
    /// Continue the last unfinished campaign of this workload and settings
    /// instead of starting a new one; finished pairs are not measured again.
    #[arg(long)]
    pub resume: bool,
    /// Show seed 001's interference ratio (performance with background /
    /// alone = 1 / slowdown) instead of slowdowns.
    #[arg(long)]
    pub ratio: bool,
    /// Where to write the heatmap SVG (default: pairs-<workload>.svg here).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print the matrix as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: PairsArgs) -> anyhow::Result<()> {
    if a.min_repeats == 0 || a.repeats < a.min_repeats {
        return Err(bad_input("need 1 <= --min-repeats <= --repeats"));
    }
    if !(a.target > 0.0) {
        return Err(bad_input("--target must be a positive share, e.g. 0.05"));
    }
    let w = load_workload(&a.workload)?;
    if w.jobs.is_empty() {
        return Err(bad_input(format!("{}: no jobs to pair", a.workload.display())));
    }
    let mut store = a.db.open()?;
    install_interrupt_handler();
    calibrate_missing(&w, &mut store)?;
    let cals = store.calibrations()?;
    let jobs: Vec<PairJob> = w
        .jobs
        .iter()
        .map(|j| {
            job_argv(j, &cals)
                .map(|argv| PairJob { name: j.name.clone(), argv, cores: j.cores })
                .map_err(anyhow::Error::msg)
        })
        .collect::<anyhow::Result<_>>()?;
    let stop = StopRule { min_repeats: a.min_repeats, max_repeats: a.repeats, rel_halfwidth: a.target };
    let params = serde_json::json!({
        "jobs": jobs.iter().map(|j| serde_json::json!({"name": j.name, "argv": j.argv, "cores": j.cores})).collect::<Vec<_>>(),
        "stop": stop,
    })
    .to_string();
    let prov = cosched_measure::provenance::here(&super::common::command_line(), super::common::GIT_COMMIT, None);

    // Resume the newest unfinished campaign with identical settings, if asked.
    let (campaign, prior) = match store.find_campaign(CampaignKind::Pairs, &w.name, &params)? {
        Some((id, status)) if a.resume && status != CampaignStatus::Done => {
            store.reopen_campaign(id)?;
            let prior = store.pair_runs(id)?;
            step(&format!("resuming campaign {id}: {} repeats already stored", prior.len()));
            (id, prior)
        }
        Some((id, CampaignStatus::Done)) if a.resume => {
            step(&format!("campaign {id} is already complete; showing it"));
            let prior = store.pair_runs(id)?;
            return show(&a, &w, &prior);
        }
        _ => {
            if a.resume {
                step("no unfinished campaign with these settings; starting a new one");
            }
            (store.begin_campaign(CampaignKind::Pairs, &w.name, &params, &prov)?, Vec::new())
        }
    };
    super::common::record_conditions(&mut store, campaign, true)?;
    let index = |name: &str| w.jobs.iter().position(|j| j.name == name);
    let prior_runs: Vec<PairRun> = prior.iter().filter_map(|r| Some(to_run(r, index(&r.fg_job)?, index(&r.bg_job)?))).collect();

    let npairs = unordered_pairs(jobs.len()).len();
    step(&format!(
        "pairs: {} jobs, {npairs} co-runs (twins included), {}-{} repeats each, campaign {campaign}",
        jobs.len(),
        a.min_repeats,
        a.repeats
    ));
    let progress = Progress::new("pairs", (npairs * a.repeats) as u64);
    let node_cpus: Vec<u32> = (0..node_cpu_count()).collect();
    let result = run_campaign(
        &jobs,
        stop,
        &node_cpus,
        &prior_runs,
        &mut |r| store.add_pair_run(campaign, &to_record(r, &jobs)).map_err(|e| e.to_string()),
        &mut |p, label| progress.set((p.pair * a.repeats + p.repeat) as u64, label),
    );
    progress.finish();
    match result {
        Ok(_) => store.finish_campaign(campaign, CampaignStatus::Done)?,
        Err(e) => {
            store.finish_campaign(campaign, CampaignStatus::Interrupted)?;
            if let Some(sig) = interrupted() {
                eprintln!(
                    "cosched: interrupted; every finished repeat of campaign {campaign} is stored. \
                     Continue with: cosched pairs --workload {} --resume",
                    a.workload.display()
                );
                return Err(anyhow::Error::new(Interrupted(sig)));
            }
            return Err(match e {
                CampaignError::Corun { .. } => anyhow::Error::new(e).context("a job of the workload failed"),
                other => other.into(),
            });
        }
    }
    let all = store.pair_runs(campaign)?;
    show(&a, &w, &all)
}

fn node_cpu_count() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

fn to_record(r: &PairRun, jobs: &[PairJob]) -> PairRunRecord {
    PairRunRecord {
        fg_job: jobs[r.jobs.0].name.clone(),
        bg_job: jobs[r.jobs.1].name.clone(),
        repeat: r.repeat as u32,
        fg_cpus: r.cpus[0].clone(),
        bg_cpus: r.cpus[1].clone(),
        shared_cpus: r.shared_cpus,
        fg_solo_s: r.solo_s[0],
        fg_corun_s: r.corun_s[0],
        bg_solo_s: r.solo_s[1],
        bg_corun_s: r.corun_s[1],
        fg_relaunches: r.relaunches[0],
        bg_relaunches: r.relaunches[1],
        fg_timing: r.timing[0].clone(),
        bg_timing: r.timing[1].clone(),
    }
}

fn to_run(r: &PairRunRecord, fg: usize, bg: usize) -> PairRun {
    PairRun {
        jobs: (fg, bg),
        repeat: r.repeat as usize,
        solo_s: [r.fg_solo_s, r.bg_solo_s],
        corun_s: [r.fg_corun_s, r.bg_corun_s],
        relaunches: [r.fg_relaunches, r.bg_relaunches],
        timing: [r.fg_timing.clone(), r.bg_timing.clone()],
        cpus: [r.fg_cpus.clone(), r.bg_cpus.clone()],
        shared_cpus: r.shared_cpus,
    }
}

/// The matrix of stored runs: each repeat gives the foreground's slowdown in
/// cell (fg, bg) and the background's in cell (bg, fg).
pub(crate) fn matrix_of(w: &Workload, runs: &[PairRunRecord]) -> SlowdownMatrix {
    let names: Vec<String> = w.jobs.iter().map(|j| j.name.clone()).collect();
    let index = |n: &str| names.iter().position(|x| x == n);
    let samples = runs.iter().filter_map(|r| {
        let (i, j) = (index(&r.fg_job)?, index(&r.bg_job)?);
        Some([(i, j, r.fg_slowdown()), (j, i, r.bg_slowdown())])
    });
    matrix_from_samples(names.clone(), samples.flatten())
}

fn show(a: &PairsArgs, w: &Workload, runs: &[PairRunRecord]) -> anyhow::Result<()> {
    let m = matrix_of(w, runs);
    let svg_path = a.svg.clone().unwrap_or_else(|| PathBuf::from(format!("pairs-{}.svg", w.name)));
    let title = format!("Slowdown matrix of {} ({} repeats stored)", w.name, runs.len());
    std::fs::write(&svg_path, heatmap(&m, &title))
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", svg_path.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&m)?);
        return Ok(());
    }
    let mut headers = vec!["fg \\ bg".to_string()];
    headers.extend(m.jobs.iter().cloned());
    let rows: Vec<Vec<String>> = (0..m.jobs.len())
        .map(|i| {
            let mut row = vec![m.jobs[i].clone()];
            for j in 0..m.jobs.len() {
                let cell = if a.ratio { m.ratio(i, j) } else { m.get(i, j).copied() };
                row.push(match cell {
                    Some(s) => format!("{:.2} [{:.2},{:.2}] n={}", s.median, s.ci_lo, s.ci_hi, s.n),
                    None => "-".into(),
                });
            }
            row
        })
        .collect();
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    println!("{}", table(&h, &rows));
    if a.ratio {
        println!("\ninterference ratio = performance beside the column job / alone = 1 / slowdown; median [95% CI], n repeats.");
    } else {
        println!("\nslowdown of the row job beside the column job = co-run / solo time of the same repeat; median [95% CI], n repeats.");
    }
    println!("heatmap: {}", svg_path.display());
    Ok(())
}
