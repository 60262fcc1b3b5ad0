//! Probing a job against the DistGen stressor (the DistGen paper).
//!
//! For each ladder level the job and a `distgen` stressor run as a pair
//! (solo job, solo stressor, both together with the shorter re-launched):
//! the job's slowdown is its sensitivity, the stressor's its
//! contentiousness. The job runs as foreground on its cores, the stressor
//! beside it where the node runner would put a one-core host job next to
//! it (the caller's placement, [`crate::place::NodePools::pair`]). Each
//! repeat carries the round trip between a CPU of each read around it.
//!
//! Odd repeats of a level swap the two CPUs where the job and the stressor
//! could trade places (as many CPUs each, none shared), as `pairs` does:
//! on this VM the disk's interrupts all land on CPU 1, and the stressor
//! beside fio-randread ran 1.44 there but about 1.13 on CPU 0. A level
//! measured on one placement charges that CPU's load to the job.

use std::collections::BTreeMap;

use cosched_model::probe::{ProbeLevel, ProbePoint};
use cosched_model::stats::Summary;

use cosched_model::regime::CacheRegime;

use crate::c2c::{around, ReadRoundTrip, Reading};
use crate::corun::{measure_pair, CorunError, PairMeasurement};
use crate::launch::Launch;
use crate::pairs::RegimeGate;

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("probe at {size_kib} KiB, intensity {intensity}: {source}")]
    Corun { size_kib: u64, intensity: f64, source: CorunError },
    #[error("{0}")]
    Setup(String),
    #[error("gave up waiting for the {} regime at {size_kib} KiB, intensity {intensity} (CPUs {}-{} last read {})", want.name(), cpus[0], cpus[1], last_ns.map_or("nothing".to_string(), |ns| format!("{ns:.0} ns")))]
    RegimeWait { want: CacheRegime, size_kib: u64, intensity: f64, cpus: [u32; 2], last_ns: Option<f64> },
}

/// Parameters of the stressor at one level, as `distgen` takes them.
pub fn stressor_params(level: &ProbeLevel) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("sizes_kib".to_string(), level.size_kib.to_string());
    p.insert("ratio".to_string(), String::new());
    p.insert("intensity".to_string(), format!("{:?}", level.intensity));
    p
}

/// What a probe measures: the job (launched and pinned), where the
/// stressor runs, the levels and repeats, the CPUs whose round trip says
/// the regime, and the regime the repeats must run in, if any.
pub struct ProbePlan<'a> {
    pub job: &'a Launch,
    pub stressor_cpus: &'a [u32],
    pub levels: &'a [ProbeLevel],
    pub repeats: usize,
    pub read_cpus: Option<[u32; 2]>,
    pub gate: Option<RegimeGate<'a>>,
}

/// Receives each level's repeats with their readings, one per repeat.
pub type ProbeSink<'a> = dyn FnMut(&ProbeLevel, &PairMeasurement, &[Option<Reading>]) -> Result<(), String> + 'a;

