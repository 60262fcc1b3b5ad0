//! What predictors learn from, and what their evaluations found.
//!
//! [`Store::measurements`] gathers a workload's stored characterization
//! and pairs: each job's profile and probe from the latest finished
//! campaign that holds it, and the pair runs of the
//! [figures campaign](Store::figures_campaign) of kind pairs. It returns
//! records as stored; turning them into a training set (medians, classes)
//! is the predictor crate's work.
//!
//! # Which campaign a workload's figures come from
//!
//! Among the campaigns of one kind over a workload that hold runs (or, for
//! a profile campaign, profiles), the newest `done` one; when none is done,
//! the newest one, whatever its status (an interrupted campaign's stored
//! repeats are whole, it just lacks some). [`Store::figures_campaign`] is that rule, and every reader
//! of workload-wide figures (`Store::measurements`, `simulate`'s measured
//! cells, the slowdown source of `cosched run`) asks it, so they agree.
//! A done campaign wins over a newer interrupted one because a matrix with
//! missing cells is a worse figure than an older whole one; the reader
//! shows the chosen campaign's status so the fallback is visible. Profiles
//! and probes are one job's whole figure each, taken per job from the
//! newest done campaign holding it: part of a probe curve can miss the side
//! of the LLC that decides the class.
//!
//! Real runs feed the next fit too (the learning loop): a job of a
//! `cosched run` that ran its whole time beside one co-runner that did not
//! change is a measured pair sample, its slowdown the one the run recorded
//! (work-phase time over the stored solo time the run used); and a
//! running pair's settled online estimate (`online_samples`) is returned
//! as stored, for `cosched-learn` to read as a sample of its regime.

use std::collections::BTreeMap;

use rusqlite::params;
use serde::{Deserialize, Serialize};

use cosched_model::regime::{CacheRegime, SHARED_CACHE_MAX_NS};
use cosched_model::provenance::Provenance;

use crate::{
    campaign_from_row, json_col, non_negative, nonempty, provenance_from_row, provenance_id, sql_err, CampaignKind,
    CampaignRecord, CampaignStatus, ExecRunId, OnlineSample, PairRunRecord, ProbePointRecord, ProfileRecord, Store, StoreError,
    CAMPAIGN_SELECT, PROV_COLS,
};

/// A workload's stored measurements, by the campaigns they come from.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Measurements {
    /// Each job's profile, from the latest `done` profile campaign holding it.
    pub profiles: Vec<(CampaignRecord, ProfileRecord)>,
    /// Each probed job's points, level by level from the latest `done`
    /// probe campaign that measured the level: one entry per campaign and
    /// job that still holds a level of its own, newest first (so a job
    /// probed again at one level keeps its other levels). The campaign's
    /// parameters record the LLC size. Under a regime
    /// ([`Store::measurements_in`]), each level from the newest campaign
    /// with points in it, and only those points.
    pub probes: Vec<(CampaignRecord, String, Vec<ProbePointRecord>)>,
    /// The pairs figures campaign ([`Store::figures_campaign`]) and its runs.
    pub pairs: Option<(CampaignRecord, Vec<PairRunRecord>)>,
    /// Pair samples from real runs of the workload, oldest run first.
    pub run_pairs: Vec<RunPairSample>,
    /// The settled online estimates of running pairs in real runs of the
    /// workload ([`Store::workload_online_samples`]), oldest run first.
    pub online_pairs: Vec<(ExecRunId, OnlineSample)>,
}

/// A job of a real run that ran, from its start to its end, beside exactly
/// one other job attempt that started no later and ended no earlier.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPairSample {
    pub run: ExecRunId,
    /// The victim's job name and attempt.
    pub victim: String,
    pub attempt: u32,
    pub co_runner: String,
    /// As recorded by the run: work-phase (or wall) time over `solo_s`.
    pub slowdown: f64,
    pub solo_s: f64,
}

/// Jobs started in one decision round begin milliseconds apart; a victim
/// alone for less than this at either end still counts as beside its
/// co-runner the whole time.
pub const RUN_PAIR_SLACK_S: f64 = 0.05;

