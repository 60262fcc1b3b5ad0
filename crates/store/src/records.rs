//! The values the store takes and gives back, one struct per kind of row.
//!
//! They mirror the tables (see the crate documentation) but hold Rust types:
//! CPU sets as `Vec<u32>` (stored as a Linux cpulist, so order and
//! duplicates are not kept), JSON columns as `serde_json::Value` or the
//! model type they hold, provenance
//! as the model's [`Provenance`].

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use cosched_model::regime::CacheRegime;
use cosched_model::placement::SharingLevel;
use cosched_model::profile::JobProfile;
use cosched_model::provenance::Provenance;
use cosched_model::run::JobStatus;
use serde::{Deserialize, Serialize};

use crate::{CampaignParams, StoreError};

/// Row id of a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CampaignId(pub i64);

/// Row id of a solo run (the key of its samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl fmt::Display for CampaignId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a campaign measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CampaignKind {
    /// Solo runs with samples and a profile summary per job (`cosched profile`).
    Profile,
    /// Co-runs of pairs of jobs: the interference matrix (`cosched pairs`).
    Pairs,
    /// A job against a stressor at a ladder of sizes and intensities (`cosched probe`).
    Probe,
}

/// Where a campaign stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CampaignStatus {
    /// Started and not finished. A process killed without a chance to say
    /// so (SIGKILL, power loss) leaves its campaign `running`; resuming
    /// treats it like `interrupted`.
    Running,
    Done,
    /// Stopped early on purpose (SIGINT) or by an error.
    Interrupted,
}

macro_rules! text_enum {
    ($t:ty, $what:literal, $($v:ident = $s:literal),+) => {
        impl $t {
            pub const ALL: &'static [$t] = &[$(<$t>::$v),+];

            pub fn as_str(self) -> &'static str {
                match self { $(<$t>::$v => $s),+ }
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $t {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($s => Ok(<$t>::$v),)+
                    _ => Err(format!(
                        concat!("unknown ", $what, " `{}`; expected one of: {}"),
                        s,
                        [$($s),+].join(", ")
                    )),
                }
            }
        }
    };
}

text_enum!(CampaignKind, "campaign kind", Profile = "profile", Pairs = "pairs", Probe = "probe");
text_enum!(CampaignStatus, "campaign status", Running = "running", Done = "done", Interrupted = "interrupted");

/// A campaign as stored, with how many runs it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CampaignRecord {
    pub id: CampaignId,
    pub kind: CampaignKind,
    /// The workload's name (its file name or its own `name`), as the caller chose.
    pub workload: String,
    /// The campaign's parameters, with object keys sorted.
    pub params: serde_json::Value,
    pub status: CampaignStatus,
    pub started_unix: u64,
    pub finished_unix: Option<u64>,
    /// Pair runs, solo runs and probe points stored for it.
    pub runs: u64,
    pub provenance: Provenance,
}

impl CampaignRecord {
    /// The campaign's parameters as its kind's type; an error names the
    /// campaign when they do not read as such.
    pub fn parameters(&self) -> Result<CampaignParams, StoreError> {
        CampaignParams::from_value(self.id, self.kind, &self.params)
    }
}

/// One repeat of one co-run: the foreground job measured alone and beside
/// the background job, and the background job likewise, in the same repeat
/// (solo and co-run times are paired, never taken from another repeat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRunRecord {
    pub fg_job: String,
    pub bg_job: String,
    /// 0-based; unique per (campaign, fg_job, bg_job).
    pub repeat: u32,
    pub fg_cpus: Vec<u32>,
    pub bg_cpus: Vec<u32>,
    /// The node was too small for both jobs' cores, so they shared CPUs.
    pub shared_cpus: bool,
    pub fg_solo_s: f64,
    pub fg_corun_s: f64,
    pub bg_solo_s: f64,
    pub bg_corun_s: f64,
    /// Times the job was re-launched to keep the contention constant.
    pub fg_relaunches: u32,
    pub bg_relaunches: u32,
    /// `work-phase` when the times are the work phase a kernel reported,
    /// `process` when they are the process's wall time.
    pub fg_timing: String,
    pub bg_timing: String,
    /// The cache regime the repeat ran in (unread for rows older than
    /// schema 10).
    #[serde(default)]
    pub regime: RepeatRegime,
    /// What the two jobs' CPUs shared as observed: the declared topology's
    /// level, demoted below a shared cache when the round trip said the
    /// caches were apart; `None` when not known.
    #[serde(default)]
    pub level: Option<SharingLevel>,
}

