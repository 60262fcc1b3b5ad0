//! One module per verb. Each holds its clap `Args` and a `run` function that
//! wires library crates together; no measurement or model logic lives here.
pub mod bench;
pub mod calibrate;
pub mod check;
pub mod classify;
pub mod common;
pub mod db;
pub mod demo;
pub mod enumerate;
pub mod evaluate;
pub mod node;
pub mod pairs;
pub mod predict;
pub mod probe;
pub mod profile;
pub mod run;
pub mod simulate;
