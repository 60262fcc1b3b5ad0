//! Which jobs a policy held back, and beside what: read from any engine's
//! trace, so the same answer holds for every policy (a refusal by
//! conflict-aware, a partner chosen by best-match, an idle core left by
//! caution) without the policies having to report it.
//!
//! A waiting job is *held back* at an instant when it fits in its pool's
//! free cores and either a job behind it in the queue starts instead, or
//! its cores stay idle. Events closer than [`INSTANT_S`] count as one
//! instant, since a real runner starts the next job a few milliseconds
//! after the previous one ends.

use std::collections::BTreeSet;

use cosched_model::metrics::{EventKind, JobId};
use cosched_model::trace::Trace;
use serde::Serialize;

/// Events this close together happened "at once".
pub const INSTANT_S: f64 = 0.05;

/// What the engine knew of each job: where it runs, how many cores it
/// needs, which jobs must finish first.
#[derive(Debug, Clone)]
pub struct JobShape {
    pub pool: usize,
    pub cores: u32,
    pub after: Vec<JobId>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldBack {
    /// Seconds on the trace's clock.
    pub at: f64,
    pub job: String,
    /// The jobs running on the node then, which it would have joined.
    pub beside: Vec<String>,
    /// The job that started in its place, if one did; `None`: cores idled.
    pub instead: Option<String>,
}

impl std::fmt::Display for HeldBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2} s: {} held back beside {}", self.at, self.job, self.beside.join(" + "))?;
        match &self.instead {
            Some(j) => write!(f, " ({j} started instead)"),
            None => write!(f, " (its cores idled)"),
        }
    }
}

/// Every instant a job was held back, in time order; an unchanged situation
/// over consecutive instants counts once.
pub fn held_back(trace: &Trace, jobs: &[JobShape], pool_cores: &[u32]) -> Vec<HeldBack> {
    let name = |j: JobId| trace.job(j).map_or_else(|| format!("job {j}"), |t| t.name.clone());
    let n = jobs.len();
    let mut events = trace.events.clone();
    events.sort_by(|a, b| a.time.total_cmp(&b.time));
    let mut arrival = vec![f64::INFINITY; n];
    let (mut started, mut finished) = (vec![false; n], vec![false; n]);
    let mut running: Vec<JobId> = Vec::new();
    let mut used = vec![0u32; pool_cores.len()];
    let mut out: Vec<HeldBack> = Vec::new();
    let mut last: BTreeSet<(JobId, Vec<JobId>)> = BTreeSet::new();
    let mut i = 0;
    while i < events.len() {
        let t0 = events[i].time;
        let mut k = i;
        while k < events.len() && events[k].time <= t0 + INSTANT_S {
            k += 1;
        }
        let instant = &events[i..k];
        i = k;
        for e in instant.iter().filter(|e| e.job < n) {
            if e.kind == EventKind::Finish && started[e.job] && !finished[e.job] {
                finished[e.job] = true;
                running.retain(|&r| r != e.job);
                used[jobs[e.job].pool] = used[jobs[e.job].pool].saturating_sub(jobs[e.job].cores);
            } else if e.kind == EventKind::Arrive {
                arrival[e.job] = arrival[e.job].min(e.time);
            }
        }
        let starts: Vec<JobId> =
            instant.iter().filter(|e| e.kind == EventKind::Start && e.job < n && !started[e.job]).map(|e| e.job).collect();
        // Queue order: arrival, then index.
        let mut waiting: Vec<JobId> = (0..n)
            .filter(|&j| !started[j] && arrival[j] <= t0 + INSTANT_S && jobs[j].after.iter().all(|&d| d < n && finished[d]))
            .collect();
        waiting.sort_by(|&a, &b| arrival[a].total_cmp(&arrival[b]).then(a.cmp(&b)));
        let pos = |j: JobId| waiting.iter().position(|&w| w == j);
        let free = |used: &[u32], p: usize| pool_cores.get(p).copied().unwrap_or(0).saturating_sub(used[p]);
        let mut now: BTreeSet<(JobId, Vec<JobId>)> = BTreeSet::new();
        // Passed over: fits now, and a job behind it in the queue starts.
        let passed: Vec<(JobId, JobId)> = waiting
            .iter()
            .filter(|w| !starts.contains(w) && jobs[**w].cores <= free(&used, jobs[**w].pool))
            .filter_map(|&w| {
                starts
                    .iter()
                    .find(|&&x| jobs[x].pool == jobs[w].pool && pos(x).is_some_and(|px| Some(px) > pos(w)))
                    .map(|&x| (w, x))
            })
            .collect();
        for &x in &starts {
            started[x] = true;
            running.push(x);
            used[jobs[x].pool] += jobs[x].cores;
        }
        // It would have joined what runs once this instant's starts are
        // made, all but the job that took its place.
        for (w, x) in passed {
            let beside = running.iter().filter(|&&r| r != x).map(|&r| name(r)).collect();
            out.push(HeldBack { at: t0, job: name(w), beside, instead: Some(name(x)) });
        }
        // Idled: only the first job still waiting on each pool counts; one
        // behind a head that does not fit waits for the queue's order
        // (first come, first served), not for a policy's caution.
        let mut heads: Vec<JobId> = Vec::new();
        for &w in waiting.iter().filter(|w| !starts.contains(w)) {
            if !heads.iter().any(|&h| jobs[h].pool == jobs[w].pool) {
                heads.push(w);
            }
        }
        for &w in &heads {
            let s = &jobs[w];
            if s.cores <= free(&used, s.pool) && !running.is_empty() {
                let key = (w, running.clone());
                if !last.contains(&key) {
                    out.push(HeldBack { at: t0, job: name(w), beside: running.iter().map(|&r| name(r)).collect(), instead: None });
                }
                now.insert(key);
            }
        }
        last = now;
    }
    out
}