/// The cache-sharing regime of one repeat: the round trip of one cache line
/// between two CPUs of the repeat's jobs (`cosched_measure::c2c`), read
/// just before the repeat and just after it. On a VM the hypervisor may move
/// the vCPUs between caches at any time, so a campaign's first reading does
/// not describe its last repeat.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RepeatRegime {
    /// The two CPUs read; empty when nothing was read.
    pub cpus: Vec<u32>,
    pub before_ns: Option<f64>,
    pub after_ns: Option<f64>,
}

impl RepeatRegime {
    /// The regime the repeat ran in: the readings' regime when they agree
    /// (or only one was read); `None` when none was read or the regime
    /// changed during the repeat, which then belongs to neither.
    pub fn regime(&self) -> Option<CacheRegime> {
        match (self.before_ns.map(CacheRegime::of_round_trip), self.after_ns.map(CacheRegime::of_round_trip)) {
            (Some(a), Some(b)) if a != b => None,
            (Some(a), _) | (None, Some(a)) => Some(a),
            (None, None) => None,
        }
    }
}

impl PairRunRecord {
    pub fn fg_slowdown(&self) -> f64 {
        self.fg_corun_s / self.fg_solo_s
    }

    pub fn bg_slowdown(&self) -> f64 {
        self.bg_corun_s / self.bg_solo_s
    }
}

/// The median slowdown of one ordered pair at one sharing level over a
/// campaign's repeats ([`crate::Store::pair_level_medians`]): a cell of a
/// domain-aware matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelCell {
    pub victim: String,
    pub aggressor: String,
    /// `None`: repeats stored without a level.
    pub level: Option<SharingLevel>,
    pub n: usize,
    pub median: f64,
}

/// One solo run of a profile campaign; its samples are stored beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoloRunRecord {
    pub job: String,
    /// The job's program key (`Job::program_key`): what ran, whatever the
    /// job was called, so profiles can be found across workloads.
    pub program: String,
    pub cpus: Vec<u32>,
    /// 0-based; unique per (campaign, job).
    pub repeat: u32,
    /// Sampling interval, seconds.
    pub interval_s: f64,
    /// Wall time of the process, spawn to exit.
    pub wall_s: f64,
    /// The time that counts as the job's solo time (see `timing`).
    pub time_s: f64,
    /// `work-phase` or `process`, as for pair runs.
    pub timing: String,
    /// Exactly one of `exit_code` and `exit_signal` is set.
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
    /// How system calls were counted (`SyscallSource::name` of the model,
    /// e.g. `perf-tracepoint`); `None` when they were not.
    pub syscall_source: Option<String>,
    /// System calls of the whole run, when counted for the run rather than
    /// per sample.
    pub syscall_total: Option<u64>,
    /// Hardware counter totals by perf event name; empty where perf exposes none.
    pub counters: BTreeMap<String, f64>,
}

/// One sample of a solo run's whole process tree. The store keeps the
/// model's `profile::Sample` as it is, one column per field, so the sampler
/// and the database cannot drift apart.
pub use cosched_model::profile::Sample as SampleRecord;

/// The summary of a job's profile in one campaign. The summary is stored
/// as JSON so its type can grow with the profiler without a migration; the
/// model's `JobProfile` owns its shape, and the store decodes it on read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    pub job: String,
    pub program: String,
    pub summary: JobProfile,
}

/// One repeat of one probe point: the job and a stressor of one size and
/// intensity, each alone and then together, in the same repeat. The job's
/// slowdown is its sensitivity, the stressor's the job's contentiousness;
/// the table also shows both as derived columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbePointRecord {
    pub job: String,
    /// The stressor's name (e.g. `distgen`).
    pub stressor: String,
    pub working_set_kib: u64,
    /// The stressor's intensity in its own unit (for distgen, the share of
    /// time it spends accessing memory).
    pub intensity: f64,
    /// 0-based; unique per (campaign, job, stressor, size, intensity).
    pub repeat: u32,
    pub job_solo_s: f64,
    pub job_corun_s: f64,
    pub stressor_solo_s: f64,
    pub stressor_corun_s: f64,
    /// The cache regime the repeat ran in (unread before schema 10).
    #[serde(default)]
    pub regime: RepeatRegime,
}

impl ProbePointRecord {
    pub fn job_slowdown(&self) -> f64 {
        self.job_corun_s / self.job_solo_s
    }

    pub fn stressor_slowdown(&self) -> f64 {
        self.stressor_corun_s / self.stressor_solo_s
    }
}

/// Row id of a real run (`runs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExecRunId(pub i64);

