//! `cosched bench kernels`: our kernels against a reference, side by side.
//!
//! The stream kernel is compared with a plain C STREAM triad compiled here and
//! now, run alternately with ours on the same CPU in the same invocation, so
//! the ratio is immune to the drift of this shared node.

use std::path::{Path, PathBuf};
use std::process::Command;

use cosched_model::stats::Summary;
use serde::Serialize;

use crate::kernel::{kernel_argv, run_kernel, KernelRunError};
use crate::launch::{run, Launch};

const TRIAD_C: &str = include_str!("../c/stream_triad.c");

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("compiling the C STREAM triad with `{cc}` failed: {msg}")]
    Compile { cc: String, msg: String },
    #[error("C STREAM triad: {0}")]
    Reference(String),
    #[error(transparent)]
    Kernel(#[from] KernelRunError),
}

/// Compiles the reference triad into `dir` with `$CC` (default `cc`) -O2.
pub fn build_reference_triad(dir: &Path) -> Result<PathBuf, BenchError> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let src = dir.join("stream_triad.c");
    let exe = dir.join("stream_triad");
    std::fs::write(&src, TRIAD_C).map_err(|e| BenchError::Compile { cc: cc.clone(), msg: e.to_string() })?;
    let out = Command::new(&cc)
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| BenchError::Compile { cc: cc.clone(), msg: e.to_string() })?;
    if !out.status.success() {
        return Err(BenchError::Compile { cc, msg: String::from_utf8_lossy(&out.stderr).into_owned() });
    }
    Ok(exe)
}

/// Bandwidths of the reference and of our stream kernel, run alternately.
#[derive(Debug, Clone, Serialize)]
pub struct TriadComparison {
    pub array_mib: u64,
    pub passes: u64,
    pub reference_mb_s: Vec<f64>,
    pub ours_mb_s: Vec<f64>,
    /// ours / reference, per repeat (adjacent runs).
    pub ratios: Vec<f64>,
    pub ratio: Summary,
}

pub fn compare_triad(
    reference: &Path,
    array_mib: u64,
    passes: u64,
    repeats: usize,
    cpus: &[u32],
    on_run: &mut dyn FnMut(usize, usize),
) -> Result<TriadComparison, BenchError> {
    let mut params = std::collections::BTreeMap::new();
    params.insert("array_mib".to_string(), array_mib.to_string());
    let ours_argv = kernel_argv("stream", passes, 1, &params);
    let ref_argv = vec![reference.to_string_lossy().into_owned(), array_mib.to_string(), passes.to_string()];
    let (mut r, mut o, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let run_ref = || -> Result<f64, BenchError> {
        let out = run(&Launch::new(ref_argv.clone()).pinned(cpus.to_vec()))
            .map_err(|e| BenchError::Reference(e.to_string()))?;
        if !out.exit.success() {
            return Err(BenchError::Reference(format!("{}: {}", out.exit, out.stderr_tail)));
        }
        out.stdout
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| BenchError::Reference(format!("unexpected output `{}`", out.stdout.trim())))
    };
    let run_ours = || -> Result<f64, BenchError> {
        let (_, rep) = run_kernel(&ours_argv, cpus)?;
        rep.figure
            .filter(|f| f.name == "bandwidth_mb_s")
            .map(|f| f.value)
            .ok_or_else(|| BenchError::Reference("stream kernel reported no bandwidth_mb_s".into()))
    };
    for i in 0..repeats {
        // Alternate which goes first so neither side always inherits the
        // other's warm page cache or cold frequency state.
        let (bw, ours) = if i % 2 == 0 {
            let b = run_ref()?;
            (b, run_ours()?)
        } else {
            let o = run_ours()?;
            (run_ref()?, o)
        };
        r.push(bw);
        o.push(ours);
        ratios.push(ours / bw);
        on_run(i + 1, repeats);
    }
    let ratio = Summary::of(&ratios).expect("repeats >= 1");
    Ok(TriadComparison { array_mib, passes, reference_mb_s: r, ours_mb_s: o, ratios, ratio })
}

/// Rate at a quarter of the work against the rate at the full work, both
/// medians of `repeats` runs taken alternately: 1.0 means the work-phase time
/// scales linearly with work, as fixed-work measurement assumes.
#[derive(Debug, Clone, Serialize)]
pub struct Linearity {
    pub kernel: String,
    pub work: u64,
    pub rate_full: Summary,
    pub rate_quarter: Summary,
    pub ratio: f64,
}

pub fn linearity(
    kernel: &str,
    params: &std::collections::BTreeMap<String, String>,
    work: u64,
    repeats: usize,
    cpus: &[u32],
) -> Result<Linearity, BenchError> {
    let quarter = (work / 4).max(1);
    let full_argv = kernel_argv(kernel, work, 1, params);
    let quarter_argv = kernel_argv(kernel, quarter, 1, params);
    let (mut full, mut part) = (Vec::new(), Vec::new());
    for _ in 0..repeats {
        full.push(run_kernel(&full_argv, cpus)?.1.rate);
        part.push(run_kernel(&quarter_argv, cpus)?.1.rate);
    }
    let rate_full = Summary::of(&full).expect("repeats >= 1");
    let rate_quarter = Summary::of(&part).expect("repeats >= 1");
    Ok(Linearity {
        kernel: kernel.to_string(),
        work,
        ratio: rate_quarter.median / rate_full.median,
        rate_full,
        rate_quarter,
    })
}
