//! `cosched enumerate`: seed 003(d)'s exhaustive evaluation of placements.

use std::path::PathBuf;

use clap::Args;
use cosched_model::enumerate::{count_placements, count_twin_free, landscape, optimal_placement, validate_matrix};
use cosched_report::svg::histogram;
use cosched_report::table;

use crate::exit::bad_input;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched enumerate --programs 10 --nodes 10                 # counts only\n  \
    cosched enumerate --programs 3 --nodes 3 --matrix m.json   # landscape + optimum\n  \
    cosched enumerate --programs 10 --nodes 10 --matrix m.csv --json\n\n\
    Placements of 2 instances of each program on dual-core nodes, where nodes, the\n\
    cores of a node and the two instances of a program are interchangeable (seed\n\
    003 d, Terrible Twins). The matrix is N x N, row i = slowdown of program i beside\n\
    program j (the diagonal: beside its twin), as JSON (array of arrays) or CSV.")]
pub struct EnumerateArgs {
    /// Number of programs N.
    #[arg(long)]
    pub programs: usize,
    /// Instances of each program (seed 003 d uses 2; only 2 is supported).
    #[arg(long, default_value_t = 2)]
    pub instances: usize,
    /// Number of nodes M (must equal N so 2N jobs fill M dual-core nodes).
    #[arg(long)]
    pub nodes: usize,
    /// Cores per node (only 2 is supported).
    #[arg(long, default_value_t = 2)]
    pub cores: usize,
    /// Slowdown matrix file (JSON array of arrays, or CSV without header).
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// Histogram bins.
    #[arg(long, default_value_t = 40)]
    pub bins: usize,
    /// Where to write the histogram SVG (with --matrix; default enumerate-N.svg).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: EnumerateArgs) -> anyhow::Result<()> {
    if a.instances != 2 || a.cores != 2 {
        return Err(bad_input("only --instances 2 on --cores 2 nodes is supported (seed 003 d's setting)"));
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
    let Some(path) = &a.matrix else {
        if a.json {
            println!("{}", serde_json::json!({"programs": n, "nodes": n, "schedules": all.to_string(), "twin_free_schedules": free.to_string()}));
        } else {
            println!("{}", table(&["programs", "nodes", "schedules", "twin-free schedules"], &[vec![n.to_string(), n.to_string(), all.to_string(), free.to_string()]]));
        }
        return Ok(());
    };
    let m = read_matrix(path)?;
    let size = validate_matrix(&m).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    if size != n {
        return Err(bad_input(format!("{}: the matrix is {size} x {size} but --programs is {n}", path.display())));
    }
    let land = landscape(&m, a.bins.max(1)).map_err(|e| bad_input(e.to_string()))?;
    let best = optimal_placement(&m, true).ok().flatten();
    let best_free = optimal_placement(&m, false).ok().flatten();
    let svg_path = a.svg.clone().unwrap_or_else(|| PathBuf::from(format!("enumerate-{n}.svg")));
    let h = &land.all.average.histogram;
    let mut series: Vec<(&str, &str, &[u64])> = vec![("all placements", "#1f77b4", &h.counts)];
    if let Some(tf) = &land.twin_free {
        series.push(("twin-free", "#d62728", &tf.average.histogram.counts));
    }
    std::fs::write(
        &svg_path,
        histogram(&format!("Average slowdown over every placement of {n} programs x 2"), "average slowdown of a placement", h.lo, h.bin_width(), &series),
    )
    .map_err(|e| anyhow::anyhow!("writing {}: {e}", svg_path.display()))?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "programs": n, "nodes": n,
                "schedules": all.to_string(), "twin_free_schedules": free.to_string(),
                "landscape": land, "optimal": best, "optimal_twin_free": best_free,
            }))?
        );
        return Ok(());
    }
    let mut rows = vec![vec![
        "all".to_string(),
        all.to_string(),
        format!("{:.4} / {:.4} / {:.4}", land.all.average.min, land.all.average.mean, land.all.average.max),
        format!("{:.4} / {:.4} / {:.4}", land.all.worst.min, land.all.worst.mean, land.all.worst.max),
    ]];
    if let Some(tf) = &land.twin_free {
        rows.push(vec![
            "twin-free".into(),
            free.to_string(),
            format!("{:.4} / {:.4} / {:.4}", tf.average.min, tf.average.mean, tf.average.max),
            format!("{:.4} / {:.4} / {:.4}", tf.worst.min, tf.worst.mean, tf.worst.max),
        ]);
    }
    println!("{}", table(&["placements", "count", "average slowdown min / mean / max", "worst slowdown min / mean / max"], &rows));
    for (what, o) in [("optimal", &best), ("optimal twin-free", &best_free)] {
        if let Some(o) = o {
            println!("{what}: {:?} (average {:.4}, worst {:.4})", o.placement, o.slowdown.average, o.slowdown.worst);
        }
    }
    println!("histogram: {}", svg_path.display());
    Ok(())
}

/// Reads an N x N matrix as JSON (array of arrays) or CSV (no header).
fn read_matrix(path: &std::path::Path) -> anyhow::Result<Vec<Vec<f64>>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input(format!("{}: cannot read the matrix: {e}", path.display())))?;
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
                bad_input(format!("{}:{}:{col}: `{}` is not a number; expected comma-separated slowdowns", path.display(), i + 1, field.trim()))
            })?);
            col += field.len() + 1;
        }
        m.push(row);
    }
    Ok(m)
}
