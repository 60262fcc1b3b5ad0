//! `timeshare` with real processes: the workload's `priority` weighs the
//! turns the node runner gives by freezing and thawing jobs (cgroup
//! freezer, else SIGSTOP / SIGCONT).

mod common;
use std::path::Path;
use std::process::Command;

/// Both jobs do the same fixed CPU work on the pool's one core, `a` first
/// in turn order. Turns of 0.05 s per unit of priority.
fn ends(dir: &Path, pa: u32, pb: u32) -> (f64, f64) {
    let wl = dir.join(format!("w-{pa}-{pb}.toml"));
    let job = |n: &str, p: u32| format!("[[jobs]]\nname = \"{n}\"\nkernel = \"compute\"\nwork = 30000\npriority = {p}\n");
    std::fs::write(&wl, format!("[[pools]]\nname = \"host\"\ncores = 1\n{}{}", job("a", pa), job("b", pb))).unwrap();
    let db = dir.join(format!("c-{pa}-{pb}.db"));
    let kernel = Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", "timeshare:quantum=0.05", "--solo", "stored", "--json", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir)
        .env("COSCHED_KERNEL", kernel)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let end = |name: &str| {
        let jobs = v["runs"][0]["jobs"].as_array().unwrap();
        let j = jobs.iter().find(|j| j["job"] == name).unwrap_or_else(|| panic!("no job {name}: {v}"));
        assert_eq!(j["end"]["status"], "ok", "{v}");
        j["end"]["end_s"].as_f64().unwrap()
    };
    (end("a"), end("b"))
}

#[test]
fn a_later_job_of_priority_4_gets_four_fifths_of_the_core_and_ends_first() {
    let dir = tempfile::tempdir().unwrap();
    // With equal turns the two end within a quantum of each other, in an
    // order the turns' phase decides, so one of these two fails when
    // priorities are ignored (checked by removing them from `cosched run`).
    // With priority 4 a job runs four quanta for each of the other's and,
    // doing the same work, ends when the other has done about a quarter.
    let (a, b) = ends(dir.path(), 1, 4);
    assert!(b < a, "b (priority 4) ended at {b:.3} s, a (priority 1) at {a:.3} s");
    let (a, b) = ends(dir.path(), 4, 1);
    assert!(a < b, "a (priority 4) ended at {a:.3} s, b (priority 1) at {b:.3} s");
}

/// Seconds between two timestamps a turn-recording job writes.
const PERIOD: f64 = 0.0001;

/// One thread that spins and appends CLOCK_MONOTONIC to its file every
/// `PERIOD` while it runs, until it has had 0.4 s of CPU: a job whose own
/// file says when it ran.
const RECORDER: &str = "use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC); open(my $f, '>>', $ARGV[0]) or die; \
    select($f); $| = 1; my $next = 0; \
    while (1) { my $t = clock_gettime(CLOCK_MONOTONIC); if ($t >= $next) { printf \"%.7f\\n\", $t; $next = $t + $ARGV[1]; \
    my @c = times; last if $c[0] + $c[1] >= 0.4; } }";

/// The stretches a job ran: runs of its timestamps with no gap over `gap`.
fn stretches(ts: &[f64], gap: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for &t in ts {
        match out.last_mut() {
            Some(s) if t - s.1 <= gap => s.1 = t,
            _ => out.push((t, t)),
        }
    }
    out
}

/// Timestamps of `other` strictly between two consecutive timestamps of
/// `ts` at most `close` apart: moments both ran. A job stopped for its
/// turn leaves a gap in its own stamps as long as the other job's turn,
/// so only a switch and a switch back within `close` could put a stamp
/// of the other there without both running. Gaps are not read as turns:
/// on a loaded node a job waits for a CPU tens of milliseconds while it
/// may run, and a turn the runner passed late (its freeze waits for the
/// outgoing job to get a CPU) is short, so "long gaps are turns" saw
/// overlaps where the stamps alternated strictly (the CI failure).
fn overlaps(ts: &[f64], other: &[f64], close: f64) -> Vec<(f64, (f64, f64))> {
    let mut out = Vec::new();
    for &t in other {
        let k = ts.partition_point(|&x| x < t);
        if k > 0 && k < ts.len() && ts[k] > t && ts[k] - ts[k - 1] <= close {
            out.push((t, (ts[k - 1], ts[k])));
        }
    }
    out
}

