//! Slurm's commands that act on placed jobs: suspend, resume and park, each followed by cosched's signed decision in the job's
//! AdminComment (`mark`), so `status` and a restarted cosched read why.

use crate::cmd::{Slurm, SlurmError};

impl Slurm {
    /// `scontrol suspend job`, then `note` (the decision) into its
    /// AdminComment. cons_tres gives a suspended job's cores to other
    /// jobs; its memory and processes stay on its node.
    pub fn suspend(&self, job: u64, note: &str) -> Result<(), SlurmError> {
        self.run("scontrol", &["suspend", &job.to_string()])?;
        self.admin_comment(job, note)
    }

    /// `scontrol resume job`, then `note` into its AdminComment. Slurm
    /// resumes a job onto its cores whether another job holds them or not:
    /// the caller suspends first what would share them.
    pub fn resume(&self, job: u64, note: &str) -> Result<(), SlurmError> {
        self.run("scontrol", &["resume", &job.to_string()])?;
        self.admin_comment(job, note)
    }

    /// A held job placed on a node without starting: it stays held, and
    /// `note` (a signed parking) says where it is placed.
    pub fn park(&self, job: u64, note: &str) -> Result<(), SlurmError> {
        self.admin_comment(job, note)
    }

    fn admin_comment(&self, job: u64, note: &str) -> Result<(), SlurmError> {
        self.run("scontrol", &["update", &format!("JobId={job}"), &format!("AdminComment={note}")]).map(drop)
    }
}