/// A predictor's accuracy on a workload's measured pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationRecord {
    pub workload: String,
    /// The predictor as specified (`twins:base=scn`).
    pub predictor: String,
    /// The fold method (`leave-one-program-out`).
    pub folds: String,
    /// Severe-conflict level of precision and recall.
    pub level: f64,
    pub n: u32,
    pub within_5: f64,
    pub within_30: f64,
    pub mae: f64,
    pub pearson: Option<f64>,
    pub spearman: Option<f64>,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    /// The best severe recall any cut on the predictions reaches at
    /// precision >= 0.7, and that cut (`None`: nothing severe, or no cut
    /// keeps the precision).
    #[serde(default)]
    pub recall_at_precision: Option<f64>,
    #[serde(default)]
    pub at_precision_cut: Option<f64>,
    /// Cross-workload: the cut set on the training programs alone, and the
    /// precision and recall it gives on the tested pairs.
    #[serde(default)]
    pub trained_cut: Option<f64>,
    #[serde(default)]
    pub trained_cut_precision: Option<f64>,
    #[serde(default)]
    pub trained_cut_recall: Option<f64>,
    /// Campaign ids used, e.g. `{"pairs": 7, "probe": [3, 4], "profile": [2]}`.
    pub sources: serde_json::Value,
    /// Every prediction behind the figures.
    pub predictions: serde_json::Value,
}

impl Store {
    /// The campaign `workload`'s figures of `kind` come from: among its
    /// campaigns of that kind holding runs (or profiles), the newest `done`
    /// one, else the newest one (see the module documentation).
    pub fn figures_campaign(&self, kind: CampaignKind, workload: &str) -> Result<Option<CampaignRecord>, StoreError> {
        let sql = format!(
            "{CAMPAIGN_SELECT} WHERE c.kind = ?1 AND c.workload = ?2
             AND EXISTS (SELECT 1 FROM pair_runs WHERE campaign_id = c.id
                         UNION ALL SELECT 1 FROM solo_runs WHERE campaign_id = c.id
                         UNION ALL SELECT 1 FROM probe_points WHERE campaign_id = c.id
                         UNION ALL SELECT 1 FROM profiles WHERE campaign_id = c.id)
             ORDER BY c.id DESC"
        );
        let with_runs = self.query(&sql, params![kind.as_str(), workload], "reading campaigns", campaign_from_row)?;
        let done = with_runs.iter().position(|c| c.status == CampaignStatus::Done);
        Ok(with_runs.into_iter().nth(done.unwrap_or(0)))
    }

    /// [`Store::figures_campaign`] for the pairs of one cache regime: among
    /// `workload`'s pairs campaigns with a repeat wholly in `regime` (both
    /// round trips on its side of `SHARED_CACHE_MAX_NS`, or the one read),
    /// the newest `done` one, else the newest; with none, or no regime,
    /// the regime-blind choice. A workload measured in both regimes has a
    /// campaign for each, and the newest is not the one to read the other
    /// regime from.
    pub fn pairs_campaign_in(&self, workload: &str, regime: Option<CacheRegime>) -> Result<Option<CampaignRecord>, StoreError> {
        let Some(g) = regime else { return self.figures_campaign(CampaignKind::Pairs, workload) };
        let side = if g == CacheRegime::Shared { "<" } else { ">=" };
        let sql = format!(
            "{CAMPAIGN_SELECT} WHERE c.kind = 'pairs' AND c.workload = ?1
             AND EXISTS (SELECT 1 FROM pair_runs r WHERE r.campaign_id = c.id
                         AND COALESCE(r.c2c_before_ns, r.c2c_after_ns) {side} ?2
                         AND COALESCE(r.c2c_after_ns, r.c2c_before_ns) {side} ?2)
             ORDER BY c.id DESC"
        );
        let with_runs = self.query(&sql, params![workload, SHARED_CACHE_MAX_NS], "reading campaigns", campaign_from_row)?;
        if with_runs.is_empty() {
            return self.figures_campaign(CampaignKind::Pairs, workload);
        }
        let done = with_runs.iter().position(|c| c.status == CampaignStatus::Done);
        Ok(with_runs.into_iter().nth(done.unwrap_or(0)))
    }

    /// The latest measurements of `workload` (see [`Measurements`]).
    pub fn measurements(&self, workload: &str) -> Result<Measurements, StoreError> {
        self.measurements_in(workload, None)
    }

