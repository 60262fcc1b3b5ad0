//! One cell of `cosched bench simulate --scaling` alone, for profiling the
//! engine (`perf record -g target/release/examples/scale 300000 100000`) and
//! for checking that a faster engine keeps a large schedule: it prints a
//! digest of every job's start, finish, nodes, cores and shared flag (the
//! one `tests/schedules.rs` records), so two builds compare at a million jobs.
//!
//!   scale JOBS NODES [exclusive|POLICY ...]   default: exclusive, then conflict-aware:threshold=50

use std::time::Instant;

use cosched_cluster::{simulate, synthetic, Config, Schedule, Scheduler};
use cosched_sched::{policy_from_spec, Policy, ProgramTable};

/// examples/scenarios/few-bad.toml's matrix, as the bench's case (f) reads it.
fn matrix() -> Vec<Vec<f64>> {
    vec![
        vec![1.93, 1.05, 1.027, 1.027, 1.027],
        vec![1.05, 1.54, 1.027, 1.027, 1.027],
        vec![1.019, 1.019, 1.01, 1.01, 1.01],
        vec![1.019, 1.019, 1.01, 1.01, 1.01],
        vec![1.019, 1.019, 1.01, 1.01, 1.01],
    ]
}

fn digest(s: &Schedule) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for i in 0..s.start.len() {
        eat(s.start[i].to_bits());
        eat(s.finish[i].to_bits());
        eat(s.alloc[i].nodes.len() as u64);
        s.alloc[i].nodes.iter().for_each(|n| eat(n as u64));
        eat(s.alloc[i].cores.len() as u64);
        s.alloc[i].cores.iter().for_each(|&c| eat(c as u64));
        eat(s.shared[i] as u64);
    }
    h
}

/// CPU seconds this thread has run (Linux's schedstat; 0 elsewhere).
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok().and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok()).map_or(0.0, |ns| ns / 1e9)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: scale JOBS NODES [exclusive|POLICY ...]";
    let jobs: usize = args.first().and_then(|a| a.parse().ok()).expect(usage);
    let nodes: usize = args.get(1).and_then(|a| a.parse().ok()).expect(usage);
    let mut schedules: Vec<String> = args[2..].to_vec();
    if schedules.is_empty() {
        schedules = vec!["exclusive".into(), "conflict-aware:threshold=50".into()];
    }
    let m = matrix();
    let names: Vec<String> = (0..m.len()).map(|i| format!("p{i}")).collect();
    let trace = synthetic::trace(nodes, 16, jobs, m.len(), 0.95, 7);
    let table = ProgramTable::new(trace.iter().map(|j| j.program).collect(), m, None).expect("the matrix fits the programs");
    let cfg = Config::new(nodes, 16, Scheduler::Easy);
    for spec in &schedules {
        let mut p: Option<Box<dyn Policy>> = if spec == "exclusive" { None } else { Some(policy_from_spec(spec).expect("a policy spec")) };
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let s = simulate(&trace, &names, &cfg, &table, &table, p.as_deref_mut().map(|p| p as &mut dyn Policy), &mut |_| {}).expect("the schedule");
        let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        let shared = s.shared.iter().filter(|&&x| x).count();
        println!("{jobs} jobs on {nodes} nodes, {spec}: {cpu:.3} CPU s, {wall:.3} s wall, digest {:016x}, {shared} shared", digest(&s));
    }
}
