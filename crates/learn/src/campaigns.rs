//! The campaigns a figure was read from, as every verb names them: figures
//! change with the node's conditions and with a campaign's completeness,
//! so a reader needs both to trust them. A campaign's repeats keep their
//! cache-line readings, converted here between measure's and the store's
//! forms.

use cosched_measure::c2c::Reading;
use cosched_store::RepeatRegime;

/// The node's conditions at a campaign's start or resume: its load average
/// and the cache-line round trip between two CPUs, as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Conditions {
    /// Seconds since the Unix epoch.
    pub taken_unix: u64,
    /// Load average over 1, 5 and 15 minutes.
    pub load: [f64; 3],
    /// The two CPUs and their round trip in ns; `None` on a one-CPU node.
    pub c2c: Option<(Vec<u32>, f64)>,
    /// The transparent huge page policy, when read.
    pub huge_pages: Option<cosched_model::provenance::HugePages>,
}

impl From<&cosched_store::NodeConditions> for Conditions {
    fn from(c: &cosched_store::NodeConditions) -> Self {
        Conditions { taken_unix: c.taken_unix, load: c.load, c2c: c.c2c.clone(), huge_pages: c.huge_pages.clone() }
    }
}

impl Conditions {
    /// `load 1.36 1.53 1.54, CPU 0-1 round trip 73 ns, THP madvise (defrag madvise)`.
    pub fn describe(&self) -> String {
        let mut s = format!("load {:.2} {:.2} {:.2}", self.load[0], self.load[1], self.load[2]);
        if let Some((cpus, ns)) = &self.c2c {
            s.push_str(&format!(", CPU {} round trip {ns:.0} ns", cosched_model::topology::format_cpulist(cpus)));
        }
        if let Some(h) = &self.huge_pages {
            s.push_str(&format!(", {}", h.describe()));
        }
        s
    }
}

/// A campaign whose stored figures a verb used, as its output names it:
/// figures change with the node's conditions and with a campaign's
/// completeness, so a reader needs both to trust them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UsedCampaign {
    pub kind: String,
    pub id: i64,
    pub workload: String,
    pub status: String,
    pub started_unix: u64,
    /// The node at the campaign's start (its first reading), when stored.
    pub node: Option<Conditions>,
}

impl UsedCampaign {
    pub fn of(store: &cosched_store::Store, c: &cosched_store::CampaignRecord) -> anyhow::Result<UsedCampaign> {
        Ok(UsedCampaign {
            kind: c.kind.to_string(),
            id: c.id.0,
            workload: c.workload.clone(),
            status: c.status.to_string(),
            started_unix: c.started_unix,
            node: store.conditions(c.id)?.first().map(Conditions::from),
        })
    }

    /// `pairs campaign 3 of `w` (done, started 2024-05-01 12:00:00 UTC; node
    /// at start: load 1.36 1.53 1.54, CPU 0-1 round trip 73 ns)`.
    pub fn describe(&self) -> String {
        let node = self.node.as_ref().map_or("node conditions not recorded".to_string(), |n| format!("node at start: {}", n.describe()));
        format!(
            "{} campaign {} of `{}` ({}, started {} UTC; {node})",
            self.kind,
            self.id,
            self.workload,
            self.status,
            cosched_store::format_unix_utc(self.started_unix)
        )
    }
}

/// A stored repeat's readings as the campaign took them.
pub fn reading_of(g: &RepeatRegime) -> Option<Reading> {
    match g.cpus[..] {
        [a, b] => Some(Reading { cpus: [a, b], before_ns: g.before_ns, after_ns: g.after_ns }),
        _ => None,
    }
}

/// A repeat's readings as the store keeps them.
pub fn regime_of(r: Option<&Reading>) -> RepeatRegime {
    r.map_or_else(RepeatRegime::default, |r| RepeatRegime { cpus: r.cpus.to_vec(), before_ns: r.before_ns, after_ns: r.after_ns })
}

