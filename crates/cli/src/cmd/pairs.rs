//! `cosched pairs`: the interference matrix of a workload, measured and stored.

use std::path::PathBuf;

use clap::Args;
use cosched_app::pairs::{pairs, thread_sweep, PairsReport, PairsRequest, SweepReport, UNSTABLE_SOLO};
use cosched_model::matrix::SlowdownMatrix;
use cosched_report::{fits_as_grid, table, table_for_width, table_width};

use super::common::{ctx, print_json, DbArgs, InRegimeArgs, JsonArgs, WorkloadArgs};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    cosched pairs --workload examples/characterize.toml\n  \
    cosched pairs --workload examples/characterize.toml --repeats 9 --target 0.03\n  \
    cosched pairs --workload examples/characterize.toml --resume     # after Ctrl-C\n  \
    cosched pairs --workload examples/characterize.toml --resume --ratio   # Hori et al.'s view\n  \
    cosched pairs --workload examples/mixed.toml --in-regime shared --regime-wait 2h\n  \
    cosched pairs --workload examples/apps/apps.toml --skip-known   # only co-runs no campaign measured\n  \
    cosched pairs --workload examples/apps/apps.toml --skip-known --settle 1.3 --min-repeats 2 --repeats 8\n  \
    cosched pairs --workload examples/omp/sweep.toml --threads 1,2   # thread sweep\n\n\
    Every unordered pair (twins included) is co-run: solo A, solo B, then A with B,\n\
    the shorter re-launched until the longer ends, repeated until the 95% interval\n\
    of both slowdowns is within --target or --repeats is reached. Each repeat is\n\
    stored as soon as it is measured. The two jobs run where `cosched run` would\n\
    put them (an accelerator-pool job on the host pool's CPUs beside a host job).\n\
    Each repeat records its cache regime (the CPU round trip read just before and\n\
    after it) and the sharing level of the two jobs' CPUs; a switch of regime in\n\
    the middle of the campaign is reported.\n\n\
    With --in-regime, only repeats that ran wholly in that regime count towards\n\
    the stop rule: before each repeat the two CPUs' round trip is read and, while\n\
    it reads the other regime, the campaign waits (checking every 3 s). A repeat\n\
    that switched is stored but not counted, and is taken again. On a VM that\n\
    gives a regime in short windows, the campaign gathers its repeats window by\n\
    window; if the regime stays away for --regime-wait, it stops, resumable.\n\n\
    With --skip-known, a co-run the knowledge base already holds is left out:\n\
    its two programs (by identity: the same kernel and parameters, or the same\n\
    executable and arguments, under any workload file) were co-run on this node\n\
    with at least --min-repeats repeats each way (in --in-regime when given).\n\
    Adding programs to a workload then costs only their own co-runs; predictors\n\
    and evaluate-predictors read the known pairs from the campaigns that\n\
    measured them.\n\n\
    With --settle LEVEL (e.g. 1.3, the severe level), a pair is not done while\n\
    either slowdown's interval (the range below 6 repeats) still holds LEVEL,\n\
    up to --repeats: repeats go to the pairs whose side of the level is in\n\
    doubt. With --skip-known too, a known co-run whose interval holds LEVEL is\n\
    measured again (its new repeats replace the old ones where they are read).\n\n\
    With --threads 1,2 (the Xeon Phi study's OpenMP sweep), the workload's first\n\
    job is the foreground and its second the background: for each count, the\n\
    foreground runs with that many threads on as many cores (a kernel's threads;\n\
    a command under `env OMP_NUM_THREADS=N`), and only its co-run with the\n\
    background is measured, one campaign per count; one row per count.")]
pub struct PairsArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Most repeats per pair.
    #[arg(long, default_value_t = 6)]
    pub repeats: usize,
    /// Fewest repeats per pair.
    #[arg(long, default_value_t = 3)]
    pub min_repeats: usize,
    /// Stop a pair once each slowdown's 95% interval is within +- this share
    /// of its median (with fewer than 6 repeats the interval is the range).
    #[arg(long, default_value_t = 0.05, value_name = "SHARE")]
    pub target: f64,
    /// Continue the last unfinished campaign of this workload and settings
    /// instead of starting a new one; finished pairs are not measured again.
    #[arg(long)]
    pub resume: bool,
    #[command(flatten)]
    pub regime: InRegimeArgs,
    /// Leave out the co-runs the knowledge base already holds on this node
    /// (any workload's campaigns, by program) with at least --min-repeats
    /// repeats each way.
    #[arg(long)]
    pub skip_known: bool,
    /// Keep repeating a pair while either slowdown's interval holds this
    /// level (e.g. 1.3); with --skip-known, measure such known co-runs again.
    #[arg(long, value_name = "LEVEL")]
    pub settle: Option<f64>,
    /// Show Hori et al.'s interference ratio (performance with background /
    /// alone = 1 / slowdown) instead of slowdowns.
    #[arg(long)]
    pub ratio: bool,
    /// Where to write the heatmap SVG (default: figures/pairs-<workload>.svg
    /// beside the database).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The Xeon Phi study's thread sweep: the workload's first job (the
    /// foreground) at each of these thread counts (on as many cores, at most
    /// the node's) beside its second (the background), one row per count.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub threads: Vec<u32>,
    // With --json: the matrix (jobs, cells), regimes, per-level medians.
    #[command(flatten)]
    pub json: JsonArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

pub fn run(a: PairsArgs) -> anyhow::Result<()> {
    let req = PairsRequest {
        workload: a.workload.workload,
        repeats: a.repeats,
        min_repeats: a.min_repeats,
        target: a.target,
        resume: a.resume,
        in_regime: a.regime.in_regime,
        regime_wait: a.regime.regime_wait,
        skip_known: a.skip_known,
        settle: a.settle,
        svg: a.svg,
        db: a.db.db,
    };
    if !a.threads.is_empty() {
        let r = thread_sweep(&req, &a.threads, &ctx())?;
        if a.json.json {
            return print_json(&r);
        }
        print_sweep(&r, a.ratio);
        return Ok(());
    }
    let r = pairs(&req, &ctx())?;
    if a.json.json {
        return print_json(&r);
    }
    print(&r, a.ratio);
    Ok(())
}

/// One row per thread count: the foreground's solo time and its slowdown
/// (or interference ratio) beside the background, and the background's.
fn print_sweep(r: &SweepReport, ratio: bool) {
    let cell = |s: Option<cosched_model::stats::Summary>| match s {
        Some(s) if ratio => format!("{:.2} [{:.2},{:.2}] n={}", 1.0 / s.median, 1.0 / s.ci_hi, 1.0 / s.ci_lo, s.n),
        Some(s) => format!("{:.2} [{:.2},{:.2}] n={}", s.median, s.ci_lo, s.ci_hi, s.n),
        None => "-".into(),
    };
    let what = if ratio { "interference ratio" } else { "slowdown" };
    let head = ["threads", "cores", "solo s", &format!("{} {what}", r.foreground), &format!("{} {what}", r.background)];
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|x| vec![x.threads.to_string(), x.cores.to_string(), x.solo_s.map_or("-".into(), |s| format!("{s:.2}")), cell(x.slowdown), cell(x.background_slowdown)])
        .collect();
    let h: Vec<&str> = head.iter().map(|s| s.as_ref()).collect();
    println!("{}", table(&h, &rows));
    println!("\n{} (foreground) at each thread count beside {} (background), co-run with the shorter re-launched; median [interval], n repeats.", r.foreground, r.background);
}

/// The matrix as a table, as slowdowns or Hori et al.'s interference ratios;
/// also the demo's.
pub fn print(r: &PairsReport, ratio: bool) {
    println!("{}", matrix_text(&r.matrix, ratio, table_width()));
    for line in &r.shared_cpus {
        println!("shared CPUs (placed as `cosched run` places them): {line}");
    }
    let g = &r.regimes;
    if g.read > 0 {
        println!(
            "cache regime of the {} repeats read: {} shared cache, {} caches apart, {} changed during the repeat; began with {}.",
            g.read,
            g.shared,
            g.apart,
            g.changed_within,
            g.first.as_deref().unwrap_or("-")
        );
    }
    if !g.switches.is_empty() {
        println!("warning: {} repeat(s) ran in another regime than the first, e.g. {}", g.switches.len(), g.switches[0].describe());
    }
    for s in r.solo.iter().filter(|s| s.unstable()) {
        println!(
            "warning: `{}` alone took {:.2}-{:.2} s (10th-90th percentile of {} solo runs, {:.2}x apart, more than {UNSTABLE_SOLO}): \
             its slowdowns mix its own fast and slow runs, so a pair above {UNSTABLE_SOLO} with it as the victim may be its solo spread, not its co-runner",
            s.job,
            s.p10_s,
            s.p90_s,
            s.n,
            s.spread()
        );
    }
    let mut levels: Vec<&str> = r.levels.iter().filter_map(|c| c.level.map(|l| l.name())).collect();
    levels.sort_unstable();
    levels.dedup();
    if levels.len() > 1 {
        let rows: Vec<Vec<String>> = r
            .levels
            .iter()
            .map(|c| {
                let level = c.level.map_or("-", |l| l.name()).to_string();
                vec![c.victim.clone(), c.aggressor.clone(), level, c.n.to_string(), format!("{:.3}", c.median)]
            })
            .collect();
        println!("\nper sharing level observed:\n{}", table(&["victim", "beside", "level", "n", "median slowdown"], &rows));
    }
    if r.skipped_known > 0 {
        println!(
            "{} co-run(s) known from other campaigns were not measured again (--skip-known); their cells show `-` here, and predict and evaluate-predictors read them from the campaigns that measured them.",
            r.skipped_known
        );
    }
    println!("heatmap: {}", r.svg.display());
}

/// The matrix and its caption at `width` columns: each cell its median,
/// interval and repeats when the matrix fits as a grid so, else only its
/// median (a matrix printed row by row no longer reads as one: the rows
/// must stay the foregrounds and the columns the backgrounds).
fn matrix_text(m: &SlowdownMatrix, ratio: bool, width: u16) -> String {
    let cell = |i: usize, j: usize| if ratio { m.ratio(i, j) } else { m.get(i, j).copied() };
    let grid = |full: bool| -> Vec<Vec<String>> {
        (0..m.jobs.len())
            .map(|i| {
                let mut row = vec![m.jobs[i].clone()];
                row.extend((0..m.jobs.len()).map(|j| match cell(i, j) {
                    Some(s) if full => format!("{:.2} [{:.2},{:.2}] n={}", s.median, s.ci_lo, s.ci_hi, s.n),
                    Some(s) => format!("{:.2}", s.median),
                    None => "-".into(),
                }));
                row
            })
            .collect()
    };
    let mut headers = vec!["fg \\ bg".to_string()];
    headers.extend(m.jobs.iter().cloned());
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    let full = grid(true);
    let ns = (0..m.jobs.len()).flat_map(|i| (0..m.jobs.len()).filter_map(move |j| m.get(i, j).map(|s| s.n)));
    let interval = cosched_report::interval_name(ns);
    let what = if ratio {
        "interference ratio = performance beside the column job / alone = 1 / slowdown"
    } else {
        "slowdown of the row job beside the column job = co-run / solo time of the same repeat"
    };
    if fits_as_grid(&h, &full, width) {
        return format!("{}\n\n{what}; median [{interval}], n repeats.", table_for_width(&h, &full, width));
    }
    format!(
        "{}\n\n{what}; median (each cell's interval and repeats do not fit in {width} columns: --json shows them).",
        table_for_width(&h, &grid(false), width)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::stats::Summary;

    fn matrix(jobs: &[&str]) -> SlowdownMatrix {
        let mut m = SlowdownMatrix::new(jobs.iter().map(|j| j.to_string()).collect());
        for i in 0..jobs.len() {
            for j in 0..jobs.len() {
                let s = 1.0 + (i * jobs.len() + j) as f64 / 100.0;
                m.cells[i][j] = Some(Summary { n: 6, median: s, min: s - 0.01, max: s + 0.01, ci_lo: s - 0.01, ci_hi: s + 0.01 });
            }
        }
        m
    }

    #[test]
    fn a_matrix_that_fits_shows_each_cells_interval_and_repeats() {
        let text = matrix_text(&matrix(&["a", "b"]), false, 100);
        assert!(text.contains("1.01 [1.00,1.02] n=6"), "{text}");
        assert!(text.contains("median [95% CI], n repeats."), "{text}");
    }

    #[test]
    fn a_matrix_too_wide_for_its_intervals_shows_medians_with_rows_as_foregrounds() {
        let jobs = ["stream-a", "stream-b", "comp-a", "comp-b", "io-a", "io-b"];
        let text = matrix_text(&matrix(&jobs), false, 80);
        assert!(!text.contains("n=6"), "{text}");
        assert!(text.contains("do not fit in 80 columns"), "{text}");
        // Still one grid: the header row names every background, and the
        // row of the second job (a foreground) holds its slowdowns beside
        // each job in column order.
        let header = text.lines().find(|l| l.contains("fg")).expect("header row");
        for j in jobs {
            assert!(header.contains(j), "{header}");
        }
        let row = text.lines().find(|l| l.starts_with("| stream-b")).expect("stream-b's row");
        let cells: Vec<&str> = row.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(cells, ["stream-b", "1.06", "1.07", "1.08", "1.09", "1.10", "1.11"]);
        assert!(text.lines().filter(|l| l.starts_with('|')).all(|l| l.chars().count() <= 80), "{text}");
    }
}
