//! The matrix of stored pair runs, and what a campaign's solo repeats say
//! about a job's own spread. Twins (one program on as many cores) are
//! measured once by a pairs campaign and share every cell.

use std::collections::BTreeMap;

use cosched_model::matrix::{matrix_from_samples, SlowdownMatrix};
use cosched_model::workload::{Job, Workload};
use cosched_store::PairRunRecord;

/// A job's solo times across a campaign's repeats: every repeat times each
/// job alone before the co-run, so a job has one solo time per repeat of
/// each pair it is in.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SoloSpread {
    pub job: String,
    pub n: usize,
    pub median_s: f64,
    pub p10_s: f64,
    pub p90_s: f64,
}

/// A job whose own solo runs are this far apart (90th over 10th
/// percentile) spreads as far alone as a severe conflict (1.3) would slow
/// it. On the reference node, while /dev/null was a regular file (see
/// `measure::files::create_file`), `head -c 2400M /dev/zero | cat >
/// /dev/null` took 1.5 s or 3.4-5.0 s alone, run by run, and openssl-aes
/// 1.7 s or 2.4-4.2 s (docs/measurements.md, 2026-11-25): their slowdowns
/// measured the state of that file as much as their co-runner.
pub const UNSTABLE_SOLO: f64 = 1.3;

/// Fewest solo times a spread is given for: a 10th percentile of fewer is
/// the minimum.
const MIN_SOLO_RUNS: usize = 5;

impl SoloSpread {
    /// 90th over 10th percentile of its solo times.
    pub fn spread(&self) -> f64 {
        self.p90_s / self.p10_s
    }

    pub fn unstable(&self) -> bool {
        self.spread() > UNSTABLE_SOLO
    }
}

/// Each job's solo spread over `runs`, by job name; jobs with fewer than
/// five solo times are left out.
pub fn solo_spreads(runs: &[PairRunRecord]) -> Vec<SoloSpread> {
    let mut by_job: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in runs {
        by_job.entry(&r.fg_job).or_default().push(r.fg_solo_s);
        by_job.entry(&r.bg_job).or_default().push(r.bg_solo_s);
    }
    by_job
        .into_iter()
        .filter_map(|(job, mut v)| {
            v.retain(|x| x.is_finite() && *x > 0.0);
            if v.len() < MIN_SOLO_RUNS {
                return None;
            }
            v.sort_by(f64::total_cmp);
            use cosched_model::stats::{median_sorted, quantile_sorted};
            Some(SoloSpread {
                job: job.to_string(),
                n: v.len(),
                median_s: median_sorted(&v),
                p10_s: quantile_sorted(&v, 0.1),
                p90_s: quantile_sorted(&v, 0.9),
            })
        })
        .collect()
}

/// What makes two jobs twins for a pairs campaign: one program on as many
/// cores (a command's key does not hold its cores).
fn twin_key(j: &Job) -> String {
    format!("{} cores={}", j.program_key(), j.cores)
}

/// The first job of each program key, in workload order.
pub fn representatives(w: &Workload) -> Vec<usize> {
    let keys: Vec<String> = w.jobs.iter().map(twin_key).collect();
    (0..keys.len()).filter(|&i| !keys[..i].contains(&keys[i])).collect()
}

