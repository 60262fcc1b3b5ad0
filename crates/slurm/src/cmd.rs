//! Slurm's own commands, run as child processes: the only way cosched
//! talks to a cluster, so it works with any slurmctld the commands reach
//! (`SLURM_CONF` chooses which) and needs no Slurm library at build time.

use std::path::PathBuf;
use std::process::Command;

use crate::parse::{self, AcctJob, NodeInfo, ParseError, QueueJob, Skipped, SEP};

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error("`{cmd}` could not be run: {source} (are Slurm's client commands installed and on the PATH?)")]
    Spawn { cmd: String, source: std::io::Error },
    /// The command ran and failed: the controller may be down or restarting.
    #[error("`{cmd}` failed ({status}): {stderr}")]
    Failed { cmd: String, status: String, stderr: String },
    #[error(transparent)]
    Parse(#[from] ParseError),
}

impl SlurmError {
    /// The controller did not answer: worth retrying later, not a reason to stop.
    pub fn transient(&self) -> bool {
        match self {
            SlurmError::Failed { stderr, .. } => {
                let s = stderr.to_ascii_lowercase();
                s.contains("unable to contact slurm controller")
                    || s.contains("connection refused")
                    || s.contains("socket timed out")
                    || s.contains("slurm_persist_conn_open")
                    || s.contains("communication connection failure")
                    || s.contains("zero bytes were transmitted or received")
            }
            _ => false,
        }
    }
}

/// How to run Slurm's commands.
#[derive(Debug, Clone, Default)]
pub struct Slurm {
    /// `SLURM_CONF` for the commands; unset: theirs (the environment, else
    /// /etc/slurm/slurm.conf).
    pub conf: Option<PathBuf>,
}

