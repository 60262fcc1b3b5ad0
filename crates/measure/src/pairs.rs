//! A pairs campaign: the interference matrix of a workload, measured.
//!
//! Every unordered pair of jobs (twins included) is co-run repeatedly with
//! [`crate::corun::measure_pair`] (solo A, solo B, A with B, the shorter
//! re-launched), one repeat at a time, until the stop rule says both
//! slowdowns are known well enough. Each repeat is handed to the caller as
//! soon as it is measured, so it can be stored before the next one starts and
//! an interrupted campaign loses at most the repeat in flight.
//!
//! The two jobs run on the CPUs the node runner would give them
//! ([`crate::place::NodePools::pair`]): an accelerator-pool job on the host
//! pool's CPUs beside a host job, as `cosched run` runs it. Around each
//! repeat the cache-line round trip between one CPU of each job is read
//! ([`crate::c2c::around`]), so every repeat carries the cache regime it
//! ran in.

use cosched_model::regime::CacheRegime;
use cosched_model::matrix::{unordered_pairs, StopRule};
use serde::{Deserialize, Serialize};

use crate::c2c::{around, ReadRoundTrip, Reading};
use crate::corun::{measure_pair, CorunError};
use crate::launch::Launch;
use crate::place::{regime_cpus, NodePools};

/// A job as the campaign runs it.
#[derive(Debug, Clone)]
pub struct PairJob {
    pub name: String,
    pub argv: Vec<String>,
    /// Index of its pool among the workload's pools.
    pub pool: usize,
    /// Cores (an accelerator pool's: slots) it gets when shared.
    pub cores: u32,
    /// Its `env` as written; the launch adds what a run adds
    /// ([`crate::node::env_for`]).
    pub env: Vec<(String, String)>,
}

/// One repeat of one co-run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRun {
    /// Indices of the two jobs, `fg <= bg`.
    pub jobs: (usize, usize),
    pub repeat: usize,
    pub solo_s: [f64; 2],
    pub corun_s: [f64; 2],
    pub relaunches: [u32; 2],
    /// "work-phase" or "process", per job.
    pub timing: [String; 2],
    pub cpus: [Vec<u32>; 2],
    /// The two jobs held a CPU in common (an accelerator job on the host
    /// CPUs beside a host job, or a node too small for both).
    pub shared_cpus: bool,
    /// The round trip between a CPU of each job around the repeat; `None`
    /// on a one-CPU node.
    pub reading: Option<Reading>,
}

impl PairRun {
    pub fn slowdown(&self, k: usize) -> f64 {
        self.corun_s[k] / self.solo_s[k]
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("{jobs}: {source}")]
    Corun { jobs: String, source: CorunError },
    #[error("storing a run: {0}")]
    Sink(String),
    #[error("placing {jobs}: {why}")]
    Place { jobs: String, why: String },
    #[error("gave up waiting for the {} regime before {jobs} (CPUs {}-{} last read {})", want.name(), cpus[0], cpus[1], last_ns.map_or("nothing".to_string(), |ns| format!("{ns:.0} ns")))]
    RegimeWait { want: CacheRegime, jobs: String, cpus: [u32; 2], last_ns: Option<f64> },
}

/// Count only the repeats that ran wholly in one cache regime (`pairs
/// --in-regime`). On a host that gives a regime in windows of a minute
/// now and then, a campaign so gated gathers its repeats window by
/// window: before each repeat it reads the two CPUs' round trip and, while
/// they read another regime, waits. A repeat that ends in another regime
/// is stored all the same (with its readings) but does not count towards
/// the stop rule, and the next one takes the same placement again.
pub struct RegimeGate<'a> {
    pub want: CacheRegime,
    /// Called with the last reading while the CPUs read another regime:
    /// waits a little and says whether to go on waiting (false: give up,
    /// and the campaign ends with [`CampaignError::RegimeWait`]).
    pub wait: &'a mut dyn FnMut(Option<f64>) -> bool,
}

