//! The cluster engine against hand-computed schedules, a textbook
//! count-based EASY, and the invariants every schedule keeps.

use cosched_cluster::swf::Record;
use cosched_cluster::{simulate, ClusterJob, Config, Schedule, Scheduler};
use cosched_sched::{policy_from_spec, Policy, ProgramTable};
use proptest::prelude::*;

fn record(job: i64) -> Record {
    Record {
        line: job as usize,
        job,
        submit: 0.0,
        wait: -1.0,
        run: -1.0,
        allocated_procs: -1,
        avg_cpu: -1.0,
        used_memory: -1.0,
        requested_procs: -1,
        requested_time: -1.0,
        requested_memory: -1.0,
        status: 1,
        user: -1,
        group: -1,
        executable: -1,
        queue: -1,
        partition: -1,
        preceding: -1,
        think: -1.0,
    }
}

/// (submit, procs, run, walltime, program)
fn jobs(spec: &[(f64, u32, f64, f64, usize)]) -> Vec<ClusterJob> {
    spec.iter()
        .enumerate()
        .map(|(i, &(submit, procs, run, walltime, program))| ClusterJob { record: record(i as i64 + 1), submit, run, walltime, procs, program })
        .collect()
}

fn programs(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("p{i}")).collect()
}

fn run(js: &[ClusterJob], cfg: &Config, matrix: &[Vec<f64>], policy: Option<&str>) -> Schedule {
    let table = ProgramTable::new(js.iter().map(|j| j.program).collect(), matrix.to_vec(), None).unwrap();
    let mut p: Option<Box<dyn Policy>> = policy.map(|s| policy_from_spec(s).unwrap());
    let names = programs(matrix.len());
    simulate(js, &names, cfg, &table, &table, p.as_deref_mut().map(|p| p as &mut dyn Policy), &mut |_| {}).unwrap()
}

/// Four single-core nodes. J0 holds two nodes until 10; J1 needs all four,
/// so it reserves them for t = 10. J2 (2 nodes, 20 s) would hold two of
/// them past 10: no. J3 (2 nodes, asks 7 s, runs 4) ends by 3 + 7 = 10:
/// backfilled at 3, the only one. J4 (2 nodes, asks 4) is considered at 7
/// when J3 ends, but 7 + 4 > 10 and no node is spare: it waits for J1 and
/// starts at 20 beside J2.
#[test]
fn easy_backfills_exactly_the_job_that_ends_before_the_reservation() {
    let js = jobs(&[(0.0, 2, 10.0, 10.0, 0), (1.0, 4, 10.0, 10.0, 0), (2.0, 2, 20.0, 20.0, 0), (3.0, 2, 4.0, 7.0, 0), (4.0, 2, 3.0, 4.0, 0)]);
    let m = vec![vec![1.0]];
    let easy = run(&js, &Config::new(4, 1, Scheduler::Easy), &m, None);
    assert_eq!(easy.start, vec![0.0, 10.0, 20.0, 3.0, 20.0]);
    assert_eq!(easy.finish, vec![10.0, 20.0, 40.0, 7.0, 23.0]);
    let fcfs = run(&js, &Config::new(4, 1, Scheduler::Fcfs), &m, None);
    assert_eq!(fcfs.start, vec![0.0, 10.0, 20.0, 20.0, 24.0]);
}

