//! Where a real run's figures come from: each job's solo time (the pairs
//! campaign's solo repeats, else the profile, else calibration) and the
//! slowdown source the policy decides with (the chosen predictor fitted on
//! the store, else the newest pairs campaign's medians, else 1).

use std::collections::BTreeMap;

use cosched_model::workload::Workload;
use cosched_sched::predicted::Predicted;
use cosched_sched::{PairTable, SlowdownSource};
use cosched_store::{CampaignKind, Store};

use crate::pairs::matrix_of;
use crate::training::{available_training_set, build, with_knowledge};

/// Fewest solo repeats of a pairs campaign that make its median the solo time.
const MIN_PAIR_SOLOS: usize = 3;

/// Solo time of a job, with its timing and where it came from: the median
/// of the latest pairs campaign's solo repeats of the job (one before every
/// co-run, spread over the campaign, so tens of samples rather than the
/// profile's few back-to-back runs; cache-bound jobs alone drift by 25 %
/// between minutes on a shared host), else its latest stored profile, else
/// its calibrated work over the calibrated rate.
pub(crate) fn solo_time(
    store: &Store,
    m: &cosched_store::Measurements,
    w: &Workload,
    i: usize,
    cals: &BTreeMap<String, cosched_model::calibration::Calibration>,
) -> anyhow::Result<Option<(f64, String, String, usize)>> {
    let job = &w.jobs[i];
    if let Some((campaign, runs)) = &m.pairs {
        let mut times = Vec::new();
        let mut timing = String::new();
        for r in runs {
            for (name, t, how) in [(&r.fg_job, r.fg_solo_s, &r.fg_timing), (&r.bg_job, r.bg_solo_s, &r.bg_timing)] {
                if *name == job.name && t.is_finite() && t > 0.0 {
                    times.push(t);
                    timing = how.clone();
                }
            }
        }
        if times.len() >= MIN_PAIR_SOLOS {
            let n = times.len();
            return Ok(Some((cosched_model::stats::median(&times), timing, format!("pairs campaign {}", campaign.id.0), n)));
        }
    }
    if let Some((campaign, p)) = store.latest_job_profile(&job.program_key())? {
        let prof = p.summary;
        return Ok(Some((prof.solo_s.median, prof.timing, format!("profile campaign {}", campaign.0), prof.solo_s.n)));
    }
    if let (Some(key), Ok(Some(work))) =
        (cosched_model::calibration::job_key(job), cosched_model::calibration::resolve_work(job, cals))
    {
        if let Some(c) = cals.get(&key) {
            if c.rate.median > 0.0 {
                return Ok(Some((work as f64 / c.rate.median, "work-phase".into(), "calibration".into(), c.rate.n)));
            }
        }
    }
    Ok(None)
}

/// The slowdown source: the chosen predictor fitted on everything the store
/// holds for the workload (real runs included); when it cannot be fitted,
/// the medians of the newest pairs campaign.
/// Also returns the source's name as runs record it: the predictor spec, or
/// `pairs-table` when the fallback decided.
pub(crate) fn predicted_source(store: &Store, w: &Workload, spec: &str) -> anyhow::Result<(Box<dyn SlowdownSource>, String, String)> {
    let mut predictor = build(spec)?;
    let m = store.measurements(&w.name)?;
    let (train, sources) = available_training_set(&m, w)?;
    let (train, sources) = with_knowledge(store, w, train, sources)?;
    let fitted = if train.pairs.is_empty() {
        Err("no measured pairs of the workload".to_string())
    } else {
        predictor.fit(&train).map_err(|e| e.to_string())
    };
    match fitted {
        Ok(()) => {
            let jobs: Vec<_> = w.jobs.iter().map(|j| train.programs[&j.name].clone()).collect();
            let note = format!("predictor {spec} fitted on {} ordered pairs of `{}`: {}", train.pairs.len(), w.name, sources.describe());
            Ok((Box::new(Predicted::new(predictor, jobs)), note, spec.to_string()))
        }
        Err(why) => {
            let (table, note) = slowdown_source(store, w)?;
            Ok((Box::new(table), format!("predictor {spec} could not be fitted ({why}); {note}"), PAIRS_TABLE.to_string()))
        }
    }
}

/// The name runs record when the newest pairs campaign's medians decided.
pub const PAIRS_TABLE: &str = "pairs-table";

/// The slowdown source: medians of the workload's newest pairs campaign.
fn slowdown_source(store: &Store, w: &Workload) -> anyhow::Result<(PairTable, String)> {
    let n = w.jobs.len();
    let campaign = store.figures_campaign(CampaignKind::Pairs, &w.name)?;
    let Some(c) = campaign else {
        return Ok((
            PairTable::new(vec![vec![1.0; n]; n]).expect("ones are valid"),
            format!("no pairs campaign of `{}` stored: every predicted slowdown is 1 (run `cosched pairs --workload FILE` first)", w.name),
        ));
    };
    let m = matrix_of(w, &store.pair_runs(c.id)?);
    let mut cells = vec![vec![1.0; n]; n];
    let mut have = 0;
    for (i, row) in cells.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            if let Some(s) = m.get(i, j) {
                *cell = s.median.max(1e-6);
                have += 1;
            }
        }
    }
    let table = PairTable::new(cells).map_err(anyhow::Error::msg)?;
    let used = crate::common::UsedCampaign::of(store, &c)?.describe();
    Ok((table, format!("{used}: {have} of {} cells measured, the rest 1", n * n)))
}

