//! What a real run reads from the store before it starts: each job's solo
//! time (the pairs campaign's solo repeats, else the profile, else
//! calibration) and the slowdown source the policy decides with (the chosen
//! predictor fitted on the store, else the newest pairs campaign's medians,
//! else 1). Named for its one user, a run's inputs (it was `source`, which
//! said neither whose source nor of what).

use std::collections::BTreeMap;

use cosched_model::workload::Workload;
use cosched_sched::predicted::Predicted;
use cosched_sched::{PairTable, SlowdownSource};
use cosched_store::{CampaignKind, Store};

use crate::matrix::matrix_of;
use crate::training::{available_training_set, build, with_knowledge};

/// Fewest solo repeats of a pairs campaign that make its median the solo time.
const MIN_PAIR_SOLOS: usize = 3;

/// Solo time of a job, with its timing and where it came from: the median
/// of the latest pairs campaign's solo repeats of the job (one before every
/// co-run, spread over the campaign, so tens of samples rather than the
/// profile's few back-to-back runs; cache-bound jobs alone drift by 25 %
/// between minutes on a shared host), else its latest stored profile, else
/// its calibrated work over the calibrated rate.
pub fn solo_time(
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
pub fn predicted_source(store: &Store, w: &Workload, spec: &str) -> anyhow::Result<(Box<dyn SlowdownSource>, String, String)> {
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
    let used = crate::campaigns::UsedCampaign::of(store, &c)?.describe();
    Ok((table, format!("{used}: {have} of {} cells measured, the rest 1", n * n)))
}


#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::regime::CacheRegime;
    use cosched_predict::regime::RegimeChoice;
    use cosched_store::{CampaignParams, CampaignStatus, OnlineSample, PairRunRecord, PairsJob, PairsParams};

    const TWO_JOBS: &str = "[[pools]]\nname = \"host\"\ncores = 2\n\
        [[jobs]]\nname = \"a\"\nkernel = \"stream\"\nwork = 5\n\
        [[jobs]]\nname = \"b\"\nkernel = \"compute\"\nwork = 5\n";

    /// A pairs campaign of `w` that co-ran `a` with a twin of itself only
    /// (slowdown 1.2 each side): `a` beside `b` was never co-run.
    fn a_beside_itself(store: &mut Store, w: &Workload) {
        let prov = cosched_measure::provenance::here("cosched pairs", "g", None);
        let params = CampaignParams::Pairs(PairsParams {
            jobs: vec![PairsJob { name: "a".into(), argv: vec!["true".into()], cores: 1, identity: Some("prog A".into()) }],
            stop: cosched_model::matrix::StopRule { min_repeats: 1, max_repeats: 1, rel_halfwidth: 0.05, settle: None },
            in_regime: None,
        });
        let c = store.begin_campaign_typed(&w.name, &params, &prov).unwrap();
        let r = PairRunRecord {
            fg_job: "a".into(),
            bg_job: "a".into(),
            repeat: 0,
            fg_cpus: vec![0],
            bg_cpus: vec![1],
            shared_cpus: false,
            fg_solo_s: 1.0,
            fg_corun_s: 1.2,
            bg_solo_s: 1.0,
            bg_corun_s: 1.2,
            fg_relaunches: 0,
            bg_relaunches: 0,
            fg_timing: "work-phase".into(),
            bg_timing: "work-phase".into(),
            regime: Default::default(),
            level: None,
        };
        store.add_pair_run(c, &r).unwrap();
        store.finish_campaign(c, CampaignStatus::Done).unwrap();
    }

    #[test]
    fn a_settled_online_sample_of_a_pair_never_co_run_changes_its_prediction() {
        let w = cosched_model::workload::parse_workload(TWO_JOBS, "w.toml", Some(2)).unwrap();
        let mut store = Store::open_in_memory().unwrap();
        a_beside_itself(&mut store, &w);
        // Measured where measured (a beside its twin), every other pair 1:
        // a beside b is 1 until something is learned of it.
        let spec = "measured:fallback=blind";
        let (before, _, used) = predicted_source(&store, &w, spec).unwrap();
        assert_eq!(used, spec);
        assert_eq!(before.slowdown(0, &[1]), 1.0);

        // A run of the workload saw a beside b settle at 1.6 (the only
        // other job running), in the shared-cache regime.
        let prov = cosched_measure::provenance::here("cosched run", "g", None);
        let run = store.begin_run("s", &w.name, "noplan", 0, "{}", &prov).unwrap();
        let sample = OnlineSample {
            t_s: 2.5,
            victim: "a".into(),
            beside: "b".into(),
            victim_program: w.jobs[0].program_key(),
            beside_program: w.jobs[1].program_key(),
            slowdown: 1.6,
            lo: 1.45,
            hi: Some(1.75),
            segments: 8,
            signal: "progress".into(),
            predicted: 1.0,
            regime: Some(CacheRegime::Shared.name().into()),
        };
        store.add_online_sample(run, &sample).unwrap();
        let (after, note, _) = predicted_source(&store, &w, spec).unwrap();
        assert_eq!(after.slowdown(0, &[1]), 1.6, "the online sample is the pair's one measurement");
        assert_eq!(after.slowdown(1, &[0]), 1.0, "b beside a was not observed");
        assert!(note.contains("1 settled online sample(s)"), "{note}");

        // Marked with its regime: a fit on the other regime's repeats takes
        // it only as the pair's fallback, counted as such.
        let m = store.measurements(&w.name).unwrap();
        let (train, sources) = crate::training::available_training_set_in(&m, &w, RegimeChoice::Only(CacheRegime::Apart)).unwrap();
        assert_eq!(sources.online_pairs, 1);
        let ab = train.pairs.iter().find(|p| p.victim == "a" && p.aggressor == "b").unwrap();
        assert_eq!(ab.slowdowns, vec![1.6]);
        assert_eq!(sources.regime.unwrap().fell_back, 2, "a-a and a-b have no repeat apart");
    }

    #[test]
    fn online_samples_are_read_in_the_regime_their_run_stored() {
        use crate::training::regime_named;
        assert_eq!(regime_named(Some("shared cache")), Some(CacheRegime::Shared));
        assert_eq!(regime_named(Some("caches apart")), Some(CacheRegime::Apart));
        assert_eq!(regime_named(Some("apart")), Some(CacheRegime::Apart));
        assert_eq!(regime_named(Some("both")), None);
        assert_eq!(regime_named(None), None);
    }
}
