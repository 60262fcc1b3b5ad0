//! The `cosched-kernel` command line: the contract other code parses.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cosched_model::kernel::{kernel, KERNELS};
use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cosched-kernel"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("running cosched-kernel")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn list_names_every_catalogue_kernel_once_per_line() {
    let o = run(&["--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), KERNELS.len());
    for (line, k) in lines.iter().zip(KERNELS) {
        assert_eq!(line.split_whitespace().next(), Some(k.name));
        assert!(line.contains(k.pressure) && line.contains(k.summary), "{line}");
    }
}

#[test]
fn json_report_is_one_parseable_line_with_every_field() {
    let o = run(&["stream", "--work", "2", "--threads", "2", "--array-mib", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    let v: Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(v["kernel"], "stream");
    assert_eq!(v["work"], 2);
    assert_eq!(v["threads"], 2);
    assert_eq!(v["params"]["array_mib"], "1");
    assert!(v["params"].as_object().unwrap().values().all(Value::is_string));
    assert_eq!(v["unit"], kernel("stream").unwrap().unit);
    for f in ["wall_s", "setup_s", "rate"] {
        assert!(v[f].as_f64().is_some_and(|x| x >= 0.0), "{f}: {}", v[f]);
    }
    assert_eq!(v["ops"].as_u64(), Some(2 * 24 * (1 << 20) / 8));
    assert_eq!(v["ops_unit"], "bytes");
    assert_eq!(v["figure"]["name"], "bandwidth_mb_s");
    assert!(v["figure"]["value"].is_number());
    let sum = v["checksum"].as_str().unwrap();
    assert!(sum.len() == 16 && sum.chars().all(|c| c.is_ascii_hexdigit()), "{sum}");
    assert!(v["pid"].as_u64().is_some());
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "kernel", "work", "threads", "params", "unit", "wall_s", "setup_s", "rate", "ops", "ops_unit",
        "figure", "checksum", "pid",
    ];
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
}

#[test]
fn json_figure_is_null_when_a_kernel_has_none() {
    let o = run(&["idle", "--work", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim_end()).unwrap();
    assert!(v["figure"].is_null());
}

#[test]
fn binary_and_library_agree_on_the_checksum() {
    let o = run(&["chase", "--work", "1", "--ws-mib", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim_end()).unwrap();
    let params: BTreeMap<String, String> = [("ws_mib".to_string(), "1".to_string())].into_iter().collect();
    let lib = cosched_kernels::run(kernel("chase").unwrap(), 1, 1, &params).unwrap();
    assert_eq!(v["checksum"], lib.checksum.as_str());
}

#[test]
fn human_output_shows_work_threads_time_rate_figure_and_checksum() {
    let o = run(&["syscall", "--work", "3", "--threads", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for label in ["work", "threads", "wall time", "rate", "syscall", "ops", "checksum"] {
        assert!(out.lines().any(|l| l.starts_with(label)), "missing `{label}` in\n{out}");
    }
    assert!(out.contains("units/s"), "{out}");
    assert!(out.contains(kernel("syscall").unwrap().unit), "{out}");
}

#[test]
fn unknown_kernel_exits_2_and_lists_the_known_ones() {
    let o = run(&["nosuch", "--work", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("nosuch") && err.contains("stream") && err.contains("pingpong"), "{err}");
}

#[test]
fn unknown_flag_exits_2_naming_it() {
    let o = run(&["stream", "--work", "1", "--array-gib", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--array-gib"), "{}", stderr(&o));
}

#[test]
fn bad_values_exit_2_naming_the_flag_and_what_is_expected() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["stream", "--work", "x"], "--work", "non-negative integer"),
        (&["stream", "--work", "-1"], "--work", "non-negative integer"),
        (&["stream", "--work", "1", "--threads", "0"], "--threads", ">= 1"),
        (&["stream", "--work", "1", "--array-mib", "lots"], "--array-mib", "non-negative integer"),
        (&["offload", "--work", "1", "--host-load", "much"], "--host-load", "number"),
        (&["pingpong", "--work", "1", "--transport", "tcp"], "--transport", "shm"),
        (&["distgen", "--work", "1", "--intensity", "0"], "--intensity", "(0, 1]"),
        (&["fileio", "--work", "1", "--threads", "2"], "--threads", "one thread"),
        (&["stream", "--threads", "2"], "--work", ""),
    ];
    for (args, flag, expected) in cases {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: `{err}` should name {flag}");
        assert!(err.contains(expected), "{args:?}: `{err}` should say {expected}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn no_arguments_prints_usage_and_exits_2() {
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Usage"), "{}", stderr(&o));
}

#[test]
fn help_shows_examples_and_every_parameter_with_its_default() {
    let o = run(&["--help"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("Examples:"));
    for k in KERNELS {
        let o = run(&[k.name, "--help"]);
        assert!(o.status.success(), "{}", k.name);
        let help = stdout(&o);
        assert!(help.contains("Examples:") && help.contains(&format!("cosched-kernel {} --work", k.name)), "{help}");
        for p in k.params {
            assert!(help.contains(&p.flag()), "{}: {} missing in\n{help}", k.name, p.flag());
            let default = if p.default.is_empty() { "none" } else { p.default };
            assert!(help.contains(&format!("[default: {default}]")), "{}: default of {} in\n{help}", k.name, p.name);
        }
    }
}

/// Spawns `cosched-kernel` with piped output, for tests that signal it.
fn spawn(args: &[&str]) -> std::process::Child {
    bin().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Polls `cond` until it holds; panics with `what` after a generous bound
/// (a liveness guard, not a performance check).
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| if e.path().is_dir() { files_under(&e.path()) } else { 1 })
                .sum()
        })
        .unwrap_or(0)
}

fn signal(child: &std::process::Child, sig: libc::c_int) {
    // SAFETY: the pid belongs to our unreaped child; kill has no memory effects.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

#[test]
fn fileio_removes_its_files_and_exits_128_plus_signal_when_stopped() {
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        // Far more work than the test waits for; it is stopped long before.
        let mut child = spawn(&["fileio", "--work", "1000000", "--file-mib", "64", "--block-kib", "64", "--dir", d]);
        eventually("the first file", || files_under(dir.path()) > 0);
        signal(&child, sig);
        let o = child.wait().unwrap();
        assert_eq!(o.code(), Some(code), "signal {sig}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "signal {sig}: left files behind");
    }
}

/// Children of `pid`, from /proc.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn pingpong_peer_dies_with_a_killed_kernel() {
    for transport in ["shm", "unix"] {
        let mut child = spawn(&["pingpong", "--work", "1000000000", "--msg-kib", "1", "--transport", transport]);
        let mut peers = Vec::new();
        eventually("the pingpong peer", || {
            peers = children(child.id());
            !peers.is_empty()
        });
        signal(&child, libc::SIGKILL);
        child.wait().unwrap();
        eventually("the orphaned peer to die", || !running(peers[0]));
    }
}
