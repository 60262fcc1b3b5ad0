//! `slurm status` (the partition's jobs with cosched's decisions, and the
//! predicted slowdown of each pair sharing a node) and `slurm submit` (a
//! workload's jobs through `sbatch`, tied to their workload jobs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cosched_sched::SlowdownSource;
use cosched_slurm::{Checks, Decision, Key, Round, Scope, Signed, Slurm};
use serde::Serialize;

use super::{queue_map, unix_f64, unix_now, Catalog, RoundSource, SlurmTarget, CHECK_WITHIN, COMMENT_PREFIX};
use crate::common::{db_path, load_workload, open_store, Ctx};
use crate::error::bad_input;

#[derive(Debug, Clone)]
pub struct SubmitRequest {
    pub target: SlurmTarget,
    /// Where the batch scripts and the jobs' output go.
    pub dir: PathBuf,
    /// Submit each job at its arrival time (seconds after the first); else all at once.
    pub arrivals: bool,
}

/// One job submitted with `sbatch`.
#[derive(Debug, Clone, Serialize)]
pub struct Submitted {
    pub name: String,
    pub job: u64,
    /// Seconds after the first submission.
    pub at: f64,
    /// Unix time, seconds, when `sbatch` returned.
    pub unix: f64,
    pub script: PathBuf,
}

/// The batch script of a workload job: its command between two time stamps
/// (`cosched-start` / `cosched-end`, Unix seconds with nanoseconds), so a
/// makespan through Slurm is measured from inside the jobs, not from
/// Slurm's whole-second accounting.
pub fn batch_script(argv: &[String]) -> String {
    format!(
        "#!/bin/sh\n# Written by cosched slurm submit.\necho \"cosched-start $(date +%s.%N)\"\n{}\nrc=$?\necho \"cosched-end $(date +%s.%N)\"\nexit $rc\n",
        shell_words::join(argv)
    )
}

/// Submits every job of the workload with `sbatch` to the partition, tied
/// to its workload job by `--comment=cosched:NAME`: kernels with their work
/// resolved from the store's calibrations, as `cosched run` runs them.
pub fn submit(req: &SubmitRequest, ctx: &Ctx) -> anyhow::Result<Vec<Submitted>> {
    let target = &req.target;
    let Some(path) = &target.workload else { return Err(bad_input("--workload FILE is required")) };
    let w = load_workload(path)?;
    let store = open_store(&db_path(target.db.as_deref()))?;
    let cals = store.calibrations()?;
    std::fs::create_dir_all(&req.dir).map_err(|e| bad_input(format!("{}: {e}", req.dir.display())))?;
    let mut scripts = Vec::new();
    for job in &w.jobs {
        let argv = cosched_measure::kernel::job_argv(job, &cals).map_err(|e| {
            bad_input(format!("{}: job `{}`: {e} (run `cosched calibrate --workload {}` first)", path.display(), job.name, path.display()))
        })?;
        let script = req.dir.join(format!("{}.sh", job.name));
        std::fs::write(&script, batch_script(&argv))?;
        scripts.push(script);
    }
    let slurm = Slurm { conf: target.conf.clone() };
    let mut order: Vec<usize> = (0..w.jobs.len()).collect();
    order.sort_by(|&a, &b| w.jobs[a].arrival.total_cmp(&w.jobs[b].arrival));
    let began = Instant::now();
    let mut out = Vec::new();
    for i in order {
        let job = &w.jobs[i];
        if req.arrivals {
            let wait = job.arrival - began.elapsed().as_secs_f64();
            if wait > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(wait));
            }
        }
        let args = vec![
            format!("--partition={}", target.partition),
            format!("--job-name={}", job.name),
            format!("--comment={COMMENT_PREFIX}{}", job.name),
            "--ntasks=1".to_string(),
            format!("--cpus-per-task={}", job.cores),
            format!("--output={}", req.dir.join(format!("{}-%j.out", job.name)).display()),
        ];
        let id = slurm.sbatch(&args, &scripts[i])?;
        ctx.step(&format!("submitted {} as job {id}", job.name));
        out.push(Submitted { name: job.name.clone(), job: id, at: began.elapsed().as_secs_f64(), unix: unix_f64(), script: scripts[i].clone() });
    }
    Ok(out)
}

/// A job as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobRow {
    pub id: u64,
    pub name: String,
    pub program: String,
    pub state: String,
    pub reason: String,
    pub node: String,
    /// cosched's decision as Slurm holds it (the AdminComment), or why it waits.
    pub decision: String,
}

