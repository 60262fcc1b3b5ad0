//! The learning loop of cosched: what the store's campaigns and real runs
//! teach the predictors, and which of them count.
//!
//! Measuring (`cosched-measure`) and storing (`cosched-store`) leave rows;
//! this crate reads them back as the predictors' training data and as the
//! slowdown source a real run decides with:
//!
//! - [`knowledge`]: one knowledge base across workloads, jobs named by
//!   the program they run;
//! - [`training`]: a workload's training set, with where each part came
//!   from (its campaigns, other workloads' campaigns, real runs and the
//!   settled online samples of running pairs);
//! - [`run_inputs`]: what a real run reads before it starts, solo times
//!   and the slowdown source;
//! - [`amounts`]: the same program at another work amount, for pairs
//!   never measured as they are (a workload sized anew, another node's
//!   dataset);
//! - [`selection`]: which repeats count (a regime's, each pair's newest
//!   campaign's);
//! - [`curve`] and [`matrix`]: the pure helpers that turn stored probe
//!   points and pair runs into curves and matrices;
//! - [`campaigns`]: the campaigns a figure was read from, as verbs name them.
//!
//! It measures nothing, decides nothing and prints nothing: the app's
//! verbs call it with an open store and a parsed workload.

pub mod amounts;
pub mod campaigns;
pub mod curve;
pub mod error;
pub mod knowledge;
pub mod matrix;
pub mod run_inputs;
pub mod selection;
pub mod training;

pub use error::{bad_input, BadInput};
