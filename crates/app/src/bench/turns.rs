//! `cosched bench turns`: what a timeshare turn costs, each stop-and-go
//! mechanism's latency and the makespan of two jobs under timeshare
//! against exclusive.

use cosched_measure::profile::kernel_work_for;
use cosched_model::stats::Summary;
use cosched_report::fmt_spread;
use serde::Serialize;

use super::fmt_num;
use crate::common::Ctx;
use crate::error::bad_input;
use crate::render::{Doc, Render};

#[derive(Debug, Clone)]
pub struct TurnsBenchRequest {
    /// Runs of each makespan configuration (a median of them is printed).
    pub repeats: usize,
    /// Stops and starts per mechanism for the latency figures.
    pub turns: usize,
    /// `timeshare` quanta, seconds.
    pub quanta: Vec<f64>,
    /// Seconds of work of each job alone.
    pub seconds: f64,
    /// Pairs to run (`compute-1t`, `compute-2t`, `stream-2t`); empty: all;
    /// `none`: only the latency figures.
    pub pairs: Vec<String>,
}

/// `cosched bench turns`: each mechanism's stop and go latencies and each
/// pair's makespans under exclusive and timeshare.
#[derive(Debug, Serialize)]
pub struct TurnsBenchReport {
    pub latency: Vec<TurnLatency>,
    pub makespan: Vec<PairMakespans>,
    /// The node's load average (1, 5, 15 min) at the end.
    pub load_average: Option<[f64; 3]>,
    /// The timeshare quanta, seconds, in the order of each pair's policies
    /// after exclusive.
    #[serde(skip)]
    pub quanta: Vec<f64>,
}

/// One stop-and-go mechanism: its latencies, or why this node lacks it.
#[derive(Debug, Serialize)]
pub struct TurnLatency {
    pub mechanism: String,
    #[serde(flatten)]
    pub measured: Latencies,
}

/// Seconds of each stop and each go, or why none were taken.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Latencies {
    Measured { stop_s: Vec<f64>, go_s: Vec<f64> },
    Unavailable { unavailable: String },
}

/// One pair's makespans, seconds, per policy (exclusive first) and repeat.
#[derive(Debug, Serialize)]
pub struct PairMakespans {
    pub pair: String,
    pub work: u64,
    pub policies: Vec<String>,
    pub makespans_s: Vec<Vec<f64>>,
}

impl Render for TurnsBenchReport {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        let ms = |v: &[f64]| Summary::of(&v.iter().map(|x| x * 1e3).collect::<Vec<_>>()).map_or("-".into(), |s| fmt_spread(&s, 3));
        let latency = self
            .latency
            .iter()
            .map(|l| match &l.measured {
                Latencies::Measured { stop_s, go_s } => {
                    let turn: Vec<f64> = stop_s.iter().zip(go_s).map(|(s, g)| s + g).collect();
                    vec![l.mechanism.clone(), ms(stop_s), ms(go_s), ms(&turn)]
                }
                Latencies::Unavailable { unavailable } => vec![l.mechanism.clone(), format!("not available: {unavailable}"), String::new(), String::new()],
            })
            .collect();
        d.table(&["mechanism", "stop ms, median (min-max, n)", "go ms", "turn (stop + go) ms"], latency);
        if !self.makespan.is_empty() {
            let mut head = vec!["pair".to_string(), "exclusive s".to_string()];
            for q in &self.quanta {
                head.push(format!("timeshare {} s", fmt_num(*q)));
                head.push("/ exclusive".to_string());
            }
            let rows = self
                .makespan
                .iter()
                .map(|p| {
                    let med: Vec<Option<Summary>> = p.makespans_s.iter().map(|v| Summary::of(v)).collect();
                    let spread = |m: &Option<Summary>| m.as_ref().map_or("-".into(), |s| fmt_spread(s, 3));
                    let mut row = vec![p.pair.clone(), spread(&med[0])];
                    for m in &med[1..] {
                        row.push(spread(m));
                        row.push(match (m, &med[0]) {
                            (Some(m), Some(x)) => format!("{:.3}", m.median / x.median),
                            _ => "-".into(),
                        });
                    }
                    row
                })
                .collect();
            d.line("");
            d.table(&head, rows);
            d.line("makespan: first start to last end of the two jobs, median (min-max, n) over whole `cosched run` processes");
        }
        let load = self.load_average.map_or("unknown".into(), |l| format!("{} {} {}", l[0], l[1], l[2]));
        d.line(format!("load average (1, 5, 15 min) at the end: {load}"));
        d
    }
}

/// The pairs of `bench turns`: name, kernel, threads (= the pool's cores),
/// kernel parameters in TOML.
const TURN_PAIRS: [(&str, &str, u32, &str); 3] =
    [("compute-1t", "compute", 1, "{}"), ("compute-2t", "compute", 2, "{}"), ("stream-2t", "stream", 2, "{ array_mib = 64 }")];

