//! `cosched evaluate` with real short processes: every order runs a solo
//! pass and each policy on the seed's order, the comparison stops at the
//! orders' bound, and bad usage writes nothing.

use std::path::Path;
use std::process::Command;

fn cosched(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(args)
        .arg("--db")
        .arg(dir.join("db"))
        .env("COSCHED_DATA_DIR", dir)
        .env("COSCHED_RUN_LOCK", dir.join("lock"))
        .output()
        .unwrap()
}

/// Three jobs whose solo times differ by far more than a launch's jitter on
/// a loaded VM (tens of ms), so the oracle's shortest-first order is c, b, a
/// whatever else runs (with 20, 30 and 50 ms it once measured b shorter
/// than c while the whole test suite ran).
fn workload(dir: &Path) -> String {
    let wl = dir.join("w.toml");
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"host\"\ncores = 1\n\
         [[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.25'\"\n\
         [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.13'\"\n\
         [[jobs]]\nname = \"c\"\ncommand = \"sh -c 'sleep 0.04'\"\n",
    )
    .unwrap();
    wl.display().to_string()
}

#[test]
fn each_order_runs_a_pass_and_every_policy_on_the_seeds_order_until_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(dir.path());
    let out = cosched(
        dir.path(),
        &[
            "evaluate", "--workload", &wl, "--policy", "exclusive", "--min-orders", "2", "--max-orders", "2", "--seed", "7",
            "--oracle-replays", "1", "--json",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["policies"], serde_json::json!(["noplan", "exclusive"]));
    let orders = v["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 2);
    for (k, o) in orders.iter().enumerate() {
        assert_eq!(o["order"], k);
        let runs: Vec<&str> = o["runs"].as_array().unwrap().iter().map(|r| r["policy"].as_str().unwrap()).collect();
        assert_eq!(runs, ["noplan", "exclusive"]);
    }
    // On one core noplan and exclusive make the same schedule of three jobs.
    assert!(["resolved", "budget"].contains(&v["stop"].as_str().unwrap()));
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 3, "one per figure");
    assert_eq!(v["oracle"].as_array().unwrap().len(), 2, "makespan and mean turnaround");
    assert_eq!(v["oracle"][0]["oracle"]["search"]["schedules"], 6, "3! orders of three distinct jobs");
    // Each order stored a solo pass and one run per policy, in the seed's order.
    let store = cosched_store::Store::open_existing(&dir.path().join("db")).unwrap();
    let runs = store.runs().unwrap();
    let labels: Vec<(&str, u32)> = runs.iter().map(|r| (r.policy.as_str(), r.repeat)).collect();
    assert_eq!(labels.iter().filter(|l| l.0 == "solo-pass").count(), 2);
    let (orders_runs, replays): (Vec<_>, Vec<_>) = runs.iter().partition(|r| r.repeat < 2);
    assert_eq!(orders_runs.len(), 6);
    // Then each oracle's schedule once, for real, under noplan: the mean
    // turnaround oracle on one core runs the shortest job first.
    assert!(!replays.is_empty() && replays.len() <= 2, "{} replays", replays.len());
    assert!(replays.iter().all(|r| r.policy == "noplan"));
    let spt = replays.iter().any(|r| {
        let mut jobs = store.run_jobs(r.id).unwrap();
        jobs.sort_by(|a, b| a.start.start_s.total_cmp(&b.start.start_s));
        jobs.iter().map(|j| j.start.job_index).collect::<Vec<_>>() == [2, 1, 0]
    });
    assert!(spt, "the turnaround oracle's order c, b, a was run");
    for o in v["oracle"].as_array().unwrap() {
        assert!(o["replayed"]["median"].as_f64().unwrap() > 0.0, "{o}");
        assert_eq!(o["above_replayed"].as_array().unwrap().len(), 2, "both policies against the replay");
    }
    for r in runs.iter().filter(|r| r.policy == "exclusive") {
        let mut jobs = store.run_jobs(r.id).unwrap();
        jobs.sort_by(|a, b| a.start.start_s.total_cmp(&b.start.start_s));
        let names: Vec<usize> = jobs.iter().map(|j| j.start.job_index as usize).collect();
        assert_eq!(names, cosched_sched_order(3, 7, r.repeat as usize), "exclusive runs the seed's order {}", r.repeat);
    }
}

