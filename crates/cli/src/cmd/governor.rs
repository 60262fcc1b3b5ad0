//! `cosched governor`: the node's resource governor level (VarySched),
//! which Lua policies read while `cosched run` goes on.

use std::path::PathBuf;

use clap::Args;

use super::common::{emit, JsonArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched governor            # the level now (high when never set)\n  \
    cosched governor low        # Lua policies of a running `cosched run` see view.governor == \"low\"\n  \
    cosched governor high --file /run/cosched.governor\n\n\
    The level is one word in a file: --file, else $COSCHED_GOVERNOR, else `governor` in\n\
    $COSCHED_DATA_DIR or ~/.local/share/cosched. A run with a Lua policy reads it at its start\n\
    and every 0.2 s; a policy sees the new level at its next decision. Without the file, a\n\
    run's Lua policy starts at its spec's governor=high|low.")]
pub struct GovernorArgs {
    /// Set the level: high or low.
    #[arg(value_name = "LEVEL", value_parser = ["high", "low"])]
    pub level: Option<String>,
    /// The governor file.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonArgs,
}

pub fn run(a: GovernorArgs) -> anyhow::Result<()> {
    emit(&cosched_app::policy::governor(a.level.as_deref(), a.file)?, a.json.json)
}
