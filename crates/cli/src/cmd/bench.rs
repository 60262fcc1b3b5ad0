//! `cosched bench ...`: benchmarks that print figures measured side by side.

use clap::{Args, Subcommand};
use cosched_measure::bench::{build_reference_triad, compare_triad, linearity};
use cosched_report::{fmt_ci, table};

use super::calibrate::{calibrate_kernels, render, select};
use super::common::parse_cpus;
use crate::exit::bad_input;
use crate::progress::{step, Progress};

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// The stream kernel against a C STREAM triad, and every kernel's rate with spread.
    #[command(after_help = "Examples:\n  cosched bench kernels\n  cosched bench kernels --repeats 9 --kernel stream --kernel compute --json")]
    Kernels(KernelsBench),
}

#[derive(Args, Debug)]
pub struct KernelsBench {
    /// Repeats of each measurement.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Array size of the triad comparison, MiB per array (>= 4x the LLC).
    #[arg(long, default_value_t = 64)]
    pub array_mib: u64,
    /// Triad passes per run.
    #[arg(long, default_value_t = 20)]
    pub passes: u64,
    /// Kernels whose rate to measure (repeatable); default: all.
    #[arg(long = "kernel", value_name = "NAME")]
    pub kernels: Vec<String>,
    /// CPUs to pin every run to.
    #[arg(long, default_value = "0", value_name = "LIST")]
    pub cpus: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BenchArgs) -> anyhow::Result<()> {
    match a.what {
        BenchWhat::Kernels(k) => kernels(k),
    }
}

fn kernels(a: KernelsBench) -> anyhow::Result<()> {
    if a.repeats == 0 || a.passes == 0 || a.array_mib == 0 {
        return Err(bad_input("--repeats, --passes and --array-mib must be at least 1"));
    }
    let cpus = parse_cpus(&a.cpus).map_err(|e| bad_input(format!("--cpus: {e}")))?;
    let specs = select(&a.kernels)?;
    let dir = tempfile::tempdir()?;
    step("stream kernel vs C STREAM triad (cc -O2), alternating, same CPU");
    let exe = build_reference_triad(dir.path())?;
    let p = Progress::new("triad", a.repeats as u64);
    let cmp = compare_triad(&exe, a.array_mib, a.passes, a.repeats, &cpus, &mut |d, _| p.set(d as u64, ""))?;
    p.finish();
    step("each kernel's rate (warm-up sizes work to ~0.3 s, then timed repeats)");
    let cals = calibrate_kernels(&specs, 1, a.repeats, 0.3, &cpus)?;
    step("linearity: rate at 1/4 of the work over rate at the full work (1.00 = linear)");
    let p = Progress::new("linearity", cals.len() as u64);
    let mut lin = Vec::new();
    for (i, c) in cals.iter().enumerate() {
        lin.push(linearity(&c.kernel, &c.params, c.work_per_run, a.repeats, &cpus)?);
        p.set(i as u64 + 1, &c.kernel);
    }
    p.finish();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"triad": cmp, "kernels": cals, "linearity": lin}))?
        );
        return Ok(());
    }
    let bw = |v: &[f64]| cosched_model::stats::Summary::of(v).expect("repeats >= 1");
    println!(
        "{}",
        table(
            &["triad", "bandwidth MB/s median [95% CI]"],
            &[
                vec!["C STREAM (cc -O2)".into(), fmt_ci(&bw(&cmp.reference_mb_s), 0)],
                vec!["cosched stream".into(), fmt_ci(&bw(&cmp.ours_mb_s), 0)],
            ],
        )
    );
    println!(
        "ratio cosched/C: median {:.3} (min {:.3}, max {:.3}, n={}, {} MiB arrays x {} passes; aim >= 0.95)\n",
        cmp.ratio.median, cmp.ratio.min, cmp.ratio.max, cmp.ratio.n, a.array_mib, a.passes
    );
    println!("{}\n", render(&cals));
    let rows: Vec<Vec<String>> = lin
        .iter()
        .map(|l| {
            vec![
                l.kernel.clone(),
                format!("{} / {}", l.work, (l.work / 4).max(1)),
                format!("{:.3}", l.ratio),
                format!("{:.1}% / {:.1}%", 100.0 * l.rate_full.rel_spread(), 100.0 * l.rate_quarter.rel_spread()),
            ]
        })
        .collect();
    println!("{}", table(&["kernel", "work full / quarter", "rate ratio quarter/full", "spread full / quarter"], &rows));
    Ok(())
}
