//! The node's conditions when a campaign starts or resumes: its load
//! average and the round trip of one cache line between two of its CPUs.
//! A campaign's figures are only as good as the node was quiet, and on a
//! shared VM whether two vCPUs share a cache changes from hour to hour, so
//! both are kept beside the measurements they explain. So is the kernel's
//! transparent huge page policy: it moves memory-bound programs' times.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use cosched_model::provenance::HugePages;
use cosched_model::topology::format_cpulist;

use crate::{cpus, non_negative, positive, sql_err, CampaignId, ExecRunId, Store, StoreError};

/// One reading of the node's conditions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeConditions {
    /// Seconds since the Unix epoch.
    pub taken_unix: u64,
    /// Load average over 1, 5 and 15 minutes.
    pub load: [f64; 3],
    /// The two CPUs and their cache-line round trip in ns (median of a few
    /// measurements); `None` on a one-CPU node.
    pub c2c: Option<(Vec<u32>, f64)>,
    /// The transparent huge page policy; `None` when not read (readings
    /// stored before schema step 12, or a kernel without THP).
    #[serde(default)]
    pub huge_pages: Option<HugePages>,
}

fn check(what: &str, c: &NodeConditions) -> Result<(), StoreError> {
    for (field, v) in [("load1", c.load[0]), ("load5", c.load[1]), ("load15", c.load[2])] {
        non_negative(what, field, v)?;
    }
    if let Some((_, ns)) = &c.c2c {
        positive(what, "c2c_round_trip_ns", *ns)?;
    }
    Ok(())
}

/// What a reading belongs to: its table, the owner's column and table, and
/// the error when the owner is not stored. Only these fixed names reach SQL.
enum Owner {
    Campaign(CampaignId),
    Run(ExecRunId),
}

impl Owner {
    fn tables(&self) -> (&'static str, &'static str, &'static str, i64) {
        match self {
            Owner::Campaign(c) => ("campaign_conditions", "campaign_id", "campaigns", c.0),
            Owner::Run(r) => ("run_conditions", "run_id", "runs", r.0),
        }
    }

    fn what(&self) -> String {
        match self {
            Owner::Campaign(c) => format!("conditions of campaign {c}"),
            Owner::Run(r) => format!("conditions of run {r}"),
        }
    }

    fn missing(&self) -> StoreError {
        match self {
            Owner::Campaign(c) => StoreError::NoSuchCampaign(*c),
            Owner::Run(_) => StoreError::Invalid { what: self.what(), why: "no such run is stored".into() },
        }
    }
}

impl Store {
    /// Stores a reading of the node's conditions just before real run `run`.
    pub fn add_run_conditions(&mut self, run: ExecRunId, c: &NodeConditions) -> Result<(), StoreError> {
        self.add_reading(Owner::Run(run), c)
    }

    /// Every reading before `run`, oldest first (a resumed run has one per
    /// start).
    pub fn run_conditions(&self, run: ExecRunId) -> Result<Vec<NodeConditions>, StoreError> {
        self.readings(Owner::Run(run))
    }

    /// Stores a reading of the node's conditions for `campaign`.
    pub fn add_conditions(&mut self, campaign: CampaignId, c: &NodeConditions) -> Result<(), StoreError> {
        self.add_reading(Owner::Campaign(campaign), c)
    }

    /// Every reading of `campaign`'s conditions, oldest first (a campaign
    /// resumed later has one per start).
    pub fn conditions(&self, campaign: CampaignId) -> Result<Vec<NodeConditions>, StoreError> {
        self.readings(Owner::Campaign(campaign))
    }

    fn add_reading(&mut self, owner: Owner, c: &NodeConditions) -> Result<(), StoreError> {
        let what = owner.what();
        check(&what, c)?;
        let (table, column, owners, id) = owner.tables();
        self.write("storing node conditions", |tx| {
            let known: i64 = tx
                .query_row(&format!("SELECT count(*) FROM {owners} WHERE id = ?1"), [id], |r| r.get(0))
                .map_err(|source| sql_err(tx, &format!("reading {owners}"), source))?;
            if known == 0 {
                return Err(owner.missing());
            }
            tx.execute(
                &format!(
                    "INSERT INTO {table} ({column}, taken_unix, load1, load5, load15, c2c_cpus, c2c_round_trip_ns,
                                          thp_enabled, thp_defrag)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                ),
                params![
                    id,
                    c.taken_unix as i64,
                    c.load[0],
                    c.load[1],
                    c.load[2],
                    c.c2c.as_ref().map(|(cpus, _)| format_cpulist(cpus)),
                    c.c2c.as_ref().map(|(_, ns)| *ns),
                    c.huge_pages.as_ref().map(|h| h.enabled.as_str()),
                    c.huge_pages.as_ref().map(|h| h.defrag.as_str()),
                ],
            )
            .map_err(|source| sql_err(tx, &format!("storing {what}"), source))?;
            Ok(())
        })
    }

    fn readings(&self, owner: Owner) -> Result<Vec<NodeConditions>, StoreError> {
        let (table, column, _, id) = owner.tables();
        self.query(
            &format!(
                "SELECT taken_unix, load1, load5, load15, c2c_cpus, c2c_round_trip_ns, thp_enabled, thp_defrag
                 FROM {table} WHERE {column} = ?1 ORDER BY id"
            ),
            [id],
            "reading node conditions",
            read_row,
        )
    }
}

