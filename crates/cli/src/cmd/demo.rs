//! `cosched demo`: the main job, end to end on this node, on the mixed
//! example workload: calibrate -> profile -> a small pairs matrix -> predict
//! -> simulate the policies -> real runs -> one HTML report. Each stage
//! prints what its verb prints.

use std::path::PathBuf;

use clap::Args;
use cosched_app::demo::{demo, DemoRequest};
use cosched_report::table;

use super::common::ctx;

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched demo                              # about 2 minutes on a 2-core node\n  \
    cosched demo --repeats 1 --seconds 0.3    # the CI smoke run, well under 90 s\n  \
    cosched demo --db demo.db --out demo-report/\n\n\
    Stages: calibrate the kernels, profile every job of the mixed example\n\
    workload, measure the pairs of four programs (stream, compute, cache,\n\
    syscall), fit the predictors and show their predicted slowdowns, simulate\n\
    the policies on a scenario built from the measured matrix, then run the\n\
    workload for real under best-match, conflict-aware (at a threshold the\n\
    measured pairs make bite), exclusive and noplan. One HTML\n\
    report holds every stage; its path is printed. Results go to a temporary\n\
    database unless --db is given.")]
pub struct DemoArgs {
    /// Repeats of each profile and pairs measurement.
    #[arg(long, default_value_t = 2)]
    pub repeats: usize,
    /// Solo time of the workload's longest jobs, in seconds (the mixed
    /// example's 2 s; every job, arrival and the stress-ng job's operations
    /// are scaled alike).
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub seconds: f64,
    /// Write the report here (default: a new directory under the temporary
    /// directory, kept after the demo).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Keep the results in this database (default: a temporary one, so a
    /// demo never writes into your data; $COSCHED_DB is ignored here).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    let r = demo(&DemoRequest { repeats: a.repeats, seconds: a.seconds, out: a.out, db: a.db }, &ctx())?;
    println!("{}\n", r.calibration);
    super::profile::print(&r.profile);
    super::pairs::print(&r.pairs, false);
    let (head, rows) = &r.predictions;
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    println!("{}", table(&head, rows));
    println!("fitted on {}", r.fitted_on);
    for u in &r.unfitted {
        println!("not fitted: {u}");
    }
    println!();
    println!("{}\n", r.predict_note);
    let (orders, jobs, head, rows) = &r.simulation;
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    println!("Simulated increase rates vs exclusive, {orders} random orders of {jobs} jobs:");
    println!("{}\n", table(&head, rows));
    print!("{}", cosched_app::render::Render::doc(&r.run).text());
    println!("\ndemo done in {:.0} s", r.elapsed_s);
    println!("report: {}", r.index.display());
    match &r.db {
        Some(p) => println!("database: {}", p.display()),
        None => println!("the measurements were kept in a temporary database; pass --db PATH to keep them"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::{Cli, Verb};

    #[test]
    fn demo_ignores_cosched_db_and_takes_only_an_explicit_db() {
        // set_var is process-global; no other test of this binary reads it.
        std::env::set_var("COSCHED_DB", "/nonexistent/users-own.db");
        let Verb::Demo(a) = Cli::try_parse_from(["cosched", "demo"]).unwrap().verb else { panic!() };
        assert_eq!(a.db, None, "the demo must not write into $COSCHED_DB");
        let Verb::Demo(a) = Cli::try_parse_from(["cosched", "demo", "--db", "x.db"]).unwrap().verb else { panic!() };
        assert_eq!(a.db.as_deref(), Some(std::path::Path::new("x.db")));
    }
}
