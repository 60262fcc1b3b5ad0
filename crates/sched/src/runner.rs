//! Tests of the node runner's decision loop (`cosched_engine::run`), kept
//! here, where the policies, the slowdown tables and the simulator it is
//! checked against are.

mod tests {
    use cosched_engine::run::*;
    use cosched_engine::policy::{Decision, Policy, PoolInfo, View};
    use crate::registry::{policy_by_name, policy_from_spec, Params};
    use crate::sim::{simulate, Platform, SimJob, VirtualNode};
    use crate::{JobId, JobStatus};
    use crate::tables::PairTable;
    use cosched_model::workload::PoolKind;
    use proptest::prelude::*;

    fn platform(cores: u32) -> Platform {
        Platform { pools: vec![PoolInfo { name: "host".into(), cores, kind: PoolKind::Cpu }] }
    }

    fn job(name: &str, arrival: f64, solo: f64, cores: u32) -> SimJob {
        SimJob { name: name.into(), arrival, solo, pool: 0, cores, program: name.into(), variants: vec![] }
    }

    #[test]
    fn two_jobs_by_hand_with_the_prediction_made_before_each_start() {
        let jobs = [job("a", 0.0, 10.0, 1), job("b", 2.0, 10.0, 1)];
        let truth = PairTable::new(vec![vec![1.0, 1.5], vec![2.0, 1.0]]).unwrap();
        let mut policy = policy_by_name("noplan", &Params::new()).unwrap();
        let mut ex = VirtualNode::new(&jobs, &truth);
        let trace = run_node(&platform(2), &jobs, &truth, policy.as_mut(), &mut ex, &[]).unwrap();
        // a alone 0-2 (2 s of work), then both: a at 1/1.5, b at 1/2.
        // a's 8 s left take 12 s: ends at 14; b did 6 of 10, then 4 alone: 18.
        let m = cosched_model::metrics::compute(&trace.events, &[10.0, 10.0]).unwrap();
        assert!((m.makespan - 18.0).abs() < 1e-9, "{trace:?}");
        assert_eq!(ex.starts()[0], StartPlan { job: 0, pool: 0, cpus: vec![0], beside: vec![], predicted: 1.0, variant: 0 });
        assert_eq!(ex.starts()[1], StartPlan { job: 1, pool: 0, cpus: vec![1], beside: vec![0], predicted: 2.0, variant: 0 });
    }

    #[test]
    fn finished_jobs_of_a_killed_attempt_are_not_run_again() {
        let jobs = [job("a", 0.0, 4.0, 2), job("b", 0.0, 3.0, 2)];
        let truth = PairTable::new(vec![vec![1.0; 2]; 2]).unwrap();
        let mut policy = policy_by_name("exclusive", &Params::new()).unwrap();
        let mut ex = VirtualNode::new(&jobs, &truth).at(5.0);
        let done = [Done { job: 0, start: 0.0, finish: 4.0, status: JobStatus::Ok, cpus: vec![], suspensions: vec![] }];
        let trace = run_node(&platform(2), &jobs, &truth, policy.as_mut(), &mut ex, &done).unwrap();
        assert_eq!(ex.starts().len(), 1);
        assert_eq!(ex.starts()[0].job, 1);
        let t = cosched_model::metrics::job_times(&trace.events, 2).unwrap();
        assert_eq!((t[0].start, t[0].finish, t[1].start, t[1].finish), (0.0, 4.0, 5.0, 8.0));
    }

    #[test]
    fn a_policy_that_never_starts_anything_is_reported_stalled() {
        struct Never;
        impl Policy for Never {
            fn decide(&mut self, _: &View) -> Vec<Decision> {
                Vec::new()
            }
        }
        let jobs = [job("a", 0.0, 1.0, 1)];
        let truth = PairTable::new(vec![vec![1.0]]).unwrap();
        let mut ex = VirtualNode::new(&jobs, &truth);
        let e = run_node(&platform(1), &jobs, &truth, &mut Never, &mut ex, &[]).unwrap_err();
        assert_eq!(e, RunError::Stalled { time: 0.0, waiting: vec![0] });
    }

