//! A program's miss-ratio curve from a cache simulator: the DistGen paper's
//! PinDist reuse-distance histograms, as this node can have them.
//!
//! The share of a program's data references that miss a fully associative
//! LRU cache of size S is the share whose reuse distance exceeds S, so the
//! miss ratio over last-level sizes is the complement of the reuse-distance
//! distribution (the cumulative histogram PinDist plots). valgrind's
//! cachegrind simulates the program's caches with a last level of any size
//! (`--LL=SIZE,ASSOC,LINE`), set-associative rather than fully associative,
//! which at 16 ways is close. One run per size: cachegrind simulates one
//! hierarchy a run, some 20-100 times slower than the program runs alone,
//! so the programs measured should be short.

use std::path::Path;
use std::process::{Command, Stdio};

pub use cosched_model::profile::MissPoint;

/// Ways and line of the simulated last level: 16 ways (set-associative
/// close to the fully associative cache the reuse distance assumes) and
/// 64-byte lines.
pub const LL_ASSOC: u32 = 16;
pub const LL_LINE: u32 = 64;

/// Why valgrind cannot run here, when it cannot.
pub fn unavailable() -> Option<String> {
    match Command::new("valgrind").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!("`valgrind --version` failed ({s})")),
        Err(e) => Some(format!("valgrind not found ({e}); Debian: apt-get install valgrind")),
    }
}

/// Whether cachegrind accepts a last level of `kib`: its sets
/// (size / (ways x line)) must be a power of two.
pub fn valid_size(kib: u64) -> bool {
    let sets = kib * 1024 / u64::from(LL_ASSOC * LL_LINE);
    kib > 0 && (kib * 1024).is_multiple_of(u64::from(LL_ASSOC * LL_LINE)) && sets.is_power_of_two()
}

/// Runs `argv` under cachegrind with a last level of `kib`, its output
/// file in `dir`, and reads its summary.
pub fn miss_point(argv: &[String], env: &[(String, String)], kib: u64, dir: &Path) -> Result<MissPoint, String> {
    if !valid_size(kib) {
        return Err(format!("a last level of {kib} KiB: cachegrind needs {LL_ASSOC} ways x {LL_LINE} B lines x a power of two"));
    }
    let (prog, args) = argv.split_first().ok_or("an empty command")?;
    let out = dir.join(format!("cachegrind-{kib}k.out"));
    let err_path = dir.join(format!("cachegrind-{kib}k.err"));
    let err_file = std::fs::File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let mut child = Command::new("valgrind")
        .arg("--tool=cachegrind")
        .arg("--cache-sim=yes")
        .arg(format!("--LL={},{LL_ASSOC},{LL_LINE}", kib * 1024))
        .arg(format!("--cachegrind-out-file={}", out.display()))
        .arg("--")
        .arg(prog)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .map_err(|e| format!("valgrind: {e}"))?;
    // A simulation runs 20-100x the program's time: a SIGTERM to cosched
    // alone (not to its process group, as a terminal's Ctrl-C is) must
    // still end it, so the wait watches the interrupt flag.
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if crate::launch::interrupted().is_some() => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("cachegrind of `{}` at {kib} KiB: interrupted", argv.join(" ")));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(format!("valgrind: {e}")),
        }
    };
    if !status.success() {
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
        return Err(format!("cachegrind of `{}` at {kib} KiB: {status} ({tail})", argv.join(" ")));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (refs, misses) = parse_summary(&text).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(MissPoint { ll_kib: kib, refs, misses, ratio: if refs == 0 { 0.0 } else { misses as f64 / refs as f64 } })
}

/// Data references and last-level data misses from a cachegrind output
/// file's `events:` and `summary:` lines.
pub fn parse_summary(text: &str) -> Result<(u64, u64), String> {
    let line = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(|l| l.split_whitespace().collect::<Vec<_>>());
    let events = line("events:").ok_or("no `events:` line")?;
    let summary = line("summary:").ok_or("no `summary:` line")?;
    if events.len() != summary.len() {
        return Err(format!("{} events but {} summary figures", events.len(), summary.len()));
    }
    let get = |name: &str| -> Result<u64, String> {
        let i = events.iter().position(|e| *e == name).ok_or_else(|| format!("no `{name}` event (was the cache simulation on?)"))?;
        summary[i].parse().map_err(|e| format!("{name} `{}`: {e}", summary[i]))
    };
    Ok((get("Dr")? + get("Dw")?, get("DLmr")? + get("DLmw")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_gives_data_references_and_last_level_data_misses() {
        let text = "desc: I1 cache: 32768 B, 64 B, 8-way associative\ncmd: ./a\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\n\
                    fl=a.c\n10 1 0 0 0 0 0 0 0 0\nsummary: 1000 10 5 400 40 20 100 30 10\n";
        assert_eq!(parse_summary(text), Ok((500, 30)));
        assert!(parse_summary("events: Ir\nsummary: 5\n").unwrap_err().contains("no `Dr` event"));
        assert!(parse_summary("events: Ir Dr\nsummary: 5\n").unwrap_err().contains("2 events but 1"));
        assert!(parse_summary("summary: 5\n").unwrap_err().contains("events"));
    }

    #[test]
    fn cachegrind_sizes_are_ways_times_lines_times_a_power_of_two() {
        assert!(valid_size(1024) && valid_size(256) && valid_size(16 * 1024));
        assert!(!valid_size(768) && !valid_size(0) && !valid_size(3));
    }
}