fn read_row(r: &rusqlite::Row) -> rusqlite::Result<NodeConditions> {
    let ns: Option<f64> = r.get(5)?;
    let c2c = match ns {
        Some(ns) => Some((cpus(r, 4)?, ns)),
        None => None,
    };
    let huge_pages = match (r.get::<_, Option<String>>(6)?, r.get::<_, Option<String>>(7)?) {
        (Some(enabled), Some(defrag)) => Some(HugePages { enabled, defrag }),
        _ => None,
    };
    Ok(NodeConditions { taken_unix: r.get::<_, i64>(0)? as u64, load: [r.get(1)?, r.get(2)?, r.get(3)?], c2c, huge_pages })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{test_provenance, CampaignKind};

    #[test]
    fn conditions_round_trip_per_campaign_and_bad_readings_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("c.db")).unwrap();
        let prov = test_provenance("cosched pairs", 1_700_000_000);
        let a = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &prov).unwrap();
        let b = s.begin_campaign(CampaignKind::Probe, "w", "{}", &prov).unwrap();
        let thp = HugePages { enabled: "madvise".into(), defrag: "defer+madvise".into() };
        let first =
            NodeConditions { taken_unix: 10, load: [1.5, 1.25, 1.0], c2c: Some((vec![0, 1], 73.0)), huge_pages: Some(thp) };
        let resumed = NodeConditions { taken_unix: 20, load: [0.1, 0.2, 0.3], c2c: None, huge_pages: None };
        s.add_conditions(a, &first).unwrap();
        s.add_conditions(a, &resumed).unwrap();
        assert_eq!(s.conditions(a).unwrap(), vec![first.clone(), resumed]);
        assert!(s.conditions(b).unwrap().is_empty());
        let bad = NodeConditions { load: [-1.0, 0.0, 0.0], ..first.clone() };
        assert!(matches!(s.add_conditions(a, &bad), Err(StoreError::Invalid { .. })));
        assert!(matches!(s.add_conditions(CampaignId(99), &first), Err(StoreError::NoSuchCampaign(_))));
        assert_eq!(s.conditions(a).unwrap().len(), 2, "nothing stored by the refused calls");
    }

    #[test]
    fn run_conditions_round_trip_per_run_and_bad_readings_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("c.db")).unwrap();
        let prov = test_provenance("cosched run", 1_700_000_000);
        let pass = s.begin_run("s", "w", "solo-pass", 0, "{}", &prov).unwrap();
        let run = s.begin_run("s", "w", "noplan", 0, "{}", &prov).unwrap();
        let thp = Some(HugePages { enabled: "never".into(), defrag: "never".into() });
        let shared =
            NodeConditions { taken_unix: 10, load: [0.5, 0.4, 0.3], c2c: Some((vec![0, 1], 55.0)), huge_pages: thp.clone() };
        let apart = NodeConditions { taken_unix: 30, load: [0.5, 0.4, 0.3], c2c: Some((vec![0, 1], 370.0)), huge_pages: thp };
        s.add_run_conditions(pass, &shared).unwrap();
        s.add_run_conditions(run, &apart).unwrap();
        assert_eq!(s.run_conditions(pass).unwrap(), vec![shared.clone()]);
        assert_eq!(s.run_conditions(run).unwrap(), vec![apart]);
        let bad = NodeConditions { c2c: Some((vec![0, 1], 0.0)), ..shared.clone() };
        assert!(matches!(s.add_run_conditions(run, &bad), Err(StoreError::Invalid { .. })));
        assert!(matches!(s.add_run_conditions(ExecRunId(99), &shared), Err(StoreError::Invalid { .. })));
        assert_eq!(s.run_conditions(run).unwrap().len(), 1, "nothing stored by the refused calls");
    }
}
