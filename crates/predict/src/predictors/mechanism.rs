//! `mechanism`: a co-run's slowdown as contention through a few named
//! resources, each term the victim's exposure times the co-runner's
//! pressure, with weights that may not be negative:
//!
//! `ln s = a + w1 (R - 1) + w2 (R - 1) P`   the caches and memory, read off
//!                                           the probe curves as `probe` does
//! `     + w3 io(v) io(o)`                  both waiting on the device
//!                                           (I/O stall shares)
//! `     + w4 spill(v) busy(o)`             work the victim leaves to the
//!                                           other CPUs alone (CPU busy
//!                                           outside its cores), now taken
//! `     + w5 spill(o) busy(v)`             the co-runner's such work (a
//!                                           disk's interrupts, say) landing
//!                                           on the victim's CPU
//! `     + w6 cpu(v) busy(o)`               a victim already short of CPU
//!                                           (its CPU stall share)
//! `     + w7 pipe(v) pipe'(o)`             the kernel's pipe path: ln of
//!                                           the victim's slowdown beside
//!                                           the pipe stressor times ln of
//!                                           the stressor's beside the
//!                                           co-runner
//! `     + L(o) x(v)`                        contention on the CPU itself,
//!                                           not fitted (below)
//!
//! Each fitted term of a predicted pair is held within its range over the
//! training pairs: a program beyond every training program's exposure or
//! pressure is read at the edge rather than extrapolated.
//!
//! `busy(o)` is the CPU the co-runner keeps busy alone. Shares and spill
//! count from a noise floor up, and a figure a program lacks counts as 0,
//! so its term is absent rather than guessed.
//!
//! `L(o)` is ln of how much the co-runner slows the probe's lightest
//! stressor (the smallest working set at full intensity, inside the core's
//! own cache): what it takes from a neighbour that shares no cache with
//! it, such as the disk's interrupts landing on the neighbour's CPU, or the
//! host's I/O threads. `x(v)` is the share of its CPUs' time the victim
//! keeps busy alone. The stressor is a standard victim, so a victim that
//! computes all the time loses what it lost: the weight is 1 by
//! construction, not fitted, and the term carries over to a training set
//! where no program did this (predict12 has none; the applications'
//! fio-randread slows every neighbour by 1.2-1.3). The cache terms read the
//! co-runner's contentiousness divided by `exp L(o)`, so that push is not
//! counted twice as cache contention.
//!
//! Why not `learned`: a ridge over dozens of features finds whatever
//! correlates within its training set, and across workloads those
//! correlations do not carry over. Seven terms whose signs the physics
//! fixes either carry over or, where the training set never exercised a
//! resource (its column constant), stay at zero and say nothing.

use crate::features::{probe_reading, Features};
use crate::fit::{clamp_to, column_ranges, Band, Linear};
use crate::predictors::{need_pairs, observations};
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use super::PredictorEntry;

pub(super) const MECHANISM: PredictorEntry = PredictorEntry {
    name: "mechanism",
    summary: "contention through named resources (probe reading, I/O x I/O, CPU spilled either way, CPU stall, pipe x pipe) with non-negative weights, plus the CPU a co-runner takes from the lightest probe stressor (weight 1, not fitted)",
    params: &[],
    make: |_| Ok(Box::new(Mechanism::default())),
};

#[derive(Debug, Clone, Default)]
pub struct Mechanism {
    line: Option<Linear>,
    /// Range of the training pairs' ln slowdowns less the fixed term: the
    /// fitted terms predict nothing beyond it.
    range: (f64, f64),
    /// Each fitted term's range over the training pairs.
    bounds: Vec<(f64, f64)>,
    band: Band,
}