/// One node of two cores, two one-core jobs at t = 0: A (program 0, 10 s)
/// is 1.5x slower beside B, B (program 1, 10 s) 1.2x beside A.
#[test]
fn sharing_follows_the_policy_and_the_measured_slowdowns() {
    let js = jobs(&[(0.0, 1, 10.0, 30.0, 0), (0.0, 1, 10.0, 30.0, 1)]);
    let m = vec![vec![1.0, 1.5], vec![1.2, 1.0]];
    let cfg = Config::new(1, 2, Scheduler::Easy);
    // Together: B ends at 12 (10 x 1.2); A has done 12 / 1.5 = 8 s of work
    // by then and ends alone at 14.
    let noplan = run(&js, &cfg, &m, Some("noplan"));
    assert_eq!(noplan.start, vec![0.0, 0.0]);
    assert_eq!(noplan.finish[1], 12.0);
    assert!((noplan.finish[0] - 14.0).abs() < 1e-9, "{}", noplan.finish[0]);
    assert_eq!(noplan.shared, vec![true, true]);
    assert_ne!(noplan.alloc[0].cores, noplan.alloc[1].cores);
    // Score of the pair: (1.5 - 1) x 100 = 50 > 40, so B waits for A.
    let refused = run(&js, &cfg, &m, Some("conflict-aware:threshold=40"));
    assert_eq!((refused.start, refused.finish), (vec![0.0, 10.0], vec![10.0, 20.0]));
    let admitted = run(&js, &cfg, &m, Some("conflict-aware:threshold=60"));
    assert_eq!(admitted.start, vec![0.0, 0.0]);
    // Without sharing each job holds the whole node.
    let exclusive = run(&js, &cfg, &m, None);
    assert_eq!((exclusive.start, exclusive.alloc[0].cores.len()), (vec![0.0, 10.0], 0));
}

/// Two nodes of four cores; A (program 0, two cores) runs on node 0 when
/// j (program 0) and k (program 1), one core each, arrive. Program 0
/// beside itself is 1.93, beside program 1 1.05 (and 1.02 back).
/// best-match, asked whether j may join A, sees k waiting too, whose cost
/// beside A (0.02 + 0.05) is far below j's (0.93 + 0.93): j takes the idle
/// node and k joins A. noplan puts both beside A, tightest fit first.
#[test]
fn best_match_leaves_a_node_to_the_better_partner_waiting_behind() {
    let js = jobs(&[(0.0, 2, 100.0, 100.0, 0), (1.0, 1, 50.0, 50.0, 0), (1.0, 1, 50.0, 50.0, 1)]);
    let m = vec![vec![1.93, 1.05], vec![1.02, 1.01]];
    let cfg = Config::new(2, 4, Scheduler::Easy);
    let nodes = |s: &Schedule| s.alloc.iter().map(|a| a.nodes.iter().collect::<Vec<u32>>()).collect::<Vec<_>>();
    let best = run(&js, &cfg, &m, Some("best-match:window=0"));
    assert_eq!(nodes(&best), vec![vec![0], vec![1], vec![0]]);
    assert_eq!(best.shared, vec![true, false, true]);
    let noplan = run(&js, &cfg, &m, Some("noplan"));
    assert_eq!(nodes(&noplan), vec![vec![0], vec![0], vec![0]]);
    // conflict-aware judges j alone: its pair with A scores 93 > 50.
    let ca = run(&js, &cfg, &m, Some("conflict-aware:threshold=50"));
    assert_eq!(nodes(&ca), vec![vec![0], vec![1], vec![0]]);
}

