//! `nearest`: programs that look alike alone interfere alike. Each program
//! is a point: its solo figures (host load, system-call, context-switch and
//! I/O rates; the I/O and CPU stall shares and the CPU busy outside its
//! cores where every training program has them) and its probe curves
//! level by level (ln sensitivity, ln contentiousness), each coordinate
//! standardized over the training programs. A pair (victim, co-runner) is
//! the two points side by side, and its slowdown is the kernel-weighted
//! geometric mean of the measured training pairs:
//!
//! `ln s = sum_k w_k ln s_k / sum_k w_k`, `w_k = exp(-(d_k^2 - d_min^2) / h^2)`
//!
//! where `d_k^2` is the victim-to-victim plus co-runner-to-co-runner squared
//! distance (mean over coordinates) to training pair k. Subtracting the
//! nearest distance keeps the weights finite however far the query lies.
//!
//! It generalises the Terrible Twins paper's twins: a twin is a neighbour at distance 0, and
//! a stress-ng stressor held out is predicted from the pairs of the kernel
//! that loads the node the same way. The width `h` is chosen by an inner
//! leave-one-program-out over the training set (every pair of one program
//! held out in turn), and the interval comes from those inner out-of-sample
//! errors, not from in-sample fits, which for a neighbour method are
//! near-perfect by construction.

use cosched_model::probe::ProbeLevel;

use crate::features::Features;
use crate::fit::Band;
use crate::predictors::need_pairs;
use crate::{Characterization, PredictError, Prediction, Predictor, TrainingSet};
use cosched_model::params::{Kind, Param, Range};
use super::PredictorEntry;

/// Candidate widths `h` (in standardized units: two unrelated programs lie
/// about d^2 = 2 apart per side).
const WIDTHS: [f64; 10] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.5, 4.0];

pub(super) const NEAREST: PredictorEntry = PredictorEntry {
    name: "nearest",
    summary: "twins generalised: kernel-weighted mean of the measured pairs whose programs look most alike alone",
    params: &[Param::optional(
        "width",
        Kind::Float(Range::POSITIVE),
        "chosen by inner leave-one-program-out",
        "kernel width h over standardized distances",
    )],
    make: |p| Ok(Box::new(p.float_opt("width").map_or_else(Nearest::default, Nearest::with_width))),
};

#[derive(Debug, Clone, Default)]
pub struct Nearest {
    levels: Vec<ProbeLevel>,
    centre: Vec<f64>,
    scale: Vec<f64>,
    /// Training pairs: victim's and co-runner's standardized points, ln slowdown.
    pairs: Vec<(Vec<f64>, Vec<f64>, f64)>,
    /// Fixed by the `width` parameter; chosen by inner CV otherwise.
    fixed: Option<f64>,
    width: f64,
    band: Band,
    /// Whether points carry the stall shares (I/O, CPU) and the CPU kept
    /// busy outside the job's cores: only when every training program has
    /// them.
    stalls: bool,
}

/// The job's (I/O, CPU) stall shares and the CPU it keeps busy outside
/// its cores, alone, if its profile has them.
fn solo_extras(c: &Characterization) -> Option<(f64, f64, f64)> {
    let p = &c.profile.as_ref()?.summary;
    let s = p.stall?;
    Some((s.io, s.cpu, p.collateral?))
}

fn raw_point(levels: &[ProbeLevel], stalls: bool, c: &Characterization) -> Vec<f64> {
    let f = Features::of(c);
    let mut x = vec![f.host_load, f.ln_syscalls, f.ln_ctx, f.ln_io];
    if stalls {
        // NaN for a program measured without them: it then sits at the
        // training centre on these coordinates (see `point`).
        let (io, cpu, outside) = solo_extras(c).unwrap_or((f64::NAN, f64::NAN, f64::NAN));
        x.extend([io, cpu, outside]);
    }
    for l in levels {
        x.push(f.sensitivity_at(l).max(1e-3).ln());
        x.push(f.contentiousness_at(l).max(1e-3).ln());
    }
    x
}

fn dist2(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / a.len() as f64
}

/// The kernel-weighted mean of `ys` at squared distances `d2`, or `None`
/// without any neighbour.
fn weighted(d2: &[f64], ys: &[f64], width: f64) -> Option<f64> {
    let min = d2.iter().copied().fold(f64::INFINITY, f64::min);
    if !min.is_finite() {
        return None;
    }
    let h2 = width * width;
    let (mut num, mut den) = (0.0, 0.0);
    for (d, y) in d2.iter().zip(ys) {
        let w = (-(d - min) / h2).exp();
        num += w * y;
        den += w;
    }
    Some(num / den)
}

impl Nearest {
    /// A predictor with a fixed width instead of one chosen by inner CV.
    pub fn with_width(width: f64) -> Nearest {
        Nearest { fixed: Some(width), ..Nearest::default() }
    }

    /// The width in use (fixed or chosen).
    pub fn width(&self) -> f64 {
        self.width
    }