    /// Records what a policy was told of finished jobs, deciding like noplan.
    struct Recorder(Vec<(JobId, f64, f64, f64)>);

    impl Policy for Recorder {
        fn decide(&mut self, view: &View) -> Vec<Decision> {
            crate::policies::NoPlan.decide(view)
        }
        fn observe(&mut self, o: &cosched_engine::policy::JobOutcome) {
            self.0.push((o.job, o.start, o.finish, o.slowdown));
        }
    }

    #[test]
    fn the_policy_observes_each_finished_job_as_in_the_simulator() {
        let jobs = [job("a", 0.0, 10.0, 1), job("b", 2.0, 10.0, 1)];
        let truth = PairTable::new(vec![vec![1.0, 1.5], vec![2.0, 1.0]]).unwrap();
        let mut sim = Recorder(Vec::new());
        simulate(&platform(2), &jobs, &truth, &mut sim).unwrap();
        let mut real = Recorder(Vec::new());
        let trace = run_node(&platform(2), &jobs, &truth, &mut real, &mut VirtualNode::new(&jobs, &truth), &[]).unwrap();
        assert_eq!(real.0.len(), 2);
        for (x, y) in sim.0.iter().zip(&real.0) {
            assert_eq!(x.0, y.0);
            assert!((x.1 - y.1).abs() < 1e-9 && (x.2 - y.2).abs() < 1e-9 && (x.3 - y.3).abs() < 1e-9, "{sim:?} vs {real:?}", sim = sim.0, real = real.0);
        }
        assert!((real.0[0].3 - 1.4).abs() < 1e-9, "a ran 14 s for 10 s of work");
        assert!(trace.jobs.iter().all(|j| j.status == Some(JobStatus::Ok) && j.pool == "host"));
    }

    #[test]
    fn a_decision_the_node_cannot_hold_is_refused_with_the_simulators_reason() {
        struct Greedy;
        impl Policy for Greedy {
            fn decide(&mut self, view: &View) -> Vec<Decision> {
                view.queue.iter().map(|q| Decision::Start { job: q.id, pool: q.pool }).collect()
            }
        }
        let jobs = [job("a", 0.0, 1.0, 2), job("b", 0.0, 1.0, 1)];
        let truth = PairTable::new(vec![vec![1.0; 2]; 2]).unwrap();
        let sim = simulate(&platform(2), &jobs, &truth, &mut Greedy).unwrap_err();
        let real = run_node(&platform(2), &jobs, &truth, &mut Greedy, &mut VirtualNode::new(&jobs, &truth), &[]).unwrap_err();
        let why = "job 1 needs 1 cores; pool 0 has 0 free".to_string();
        assert_eq!(real, RunError::Decision { time: 0.0, decision: Decision::Start { job: 1, pool: 0 }, why: why.clone() });
        assert_eq!(sim, crate::SimError::Decision { time: 0.0, decision: Decision::Start { job: 1, pool: 0 }, why });
    }

    #[test]
    fn decisions_on_running_jobs_that_cannot_be_done_are_refused_by_both_engines_naming_them() {
        use cosched_engine::policy::Cores;
        /// Starts the queue's head, then asks for `bad` once.
        struct Bad(Option<Decision>);
        impl Policy for Bad {
            fn decide(&mut self, view: &View) -> Vec<Decision> {
                match view.queue.first() {
                    Some(q) => vec![Decision::Start { job: q.id, pool: q.pool }],
                    None => self.0.take().into_iter().collect(),
                }
            }
            fn acts_on_running(&self) -> bool {
                true
            }
        }
        let jobs = [job("a", 0.0, 1.0, 1)];
        let truth = PairTable::new(vec![vec![1.0]]).unwrap();
        let cases = [
            (Decision::Resume { job: 0 }, "the policy's decision `resume job 0` was refused: job 0 is not suspended"),
            (Decision::Move { job: 0, cores: vec![5] }, "`move job 0 to cores 5` was refused: job 0: pool 0 has no core 5 (its cores are 0..1)"),
            (Decision::Suspend { job: 3 }, "`suspend job 3` was refused: job 3 is not running"),
            (
                Decision::StartOn { job: 0, pool: 0, cores: Cores::Compact, overbook: true },
                "`start job 0 on pool 0, compact, overbooking` was refused: job 0 is not waiting",
            ),
        ];
        for (bad, why) in cases {
            let sim = simulate(&platform(2), &jobs, &truth, &mut Bad(Some(bad.clone()))).unwrap_err().to_string();
            let real = run_node(&platform(2), &jobs, &truth, &mut Bad(Some(bad.clone())), &mut VirtualNode::new(&jobs, &truth), &[])
                .unwrap_err()
                .to_string();
            assert!(sim.ends_with(why), "{sim}");
            assert!(real.ends_with(why), "{real}");
        }
    }