/// The seed's order k, as `sched::montecarlo::order` draws it (ChaCha8, one
/// stream per order): recomputed here from the JSON of `simulate --trace`
/// would need a scenario, so the test asks the library directly.
fn cosched_sched_order(n: usize, seed: u64, k: usize) -> Vec<usize> {
    cosched_sched::montecarlo::order(n, seed, k)
}

#[test]
fn bad_usage_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(dir.path());
    for args in [
        vec!["evaluate", "--workload", wl.as_str(), "--policy", "fifo"],
        vec!["evaluate", "--workload", wl.as_str(), "--policy", "noplan", "--metric", "speed"],
        vec!["evaluate", "--workload", wl.as_str(), "--policy", "best-match", "--min-orders", "5", "--max-orders", "2"],
        vec!["evaluate", "--workload", wl.as_str(), "--policy", "noplan"],
        vec!["evaluate", "--workload", wl.as_str(), "--policy", "exclusive", "--budget", "soon"],
    ] {
        let out = cosched(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!dir.path().join("db").exists(), "bad usage created the database");
}

/// A job that does not end ok cuts its run's figures short (a program that
/// cannot start "finishes" in milliseconds), so the series stops at the
/// first such order and names the run, instead of comparing it.
#[test]
fn an_order_with_a_job_that_did_not_end_ok_stops_the_series_and_names_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[jobs]]\nname = \"ok\"\ncommand = \"sh -c 'sleep 0.05'\"\n\
         [[jobs]]\nname = \"bad\"\ncommand = \"sh -c 'sleep 0.05; exit 3'\"\n",
    )
    .unwrap();
    let out = cosched(
        dir.path(),
        &["evaluate", "--workload", wl.to_str().unwrap(), "--policy", "best-match", "--min-orders", "2", "--max-orders", "3"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("order 1: 1 of the 2 job(s) under noplan did not end ok"), "{err}");
    assert!(!err.contains("order 2 of at most"), "a second order ran after the first failed:\n{err}");
}

/// A series taken up again with `--resume` reads each stored run's regime
/// as the live series did: an order whose runs read another regime than
/// its solo pass stays "switched" (and out of a one-regime comparison)
/// instead of counting as if it had stayed put. The readings are set in
/// the store by hand, since this node's regime cannot be chosen.
#[test]
fn a_resumed_series_keeps_the_regime_switch_each_stored_order_read() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(dir.path());
    let args = [
        "evaluate", "--workload", &wl, "--policy", "exclusive", "--min-orders", "1", "--max-orders", "1", "--seed", "7",
        "--oracle-replays", "0", "--json",
    ];
    let out = cosched(dir.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    {
        let db = rusqlite::Connection::open(dir.path().join("db")).unwrap();
        let set = |policy_is_pass: bool, ns: f64| {
            let op = if policy_is_pass { "=" } else { "<>" };
            let n = db
                .execute(
                    &format!(
                        "UPDATE run_conditions SET c2c_cpus = '0,1', c2c_round_trip_ns = ?1 \
                         WHERE run_id IN (SELECT id FROM runs WHERE policy {op} 'solo-pass')"
                    ),
                    [ns],
                )
                .unwrap();
            assert!(n > 0, "a stored reading to set");
        };
        // The pass read a shared cache, the policies' runs the caches apart.
        set(true, 30.0);
        set(false, 300.0);
    }
    let out = cosched(dir.path(), &[&args[..], &["--resume"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = &v["orders"][0];
    assert_eq!(o["regime"], "shared", "{o}");
    assert_eq!(o["switched"], true, "the runs read another regime than the pass: {o}");
}

/// evaluate runs its baseline as `run`'s policy and its policies as run's
/// baselines; the note on a policy's defaulted parameters names the flag
/// the user gave it by (it said `--baseline react` for a `--policy react`).
#[test]
fn the_defaults_note_names_a_policy_by_the_flag_it_was_given_with() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.03'\"\n\
         [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.03'\"\n",
    )
    .unwrap();
    let out = cosched(
        dir.path(),
        &[
            "evaluate", "--workload", wl.to_str().unwrap(), "--baseline", "best-match", "--policy", "react:action=suspend",
            "--min-orders", "1", "--max-orders", "1", "--oracle-replays", "0",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("--policy react: defaults"), "{err}");
    assert!(!err.contains("--baseline react"), "{err}");
    assert_eq!(err.matches("react: defaults").count(), 1, "said once, not once per order:\n{err}");
}
