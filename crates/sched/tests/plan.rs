//! `react:plan=learned` in virtual time (issue 38): once the run learns a
//! pair, jobs start in a planned order over what it knows. The runner's
//! loop over a `VirtualNode` whose truth differs from what the policy is
//! shown (the blind prediction: every pair 1), read every second.

use cosched_engine::run::run_node;
use cosched_engine::validate::check_view;
use cosched_model::metrics::{EventKind, JobId};
use cosched_model::trace::Trace;
use cosched_model::workload::PoolKind;
use cosched_sched::{policy_from_spec, Decision, PairTable, Platform, Policy, PoolInfo, ProgramTable, SimJob, View, VirtualNode};
use proptest::prelude::*;

fn job(name: &str, program: &str, solo: f64) -> SimJob {
    SimJob { name: name.into(), arrival: 0.0, solo, pool: 0, cores: 1, program: program.into(), variants: vec![] }
}

fn at(trace: &Trace, job: JobId, kind: EventKind) -> Option<f64> {
    trace.events.iter().find(|e| e.job == job && e.kind == kind).map(|e| e.time)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

/// A (program a, 20 s), B (b, 20 s), C (b, 4 s), D (c, 4 s) on two cores,
/// in that queue order; a and b slow each other by 2, every other pair by
/// nothing. Run under `spec`, shown the blind prediction, read every second.
fn four(spec: &str) -> Trace {
    let p = Platform { pools: vec![PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }] };
    let jobs = vec![job("A", "a", 20.0), job("B", "b", 20.0), job("C", "b", 4.0), job("D", "c", 4.0)];
    let mut m = vec![vec![1.0; 4]; 4];
    for b in [1, 2] {
        (m[0][b], m[b][0]) = (2.0, 2.0);
    }
    let truth = PairTable::new(m).unwrap();
    let blind = PairTable::new(vec![vec![1.0; 4]; 4]).unwrap();
    let mut node = VirtualNode::new(&jobs, &truth).sampled(1.0);
    run_node(&p, &jobs, &blind, policy_from_spec(spec).unwrap().as_mut(), &mut node, &[]).unwrap()
}

#[test]
fn re_planning_after_a_learned_pair_starts_the_job_that_fits_instead_of_the_queues_next() {
    // Both: noplan starts A and B at 0; their estimates settle at 2 at
    // t = 7 (first reading at 1, six segments), the run learns a|b and
    // b|a, and react suspends B, the newer. A has done 3.5 s of its 20.
    //
    // Without a plan noplan takes the queue's next, C, which is b again:
    // suspended at 14 after its own six segments, and D starts then.
    let plain = four("react:inner=noplan");
    assert!(close(at(&plain, 1, EventKind::Suspend).unwrap(), 7.0), "{:?}", plain.events);
    assert!(close(at(&plain, 2, EventKind::Start).unwrap(), 7.0), "{:?}", plain.events);
    assert!(close(at(&plain, 2, EventKind::Suspend).unwrap(), 14.0), "{:?}", plain.events);
    assert!(close(at(&plain, 3, EventKind::Start).unwrap(), 14.0), "{:?}", plain.events);
    // A ran at half pace to 14 (7 s of work), then alone: ends at 27; B
    // (16.5 s left) and C (0.5 s) resume then: B ends at 43.5.
    assert!(close(at(&plain, 1, EventKind::Finish).unwrap(), 43.5), "{:?}", plain.events);
    //
    // With `plan=learned` the learned pair makes a plan at 7: beside A
    // only D fits (b beside a is 2, above the threshold 1.3), so D starts
    // at 7, ahead of C in the queue. At D's end (11) nothing waiting fits
    // beside A, and C starts rather than the core idling: suspended at 18
    // after six segments. A did 3.5 + 4 + 3.5 by 18 and ends alone at 27;
    // B and C resume then, and B ends at 27 + 16.5 = 43.5.
    let planned = four("react:inner=noplan,plan=learned");
    assert!(close(at(&planned, 1, EventKind::Suspend).unwrap(), 7.0), "{:?}", planned.events);
    assert!(close(at(&planned, 3, EventKind::Start).unwrap(), 7.0), "{:?}", planned.events);
    assert!(close(at(&planned, 2, EventKind::Start).unwrap(), 11.0), "{:?}", planned.events);
    assert!(close(at(&planned, 2, EventKind::Suspend).unwrap(), 18.0), "{:?}", planned.events);
    assert!(close(at(&planned, 0, EventKind::Finish).unwrap(), 27.0), "{:?}", planned.events);
    assert!(close(at(&planned, 1, EventKind::Resume).unwrap(), 27.0), "{:?}", planned.events);
    assert!(close(at(&planned, 1, EventKind::Finish).unwrap(), 43.5), "{:?}", planned.events);
}