impl Slurm {
    pub(crate) fn run(&self, program: &str, args: &[&str]) -> Result<String, SlurmError> {
        let cmd = format!("{program} {}", args.join(" ")).replace(SEP, "\\x1f");
        let mut c = Command::new(program);
        c.args(args);
        // Times in UTC, so they parse without a time zone database.
        c.env("TZ", "UTC");
        if let Some(conf) = &self.conf {
            c.env("SLURM_CONF", conf);
        }
        let out = c.output().map_err(|source| SlurmError::Spawn { cmd: cmd.clone(), source })?;
        if !out.status.success() {
            return Err(SlurmError::Failed {
                cmd,
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Every job of `partition` the controller still knows, finished ones
    /// included (they stay for slurm.conf's `MinJobAge`), and the jobs of
    /// the reading that could not be read, with why (of this partition, or
    /// of one unreadable). One RPC: `squeue --json` carries AdminComment.
    pub fn queue(&self, partition: &str) -> Result<(Vec<QueueJob>, Vec<Skipped>), SlurmError> {
        let out = self.run("squeue", &["--json"])?;
        let (mut jobs, mut skipped) = parse::parse_queue_json(&out)?;
        jobs.retain(|j| j.partition == partition);
        skipped.retain(|s| s.partition.as_deref().is_none_or(|p| p == partition));
        Ok((jobs, skipped))
    }

    /// The nodes of `partition`.
    pub fn nodes(&self, partition: &str) -> Result<Vec<NodeInfo>, SlurmError> {
        let out = self.run("sinfo", &["-h", "-N", "-p", partition, "-o", parse::NODE_FORMAT])?;
        Ok(parse::parse_nodes(&out)?)
    }

    /// Starts a held job on `node`: its required node list set, its hold
    /// released, then `note` (cosched's decision) written into its
    /// AdminComment. Slurm allocates its cores there (cons_tres) and binds
    /// its tasks to them. In this order, cosched stopped between two steps
    /// leaves a job it decides again: still held, or released but still
    /// marked held (which the next round holds again unless it started).
    pub fn release_on(&self, job: u64, node: &str, note: &str) -> Result<(), SlurmError> {
        let id = format!("JobId={job}");
        self.run("scontrol", &["update", &id, &format!("ReqNodeList={node}")])?;
        self.run("scontrol", &["release", &job.to_string()])?;
        self.run("scontrol", &["update", &id, &format!("AdminComment={note}")])?;
        Ok(())
    }

    /// Holds a pending job for cosched again, with the submission rule's mark.
    pub fn hold(&self, job: u64) -> Result<(), SlurmError> {
        self.run("scontrol", &["hold", &job.to_string()])?;
        self.run("scontrol", &["update", &format!("JobId={job}"), &format!("AdminComment={}", parse::HELD)])?;
        Ok(())
    }

    /// One user-set field (`Comment`, `JobName`) of one job, from `sacct`:
    /// for a job the controller has forgotten. The whole output is the
    /// field (one field asked, one job), so no text in it can be taken for
    /// another job's; `None` if sacct knows it not or printed it ambiguously
    /// (more than one record).
    pub fn acct_text(&self, job: u64, field: &str, since: i64, completion: bool) -> Option<String> {
        let start = format!("--starttime={}", parse::format_time(since));
        let id = job.to_string();
        let ask = |field: &str| {
            let mut args = vec!["-X", "-n", "-P", "-j", &id, &start, "-o", field];
            if completion {
                args.insert(0, "--completion");
            }
            self.run("sacct", &args).ok()
        };
        // Two records of one id (ids reused after a controller reset) are
        // two lines; a value with a newline is then not told apart: unknown.
        if ask("JobIDRaw")?.lines().count() != 1 {
            return None;
        }
        ask(field)?.strip_suffix('\n').map(str::to_string)
    }

    /// Jobs of `partition` that ended since `since` (Unix seconds), from
    /// `sacct`: the accounting database, else (`sacct --completion`) the
    /// job completion log of `JobCompType=jobcomp/filetxt`. `completion`
    /// says which, and turns to the log once the database says it is not
    /// configured, so later calls ask only the log.
    pub fn finished(&self, partition: &str, since: i64, completion: &mut bool) -> Result<Vec<AcctJob>, SlurmError> {
        let delim = format!("--delimiter={SEP}");
        let start = format!("--starttime={}", parse::format_time(since));
        let args = ["-X", "-n", "-P", &delim, "-a", "-r", partition, &start, "-o", parse::SACCT_FIELDS];
        let log = |args: &[&str]| {
            let mut c = vec!["--completion"];
            c.extend(args);
            self.run("sacct", &c)
        };
        let out = if *completion {
            log(&args)?
        } else {
            match self.run("sacct", &args) {
                Ok(out) => out,
                Err(SlurmError::Failed { stderr, .. }) if stderr.contains("accounting storage is disabled") => {
                    *completion = true;
                    log(&args)?
                }
                Err(e) => return Err(e),
            }
        };
        Ok(parse::parse_sacct(&out)?.into_iter().filter(|j| j.state.is_final()).collect())
    }

    /// Submits a batch script with `sbatch --parsable`; returns the job id.
    pub fn sbatch(&self, args: &[String], script: &std::path::Path) -> Result<u64, SlurmError> {
        let mut all: Vec<&str> = vec!["--parsable"];
        all.extend(args.iter().map(String::as_str));
        let script = script.to_string_lossy();
        all.push(&script);
        let out = self.run("sbatch", &all)?;
        // `--parsable` prints `ID` or `ID;CLUSTER`.
        let id = out.trim().split(';').next().unwrap_or("");
        id.parse().map_err(|_| SlurmError::Failed { cmd: format!("sbatch {}", all.join(" ")), status: "ok".into(), stderr: format!("printed `{}`, not a job id", out.trim()) })
    }

    /// Whether the controller answers.
    pub fn ping(&self) -> bool {
        self.run("scontrol", &["ping"]).map(|o| o.contains("is UP")).unwrap_or(false)
    }
}
