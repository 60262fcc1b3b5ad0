//! `cosched slurm` against faults of a real local cluster
//! (`scripts/slurm-local.sh`) beyond those of `tests/slurm.rs`: `serve`
//! killed between a release and the decision it writes into the job's
//! AdminComment; a user releasing a job cosched holds (the submission
//! rule's `slurm_job_modify` refuses it); a `serve` restarted while a job
//! runs that still knows the job's program; 500 short jobs on 8 nodes; and
//! `slurm report` over jobs that shared a node. Nothing lost, nothing
//! started twice. Each test starts its cluster and stops it; they skip with
//! a printed reason when Slurm or root is missing.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cosched_store::Store;

mod common;
#[macro_use]
#[path = "common/slurm.rs"]
mod slurm_cluster;
use slurm_cluster::{kernel, report, setup, Cluster, Rec, Spec};

/// Each job's records in the completion log: exactly one, COMPLETED.
fn completed_once(recs: &[Rec], ids: &[u64]) {
    for &id in ids {
        let states: Vec<&str> = recs.iter().filter(|r| r.id == id).map(|r| r.state.as_str()).collect();
        assert_eq!(states, ["COMPLETED"], "job {id}: {recs:?}");
    }
}

/// The job's AdminComment and priority, as the controller holds them.
fn mark(c: &Cluster, id: u64) -> (String, u64) {
    let v: serde_json::Value = serde_json::from_str(&c.slurm("squeue", &["--json"])).unwrap();
    let j = v["jobs"].as_array().unwrap().iter().find(|j| j["job_id"].as_u64() == Some(id)).cloned().unwrap_or_default();
    (j["admin_comment"].as_str().unwrap_or("").to_string(), j["priority"].as_u64().unwrap_or(0))
}

/// `serve` SIGKILLs itself after it placed its first round's starts (each
/// job's node and signed decision written, in one `scontrol update`) and
/// before it released them (COSCHED_SLURM_FAULT), three times in a row,
/// then one `serve` runs to the end: the placed jobs did not start while
/// held, are held again and started once each (one COMPLETED record),
/// none stays held, and under `exclusive` no two ever shared a node.
#[test]
fn serve_killed_between_a_placement_and_its_release_starts_no_job_twice_and_holds_none_forever() {
    need_slurm!(no_kernel);
    let c = Cluster::with(Spec { nodes: 2, cpus: Some(2), ..Spec::default() });
    let ids: Vec<u64> = (0..6).map(|k| c.sleep(&format!("j{k}"), 1.0, &["-n1"])).collect();
    let db = c.dir.path().join("s.db");
    let mut killed_at = Vec::new();
    for _ in 0..3 {
        // At most 100 rounds: a serve that placed nothing ends, and the test says so.
        let mut s = c.cosched_bare(&db, &["serve", "--policy", "exclusive", "--interval", "0.2", "--rounds", "100"]);
        s.env("COSCHED_SLURM_FAULT", "kill-before-release").stdout(Stdio::null()).stderr(Stdio::piped());
        let out = s.output().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(9), "serve was to kill itself before its first release: {}", String::from_utf8_lossy(&out.stderr));
        // Exactly the point: placed (cosched's decision written), still held.
        let placed: Vec<u64> = ids.iter().copied().filter(|&id| mark(&c, id).0.starts_with("cosched;policy=")).collect();
        assert!(!placed.is_empty(), "nothing placed before the kill");
        for &id in &placed {
            assert_eq!(mark(&c, id).1, 0, "job {id} released before the kill");
        }
        killed_at.extend(placed);
    }
    let r = report(c.serve("exclusive", &["--interval", "0.2"]), Duration::from_secs(120));
    let recs = c.records();
    completed_once(&recs, &ids);
    for a in recs.iter().filter(|r| ids.contains(&r.id)) {
        let beside: Vec<&Rec> = recs.iter().filter(|o| a.shares_with(o)).collect();
        assert!(beside.is_empty(), "exclusive {a:?} shared its node with {beside:?} (placed before the kills: {killed_at:?})");
    }
    assert!(c.held().is_empty(), "{r}");
}

