//! Online slowdown estimates of running jobs, from progress readings taken
//! while they run: the pure half of issue 38's loop (sampling is I/O and
//! lives in `cosched_measure::observe`; the simulator's `VirtualNode`
//! reads its own virtual progress).
//!
//! A job's estimate is its progress rate alone over its rate now,
//! `solo_rate / rate`. The rate now is read from the segments between
//! consecutive readings of the current *phase* (the run loop starts a new
//! phase for every job of the node when its set of running jobs changes,
//! since the co-runners make the rate); each segment gives one rate, and
//! the estimate is the median rate's inverse with the median's
//! distribution-free interval (`model::stats`), so one late reading
//! widens the interval instead of moving the point. The solo rate is the
//! job's total work over its solo time (the store's solo runs, or the
//! run's solo pass), or a rate the observer knows itself.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use cosched_model::stats::Summary;

use crate::slowdown::SlowdownSource;
use crate::JobId;

/// What a reading counts, which decides how far it is believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    /// The job's own progress: a kernel's work counter, a command's
    /// output matched by its workload's `progress` regex.
    Progress,
    /// Hardware counters: instructions retired against the solo run's rate.
    Counters,
    /// CPU time of the job's cgroup: a job that waits on I/O or memory
    /// still burns CPU, so this is shown but never settles or acts.
    Weak,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Progress => "progress",
            Signal::Counters => "counters",
            Signal::Weak => "cpu",
        }
    }

    /// Whether an estimate of this signal may settle (be learned, be
    /// acted on).
    pub fn decisive(self) -> bool {
        self != Signal::Weak
    }
}

/// One reading of a running job's counter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// On the run's clock.
    pub time: f64,
    /// Work done so far, in the observer's units.
    pub done: f64,
    /// The job's whole work in the same units, when known.
    pub total: Option<f64>,
    /// Units per second the job makes alone, when the observer knows it
    /// (CPU time: its cores); else `total / solo` is used.
    pub solo_rate: Option<f64>,
    pub signal: Signal,
}

/// What an executor's sampling says of one job.
#[derive(Debug, Clone, PartialEq)]
pub enum Sample {
    Reading(Reading),
    /// The job's observer yields nothing (no counters, no matching line):
    /// said once per job; the job runs on untouched.
    Silent(String),
}

/// A running job's online slowdown estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// When it was computed, on the run's clock.
    pub time: f64,
    pub slowdown: f64,
    /// The ~95 % interval of the median segment rate, inverted (`hi` is
    /// infinite when a segment made no progress at all).
    pub lo: f64,
    pub hi: f64,
    /// Segments it rests on.
    pub n: usize,
    pub signal: Signal,
}

/// Segments an estimate needs before its interval means ~95 %
/// (`model::stats::median_ci_ranks` gives the whole range below 6).
pub const MIN_SEGMENTS: usize = 6;

/// Segments kept per phase: a long phase is judged by its recent rate.
pub const MAX_SEGMENTS: usize = 40;

/// Readings of one job in the current phase.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    points: Vec<(f64, f64)>,
    signal: Option<Signal>,
    total: Option<f64>,
    solo_rate: Option<f64>,
    /// The last reading's (time, done), kept across phases: how far the
    /// job is does not depend on who runs beside it.
    last: Option<(f64, f64)>,
}

impl Tracker {
    /// Forgets the phase: the next reading is the new phase's first point.
    pub fn reset(&mut self) {
        self.points.clear();
    }

    pub fn push(&mut self, r: &Reading) {
        if self.signal != Some(r.signal) {
            self.points.clear();
            self.signal = Some(r.signal);
        }
        self.total = r.total.or(self.total);
        self.solo_rate = r.solo_rate.or(self.solo_rate);
        self.last = Some((r.time, r.done));
        match self.points.last() {
            // A reading that does not advance the clock adds no segment.
            Some(&(t, _)) if r.time <= t => {}
            _ => self.points.push((r.time, r.done)),
        }
        if self.points.len() > MAX_SEGMENTS + 1 {
            self.points.remove(0);
        }
    }

    /// The share of its work done by the last reading, and when it was
    /// read: `None` without a total (CPU time, counters without one) or
    /// from a weak signal, whose units are not the job's work.
    pub fn done(&self) -> Option<(f64, f64)> {
        let (time, done) = self.last?;
        let total = self.total.filter(|t| t.is_finite() && *t > 0.0)?;
        self.signal.filter(|s| s.decisive())?;
        Some((time, (done / total).clamp(0.0, 1.0)))
    }