impl RegimeGate<'_> {
    /// Waits until CPUs `x`-`y` read the wanted regime, starting from
    /// `last` (what they read after the previous repeat; `None`: read
    /// afresh). Returns the reading the next repeat starts from (`None`
    /// when the CPUs could not be read: the repeat's own readings decide),
    /// or the last reading when `wait` gave up.
    pub fn await_regime(&mut self, [x, y]: [u32; 2], read: &mut ReadRoundTrip, mut last: Option<f64>) -> Result<Option<f64>, Option<f64>> {
        while last.map(CacheRegime::of_round_trip) != Some(self.want) {
            if last.is_some() && !(self.wait)(last) {
                return Err(last);
            }
            // Waiting is between measurements too: Ctrl-Z stops here at
            // once rather than when the regime comes, and a stopped
            // campaign reads no CPUs (a reading keeps both busy, which
            // would disturb whatever runs while it is stopped).
            crate::launch::pause_point();
            last = read(x, y);
            if last.is_none() {
                break;
            }
        }
        Ok(last)
    }

    /// Whether a repeat with this reading counts: it ran wholly in the
    /// wanted regime, or has no reading to tell (a repeat none of whose
    /// readings could be taken has no regime of its own and counts, as one
    /// on CPUs that cannot be read does).
    pub fn counts(want: Option<CacheRegime>, reading: Option<&Reading>) -> bool {
        match (want, reading) {
            (Some(g), Some(r)) if r.before_ns.is_some() || r.after_ns.is_some() => r.regime() == Some(g),
            _ => true,
        }
    }
}

/// Progress of a campaign, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct CampaignProgress {
    pub pair: usize,
    pub pairs: usize,
    pub repeat: usize,
}

/// Runs (or continues) a campaign. `prior` holds runs already stored by an
/// earlier, interrupted invocation: cells they complete are skipped, and
/// their repeats count towards the stop rule. `sink` receives each new run
/// (and should store it); an error from it stops the campaign. `read`
/// reads the round trip between two CPUs before and after each repeat
/// ([`crate::c2c::read_round_trip`] on the node).
pub fn run_campaign(
    jobs: &[PairJob],
    stop: StopRule,
    pools: &NodePools,
    prior: &[PairRun],
    read: &mut ReadRoundTrip,
    sink: &mut dyn FnMut(&PairRun) -> Result<(), String>,
    on_progress: &mut dyn FnMut(CampaignProgress, &str),
) -> Result<Vec<PairRun>, CampaignError> {
    run_campaign_in(Campaign { prior, ..Campaign::new(jobs, stop, pools) }, read, sink, on_progress)
}

/// What a campaign measures: its jobs, stop rule and placement, the runs an
/// earlier invocation stored, and which repeats and pairs count.
pub struct Campaign<'a> {
    pub jobs: &'a [PairJob],
    pub stop: StopRule,
    pub pools: &'a NodePools,
    /// Runs already stored (see [`run_campaign`]).
    pub prior: &'a [PairRun],
    /// Count only the repeats of one cache regime (pairs whose jobs share
    /// a CPU, or whose CPUs cannot be read, have no regime of their own
    /// and are not gated).
    pub gate: Option<RegimeGate<'a>>,
    /// The unordered pairs to leave out, by their indices in `jobs`, the
    /// smaller first: pairs already known from elsewhere.
    pub skip: &'a dyn Fn(usize, usize) -> bool,
}

fn no_pair(_: usize, _: usize) -> bool {
    false
}

impl<'a> Campaign<'a> {
    /// Every pair of `jobs`, nothing stored before, every repeat counted.
    pub fn new(jobs: &'a [PairJob], stop: StopRule, pools: &'a NodePools) -> Campaign<'a> {
        Campaign { jobs, stop, pools, prior: &[], gate: None, skip: &no_pair }
    }
}

