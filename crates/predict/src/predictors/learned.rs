//! `learned`: ridge regression of ln(slowdown) on what the characterizations
//! of both jobs say: host load, system-call, context-switch and I/O rates,
//! bandwidth pressure, the class figures, both probe curves level by level,
//! their products (victim's sensitivity times co-runner's contentiousness
//! at the same level), the probe reading of `probe`, and whether the pair
//! are twins, and, where every training program's profile counted them,
//! hardware-counter figures (instructions per cycle, cache misses per
//! reference), stall shares (I/O, CPU), the CPU each keeps busy outside
//! its cores and, from the miss-ratio curves, the last-level misses a
//! second and those gained with half the last level, of both jobs and
//! their product.
//!
//! Features are standardized; the penalty is chosen from a grid by an inner
//! leave-one-program-out over the training set (each victim program held
//! out in turn), so the choice never sees the outer fold's held-out
//! program either.

use cosched_model::probe::ProbeLevel;

use crate::features::{probe_reading, Features};
use crate::fit::{clamp_to, column_ranges, Band, Linear};
use crate::misses::Reuse;
use crate::predictors::{need_pairs, observations};
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use super::PredictorEntry;

const LAMBDAS: [f64; 7] = [1e-6, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0];

pub(super) const LEARNED: PredictorEntry = PredictorEntry {
    name: "learned",
    summary: "ridge regression of ln slowdown on profile and probe features of both jobs",
    params: &[],
    make: |_| Ok(Box::new(Learned::default())),
};

#[derive(Debug, Clone, Default)]
pub struct Learned {
    levels: Vec<ProbeLevel>,
    model: Option<Linear>,
    lambda: f64,
    /// ln slowdown range of the training pairs: a line extrapolates without
    /// bound, and a co-run never slows or speeds a job beyond what some
    /// measured pair did (a 0.1x "speed-up" came out of noisy data).
    range: (f64, f64),
    /// Each feature's range over the training pairs: a program whose
    /// figure lies beyond every training program's (a ping-pong's context
    /// switches among memory kernels) is read at the edge, not extrapolated.
    bounds: Vec<(f64, f64)>,
    band: Band,
    /// Counter and stall figures every training program had (none on
    /// machines that do not count or keep no pressure information), with
    /// their training means for programs that lack them.
    extras: Vec<(Extra, f64)>,
}

/// A figure of a profile that some machines measure and others do not.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Extra {
    /// ln(instructions / cycles).
    LnIpc,
    /// cache-misses / cache-references.
    MissRatio,
    /// Share of the run stalled on I/O (pressure stall information): the
    /// product of two jobs' shares is how often both wait on the device.
    IoStall,
    /// Share of the run spent runnable but waiting for a CPU: a job that
    /// wants more than the cores it was given.
    CpuStall,
    /// Cores' worth of CPU busy outside the job's own cores while it ran
    /// alone: work it causes where its co-runner will be.
    Collateral,
    /// Billions of last-level misses a second alone, from the miss-ratio
    /// curve read at the node's last level (`profile --miss-curve`).
    LlcMisses,
    /// Billions more a second with half the last level: what a co-runner
    /// that takes half the cache costs (reuse distances in LLC/2..LLC).
    HalfLoss,
}

const EXTRAS: [Extra; 7] =
    [Extra::LnIpc, Extra::MissRatio, Extra::IoStall, Extra::CpuStall, Extra::Collateral, Extra::LlcMisses, Extra::HalfLoss];

/// The counter by perf's name, user-space-only (`:u`) if that is what ran.
fn counter(c: &Characterization, name: &str) -> Option<f64> {
    let k = &c.profile.as_ref()?.summary.counters;
    k.get(name).or_else(|| k.get(&format!("{name}:u"))).copied()
}

fn extra_value(c: &Characterization, h: Extra) -> Option<f64> {
    let ratio = |a: &str, b: &str| Some(counter(c, a)? / counter(c, b).filter(|v| *v > 0.0)?);
    match h {
        Extra::LnIpc => ratio("instructions", "cycles").filter(|v| *v > 0.0).map(f64::ln),
        Extra::MissRatio => ratio("cache-misses", "cache-references"),
        Extra::IoStall => Some(c.profile.as_ref()?.summary.stall?.io),
        Extra::CpuStall => Some(c.profile.as_ref()?.summary.stall?.cpu),
        Extra::Collateral => c.profile.as_ref()?.summary.collateral,
        Extra::LlcMisses => Reuse::of(c).map(|r| r.miss_at_llc * r.grefs_per_s),
        Extra::HalfLoss => Reuse::of(c).map(|r| r.half_drop * r.grefs_per_s),
    }
}

