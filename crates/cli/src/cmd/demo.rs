//! `cosched demo`: the main job, end to end on this node, on the evidence
//! workload where the choice matters in the cache regime it reads: regime
//! -> calibrate -> shipped dataset -> profile -> pairs -> predict -> evaluate best-match
//! against noplan -> a verdict with its intervals, in one HTML report.
//! Each stage prints what its verb prints.

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::Args;
use cosched_app::demo::{demo, DemoRequest, DemoWorkload};
use cosched_app::render::Render;

use super::common::{ctx, parse_budget};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched demo                                        # under 3 minutes on a 2-core node\n  \
    cosched demo --repeats 1 --seconds 0.3 --budget 1m  # the CI smoke run\n  \
    cosched demo --budget 10m                           # more orders, narrower intervals\n  \
    cosched demo --workload io-half --db demo.db --out demo-report/\n\n\
    Stages: read the node's cache regime (the CPU 0-1 round trip, three\n\
    times a second apart) and pick the workload where interference decides\n\
    in it: memory-half (STREAM triads) when the CPUs share a last-level\n\
    cache in every reading, io-half (file I/O, which contends in either\n\
    regime) when they do not or the regime changed while read; calibrate the kernels, predict the workload's pairs from\n\
    the shipped dataset (data/, built in: the project's own measurements,\n\
    of another node or day, at other work amounts), profile one job of\n\
    each program, measure the pairs, fit the predictors, then run the\n\
    workload for real under best-match and noplan on the same seeded\n\
    orders until the worst slowdown comparison is resolved (5 to 12\n\
    orders, as --budget allows), with the simulator and the oracle beside\n\
    them, and end with a verdict and its 95 % intervals. One HTML report\n\
    holds every stage; its path is printed. Results go to a temporary\n\
    database unless --db is given.")]
pub struct DemoArgs {
    /// Repeats of each profile and pairs measurement.
    #[arg(long, default_value_t = 2)]
    pub repeats: usize,
    /// Every job's solo time, in seconds (the examples' 1.5 s, scaled).
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub seconds: f64,
    /// The demo's time aim, e.g. 180s, 3m or 1h: no order starts that, at the
    /// pace of the orders before it, would end the demo past it (at least
    /// five orders run, at most twelve).
    #[arg(long, value_name = "TIME", value_parser = parse_budget, default_value = "3m")]
    pub budget: std::time::Duration,
    /// The workload: auto (chosen by the cache regime), memory-half or io-half.
    #[arg(long, value_name = "NAME", default_value = "auto",
          value_parser = clap::builder::PossibleValuesParser::new(DemoWorkload::NAMES).try_map(|s: String| DemoWorkload::parse(&s)))]
    pub workload: DemoWorkload,
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
    let r = demo(
        &DemoRequest { repeats: a.repeats, seconds: a.seconds, budget: a.budget, workload: a.workload, out: a.out, db: a.db },
        &ctx(),
    )?;
    println!("cache regime: {}\nworkload {}\n", r.regime_text, r.why);
    println!("{}\n", r.calibration);
    println!("{}", Render::doc(&r.shipped).text());
    super::profile::print(&r.profile);
    super::pairs::print(&r.pairs, false);
    print!("{}", Render::doc(&r.predictions).text());
    println!("fitted on {}", r.fitted_on);
    for u in &r.unfitted {
        println!("not fitted: {u}");
    }
    println!();
    print!("{}", Render::doc(&r.evaluation).text());
    println!();
    for v in &r.verdict {
        println!("{v}");
    }
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

    #[test]
    fn demo_takes_a_time_aim_and_a_workload_by_name() {
        let Verb::Demo(a) = Cli::try_parse_from(["cosched", "demo"]).unwrap().verb else { panic!() };
        assert_eq!((a.budget.as_secs(), a.workload), (180, cosched_app::demo::DemoWorkload::Auto));
        let Verb::Demo(a) = Cli::try_parse_from(["cosched", "demo", "--budget", "10m", "--workload", "io-half"]).unwrap().verb else {
            panic!()
        };
        assert_eq!((a.budget.as_secs(), a.workload), (600, cosched_app::demo::DemoWorkload::IoHalf));
        assert!(Cli::try_parse_from(["cosched", "demo", "--workload", "mixed"]).is_err());
    }
}
