//! Slurm's own commands, run as child processes: the only way cosched
//! talks to a cluster, so it works with any slurmctld the commands reach
//! (`SLURM_CONF` chooses which) and needs no Slurm library at build time.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::parse::{self, AcctJob, NodeInfo, ParseError, QueueJob, Skipped, SEP};

/// 128 bits from the kernel's random source, as hex: a tag no user can
/// guess. The clock and pid stand in only if /dev/urandom cannot be read.
fn nonce() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if read.is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        b = (t ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The fault tests' way to stop `serve` at one point of a release exactly
/// (`crates/cli/tests/slurm_faults.rs`): with `COSCHED_SLURM_FAULT=NAME` in
/// its environment, the process SIGKILLs itself when it reaches the point
/// `NAME`, as a crash or the OOM killer would stop it there. Only whoever
/// starts `serve` sets its environment, and the worst it can do is stop it.
fn fault_point(name: &str) {
    if std::env::var_os("COSCHED_SLURM_FAULT").is_some_and(|v| v == name) {
        // SAFETY: kill and getpid have no memory preconditions; a process
        // may always signal itself.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

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

    /// Slurm refused the command to this user: `serve` lacks operator
    /// rights (22.05 says `Invalid user id` for another user's job).
    pub fn denied(&self) -> bool {
        match self {
            SlurmError::Failed { stderr, .. } => {
                let s = stderr.to_ascii_lowercase();
                s.contains("invalid user id") || s.contains("access/permission denied")
            }
            _ => false,
        }
    }
}

/// Where Slurm's commands read their configuration without `SLURM_CONF`
/// (Debian's and the default build's path).
pub const DEFAULT_CONF: &str = "/etc/slurm/slurm.conf";

/// munge's socket, when slurm.conf authenticates with munge (`AuthType`,
/// default auth/munge): `AuthInfo=socket=PATH`, else munge's default.
pub fn munge_socket(conf: &str) -> Option<PathBuf> {
    let (mut auth, mut info) = (String::new(), String::new());
    for line in conf.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some((k, v)) = line.split_once('=') {
            match k.trim().to_ascii_lowercase().as_str() {
                "authtype" => auth = v.trim().to_string(),
                "authinfo" => info = v.trim().to_string(),
                _ => {}
            }
        }
    }
    if !(auth.is_empty() || auth.contains("munge")) {
        return None;
    }
    let socket = info.split(',').find_map(|o| o.trim().strip_prefix("socket=")).unwrap_or("/run/munge/munge.socket.2");
    Some(PathBuf::from(socket))
}

/// How to run Slurm's commands.
#[derive(Debug, Clone, Default)]
pub struct Slurm {
    /// `SLURM_CONF` for the commands; unset: theirs (the environment, else
    /// /etc/slurm/slurm.conf).
    pub conf: Option<PathBuf>,
}

/// One job's outcome of [`Slurm::release`]: its id, and whether its hold
/// was released.
pub type Released = (u64, Result<(), SlurmError>);

impl Slurm {
    pub(crate) fn run(&self, program: &str, args: &[&str]) -> Result<String, SlurmError> {
        self.run_env(program, args, &[])
    }

    fn command(&self, program: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(program);
        c.args(args);
        // The user's SQUEUE_*, SINFO_* and SACCT_* variables change what
        // these commands print and which jobs (SQUEUE_USERS, SQUEUE_STATES):
        // only the arguments here say that.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if ["SQUEUE_", "SINFO_", "SACCT_", "SCONTROL_"].iter().any(|p| k.starts_with(p)) {
                c.env_remove(&*k);
            }
        }
        c.envs(env.iter().copied());
        // Times in UTC, so they parse without a time zone database.
        c.env("TZ", "UTC");
        if let Some(conf) = &self.conf {
            c.env("SLURM_CONF", conf);
        }
        c
    }

    fn run_env(&self, program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<String, SlurmError> {
        // As a person would read it: the separator shown as `|`.
        let cmd = format!("{program} {}", args.join(" ")).replace(SEP, "|");
        let mut c = self.command(program, args, env);
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
    /// the reading that could not be read, with why.
    ///
    /// One RPC whatever the queue: `squeue` asks for the job table once
    /// (REQUEST_JOB_INFO; 22.05's request carries no partition, so the
    /// controller packs every job and squeue drops the other partitions'),
    /// and prints only this partition's jobs, tagged ([`parse::QueueFormat`]).
    /// `squeue --json` would carry the same fields escaped, but 22.05's
    /// ignores `-p`: it formats every job of the cluster, 3 kB each, and a
    /// round over 2,000 queued jobs spent a second on it (docs/slurm.md).
    pub fn queue(&self, partition: &str) -> Result<(Vec<QueueJob>, Vec<Skipped>), SlurmError> {
        let f = parse::QueueFormat::new(&nonce());
        // In the environment, not the arguments: other users can read a
        // process's arguments (ps), not its environment, so none can write
        // the tag into a field before the reading.
        let out = self.run_env("squeue", &["-h", "-r", "-t", "all", "-p", partition], &[("SQUEUE_FORMAT2", &f.format())])?;
        let (mut jobs, mut skipped) = f.parse(&out)?;
        jobs.retain(|j| j.partition == partition);
        skipped.retain(|s| s.partition.as_deref().is_none_or(|p| p == partition));
        Ok((jobs, skipped))
    }

    /// The nodes of `partition`.
    pub fn nodes(&self, partition: &str) -> Result<Vec<NodeInfo>, SlurmError> {
        let out = self.run("sinfo", &["-h", "-N", "-p", partition, "-o", parse::NODE_FORMAT])?;
        Ok(parse::parse_nodes(&out)?)
    }

    /// The first half of a start: a held job's required node list set to
    /// `node` and `note` (cosched's decision) written into its AdminComment,
    /// in one `scontrol update`; the job stays held until [`Slurm::release`].
    /// Slurm then allocates its cores there (cons_tres) and binds its tasks
    /// to them. cosched stopped between the two halves leaves a held job
    /// whose mark starts it nowhere: the next round holds it again with the
    /// submission rule's mark and decides anew, so no start is lost or made
    /// twice. (One update and one release for the whole round, instead of
    /// three commands per job: at 50 ms a command on a loaded host, 500
    /// starts took 75 s of `serve` in commands alone.)
    pub fn place(&self, job: u64, node: &str, note: &str) -> Result<(), SlurmError> {
        self.run("scontrol", &["update", &format!("JobId={job}"), &format!("ReqNodeList={node}"), &format!("AdminComment={note}")])?;
        Ok(())
    }

    /// The second half of a start: the holds of `jobs`, placed by
    /// [`Slurm::place`], released in one `scontrol release` (one RPC per
    /// job, one process for all). Each job's outcome: when the command
    /// fails for a reason that is not the controller's absence (a job
    /// cancelled meanwhile), each job is released alone to tell which; the
    /// controller's absence is the error of all (the round is retried).
    pub fn release(&self, jobs: &[u64]) -> Result<Vec<Released>, SlurmError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        fault_point("kill-before-release");
        let list: Vec<String> = jobs.iter().map(u64::to_string).collect();
        match self.run("scontrol", &["release", &list.join(",")]) {
            Ok(_) => Ok(jobs.iter().map(|&j| (j, Ok(()))).collect()),
            Err(e) if e.transient() => Err(e),
            Err(_) => Ok(jobs.iter().map(|&j| (j, self.run("scontrol", &["release", &j.to_string()]).map(drop))).collect()),
        }
    }

    /// Holds a pending job for cosched again, with the submission rule's
    /// mark, naming the program the job's first hold mark named (so a
    /// job held again keeps it).
    pub fn hold(&self, job: u64, program: Option<&str>) -> Result<(), SlurmError> {
        self.run("scontrol", &["hold", &job.to_string()])?;
        let mark = match program.filter(|p| crate::mark::program_name_ok(p)) {
            Some(p) => format!("{};program={p}", parse::HELD),
            None => parse::HELD.to_string(),
        };
        self.run("scontrol", &["update", &format!("JobId={job}"), &format!("AdminComment={mark}")])?;
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

    /// Why Slurm's commands cannot reach a controller from here, found
    /// within `limit` (a few seconds) and naming what to check: the
    /// configuration file, munge's socket, then `scontrol ping`. Slurm's
    /// own commands retry a missing slurm.conf for 60 s and print no hint.
    pub fn check(&self, limit: Duration) -> Result<(), String> {
        let (conf, given) = match &self.conf {
            Some(c) => (c.clone(), true),
            None => (PathBuf::from(DEFAULT_CONF), false),
        };
        let shown = conf.display();
        let text = match std::fs::read_to_string(&conf) {
            Ok(t) => Some(t),
            Err(e) if given => {
                return Err(format!("SLURM_CONF={shown}: {e}: point SLURM_CONF (or --slurm-conf) at the cluster's slurm.conf"))
            }
            // No file where Slurm looks by default: a configless node gets
            // its configuration from slurmctld, so ask the controller.
            Err(_) => None,
        };
        if let Some(socket) = text.as_deref().and_then(munge_socket) {
            if let Err(e) = std::os::unix::net::UnixStream::connect(&socket) {
                return Err(format!(
                    "munge does not answer on {} ({e}), so no Slurm command can authenticate: is munged running (systemctl status munge)? The socket is slurm.conf's AuthInfo=socket=, else munge's default",
                    socket.display()
                ));
            }
        }
        let mut child = self
            .command("scontrol", &["ping"], &[])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("`scontrol` could not be run: {e} (are Slurm's client commands installed and on the PATH?)"))?;
        let began = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if began.elapsed() < limit => std::thread::sleep(Duration::from_millis(50)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "`scontrol ping` got no answer within {} s with slurm.conf {shown}: is slurmctld running, and is SlurmctldHost reachable from here?",
                        limit.as_secs()
                    ));
                }
            }
        };
        let read = |r: Option<&mut dyn std::io::Read>| {
            let mut s = String::new();
            if let Some(r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        };
        let out = read(child.stdout.as_mut().map(|r| r as &mut dyn std::io::Read));
        let err = read(child.stderr.as_mut().map(|r| r as &mut dyn std::io::Read));
        if status.success() && out.contains("is UP") {
            return Ok(());
        }
        let said = out.lines().chain(err.lines()).find(|l| !l.trim().is_empty() && !l.starts_with('*')).unwrap_or("no output").trim().to_string();
        Err(format!(
            "the Slurm controller does not answer (`scontrol ping` with slurm.conf {shown}: {said}): is slurmctld running (systemctl status slurmctld), and do SlurmctldHost and SlurmctldPort in slurm.conf name it?"
        ))
    }

    /// Whether the controller answers.
    pub fn ping(&self) -> bool {
        self.run("scontrol", &["ping"]).map(|o| o.contains("is UP")).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn munges_socket_is_authinfos_else_the_default_and_none_without_munge() {
        let conf = "AuthType=auth/munge\nAuthInfo=cred_expire=30,socket=/tmp/m.sock # ours\n";
        assert_eq!(munge_socket(conf), Some(PathBuf::from("/tmp/m.sock")));
        assert_eq!(munge_socket("ClusterName=x\n"), Some(PathBuf::from("/run/munge/munge.socket.2")));
        assert_eq!(munge_socket("AuthType=auth/jwt\n"), None);
        assert_eq!(munge_socket("#AuthInfo=socket=/x\n"), Some(PathBuf::from("/run/munge/munge.socket.2")));
    }

    #[test]
    fn a_missing_slurm_conf_is_named_at_once() {
        let slurm = Slurm { conf: Some(PathBuf::from("/nonexistent/slurm.conf")) };
        let e = slurm.check(Duration::from_secs(5)).unwrap_err();
        assert!(e.starts_with("SLURM_CONF=/nonexistent/slurm.conf: No such file"), "{e}");
    }

    #[test]
    fn munge_not_answering_is_named_before_any_slurm_command_runs() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("slurm.conf");
        std::fs::write(&conf, format!("AuthType=auth/munge\nAuthInfo=socket={}/none.sock\n", dir.path().display())).unwrap();
        let e = Slurm { conf: Some(conf) }.check(Duration::from_secs(5)).unwrap_err();
        assert!(e.starts_with("munge does not answer on "), "{e}");
    }
}