impl fmt::Display for ExecRunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where a real run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Started; a runner killed outright leaves its run `running`.
    Running,
    Done,
    /// Stopped by SIGINT / SIGTERM; `--resume` continues it.
    Interrupted,
    /// Stopped by an error of the runner (not of a job).
    Failed,
}

text_enum!(RunStatus, "run status", Running = "running", Done = "done", Interrupted = "interrupted", Failed = "failed");

/// One execution of a workload under one policy on a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    pub id: ExecRunId,
    /// Groups the runs of one `cosched run` invocation.
    pub series: String,
    pub workload: String,
    /// The policy as NAME or NAME:KEY=VALUE,...
    pub policy: String,
    pub repeat: u32,
    /// The invocation's parameters, keys sorted (what `--resume` matches).
    pub params: serde_json::Value,
    pub status: RunStatus,
    pub started_unix: u64,
    pub finished_unix: Option<u64>,
    pub provenance: Provenance,
}

/// A job attempt as it starts: written at once, in its own transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunJobStart {
    pub job: String,
    /// Index of the job in the workload.
    pub job_index: u32,
    /// 0 for the first attempt; a resumed run re-runs killed jobs as 1, 2...
    pub attempt: u32,
    /// Seconds on the run's clock.
    pub arrival_s: f64,
    pub start_s: f64,
    pub cpus: Vec<u32>,
    /// NUMA nodes its memory is bound to (its cpuset's `cpuset.mems`, the
    /// nodes of its CPUs); empty when not bound or recorded before schema 10.
    #[serde(default)]
    pub mems: Vec<u32>,
    /// The job's process group id (its leader's pid).
    pub pgid: i32,
    /// Jobs running beside it at its start.
    pub beside: Vec<String>,
    /// The slowdown the policy's source predicted for it beside them.
    pub predicted: f64,
    /// The stored solo time its slowdown is measured against, if any.
    pub solo_s: Option<f64>,
}

/// How a job attempt ended.
///
/// Its status is stored as two columns, the name (`ok`, `failed`, `signal`,
/// `timeout`, `oom`, `killed`, `spawn-failed`) and the exit code of `failed`
/// or signal of `signal`, and serialized the same way (`status`,
/// `status_value`), so exports and `--json` read as they always did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "RunJobEndText", try_from = "RunJobEndText")]
pub struct RunJobEnd {
    pub end_s: f64,
    pub status: JobStatus,
    /// A kernel's own work-phase time.
    pub work_s: Option<f64>,
    /// Measured slowdown against `solo_s`.
    pub slowdown: Option<f64>,
}

/// [`RunJobEnd`] with its status as the store's two columns.
#[derive(Serialize, Deserialize)]
struct RunJobEndText {
    end_s: f64,
    status: String,
    status_value: Option<i32>,
    work_s: Option<f64>,
    slowdown: Option<f64>,
}

impl From<RunJobEnd> for RunJobEndText {
    fn from(e: RunJobEnd) -> RunJobEndText {
        RunJobEndText {
            end_s: e.end_s,
            status: e.status.name().into(),
            status_value: e.status.value(),
            work_s: e.work_s,
            slowdown: e.slowdown,
        }
    }
}

impl TryFrom<RunJobEndText> for RunJobEnd {
    type Error = String;

    fn try_from(t: RunJobEndText) -> Result<RunJobEnd, String> {
        Ok(RunJobEnd {
            end_s: t.end_s,
            status: JobStatus::parse_parts(&t.status, t.status_value)?,
            work_s: t.work_s,
            slowdown: t.slowdown,
        })
    }
}

/// A job attempt as stored: its start and, once it ended, its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunJobRecord {
    #[serde(flatten)]
    pub start: RunJobStart,
    pub end: Option<RunJobEnd>,
}

/// One line of a run's journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub t_s: f64,
    /// `begin`, `start`, `end`, `interrupted`, `resume`, `done`, `failed`.
    pub event: String,
    pub job: Option<String>,
    pub detail: String,
}

/// A running pair's settled online slowdown estimate (issue 38), kept as
/// the run saw it: `victim` beside `beside`, the only other job running.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OnlineSample {
    /// Seconds on the run's clock.
    pub t_s: f64,
    pub victim: String,
    pub beside: String,
    pub victim_program: String,
    pub beside_program: String,
    pub slowdown: f64,
    pub lo: f64,
    /// `None`: the interval is open above.
    pub hi: Option<f64>,
    pub segments: u32,
    /// `progress` or `counters` (weak signals never settle).
    pub signal: String,
    pub predicted: f64,
    /// The cache regime of the run (`shared`, `apart`), when read.
    pub regime: Option<String>,
}