    /// [`Store::measurements`] with the pairs of one cache regime's
    /// campaign ([`Store::pairs_campaign_in`]) and the probe levels
    /// measured in it ([`Store::probe_curves_in`]).
    pub fn measurements_in(&self, workload: &str, regime: Option<CacheRegime>) -> Result<Measurements, StoreError> {
        let mut m = Measurements::default();
        let newest_first = self.campaigns()?.into_iter().rev();
        for c in newest_first.filter(|c| c.workload == workload && c.kind == CampaignKind::Profile && c.status == CampaignStatus::Done) {
            for p in self.profiles(c.id)? {
                if !m.profiles.iter().any(|(_, q)| q.job == p.job) {
                    m.profiles.push((c.clone(), p));
                }
            }
        }
        if let Some(c) = self.pairs_campaign_in(workload, regime)? {
            let runs = self.pair_runs(c.id)?;
            m.pairs = Some((c, runs));
        }
        m.profiles.sort_by(|a, b| a.1.job.cmp(&b.1.job));
        m.probes = self.probe_curves_in(workload, regime)?;
        m.run_pairs = self.run_pair_samples(workload)?;
        m.online_pairs = self.workload_online_samples(workload)?;
        Ok(m)
    }

    /// Each probed job's curve of `workload`, level by level from the
    /// latest `done` probe campaign that measured the level: one entry per
    /// campaign and job that still holds a level of its own, by job and
    /// newest first within a job (see [`Measurements::probes`]).
    pub fn probe_curves(&self, workload: &str) -> Result<Vec<(CampaignRecord, String, Vec<ProbePointRecord>)>, StoreError> {
        self.probe_curves_in(workload, None)
    }

    /// [`Store::probe_curves`] for one cache regime: each level from the
    /// newest `done` campaign with a repeat of the level wholly in
    /// `regime`, and of it only those repeats; a level never probed in the
    /// regime from the newest campaign, all its repeats (as the knowledge
    /// base chooses). A level's newest points are often the other regime's
    /// (a node gives the regimes in turns), and a curve read across them
    /// mixes two machines.
    pub fn probe_curves_in(
        &self,
        workload: &str,
        regime: Option<CacheRegime>,
    ) -> Result<Vec<(CampaignRecord, String, Vec<ProbePointRecord>)>, StoreError> {
        type Level = (String, u64, u64);
        let level = |p: &ProbePointRecord| (p.stressor.clone(), p.working_set_kib, p.intensity.to_bits());
        let in_regime = |p: &ProbePointRecord| regime.is_none_or(|g| p.regime.regime() == Some(g));
        // Per (job, level): the chosen campaign's rank (repeats in the
        // regime, then newer) and its points.
        type Chosen = ((bool, i64), CampaignRecord, Vec<ProbePointRecord>);
        let mut chosen: BTreeMap<(String, Level), Chosen> = BTreeMap::new();
        for c in self.campaigns()?.into_iter().filter(|c| c.workload == workload && c.kind == CampaignKind::Probe && c.status == CampaignStatus::Done) {
            let mut by_level: BTreeMap<(String, Level), Vec<ProbePointRecord>> = BTreeMap::new();
            for p in self.probe_points(c.id)? {
                by_level.entry((p.job.clone(), level(&p))).or_default().push(p);
            }
            for (key, at) in by_level {
                let in_it: Vec<ProbePointRecord> = at.iter().filter(|p| in_regime(p)).cloned().collect();
                let rank = (!in_it.is_empty(), c.id.0);
                if chosen.get(&key).is_none_or(|(best, _, _)| rank > *best) {
                    chosen.insert(key, (rank, c.clone(), if in_it.is_empty() { at } else { in_it }));
                }
            }
        }
        // Regrouped per job and campaign, newest campaign first.
        let mut out: Vec<(CampaignRecord, String, Vec<ProbePointRecord>)> = Vec::new();
        for ((job, _), (_, c, points)) in chosen {
            match out.iter_mut().find(|(d, j, _)| d.id == c.id && *j == job) {
                Some((_, _, ps)) => ps.extend(points),
                None => out.push((c, job, points)),
            }
        }
        out.sort_by(|a, b| a.1.cmp(&b.1).then(b.0.id.0.cmp(&a.0.id.0)));
        Ok(out)
    }

