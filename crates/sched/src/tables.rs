//! Slowdown tables: pairwise slowdowns over jobs ([`PairTable`]) or over
//! programs ([`ProgramTable`]), with host loads and sharing levels, as the
//! simulators and policies read them through [`SlowdownSource`].

use std::sync::Arc;

use cosched_model::levels::LevelMatrix;
use cosched_model::placement::SharingLevel;

use crate::JobId;

pub use cosched_engine::slowdown::SlowdownSource;

/// A pairwise slowdown table over jobs, with optional host loads.
///
/// Beside several jobs, the pairwise slowdowns multiply: it needs no more
/// than pair measurements, stays positive when a co-runner helps (s < 1), and
/// reduces to the measured cell for one co-runner.
#[derive(Debug, Clone, PartialEq)]
pub struct PairTable {
    /// `slowdown[i][j]`: job i beside job j (the `model::matrix` convention).
    slowdown: Vec<Vec<f64>>,
    /// Host load U of each job as a fraction of the host pool (the SX-Aurora paper).
    host_load: Option<Vec<f64>>,
}

impl PairTable {
    /// `slowdown` must be square, with positive finite cells.
    pub fn new(slowdown: Vec<Vec<f64>>) -> Result<PairTable, String> {
        let n = slowdown.len();
        for (i, row) in slowdown.iter().enumerate() {
            if row.len() != n {
                return Err(format!("row {i} has {} cells, expected {n}", row.len()));
            }
            if let Some((j, v)) = row
                .iter()
                .enumerate()
                .find(|(_, v)| !(v.is_finite() && **v > 0.0))
            {
                return Err(format!(
                    "cell ({i}, {j}) = {v} is not a positive finite slowdown"
                ));
            }
        }
        Ok(PairTable {
            slowdown,
            host_load: None,
        })
    }

    /// With host loads, `score` is C_all = (U_a + U_b) x 100 %, the SX-Aurora paper's indicator.
    pub fn with_host_loads(mut self, loads: Vec<f64>) -> Result<PairTable, String> {
        if loads.len() != self.slowdown.len() {
            return Err(format!(
                "{} host loads for {} jobs",
                loads.len(),
                self.slowdown.len()
            ));
        }
        if let Some((j, u)) = loads
            .iter()
            .enumerate()
            .find(|(_, u)| !(u.is_finite() && **u >= 0.0))
        {
            return Err(format!(
                "host load of job {j} = {u} is not a non-negative number"
            ));
        }
        self.host_load = Some(loads);
        Ok(self)
    }

    pub fn len(&self) -> usize {
        self.slowdown.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slowdown.is_empty()
    }
}

impl SlowdownSource for PairTable {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        beside
            .iter()
            .filter(|&&b| b != job)
            .map(|&b| self.slowdown[job][b])
            .product()
    }

    /// Without host loads, the worse of the pair's two predicted slowdowns as
    /// an increase in percent, so that T = 100 reads "neither job may run more
    /// than twice as slow", the same scale as C_all's overloaded host.
    fn score(&self, a: JobId, b: JobId) -> f64 {
        match &self.host_load {
            Some(u) => (u[a] + u[b]) * 100.0,
            None => (self.slowdown[a][b].max(self.slowdown[b][a]) - 1.0) * 100.0,
        }
    }
}

/// Slowdowns by program: each job is an instance of a program, and the table
/// holds program pairs only, so a workload of 100,000 jobs needs no
/// 100,000-square table.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramTable {
    /// Program index of each job.
    program: Vec<usize>,
    /// `slowdown[a][b]`: program a beside program b.
    slowdown: Vec<Vec<f64>>,
    /// Host load U of each program (the SX-Aurora paper).
    host_load: Option<Vec<f64>>,
    /// Program pairs per sharing level (`model::levels`), when the
    /// scenario gives levels: what `slowdown_at` reads.
    levels: Option<Arc<LevelMatrix>>,
}

impl ProgramTable {
    /// `slowdown` square with positive finite cells, `program` indices within it.
    pub fn new(program: Vec<usize>, slowdown: Vec<Vec<f64>>, host_load: Option<Vec<f64>>) -> Result<ProgramTable, String> {
        let t = PairTable::new(slowdown)?;
        if let Some((j, p)) = program.iter().enumerate().find(|(_, &p)| p >= t.len()) {
            return Err(format!("job {j} is of program {p}, but the table has {}", t.len()));
        }
        let t = match host_load {
            Some(u) => t.with_host_loads(u)?,
            None => t,
        };
        Ok(ProgramTable { program, slowdown: t.slowdown, host_load: t.host_load, levels: None })
    }

    /// The same table whose pairs also depend on the level their jobs
    /// share: `levels` is over the same programs; without levels of its
    /// own it changes nothing.
    pub fn with_levels(mut self, levels: Arc<LevelMatrix>) -> Result<ProgramTable, String> {
        if levels.len() != self.slowdown.len() {
            return Err(format!("a level matrix of {} programs for a table of {}", levels.len(), self.slowdown.len()));
        }
        self.levels = levels.by_level().then_some(levels);
        Ok(self)
    }
}

impl SlowdownSource for ProgramTable {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        let row = &self.slowdown[self.program[job]];
        beside.iter().filter(|&&b| b != job).map(|&b| row[self.program[b]]).product()
    }

    /// As [`PairTable`]'s score, over the jobs' programs.
    fn score(&self, a: JobId, b: JobId) -> f64 {
        let (pa, pb) = (self.program[a], self.program[b]);
        match &self.host_load {
            Some(u) => (u[pa] + u[pb]) * 100.0,
            None => (self.slowdown[pa][pb].max(self.slowdown[pb][pa]) - 1.0) * 100.0,
        }
    }

    /// Each co-runner's cell at the level it shares with `job` (the
    /// product, as beside several co-runners anywhere).
    fn slowdown_at(&self, job: JobId, beside: &[JobId], levels: &[Option<SharingLevel>]) -> f64 {
        let Some(m) = &self.levels else { return self.slowdown(job, beside) };
        let a = self.program[job];
        beside.iter().zip(levels).filter(|(b, _)| **b != job).map(|(&b, &l)| m.get(l, a, self.program[b])).product()
    }

    fn by_level(&self) -> bool {
        self.levels.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_table_is_the_job_table_of_its_programs() {
        let m = vec![vec![1.0, 1.5], vec![1.2, 2.0]];
        let program = vec![0, 1, 1, 0];
        let t = ProgramTable::new(program.clone(), m.clone(), Some(vec![0.3, 0.9])).unwrap();
        let jobs: Vec<Vec<f64>> = program.iter().map(|&a| program.iter().map(|&b| m[a][b]).collect()).collect();
        let p = PairTable::new(jobs).unwrap().with_host_loads(vec![0.3, 0.9, 0.9, 0.3]).unwrap();
        for j in 0..4 {
            assert_eq!(t.slowdown(j, &[0, 1, 2, 3]), p.slowdown(j, &[0, 1, 2, 3]));
            for k in 0..4 {
                assert_eq!(t.score(j, k), p.score(j, k));
            }
        }
        assert!((t.slowdown(1, &[2, 3]) - 2.4).abs() < 1e-12);
        assert!(ProgramTable::new(vec![2], m, None).unwrap_err().contains("program 2"));
    }
}
