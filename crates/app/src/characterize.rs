//! `cosched characterize`: the cheap way to know a new program. Each job
//! whose program the store does not know yet (by identity, across every
//! workload: [`cosched_learn::knowledge`]) runs once alone, profiled, and against
//! a short DistGen ladder, within a budget stated in multiples of its solo
//! time; it is never co-run with the workload's other programs. Predictors
//! then place it beside every program the store knows from these solo
//! measurements (`evaluate-predictors --train` says how well).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cosched_measure::identity::program_key;
use cosched_model::regime::CacheRegime;
use serde::Serialize;

use cosched_learn::knowledge::{knowledge_base, KbFilter};
use cosched_measure::launch::{handle_terminal_stop, install_interrupt_handler, TerminalStop};

use crate::common::{db_path, load_workload, open_store, Ctx};
use crate::error::bad_input;
use crate::probe::{probe_in, probe_inputs, ProbeRequest, Stressor, PIPE_LEVEL, STRESSOR};
use crate::profile::{profile_in, ProfileSettings, Syscalls};

/// A probe level costs three solo times (the job alone, the stressor alone
/// for as long, then both) plus the job's slowdown beside the stressor and
/// the launches: 3.1-3.2 measured over 22 applications (2026-11-24, where
/// planning at 3.0 made a 10x budget cost a median 10.4x); the profile one
/// more.
const SOLO_RUNS_PER_LEVEL: f64 = 3.4;
const SOLO_RUNS_FOR_PROFILE: f64 = 1.0;

#[derive(Debug, Clone)]
pub struct CharacterizeRequest {
    pub workload: PathBuf,
    /// Most a new program may cost, in multiples of its solo time.
    pub budget: f64,
    /// Probe in this cache regime only: a program is known once it has
    /// points in it at every level of the short ladder, and its probe
    /// repeats count only when run wholly in it.
    pub in_regime: Option<CacheRegime>,
    /// Give up after waiting this long at once for `in_regime`.
    pub regime_wait: Duration,
    pub db: Option<PathBuf>,
}

/// One program of the workload.
#[derive(Debug, Clone, Serialize)]
pub struct Characterized {
    pub job: String,
    pub identity: String,
    /// `known` (the store had its profile and probe), or what was measured.
    pub action: String,
    pub solo_s: Option<f64>,
    /// Wall time spent characterizing it, seconds.
    pub cost_s: f64,
    /// `cost_s / solo_s`.
    pub cost_ratio: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CharacterizeReport {
    pub workload: String,
    pub budget: f64,
    /// The probe points of the short ladder.
    pub ladder: Vec<ProbeStep>,
    pub programs: Vec<Characterized>,
    /// Median cost ratio of the programs characterized now.
    pub median_ratio: Option<f64>,
}

/// One probe point of the short ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeStep {
    /// DistGen at this working set (KiB), full intensity.
    Distgen(u64),
    /// The pipe stressor's one point.
    Pipe,
}

/// The probe points the budget affords: the first `n` of a list ordered by
/// what they tell apart (DistGen inside the LLC, far beyond it, inside L2,
/// at the LLC's size), then the pipe stressor, which on the reference node
/// slowed no program measured (2026-11-25, docs/measurements.md): it is
/// there for nodes where the pipe path is contended, at a budget of 18.
pub fn short_ladder(budget: f64, l2_kib: u64, llc_kib: u64) -> Vec<ProbeStep> {
    let n = ((budget - SOLO_RUNS_FOR_PROFILE) / SOLO_RUNS_PER_LEVEL).floor().clamp(1.0, 5.0) as usize;
    let l2 = l2_kib.max(64);
    let llc = llc_kib.max(2 * l2);
    let mut order = vec![
        ProbeStep::Distgen(llc / 2),
        ProbeStep::Distgen(llc * 4),
        ProbeStep::Distgen(l2 / 2),
        ProbeStep::Distgen(llc),
        ProbeStep::Pipe,
    ];
    order.dedup();
    order.truncate(n);
    order
}

