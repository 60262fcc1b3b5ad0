//! `cosched enumerate`: Terrible Twins' exhaustive evaluation of placements.

use std::path::PathBuf;

use clap::Args;
use cosched_app::enumerate::{enumerate, EnumerateRequest};
use cosched_report::table;

use super::common::{print_json, JsonArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched enumerate --programs 10 --nodes 10                 # counts only\n  \
    cosched enumerate --programs 3 --nodes 3 --matrix m.json   # landscape + optimum\n  \
    cosched enumerate --programs 10 --nodes 10 --matrix m.csv --json\n\n\
    Placements of 2 instances of each program on dual-core nodes, where nodes, the\n\
    cores of a node and the two instances of a program are interchangeable (the\n\
    Terrible Twins paper of COSH 2016). The matrix is N x N, row i = slowdown of program i beside\n\
    program j (the diagonal: beside its twin), as JSON (array of arrays) or CSV.")]
pub struct EnumerateArgs {
    /// Number of programs N.
    #[arg(long)]
    pub programs: usize,
    /// Instances of each program (Terrible Twins uses 2; only 2 is supported).
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
    #[command(flatten)]
    pub json: JsonArgs,
}

pub fn run(a: EnumerateArgs) -> anyhow::Result<()> {
    let req = EnumerateRequest {
        programs: a.programs,
        instances: a.instances,
        nodes: a.nodes,
        cores: a.cores,
        matrix: a.matrix,
        bins: a.bins,
        svg: a.svg,
    };
    let r = enumerate(&req)?;
    let (n, all, free) = (r.programs, r.schedules, r.twin_free_schedules);
    let Some(e) = &r.evaluated else {
        if a.json.json {
            println!("{}", serde_json::json!({"programs": n, "nodes": n, "schedules": all.to_string(), "twin_free_schedules": free.to_string()}));
        } else {
            let row = vec![n.to_string(), n.to_string(), all.to_string(), free.to_string()];
            println!("{}", table(&["programs", "nodes", "schedules", "twin-free schedules"], &[row]));
        }
        return Ok(());
    };
    let land = &e.landscape;
    if a.json.json {
        return print_json(&serde_json::json!({
            "programs": n, "nodes": n,
            "schedules": all.to_string(), "twin_free_schedules": free.to_string(),
            "landscape": land, "optimal": e.optimal, "optimal_twin_free": e.optimal_twin_free,
        }));
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
    // The Terrible Twins paper's Table 2 groups (a placement may hold
    // twins of several groups); programs 0-based, as in the placements.
    for g in &land.twin_groups {
        if let Some(p) = &g.population {
            let who: Vec<String> = g.programs.iter().map(|p| p.to_string()).collect();
            let label = if g.name == "all twins" { g.name.to_string() } else { format!("{} ({})", g.name, who.join(",")) };
            rows.push(vec![
                label,
                p.count.to_string(),
                format!("{:.4} / {:.4} / {:.4}", p.average.min, p.average.mean, p.average.max),
                format!("{:.4} / {:.4} / {:.4}", p.worst.min, p.worst.mean, p.worst.max),
            ]);
        }
    }
    let head = ["placements", "count", "average slowdown min / mean / max", "worst slowdown min / mean / max"];
    println!("{}", table(&head, &rows));
    for (what, o) in [("optimal", &e.optimal), ("optimal twin-free", &e.optimal_twin_free)] {
        if let Some(o) = o {
            println!("{what}: {:?} (average {:.4}, worst {:.4})", o.placement, o.slowdown.average, o.slowdown.worst);
        }
    }
    println!("histogram: {}", e.svg.display());
    Ok(())
}
