//! The parameters of a campaign, one type per kind.
//!
//! They are stored as JSON text with object keys sorted, and `--resume`
//! finds a campaign again by comparing that text, so each type serializes
//! to exactly the document the verbs wrote before these types existed (a
//! test builds the old documents by hand and finds their campaigns through
//! the typed API). Adding a field therefore starts new campaigns rather
//! than resuming old ones. Older versions stored fewer fields, so a field
//! missing from a stored document reads as its default (empty, zero,
//! `None`), and fields no type knows are ignored.

use cosched_model::regime::CacheRegime;
use cosched_model::matrix::StopRule;
use serde::{Deserialize, Serialize};

use crate::{CampaignId, CampaignKind, StoreError};

/// The parameters of any campaign; its variant is its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum CampaignParams {
    Profile(ProfileParams),
    Pairs(PairsParams),
    Probe(ProbeParams),
}

impl CampaignParams {
    pub fn kind(&self) -> CampaignKind {
        match self {
            CampaignParams::Profile(_) => CampaignKind::Profile,
            CampaignParams::Pairs(_) => CampaignKind::Pairs,
            CampaignParams::Probe(_) => CampaignKind::Probe,
        }
    }

    pub(crate) fn to_json(&self) -> String {
        let v = match self {
            CampaignParams::Profile(p) => serde_json::to_string(p),
            CampaignParams::Pairs(p) => serde_json::to_string(p),
            CampaignParams::Probe(p) => serde_json::to_string(p),
        };
        v.expect("campaign parameters serialize")
    }

    /// The parameters with each job's command line left out, where every
    /// job has an identity (which names what the command line runs); `None`
    /// where one has none, since then only the command line tells jobs
    /// apart.
    pub(crate) fn by_program(&self) -> Option<CampaignParams> {
        let mut p = self.clone();
        match &mut p {
            CampaignParams::Pairs(x) => {
                for j in &mut x.jobs {
                    j.identity.as_ref()?;
                    j.argv.clear();
                }
            }
            CampaignParams::Profile(x) => {
                for j in &mut x.jobs {
                    j.identity.as_ref()?;
                    j.argv.clear();
                }
            }
            CampaignParams::Probe(x) => {
                x.identity.as_ref()?;
                x.argv.clear();
            }
        }
        Some(p)
    }

    /// Reads the stored parameters of campaign `id` of `kind`.
    pub(crate) fn from_value(id: CampaignId, kind: CampaignKind, v: &serde_json::Value) -> Result<Self, StoreError> {
        fn de<T: serde::de::DeserializeOwned>(id: CampaignId, v: &serde_json::Value) -> Result<T, StoreError> {
            T::deserialize(v).map_err(|e| StoreError::BadParams { id, why: e.to_string() })
        }
        Ok(match kind {
            CampaignKind::Profile => CampaignParams::Profile(de(id, v)?),
            CampaignKind::Pairs => CampaignParams::Pairs(de(id, v)?),
            CampaignKind::Probe => CampaignParams::Probe(de(id, v)?),
        })
    }
}

/// `cosched pairs`: every unordered pair of `jobs` co-run until `stop`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PairsParams {
    /// In workload order, which is the order of the matrix's rows.
    pub jobs: Vec<PairsJob>,
    pub stop: StopRule,
    /// `pairs --in-regime`: only repeats of this cache regime count towards
    /// `stop`. Absent (and not written) for an ungated campaign, so older
    /// campaigns' settings still match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_regime: Option<CacheRegime>,
}

