//! `cosched enumerate`: Terrible Twins' exhaustive evaluation of placements.

use std::path::PathBuf;

use clap::Args;
use cosched_app::enumerate::{enumerate, EnumerateRequest};

use super::common::{emit, JsonArgs};

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
    emit(&enumerate(&req)?, a.json.json)
}
