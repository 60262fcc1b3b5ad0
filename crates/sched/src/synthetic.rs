//! Synthetic workloads for benchmarks: many jobs of a few programs with
//! random solo times, Poisson arrivals and a random program slowdown table,
//! all from one seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use cosched_model::workload::PoolKind;

use cosched_engine::policy::PoolInfo;
use crate::sim::{Platform, SimJob};
use crate::tables::ProgramTable;

/// A cluster workload: the node, the jobs and their slowdowns.
#[derive(Debug, Clone)]
pub struct Synthetic {
    pub platform: Platform,
    pub nodes: usize,
    pub jobs: Vec<SimJob>,
    pub table: ProgramTable,
}

/// `jobs` jobs of `programs` programs on `nodes` nodes of one pool of
/// `cores` cores. Solo times are uniform in [50, 500) s; slowdowns uniform
/// in [1, 2) (diagonal, twins, in [1.5, 2.5)); arrivals are Poisson at
/// `load` times the rate the cluster could serve alone, so the queue neither
/// runs dry nor grows without bound when `load` is near 1.
pub fn cluster(nodes: usize, cores: u32, jobs: usize, programs: usize, load: f64, seed: u64) -> Synthetic {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let programs = programs.max(1);
    let slowdown: Vec<Vec<f64>> = (0..programs)
        .map(|a| (0..programs).map(|b| if a == b { rng.random_range(1.5..2.5) } else { rng.random_range(1.0..2.0) }).collect())
        .collect();
    let mean_solo = 275.0;
    let rate = load * nodes as f64 * cores as f64 / mean_solo;
    let mut t = 0.0;
    let mut program = Vec::with_capacity(jobs);
    let jobs: Vec<SimJob> = (0..jobs)
        .map(|i| {
            let p = rng.random_range(0..programs);
            program.push(p);
            // Exponential inter-arrival times by inversion.
            t += -(1.0 - rng.random::<f64>()).ln() / rate;
            SimJob {
                name: format!("j{i}"),
                arrival: t,
                solo: rng.random_range(50.0..500.0),
                pool: 0,
                cores: 1,
                program: format!("p{p}"),
                variants: vec![],
            }
        })
        .collect();
    Synthetic {
        platform: Platform { pools: vec![PoolInfo { name: "cpu".into(), cores, kind: PoolKind::Cpu }] },
        nodes,
        jobs,
        table: ProgramTable::new(program, slowdown, None).expect("built in range"),
    }
}