/// Which hardware figures all `programs` have, with their means.
fn extras_available<'a>(programs: impl Iterator<Item = &'a Characterization> + Clone) -> Vec<(Extra, f64)> {
    EXTRAS.iter()
        .filter_map(|&h| {
            let v: Option<Vec<f64>> = programs.clone().map(|c| extra_value(c, h)).collect();
            v.filter(|v| !v.is_empty()).map(|v| (h, v.iter().sum::<f64>() / v.len() as f64))
        })
        .collect()
}

fn program_figures(f: &Features) -> Vec<f64> {
    let c = f.class.as_ref();
    vec![
        f.host_load,
        f.ln_syscalls,
        f.ln_ctx,
        f.ln_io,
        f.cores_used,
        f.bandwidth,
        c.map_or(1.0, |c| c.baseline).ln(),
        c.map_or(1.0, |c| c.sens_llc).ln(),
        c.map_or(1.0, |c| c.sens_mem).ln(),
        c.map_or(1.0, |c| c.cont_max).ln(),
    ]
}

fn features(levels: &[ProbeLevel], extras: &[(Extra, f64)], v: &Characterization, o: &Characterization) -> Vec<f64> {
    let (fv, fo) = (Features::of(v), Features::of(o));
    let mut x = program_figures(&fv);
    x.extend(program_figures(&fo));
    for &(h, mean) in extras {
        let (a, b) = (extra_value(v, h).unwrap_or(mean), extra_value(o, h).unwrap_or(mean));
        x.extend([a, b, a * b]);
    }
    for l in levels {
        let s = fv.sensitivity_at(l).max(1e-3).ln();
        let c = fo.contentiousness_at(l).max(1e-3).ln();
        x.extend([s, c, s * c]);
    }
    let (r, push) = probe_reading(&fv, &fo);
    x.extend([r, r * push, fv.bandwidth * fo.bandwidth, fv.host_load + fo.host_load]);
    x.push(if v.program == o.program { 1.0 } else { 0.0 });
    x
}

impl Learned {
    /// The penalty the inner cross-validation chose.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }
}

