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

/// Submits `n` jobs of `sleep 0.1` from `threads` threads; their ids.
fn submit_many(c: &Cluster, n: usize, threads: usize) -> Vec<u64> {
    std::thread::scope(|s| {
        let hands: Vec<_> = (0..threads).map(|t| s.spawn(move || (t..n).step_by(threads).map(|k| c.sleep(&format!("q{k}"), 0.1, &["-n1"])).collect::<Vec<_>>())).collect();
        hands.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

/// One entry of serve's round log (`round_log` of `serve --json`).
#[derive(Debug, Clone)]
struct Seen {
    round: u64,
    /// Unix seconds: the reading began, and it ended.
    unix: f64,
    read: f64,
    busy: u64,
    /// Waiting jobs a free slot existed for that the round did not release.
    passed: Vec<u64>,
}

fn round_log(r: &serde_json::Value) -> Vec<Seen> {
    let num = |x: &serde_json::Value| x.as_f64().unwrap_or_else(|| panic!("not a number: {x}"));
    r["round_log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| Seen {
            round: num(&e["round"]) as u64,
            unix: num(&e["unix"]),
            read: num(&e["read"]),
            busy: num(&e["busy"]) as u64,
            passed: e["passed"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect(),
        })
        .collect()
}

/// Jobs held more than `bound` rounds after the first round that could
/// have started them (a free slot existed for them and the round passed
/// them over), as (job, that round, the round that released it, if any).
fn held_past(log: &[Seen], released: &[(u64, u64)], bound: u64) -> Vec<(u64, u64, Option<u64>)> {
    let mut first: Vec<(u64, u64)> = Vec::new();
    for s in log {
        for &j in &s.passed {
            if !first.iter().any(|f| f.0 == j) {
                first.push((j, s.round));
            }
        }
    }
    first
        .into_iter()
        .map(|(j, at)| (j, at, released.iter().find(|r| r.0 == j).map(|r| r.1)))
        .filter(|&(_, at, rel)| rel.is_none_or(|rel| rel > at + bound))
        .collect()
}

/// Rounds whose reading counted more busy CPUs than Slurm's own record of
/// one-CPU jobs allows: the jobs that may have held a core while the
/// round read (started by its end, ended no earlier than its beginning; a
/// second of slack each way, as Slurm records whole seconds), and the
/// jobs cosched released before it that Slurm started later. A serve that
/// saw cores busy that Slurm had freed would hold jobs beside free cores
/// while its round log said no slot was free. As (round, serve's count, the most Slurm allows).
fn overcounted(log: &[Seen], recs: &[Rec], released: &[(u64, f64)]) -> Vec<(u64, u64, u64)> {
    log.iter()
        .filter_map(|s| {
            let running = recs.iter().filter(|r| r.start as f64 <= s.read + 1.0 && r.end as f64 + 2.0 >= s.unix).count();
            let mut pending: Vec<u64> = released
                .iter()
                .filter(|&&(j, at)| at < s.unix && recs.iter().find(|r| r.id == j).is_none_or(|r| r.start as f64 > s.read + 1.0))
                .map(|r| r.0)
                .collect();
            pending.sort();
            pending.dedup();
            let most = (running + pending.len()) as u64;
            (s.busy > most).then_some((s.round, s.busy, most))
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
/// deciding: every job runs exactly once, none is lost or stays held, and
/// none is held more than two rounds after the round that could first
/// start it (serve's round log: a free slot existed for it under the site
/// constraints), counted in rounds, so a loaded host's slow rounds do not
/// fail it; and no round saw a core busy that Slurm's record says was
/// free, so "no free slot" in the log is Slurm's truth, not a stale view.
/// Prints the figures docs/slurm.md records: wall time, rounds, round
/// times, the controller's RPCs per round by type (sdiag).
#[test]
fn five_hundred_queued_jobs_on_eight_nodes_all_run_once_and_none_is_held_two_rounds_past_a_free_slot() {
    need_slurm!(no_kernel);
    let c = Cluster::with(Spec { nodes: 8, cpus: Some(2), ..Spec::default() });
    c.slurm("sdiag", &["-r"]);
    let began = Instant::now();
    let serving = c.serve("noplan", &["--interval", "0.5"]);
    let submitted = Instant::now();
    let ids = submit_many(&c, 500, 4);
    let submit_s = submitted.elapsed();
    let r = report(serving, Duration::from_secs(170));
    let wall = began.elapsed();
    let recs = c.records();
    let log = round_log(&r);
    let rel = r["released"].as_array().unwrap();
    let released: Vec<(u64, u64)> = rel.iter().map(|x| (x["job"].as_u64().unwrap(), x["round"].as_u64().unwrap())).collect();
    let released_at: Vec<(u64, f64)> = rel.iter().map(|x| (x["job"].as_u64().unwrap(), x["unix"].as_f64().unwrap())).collect();
    let rounds = r["rounds"].as_u64().unwrap_or(0).max(1);
    let mut round_s: Vec<f64> = r["round_s"].as_array().unwrap().iter().filter_map(|x| x.as_f64()).collect();
    round_s.sort_by(f64::total_cmp);
    let pct = |p: f64| round_s.get(((round_s.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0);
    let rpcs: Vec<String> = rpcs_by_type(&c).iter().map(|(t, n)| format!("{t} {:.2}", *n as f64 / rounds as f64)).collect();
    let passing = log.iter().filter(|s| !s.passed.is_empty()).count();
    eprintln!(
        "500 jobs on 8 nodes: submitted in {submit_s:.1?}, all done in {wall:.1?} (2 s of it serve's idle exit), {rounds} rounds, round p50 {:.3} s p99 {:.3} s, {passing} rounds passed over a job a free slot existed for; RPCs per round (all clients, submissions and slurmd's included): {}",
        pct(0.5),
        pct(0.99),
        rpcs.join(", ")
    );
    completed_once(&recs, &ids);
    assert!(c.held().is_empty());
    assert_eq!(released.len(), 500, "released once each");
    assert!(log.windows(2).all(|w| w[0].round < w[1].round) && log.len() as u64 <= rounds, "{log:?}");
    let late = held_past(&log, &released, 2);
    assert!(late.is_empty(), "held more than two rounds after a free slot existed for them (job, round it could start, round released): {late:?}");
    let stale = overcounted(&log, &recs, &released_at);
    assert!(stale.is_empty(), "rounds that saw cores busy Slurm had freed (round, busy, most Slurm allows): {stale:?}");
}

#[test]
fn a_job_passed_over_is_late_only_past_the_bound_and_unreleased_is_late() {
    let seen = |round: u64, passed: &[u64]| Seen { round, unix: 0.0, read: 0.0, busy: 0, passed: passed.to_vec() };
    // Job 7 could start in round 2 (passed over in 2 and 3), released in 4: two rounds, on time.
    let log = [seen(1, &[]), seen(2, &[7]), seen(3, &[7, 8]), seen(4, &[8]), seen(5, &[8])];
    assert!(held_past(&log, &[(7, 4), (8, 5)], 2).is_empty());
    // Job 8, passed over from round 3, released in 6: three rounds late; job 9 never.
    let log = [seen(3, &[8]), seen(4, &[8, 9]), seen(5, &[8])];
    assert_eq!(held_past(&log, &[(8, 6)], 2), [(8, 3, Some(6)), (9, 4, None)]);
}

#[test]
fn a_round_counting_a_core_slurm_had_freed_is_overcounted_and_a_pending_release_is_not() {
    let rec = |id: u64, start: i64, end: i64| Rec { id, name: String::new(), state: "COMPLETED".into(), uid: 0, nodes: vec!["c1".into()], start, end };
    let seen = |round: u64, unix: f64, busy: u64| Seen { round, unix, read: unix + 0.2, busy, passed: vec![] };
    // Job 1 ran [10, 12); job 2, released at 11.5, started at 20.
    let recs = [rec(1, 10, 12), rec(2, 20, 21)];
    let released = [(1, 9.5), (2, 11.5)];
    // At 11: job 1 runs (busy 1 is right; 2 is not: job 2 was not yet released).
    assert!(overcounted(&[seen(1, 11.0, 1)], &recs, &released).is_empty());
    assert_eq!(overcounted(&[seen(1, 11.0, 2)], &recs, &released), [(1, 2, 1)]);
    // At 13.5 job 1 may still be ending (whole seconds) and job 2 is released and pending.
    assert!(overcounted(&[seen(2, 13.5, 2)], &recs, &released).is_empty());
    // At 16 job 1 is long over: only job 2 holds a core.
    assert_eq!(overcounted(&[seen(3, 16.0, 2)], &recs, &released), [(3, 2, 1)]);
}
