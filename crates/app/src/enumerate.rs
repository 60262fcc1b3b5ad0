//! `cosched enumerate`: the Terrible Twins paper's exhaustive evaluation of placements of
//! program pairs on dual-core nodes.

use std::path::{Path, PathBuf};

use cosched_model::enumerate::{count_placements, count_twin_free, landscape, optimal_placement, validate_matrix, Landscape, Optimum};
use cosched_report::svg::histogram;

use crate::common::write_file;
use crate::error::bad_input;

#[derive(Debug, Clone)]
pub struct EnumerateRequest {
    pub programs: usize,
    pub instances: usize,
    pub nodes: usize,
    pub cores: usize,
    /// Slowdown matrix (JSON array of arrays, or CSV); without it, counts only.
    pub matrix: Option<PathBuf>,
    pub bins: usize,
    /// Where the histogram goes; default enumerate-N.svg here.
    pub svg: Option<PathBuf>,
}

/// The landscape of a matrix over every placement.
#[derive(Debug)]
pub struct Evaluated {
    pub landscape: Landscape,
    pub optimal: Option<Optimum>,
    pub optimal_twin_free: Option<Optimum>,
    /// The histogram written.
    pub svg: PathBuf,
}

#[derive(Debug)]
pub struct EnumerateReport {
    pub programs: usize,
    pub schedules: u128,
    pub twin_free_schedules: u128,
    pub evaluated: Option<Evaluated>,
}

pub fn enumerate(a: &EnumerateRequest) -> anyhow::Result<EnumerateReport> {
    if a.instances != 2 || a.cores != 2 {
        return Err(bad_input("only --instances 2 on --cores 2 nodes is supported (Terrible Twins' setting)"));
    }
    if a.programs == 0 || a.nodes != a.programs {
        return Err(bad_input(format!(
            "--nodes must equal --programs (2 x {} jobs fill exactly {} dual-core nodes), got --nodes {}",
            a.programs, a.programs, a.nodes
        )));
    }
    let n = a.programs;
    let (Some(all), Some(free)) = (count_placements(n), count_twin_free(n)) else {
        return Err(bad_input(format!("{n} programs overflow a 128-bit count; at most 34")));
    };
    let mut report = EnumerateReport { programs: n, schedules: all, twin_free_schedules: free, evaluated: None };
    let Some(path) = &a.matrix else {
        return Ok(report);
    };
    let m = read_matrix(path)?;
    let size = validate_matrix(&m).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    if size != n {
        return Err(bad_input(format!("{}: the matrix is {size} x {size} but --programs is {n}", path.display())));
    }
    let land = landscape(&m, a.bins.max(1)).map_err(|e| bad_input(e.to_string()))?;
    let best = optimal_placement(&m, true).ok().flatten();
    let best_free = optimal_placement(&m, false).ok().flatten();
    let svg = a.svg.clone().unwrap_or_else(|| PathBuf::from(format!("enumerate-{n}.svg")));
    let h = &land.all.average.histogram;
    let mut series: Vec<(&str, &str, &[u64])> = vec![("all placements", "#1f77b4", &h.counts)];
    if let Some(tf) = &land.twin_free {
        series.push(("twin-free", "#d62728", &tf.average.histogram.counts));
    }
    let title = format!("Average slowdown over every placement of {n} programs x 2");
    write_file(&svg, &histogram(&title, "average slowdown of a placement", h.lo, h.bin_width(), &series))?;
    report.evaluated = Some(Evaluated { landscape: land, optimal: best, optimal_twin_free: best_free, svg });
    Ok(report)
}

/// Reads an N x N matrix as JSON (array of arrays) or CSV (no header).
fn read_matrix(path: &Path) -> anyhow::Result<Vec<Vec<f64>>> {
    let text = std::fs::read_to_string(path).map_err(|e| bad_input(format!("{}: cannot read the matrix: {e}", path.display())))?;
    if text.trim_start().starts_with('[') {
        return serde_json::from_str(&text).map_err(|e| {
            bad_input(format!("{}:{}:{}: {e}; expected a JSON array of arrays of numbers", path.display(), e.line(), e.column()))
        });
    }
    let mut m = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let mut row = Vec::new();
        let mut col = 1;
        for field in line.split(',') {
            row.push(field.trim().parse::<f64>().map_err(|_| {
                bad_input(format!(
                    "{}:{}:{col}: `{}` is not a number; expected comma-separated slowdowns",
                    path.display(),
                    i + 1,
                    field.trim()
                ))
            })?);
            col += field.len() + 1;
        }
        m.push(row);
    }
    Ok(m)
}