    #[test]
    fn jobs_left_suspended_with_nothing_to_run_are_a_stall_not_a_hang() {
        struct Freeze;
        impl Policy for Freeze {
            fn decide(&mut self, view: &View) -> Vec<Decision> {
                let mut out: Vec<Decision> = view.queue.iter().map(|q| Decision::Start { job: q.id, pool: q.pool }).collect();
                out.extend(view.running.iter().filter(|r| !r.suspended).map(|r| Decision::Suspend { job: r.id }));
                out
            }
            fn acts_on_running(&self) -> bool {
                true
            }
        }
        let jobs = [job("a", 0.0, 1.0, 1)];
        let truth = PairTable::new(vec![vec![1.0]]).unwrap();
        let sim = simulate(&platform(1), &jobs, &truth, &mut Freeze).unwrap_err();
        assert_eq!(sim, crate::SimError::Stalled { time: 0.0, waiting: vec![0] });
        let real = run_node(&platform(1), &jobs, &truth, &mut Freeze, &mut VirtualNode::new(&jobs, &truth), &[]).unwrap_err();
        assert_eq!(real, RunError::Stalled { time: 0.0, waiting: vec![0] });
    }

    proptest! {
        /// Driven in virtual time, the runner's loop makes exactly the
        /// simulator's schedule: one protocol, two engines.
        #[test]
        fn in_virtual_time_the_runner_matches_the_simulator(
            spec in prop::collection::vec((0u8..4, 1u8..20, 1u32..3), 1..7),
            cells in prop::collection::vec(1.0f64..3.0, 49),
            policy in prop::sample::select(vec![
                "exclusive", "noplan", "no-twins", "conflict-aware:threshold=100",
                "wait", "surpass", "overbook", "overbook:pin=off", "overbook:spread=on", "sidestep", "sidestep:spread=on",
                "timeshare:quantum=0.5", "timeshare:quantum=0.7,affinity=strict", "colocate", "colocate:rebalance=on",
            ]),
        ) {
            let jobs: Vec<SimJob> = spec.iter().enumerate()
                .map(|(i, &(a, s, c))| SimJob { name: format!("j{i}"), arrival: a as f64, solo: s as f64, pool: 0, cores: c, program: format!("p{}", i % 3), variants: vec![] })
                .collect();
            let n = jobs.len();
            let m: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { cells[i * 7 + j] }).collect()).collect();
            let truth = PairTable::new(m).unwrap();
            let sim = simulate(&platform(2), &jobs, &truth, policy_from_spec(policy).unwrap().as_mut()).unwrap();
            let mut ex = VirtualNode::new(&jobs, &truth);
            let real = run_node(&platform(2), &jobs, &truth, policy_from_spec(policy).unwrap().as_mut(), &mut ex, &[]).unwrap();
            let a = cosched_model::metrics::job_times(&sim, n).unwrap();
            let b = cosched_model::metrics::job_times(&real.events, n).unwrap();
            for (x, y) in a.iter().zip(&b) {
                prop_assert!(
                    (x.start - y.start).abs() < 1e-6 && (x.finish - y.finish).abs() < 1e-6 && (x.suspended - y.suspended).abs() < 1e-6,
                    "{policy}: {a:?} vs {b:?}"
                );
            }
            let kinds = |e: &[crate::Event]| e.iter().filter(|e| e.kind != crate::EventKind::Arrive).count();
            prop_assert_eq!(kinds(&sim), kinds(&real.events), "{}: the same suspensions and moves", policy);
        }
    }
}