/// Below these a figure is the node's noise, not the program's: a share
/// of stalled time of a few per cent shows on a VM whatever runs (the
/// host's own activity), and an idle node keeps a few hundredths of a core
/// busy. Counted from the floor up, a column of noise is all zeros rather
/// than a tiny spread a fit could scale up by a large weight (held out of
/// predict12, the two-process ping-pong's CPU stall share of 0.88 was
/// otherwise read through a weight fitted to shares of 0.00-0.004 and
/// predicted 1.72 beside anything, against 1.00 measured).
const STALL_FLOOR: f64 = 0.05;
const SPILL_FLOOR_CORES: f64 = 0.03;

fn stall(c: &Characterization) -> (f64, f64) {
    let above = |x: f64| (x - STALL_FLOOR).max(0.0);
    c.profile.as_ref().and_then(|p| p.summary.stall).map_or((0.0, 0.0), |s| (above(s.io), above(s.cpu)))
}

fn spill(c: &Characterization) -> f64 {
    c.profile.as_ref().and_then(|p| p.summary.collateral).map_or(0.0, |x| (x - SPILL_FLOOR_CORES).max(0.0))
}

/// Below this the lightest stressor's slowdown is the node's noise (its
/// repeats spread about 2 % beside a loop).
const LIGHT_FLOOR: f64 = 1.05;

/// `L` of the module documentation: ln of the lightest stressor's
/// slowdown beside `f`, 0 below the floor or without such a level.
fn light_push(f: &Features) -> f64 {
    let lightest = f.contentiousness.iter().filter(|(l, _)| l.intensity >= 1.0).min_by_key(|(l, _)| l.size_kib);
    match lightest {
        Some((_, c)) if *c > LIGHT_FLOOR => c.ln(),
        _ => 0.0,
    }
}

/// `pipe(v)` and `pipe'(o)` of the module documentation: ln of the
/// program's slowdown beside the pipe stressor (its sensitivity) and of
/// the stressor's beside it (its push), each 0 at or below the floor or
/// without a pipe point. The floor keeps the noise out: on the reference
/// node every program read 0.90-1.09 beside the pipe, so there the term is
/// 0.
fn pipe(c: &Characterization) -> (f64, f64) {
    let ln = |x: f64| if x > LIGHT_FLOOR { x.ln() } else { 0.0 };
    c.stressors.get(PIPE).map_or((0.0, 0.0), |p| (ln(p.job_slowdown.median), ln(p.stressor_slowdown.median)))
}

/// The pipe stressor's kernel name, as probe points store it.
const PIPE: &str = "pipe";

/// `x(v)` of the module documentation: the share of its CPUs' time the
/// victim keeps busy alone.
fn exposure(v: &Characterization, fv: &Features) -> f64 {
    (fv.cores_used / v.cores.max(1) as f64).clamp(0.0, 1.0)
}

/// The fitted terms' columns and the fixed term of a pair.
fn terms(v: &Characterization, o: &Characterization) -> ([f64; 7], f64) {
    let (fv, mut fo) = (Features::of(v), Features::of(o));
    let push = light_push(&fo);
    let fixed = push * exposure(v, &fv);
    let l = push.exp();
    for (_, c) in &mut fo.contentiousness {
        *c /= l;
    }
    let (r, push) = probe_reading(&fv, &fo);
    let ((io_v, cpu_v), (io_o, _)) = (stall(v), stall(o));
    let (busy_v, busy_o) = (fv.cores_used.max(0.0), fo.cores_used.max(0.0));
    let (pipe_v, pipe_o) = (pipe(v).0, pipe(o).1);
    ([r, r * push, io_v * io_o, spill(v) * busy_o, spill(o) * busy_v, cpu_v * busy_o, pipe_v * pipe_o], fixed)
}