    /// The estimate at `time` for a job whose solo time is `solo_s`;
    /// `None` before two readings or without a solo rate.
    pub fn estimate(&self, time: f64, solo_s: f64) -> Option<Estimate> {
        let signal = self.signal?;
        let solo_rate = self.solo_rate.or_else(|| self.total.filter(|_| solo_s > 0.0).map(|t| t / solo_s))?;
        if !(solo_rate.is_finite() && solo_rate > 0.0) {
            return None;
        }
        let rates: Vec<f64> = self.points.windows(2).map(|w| ((w[1].1 - w[0].1) / (w[1].0 - w[0].0)).max(0.0)).collect();
        let s = Summary::of(&rates)?;
        let inv = |r: f64| if r > 0.0 { solo_rate / r } else { f64::INFINITY };
        Some(Estimate { time, slowdown: inv(s.median), lo: inv(s.ci_hi), hi: inv(s.ci_lo), n: s.n, signal })
    }
}

/// Whether `e` is settled against `predicted`: a decisive signal, enough
/// segments, and an interval that excludes the prediction by `margin`
/// (relative) on one side.
pub fn settled(e: &Estimate, predicted: f64, margin: f64) -> bool {
    e.signal.decisive() && e.n >= MIN_SEGMENTS && (e.lo > predicted * (1.0 + margin) || e.hi < predicted / (1.0 + margin))
}

/// Margin by which a settled interval excludes the prediction.
pub const SETTLE_MARGIN: f64 = 0.05;

/// A running pair's settled estimate: the observation a run learns from
/// at once (the app stores it as an online pair sample).
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    pub time: f64,
    pub job: JobId,
    /// Its one co-runner during the phase.
    pub beside: JobId,
    pub predicted: f64,
    pub estimate: Estimate,
}

/// What a policy's slowdown source says, with what the run has learned
/// and sees: settled pairs (by program, so every instance of the two
/// programs benefits) override the inner source's pairwise slowdowns, and
/// [`SlowdownSource::online`] gives each running job's estimate. Without
/// learned pairs it is the inner source exactly.
pub struct Informed<'a> {
    pub inner: &'a dyn SlowdownSource,
    /// Program key of each job, by id.
    pub programs: &'a [&'a str],
    /// (victim's program, co-runner's program) -> learned slowdown.
    pub learned: &'a BTreeMap<(String, String), f64>,
    pub estimates: &'a BTreeMap<JobId, Estimate>,
}

impl Informed<'_> {
    fn learned_pair(&self, job: JobId, b: JobId) -> Option<f64> {
        let (p, q) = (self.programs.get(job)?, self.programs.get(b)?);
        self.learned.get(&(p.to_string(), q.to_string())).copied()
    }

    fn any_learned(&self, job: JobId, beside: &[JobId]) -> bool {
        !self.learned.is_empty() && beside.iter().any(|&b| self.learned_pair(job, b).is_some())
    }
}

impl SlowdownSource for Informed<'_> {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        if !self.any_learned(job, beside) {
            return self.inner.slowdown(job, beside);
        }
        // The product rule of pairwise slowdowns (`sched::PairTable`).
        beside.iter().map(|&b| self.learned_pair(job, b).unwrap_or_else(|| self.inner.slowdown(job, &[b]))).product()
    }

    fn score(&self, a: JobId, b: JobId) -> f64 {
        self.inner.score(a, b)
    }

    fn slowdown_at(&self, job: JobId, beside: &[JobId], levels: &[Option<cosched_model::placement::SharingLevel>]) -> f64 {
        if !self.any_learned(job, beside) {
            return self.inner.slowdown_at(job, beside, levels);
        }
        self.slowdown(job, beside)
    }

    fn by_level(&self) -> bool {
        self.inner.by_level()
    }

    fn online(&self, job: JobId) -> Option<Estimate> {
        self.estimates.get(&job).copied().or_else(|| self.inner.online(job))
    }

    fn knowledge(&self) -> u64 {
        if self.learned.is_empty() {
            return self.inner.knowledge();
        }
        // SipHash with fixed keys: the same pairs give the same value in
        // every run, so a replay plans at the same instants.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.inner.knowledge().hash(&mut h);
        for ((a, b), s) in self.learned {
            (a, b, s.to_bits()).hash(&mut h);
        }
        // Never 0, which says that nothing is learned.
        h.finish() | 1
    }

    fn learned(&self, job: JobId, beside: JobId) -> Option<f64> {
        self.learned_pair(job, beside).or_else(|| self.inner.learned(job, beside))
    }
}

