//! One module per verb. Each holds its clap `Args`, a `run` function that
//! makes one call into `cosched-app`, and the printing of its result; verb
//! modules do not call one another's work (the demo reuses their printing).
pub mod bench;
pub mod calibrate;
pub mod characterize;
pub mod check;
pub mod classify;
pub mod common;
pub mod db;
pub mod demo;
pub mod djsb;
pub mod enumerate;
pub mod evaluate;
pub mod evaluate_predictors;
pub mod generate;
pub mod governor;
pub mod node;
pub mod pairs;
pub mod predict;
pub mod probe;
pub mod profile;
pub mod run;
pub mod runs;
pub mod simulate;
pub mod slurm;
pub mod slurm_report;
pub mod study;