/// Issue 42's turn cost: each stop-and-go mechanism's latency on a busy
/// one-thread job, then the makespan of two equal jobs under `timeshare`
/// at each quantum over their makespan under `exclusive`, whole `cosched
/// run` processes of this binary alternating repeat by repeat.
pub fn turns(a: &TurnsBenchRequest, ctx: &Ctx) -> anyhow::Result<TurnsBenchReport> {
    if a.repeats == 0 || a.turns == 0 {
        return Err(bad_input("--repeats and --turns must be at least 1"));
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0) || a.quanta.iter().any(|q| !(q.is_finite() && *q >= 0.001)) {
        return Err(bad_input("--seconds must be above 0 and every --quantum at least 0.001"));
    }
    let pairs: Vec<_> = if a.pairs.iter().any(|p| p == "none") {
        Vec::new()
    } else if a.pairs.is_empty() {
        TURN_PAIRS.to_vec()
    } else {
        a.pairs
            .iter()
            .map(|p| {
                TURN_PAIRS.iter().find(|t| t.0 == p).copied().ok_or_else(|| {
                    bad_input(format!("--pair `{p}`: expected one of {}", TURN_PAIRS.map(|t| t.0).join(", ")))
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    let lock = crate::lock::take("bench turns", None)?;
    cosched_measure::launch::install_interrupt_handler();
    ctx.step(&format!("{} stops and starts of a busy one-thread job per mechanism (CPU 0)", a.turns));
    let latency = cosched_measure::freeze::mechanisms()
        .into_iter()
        .map(|(name, pref)| TurnLatency {
            mechanism: name.to_string(),
            measured: match cosched_measure::freeze::turn_cost(pref, a.turns, 0) {
                Ok(c) => Latencies::Measured { stop_s: c.stop_s, go_s: c.go_s },
                Err(why) => Latencies::Unavailable { unavailable: why },
            },
        })
        .collect();
    let mut makespan = Vec::new();
    if !pairs.is_empty() {
        let dir = tempfile::tempdir()?;
        let exe = std::env::current_exe()?;
        let policies: Vec<String> =
            std::iter::once("exclusive".to_string()).chain(a.quanta.iter().map(|q| format!("timeshare:quantum={q}"))).collect();
        for (name, kernel, threads, params) in pairs {
            let cpus: Vec<u32> = (0..threads).collect();
            let p: std::collections::BTreeMap<String, String> = if kernel == "stream" {
                [("array_mib".to_string(), "64".to_string())].into()
            } else {
                Default::default()
            };
            let params_all = cosched_model::kernel::kernel(kernel).expect("a catalogue kernel").resolve_params(&p).map_err(anyhow::Error::msg)?;
            ctx.step(&format!("{name}: sizing {kernel} x{threads} threads to ~{} s; then {} repeats of {}", a.seconds, a.repeats, policies.join(", ")));
            let work = kernel_work_for(kernel, &params_all, threads, &cpus, a.seconds)?;
            let wl = dir.path().join(format!("{name}.toml"));
            let job = |n: &str| format!("[[jobs]]\nname = \"{n}\"\nkernel = \"{kernel}\"\nparams = {params}\nthreads = {threads}\nwork = {work}\n");
            std::fs::write(&wl, format!("name = \"turns-{name}\"\n[[pools]]\nname = \"host\"\ncores = {threads}\n{}{}", job("a"), job("b")))?;
            let mut spans: Vec<Vec<f64>> = vec![Vec::new(); policies.len()];
            let bar = ctx.progress.task(name, (a.repeats * policies.len()) as u64);
            for r in 0..a.repeats {
                // The order rotates so drift on a shared node falls on each alike.
                for k in 0..policies.len() {
                    let i = (k + r) % policies.len();
                    spans[i].push(run_makespan(&exe, &wl, &policies[i], dir.path(), r * policies.len() + k)?);
                    bar.set((r * policies.len() + k + 1) as u64, &policies[i]);
                }
            }
            bar.finish();
            makespan.push(PairMakespans { pair: name.to_string(), work, policies: policies.clone(), makespans_s: spans });
        }
    }
    drop(lock);
    let load_average = cosched_measure::provenance::load_average().ok();
    Ok(TurnsBenchReport { latency, makespan, load_average, quanta: a.quanta.clone() })
}

/// One whole `cosched run` of workload `wl` under `policy` (stored solo
/// times: no solo pass), its own store and lock: the makespan its trace
/// says (first start to last end, `--report`'s trace CSV).
fn run_makespan(exe: &std::path::Path, wl: &std::path::Path, policy: &str, dir: &std::path::Path, n: usize) -> anyhow::Result<f64> {
    let report = dir.join(format!("report-{n}"));
    let out = std::process::Command::new(exe)
        .args(["run", "--solo", "stored", "--policy", policy, "--workload"])
        .arg(wl)
        .arg("--db")
        .arg(dir.join(format!("run-{n}.db")))
        .arg("--lock")
        .arg(dir.join("run.lock"))
        .arg("--report")
        .arg(&report)
        .env("COSCHED_DATA_DIR", dir)
        .output()?;
    if !out.status.success() {
        anyhow::bail!("cosched run --policy {policy}: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or(""));
    }
    let csv = std::fs::read_dir(&report)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().and_then(|f| f.to_str()).is_some_and(|f| f.starts_with("trace-run") && f.ends_with(".csv")))
        .ok_or_else(|| anyhow::anyhow!("cosched run --report {}: no trace-run*.csv", report.display()))?;
    let trace = cosched_model::trace::Trace::from_csv(&std::fs::read_to_string(&csv)?).map_err(anyhow::Error::msg)?;
    let at = |k: cosched_model::metrics::EventKind| trace.events.iter().filter(move |e| e.kind == k).map(|e| e.time);
    let first = at(cosched_model::metrics::EventKind::Start).fold(f64::INFINITY, f64::min);
    let last = at(cosched_model::metrics::EventKind::Finish).fold(f64::NEG_INFINITY, f64::max);
    if !(first.is_finite() && last.is_finite()) {
        anyhow::bail!("{}: no start or finish", csv.display());
    }
    let _ = std::fs::remove_dir_all(&report);
    Ok(last - first)
}
