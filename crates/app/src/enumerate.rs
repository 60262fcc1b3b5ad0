//! `cosched enumerate`: the Terrible Twins paper's exhaustive evaluation of placements of
//! program pairs on dual-core nodes.

use std::path::{Path, PathBuf};

use cosched_model::enumerate::{count_placements, count_twin_free, landscape, optimal_placement, validate_matrix, Landscape, Optimum};
use cosched_report::svg::histogram;

use crate::common::write_file;
use crate::error::bad_input;
use crate::render::{Doc, Render};

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

/// `cosched enumerate`; `--json` gives the counts as strings (they pass
/// 2^53) and, with a matrix, the landscape and the optima.
#[derive(Debug)]
pub struct EnumerateReport {
    pub programs: usize,
    pub schedules: u128,
    pub twin_free_schedules: u128,
    pub evaluated: Option<Evaluated>,
}

impl serde::Serialize for EnumerateReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Json<'a> {
            programs: usize,
            nodes: usize,
            schedules: String,
            twin_free_schedules: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            landscape: Option<&'a Landscape>,
            #[serde(skip_serializing_if = "Option::is_none")]
            optimal: Option<&'a Option<Optimum>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            optimal_twin_free: Option<&'a Option<Optimum>>,
        }
        let e = self.evaluated.as_ref();
        Json {
            programs: self.programs,
            nodes: self.programs,
            schedules: self.schedules.to_string(),
            twin_free_schedules: self.twin_free_schedules.to_string(),
            landscape: e.map(|e| &e.landscape),
            optimal: e.map(|e| &e.optimal),
            optimal_twin_free: e.map(|e| &e.optimal_twin_free),
        }
        .serialize(s)
    }
}

impl Render for EnumerateReport {
    fn doc(&self) -> Doc {
        let (n, all, free) = (self.programs, self.schedules, self.twin_free_schedules);
        let mut d = Doc::new();
        let Some(e) = &self.evaluated else {
            d.table(&["programs", "nodes", "schedules", "twin-free schedules"], vec![vec![n.to_string(), n.to_string(), all.to_string(), free.to_string()]]);
            return d;
        };
        let land = &e.landscape;
        let spread = |p: &cosched_model::enumerate::Population| {
            [
                format!("{:.4} / {:.4} / {:.4}", p.average.min, p.average.mean, p.average.max),
                format!("{:.4} / {:.4} / {:.4}", p.worst.min, p.worst.mean, p.worst.max),
            ]
        };
        let mut rows = Vec::new();
        let [avg, worst] = spread(&land.all);
        rows.push(vec!["all".to_string(), all.to_string(), avg, worst]);
        if let Some(tf) = &land.twin_free {
            let [avg, worst] = spread(tf);
            rows.push(vec!["twin-free".into(), free.to_string(), avg, worst]);
        }
        // The Terrible Twins paper's Table 2 groups (a placement may hold
        // twins of several groups); programs 0-based, as in the placements.
        for g in &land.twin_groups {
            if let Some(p) = &g.population {
                let who: Vec<String> = g.programs.iter().map(|p| p.to_string()).collect();
                let label = if g.name == "all twins" { g.name.to_string() } else { format!("{} ({})", g.name, who.join(",")) };
                let [avg, worst] = spread(p);
                rows.push(vec![label, p.count.to_string(), avg, worst]);
            }
        }
        d.table(&["placements", "count", "average slowdown min / mean / max", "worst slowdown min / mean / max"], rows);
        for (what, o) in [("optimal", &e.optimal), ("optimal twin-free", &e.optimal_twin_free)] {
            if let Some(o) = o {
                d.line(format!("{what}: {:?} (average {:.4}, worst {:.4})", o.placement, o.slowdown.average, o.slowdown.worst));
            }
        }
        d.line(format!("histogram: {}", e.svg.display()));
        d
    }
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