/// The run loop's online state: one tracker per running job, the phase
/// (the set of running jobs) they were reset for, and what was learned.
#[derive(Debug, Default)]
pub struct OnlineState {
    pub trackers: BTreeMap<JobId, Tracker>,
    pub estimates: BTreeMap<JobId, Estimate>,
    pub learned: BTreeMap<(String, String), f64>,
    phase: Vec<JobId>,
    /// Jobs whose pair settled in this phase (reported once).
    settled: BTreeSet<JobId>,
    /// Jobs whose observer said it yields nothing (said once).
    pub silent: BTreeMap<JobId, String>,
}

impl OnlineState {
    /// Starts a new phase for everyone when the running set differs from
    /// the last one seen; `active` is sorted.
    pub fn phase(&mut self, active: &[JobId]) {
        if self.phase != active {
            self.phase = active.to_vec();
            for t in self.trackers.values_mut() {
                t.reset();
            }
            self.estimates.clear();
            self.settled.clear();
        }
        self.trackers.retain(|j, _| active.contains(j));
    }

    /// Feeds a sample; returns the job's fresh estimate if any.
    pub fn feed(&mut self, job: JobId, sample: &Sample, solo_s: f64) -> Option<Estimate> {
        match sample {
            Sample::Silent(why) => {
                self.silent.entry(job).or_insert_with(|| why.clone());
                None
            }
            Sample::Reading(r) => {
                let t = self.trackers.entry(job).or_default();
                t.push(r);
                let e = t.estimate(r.time, solo_s)?;
                self.estimates.insert(job, e);
                Some(e)
            }
        }
    }