    fn point(&self, c: &Characterization) -> Vec<f64> {
        raw_point(&self.levels, self.stalls, c)
            .iter()
            .zip(self.centre.iter().zip(&self.scale))
            .map(|(x, (m, s))| if *s > 0.0 && x.is_finite() { (x - m) / s } else { 0.0 })
            .collect()
    }
}

impl Predictor for Nearest {
    fn name(&self) -> &'static str {
        "nearest"
    }

    fn fit(&mut self, train: &TrainingSet) -> Result<(), PredictError> {
        need_pairs(self.name(), train)?;
        // Only the programs the pairs involve shape the model, so a program
        // without pairs (held out) changes nothing.
        let mut used: Vec<&Characterization> = train
            .pairs
            .iter()
            .flat_map(|p| [train.program(&p.victim), train.program(&p.aggressor)])
            .flatten()
            .collect();
        used.sort_by(|a, b| a.name.cmp(&b.name));
        used.dedup_by(|a, b| a.name == b.name);
        let mut levels: Vec<ProbeLevel> = used.iter().flat_map(|c| c.probe.iter().map(|p| p.level)).collect();
        levels.sort_by(|a, b| (a.intensity, a.size_kib).partial_cmp(&(b.intensity, b.size_kib)).expect("finite"));
        levels.dedup();
        self.levels = levels;
        self.stalls = !used.is_empty() && used.iter().all(|c| solo_extras(c).is_some());
        let raws: Vec<Vec<f64>> = used.iter().map(|c| raw_point(&self.levels, self.stalls, c)).collect();
        let dim = raws.first().map_or(0, Vec::len);
        let n = raws.len() as f64;
        self.centre = (0..dim).map(|i| raws.iter().map(|r| r[i]).sum::<f64>() / n).collect();
        self.scale = (0..dim)
            .map(|i| {
                let var = raws.iter().map(|r| (r[i] - self.centre[i]).powi(2)).sum::<f64>() / n;
                if var > 1e-18 {
                    var.sqrt()
                } else {
                    0.0
                }
            })
            .collect();
        // (victim point, co-runner point, ln s, victim program, co-runner program)
        let mut rows = Vec::new();
        for p in &train.pairs {
            let (Some(v), Some(o)) = (train.program(&p.victim), train.program(&p.aggressor)) else { continue };
            rows.push((self.point(v), self.point(o), p.median().ln(), v.program.clone(), o.program.clone()));
        }
        let mut keys: Vec<&str> = rows.iter().flat_map(|r| [r.3.as_str(), r.4.as_str()]).collect();
        keys.sort();
        keys.dedup();
        // Inner leave-one-program-out: squared distances from each row to
        // every row that shares no program with it, once for all widths.
        let neighbours: Vec<(Vec<f64>, Vec<f64>)> = rows
            .iter()
            .map(|q| {
                rows.iter()
                    .filter(|r| {
                        let shared = [&q.3, &q.4];
                        !shared.contains(&&r.3) && !shared.contains(&&r.4)
                    })
                    .map(|r| (dist2(&q.0, &r.0) + dist2(&q.1, &r.1), r.2))
                    .unzip()
            })
            .collect();
        let inner = |width: f64| -> Vec<(f64, f64)> {
            rows.iter()
                .zip(&neighbours)
                .filter_map(|(q, (d2, ys))| weighted(d2, ys, width).map(|y| (q.2, y)))
                .collect()
        };
        let width = match self.fixed {
            Some(w) => w,
            None if keys.len() >= 3 => {
                let mut best = (f64::INFINITY, WIDTHS[WIDTHS.len() / 2]);
                for &w in &WIDTHS {
                    let sse: f64 = inner(w).iter().map(|(m, p)| (m - p).powi(2)).sum();
                    if sse < best.0 {
                        best = (sse, w);
                    }
                }
                best.1
            }
            None => WIDTHS[WIDTHS.len() / 2],
        };
        self.width = width;
        self.band = Band::of(&inner(width).iter().map(|(m, p)| (m.exp(), p.exp())).collect::<Vec<_>>());
        self.pairs = rows.into_iter().map(|r| (r.0, r.1, r.2)).collect();
        Ok(())
    }

    fn predict_pair(&self, victim: &Characterization, other: &Characterization) -> Prediction {
        let (v, o) = (self.point(victim), self.point(other));
        let (d2, ys): (Vec<f64>, Vec<f64>) =
            self.pairs.iter().map(|(pv, po, y)| (dist2(&v, pv) + dist2(&o, po), *y)).unzip();
        match weighted(&d2, &ys, self.width) {
            Some(y) => self.band.around(y.exp()),
            None => Prediction::alone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::{all_pairs, curve_program, with_load};

    /// Streaming-like and core-bound-like programs, each with a small
    /// per-program jitter in its curves.
    fn family(name: &str, streaming: bool, jitter: f64) -> Characterization {
        let c = if streaming {
            curve_program(
                name,
                [1.0, 1.0, 1.05, 1.2 + jitter, 1.5 + jitter, 1.6],
                [1.0, 1.0, 1.0, 1.2, 1.5 + jitter, 1.6 + jitter],
            )
        } else {
            curve_program(name, [1.0; 6], [1.0, 1.0 + jitter, 1.0, 1.0, 1.0, 1.0])
        };
        with_load(c, 0.5, 10.0)
    }

    fn truth(v: &Characterization, o: &Characterization) -> f64 {
        let s = |c: &Characterization| c.probe[4].job_slowdown.median > 1.3;
        match (s(v), s(o)) {
            (true, true) => 1.5,
            (true, false) => 1.1,
            _ => 1.0,
        }
    }

    #[test]
    fn a_held_out_program_takes_its_lookalikes_interference() {
        let progs: Vec<Characterization> = (0..8)
            .map(|i| family(&format!("p{i}"), i % 2 == 0, 0.01 * i as f64))
            .collect();
        let all = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        for held in [&progs[2], &progs[5]] {
            let mut p = Nearest::default();
            p.fit(&all.without_program(&held.program)).unwrap();
            for o in &progs {
                for (v, w) in [(held, o), (o, held)] {
                    let got = p.predict_pair(v, w).slowdown;
                    assert!((got / truth(v, w) - 1.0).abs() < 0.01, "{} {}: {got} vs {}", v.name, w.name, truth(v, w));
                }
            }
        }
    }

    #[test]
    fn a_twin_at_distance_zero_gets_its_twins_measurement_with_a_narrow_width() {
        // a and c are identical alone; b differs. Only a's pairs are known.
        let a = family("a", true, 0.0);
        let b = family("b", false, 0.0);
        let c = Characterization { name: "c".into(), program: "program c".into(), ..a.clone() };
        let pairs = vec![
            crate::testdata::pair("a", "a", 1.5),
            crate::testdata::pair("a", "b", 1.2),
            crate::testdata::pair("b", "a", 1.05),
            crate::testdata::pair("b", "b", 1.0),
        ];
        let t = TrainingSet::new(vec![a, b.clone(), c.clone()], pairs).unwrap();
        let mut p = Nearest::with_width(0.05);
        p.fit(&t).unwrap();
        assert!((p.predict_pair(&c, &b).slowdown - 1.2).abs() < 1e-9);
        assert!((p.predict_pair(&b, &c).slowdown - 1.05).abs() < 1e-9);
        assert!((p.predict_pair(&c, &c).slowdown - 1.5).abs() < 1e-9);
        // A wide kernel averages every pair: the geometric mean.
        let mut wide = Nearest::with_width(1e6);
        wide.fit(&t).unwrap();
        let gm = (1.5f64 * 1.2 * 1.05 * 1.0).powf(0.25);
        assert!((wide.predict_pair(&c, &b).slowdown - gm).abs() < 1e-9);
    }

    #[test]
    fn stall_shares_find_the_io_lookalike_that_nothing_else_tells_apart() {
        // Identical alone but for the I/O stall share: "disk" jobs slow each
        // other, "cpu" jobs slow nothing. A held-out disk job must be taken
        // for a disk job.
        let with_io = |name: &str, io: f64| {
            let mut c = family(name, false, 0.0);
            c.program = format!("program {name}");
            c.profile.as_mut().unwrap().summary.stall = Some(cosched_model::profile::Stall { cpu: 0.0, io, memory: 0.0 });
            c.profile.as_mut().unwrap().summary.collateral = Some(0.02);
            c
        };
        let progs = vec![with_io("d1", 0.7), with_io("d2", 0.75), with_io("c1", 0.0), with_io("c2", 0.02), with_io("d3", 0.72)];
        let disk = |c: &Characterization| c.profile.as_ref().unwrap().summary.stall.unwrap().io > 0.5;
        let truth = |v: &Characterization, o: &Characterization| if disk(v) && disk(o) { 1.7 } else { 1.0 };
        let all = TrainingSet::new(progs.clone(), all_pairs(&progs, truth)).unwrap();
        let mut p = Nearest::default();
        p.fit(&all.without_program(&progs[4].program)).unwrap();
        assert!(p.stalls);
        let got = p.predict_pair(&progs[4], &progs[0]).slowdown;
        assert!((got - 1.7).abs() < 0.1, "held-out disk job beside a disk job: {got}");
        let calm = p.predict_pair(&progs[4], &progs[2]).slowdown;
        assert!((calm - 1.0).abs() < 0.1, "beside a loop: {calm}");
        // Without stalls in one program's profile, none are used.
        let mut mixed = progs.clone();
        mixed[1].profile.as_mut().unwrap().summary.stall = None;
        let mut q = Nearest::default();
        q.fit(&TrainingSet::new(mixed.clone(), all_pairs(&mixed, |_, _| 1.0)).unwrap()).unwrap();
        assert!(!q.stalls);
    }
}