/// The matrix of stored runs: each repeat gives the foreground's slowdown in
/// cell (fg, bg) and the background's in cell (bg, fg), and every twin of
/// the foreground (same program key) beside every twin of the background
/// gets the same samples, since campaigns measure twins once.
pub fn matrix_of(w: &Workload, runs: &[PairRunRecord]) -> SlowdownMatrix {
    let names: Vec<String> = w.jobs.iter().map(|j| j.name.clone()).collect();
    let keys: Vec<String> = w.jobs.iter().map(twin_key).collect();
    let key_of = |n: &str| names.iter().position(|x| x == n).map(|i| keys[i].as_str());
    let mut samples = Vec::new();
    for r in runs {
        let (Some(fk), Some(bk)) = (key_of(&r.fg_job), key_of(&r.bg_job)) else { continue };
        for i in (0..names.len()).filter(|&i| keys[i] == fk) {
            for j in (0..names.len()).filter(|&j| keys[j] == bk) {
                samples.push((i, j, r.fg_slowdown()));
                samples.push((j, i, r.bg_slowdown()));
            }
        }
    }
    matrix_from_samples(names.clone(), samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeat of `fg` beside `bg` with these slowdowns, solo 1 s each.
    fn rec(fg: &str, bg: &str, fg_sd: f64, bg_sd: f64) -> PairRunRecord {
        PairRunRecord {
            fg_job: fg.into(),
            bg_job: bg.into(),
            repeat: 0,
            fg_cpus: vec![0],
            bg_cpus: vec![1],
            shared_cpus: false,
            fg_solo_s: 1.0,
            fg_corun_s: fg_sd,
            bg_solo_s: 1.0,
            bg_corun_s: bg_sd,
            fg_relaunches: 0,
            bg_relaunches: 0,
            fg_timing: "work-phase".into(),
            bg_timing: "work-phase".into(),
            regime: Default::default(),
            level: None,
        }
    }

    #[test]
    fn a_job_whose_own_solo_runs_are_far_apart_is_unstable_and_a_steady_one_is_not() {
        // `pipe` alone: 1.5 s or 3.5 s, alternating (a pipeline of two
        // speeds); `loop`: 1.00-1.04 s. Ten repeats of their pair.
        let runs: Vec<PairRunRecord> = (0..10)
            .map(|i| PairRunRecord {
                fg_solo_s: if i % 2 == 0 { 1.5 } else { 3.5 },
                bg_solo_s: 1.0 + 0.004 * i as f64,
                ..rec("pipe", "loop", 1.0, 1.0)
            })
            .collect();
        let s = solo_spreads(&runs);
        assert_eq!(s.iter().map(|x| x.job.as_str()).collect::<Vec<_>>(), ["loop", "pipe"]);
        let (lp, pipe) = (&s[0], &s[1]);
        assert_eq!((lp.n, pipe.n), (10, 10));
        assert!(!lp.unstable(), "{lp:?}");
        assert!(pipe.unstable() && (pipe.spread() - 3.5 / 1.5).abs() < 1e-9, "{pipe:?}");
        assert!((pipe.median_s - 2.5).abs() < 1e-9);
        // Fewer than five solo times: no spread is given.
        assert!(solo_spreads(&runs[..2]).is_empty());
    }

    #[test]
    fn twins_are_measured_once_and_share_every_cell() {
        let text = "[[pools]]\nname = \"host\"\ncores = 2\n\
            [[jobs]]\nname = \"t\"\nkernel = \"stream\"\nwork = 5\ncount = 3\n\
            [[jobs]]\nname = \"f\"\nkernel = \"compute\"\nwork = 5\ncount = 2\n";
        let w = cosched_model::workload::parse_workload(text, "w.toml", Some(2)).unwrap();
        assert_eq!(representatives(&w), vec![0, 3]);
        let m = matrix_of(&w, &[rec("t.1", "t.1", 1.6, 1.4), rec("t.1", "f.1", 1.1, 1.0)]);
        // Every triad beside every other triad: both samples of the twin co-run.
        for i in 0..3 {
            for j in 0..3 {
                let c = m.get(i, j).unwrap();
                assert_eq!((c.n, c.min, c.max), (2, 1.4, 1.6));
            }
            for j in 3..5 {
                assert_eq!(m.get(i, j).unwrap().median, 1.1);
                assert_eq!(m.get(j, i).unwrap().median, 1.0);
            }
        }
        // Loops were never co-run with each other.
        assert!(m.get(3, 4).is_none());
    }
}