/// The submission rule's `slurm_job_modify` (dist/job_submit.lua) refuses
/// a user's own `scontrol release` of a job cosched holds, so it cannot
/// start before cosched places it; renaming it still works; serve (root)
/// releases and starts it.
#[test]
fn a_users_own_release_of_a_held_job_is_refused_while_serves_goes_through() {
    need_slurm!(no_kernel);
    // SlurmUser `slurm`: munge's socket is then open to other users.
    let c = Cluster::with(Spec { nodes: 1, cpus: Some(2), user: Some("slurm"), hook_at: "none", ..Spec::default() });
    let id = c.sleep("mine", 1.0, &["-n1", "--uid=nobody", "--gid=nogroup"]);
    assert_eq!(c.held(), [id]);
    let as_nobody = |args: &[&str]| {
        let mut cmd = Command::new("scontrol");
        cmd.args(args).env("SLURM_CONF", &c.conf).uid(65534).gid(65534);
        cmd.output().unwrap()
    };
    let out = as_nobody(&["release", &id.to_string()]);
    assert!(!out.status.success(), "the user's release went through");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Access/permission denied"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = as_nobody(&["update", &format!("JobId={id}"), "JobName=renamed"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(c.held(), [id], "released by its user");
    let log = std::fs::read_to_string(c.state().join("log/slurmctld.log")).unwrap();
    assert!(log.contains(&format!("uid 65534 may not release job {id}: cosched holds it")), "{log}");
    let r = report(c.serve("exclusive", &["--interval", "0.2"]), Duration::from_secs(60));
    assert_eq!(r["released"].as_array().unwrap().len(), 1, "{r}");
    let recs = c.records();
    completed_once(&recs, &[id]);
    assert_eq!(recs.iter().find(|x| x.id == id).unwrap().name, "renamed");
}

