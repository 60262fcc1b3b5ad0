//! One module per verb. Each holds its clap `Args` and a `run` function that
//! wires library crates together; no measurement or model logic lives here.
pub mod check;
pub mod node;