/// Two jobs sharing a node, with each one's predicted slowdown beside the other.
#[derive(Debug, Clone, Serialize)]
pub struct PairRow {
    pub node: String,
    pub a: u64,
    pub b: u64,
    pub slowdown_a: f64,
    pub slowdown_b: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeRow {
    pub name: String,
    pub state: String,
    pub cpus: u32,
    pub usable: bool,
    /// The node's GRES as the accelerator pools policies see, with the
    /// units its placed jobs hold.
    pub accelerators: Vec<AcceleratorRow>,
}

/// One accelerator pool of a node (a GRES kind): its units and the units
/// held by the jobs cosched counts as placed there (running, released,
/// suspended or parked), as the site constraints count them.
#[derive(Debug, Clone, Serialize)]
pub struct AcceleratorRow {
    pub kind: String,
    pub units: u32,
    pub held: u32,
    /// Slurm ids of the jobs holding them.
    pub jobs: Vec<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub partition: String,
    pub nodes: Vec<NodeRow>,
    pub jobs: Vec<JobRow>,
    pub pairs: Vec<PairRow>,
    pub source: String,
}

/// Pending and running jobs of the partition with cosched's decisions and
/// the predicted slowdown of every pair sharing a node.
pub fn status(target: &SlurmTarget) -> anyhow::Result<StatusReport> {
    let store = open_store(&db_path(target.db.as_deref()))?;
    let catalog = Catalog::load(target, &store)?;
    let slurm = Slurm { conf: target.conf.clone() };
    slurm.check(CHECK_WITHIN).map_err(bad_input)?;
    let (queue, _) = slurm.queue(&target.partition)?;
    let nodes = slurm.nodes(&target.partition)?;
    // The key, if this user may read it: marks are then checked as serve checks them.
    let path = target.key_path();
    let key = path.exists().then(|| Key::load_or_create(&path).ok()).flatten();
    let deferred = BTreeSet::new();
    let checks = Checks { key: key.as_ref(), now: unix_now(), start_bound_s: i64::MAX, deferred: &deferred, scope: Scope::Any };
    // The program a hold mark names, else the one cosched's mark carries
    // (read only if it verifies: without the key, none).
    let programs: BTreeMap<u64, String> = queue
        .iter()
        .filter_map(|q| {
            let from_mark = || {
                let signed = Signed { id: q.id, submit: q.submit, cpus: q.cpus };
                key.as_ref().and_then(|k| Decision::verify(k, &signed, &q.admin_comment).ok()).and_then(|d| d.program)
            };
            q.held_program().map(str::to_string).or_else(from_mark).map(|p| (q.id, p))
        })
        .collect();
    let program_of = |id: u64| programs.get(&id).map(String::as_str);
    let r = Round::new(&queue, &nodes, &target.partition, &|j| catalog.identify(j, program_of(j.id)), &checks);
    let map = queue_map(&r, &queue, &catalog, &programs);
    let source = RoundSource { catalog: &catalog, map };
    let mut jobs = Vec::new();
    for q in queue.iter().filter(|q| !q.state.is_final()) {
        let decision = if q.held_for_cosched() {
            "held: waiting for cosched".to_string()
        } else if q.admin_comment.starts_with(cosched_slurm::parse::MARK) {
            let signed = Signed { id: q.id, submit: q.submit, cpus: q.cpus };
            let d = match &key {
                Some(k) => Decision::verify(k, &signed, &q.admin_comment).map(|_| "verified"),
                None => Decision::read_unverified(&q.admin_comment).map(|_| "not checked: no key"),
            };
            match d {
                Ok(how) => format!("{} ({how})", q.admin_comment.split(";sig=").next().unwrap_or("").trim_start_matches("cosched;").replace(';', " ")),
                Err(why) => format!("not cosched's decision: {why}"),
            }
        } else {
            "not decided by cosched".to_string()
        };
        jobs.push(JobRow {
            id: q.id,
            name: q.name.clone(),
            program: catalog.identify(q, program_of(q.id)).program,
            state: q.state.to_string(),
            reason: q.reason.clone(),
            node: if q.nodes.is_empty() { q.requested.join(",") } else { q.nodes.join(",") },
            decision,
        });
    }
    let mut pairs = Vec::new();
    for n in &r.nodes {
        for (x, &a) in n.placed.iter().enumerate() {
            for &b in &n.placed[x + 1..] {
                pairs.push(PairRow {
                    node: n.name.clone(),
                    a: r.jobs[a].slurm,
                    b: r.jobs[b].slurm,
                    slowdown_a: source.slowdown(a, &[b]),
                    slowdown_b: source.slowdown(b, &[a]),
                });
            }
        }
    }
    let nodes = nodes
        .iter()
        .filter(|n| n.partition == target.partition)
        .map(|n| {
            let placed: &[usize] = r.nodes.iter().find(|x| x.name == n.name).map_or(&[], |x| &x.placed[..]);
            let accelerators = n
                .gres
                .iter()
                .map(|(kind, units)| {
                    let holding: Vec<(u64, u32)> = placed
                        .iter()
                        .map(|&j| &r.jobs[j])
                        .filter_map(|j| j.demand.gres.iter().find(|(k, _)| k == kind).map(|(_, u)| (j.slurm, *u)))
                        .collect();
                    AcceleratorRow { kind: kind.clone(), units: *units, held: holding.iter().map(|h| h.1).sum(), jobs: holding.iter().map(|h| h.0).collect() }
                })
                .collect();
            NodeRow { name: n.name.clone(), state: n.state.clone(), cpus: n.cpus, usable: n.usable(), accelerators }
        })
        .collect();
    Ok(StatusReport { partition: target.partition.clone(), nodes, jobs, pairs, source: catalog.note.clone() })
}