/// A job whose batch script names its program (`#COSCHED program=c1`),
/// with a name and comment of its user's own: `serve` is killed while it
/// runs and a new one started; the job's end is still learned as workload
/// job `c1`, since the program rides in cosched's signed mark.
#[test]
fn the_program_a_batch_script_named_survives_a_serve_restarted_while_the_job_runs() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());
    let script = c.dir.path().join("own.sh");
    std::fs::write(&script, format!("#!/bin/sh\n#COSCHED program=c1\nsleep 3\nexec {} compute --work 3000 --json\n", kernel().display())).unwrap();
    let out = c.dir.path().join("own.out");
    let args = ["--parsable", "-p", "cosched", "-n1", "-J", "mine", "--comment=my own note", "-o", &out.to_string_lossy(), &script.to_string_lossy()];
    let id: u64 = c.slurm("sbatch", &args).trim().parse().unwrap();
    let mut first = c.cosched(&db, &wl, &["serve", "--policy", "exclusive", "--interval", "0.2"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let began = Instant::now();
    while c.job_state(id) != "RUNNING" {
        assert!(began.elapsed() < Duration::from_secs(30), "never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let (admin, _) = mark(&c, id);
    assert!(admin.contains(";program=c1;") && admin.contains(";sig="), "{admin}");
    let out = c.cosched(&db, &wl, &["serve", "--policy", "exclusive", "--interval", "0.2", "--exit-idle", "1", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["learned"], 1, "{r}");
    let store = Store::open(&db).unwrap();
    let rows: Vec<String> = store
        .runs()
        .unwrap()
        .into_iter()
        .filter(|r| r.series.starts_with("slurm:cosched:"))
        .flat_map(|r| store.run_jobs(r.id).unwrap())
        .filter(|j| j.start.pgid as u64 == id)
        .map(|j| j.start.job)
        .collect();
    assert_eq!(rows, ["c1"]);
}

/// Two compute jobs share the node under `noplan`, a stream job follows;
/// `slurm report` lists each with the slowdown serve learned and the
/// prediction, the two as co-located beside each other, the compute pair,
/// the user, and node-hours that add up; `--report` writes the page.
#[test]
fn slurm_report_shows_co_located_jobs_with_their_slowdowns_and_the_node_hours_saved() {
    need_slurm!();
    let c = Cluster::with(Spec { cpus: Some(2), ..Spec::default() });
    let (wl, db) = setup(c.dir.path());
    let ids = [c.submit("c1", "compute --work 120000"), c.submit("c2", "compute --work 120000"), c.submit("s1", "stream --work 900 --array-mib 32")];
    let out = c.cosched(&db, &wl, &["serve", "--policy", "noplan", "--interval", "0.2", "--exit-idle", "1", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = c.dir.path().join("page");
    let out = c.cosched(&db, &wl, &["report", "--json", "--report", &page.to_string_lossy()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let job = |id: u64| r["jobs"].as_array().unwrap().iter().find(|j| j["id"] == id).unwrap_or_else(|| panic!("{id} missing: {r}")).clone();
    let recs = c.records();
    let store = Store::open(&db).unwrap();
    let learned: Vec<(u64, Option<f64>)> = store
        .runs()
        .unwrap()
        .into_iter()
        .flat_map(|x| store.run_jobs(x.id).unwrap())
        .map(|j| (j.start.pgid as u64, j.end.and_then(|e| e.slowdown)))
        .collect();
    for &id in &ids {
        let j = job(id);
        let stored = learned.iter().find(|x| x.0 == id).unwrap().1;
        assert!(stored.is_some(), "no slowdown learned for {id}: {learned:?}");
        assert_eq!(j["slowdown"].as_f64(), stored, "{j}");
        assert!(j["predicted"].as_f64().is_some() && j["user"] == "root", "{j}");
        let rec = recs.iter().find(|x| x.id == id).unwrap();
        assert_eq!((j["start"].as_i64(), j["end"].as_i64()), (Some(rec.start), Some(rec.end)), "{j} {rec:?}");
    }
    // As Slurm's record shows them: the jobs that overlapped are each other's co-runners.
    for &a in &ids {
        let (ra, beside) = (recs.iter().find(|x| x.id == a).unwrap(), job(a)["beside"].clone());
        for &b in ids.iter().filter(|&&b| b != a) {
            let rb = recs.iter().find(|x| x.id == b).unwrap();
            assert_eq!(beside.as_array().unwrap().iter().any(|x| x == b), ra.shares_with(rb), "{a} and {b}: {r}");
        }
    }
    let (c1, c2) = (recs.iter().find(|x| x.id == ids[0]).unwrap(), recs.iter().find(|x| x.id == ids[1]).unwrap());
    assert!(c1.shares_with(c2), "noplan did not co-locate the compute jobs: {recs:?}");
    let pair = r["pairs"].as_array().unwrap().iter().find(|p| p["program"] == "compute" && p["beside"] == "compute").cloned();
    assert!(pair.is_some_and(|p| p["slowdowns"]["n"].as_u64() >= Some(2)), "{r}");
    let t = &r["total"];
    let (alone, used, saved) = (t["exclusive"].as_f64().unwrap(), t["used"].as_f64().unwrap(), t["saved"].as_f64().unwrap());
    assert!((alone - used - saved).abs() < 1e-9, "{t}");
    let walls: i64 = ids.iter().map(|id| recs.iter().find(|x| x.id == *id).map_or(0, |x| x.end - x.start)).sum();
    assert!(used * 3600.0 <= walls as f64 + 1e-6, "{t} against {walls} s of jobs");
    let users = r["users"].as_array().unwrap();
    assert_eq!(users.len(), 1, "{r}");
    assert!((users[0]["hours"]["used"].as_f64().unwrap() - used).abs() < 1e-9);
    let html = std::fs::read_to_string(page.join("index.html")).unwrap();
    assert!(html.contains("Per pair of programs") && html.contains(&ids[0].to_string()), "{html}");
    assert!(page.join("report.json").is_file());
    // The table as a person reads it.
    let out = c.cosched(&db, &wl, &["report"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("saved by sharing") && text.contains("Per user"), "{text}");
}

/// `slurm report` with a slurm.conf that does not exist: exit 2 at once,
/// naming it (sacct would retry for a minute).
#[test]
fn slurm_report_with_a_wrong_slurm_conf_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let began = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["slurm", "report", "--db"])
        .arg(dir.path().join("s.db"))
        .env("SLURM_CONF", dir.path().join("nowhere.conf"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nowhere.conf") && err.contains("point SLURM_CONF"), "{err}");
    assert!(began.elapsed() < Duration::from_secs(5));
}

/// Submits `n` jobs of `sleep 0.1` from `threads` threads; their ids and
/// the Unix second each was submitted in (when sbatch returned).
fn submit_many(c: &Cluster, n: usize, threads: usize) -> Vec<(u64, i64)> {
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    std::thread::scope(|s| {
        let hands: Vec<_> =
            (0..threads).map(|t| s.spawn(move || (t..n).step_by(threads).map(|k| (c.sleep(&format!("q{k}"), 0.1, &["-n1"]), now())).collect::<Vec<_>>())).collect();
        hands.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

/// Seconds (whole, as Slurm records times) in which a core of the cluster
/// was free while a job submitted more than `bound` seconds before waited
/// for it: each job taken to hold its core at least the second it started.
fn stalled_seconds(recs: &[Rec], submits: &[(u64, i64)], cores: usize, bound: i64) -> Vec<i64> {
    let (Some(first), Some(last)) = (recs.iter().map(|r| r.start).min(), recs.iter().map(|r| r.end).max()) else { return vec![] };
    let start_of = |id: u64| recs.iter().find(|r| r.id == id).map(|r| r.start);
    (first..=last)
        .filter(|&t| {
            let busy = recs.iter().filter(|r| r.start <= t && t < r.end.max(r.start + 1)).count();
            let waiting = submits.iter().any(|&(id, at)| at + bound < t && start_of(id).is_some_and(|s| s > t));
            waiting && busy < cores
        })
        .collect()
}

/// The controller's RPC counts by type since the last `sdiag -r`
/// (sdiag's own left out), from sdiag's "by message type" section.
fn rpcs_by_type(c: &Cluster) -> Vec<(String, u64)> {
    let out = c.slurm("sdiag", &[]);
    let section = out.split("by message type").nth(1).unwrap_or("").split("by user").next().unwrap_or("");
    section
        .lines()
        .filter_map(|l| {
            let name = l.split_whitespace().next()?;
            let count = l.split("count:").nth(1)?.split_whitespace().next()?.parse().ok()?;
            (name != "REQUEST_STATS_INFO").then(|| (name.to_string(), count))
        })
        .collect()
}

/// 500 jobs of `sleep 0.1` queued on 8 nodes of two cores, `noplan`
/// deciding: every job runs exactly once, none is lost, and no core stays
/// free for a whole second while a job queued more than two rounds plus
/// Slurm's own start (its scheduling pass, once a second) waits. Prints
/// the figures docs/slurm.md records: wall time, rounds, round times,
/// the controller's RPCs per round by type (sdiag), seconds held too long.
///
/// Ignored by `cargo test`: 90 s on a 2-core host at a load of 13-16, where
/// rounds took 0.9-2.3 s and the stall check (which counts on rounds of
/// 0.5 s) failed; `scripts/slurm-faults-scale.sh` runs it (docs/slurm.md,
/// Faults, has its figures).
#[test]
#[ignore = "90 s, and its stall bound assumes an unloaded host: scripts/slurm-faults-scale.sh runs it"]
fn five_hundred_queued_jobs_on_eight_nodes_all_run_once_and_none_waits_beside_a_free_core() {
    need_slurm!(no_kernel);
    let c = Cluster::with(Spec { nodes: 8, cpus: Some(2), ..Spec::default() });
    c.slurm("sdiag", &["-r"]);
    let began = Instant::now();
    let serving = c.serve("noplan", &["--interval", "0.5", "--exit-idle", "5"]);
    let submitted = Instant::now();
    let submits = submit_many(&c, 500, 4);
    let ids: Vec<u64> = submits.iter().map(|s| s.0).collect();
    let submit_s = submitted.elapsed();
    let r = report(serving, Duration::from_secs(900));
    let wall = began.elapsed();
    let recs = c.records();
    // Two rounds of 0.5 s, one second for Slurm's pass, one for whole seconds.
    let stalls = stalled_seconds(&recs, &submits, 16, 3);
    let rounds = r["rounds"].as_u64().unwrap_or(0).max(1);
    let mut round_s: Vec<f64> = r["round_s"].as_array().unwrap().iter().filter_map(|x| x.as_f64()).collect();
    round_s.sort_by(f64::total_cmp);
    let pct = |p: f64| round_s.get(((round_s.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0);
    let rpcs: Vec<String> = rpcs_by_type(&c).iter().map(|(t, n)| format!("{t} {:.2}", *n as f64 / rounds as f64)).collect();
    eprintln!(
        "500 jobs on 8 nodes: submitted in {submit_s:.1?}, all done in {wall:.1?} (5 s of it serve's idle exit), {rounds} rounds, round p50 {:.3} s p99 {:.3} s, {} s with a core free while a job queued 3 s waited; RPCs per round (all clients, submissions and slurmd's included): {}",
        pct(0.5),
        pct(0.99),
        stalls.len(),
        rpcs.join(", ")
    );
    completed_once(&recs, &ids);
    assert!(c.held().is_empty());
    assert_eq!(r["released"].as_array().unwrap().len(), 500, "released once each");
    assert!(stalls.is_empty(), "a core was free while an old job waited, at {stalls:?}");
}

#[test]
fn a_core_free_while_an_old_job_waits_is_a_stall_and_a_full_cluster_is_not() {
    let rec = |id: u64, start: i64, end: i64| Rec { id, name: String::new(), state: "COMPLETED".into(), uid: 0, nodes: vec!["c1".into()], start, end };
    // One core: job 2 (submitted at 0) waits while job 1 runs [0, 10): no stall.
    let recs = [rec(1, 0, 10), rec(2, 10, 12)];
    assert!(stalled_seconds(&recs, &[(1, 0), (2, 0)], 1, 3).is_empty());
    // Two cores, job 2 waits until 10 with one core free from 0: stalls from 4 on.
    assert_eq!(stalled_seconds(&recs, &[(1, 0), (2, 0)], 2, 3), (4..10).collect::<Vec<_>>());
}