/// The pairs held apart, `(waiting job, running job, times)`, most frequent
/// first: what a user reads as "the pairs the policy refused".
pub fn avoided_pairs(held: &[HeldBack]) -> Vec<(String, String, usize)> {
    let mut count: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for h in held {
        for b in &h.beside {
            *count.entry((h.job.clone(), b.clone())).or_default() += 1;
        }
    }
    let mut v: Vec<(String, String, usize)> = count.into_iter().map(|((a, b), n)| (a, b, n)).collect();
    v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    v
}

/// One line for a policy's held-apart pairs, at most `limit` of them.
/// Exclusive holds every pair apart by definition, so listing them says
/// nothing.
/// Pairs a policy held apart: `(waiting job, running job, times)`.
pub type HeldPairs = Vec<(String, String, usize)>;

pub fn describe(policy: &str, pairs: &[(String, String, usize)], limit: usize) -> String {
    if policy == "exclusive" {
        return "every pair (one job at a time)".into();
    }
    if pairs.is_empty() {
        return "none".into();
    }
    let shown: Vec<String> = pairs.iter().take(limit).map(|(a, b, n)| format!("{a} beside {b} ({n}x)")).collect();
    let more = if pairs.len() > limit { format!(", and {} more", pairs.len() - limit) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::metrics::Event;
    use cosched_model::trace::TraceJob;

    fn trace(names: &[&str], events: &[(f64, JobId, EventKind)]) -> Trace {
        Trace {
            jobs: names
                .iter()
                .enumerate()
                .map(|(i, n)| TraceJob { name: n.to_string(), ..TraceJob::bare(i) })
                .collect(),
            events: events.iter().map(|&(time, job, kind)| Event { time, job, kind }).collect(),
            estimates: Vec::new(),
        }
    }

    fn one_core_jobs(n: usize) -> Vec<JobShape> {
        vec![JobShape { pool: 0, cores: 1, after: vec![] }; n]
    }

    use EventKind::{Arrive as A, Finish as F, Start as S};

    #[test]
    fn a_job_passed_over_for_a_later_one_is_held_back_beside_the_running_job() {
        // Two cores. a runs; b (next in queue) is passed over for c.
        let t = trace(&["a", "b", "c"], &[(0.0, 0, A), (0.0, 1, A), (0.0, 2, A), (0.0, 0, S), (0.0, 2, S), (1.0, 0, F), (1.0, 1, S), (2.0, 2, F), (2.0, 1, F)]);
        let h = held_back(&t, &one_core_jobs(3), &[2]);
        assert_eq!(h, vec![HeldBack { at: 0.0, job: "b".into(), beside: vec!["a".into()], instead: Some("c".into()) }]);
        assert_eq!(h[0].to_string(), "0.00 s: b held back beside a (c started instead)");
    }

    #[test]
    fn an_idle_core_beside_a_waiting_job_that_fits_is_a_refusal_counted_once() {
        // Two cores; a runs alone from 0 to 2 while b waits; b starts at 2.
        let t = trace(&["a", "b"], &[(0.0, 0, A), (0.0, 1, A), (0.0, 0, S), (0.5, 0, A), (2.0, 0, F), (2.0, 1, S), (3.0, 1, F)]);
        let h = held_back(&t, &one_core_jobs(2), &[2]);
        assert_eq!(h, vec![HeldBack { at: 0.0, job: "b".into(), beside: vec!["a".into()], instead: None }]);
        assert_eq!(avoided_pairs(&h), vec![("b".into(), "a".into(), 1)]);
    }

    #[test]
    fn a_job_that_does_not_fit_or_waits_its_turn_is_not_held_back() {
        // One core: b simply waits for a; a 2-core job never fits beside.
        let t = trace(&["a", "b"], &[(0.0, 0, A), (0.0, 1, A), (0.0, 0, S), (1.0, 0, F), (1.0, 1, S), (2.0, 1, F)]);
        assert!(held_back(&t, &one_core_jobs(2), &[1]).is_empty());
        // Events a few ms apart are one instant: b starts right after a ends.
        let t = trace(&["a", "b"], &[(0.0, 0, A), (0.0, 1, A), (0.0, 0, S), (1.0, 0, F), (1.004, 1, S), (2.0, 1, F)]);
        assert!(held_back(&t, &one_core_jobs(2), &[1]).is_empty());
        // A job behind a head that needs more cores than are free waits
        // its turn (first come, first served).
        let jobs = vec![
            JobShape { pool: 0, cores: 1, after: vec![] },
            JobShape { pool: 0, cores: 2, after: vec![] },
            JobShape { pool: 0, cores: 1, after: vec![] },
        ];
        let t = trace(&["a", "wide", "c"], &[(0.0, 0, A), (0.0, 1, A), (0.0, 2, A), (0.0, 0, S), (1.0, 0, F), (1.0, 1, S), (2.0, 1, F), (2.0, 2, S), (3.0, 2, F)]);
        assert!(held_back(&t, &jobs, &[2]).is_empty());
        // A dependency not yet met is not a refusal.
        let jobs = vec![JobShape { pool: 0, cores: 1, after: vec![] }, JobShape { pool: 0, cores: 1, after: vec![0] }];
        let t = trace(&["a", "b"], &[(0.0, 0, A), (0.0, 1, A), (0.0, 0, S), (1.0, 0, F), (1.0, 1, S), (2.0, 1, F)]);
        assert!(held_back(&t, &jobs, &[2]).is_empty());
    }
}
