//! Synthetic characterizations with known shapes, for tests.

use std::collections::BTreeMap;

use cosched_model::probe::{ProbeLevel, ProbePoint};
use cosched_model::profile::{JobProfile, ProfileSummary, SyscallSource};
use cosched_model::stats::Summary;

use crate::{Characterization, PairSamples};

pub const LLC: u64 = 32768;

/// The probe ladder of the synthetic node: private cache, inside the LLC,
/// its edge, and beyond it.
pub const SIZES: [u64; 6] = [256, 8192, 16384, 32768, 131072, 524288];

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Never slowed.
    N,
    /// Slowed 1.4x inside the LLC, 1.6x beyond.
    C,
    /// Slowed 1.5x beyond the LLC only.
    S,
}

fn summary(v: f64) -> Summary {
    Summary::of(&[v]).unwrap()
}

/// A program whose probe curve has `shape` and which slows a streaming
/// stressor by `1 + bw`.
pub fn probe_program(name: &str, shape: Shape, bw: f64) -> Characterization {
    let probe = SIZES
        .iter()
        .map(|&size_kib| {
            let inside = size_kib * 2 <= LLC && size_kib > 256;
            let beyond = size_kib > LLC;
            let sens = match shape {
                Shape::N => 1.0,
                Shape::C if inside => 1.4,
                Shape::C if beyond => 1.6,
                Shape::S if beyond => 1.5,
                _ => 1.0,
            };
            let cont = if beyond { 1.0 + bw } else { 1.0 };
            ProbePoint {
                level: ProbeLevel { size_kib, intensity: 1.0 },
                job_slowdown: summary(sens),
                stressor_slowdown: summary(cont),
            }
        })
        .collect();
    Characterization {
        name: name.into(),
        program: format!("program {name}"),
        cores: 1,
        profile: None,
        probe,
        llc_kib: Some(LLC),
        stressors: Default::default(),
    }
}

/// A program with a custom probe curve: sensitivity and contentiousness per
/// size of [`SIZES`].
pub fn curve_program(name: &str, sens: [f64; 6], cont: [f64; 6]) -> Characterization {
    let mut c = probe_program(name, Shape::N, 0.0);
    for (i, p) in c.probe.iter_mut().enumerate() {
        p.job_slowdown = summary(sens[i]);
        p.stressor_slowdown = summary(cont[i]);
    }
    c
}

/// `c` with a solo profile of host load `u` and `syscalls` per second.
pub fn with_load(mut c: Characterization, u: f64, syscalls: f64) -> Characterization {
    let s = ProfileSummary {
        wall_s: 1.0,
        host_load_mean: u,
        host_load_peak: u,
        cores_used: u * 2.0,
        syscall_rate: Some(syscalls),
        syscall_count: Some(syscalls as u64),
        syscall_source: SyscallSource::PerfTracepoint,
        vol_ctx_rate: 0.0,
        invol_ctx_rate: 0.0,
        read_bps: 0.0,
        write_bps: 0.0,
        max_rss_kib: 1000,
        fault_rate: 0.0,
        counters: BTreeMap::new(),
        stall: None,
        collateral: None,
    };
    c.profile = JobProfile::from_runs(&[(1.0, s)], "process", None, Vec::new());
    c
}

pub fn pair(victim: &str, aggressor: &str, s: f64) -> PairSamples {
    PairSamples { victim: victim.into(), aggressor: aggressor.into(), slowdowns: vec![s] }
}

/// Every ordered pair (twins included) of `programs`, measured by `truth`.
pub fn all_pairs(
    programs: &[Characterization],
    truth: impl Fn(&Characterization, &Characterization) -> f64,
) -> Vec<PairSamples> {
    let mut v = Vec::new();
    for a in programs {
        for b in programs {
            v.push(pair(&a.name, &b.name, truth(a, b)));
        }
    }
    v
}

/// `c` (which has a profile) with a miss-ratio curve whose every point
/// counts `refs` data references, and a solo time of `solo_s`.
pub fn with_curve(mut c: Characterization, points: Vec<cosched_model::profile::MissPoint>, refs: u64, solo_s: f64) -> Characterization {
    let p = c.profile.as_mut().expect("with_curve needs a profile");
    p.miss_curve = points.into_iter().map(|m| cosched_model::profile::MissPoint { refs, ..m }).collect();
    p.solo_s = summary(solo_s);
    c
}
