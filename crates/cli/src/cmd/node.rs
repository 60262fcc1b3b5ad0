//! `cosched node`: show the topology of this node.
use clap::Args;

#[derive(Args, Debug)]
pub struct NodeArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(_args: NodeArgs) -> anyhow::Result<()> {
    anyhow::bail!("cosched node is being written in this session")
}