    /// The settled observation of `job` beside its one co-runner, once per
    /// phase; records it as learned (by program) before returning it.
    pub fn settle(&mut self, job: JobId, beside: JobId, predicted: f64, programs: &[&str]) -> Option<Settled> {
        let e = *self.estimates.get(&job)?;
        if self.settled.contains(&job) || !settled(&e, predicted, SETTLE_MARGIN) || !e.slowdown.is_finite() {
            return None;
        }
        self.settled.insert(job);
        self.learned.insert((programs[job].to_string(), programs[beside].to_string()), e.slowdown);
        Some(Settled { time: e.time, job, beside, predicted, estimate: e })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(time: f64, done: f64) -> Reading {
        Reading { time, done, total: Some(100.0), solo_rate: None, signal: Signal::Progress }
    }

    #[test]
    fn a_steady_stream_at_half_the_solo_rate_estimates_two() {
        // Total 100 units in 10 s alone: 10 units/s. Beside a co-runner
        // the job makes 5 units per second, read every 0.25 s.
        let mut t = Tracker::default();
        for k in 0..=8 {
            t.push(&reading(k as f64 * 0.25, k as f64 * 1.25));
        }
        let e = t.estimate(2.0, 10.0).unwrap();
        assert_eq!(e.n, 8);
        assert!((e.slowdown - 2.0).abs() < 1e-12, "{e:?}");
        assert!((e.lo - 2.0).abs() < 1e-12 && (e.hi - 2.0).abs() < 1e-12);
        assert!(settled(&e, 1.0, SETTLE_MARGIN));
        assert!(!settled(&e, 2.0, SETTLE_MARGIN));
    }

    #[test]
    fn one_stalled_segment_widens_the_interval_not_the_point() {
        let mut t = Tracker::default();
        let mut done = 0.0;
        for k in 0..=10 {
            if k != 5 {
                done += 2.5;
            }
            t.push(&reading(k as f64 * 0.25, done));
        }
        // Nine segments at 10/s (slowdown 1), one at 0: the median is 1,
        // and the interval of 10 segments (ranks 1 and 8) leaves the
        // stalled one out.
        let e = t.estimate(2.5, 10.0).unwrap();
        assert_eq!(e.slowdown, 1.0);
        assert_eq!((e.lo, e.hi), (1.0, 1.0));
        assert!(!settled(&e, 1.0, SETTLE_MARGIN));
    }

    #[test]
    fn too_few_segments_never_settle_and_weak_signals_never_settle() {
        let mut t = Tracker::default();
        for k in 0..=3 {
            t.push(&reading(k as f64, k as f64 * 2.0));
        }
        let e = t.estimate(3.0, 10.0).unwrap();
        assert_eq!(e.slowdown, 5.0);
        assert!(!settled(&e, 1.0, SETTLE_MARGIN));
        let weak = Estimate { signal: Signal::Weak, n: 20, ..e };
        assert!(!settled(&weak, 1.0, SETTLE_MARGIN));
    }

    #[test]
    fn without_a_total_or_solo_rate_there_is_no_estimate() {
        let mut t = Tracker::default();
        for k in 0..3 {
            t.push(&Reading { time: k as f64, done: k as f64, total: None, solo_rate: None, signal: Signal::Progress });
        }
        assert!(t.estimate(2.0, 10.0).is_none());
        t.push(&Reading { time: 3.0, done: 3.0, total: None, solo_rate: Some(2.0), signal: Signal::Progress });
        assert_eq!(t.estimate(3.0, 10.0).unwrap().slowdown, 2.0);
    }

    #[test]
    fn a_new_phase_forgets_the_old_rate_and_a_pair_settles_once() {
        let programs = ["a", "b"];
        let mut s = OnlineState::default();
        s.phase(&[0, 1]);
        for k in 0..=8 {
            s.feed(0, &Sample::Reading(reading(k as f64, k as f64 * 5.0)), 10.0);
        }
        let got = s.settle(0, 1, 1.0, &programs).unwrap();
        assert_eq!(got.estimate.slowdown, 2.0);
        assert_eq!(s.learned.get(&("a".to_string(), "b".to_string())), Some(&2.0));
        assert!(s.settle(0, 1, 1.0, &programs).is_none(), "once per phase");
        s.phase(&[0]);
        assert!(s.estimates.is_empty());
        s.feed(0, &Sample::Reading(reading(9.0, 45.0)), 10.0);
        assert!(s.estimates.is_empty(), "one reading of the new phase is no segment");
        s.feed(1, &Sample::Silent("no line matched".into()), 10.0);
        s.feed(1, &Sample::Silent("again".into()), 10.0);
        assert_eq!(s.silent.get(&1).map(String::as_str), Some("no line matched"));
    }

    struct Flat;
    impl SlowdownSource for Flat {
        fn slowdown(&self, _: JobId, beside: &[JobId]) -> f64 {
            1.1f64.powi(beside.len() as i32)
        }
        fn score(&self, _: JobId, _: JobId) -> f64 {
            0.0
        }
    }

    #[test]
    fn a_learned_pair_overrides_the_source_for_every_instance_of_its_programs() {
        let mut learned = BTreeMap::new();
        learned.insert(("a".to_string(), "b".to_string()), 2.0);
        let estimates = BTreeMap::new();
        let programs = ["a", "b", "a", "c"];
        let s = Informed { inner: &Flat, programs: &programs, learned: &learned, estimates: &estimates };
        assert_eq!(s.slowdown(2, &[1]), 2.0);
        assert!((s.slowdown(2, &[1, 3]) - 2.2).abs() < 1e-12);
        assert_eq!(s.slowdown(1, &[0]), 1.1, "the other direction is not learned");
        assert_eq!(s.slowdown(0, &[3]), 1.1);
        assert_eq!(s.learned(2, 1), Some(2.0));
        assert_eq!(s.learned(1, 0), None);
        assert_eq!(Flat.learned(0, 1), None);
    }

    #[test]
    fn the_knowledge_fingerprint_is_zero_until_a_pair_is_learned_and_moves_with_each_one() {
        let estimates = BTreeMap::new();
        let programs = ["a", "b"];
        let fingerprint = |learned: &BTreeMap<(String, String), f64>| {
            Informed { inner: &Flat, programs: &programs, learned, estimates: &estimates }.knowledge()
        };
        let mut learned = BTreeMap::new();
        assert_eq!(fingerprint(&learned), 0);
        learned.insert(("a".to_string(), "b".to_string()), 2.0);
        let one = fingerprint(&learned);
        assert_ne!(one, 0);
        assert_eq!(fingerprint(&learned.clone()), one, "the same pairs, the same fingerprint");
        // The same pair learned anew at another value.
        learned.insert(("a".to_string(), "b".to_string()), 1.5);
        let anew = fingerprint(&learned);
        assert!(anew != 0 && anew != one);
        learned.insert(("b".to_string(), "a".to_string()), 1.5);
        let two = fingerprint(&learned);
        assert!(two != 0 && two != anew && two != one);
    }
}