    /// The pair samples of every real run of `workload` (see [`RunPairSample`]):
    /// the victim's attempt ended `ok` with a recorded slowdown, and the only
    /// other attempt overlapping it covers it (within [`RUN_PAIR_SLACK_S`]).
    /// An attempt without an end (its runner died) overlaps everything after
    /// its start.
    pub fn run_pair_samples(&self, workload: &str) -> Result<Vec<RunPairSample>, StoreError> {
        let mut out = Vec::new();
        for run in self.runs()?.into_iter().filter(|r| r.workload == workload) {
            let jobs = self.run_jobs(run.id)?;
            for v in &jobs {
                let Some(e) = &v.end else { continue };
                let (Some(slowdown), Some(solo_s)) = (e.slowdown, v.start.solo_s) else { continue };
                if !e.status.is_ok() {
                    continue;
                }
                let (vs, ve) = (v.start.start_s, e.end_s);
                let mut overlapping = jobs.iter().filter(|o| {
                    let os = o.start.start_s;
                    let oe = o.end.as_ref().map_or(f64::INFINITY, |x| x.end_s);
                    !std::ptr::eq(*o, v) && os < ve - RUN_PAIR_SLACK_S && oe > vs + RUN_PAIR_SLACK_S
                });
                let (Some(o), None) = (overlapping.next(), overlapping.next()) else { continue };
                let oe = o.end.as_ref().map_or(f64::INFINITY, |x| x.end_s);
                if o.start.start_s <= vs + RUN_PAIR_SLACK_S && oe >= ve - RUN_PAIR_SLACK_S && o.start.job_index != v.start.job_index {
                    out.push(RunPairSample {
                        run: run.id,
                        victim: v.start.job.clone(),
                        attempt: v.start.attempt,
                        co_runner: o.start.job.clone(),
                        slowdown,
                        solo_s,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Stores evaluations, all or none, with the provenance of the run
    /// that computed them.
    pub fn add_evaluations(&mut self, evals: &[EvaluationRecord], provenance: &Provenance) -> Result<(), StoreError> {
        for e in evals {
            let what = format!("evaluation of {} on {}", e.predictor, e.workload);
            nonempty(&what, "workload", &e.workload)?;
            nonempty(&what, "predictor", &e.predictor)?;
            nonempty(&what, "folds", &e.folds)?;
            for (name, v) in [("level", e.level), ("within_5", e.within_5), ("within_30", e.within_30), ("mae", e.mae)] {
                non_negative(&what, name, v)?;
            }
            for (name, v) in [
                ("pearson", e.pearson),
                ("spearman", e.spearman),
                ("precision", e.precision),
                ("recall", e.recall),
                ("recall_at_precision", e.recall_at_precision),
                ("at_precision_cut", e.at_precision_cut),
                ("trained_cut", e.trained_cut),
                ("trained_cut_precision", e.trained_cut_precision),
                ("trained_cut_recall", e.trained_cut_recall),
            ] {
                if let Some(v) = v.filter(|v| !v.is_finite()) {
                    return Err(StoreError::Invalid { what, why: format!("{name} = {v} is not finite") });
                }
            }
        }
        self.write("storing predictor evaluations", |tx| {
            let err = |source| sql_err(tx, "storing predictor evaluations", source);
            let prov = provenance_id(tx, provenance).map_err(err)?;
            for e in evals {
                tx.execute(
                    "INSERT INTO predictor_evaluations (provenance_id, workload, predictor, folds, level, n, within_5,
                        within_30, mae, pearson, spearman, severe_precision, severe_recall, sources_json, predictions_json,
                        recall_at_precision, at_precision_cut, trained_cut, trained_cut_precision, trained_cut_recall)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                    params![
                        prov,
                        e.workload,
                        e.predictor,
                        e.folds,
                        e.level,
                        e.n,
                        e.within_5,
                        e.within_30,
                        e.mae,
                        e.pearson,
                        e.spearman,
                        e.precision,
                        e.recall,
                        e.sources.to_string(),
                        e.predictions.to_string(),
                        e.recall_at_precision,
                        e.at_precision_cut,
                        e.trained_cut,
                        e.trained_cut_precision,
                        e.trained_cut_recall,
                    ],
                )
                .map_err(err)?;
            }
            Ok(())
        })
    }

    /// Stored evaluations of `workload` (every workload for `None`), oldest first.
    pub fn evaluations(&self, workload: Option<&str>) -> Result<Vec<(EvaluationRecord, Provenance)>, StoreError> {
        let sql = format!(
            "SELECT e.workload, e.predictor, e.folds, e.level, e.n, e.within_5, e.within_30, e.mae, e.pearson,
                    e.spearman, e.severe_precision, e.severe_recall, e.sources_json, e.predictions_json,
                    e.recall_at_precision, e.at_precision_cut, e.trained_cut, e.trained_cut_precision, e.trained_cut_recall,
                    {PROV_COLS}
             FROM predictor_evaluations e JOIN provenance p ON p.id = e.provenance_id
             WHERE ?1 IS NULL OR e.workload = ?1 ORDER BY e.id"
        );
        self.query(&sql, [workload], "reading predictor evaluations", |r| {
            Ok((
                EvaluationRecord {
                    workload: r.get(0)?,
                    predictor: r.get(1)?,
                    folds: r.get(2)?,
                    level: r.get(3)?,
                    n: r.get(4)?,
                    within_5: r.get(5)?,
                    within_30: r.get(6)?,
                    mae: r.get(7)?,
                    pearson: r.get(8)?,
                    spearman: r.get(9)?,
                    precision: r.get(10)?,
                    recall: r.get(11)?,
                    sources: json_col(r, 12)?,
                    predictions: json_col(r, 13)?,
                    recall_at_precision: r.get(14)?,
                    at_precision_cut: r.get(15)?,
                    trained_cut: r.get(16)?,
                    trained_cut_precision: r.get(17)?,
                    trained_cut_recall: r.get(18)?,
                },
                provenance_from_row(r, 19)?,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CampaignId;

    fn prov() -> Provenance {
        crate::test_provenance("cosched evaluate-predictors --workload w.toml", 5)
    }

    fn eval(predictor: &str) -> EvaluationRecord {
        EvaluationRecord {
            workload: "w".into(),
            predictor: predictor.into(),
            folds: "leave-one-program-out".into(),
            level: 1.3,
            n: 2,
            within_5: 0.5,
            within_30: 1.0,
            mae: 0.04,
            pearson: Some(0.9),
            spearman: None,
            precision: None,
            recall: Some(1.0),
            recall_at_precision: Some(1.0),
            at_precision_cut: Some(1.25),
            trained_cut: None,
            trained_cut_precision: None,
            trained_cut_recall: None,
            sources: serde_json::json!({"pairs": 1}),
            predictions: serde_json::json!([{"victim": "a", "aggressor": "b", "measured": 1.2, "predicted": 1.1}]),
        }
    }

    #[test]
    fn evaluations_round_trip_with_provenance_and_bad_ones_write_nothing() {
        let mut s = Store::open_in_memory().unwrap();
        s.add_evaluations(&[eval("scn"), eval("c-all")], &prov()).unwrap();
        let mut bad = eval("probe");
        bad.pearson = Some(f64::NAN);
        assert!(matches!(s.add_evaluations(&[eval("learned"), bad], &prov()), Err(StoreError::Invalid { .. })));
        let got = s.evaluations(Some("w")).unwrap();
        assert_eq!(got.len(), 2, "the batch with a bad record stored nothing");
        assert_eq!(got[0].0, eval("scn"));
        assert_eq!(got[1].1, prov());
        assert!(s.evaluations(Some("other")).unwrap().is_empty());
    }

    #[test]
    fn measurements_take_the_latest_finished_characterization_and_the_latest_pairs() {
        let mut s = Store::open_in_memory().unwrap();
        let p = prov();
        let old = s.begin_campaign(CampaignKind::Profile, "w", r#"{"n":1}"#, &p).unwrap();
        let profile =
            |v: f64| ProfileRecord { job: "a".into(), program: "A".into(), summary: crate::test_profile(v, 0.5) };
        s.put_profile(old, &profile(1.0)).unwrap();
        s.finish_campaign(old, CampaignStatus::Done).unwrap();
        let new = s.begin_campaign(CampaignKind::Profile, "w", r#"{"n":2}"#, &p).unwrap();
        s.put_profile(new, &profile(2.0)).unwrap();
        s.finish_campaign(new, CampaignStatus::Done).unwrap();
        let partial = s.begin_campaign(CampaignKind::Profile, "w", r#"{"n":3}"#, &p).unwrap();
        s.put_profile(partial, &profile(3.0)).unwrap();
        let pairs = s.begin_campaign(CampaignKind::Pairs, "w", "{}", &p).unwrap();
        let run = PairRunRecord {
            fg_job: "a".into(),
            bg_job: "a".into(),
            repeat: 0,
            fg_cpus: vec![0],
            bg_cpus: vec![1],
            shared_cpus: false,
            fg_solo_s: 1.0,
            fg_corun_s: 1.5,
            bg_solo_s: 1.0,
            bg_corun_s: 1.4,
            fg_relaunches: 0,
            bg_relaunches: 0,
            fg_timing: "process".into(),
            bg_timing: "process".into(),
            regime: Default::default(),
            level: None,
        };
        s.add_pair_run(pairs, &run).unwrap();
        let m = s.measurements("w").unwrap();
        assert_eq!(m.profiles.len(), 1);
        assert_eq!(m.profiles[0].1.summary.solo_s.median, 2.0, "the latest done campaign, not the unfinished one");
        let (c, runs) = m.pairs.unwrap();
        assert_eq!((c.id, runs.len()), (pairs, 1), "a running pairs campaign's whole repeats count");
        assert!(s.measurements("other").unwrap().pairs.is_none());
    }

    /// Job `a` beside DistGen at `size` KiB, its solo time 1 s.
    fn probe_point(size: u64, repeat: u32, corun: f64, regime: crate::RepeatRegime) -> ProbePointRecord {
        ProbePointRecord {
            job: "a".into(),
            stressor: "distgen".into(),
            working_set_kib: size,
            intensity: 1.0,
            repeat,
            job_solo_s: 1.0,
            job_corun_s: corun,
            stressor_solo_s: 1.0,
            stressor_corun_s: 1.0,
            regime,
        }
    }

    #[test]
    fn a_level_probed_again_replaces_just_that_level() {
        let mut s = Store::open_in_memory().unwrap();
        let p = prov();
        let point = |size: u64, repeat: u32, corun: f64| probe_point(size, repeat, corun, Default::default());
        let full = s.begin_campaign(CampaignKind::Probe, "w", r#"{"n":1}"#, &p).unwrap();
        for (size, corun) in [(512, 1.0), (65536, 1.5)] {
            s.add_probe_point(full, &point(size, 0, corun)).unwrap();
        }
        s.finish_campaign(full, CampaignStatus::Done).unwrap();
        let again = s.begin_campaign(CampaignKind::Probe, "w", r#"{"n":2}"#, &p).unwrap();
        s.add_probe_point(again, &point(512, 0, 1.2)).unwrap();
        s.finish_campaign(again, CampaignStatus::Done).unwrap();
        let unfinished = s.begin_campaign(CampaignKind::Probe, "w", r#"{"n":3}"#, &p).unwrap();
        s.add_probe_point(unfinished, &point(65536, 0, 9.0)).unwrap();
        let m = s.measurements("w").unwrap();
        let got: Vec<(CampaignId, Vec<(u64, f64)>)> = m
            .probes
            .iter()
            .map(|(c, _, ps)| (c.id, ps.iter().map(|p| (p.working_set_kib, p.job_corun_s)).collect()))
            .collect();
        assert_eq!(got, vec![(again, vec![(512, 1.2)]), (full, vec![(65536, 1.5)])], "newest first, each level once");
    }

    #[test]
    fn under_a_regime_each_probe_level_comes_from_the_newest_campaign_with_points_in_it() {
        let mut s = Store::open_in_memory().unwrap();
        let p = prov();
        let point = |size: u64, repeat: u32, corun: f64, ns: f64| {
            probe_point(size, repeat, corun, crate::RepeatRegime { cpus: vec![0, 1], before_ns: Some(ns), after_ns: Some(ns) })
        };
        // Shared at both levels; then 512 KiB again, one repeat in each
        // regime; then 64 MiB again, apart only.
        let first = s.begin_campaign(CampaignKind::Probe, "w", r#"{"n":1}"#, &p).unwrap();
        s.add_probe_point(first, &point(512, 0, 1.1, 50.0)).unwrap();
        s.add_probe_point(first, &point(65536, 0, 1.6, 50.0)).unwrap();
        s.finish_campaign(first, CampaignStatus::Done).unwrap();
        let mixed = s.begin_campaign(CampaignKind::Probe, "w", r#"{"n":2}"#, &p).unwrap();
        s.add_probe_point(mixed, &point(512, 0, 1.2, 50.0)).unwrap();
        s.add_probe_point(mixed, &point(512, 1, 1.3, 400.0)).unwrap();
        s.finish_campaign(mixed, CampaignStatus::Done).unwrap();
        let apart = s.begin_campaign(CampaignKind::Probe, "w", r#"{"n":3}"#, &p).unwrap();
        s.add_probe_point(apart, &point(65536, 0, 1.1, 400.0)).unwrap();
        s.finish_campaign(apart, CampaignStatus::Done).unwrap();
        let curve = |g| -> Vec<(CampaignId, Vec<(u64, f64)>)> {
            s.probe_curves_in("w", g)
                .unwrap()
                .iter()
                .map(|(c, _, ps)| (c.id, ps.iter().map(|p| (p.working_set_kib, p.job_corun_s)).collect()))
                .collect()
        };
        assert_eq!(curve(None), vec![(apart, vec![(65536, 1.1)]), (mixed, vec![(512, 1.2), (512, 1.3)])], "every regime: the newest");
        assert_eq!(
            curve(Some(CacheRegime::Shared)),
            vec![(mixed, vec![(512, 1.2)]), (first, vec![(65536, 1.6)])],
            "shared: the newest with shared points, and only those"
        );
        assert_eq!(curve(Some(CacheRegime::Apart)), vec![(apart, vec![(65536, 1.1)]), (mixed, vec![(512, 1.3)])]);
        // measurements_in reads the same.
        let m = s.measurements_in("w", Some(CacheRegime::Shared)).unwrap();
        assert_eq!(m.probes.iter().map(|(c, _, _)| c.id).collect::<Vec<_>>(), vec![mixed, first]);
    }

    #[test]
    fn figures_come_from_the_newest_done_campaign_with_runs_else_the_newest_with_runs() {
        let mut s = Store::open_in_memory().unwrap();
        let p = prov();
        let run = |repeat: u32| PairRunRecord {
            fg_job: "a".into(),
            bg_job: "b".into(),
            repeat,
            fg_cpus: vec![0],
            bg_cpus: vec![1],
            shared_cpus: false,
            fg_solo_s: 1.0,
            fg_corun_s: 1.5,
            bg_solo_s: 1.0,
            bg_corun_s: 1.2,
            fg_relaunches: 0,
            bg_relaunches: 0,
            fg_timing: "process".into(),
            bg_timing: "process".into(),
            regime: Default::default(),
            level: None,
        };
        let pick = |s: &Store| s.figures_campaign(CampaignKind::Pairs, "w").unwrap().map(|c| (c.id, c.status));
        assert_eq!(pick(&s), None, "no campaign");
        let first = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"n":1}"#, &p).unwrap();
        s.add_pair_run(first, &run(0)).unwrap();
        s.finish_campaign(first, CampaignStatus::Interrupted).unwrap();
        assert_eq!(pick(&s), Some((first, CampaignStatus::Interrupted)), "none done: the newest with runs");
        let older_done = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"n":2}"#, &p).unwrap();
        s.add_pair_run(older_done, &run(0)).unwrap();
        s.finish_campaign(older_done, CampaignStatus::Done).unwrap();
        let newer_interrupted = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"n":3}"#, &p).unwrap();
        s.add_pair_run(newer_interrupted, &run(0)).unwrap();
        s.finish_campaign(newer_interrupted, CampaignStatus::Interrupted).unwrap();
        let empty_done = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"n":4}"#, &p).unwrap();
        s.finish_campaign(empty_done, CampaignStatus::Done).unwrap();
        let _running = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"n":5}"#, &p).unwrap();
        assert_eq!(
            pick(&s),
            Some((older_done, CampaignStatus::Done)),
            "a done campaign beats a newer interrupted one, and campaigns without runs never count"
        );
        assert_eq!(
            s.measurements("w").unwrap().pairs.map(|(c, _)| c.id),
            Some(older_done),
            "measurements ask the same rule"
        );
        assert_eq!(s.figures_campaign(CampaignKind::Profile, "w").unwrap(), None, "per kind");
        assert_eq!(s.figures_campaign(CampaignKind::Pairs, "v").unwrap(), None, "per workload");
        // None of these read a regime: every regime falls back to the rule
        // above. A shared campaign, then a newer apart one.
        let in_regime = |s: &Store, g| s.pairs_campaign_in("w", Some(g)).unwrap().map(|c| c.id);
        assert_eq!(in_regime(&s, CacheRegime::Shared), Some(older_done), "nothing read: the regime-blind choice");
        let at = |ns: f64| PairRunRecord { regime: crate::RepeatRegime { cpus: vec![0, 1], before_ns: Some(ns), after_ns: Some(ns) }, ..run(0) };
        let shared = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"n":6}"#, &p).unwrap();
        s.add_pair_run(shared, &at(50.0)).unwrap();
        s.finish_campaign(shared, CampaignStatus::Done).unwrap();
        let apart = s.begin_campaign(CampaignKind::Pairs, "w", r#"{"n":7}"#, &p).unwrap();
        s.add_pair_run(apart, &at(400.0)).unwrap();
        s.finish_campaign(apart, CampaignStatus::Done).unwrap();
        assert_eq!(in_regime(&s, CacheRegime::Shared), Some(shared), "the newest campaign with a shared repeat");
        assert_eq!(in_regime(&s, CacheRegime::Apart), Some(apart));
        assert_eq!(s.measurements_in("w", Some(CacheRegime::Shared)).unwrap().pairs.map(|(c, _)| c.id), Some(shared));
        assert_eq!(s.measurements("w").unwrap().pairs.map(|(c, _)| c.id), Some(apart), "no regime: the newest done");
    }

    #[test]
    fn a_run_job_beside_one_unchanged_co_runner_is_a_pair_sample() {
        use crate::{RunJobEnd, RunJobStart};
        let mut s = Store::open_in_memory().unwrap();
        let start = |job: &str, i: u32, t: f64, solo: Option<f64>| RunJobStart {
            job: job.into(),
            job_index: i,
            attempt: 0,
            arrival_s: 0.0,
            start_s: t,
            cpus: vec![i % 2],
            mems: Vec::new(),
            pgid: 10 + i as i32,
            beside: vec![],
            predicted: 1.0,
            solo_s: solo,
        };
        let end = |t: f64, status: &str, slowdown: f64| RunJobEnd {
            end_s: t,
            status: cosched_model::run::JobStatus::from_parts(status, (status == "failed").then_some(1)).unwrap(),
            work_s: None,
            slowdown: Some(slowdown),
        };
        let run = s.begin_run("s", "w", "noplan", 0, "{}", &prov()).unwrap();
        // (job, start, end, status, slowdown, solo)
        type Job<'a> = (&'a str, f64, f64, &'a str, f64, Option<f64>);
        let jobs: [Job; 9] = [
            ("a", 0.0, 2.0, "ok", 1.5, Some(1.0)),   // beside b only, b covers it: a sample
            ("b", 0.0, 3.0, "ok", 1.2, Some(2.0)),   // beside a, then c: co-runner changed
            ("c", 2.0, 3.0, "ok", 1.1, Some(1.0)),   // beside b only: a sample
            ("d", 3.5, 4.0, "ok", 1.0, Some(0.5)),   // alone: no pair
            ("e", 4.0, 5.0, "failed", 1.0, Some(1.0)), // not ok
            ("f", 4.0, 6.0, "ok", 1.3, Some(2.0)),   // e left before f ended
            ("h", 6.0, 7.0, "ok", 1.4, None),        // no solo time: no slowdown to learn
            ("i", 6.01, 7.02, "ok", 1.6, Some(1.0)), // h covers it within the slack: a sample
            ("j", 8.0, 9.0, "ok", 1.0, Some(1.0)),   // alone again
        ];
        for (i, (job, t0, _, _, _, solo)) in jobs.iter().enumerate() {
            s.run_job_started(run, &start(job, i as u32, *t0, *solo)).unwrap();
        }
        for (i, (_, _, t1, st, sd, _)) in jobs.iter().enumerate() {
            s.run_job_ended(run, i as u32, 0, &end(*t1, st, *sd)).unwrap();
        }
        let other = s.begin_run("s2", "other", "noplan", 0, "{}", &prov()).unwrap();
        s.run_job_started(other, &start("a", 0, 0.0, Some(1.0))).unwrap();
        s.run_job_started(other, &start("b", 1, 0.0, Some(1.0))).unwrap();
        s.run_job_ended(other, 0, 0, &end(1.0, "ok", 2.0)).unwrap();
        let got: Vec<(String, String, f64)> =
            s.measurements("w").unwrap().run_pairs.into_iter().map(|p| (p.victim, p.co_runner, p.slowdown)).collect();
        assert_eq!(
            got,
            [("a".into(), "b".into(), 1.5), ("c".into(), "b".into(), 1.1), ("i".into(), "h".into(), 1.6)],
            "exactly three of nine jobs ran beside one unchanged co-runner"
        );
        let o = s.measurements("other").unwrap().run_pairs;
        assert_eq!(o.len(), 1, "b never ended (runner died) and covers a: {o:?}");
        assert_eq!((o[0].victim.as_str(), o[0].co_runner.as_str()), ("a", "b"));
    }
}