/// Measures the job at every level of `plan`. `stressor_argv(level)` gives the command
/// of the stressor at that level (its work sized by calibration); `read`
/// reads the round trip between the plan's `read_cpus` before and after
/// each repeat;
/// `sink` receives each level's repeats with their readings (one per
/// repeat) as soon as they are measured (to store them); `on_level(i, n)`
/// reports progress.
///
/// With `gate`, only repeats run wholly in its regime count towards
/// `repeats` and the point: the probe waits for the regime before each
/// repeat, and one that switched is still given to the sink (with its
/// readings) but taken again, as `pairs --in-regime` does.
pub fn probe_job(
    plan: ProbePlan,
    read: &mut ReadRoundTrip,
    stressor_argv: &mut dyn FnMut(&ProbeLevel) -> Result<Vec<String>, String>,
    sink: &mut ProbeSink,
    on_level: &mut dyn FnMut(usize, usize),
) -> Result<Vec<ProbePoint>, ProbeError> {
    let ProbePlan { job, stressor_cpus, levels, repeats, read_cpus, mut gate } = plan;
    let mut out = Vec::with_capacity(levels.len());
    for (i, level) in levels.iter().enumerate() {
        on_level(i, levels.len());
        let argv = stressor_argv(level).map_err(ProbeError::Setup)?;
        let stressor = Launch::new(argv).pinned(stressor_cpus.to_vec());
        let err = |source| ProbeError::Corun { size_kib: level.size_kib, intensity: level.intensity, source };
        // One repeat at a time, so each is read around on its own.
        let mut m = PairMeasurement {
            solo_s: [Vec::new(), Vec::new()],
            corun_s: [Vec::new(), Vec::new()],
            relaunches: [0, 0],
            timing: ["process", "process"],
        };
        let mut readings = Vec::with_capacity(repeats);
        let swapped = swapped(job, &stressor);
        let want = gate.as_ref().map(|g| g.want);
        // The slowdowns of the repeats that count.
        let mut counted: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        let mut last: Option<f64> = None;
        while counted[0].len() < repeats {
            if crate::launch::pause_point() {
                last = None; // read afresh: the regime may have changed meanwhile
            }
            if let (Some(g), Some(cpus)) = (gate.as_mut(), read_cpus) {
                g.await_regime(cpus, read, last).map_err(|last_ns| ProbeError::RegimeWait {
                    want: g.want,
                    size_kib: level.size_kib,
                    intensity: level.intensity,
                    cpus,
                    last_ns,
                })?;
            }
            // The placement alternates over the counted repeats, so one
            // that did not count is taken again on the same CPUs.
            let (j, st) = match &swapped {
                Some((j, st)) if counted[0].len() % 2 == 1 => (j, st),
                _ => (job, &stressor),
            };
            let (one, reading) = around(read_cpus, read, || measure_pair([j, st], 1, &mut |_, _, _| {})).map_err(err)?;
            for k in 0..2 {
                m.solo_s[k].extend(&one.solo_s[k]);
                m.corun_s[k].extend(&one.corun_s[k]);
                m.relaunches[k] += one.relaunches[k];
            }
            m.timing = one.timing;
            last = reading.and_then(|r| r.after_ns);
            if RegimeGate::counts(want, reading.as_ref()) {
                for (k, c) in counted.iter_mut().enumerate() {
                    c.extend(one.slowdowns(k));
                }
            }
            readings.push(reading);
        }
        sink(level, &m, &readings).map_err(ProbeError::Setup)?;
        let s = |v: &[f64]| Summary::of(v).expect("repeats >= 1");
        out.push(ProbePoint { level: *level, job_slowdown: s(&counted[0]), stressor_slowdown: s(&counted[1]) });
    }
    on_level(levels.len(), levels.len());
    Ok(out)
}