/// Least squares of `ys` on `xs` with every coefficient at or above zero
/// (the intercept free): a column whose coefficient comes out negative is
/// dropped (set constant, so the fit gives it 0) and the rest refitted,
/// most negative first, until none is. At most one refit per column.
pub(crate) fn nonnegative(xs: &[Vec<f64>], ys: &[f64]) -> Option<Linear> {
    let p = xs.first()?.len();
    let mut dropped = vec![false; p];
    loop {
        let masked: Vec<Vec<f64>> =
            xs.iter().map(|r| r.iter().enumerate().map(|(j, v)| if dropped[j] { 0.0 } else { *v }).collect()).collect();
        // A touch of ridge where columns are collinear.
        let line = Linear::ridge(&masked, ys, 0.0).or_else(|| Linear::ridge(&masked, ys, 1e-6))?;
        let worst = (0..p).filter(|&j| !dropped[j] && line.coef[j] < 0.0).min_by(|&a, &b| line.coef[a].total_cmp(&line.coef[b]));
        match worst {
            Some(j) => dropped[j] = true,
            None => return Some(line),
        }
    }
}

impl Mechanism {
    /// ln slowdown: the fitted terms kept within what the training pairs
    /// left to them, plus the fixed term, which may reach beyond (a
    /// training set without such a co-runner spans no such slowdown).
    fn clamped(&self, fitted: f64, fixed: f64) -> f64 {
        fitted.clamp(self.range.0, self.range.1) + fixed
    }

    /// The fitted intercept and the weights, in the order of the terms in
    /// the module documentation.
    pub fn weights(&self) -> Option<(f64, Vec<f64>)> {
        self.line.as_ref().map(|l| (l.intercept, l.coef.clone()))
    }
}