#[test]
fn plan_off_is_the_wrapper_as_before_and_reads_as_before_in_labels() {
    use cosched_sched::registry::resolve_spec;
    use cosched_sched::spec::label_of;
    let spec = resolve_spec("react:plan=off").unwrap();
    assert_eq!(spec.params, resolve_spec("react").unwrap().params);
    // A stored series of `react` from before `plan` existed keeps its label.
    let label = label_of("react", &spec.params.to_map(), None);
    assert_eq!(label, "react:action=suspend,inner=best-match,resume=free,threshold=1.3");
    let learned = label_of("react", &resolve_spec("react:plan=learned").unwrap().params.to_map(), None);
    assert!(learned.contains(",plan=learned,"), "{learned}");
    assert_eq!(four("react:inner=noplan,plan=off"), four("react:inner=noplan"));
    let err = policy_from_spec("react:plan=always").err().unwrap();
    assert!(err.contains("plan=always") && err.contains("off") && err.contains("learned"), "{err}");
}

/// The wrapped policy's decisions, each call's checked as every engine
/// checks them, and each start made after the run learned a pair checked
/// against what the run knows: beside a job it harms or is harmed by only
/// when no waiting job with room fits.
struct Checked {
    inner: Box<dyn Policy>,
    threshold: f64,
    refused: Vec<String>,
}

impl Policy for Checked {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        let out = self.inner.decide(view);
        if let Err((k, why)) = check_view(view, &out) {
            self.refused.push(format!("t={}: {}: {why}", view.time, out[k]));
        }
        let active: Vec<JobId> = view.running.iter().filter(|r| !r.suspended).map(|r| r.id).collect();
        if view.slowdown.knowledge() != 0 && !active.is_empty() {
            for d in &out {
                let Decision::Start { job, .. } = *d else { continue };
                let harms = |a: JobId, b: JobId| view.slowdown.slowdown(a, &[b]) >= self.threshold;
                let fits = |q: JobId| active.iter().all(|&o| !harms(q, o) && !harms(o, q));
                let other = view.queue.iter().find(|q| q.id != job && view.free_cores(q.pool) >= q.cores && fits(q.id));
                if let (false, Some(q)) = (fits(job), other) {
                    self.refused.push(format!("t={}: started {job} beside a job known to harm, where {} fits", view.time, q.id));
                }
            }
        }
        out
    }

    fn observe(&mut self, outcome: &cosched_sched::JobOutcome) {
        self.inner.observe(outcome);
    }

    fn acts_on_running(&self) -> bool {
        self.inner.acts_on_running()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the truth, the inner policy and the jobs, the planner's
    /// every decision passes the engines' one validation, it starts a job
    /// beside one the run knows it harms or is harmed by past the
    /// threshold only when no other waiting job fits, and every job ends.
    #[test]
    fn the_planner_never_starts_a_job_the_validation_refuses_nor_a_known_harm_while_another_fits(
        spec in proptest::collection::vec((0usize..3, 1u32..3, 2u8..12), 2..8),
        cells in proptest::collection::vec(prop_oneof![Just(1.0), Just(1.1), Just(1.6), Just(2.2)], 9),
        inner in prop_oneof![Just("noplan"), Just("best-match"), Just("conflict-aware"), Just("no-twins")],
        threshold in prop_oneof![Just(1.3), Just(1.8)],
    ) {
        let p = Platform { pools: vec![PoolInfo { name: "cpu".into(), cores: 3, kind: PoolKind::Cpu }] };
        let names = ["x", "y", "z"];
        let jobs: Vec<SimJob> = spec
            .iter()
            .enumerate()
            .map(|(i, &(prog, cores, solo))| SimJob { cores, ..job(&format!("j{i}"), names[prog], solo as f64) })
            .collect();
        let programs: Vec<usize> = spec.iter().map(|s| s.0).collect();
        let truth = ProgramTable::new(programs.clone(), (0..3).map(|a| cells[a * 3..a * 3 + 3].to_vec()).collect(), None).unwrap();
        let blind = ProgramTable::new(programs, vec![vec![1.0; 3]; 3], None).unwrap();
        let policy = policy_from_spec(&format!("react:inner={inner},threshold={threshold},plan=learned")).unwrap();
        let mut checked = Checked { inner: policy, threshold, refused: Vec::new() };
        let mut node = VirtualNode::new(&jobs, &truth).sampled(0.25);
        let trace = run_node(&p, &jobs, &blind, &mut checked, &mut node, &[]);
        let trace = trace.map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert!(checked.refused.is_empty(), "{:?}", checked.refused);
        for j in 0..jobs.len() {
            prop_assert!(at(&trace, j, EventKind::Finish).is_some(), "job {j} never ended");
        }
    }
}