/// The job and the stressor on each other's CPUs, where they can trade:
/// both pinned, to as many CPUs, none in common.
fn swapped(job: &Launch, stressor: &Launch) -> Option<(Launch, Launch)> {
    let (Some(a), Some(b)) = (&job.cpus, &stressor.cpus) else { return None };
    if a.len() != b.len() || a.iter().any(|c| b.contains(c)) {
        return None;
    }
    Some((job.clone().pinned(b.clone()), stressor.clone().pinned(a.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stressor_params_are_valid_distgen_parameters() {
        let p = stressor_params(&ProbeLevel { size_kib: 256, intensity: 0.5 });
        let spec = cosched_model::kernel::kernel("distgen").unwrap();
        let resolved = spec.resolve_params(&p).unwrap();
        assert_eq!(resolved["sizes_kib"], "256");
        assert_eq!(resolved["intensity"], "0.5");
    }

    #[test]
    fn every_level_yields_one_point_and_reaches_the_sink() {
        let job = Launch::new(vec!["true".into()]).pinned(vec![0]);
        let levels = [ProbeLevel { size_kib: 64, intensity: 1.0 }, ProbeLevel { size_kib: 128, intensity: 0.5 }];
        let mut seen = Vec::new();
        let mut script = [70.0, 72.0, 74.0, 76.0, 78.0, 400.0].into_iter();
        let points = probe_job(
            ProbePlan { job: &job, stressor_cpus: &[0], levels: &levels, repeats: 1, read_cpus: Some([0, 1]), gate: None },
            &mut |_, _| script.next(),
            &mut |_| Ok(vec!["true".into()]),
            &mut |level, m, readings| {
                assert_eq!(m.solo_s[0].len(), 1);
                seen.push((*level, readings.to_vec()));
                Ok(())
            },
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(points.len(), 2);
        let r = |b, a| Some(Reading { cpus: [0, 1], before_ns: Some(b), after_ns: Some(a) });
        assert_eq!(seen, vec![(levels[0], vec![r(70.0, 72.0)]), (levels[1], vec![r(74.0, 76.0)])]);
    }

    #[test]
    fn a_gated_probe_counts_only_its_regime_and_stores_the_repeat_that_switched() {
        let job = Launch::new(vec!["true".into()]).pinned(vec![0]);
        let levels = [ProbeLevel { size_kib: 64, intensity: 1.0 }];
        // Gate 400 (apart: go); repeat 0 reads 400, 60 (switched: stored,
        // not counted); the gate waits at 60 and goes at 410; repeats 1
        // and 2 read 410-420 and 430-440 (both count).
        let mut script = [400.0, 400.0, 60.0, 410.0, 410.0, 420.0, 430.0, 440.0].into_iter();
        let mut waited = Vec::new();
        let mut wait = |ns: Option<f64>| {
            waited.push(ns);
            true
        };
        let gate = RegimeGate { want: CacheRegime::Apart, wait: &mut wait };
        let mut stored = Vec::new();
        let points = probe_job(
            ProbePlan { job: &job, stressor_cpus: &[1], levels: &levels, repeats: 2, read_cpus: Some([0, 1]), gate: Some(gate) },
            &mut |_, _| script.next(),
            &mut |_| Ok(vec!["true".into()]),
            &mut |_, m, readings| {
                stored.push((m.solo_s[0].len(), readings.len()));
                Ok(())
            },
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(stored, vec![(3, 3)], "all three repeats reach the sink, with their readings");
        assert_eq!(points[0].job_slowdown.n, 2, "the point is the two repeats in the regime");
        assert_eq!(waited, vec![Some(60.0)]);
        assert_eq!(script.next(), None, "every reading used, none extra");
    }

    #[test]
    fn a_gated_probe_that_stops_waiting_says_for_what() {
        let job = Launch::new(vec!["true".into()]).pinned(vec![0]);
        let levels = [ProbeLevel { size_kib: 64, intensity: 1.0 }];
        let mut wait = |_: Option<f64>| false;
        let gate = RegimeGate { want: CacheRegime::Shared, wait: &mut wait };
        let mut stored = 0;
        let err = probe_job(ProbePlan { job: &job, stressor_cpus: &[1], levels: &levels, repeats: 2, read_cpus: Some([0, 1]), gate: Some(gate) }, &mut |_, _| Some(450.0), &mut |_| Ok(vec!["true".into()]), &mut |_, _, _| {
            stored += 1;
            Ok(())
        }, &mut |_, _| {})
        .unwrap_err();
        assert!(matches!(err, ProbeError::RegimeWait { last_ns: Some(ns), .. } if ns == 450.0), "{err}");
        assert!(err.to_string().contains("shared"), "{err}");
        assert_eq!(stored, 0, "nothing ran outside the regime");
    }

    #[test]
    fn the_job_and_the_stressor_trade_cpus_only_when_they_can() {
        let on = |cpus: &[u32]| Launch::new(vec!["true".into()]).pinned(cpus.to_vec());
        let (j, s) = swapped(&on(&[0]), &on(&[1])).unwrap();
        assert_eq!((j.cpus, s.cpus), (Some(vec![1]), Some(vec![0])));
        assert!(swapped(&on(&[0, 1]), &on(&[2])).is_none(), "two CPUs cannot trade with one");
        assert!(swapped(&on(&[0]), &on(&[0])).is_none(), "a shared CPU stays shared");
        assert!(swapped(&Launch::new(vec!["true".into()]), &on(&[1])).is_none(), "an unpinned job stays unpinned");
    }

    #[test]
    fn odd_repeats_run_the_job_on_the_stressors_cpu() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            cosched_testkit::skip(cosched_testkit::Lacks::Machine, "needs two CPUs");
            return;
        }
        // The job appends the CPU it may run on to a file at every launch.
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("cpus");
        let argv = vec!["sh".into(), "-c".into(), format!("grep Cpus_allowed_list /proc/self/status >> {}", log.display())];
        let job = Launch::new(argv).pinned(vec![0]);
        let levels = [ProbeLevel { size_kib: 64, intensity: 1.0 }];
        let run = |repeats| {
            let _ = std::fs::remove_file(&log);
            probe_job(ProbePlan { job: &job, stressor_cpus: &[1], levels: &levels, repeats, read_cpus: None, gate: None }, &mut |_, _| None, &mut |_| Ok(vec!["true".into()]), &mut |_, _, _| Ok(()), &mut |_, _| {})
                .unwrap();
            let text = std::fs::read_to_string(&log).unwrap();
            let mut cpus: Vec<String> = text.lines().map(|l| l.split_whitespace().last().unwrap().to_string()).collect();
            cpus.sort();
            cpus.dedup();
            cpus
        };
        assert_eq!(run(1), vec!["0"], "one repeat: the job's own CPU only");
        assert_eq!(run(2), vec!["0", "1"], "the second repeat runs it on the stressor's");
    }
}