/// A textbook EASY counting free nodes: the first job that cannot start
/// reserves the earliest time enough nodes are free (by walltimes); a
/// later job starts if it fits and ends by then or uses only the nodes
/// spare at that time. FCFS stops at the first job that cannot start.
fn reference(js: &[ClusterJob], nodes: usize, cores: u32, easy: bool, depth: usize) -> Vec<f64> {
    let width = |j: &ClusterJob| j.procs.div_ceil(cores) as usize;
    let mut start = vec![f64::NAN; js.len()];
    // (end, estimated end, nodes)
    let mut running: Vec<(f64, f64, usize)> = Vec::new();
    let mut waiting: Vec<usize> = Vec::new();
    let (mut now, mut next, mut free) = (0.0f64, 0usize, nodes);
    loop {
        running.retain(|&(end, _, k)| {
            if end <= now {
                free += k;
            }
            end > now
        });
        while next < js.len() && js[next].submit <= now {
            waiting.push(next);
            next += 1;
        }
        let mut i = 0;
        let mut res: Option<(f64, usize)> = None;
        let mut behind = 0;
        while i < waiting.len() {
            let j = waiting[i];
            let k = width(&js[j]);
            match res {
                None if k <= free => {
                    start[j] = now;
                    free -= k;
                    running.push((now + js[j].run, now + js[j].walltime, k));
                    waiting.remove(i);
                }
                None => {
                    if !easy {
                        break;
                    }
                    let mut ends: Vec<(f64, usize)> = running.iter().map(|&(_, est, k)| (est.max(now), k)).collect();
                    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let mut acc = free;
                    let mut shadow = f64::INFINITY;
                    for &(t, kr) in &ends {
                        acc += kr;
                        if acc >= k {
                            shadow = t;
                            break;
                        }
                    }
                    let spare = free + ends.iter().filter(|e| e.0 <= shadow).map(|e| e.1).sum::<usize>() - k;
                    res = Some((shadow, spare));
                    i += 1;
                }
                Some((shadow, ref mut spare)) => {
                    if behind >= depth {
                        break;
                    }
                    behind += 1;
                    let long = now + js[j].walltime > shadow;
                    if k <= free && (!long || k <= *spare) {
                        start[j] = now;
                        free -= k;
                        if long {
                            *spare -= k;
                        }
                        running.push((now + js[j].run, now + js[j].walltime, k));
                        waiting.remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
        }
        let t_end = running.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
        let t_arr = js.get(next).map_or(f64::INFINITY, |j| j.submit);
        if t_end == f64::INFINITY && t_arr == f64::INFINITY {
            assert!(waiting.is_empty());
            return start;
        }
        now = t_end.min(t_arr);
    }
}

/// At any instant each core of each node holds at most one job: a job
/// starts only on cores that are free (whole-node jobs hold every core).
fn check_capacity(js: &[ClusterJob], s: &Schedule, cfg: &Config) -> Result<(), TestCaseError> {
    // (time, is start, job, node)
    let mut events: Vec<(f64, bool, usize, usize)> = Vec::new();
    for (i, a) in s.alloc.iter().enumerate() {
        prop_assert!(a.cores.is_empty() || a.cores.len() == js[i].procs as usize);
        for n in a.nodes.iter() {
            events.push((s.start[i], true, i, n as usize));
            events.push((s.finish[i], false, i, n as usize));
        }
    }
    // Ends before starts at one instant: a node freed at t may be refilled at t.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut holder: Vec<Vec<Option<usize>>> = vec![vec![None; cfg.cores as usize]; cfg.nodes];
    for (t, start, j, n) in events {
        let cores: Vec<usize> = if s.alloc[j].cores.is_empty() { (0..cfg.cores as usize).collect() } else { s.alloc[j].cores.iter().map(|&c| c as usize).collect() };
        for c in cores {
            if start {
                prop_assert!(holder[n][c].is_none(), "job {j} starts at t={t} on core {c} of node {n}, held by job {:?}", holder[n][c]);
                holder[n][c] = Some(j);
            } else {
                prop_assert_eq!(holder[n][c], Some(j));
                holder[n][c] = None;
            }
        }
    }
    Ok(())
}

fn arb_jobs(max_procs: u32, programs: usize) -> impl Strategy<Value = Vec<ClusterJob>> {
    prop::collection::vec((0u32..12, 1..=max_procs, 1u32..20, 0u32..10, 0..programs), 1..30).prop_map(|v| {
        let mut spec: Vec<(f64, u32, f64, f64, usize)> = v.into_iter().map(|(t, p, r, extra, g)| (t as f64, p, r as f64, (r + extra) as f64, g)).collect();
        spec.sort_by(|a, b| a.0.total_cmp(&b.0));
        jobs(&spec)
    })
}

fn arb_case() -> impl Strategy<Value = (usize, u32, Vec<ClusterJob>, Vec<Vec<f64>>)> {
    (1usize..5, 1u32..5).prop_flat_map(|(nodes, cores)| {
        let m = prop::collection::vec(prop::collection::vec(1.0f64..2.0, 3), 3);
        (Just(nodes), Just(cores), arb_jobs(nodes as u32 * cores, 3), m)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn exclusive_easy_and_fcfs_equal_the_textbook_count(case in arb_case(), depth in 1usize..4) {
        let (nodes, cores, js, m) = case;
        for (sched, easy) in [(Scheduler::Easy, true), (Scheduler::Fcfs, false)] {
            let cfg = Config { depth, ..Config::new(nodes, cores, sched) };
            let s = run(&js, &cfg, &m, None);
            prop_assert_eq!(&s.start, &reference(&js, nodes, cores, easy, depth));
        }
    }

    #[test]
    fn sharing_under_the_exclusive_policy_is_plain_easy_exactly(case in arb_case()) {
        let (nodes, cores, js, m) = case;
        let cfg = Config::new(nodes, cores, Scheduler::Easy);
        let off = run(&js, &cfg, &m, None);
        let on = run(&js, &cfg, &m, Some("exclusive"));
        prop_assert_eq!(&on.start, &off.start);
        prop_assert_eq!(&on.finish, &off.finish);
        prop_assert_eq!(on.alloc.iter().map(|a| &a.nodes).collect::<Vec<_>>(), off.alloc.iter().map(|a| &a.nodes).collect::<Vec<_>>());
        prop_assert!(on.shared.iter().all(|s| !s));
    }

    #[test]
    fn no_job_starts_before_it_arrives_or_before_its_cores_are_free(
        case in arb_case(),
        policy in prop::sample::select(vec!["noplan", "conflict-aware:threshold=50", "no-twins", "best-match:window=0"]),
        sched in prop::sample::select(vec![Scheduler::Easy, Scheduler::Fcfs]),
        sharing in any::<bool>(),
    ) {
        let (nodes, cores, js, m) = case;
        let cfg = Config::new(nodes, cores, sched);
        let s = run(&js, &cfg, &m, sharing.then_some(policy));
        for (i, j) in js.iter().enumerate() {
            prop_assert!(s.start[i] >= j.submit, "job {i} starts at {} before it arrives at {}", s.start[i], j.submit);
            // Every slowdown here is >= 1: a job never beats its solo time.
            prop_assert!(s.finish[i] - s.start[i] >= j.run * (1.0 - 1e-9));
            prop_assert_eq!(s.alloc[i].nodes.len(), cfg.width(j.procs));
        }
        check_capacity(&js, &s, &cfg)?;
    }
}

/// A policy that says it never shares nodes (`exclusive`) is not asked
/// about partly used ones, job by job and pass by pass (issue 42: that made
/// `simulate --swf --policy exclusive` 15x slower than exclusive EASY); one
/// that may share is asked.
#[test]
fn a_policy_that_never_shares_is_not_asked_about_partly_used_nodes() {
    use cosched_engine::policy::{Decision, View};
    struct Counting(Box<dyn Policy>, usize);
    impl Policy for Counting {
        fn decide(&mut self, view: &View) -> Vec<Decision> {
            self.1 += 1;
            self.0.decide(view)
        }
        fn shares_nodes(&self) -> bool {
            self.0.shares_nodes()
        }
    }
    // Two nodes of four cores; five one-core jobs queue behind each other.
    let js = jobs(&[(0.0, 1, 10.0, 10.0, 0), (0.0, 1, 10.0, 10.0, 0), (0.0, 1, 10.0, 10.0, 0), (0.0, 1, 10.0, 10.0, 0), (0.0, 1, 10.0, 10.0, 0)]);
    let table = ProgramTable::new(js.iter().map(|j| j.program).collect(), vec![vec![1.0]], None).unwrap();
    let cfg = Config::new(2, 4, Scheduler::Easy);
    let mut asked = Vec::new();
    for spec in ["exclusive", "conflict-aware:threshold=50"] {
        let mut p = Counting(policy_from_spec(spec).unwrap(), 0);
        let s = simulate(&js, &programs(1), &cfg, &table, &table, Some(&mut p), &mut |_| {}).unwrap();
        asked.push((s.start, p.1));
    }
    assert_eq!(asked[0], (vec![0.0, 0.0, 10.0, 10.0, 20.0], 0));
    assert_eq!(asked[1].0, vec![0.0; 5]);
    assert!(asked[1].1 > 0);
}