/// Read for a stored document without `stop`: a rule that stops at once,
/// which no campaign ran under, so it is never mistaken for real settings.
impl Default for PairsParams {
    fn default() -> Self {
        PairsParams { jobs: Vec::new(), stop: StopRule { min_repeats: 0, max_repeats: 0, rel_halfwidth: 0.0, settle: None }, in_regime: None }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct PairsJob {
    pub name: String,
    /// The command as launched, work resolved from calibrations.
    pub argv: Vec<String>,
    pub cores: u32,
    /// The program it runs, the same in every workload
    /// (`cosched_measure::identity::program_key`); absent in older campaigns,
    /// and left out of the text when absent so theirs still match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// `cosched profile`: timed solo runs of each job, sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProfileParams {
    pub jobs: Vec<ProfileJob>,
    pub interval_s: f64,
    /// Timed runs per job.
    pub repeats: usize,
    /// How system calls were counted (`SyscallMethod::name`).
    pub syscalls: String,
    /// Cores of the host pool U is a share of.
    pub host_cores: u32,
    /// Where the counted run sits among a job's solo runs; `None` when
    /// calls were counted with /proc only and no separate run was made.
    pub counted_run_repeat: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProfileJob {
    pub name: String,
    pub argv: Vec<String>,
    pub cpus: Vec<u32>,
    /// As [`PairsJob::identity`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// `cosched probe` of one job: the job beside a stressor at each level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProbeParams {
    pub job: String,
    /// The job's program key, so a class is found across workloads.
    pub program: Option<String>,
    /// As [`PairsJob::identity`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    pub argv: Vec<String>,
    pub job_cpus: Vec<u32>,
    pub stressor: String,
    pub stressor_cpus: Vec<u32>,
    pub stressor_seconds: f64,
    pub levels: Vec<ProbeLevelParams>,
    pub repeats: usize,
    /// The node's cache sizes when detected: `llc_kib` splits the curve
    /// into its cache and memory sides.
    pub l2_kib: Option<u64>,
    pub llc_kib: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ProbeLevelParams {
    pub size_kib: u64,
    pub intensity: f64,
    /// The stressor's work at this level, sized to `stressor_seconds`.
    pub stressor_work: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_provenance, CampaignStatus, Store};

    fn pairs() -> PairsParams {
        PairsParams {
            jobs: vec![
                PairsJob { name: "a".into(), argv: vec!["cosched-kernel".into(), "stream".into()], cores: 1, identity: None },
                PairsJob { name: "b".into(), argv: vec!["sleep".into(), "0.1".into()], cores: 2, identity: None },
            ],
            stop: StopRule { min_repeats: 3, max_repeats: 5, rel_halfwidth: 0.05, settle: None },
            in_regime: None,
        }
    }

    fn profile(counted: Option<usize>) -> ProfileParams {
        ProfileParams {
            jobs: vec![ProfileJob { name: "a".into(), argv: vec!["true".into()], cpus: vec![0, 1], identity: None }],
            interval_s: 0.25,
            repeats: 3,
            syscalls: "proc".into(),
            host_cores: 2,
            counted_run_repeat: counted,
        }
    }

    fn probe() -> ProbeParams {
        ProbeParams {
            job: "a".into(),
            program: Some("command true".into()),
            identity: None,
            argv: vec!["true".into()],
            job_cpus: vec![0],
            stressor: "distgen".into(),
            stressor_cpus: vec![1],
            stressor_seconds: 0.5,
            levels: vec![ProbeLevelParams { size_kib: 64, intensity: 1.0, stressor_work: 1000 }],
            repeats: 2,
            l2_kib: Some(512),
            llc_kib: None,
        }
    }

    /// The documents `cosched pairs`, `profile` and `probe` wrote before
    /// these types, built the way they built them.
    fn old_texts() -> [(CampaignParams, String); 4] {
        let p = pairs();
        let pairs_text = serde_json::json!({
            "jobs": p.jobs.iter().map(|j| serde_json::json!({"name": j.name, "argv": j.argv, "cores": j.cores})).collect::<Vec<_>>(),
            "stop": p.stop,
        });
        let profile_text = |counted: Option<usize>| {
            serde_json::json!({
                "jobs": [{"name": "a", "argv": ["true"], "cpus": [0, 1]}],
                "interval_s": 0.25,
                "repeats": 3,
                "syscalls": "proc",
                "host_cores": 2,
                "counted_run_repeat": counted,
            })
        };
        let probe_text = serde_json::json!({
            "job": "a",
            "program": "command true",
            "argv": ["true"],
            "job_cpus": [0],
            "stressor": "distgen",
            "stressor_cpus": [1],
            "stressor_seconds": 0.5,
            "levels": [{"size_kib": 64, "intensity": 1.0, "stressor_work": 1000}],
            "repeats": 2,
            "l2_kib": 512,
            "llc_kib": null,
        });
        [
            (CampaignParams::Pairs(p), pairs_text.to_string()),
            (CampaignParams::Profile(profile(None)), profile_text(None).to_string()),
            (CampaignParams::Profile(profile(Some(3))), profile_text(Some(3)).to_string()),
            (CampaignParams::Probe(probe()), probe_text.to_string()),
        ]
    }

    #[test]
    fn campaigns_stored_with_the_old_text_are_found_by_their_typed_parameters() {
        let mut s = Store::open_in_memory().unwrap();
        let prov = test_provenance("cosched pairs", 1);
        for (typed, text) in old_texts() {
            let old = s.begin_campaign(typed.kind(), "w", &text, &prov).unwrap();
            s.finish_campaign(old, CampaignStatus::Interrupted).unwrap();
            assert_eq!(s.find_campaign_typed("w", &typed).unwrap(), Some((old, CampaignStatus::Interrupted)), "{text}");
        }
        let mut other = pairs();
        other.stop.max_repeats = 6;
        assert_eq!(
            s.find_campaign_typed("w", &CampaignParams::Pairs(other)).unwrap(),
            None,
            "other settings, other campaign"
        );
    }

    #[test]
    fn a_campaign_is_found_again_when_its_programs_are_launched_from_another_path() {
        let mut s = Store::open_in_memory().unwrap();
        let prov = test_provenance("cosched pairs", 1);
        let at = |dir: &str, work: &str| {
            let mut p = pairs();
            for j in &mut p.jobs {
                j.identity = Some(format!("kernel {} --work {work}", j.name));
            }
            p.jobs[0].argv[0] = format!("{dir}/cosched-kernel");
            CampaignParams::Pairs(p)
        };
        let old = s.begin_campaign_typed("w", &at("/opt/a", "10"), &prov).unwrap();
        s.finish_campaign(old, CampaignStatus::Interrupted).unwrap();
        assert_eq!(s.find_campaign_typed("w", &at("/usr/local/bin", "10")).unwrap(), Some((old, CampaignStatus::Interrupted)));
        assert_eq!(s.find_campaign_typed("w", &at("/opt/a", "11")).unwrap(), None, "another program, another campaign");
        assert_eq!(s.find_campaign_typed("v", &at("/opt/a", "10")).unwrap(), None, "another workload");
        // The newest of an exact and a by-program match wins.
        let newer = s.begin_campaign_typed("w", &at("/usr/local/bin", "10"), &prov).unwrap();
        assert_eq!(s.find_campaign_typed("w", &at("/opt/a", "10")).unwrap(), Some((newer, CampaignStatus::Running)));
        // Without identities the command line alone names a job.
        let mut bare = pairs();
        bare.jobs[0].argv[0] = "/opt/b/cosched-kernel".into();
        assert_eq!(s.find_campaign_typed("w", &CampaignParams::Pairs(bare)).unwrap(), None);
    }

    #[test]
    fn typed_parameters_round_trip_through_the_store() {
        let mut s = Store::open_in_memory().unwrap();
        let prov = test_provenance("cosched probe", 1);
        for (typed, _) in old_texts() {
            let id = s.begin_campaign_typed("w", &typed, &prov).unwrap();
            let c = s.campaign(id).unwrap().unwrap();
            assert_eq!(c.kind, typed.kind());
            assert_eq!(c.parameters().unwrap(), typed);
        }
    }

    #[test]
    fn fields_an_older_version_did_not_store_read_as_defaults() {
        let mut s = Store::open_in_memory().unwrap();
        let prov = test_provenance("cosched probe", 1);
        let id = s.begin_campaign(CampaignKind::Probe, "w", r#"{"job": "a", "llc_kib": 4096, "gone": 1}"#, &prov).unwrap();
        let CampaignParams::Probe(p) = s.campaign(id).unwrap().unwrap().parameters().unwrap() else { panic!("a probe") };
        assert_eq!((p.job.as_str(), p.llc_kib, p.program, p.repeats), ("a", Some(4096), None, 0));
    }

    #[test]
    fn parameters_that_do_not_read_as_their_kind_name_the_campaign() {
        let mut s = Store::open_in_memory().unwrap();
        let id = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"jobs": "none"}"#, &test_provenance("x", 1)).unwrap();
        let e = s.campaign(id).unwrap().unwrap().parameters().unwrap_err();
        assert!(e.to_string().contains(&format!("campaign {id}")), "{e}");
    }
}