#[test]
fn a_timestamp_between_two_close_ones_of_the_other_job_is_an_overlap_and_one_in_a_gap_is_not() {
    let a = [0.0, 0.0001, 0.0002, 0.0003, 0.0100, 0.0101, 0.0102];
    assert_eq!(stretches(&a, 0.02), [(0.0, 0.0102)]);
    assert_eq!(stretches(&a, 0.005), [(0.0, 0.0003), (0.0100, 0.0102)]);
    // In the gap between a's stretches, before and after them, or on one of
    // its stamps: no overlap. Between two stamps 0.1 ms apart: both ran.
    assert!(overlaps(&a, &[0.0004, 0.005, 0.0099, 0.0102, 0.011, -1.0], 3.0 * PERIOD).is_empty());
    assert_eq!(overlaps(&a, &[0.00015, 0.01015], 3.0 * PERIOD), [(0.00015, (0.0001, 0.0002)), (0.01015, (0.0101, 0.0102))]);
}

/// Two one-thread jobs that each may use both cores of the pool (so two
/// that ran at once would run on the two CPUs at once), turns of 0.05 s,
/// under one suspend mechanism; each job's timestamps.
fn recorded_turns(dir: &Path, cgroups: &str) -> (Vec<f64>, Vec<f64>) {
    let wl = dir.join(format!("turns-{cgroups}.toml"));
    let file = |n: &str| dir.join(format!("{n}-{cgroups}.ts"));
    let job = |n: &str| {
        format!(
            "[[jobs]]\nname = \"{n}\"\ncores = 2\ncommand = [\"perl\", \"-e\", '''{RECORDER}''', \"{}\", \"{PERIOD}\"]\n",
            file(n).display()
        )
    };
    std::fs::write(&wl, format!("[[pools]]\nname = \"host\"\ncores = 2\n{}{}", job("a"), job("b"))).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", "timeshare:quantum=0.05", "--solo", "stored", "--cgroups", cgroups, "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(dir.join(format!("c-{cgroups}.db")))
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "--cgroups {cgroups}: {}", String::from_utf8_lossy(&out.stderr));
    let read = |n: &str| -> Vec<f64> {
        let text = std::fs::read_to_string(file(n)).unwrap();
        text.lines().map(|l| l.parse().unwrap()).collect()
    };
    (read("a"), read("b"))
}

/// Issue 42: the turn's outgoing job is stopped, and known stopped, before
/// the incoming one goes on, under each suspend mechanism this node has.
/// Before the fix, the incoming job was thawed first and both ran on the
/// two CPUs until the freeze came (and the runner wrote its journal in
/// between), which this catches.
#[test]
fn two_jobs_taking_turns_never_run_at_the_same_moment() {
    if !Path::new("/usr/bin/perl").exists() && Command::new("perl").arg("-v").output().is_err() {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "no perl to record the turns (perl-base is essential on Debian)");
        return;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, "one CPU, so two jobs cannot run at the same moment");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // v1 freezer (where mounted), v2 cgroup.freeze (else SIGSTOP, as a run
    // without a v2 tree falls back), SIGSTOP to the group.
    for cgroups in ["auto", "v2", "none"] {
        let (a, b) = recorded_turns(dir.path(), cgroups);
        // Three periods: a stamp late by preemption still counts, and a
        // switch and a switch back (two confirmed freezes and two thaws,
        // 0.2 ms at the fastest, and a quantum apart) do not fit.
        let close = 3.0 * PERIOD;
        let both: Vec<_> = overlaps(&a, &b, close).into_iter().chain(overlaps(&b, &a, close)).collect();
        assert!(
            both.is_empty(),
            "--cgroups {cgroups}: {} timestamps of one job fall between two of the other {} ms apart or less, the first at {:?}",
            both.len(),
            close * 1e3,
            both.first()
        );
        // A stopped job's gap is a turn (0.05 s).
        let turns = stretches(&a, 0.02).len().min(stretches(&b, 0.02).len());
        assert!(turns >= 3, "--cgroups {cgroups}: only {turns} turns each; the test saw no turns to check");
    }
}
