//! Measured slowdowns for a scenario: where they come from, a matrix of
//! cells over named jobs, and how its cells map onto the scenario's
//! programs.

use std::path::PathBuf;

use super::{limits, Program};
use cosched_engine::policy::PoolInfo;

/// Where measured slowdowns come from.
#[derive(Debug, Clone, PartialEq)]
pub enum MatrixSource {
    /// The latest pairs campaign of this workload in the store.
    Store { workload: String },
    /// A JSON matrix as `cosched pairs --json` writes it (path resolved
    /// against the scenario's directory).
    File { path: PathBuf },
}

/// Which figure of a cell's repeats is the slowdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Median,
    Mean,
}

/// Cells of a measured matrix over named jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredMatrix {
    pub jobs: Vec<String>,
    /// `cells[i][j]`: job i beside job j; `None` where nothing was measured.
    pub cells: Vec<Vec<Option<f64>>>,
    /// Where the cells came from, in words (campaign id, file).
    pub origin: String,
}

impl MeasuredMatrix {
    /// Cells from repeats (foreground index, background index, slowdown),
    /// each cell the median or mean of its repeats.
    pub fn from_samples(jobs: Vec<String>, samples: impl IntoIterator<Item = (usize, usize, f64)>, statistic: Statistic, origin: String) -> MeasuredMatrix {
        let n = jobs.len();
        let mut lists = vec![vec![Vec::new(); n]; n];
        for (i, j, v) in samples {
            if i < n && j < n && v.is_finite() {
                lists[i][j].push(v);
            }
        }
        let cells = lists
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v: &Vec<f64>| {
                        (!v.is_empty()).then(|| match statistic {
                            Statistic::Median => cosched_model::stats::median(v),
                            Statistic::Mean => v.iter().sum::<f64>() / v.len() as f64,
                        })
                    })
                    .collect()
            })
            .collect();
        MeasuredMatrix { jobs, cells, origin }
    }
}

/// Fetches measurements for a scenario: implemented by the caller over the
/// store or files, so the scheduler stays free of both.
pub trait Measurements {
    fn matrix(&self, source: &MatrixSource, statistic: Statistic) -> Result<MeasuredMatrix, String>;
    /// Host load U of each named job from the latest profiles of `workload`;
    /// `None` for a job without a profile.
    fn host_loads(&self, workload: &str, jobs: &[String]) -> Result<Vec<Option<f64>>, String>;
}

/// The program matrix from a measured one: program p's row is its
/// `measured` job's. A missing cell is an error unless the two programs can
/// never run together (one pool too small for both), where it is 1.
pub(super) fn map_measured(programs: &[Program], pools: &[PoolInfo], mm: &MeasuredMatrix) -> Result<(Vec<Vec<f64>>, String), String> {
    let mut index = Vec::with_capacity(programs.len());
    for (i, p) in programs.iter().enumerate() {
        match mm.jobs.iter().position(|j| *j == p.measured) {
            Some(k) => index.push(k),
            None => {
                return Err(format!(
                    "programs[{i}].measured: `{}` is not a job of {}; it has {}",
                    p.measured,
                    mm.origin,
                    mm.jobs.join(", ")
                ))
            }
        }
    }
    let mut out = vec![vec![1.0; programs.len()]; programs.len()];
    for (a, pa) in programs.iter().enumerate() {
        for (b, pb) in programs.iter().enumerate() {
            let together = pa.pool != pb.pool || pa.cores + pb.cores <= pools[pa.pool].cores;
            match mm.cells.get(index[a]).and_then(|r| r.get(index[b])).copied().flatten() {
                Some(v) if v.is_finite() && v > 0.0 && v <= limits::MAX_SLOWDOWN => out[a][b] = v,
                Some(v) => return Err(format!("cell ({}, {}) of {} is {v}, not a positive slowdown", pa.measured, pb.measured, mm.origin)),
                None if together => {
                    return Err(format!(
                        "{} has no cell ({} beside {}), which programs `{}` and `{}` need",
                        mm.origin, pa.measured, pb.measured, pa.name, pb.name
                    ))
                }
                None => {}
            }
        }
    }
    Ok((out, mm.origin.clone()))
}