/// The short ladder's DistGen sizes (KiB, as text) still to measure for a
/// program: without a regime, all of them for a program never probed and
/// none for one probed before; in a regime, those without points in it
/// (`levels`: the program's levels with points in the regime).
fn missing_levels<'a>(
    regime: Option<CacheRegime>,
    distgen: &'a [String],
    probed: bool,
    levels: Option<&BTreeSet<(String, u64, u64)>>,
) -> Vec<&'a String> {
    let has = |kib: &String| {
        let kib: u64 = kib.parse().expect("formatted from a u64");
        levels.is_some_and(|l| l.contains(&(STRESSOR.to_string(), kib, 1.0f64.to_bits())))
    };
    match regime {
        None if probed => Vec::new(),
        None => distgen.iter().collect(),
        Some(_) => distgen.iter().filter(|k| !has(k)).collect(),
    }
}

pub fn characterize(req: &CharacterizeRequest, ctx: &Ctx) -> anyhow::Result<CharacterizeReport> {
    if !(req.budget >= SOLO_RUNS_FOR_PROFILE + SOLO_RUNS_PER_LEVEL && req.budget.is_finite()) {
        return Err(bad_input(format!(
            "--budget {}: a profile and one probe level cost about {} solo times; give at least that",
            req.budget,
            SOLO_RUNS_FOR_PROFILE + SOLO_RUNS_PER_LEVEL
        )));
    }
    // The workload parsed, the store opened and calibration checked once
    // for every job: each program's profile and probe below are library
    // calls on them.
    let w = load_workload(&req.workload)?;
    let db = db_path(req.db.as_deref());
    crate::common::node_pools(&w).map_err(|e| bad_input(format!("{}: {e}", req.workload.display())))?;
    // Held across its profiles and probes, so nothing measures in between.
    let _lock = crate::lock::take("characterize", None)?;
    let mut store = open_store(&db)?;
    install_interrupt_handler();
    handle_terminal_stop(TerminalStop::AtPausePoints);
    crate::calibrate::calibrate_missing(&w, &mut store, ctx)?;
    let cals = store.calibrations()?;
    let kb = knowledge_base(&store, &KbFilter { regime: req.in_regime, ..KbFilter::default() })?;
    let (l2, llc) = match cosched_measure::topology::detect() {
        Ok(node) => crate::probe::cache_sizes(&node),
        Err(_) => (None, None),
    };
    let ladder = short_ladder(req.budget, l2.unwrap_or(1024), llc.unwrap_or(32 * 1024));
    let distgen: Vec<String> =
        ladder.iter().filter_map(|p| if let ProbeStep::Distgen(k) = p { Some(k.to_string()) } else { None }).collect();
    let wants_pipe = ladder.contains(&ProbeStep::Pipe);
    let pipe = Stressor::Pipe.name();

    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for job in &w.jobs {
        let argv = cosched_measure::kernel::job_argv(job, &cals).map_err(anyhow::Error::msg)?;
        let identity = program_key(job.kernel().is_some(), &argv, job.cores);
        if seen.contains(&identity) {
            continue; // a twin: one program, characterized once
        }
        seen.push(identity.clone());
        let known = kb.set.programs.get(&identity);
        let has_profile = known.is_some_and(|c| c.profile.is_some());
        let in_regime = kb.levels_in_regime.get(&identity);
        let missing = missing_levels(req.in_regime, &distgen, known.is_some_and(|c| !c.probe.is_empty()), in_regime);
        let has_probe = missing.is_empty();
        let has_pipe = !wants_pipe
            || match req.in_regime {
                None => known.is_some_and(|c| c.stressors.contains_key(pipe)),
                Some(_) => in_regime.is_some_and(|l| l.contains(&(pipe.to_string(), PIPE_LEVEL.size_kib, 1.0f64.to_bits()))),
            };
        if has_profile && has_probe && has_pipe {
            out.push(Characterized {
                job: job.name.clone(),
                identity,
                action: "known".into(),
                solo_s: known.and_then(|c| c.profile.as_ref()).map(|p| p.solo_s.median),
                cost_s: 0.0,
                cost_ratio: None,
            });
            continue;
        }
        let started = Instant::now();
        let mut did = Vec::new();
        let mut solo = known.and_then(|c| c.profile.as_ref()).map(|p| p.solo_s.median);
        if !has_profile {
            ctx.step(&format!("characterize {}: one profiled solo run", job.name));
            let settings = ProfileSettings { interval: Duration::from_millis(100), repeats: 1, syscalls: Syscalls::PROC };
            let p = profile_in(&w, &[job], &mut store, &settings, ctx)?;
            solo = p.profiles.first().map(|(_, jp)| jp.solo_s.median);
            did.push("profile".to_string());
        }
        // As long as the job alone, so a level costs about three solo times.
        let one = |stressor, sizes_kib: Option<String>| ProbeRequest {
            workload: req.workload.clone(),
            jobs: vec![job.name.clone()],
            stressor,
            setup: Default::default(),
            repeats: 1,
            intensities: sizes_kib.as_ref().map(|_| "1.0".into()),
            sizes_kib,
            stressor_seconds: solo.unwrap_or(1.0).max(0.05),
            svg_dir: None,
            in_regime: req.in_regime,
            regime_wait: req.regime_wait,
            db: Some(db.clone()),
        };
        let probe_one = |r: &ProbeRequest, store: &mut cosched_store::Store| -> anyhow::Result<Vec<crate::probe::JobProbe>> { probe_in(r, &probe_inputs(r, &w, (l2, llc))?, store, ctx) };
        // Waiting for a regime is the node's cost, not the program's.
        let mut waited_s = 0.0;
        if !has_probe {
            let sizes: Vec<&str> = missing.iter().map(|k| k.as_str()).collect();
            let sizes = sizes.join(",");
            ctx.step(&format!("characterize {}: {} DistGen level(s) ({sizes} KiB)", job.name, missing.len()));
            let done = probe_one(&one(Stressor::Distgen, Some(sizes)), &mut store)?;
            waited_s += done.iter().map(|p| p.waited_s).sum::<f64>();
            did.push(format!("probe ({} levels)", missing.len()));
        }
        if !has_pipe {
            ctx.step(&format!("characterize {}: the pipe stressor", job.name));
            let done = probe_one(&one(Stressor::Pipe, None), &mut store)?;
            waited_s += done.iter().map(|p| p.waited_s).sum::<f64>();
            did.push("pipe".to_string());
        }
        let cost_s = (started.elapsed().as_secs_f64() - waited_s).max(0.0);
        out.push(Characterized {
            job: job.name.clone(),
            identity,
            action: did.join(" + "),
            solo_s: solo,
            cost_s,
            cost_ratio: solo.filter(|s| *s > 0.0).map(|s| cost_s / s),
        });
    }
    let ratios: Vec<f64> = out.iter().filter_map(|c| c.cost_ratio).collect();
    Ok(CharacterizeReport {
        workload: w.name.clone(),
        budget: req.budget,
        ladder,
        programs: out,
        median_ratio: (!ratios.is_empty()).then(|| cosched_model::stats::median(&ratios)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_a_regime_only_the_levels_without_points_in_it_are_measured_again() {
        let ladder = vec!["16384".to_string(), "131072".to_string()];
        let apart_16m: BTreeSet<_> = [(STRESSOR.to_string(), 16384, 1.0f64.to_bits())].into();
        assert_eq!(missing_levels(None, &ladder, true, Some(&apart_16m)), Vec::<&String>::new(), "probed, no regime asked: known");
        assert_eq!(missing_levels(None, &ladder, false, None), vec!["16384", "131072"], "never probed: the whole ladder");
        assert_eq!(missing_levels(Some(CacheRegime::Apart), &ladder, true, Some(&apart_16m)), vec!["131072"]);
        assert_eq!(missing_levels(Some(CacheRegime::Shared), &ladder, true, None), vec!["16384", "131072"]);
    }

    #[test]
    fn the_budget_buys_probe_levels_at_their_measured_cost() {
        use ProbeStep::*;
        // 10x: a profile (1) and two levels (6.8); 12x: three (10.2); 5x:
        // one; 18x: all five (18); 100x: five at most.
        assert_eq!(short_ladder(10.0, 1024, 32 * 1024), vec![Distgen(16 * 1024), Distgen(128 * 1024)]);
        assert_eq!(short_ladder(12.0, 1024, 32 * 1024), vec![Distgen(16 * 1024), Distgen(128 * 1024), Distgen(512)]);
        assert_eq!(short_ladder(18.0, 1024, 32 * 1024).last(), Some(&Pipe));
        assert_eq!(short_ladder(5.0, 1024, 32 * 1024), vec![Distgen(16 * 1024)]);
        assert_eq!(short_ladder(100.0, 1024, 32 * 1024), vec![Distgen(16 * 1024), Distgen(128 * 1024), Distgen(512), Distgen(32 * 1024), Pipe]);
    }
}