/// [`run_campaign`] with a gate and pairs to skip ([`Campaign`]).
pub fn run_campaign_in(
    campaign: Campaign,
    read: &mut ReadRoundTrip,
    sink: &mut dyn FnMut(&PairRun) -> Result<(), String>,
    on_progress: &mut dyn FnMut(CampaignProgress, &str),
) -> Result<Vec<PairRun>, CampaignError> {
    let Campaign { jobs, stop, pools, prior, mut gate, skip } = campaign;
    let want = gate.as_ref().map(|g| g.want);
    let counts = |r: &PairRun| RegimeGate::counts(want, r.reading.as_ref());
    let mut node_cpus: Vec<u32> = pools.cpus.iter().flatten().copied().collect();
    node_cpus.sort_unstable();
    node_cpus.dedup();
    let pairs = unordered_pairs(jobs.len());
    let mut new_runs = Vec::new();
    for (pi, &(a, b)) in pairs.iter().enumerate() {
        if skip(a, b) {
            continue;
        }
        let mut sl: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        // Stored repeats of the pair, counted or not: the next one's index.
        let mut runs_so_far = prior.iter().filter(|r| r.jobs == (a, b)).count();
        for r in prior.iter().filter(|r| r.jobs == (a, b) && counts(r)) {
            sl[0].push(r.slowdown(0));
            sl[1].push(r.slowdown(1));
        }
        let label = format!("{} + {}", jobs[a].name, jobs[b].name);
        let placed = pools
            .pair((jobs[a].pool, jobs[a].cores), (jobs[b].pool, jobs[b].cores))
            .map_err(|why| CampaignError::Place { jobs: label.clone(), why })?;
        let (cpus, shared) = (placed.cpus, placed.shared_cpus);
        // Odd repeats swap the two jobs' CPUs where they could trade
        // places (one pool, as many cores, CPUs of their own). On a VM one
        // CPU is not like another: this node takes the virtio disk's
        // interrupts on CPU 1, and sysbench-cpu beside fio-randread ran
        // 1.40 on CPU 1 but 1.14 on CPU 0 (fio 1.06 and 1.23 the other way
        // round). Measured on one placement only, a pair charges that
        // CPU's load to whichever job always sat there.
        let swappable = jobs[a].pool == jobs[b].pool && jobs[a].cores == jobs[b].cores && !shared;
        let read_cpus = regime_cpus(&cpus[0], &cpus[1], &node_cpus);
        // What the pair's CPUs read last (after its previous repeat).
        let mut last: Option<f64> = None;
        while !stop.done([&sl[0], &sl[1]]) {
            if crate::launch::pause_point() {
                last = None; // read afresh: the regime may have changed meanwhile
            }
            if let (Some(g), Some(cpus)) = (gate.as_mut(), read_cpus) {
                g.await_regime(cpus, read, last).map_err(|last_ns| CampaignError::RegimeWait { want: g.want, jobs: label.clone(), cpus, last_ns })?;
            }
            let repeat = runs_so_far;
            // The placement alternates over the counted repeats, so a
            // repeat that did not count is taken again on the same CPUs.
            let placed: [Vec<u32>; 2] = if swappable && sl[0].len() % 2 == 1 {
                [cpus[1].clone(), cpus[0].clone()]
            } else {
                [cpus[0].clone(), cpus[1].clone()]
            };
            let launch = |j: &PairJob, cpus: &[u32]| {
                let mut l = Launch::new(j.argv.clone()).pinned(cpus.to_vec());
                l.env = crate::node::env_for(&j.name, j.cores, &j.env, cpus, &[]);
                l
            };
            let launches = [launch(&jobs[a], &placed[0]), launch(&jobs[b], &placed[1])];
            on_progress(CampaignProgress { pair: pi, pairs: pairs.len(), repeat }, &label);
            let (m, reading) = around(read_cpus, read, || measure_pair([&launches[0], &launches[1]], 1, &mut |_, _, _| {}))
                .map_err(|source| CampaignError::Corun { jobs: label.clone(), source })?;
            let run = PairRun {
                jobs: (a, b),
                repeat,
                solo_s: [m.solo_s[0][0], m.solo_s[1][0]],
                corun_s: [m.corun_s[0][0], m.corun_s[1][0]],
                relaunches: m.relaunches,
                timing: m.timing.map(String::from),
                cpus: placed,
                shared_cpus: shared,
                reading,
            };
            sink(&run).map_err(CampaignError::Sink)?;
            runs_so_far += 1;
            last = run.reading.and_then(|r| r.after_ns);
            if counts(&run) {
                sl[0].push(run.slowdown(0));
                sl[1].push(run.slowdown(1));
            }
            new_runs.push(run);
        }
        on_progress(CampaignProgress { pair: pi + 1, pairs: pairs.len(), repeat: 0 }, &label);
    }
    Ok(new_runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, cmd: &str) -> PairJob {
        PairJob { name: name.into(), argv: vec!["sh".into(), "-c".into(), cmd.into()], pool: 0, cores: 1, env: Vec::new() }
    }

    fn node(cpus: &[u32]) -> NodePools {
        NodePools::new(&[(cpus.len() as u32, false)], cpus).unwrap()
    }

    fn unread(_: u32, _: u32) -> Option<f64> {
        None
    }

    #[test]
    fn every_pair_gets_exactly_the_fixed_repeats_and_is_stored_as_it_goes() {
        let jobs = [job("a", "true"), job("b", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0, settle: None };
        let mut stored = Vec::new();
        let runs = run_campaign(&jobs, rule, &node(&[0, 1]), &[], &mut unread, &mut |r| {
            stored.push(r.clone());
            Ok(())
        }, &mut |_, _| {})
        .unwrap();
        assert_eq!(runs.len(), 3 * 2, "pairs (a,a) (a,b) (b,b), two repeats each");
        assert_eq!(stored, runs);
        assert_eq!(runs.iter().filter(|r| r.jobs == (0, 1)).count(), 2);
        assert_eq!(runs[0].cpus, [vec![0], vec![1]]);
    }

    #[test]
    fn a_pair_named_known_is_not_run_and_the_rest_are() {
        let jobs = [job("a", "true"), job("b", "true")];
        let rule = StopRule { min_repeats: 1, max_repeats: 1, rel_halfwidth: 0.0, settle: None };
        let mut progress = Vec::new();
        let runs = run_campaign_in(Campaign { skip: &|a, b| (a, b) == (0, 0), ..Campaign::new(&jobs, rule, &node(&[0, 1])) }, &mut unread, &mut |_| Ok(()), &mut |p, _| {
            progress.push(p.pair)
        })
        .unwrap();
        let pairs: Vec<(usize, usize)> = runs.iter().map(|r| r.jobs).collect();
        assert_eq!(pairs, vec![(0, 1), (1, 1)], "(a,a) skipped");
        assert_eq!(progress.first(), Some(&1), "progress is reported for the pairs run only");
    }

    #[test]
    fn odd_repeats_swap_the_jobs_cpus_so_neither_always_sits_on_one() {
        let jobs = [job("a", "true"), job("b", "true")];
        let rule = StopRule { min_repeats: 3, max_repeats: 3, rel_halfwidth: 0.0, settle: None };
        let runs = run_campaign(&jobs, rule, &node(&[0, 1]), &[], &mut unread, &mut |_| Ok(()), &mut |_, _| {}).unwrap();
        let ab: Vec<[Vec<u32>; 2]> = runs.iter().filter(|r| r.jobs == (0, 1)).map(|r| r.cpus.clone()).collect();
        assert_eq!(ab, vec![[vec![0], vec![1]], [vec![1], vec![0]], [vec![0], vec![1]]]);
    }

    #[test]
    fn a_gated_campaign_counts_only_its_regime_waits_for_it_and_retakes_the_placement() {
        let jobs = [job("a", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0, settle: None };
        // Gate 70 (shared: go); repeat 0 reads 70, 72 (counts); repeat 1
        // reads 74, 380 (switched: stored, not counted); the gate waits
        // through 390 and goes at 60; repeat 2 reads 61, 62 (counts).
        let mut script = [70.0, 70.0, 72.0, 74.0, 380.0, 390.0, 60.0, 61.0, 62.0].into_iter();
        let mut read = |_: u32, _: u32| script.next();
        let mut waited = Vec::new();
        let mut wait = |ns: Option<f64>| {
            waited.push(ns);
            true
        };
        let gate = RegimeGate { want: CacheRegime::Shared, wait: &mut wait };
        let runs = run_campaign_in(Campaign { gate: Some(gate), ..Campaign::new(&jobs, rule, &node(&[0, 1])) }, &mut read, &mut |_| Ok(()), &mut |_, _| {}).unwrap();
        assert_eq!(runs.iter().map(|r| r.repeat).collect::<Vec<_>>(), vec![0, 1, 2]);
        // The second counted repeat swaps the CPUs; the one that did not
        // count had swapped too, so the retake sits where it sat.
        let cpus: Vec<[Vec<u32>; 2]> = runs.iter().map(|r| r.cpus.clone()).collect();
        assert_eq!(cpus, vec![[vec![0], vec![1]], [vec![1], vec![0]], [vec![1], vec![0]]]);
        assert_eq!(waited, vec![Some(380.0), Some(390.0)]);
        assert_eq!(script.next(), None, "every reading used, none extra");
    }

    #[test]
    fn a_gated_campaign_whose_cpus_cannot_be_read_counts_its_repeats_and_ends() {
        // Readings that fail leave a repeat without a regime of its own: it
        // counts, as a pair on unreadable CPUs does, rather than being
        // taken again for ever.
        let jobs = [job("a", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0, settle: None };
        let mut read = |_: u32, _: u32| None;
        let mut wait = |_: Option<f64>| panic!("nothing to wait on");
        let gate = RegimeGate { want: CacheRegime::Shared, wait: &mut wait };
        let mut stored = 0;
        let runs = run_campaign_in(Campaign { gate: Some(gate), ..Campaign::new(&jobs, rule, &node(&[0, 1])) }, &mut read, &mut |_| {
            stored += 1;
            assert!(stored <= 2, "a repeat without readings was taken again");
            Ok(())
        }, &mut |_, _| {})
        .unwrap();
        assert_eq!(runs.len(), 2);
    }

    #[test]
    fn a_gated_campaign_that_stops_waiting_says_for_what() {
        let jobs = [job("a", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0, settle: None };
        let mut read = |_: u32, _: u32| Some(400.0);
        let mut wait = |_: Option<f64>| false;
        let gate = RegimeGate { want: CacheRegime::Shared, wait: &mut wait };
        let mut stored = 0;
        let e = run_campaign_in(Campaign { gate: Some(gate), ..Campaign::new(&jobs, rule, &node(&[0, 1])) }, &mut read, &mut |_| {
            stored += 1;
            Ok(())
        }, &mut |_, _| {})
        .unwrap_err();
        assert!(matches!(e, CampaignError::RegimeWait { want: CacheRegime::Shared, last_ns: Some(ns), .. } if ns == 400.0), "{e}");
        assert!(e.to_string().contains("shared"), "{e}");
        assert_eq!(stored, 0, "nothing ran outside the regime");
    }

    #[test]
    fn resuming_skips_finished_cells_and_tops_up_partial_ones() {
        let jobs = [job("a", "true"), job("b", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0, settle: None };
        let first = run_campaign(&jobs, rule, &node(&[0, 1]), &[], &mut unread, &mut |_| Ok(()), &mut |_, _| {}).unwrap();
        // Keep all of (a,a), one repeat of (a,b), nothing of (b,b).
        let prior: Vec<PairRun> = first
            .iter()
            .filter(|r| r.jobs == (0, 0) || (r.jobs == (0, 1) && r.repeat == 0))
            .cloned()
            .collect();
        let rest = run_campaign(&jobs, rule, &node(&[0, 1]), &prior, &mut unread, &mut |_| Ok(()), &mut |_, _| {}).unwrap();
        let count = |p| rest.iter().filter(|r| r.jobs == p).count();
        assert_eq!((count((0, 0)), count((0, 1)), count((1, 1))), (0, 1, 2));
        assert_eq!(rest.iter().find(|r| r.jobs == (0, 1)).unwrap().repeat, 1);
    }

    #[test]
    fn a_sink_error_stops_the_campaign() {
        let jobs = [job("a", "true")];
        let rule = StopRule { min_repeats: 3, max_repeats: 3, rel_halfwidth: 0.0, settle: None };
        let e = run_campaign(&jobs, rule, &node(&[0]), &[], &mut unread, &mut |_| Err("disk full".into()), &mut |_, _| {})
            .unwrap_err();
        assert!(e.to_string().contains("disk full"));
    }

    /// Readings come from the reader the caller injects (a script here),
    /// two per repeat in order, and a switch in the middle of the campaign
    /// is found in what the sink received, with no sleep and no real
    /// regime change.
    #[test]
    fn every_repeat_carries_its_readings_and_a_switch_in_the_middle_is_detected() {
        let jobs = [job("a", "true"), job("b", "true")];
        let rule = StopRule { min_repeats: 2, max_repeats: 2, rel_halfwidth: 0.0, settle: None };
        // (a,a) x2, (a,b) x2, (b,b) x2: shared until (a,b)'s second
        // repeat, which ends apart, and apart from then on.
        let mut script = [70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 380.0, 390.0, 391.0, 392.0, 393.0].into_iter();
        let mut reads = Vec::new();
        let mut read = |a: u32, b: u32| {
            reads.push((a, b));
            script.next()
        };
        let mut watch = crate::c2c::RegimeWatch::new();
        let mut seen = Vec::new();
        let runs = run_campaign(&jobs, rule, &node(&[0, 1]), &[], &mut read, &mut |r| {
            let what = format!("{:?} repeat {}", r.jobs, r.repeat);
            if let Some(s) = watch.observe(&what, r.reading.as_ref().unwrap()) {
                seen.push((s.what, s.to));
            }
            Ok(())
        }, &mut |_, _| {})
        .unwrap();
        assert_eq!(reads, vec![(0, 1); 12], "before and after each of 6 repeats, a CPU of each job");
        let r = runs[3].reading.unwrap();
        assert_eq!((r.cpus, r.before_ns, r.after_ns), ([0, 1], Some(76.0), Some(380.0)));
        use cosched_model::regime::CacheRegime::{Apart, Shared};
        assert_eq!(runs.iter().map(|r| r.reading.unwrap().regime()).collect::<Vec<_>>(), [Some(Shared), Some(Shared), Some(Shared), None, Some(Apart), Some(Apart)]);
        assert_eq!(
            seen,
            vec![("(0, 1) repeat 1".to_string(), None), ("(1, 1) repeat 0".to_string(), Some(Apart)), ("(1, 1) repeat 1".to_string(), Some(Apart))]
        );
    }

    #[test]
    fn an_accelerator_job_is_measured_on_the_host_cpus_beside_a_host_job() {
        let host = job("vh", "true");
        let accel = PairJob { pool: 1, ..job("ve", "true") };
        let pools = NodePools::new(&[(2, false), (2, true)], &[0, 1]).unwrap();
        let rule = StopRule { min_repeats: 1, max_repeats: 1, rel_halfwidth: 0.0, settle: None };
        let runs = run_campaign(&[host, accel], rule, &pools, &[], &mut unread, &mut |_| Ok(()), &mut |_, _| {}).unwrap();
        let vh_ve = runs.iter().find(|r| r.jobs == (0, 1)).unwrap();
        assert_eq!((vh_ve.cpus.clone(), vh_ve.shared_cpus), ([vec![0], vec![0, 1]], true));
        assert_eq!(vh_ve.reading, Some(Reading { cpus: [0, 1], before_ns: None, after_ns: None }));
    }
}
