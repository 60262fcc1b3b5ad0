//! `cosched slurm serve|status`: cosched deciding for a Slurm cluster.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use cosched_app::slurm::{hook, serve, status, submit, ServeRequest, SlurmTarget, SubmitRequest};
use cosched_model::text::printable;
use cosched_report::table;

use super::common::{ctx, print_json, DbArgs, JsonArgs, PredictorArgs};

#[derive(Args, Debug)]
pub struct SlurmArgs {
    #[command(subcommand)]
    pub cmd: SlurmCmd,
}

#[derive(Subcommand, Debug)]
pub enum SlurmCmd {
    /// Decide for the partition's held jobs until SIGINT / SIGTERM: release each onto the node the policy picks.
    #[command(after_help = "Examples:\n  cosched slurm serve --workload examples/mixed.toml --policy conflict-aware\n  \
        SLURM_CONF=/tmp/cosched-slurm-0/etc/slurm.conf cosched slurm serve --policy noplan --interval 0.2\n\n\
        Jobs of --partition are held at submission (job_submit.lua, docs/slurm.md); cosched\n\
        releases each onto a node (scontrol update ReqNodeList= AdminComment=, scontrol\n\
        release) and learns from each finished job tied to a workload job\n\
        (#COSCHED program=NAME in the batch script, sbatch --comment=cosched:NAME, or -J NAME).\n\
        Exit code 2 if Slurm cannot be reached at the start (what to check is named), 130/143 on SIGINT/SIGTERM.")]
    Serve(ServeArgs),
    /// Pending and running jobs with cosched's decision, and the predicted slowdown of each pair sharing a node.
    #[command(after_help = "Examples:\n  cosched slurm status --workload examples/mixed.toml\n  cosched slurm status --json | jq '.pairs'")]
    Status(TargetArgs),
    /// Submit every job of a workload with sbatch, at its arrival time, tied to it by --comment=cosched:NAME.
    #[command(after_help = "Example:\n  cosched slurm submit --workload examples/mixed.toml --dir /tmp/mixed-jobs")]
    Submit(SubmitArgs),
    /// For a Slurm epilog: wake the `serve` listening on --hook that a job ended, and wait for its round (always exit 0).
    #[command(after_help = "Example (an epilog script; Slurm sets SLURM_JOB_ID):\n  #!/bin/sh\n  \
        /usr/local/bin/cosched slurm hook --hook cosched-slurm --wait 2\n\n\
        As slurmd's Epilog, waiting for the answer lets Slurm's pass at the job's end start\n\
        what cosched released in that round (docs/slurm.md). Never fails: without a serve\n\
        listening it returns at once, and it waits at most --wait seconds.")]
    Hook(HookArgs),
    #[command(about = super::slurm_report::ABOUT, after_help = super::slurm_report::AFTER_HELP)]
    Report(super::slurm_report::ReportArgs),
}

#[derive(Args, Debug)]
pub struct HookArgs {
    #[arg(long, env = "COSCHED_SLURM_HOOK", default_value = "cosched-slurm", help = "The name `cosched slurm serve --hook` listens on")]
    pub hook: String,
    #[arg(long, env = "SLURM_JOB_ID", default_value = "?", help = "The job that ended (default: $SLURM_JOB_ID)")]
    pub job: String,
    #[arg(long, help = "A job was submitted (job_submit.lua): wake serve and do not wait")]
    pub submitted: bool,
    #[arg(long, default_value_t = 2.0, help = "Seconds to wait for serve's answer at most")]
    pub wait: f64,
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[arg(long, value_name = "DIR", help = "Directory of the batch scripts and the jobs' output")]
    pub dir: PathBuf,
    #[arg(long, help = "Submit every job at once instead of at its arrival time")]
    pub no_arrivals: bool,
}

#[derive(Args, Debug)]
pub struct TargetArgs {
    /// slurm.conf for Slurm's commands (default: $SLURM_CONF, else theirs).
    #[arg(long, env = "SLURM_CONF", value_name = "FILE")]
    pub slurm_conf: Option<PathBuf>,
    /// The partition cosched decides for.
    #[arg(long, default_value = "cosched")]
    pub partition: String,
    /// Workload that names the jobs: programs, solo times, stored measurements.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    #[command(flatten)]
    pub predictor: PredictorArgs,
    #[command(flatten)]
    pub db: DbArgs,
    #[arg(long, value_name = "FILE", help = "The key that signs cosched's decisions in AdminComments (created, mode 0600, if missing; default: slurm-mark.key beside the database)")]
    pub mark_key: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArgs,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Policy as NAME or NAME:KEY=VALUE,...
    #[arg(long, value_name = "P", default_value = "conflict-aware")]
    pub policy: String,
    #[arg(long, default_value_t = 5.0, help = "Seconds between rounds when no hook wakes serve (a job's end: the epilog; a submission: job_submit.lua)")]
    pub interval: f64,
    /// Stop once the partition has had no job for this many seconds.
    #[arg(long, value_name = "S")]
    pub exit_idle: Option<f64>,
    /// Also run a round as soon as `cosched slurm hook --hook NAME` (a Slurm epilog) says a job ended.
    #[arg(long, env = "COSCHED_SLURM_HOOK", value_name = "NAME")]
    pub hook: Option<String>,
    #[arg(long, value_name = "S", default_value_t = 120.0, help = "Seconds a released job may stay pending (a dependency never met, a begin time) before it is held again and its cores freed")]
    pub start_bound: f64,
    #[arg(long, value_name = "SCOPE", default_value = "any", help = "Which jobs may share a node: any, or only jobs of one user, account or qos")]
    pub share_scope: String,
    #[arg(long, value_name = "N", help = "Stop after N rounds (for benchmarks; with --json, each round's wall time in round_s)")]
    pub rounds: Option<u64>,
    #[arg(long, help = "Read the cluster and decide, but release and hold nothing")]
    pub dry_run: bool,
}

pub fn target(a: TargetArgs) -> SlurmTarget {
    SlurmTarget {
        conf: a.slurm_conf,
        partition: a.partition,
        workload: a.workload,
        predictor: a.predictor.predictor.unwrap_or_else(|| "measured".into()),
        db: a.db.db,
        key: a.mark_key,
    }
}

pub fn run(a: SlurmArgs) -> anyhow::Result<()> {
    match a.cmd {
        SlurmCmd::Serve(s) => {
            let json = s.target.json.json;
            let (policy, interval, exit_idle, hook, start_bound) = (s.policy, s.interval, s.exit_idle, s.hook, s.start_bound);
            let (share_scope, rounds, dry_run) = (s.share_scope, s.rounds, s.dry_run);
            let req = ServeRequest { target: target(s.target), policy, interval, exit_idle, hook, start_bound, share_scope, rounds, dry_run };
            let r = serve(&req, &ctx())?;
            if json {
                return print_json(&r);
            }
            let (released, reheld, skipped) = (r.released.len(), r.reheld.len(), r.skipped.len());
            println!("{} rounds, {released} released, {reheld} held again, {} finished jobs learned, {skipped} skipped", r.rounds, r.learned);
            Ok(())
        }
        SlurmCmd::Submit(s) => {
            let json = s.target.json.json;
            let r = submit(&SubmitRequest { target: target(s.target), dir: s.dir, arrivals: !s.no_arrivals }, &ctx())?;
            if json {
                return print_json(&r);
            }
            let rows: Vec<Vec<String>> = r.iter().map(|j| vec![j.name.clone(), j.job.to_string(), format!("{:.2}", j.at)]).collect();
            println!("{}", table(&["job", "Slurm job", "submitted at s"], &rows));
            Ok(())
        }
        SlurmCmd::Hook(h) => {
            // An epilog that fails drains the node: whatever happens, exit 0.
            let _ = hook(&h.hook, &h.job, if h.submitted { 0.0 } else { h.wait }, h.submitted);
            Ok(())
        }
        SlurmCmd::Report(r) => super::slurm_report::run(r),
        SlurmCmd::Status(t) => {
            let json = t.json.json;
            let r = status(&target(t))?;
            if json {
                return print_json(&r);
            }
            let p = |s: &str| printable(s).into_owned(); // job names, reasons, decisions: users' text, escaped
            // Accelerator pools as `gpu 1/2 held`: units held by placed jobs of the node's.
            let acc = |n: &cosched_app::slurm::NodeRow| n.accelerators.iter().map(|a| format!("{} {}/{} held", p(&a.kind), a.held, a.units)).collect::<Vec<_>>().join(", ");
            let nodes: Vec<Vec<String>> = r.nodes.iter().map(|n| vec![p(&n.name), p(&n.state), n.cpus.to_string(), acc(n)]).collect();
            println!("{}\n", table(&["node", "state", "CPUs", "accelerators"], &nodes));
            let jobs: Vec<Vec<String>> = r.jobs.iter().map(|j| vec![j.id.to_string(), p(&j.name), p(&j.state), p(&j.node), p(&j.decision)]).collect();
            println!("{}\n", table(&["job", "name", "state", "node", "cosched's decision"], &jobs));
            let pair = |x: &cosched_app::slurm::PairRow| vec![p(&x.node), format!("{} + {}", x.a, x.b), format!("{:.3}", x.slowdown_a), format!("{:.3}", x.slowdown_b)];
            let pairs: Vec<Vec<String>> = r.pairs.iter().map(pair).collect();
            println!("{}\n{}", table(&["node", "pair", "predicted a", "predicted b"], &pairs), p(&r.source));
            Ok(())
        }
    }
}
