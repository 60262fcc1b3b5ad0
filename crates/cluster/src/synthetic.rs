//! A seeded synthetic trace for benchmarks and property tests: Poisson
//! arrivals, a mix of small single-node jobs and wide multi-node ones, run
//! times spread over three decades and requested times above them, as
//! archive logs look. It is not a workload model to draw conclusions from.

use crate::swf::Record;
use crate::workload::{splitmix64, ClusterJob};

/// A SplitMix64 stream: enough randomness for a generator, no dependency.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        splitmix64(self.0)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What share of the jobs is of each size.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Mix {
    /// Part of one node: 1 to cores/2 processors.
    pub small: f64,
    /// One to four whole nodes.
    pub nodes: f64,
    /// The rest: up to a sixteenth of the cluster.
    pub wide: f64,
}

impl Default for Mix {
    /// As archive logs look: mostly small jobs, a tail of wide ones.
    fn default() -> Mix {
        Mix { small: 0.6, nodes: 0.25, wide: 0.15 }
    }
}

impl Mix {
    /// `SMALL,NODES,WIDE`: three shares that sum to 1, as `0.6,0.25,0.15`.
    pub fn parse(text: &str) -> Result<Mix, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let expected = "expected SMALL,NODES,WIDE: three shares (part of a node, 1-4 nodes, up to a sixteenth of the cluster) summing to 1, as 0.6,0.25,0.15";
        if parts.len() != 3 {
            return Err(format!("`{text}`: {expected}"));
        }
        let mut v = [0.0; 3];
        for (slot, p) in v.iter_mut().zip(&parts) {
            *slot = p.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| format!("`{p}` in `{text}`: not a share; {expected}"))?;
        }
        if (v.iter().sum::<f64>() - 1.0).abs() > 1e-6 {
            return Err(format!("`{text}` sums to {}; {expected}", v.iter().sum::<f64>()));
        }
        Ok(Mix { small: v[0], nodes: v[1], wide: v[2] })
    }
}

/// `jobs` jobs for `nodes` nodes of `cores` cores with `programs` programs,
/// arriving at `load` times the rate the cluster could serve, of the
/// default [`Mix`]: 60 % use part of a node (1 to cores/2 processors), 25 %
/// one to four whole nodes, 15 % up to a sixteenth of the cluster. Run
/// times are log-uniform in [30 s, 10 h), requested times 1 to 3 times the run.
pub fn trace(nodes: usize, cores: u32, jobs: usize, programs: usize, load: f64, seed: u64) -> Vec<ClusterJob> {
    trace_of(nodes, cores, jobs, programs, load, Mix::default(), seed)
}

/// [`trace`] with another size mix.
pub fn trace_of(nodes: usize, cores: u32, jobs: usize, programs: usize, load: f64, mix: Mix, seed: u64) -> Vec<ClusterJob> {
    let mut rng = Stream(seed);
    let mut shapes: Vec<(u32, f64)> = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        let u = rng.unit();
        let procs = if u < mix.small {
            1 + (rng.unit() * (cores / 2).max(1) as f64) as u32
        } else if u < mix.small + mix.nodes {
            cores * (1 + (rng.unit() * 4.0) as u32).min(nodes as u32)
        } else {
            cores * (1 + (rng.unit() * (nodes as f64 / 16.0).max(1.0)) as u32).min(nodes as u32)
        };
        let run = (30.0 * (1200.0f64).powf(rng.unit())).round().max(1.0);
        shapes.push((procs, run));
    }
    // Exclusive nodes hold whole nodes, so the offered load counts them.
    let mean_work: f64 = shapes.iter().map(|&(p, r)| p.div_ceil(cores) as f64 * r).sum::<f64>() / jobs.max(1) as f64;
    let rate = load * nodes as f64 / mean_work.max(1e-9);
    let mut t = 0.0f64;
    shapes
        .into_iter()
        .enumerate()
        .map(|(i, (procs, run))| {
            t += -(1.0 - rng.unit()).ln() / rate;
            let submit = t.floor();
            let walltime = (run * (1.0 + 2.0 * rng.unit())).ceil();
            let program = (rng.next() % programs.max(1) as u64) as usize;
            let record = Record {
                line: i + 1,
                job: i as i64 + 1,
                submit,
                wait: -1.0,
                run,
                allocated_procs: procs as i64,
                avg_cpu: -1.0,
                used_memory: -1.0,
                requested_procs: procs as i64,
                requested_time: walltime,
                requested_memory: -1.0,
                status: 1,
                user: program as i64,
                group: -1,
                executable: program as i64,
                queue: -1,
                partition: -1,
                preceding: -1,
                think: -1.0,
            };
            ClusterJob { record, submit, run, walltime, procs, program }
        })
        .collect()
}