impl Predictor for Learned {
    fn name(&self) -> &'static str {
        "learned"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        need_pairs(self.name(), train)?;
        let obs = observations(train);
        let mut levels: Vec<ProbeLevel> =
            train.programs.values().flat_map(|c| c.probe.iter().map(|p| p.level)).collect();
        levels.sort_by(|a, b| (a.intensity, a.size_kib).partial_cmp(&(b.intensity, b.size_kib)).expect("finite"));
        levels.dedup();
        self.levels = levels;
        self.extras = extras_available(train.programs.values());
        let xs: Vec<Vec<f64>> = obs.iter().map(|(v, o, _)| features(&self.levels, &self.extras, v, o)).collect();
        let ys: Vec<f64> = obs.iter().map(|o| o.2.ln()).collect();
        let groups: Vec<&str> = obs.iter().map(|o| o.0.program.as_str()).collect();
        let mut keys: Vec<&str> = groups.clone();
        keys.sort();
        keys.dedup();
        let mut best = (f64::INFINITY, LAMBDAS[LAMBDAS.len() - 1]);
        if keys.len() >= 3 {
            for &lambda in &LAMBDAS {
                let mut sse = 0.0;
                for k in &keys {
                    let (mut tx, mut ty) = (Vec::new(), Vec::new());
                    for i in 0..xs.len() {
                        if groups[i] != *k {
                            tx.push(xs[i].clone());
                            ty.push(ys[i]);
                        }
                    }
                    let Some(m) = Linear::ridge(&tx, &ty, lambda) else {
                        sse = f64::INFINITY;
                        break;
                    };
                    // Held out as the outer fold will be: read within the
                    // fold's own training ranges.
                    let b = column_ranges(&tx);
                    sse += (0..xs.len())
                        .filter(|&i| groups[i] == *k)
                        .map(|i| (m.at(&clamp_to(xs[i].clone(), &b)) - ys[i]).powi(2))
                        .sum::<f64>();
                }
                if sse < best.0 {
                    best = (sse, lambda);
                }
            }
        }
        self.lambda = best.1;
        let model = Linear::ridge(&xs, &ys, self.lambda)
            .ok_or_else(|| PredictError::Fit { name: self.name().into(), why: "singular system".into() })?;
        self.range = ys.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| (lo.min(*y), hi.max(*y)));
        self.bounds = column_ranges(&xs);
        let range = self.range;
        self.band = Band::of(
            &obs.iter().zip(&xs).map(|((_, _, m), x)| (*m, model.at(x).clamp(range.0, range.1).exp())).collect::<Vec<_>>(),
        );
        self.model = Some(model);
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        match &self.model {
            Some(m) => {
                let x = clamp_to(features(&self.levels, &self.extras, victim, other), &self.bounds);
                self.band.around(m.at(&x).clamp(self.range.0, self.range.1).exp())
            }
            None => Prediction::alone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{all_pairs, curve_program, with_curve, with_load};

    #[test]
    fn predictions_stay_within_the_measured_range_far_outside_the_training_features() {
        // ln s = 0.5 U_victim over loads 0.1 .. 0.9; a victim with load 50
        // would extrapolate to e^25, but no measured pair slowed by more than
        // e^0.45.
        let progs: Vec<Characterization> = (0..5)
            .map(|i| with_load(curve_program(&format!("p{i}"), [1.0; 6], [1.0; 6]), 0.1 + 0.2 * i as f64, 10.0))
            .collect();
        let truth = |v: &Characterization, _: &Characterization| (0.5 * Features::of(v).host_load).exp();
        let train = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut p = Learned::default();
        p.fit(&train).unwrap();
        let hi = (0.5f64 * 0.9).exp();
        let lo = (0.5f64 * 0.1).exp();
        let wild = with_load(curve_program("wild", [1.0; 6], [1.0; 6]), 50.0, 10.0);
        let calm = with_load(curve_program("calm", [1.0; 6], [1.0; 6]), -50.0, 10.0);
        // Each figure is read at the training edge (loads 0.9 and 0.1),
        // where the fit is the truth up to its tiny ridge penalty.
        let (w, c) = (p.predict_pair(&wild, &progs[0]).slowdown, p.predict_pair(&calm, &progs[0]).slowdown);
        assert!((w - hi).abs() < 1e-6 && w <= hi + 1e-12, "{w} {hi}");
        assert!((c - lo).abs() < 1e-6 && c >= lo - 1e-12, "{c} {lo}");
    }

    #[test]
    fn a_figure_beyond_every_training_programs_is_read_at_the_training_edge() {
        // ln s = 0.5 U_victim - 0.3 U_other over loads 0.1 .. 0.9. A victim
        // at load 5 beside the 0.9 one would extrapolate to ln s = 2.23,
        // clamped to the largest measured 0.42; read at the edge of the
        // loads it is the 0.9 victim's 0.18.
        let progs: Vec<Characterization> = (0..5)
            .map(|i| with_load(curve_program(&format!("p{i}"), [1.0; 6], [1.0; 6]), 0.1 + 0.2 * i as f64, 10.0))
            .collect();
        let truth = |v: &Characterization, o: &Characterization| (0.5 * Features::of(v).host_load - 0.3 * Features::of(o).host_load).exp();
        let train = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut p = Learned::default();
        p.fit(&train).unwrap();
        let wild = with_load(curve_program("wild", [1.0; 6], [1.0; 6]), 5.0, 10.0);
        let edge = p.predict_pair(&progs[4], &progs[4]).slowdown;
        assert!((edge - truth(&progs[4], &progs[4])).abs() < 1e-3, "{edge}");
        assert!((p.predict_pair(&wild, &progs[4]).slowdown - edge).abs() < 1e-9);
    }

    #[test]
    fn a_log_linear_truth_in_its_features_is_recovered_for_a_held_out_program() {
        // ln s = 0.3 U_victim + 0.4 (R - 1) + 0.2 U_other, over ten programs
        // with varied curves; fitted without one program's pairs, its pairs
        // are predicted closely (the truth lies in the model's span, so the
        // inner CV picks a small penalty).
        let mut seed = 7u64;
        let mut rnd = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let progs: Vec<Characterization> = (0..10)
            .map(|i| {
                let mut s = [1.0; 6];
                let mut c = [1.0; 6];
                for k in 1..6 {
                    s[k] = s[k - 1] + 0.2 * rnd();
                    c[k] = 1.0 + 0.8 * rnd();
                }
                with_load(curve_program(&format!("p{i}"), s, c), 0.05 + 0.9 * rnd(), 1000.0 * rnd())
            })
            .collect();
        let truth = |v: &Characterization, o: &Characterization| {
            let (fv, fo) = (Features::of(v), Features::of(o));
            (0.3 * fv.host_load + 0.4 * probe_reading(&fv, &fo).0 + 0.2 * fo.host_load).exp()
        };
        let all = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let held = &progs[3];
        let mut p = Learned::default();
        p.fit(&all.without_program(&held.program)).unwrap();
        assert!(p.lambda() <= 1e-3, "{}", p.lambda());
        for o in &progs {
            for (v, w) in [(held, o), (o, held)] {
                let got = p.predict_pair(v, w).slowdown;
                assert!((got / truth(v, w) - 1.0).abs() < 0.01, "{} {}: {got} vs {}", v.name, w.name, truth(v, w));
            }
        }
    }

    #[test]
    fn hardware_counters_become_features_only_when_every_program_has_them() {
        // Slowdown driven by the co-runner's cache-miss ratio alone, which
        // nothing but the counters shows (loads and curves are equal).
        let with_counters = |name: &str, miss: f64| {
            let mut c = with_load(curve_program(name, [1.0; 6], [1.0; 6]), 0.5, 10.0);
            let s = &mut c.profile.as_mut().unwrap().summary.counters;
            s.insert("instructions".into(), 2e9);
            s.insert("cycles".into(), 1e9);
            s.insert("cache-references".into(), 1e8);
            s.insert("cache-misses".into(), miss * 1e8);
            c
        };
        let misses = [0.05, 0.2, 0.4, 0.6, 0.8, 0.9];
        let progs: Vec<Characterization> = misses.iter().enumerate().map(|(i, m)| with_counters(&format!("p{i}"), *m)).collect();
        let truth = |_: &Characterization, o: &Characterization| 1.0 + 0.6 * extra_value(o, Extra::MissRatio).unwrap();
        let set = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut l = Learned::default();
        l.fit(&set).unwrap();
        assert_eq!(l.extras.len(), 2, "both figures available on every program");
        let fresh = with_counters("new", 0.7);
        let got = l.predict_pair(&progs[0], &fresh).slowdown;
        assert!((got - 1.42).abs() < 0.05, "predicted {got} for a co-runner missing 70 %");

        // One program without counters (another machine): none are used.
        let mut mixed = progs.clone();
        mixed[3].profile.as_mut().unwrap().summary.counters.clear();
        let set = TrainingSet::new(mixed.clone(), all_pairs(&mixed, |_, _| 1.1)).unwrap();
        let mut l = Learned::default();
        l.fit(&set).unwrap();
        assert!(l.extras.is_empty());
    }

    #[test]
    fn miss_curve_figures_become_features_only_when_every_program_has_a_curve() {
        // Slowdown driven by the co-runner's last-level misses a second,
        // which only the curves show (loads and probe curves are equal).
        let curved = |name: &str, ratio: f64| {
            let c = with_load(curve_program(name, [1.0; 6], [1.0; 6]), 0.5, 10.0);
            let points = [(16384, ratio), (65536, ratio / 2.0)]
                .map(|(ll_kib, ratio)| cosched_model::profile::MissPoint { ll_kib, refs: 0, misses: 0, ratio })
                .to_vec();
            with_curve(c, points, 1_000_000_000, 1.0)
        };
        let ratios = [0.05, 0.2, 0.4, 0.6, 0.8, 0.9];
        let progs: Vec<Characterization> = ratios.iter().enumerate().map(|(i, r)| curved(&format!("p{i}"), *r)).collect();
        let truth = |_: &Characterization, o: &Characterization| 1.0 + 0.6 * extra_value(o, Extra::LlcMisses).unwrap();
        let set = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut l = Learned::default();
        l.fit(&set).unwrap();
        let used: Vec<Extra> = l.extras.iter().map(|(h, _)| *h).collect();
        assert_eq!(used, [Extra::LlcMisses, Extra::HalfLoss]);
        // The testdata node's last level is 32 MiB: halfway from 16 to 64
        // MiB in log size, 0.7 x 3/4 = 0.525 billion misses a second.
        let fresh = curved("new", 0.7);
        assert!((extra_value(&fresh, Extra::LlcMisses).unwrap() - 0.525).abs() < 1e-12);
        let got = l.predict_pair(&progs[0], &fresh).slowdown;
        assert!((got - (1.0 + 0.6 * 0.525)).abs() < 0.05, "predicted {got}");

        // One program without a curve: the figures are not used.
        let mut mixed = progs.clone();
        mixed[3].profile.as_mut().unwrap().miss_curve.clear();
        let set = TrainingSet::new(mixed.clone(), all_pairs(&mixed, |_, _| 1.1)).unwrap();
        let mut l = Learned::default();
        l.fit(&set).unwrap();
        assert!(l.extras.is_empty());
    }

    #[test]
    fn two_jobs_waiting_on_io_are_told_apart_by_their_stall_shares() {
        // ln s = 0.8 io_v io_o: only jobs that both wait on I/O slow each
        // other, which no load, rate or curve here shows.
        let with_io = |name: &str, io: f64| {
            let mut c = with_load(curve_program(name, [1.0; 6], [1.0; 6]), 0.5, 10.0);
            c.profile.as_mut().unwrap().summary.stall = Some(cosched_model::profile::Stall { cpu: 0.0, io, memory: 0.0 });
            c
        };
        let shares = [0.0, 0.05, 0.2, 0.4, 0.6, 0.8];
        let progs: Vec<Characterization> = shares.iter().enumerate().map(|(i, s)| with_io(&format!("p{i}"), *s)).collect();
        let io = |c: &Characterization| c.profile.as_ref().unwrap().summary.stall.unwrap().io;
        let truth = |v: &Characterization, o: &Characterization| (0.8 * io(v) * io(o)).exp();
        let mut l = Learned::default();
        l.fit(&TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap()).unwrap();
        assert!(l.extras.iter().any(|(h, _)| *h == Extra::IoStall));
        let (a, b) = (with_io("new-a", 0.7), with_io("new-b", 0.7));
        let got = l.predict_pair(&a, &b).slowdown;
        assert!((got / (0.8f64 * 0.49).exp() - 1.0).abs() < 0.03, "two I/O-bound newcomers: {got}");
        let calm = l.predict_pair(&a, &progs[0]).slowdown;
        assert!((calm - 1.0).abs() < 0.03, "beside a job that never waits on I/O: {calm}");
    }

    #[test]
    fn a_co_runner_that_keeps_other_cpus_busy_alone_is_predicted_to_slow_its_neighbour() {
        // ln s = 0.9 x the co-runner's CPU busy outside its cores alone
        // (fio's page-cache work lands on the other CPU); nothing else here
        // differs between the programs.
        let with_outside = |name: &str, c: f64| {
            let mut p = with_load(curve_program(name, [1.0; 6], [1.0; 6]), 0.5, 10.0);
            let s = &mut p.profile.as_mut().unwrap().summary;
            s.stall = Some(cosched_model::profile::Stall::default());
            s.collateral = Some(c);
            p
        };
        let outside = [0.0, 0.02, 0.05, 0.1, 0.15, 0.3];
        let progs: Vec<Characterization> = outside.iter().enumerate().map(|(i, c)| with_outside(&format!("p{i}"), *c)).collect();
        let of = |c: &Characterization| c.profile.as_ref().unwrap().summary.collateral.unwrap();
        let truth = |_: &Characterization, o: &Characterization| (0.9 * of(o)).exp();
        let mut l = Learned::default();
        l.fit(&TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap()).unwrap();
        assert!(l.extras.iter().any(|(h, _)| *h == Extra::Collateral));
        let noisy = with_outside("new", 0.2);
        let got = l.predict_pair(&progs[0], &noisy).slowdown;
        assert!((got / (0.9f64 * 0.2).exp() - 1.0).abs() < 0.02, "beside a newcomer busy 0.2 cores elsewhere: {got}");
    }
}