impl Predictor for Mechanism {
    fn name(&self) -> &'static str {
        "mechanism"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        need_pairs(self.name(), train)?;
        let obs = observations(train);
        let (xs, fixed): (Vec<Vec<f64>>, Vec<f64>) = obs
            .iter()
            .map(|(v, o, _)| {
                let (x, f) = terms(v, o);
                (x.to_vec(), f)
            })
            .unzip();
        let ys: Vec<f64> = obs.iter().map(|o| o.2.max(1e-3).ln()).collect();
        // The fitted terms explain what the fixed one leaves.
        let rest: Vec<f64> = ys.iter().zip(&fixed).map(|(y, f)| y - f).collect();
        let line =
            nonnegative(&xs, &rest).ok_or_else(|| PredictError::Fit { name: self.name().into(), why: "singular system".into() })?;
        self.range = rest.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| (lo.min(*y), hi.max(*y)));
        self.bounds = column_ranges(&xs);
        self.band = Band::of(
            &obs.iter()
                .zip(&xs)
                .zip(&fixed)
                .map(|(((_, _, m), x), f)| (*m, self.clamped(line.at(x), *f).exp()))
                .collect::<Vec<_>>(),
        );
        self.line = Some(line);
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        match &self.line {
            Some(l) => {
                let (x, fixed) = terms(victim, other);
                let x = clamp_to(x.to_vec(), &self.bounds);
                self.band.around(self.clamped(l.at(&x), fixed).exp())
            }
            None => Prediction::alone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{all_pairs, curve_program, probe_program, with_load, Shape};
    use cosched_model::profile::Stall;

    /// A program known only by its profile: I/O and CPU stall shares,
    /// CPU busy outside its cores, and cores it keeps busy.
    fn prog(name: &str, io: f64, cpu: f64, collateral: f64, cores_used: f64) -> Characterization {
        let mut c = with_load(probe_program(name, Shape::N, 0.0), cores_used / 2.0, 0.0);
        c.probe.clear();
        let s = &mut c.profile.as_mut().unwrap().summary;
        s.stall = Some(Stall { cpu, io, memory: 0.0 });
        s.collateral = Some(collateral);
        c
    }

    #[test]
    fn nonnegative_least_squares_drops_a_column_that_would_go_negative() {
        // y = 1 + 2 x0 exactly; x1 alone would take a negative weight.
        let xs = vec![vec![0.0, 1.0], vec![1.0, 0.0], vec![2.0, 0.5], vec![3.0, 0.2], vec![1.5, 0.9]];
        let ys: Vec<f64> = xs.iter().map(|r| 1.0 + 2.0 * r[0] - 0.3 * r[1]).collect();
        let l = nonnegative(&xs, &ys).unwrap();
        assert_eq!(l.coef[1], 0.0);
        assert!(l.coef[0] > 0.0);
        // Without a negative pull it is ordinary least squares.
        let ys: Vec<f64> = xs.iter().map(|r| 1.0 + 2.0 * r[0] + 0.5 * r[1]).collect();
        let l = nonnegative(&xs, &ys).unwrap();
        assert!((l.intercept - 1.0).abs() < 1e-9 && (l.coef[0] - 2.0).abs() < 1e-9 && (l.coef[1] - 0.5).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn what_a_co_runner_takes_from_the_lightest_stressor_a_busy_victim_loses_even_if_training_never_showed_it() {
        // Training: quiet programs, every pair 1.02.
        let quiet: Vec<Characterization> =
            (0..4).map(|i| with_load(probe_program(&format!("q{i}"), [Shape::N, Shape::C][i % 2], 0.0), 0.5, 0.0)).collect();
        let train = TrainingSet::new(quiet.clone(), all_pairs(&quiet, |_, _| 1.02)).unwrap();
        let mut m = Mechanism::default();
        m.fit(&train).unwrap();
        // A co-runner that slows the stressor 1.3x at every size, the
        // lightest included: CPU contention, not cache.
        let noisy = with_load(curve_program("noisy", [1.0; 6], [1.3; 6]), 0.2, 0.0);
        let at = |v: &Characterization| m.predict_pair(v, &noisy).slowdown;
        // A victim busy all the time (a loop, or cache-sensitive: the
        // push is not read as cache contention as well) loses the 1.3.
        assert!((at(&quiet[0]) - 1.02 * 1.3).abs() < 1e-9, "{}", at(&quiet[0]));
        assert!((at(&quiet[1]) - 1.02 * 1.3).abs() < 1e-9, "{}", at(&quiet[1]));
        // One busy 40 % of the time loses 1.3^0.4.
        let idle = with_load(probe_program("idle", Shape::N, 0.0), 0.2, 0.0);
        assert!((at(&idle) - 1.02 * 1.3f64.powf(0.4)).abs() < 1e-9, "{}", at(&idle));
        // Below the floor it is the node's noise: nothing.
        let calm = with_load(curve_program("calm", [1.0; 6], [1.04; 6]), 0.2, 0.0);
        assert!((m.predict_pair(&quiet[0], &calm).slowdown - 1.02).abs() < 1e-9);
    }

    /// `prog` with a pipe point: its slowdown beside the pipe stressor and
    /// the stressor's beside it.
    fn piped(mut c: Characterization, sensitivity: f64, push: f64) -> Characterization {
        let s = |x: f64| cosched_model::stats::Summary::of(&[x]).unwrap();
        c.stressors.insert(
            PIPE.into(),
            cosched_model::probe::ProbePoint {
                level: cosched_model::probe::ProbeLevel { size_kib: 0, intensity: 1.0 },
                job_slowdown: s(sensitivity),
                stressor_slowdown: s(push),
            },
        );
        c
    }

    #[test]
    fn a_pipe_product_learned_on_one_pipe_user_predicts_another_pair_of_pipe_users() {
        // Training: a file writer that the pipe slows and that pushes it,
        // beside itself 1.6; loops the pipe neither slows nor notices.
        let truth = |v: &Characterization, o: &Characterization| (0.01 + 0.9 * pipe(v).0 * pipe(o).1).exp();
        let train_progs = vec![
            piped(prog("writer", 0.0, 0.0, 0.0, 1.0), 2.2, 1.5),
            piped(prog("loop", 0.0, 0.0, 0.0, 1.0), 1.0, 1.0),
            piped(prog("loop2", 0.0, 0.0, 0.0, 1.0), 1.02, 1.01),
            piped(prog("reader", 0.0, 0.0, 0.0, 1.0), 1.4, 1.2),
        ];
        let train = TrainingSet::new(train_progs.clone(), all_pairs(&train_progs, truth)).unwrap();
        let mut m = Mechanism::default();
        m.fit(&train).unwrap();
        let w = m.weights().unwrap().1;
        assert!((w[6] - 0.9).abs() < 1e-6, "{w:?}");
        // A pipeline never seen: slowed 3x by the pipe, pushing it 1.3x.
        let openssl = piped(prog("openssl", 0.0, 0.0, 0.0, 1.0), 3.0, 1.3);
        let got = m.predict_pair(&openssl, &openssl).slowdown;
        assert!((got - truth(&openssl, &openssl)).abs() < 0.01, "{got} vs {}", truth(&openssl, &openssl));
        // Beside a loop, which does not push the pipe path: about nothing;
        // and below the floor a pipe point is noise, not a push.
        let quiet = m.predict_pair(&openssl, &train_progs[2]).slowdown;
        assert!((quiet - 0.01f64.exp()).abs() < 0.01, "{quiet}");
        // Without pipe points the term is absent.
        assert_eq!(pipe(&prog("bare", 0.0, 0.0, 0.0, 1.0)), (0.0, 0.0));
    }

    #[test]
    fn an_io_product_learned_on_one_set_predicts_a_disk_pair_of_another() {
        // Training: two readers and a writer on one disk, two loops.
        let busy = |c: &Characterization| c.profile.as_ref().unwrap().summary.cores_used;
        let truth = |v: &Characterization, o: &Characterization| {
            (0.01 + 1.2 * stall(v).0 * stall(o).0 + 0.8 * spill(v) * busy(o) + 0.5 * spill(o) * busy(v)).exp()
        };
        let train_progs = vec![
            prog("reader", 0.5, 0.0, 0.0, 0.6),
            prog("writer", 0.3, 0.0, 0.0, 0.7),
            prog("spiller", 0.1, 0.0, 0.2, 1.0),
            prog("loop", 0.0, 0.0, 0.0, 1.0),
            prog("loop2", 0.0, 0.0, 0.0, 1.0),
        ];
        let train = TrainingSet::new(train_progs.clone(), all_pairs(&train_progs, truth)).unwrap();
        let mut m = Mechanism::default();
        m.fit(&train).unwrap();
        let (a, w) = m.weights().unwrap();
        let want = [0.0, 0.0, 1.2, 0.8, 0.5, 0.0, 0.0];
        assert!((a - 0.01).abs() < 1e-9 && w.iter().zip(want).all(|(g, e)| (g - e).abs() < 1e-9), "{a} {w:?}");
        // A program never seen beside itself: the product carries over.
        let fileio = prog("fileio", 0.45, 0.0, 0.0, 0.5);
        let got = m.predict_pair(&fileio, &fileio).slowdown;
        assert!((got - truth(&fileio, &fileio)).abs() < 0.02, "{got} vs {}", truth(&fileio, &fileio));
        // A disk busier than any training program is read at the edge:
        // its I/O product beside the reader is held to the largest trained
        // (the reader beside itself), not extrapolated.
        let hog = prog("hog", 0.95, 0.0, 0.0, 0.6);
        let edge = m.predict_pair(&train_progs[0], &train_progs[0]).slowdown;
        assert!((m.predict_pair(&hog, &train_progs[0]).slowdown - edge).abs() < 1e-9);
        // A loop beside it: about nothing.
        let quiet = m.predict_pair(&train_progs[3], &fileio).slowdown;
        assert!((quiet - 0.01f64.exp()).abs() < 0.03, "{quiet}");
        // Without the I/O figures the I/O term is absent, and the fit says
        // nothing about disks: the reader beside the writer reads as quiet.
        let blind: Vec<Characterization> = train_progs.iter().map(|c| prog(&c.name, 0.0, 0.0, spill(c), 1.0)).collect();
        let train = TrainingSet::new(blind.clone(), all_pairs(&train_progs, truth)).unwrap();
        let mut m = Mechanism::default();
        m.fit(&train).unwrap();
        assert_eq!(m.weights().unwrap().1[2], 0.0);
    }
}
