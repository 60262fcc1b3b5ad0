//! `cosched slurm serve` on a real local cluster of four nodes
//! (`scripts/slurm-local.sh`, two CPUs and 1000 MB of RealMemory each):
//! the site constraints every policy honours (`--exclusive`, a sharing
//! scope, `--mem`, multi-node jobs) and the policies that act on running
//! jobs through Slurm's own suspend and resume (surpass, timeshare), as the
//! controller and its job completion log record them. Each test starts
//! its cluster and stops it; they skip with a printed reason when Slurm or
//! root is missing. One cluster at a time: they share the host's cores.

use std::process::Command;
use std::time::{Duration, Instant};

mod common;
#[macro_use]
#[path = "common/slurm.rs"]
mod slurm_cluster;
use slurm_cluster::{hosts, report, Cluster, Rec, Spec};

const NODE_MEM_MB: u64 = 1000;

/// Four nodes of two CPUs and 1000 MB; serve woken by no epilog.
fn cluster() -> Cluster {
    Cluster::with(Spec { nodes: 4, cpus: Some(2), mem_mb: Some(NODE_MEM_MB), hook_at: "none", user: None })
}

/// With a policy that fills nodes (`noplan`): two `--exclusive` jobs never
/// overlap another job on their nodes; jobs of `--mem=600` on nodes of
/// 1000 MB never run two on a node at once (memory is not a consumable of
/// this cluster's CR_Core, so only cosched keeps them apart); a job of
/// `-N 2` starts on two nodes, and its decision names both.
#[test]
fn exclusive_jobs_run_alone_memory_is_never_oversubscribed_and_a_two_node_job_gets_two_nodes() {
    need_slurm!(no_kernel);
    let c = cluster();
    let mut ids = vec![c.sleep("x1", 3.0, &["-n1", "--exclusive"]), c.sleep("x2", 3.0, &["-n1", "--exclusive"])];
    for k in 0..3 {
        ids.push(c.sleep(&format!("m{k}"), 3.0, &["-n1", "--mem=600"]));
    }
    for k in 0..3 {
        ids.push(c.sleep(&format!("p{k}"), 3.0, &["-n1"]));
    }
    ids.push(c.sleep("two", 3.0, &["-N2", "-n2"]));
    let r = report(c.serve("noplan", &[]), Duration::from_secs(90));
    let recs = c.records();
    assert_eq!(recs.iter().filter(|r| ids.contains(&r.id)).count(), ids.len(), "{recs:?}");
    for x in recs.iter().filter(|r| r.name.starts_with('x')) {
        let beside: Vec<&Rec> = recs.iter().filter(|o| x.shares_with(o)).collect();
        assert!(beside.is_empty(), "exclusive {x:?} shared its node with {beside:?}");
    }
    let mem: Vec<&Rec> = recs.iter().filter(|r| r.name.starts_with('m')).collect();
    for (i, a) in mem.iter().enumerate() {
        for b in &mem[i + 1..] {
            assert!(!a.shares_with(b), "{a:?} and {b:?} hold 1200 MB of a {NODE_MEM_MB} MB node at once");
        }
    }
    let two = recs.iter().find(|r| r.name == "two").unwrap();
    assert_eq!(two.nodes.len(), 2, "{two:?}");
    let released = r["released"].as_array().unwrap();
    let rel = released.iter().find(|x| x["job"].as_u64() == Some(two.id)).unwrap();
    assert_eq!(hosts(rel["node"].as_str().unwrap()), two.nodes, "{rel}");
}

/// Under `--share-scope user`, jobs of root and of `nobody` (`sbatch
/// --uid`) never run on one node at once, though `noplan` would fill the
/// first node with the first two jobs of either.
#[test]
fn under_scope_user_jobs_of_two_users_never_share_a_node() {
    need_slurm!(no_kernel);
    let c = cluster();
    for k in 0..3 {
        c.sleep(&format!("root{k}"), 3.0, &["-n1"]);
        c.sleep(&format!("nobody{k}"), 3.0, &["-n1", "--uid=nobody", "--gid=nogroup"]);
    }
    report(c.serve("noplan", &["--share-scope", "user"]), Duration::from_secs(60));
    let recs = c.records();
    assert_eq!(recs.len(), 6, "{recs:?}");
    assert!(recs.iter().any(|r| r.uid != 0), "nobody's jobs ran as root: {recs:?}");
    for a in &recs {
        for b in recs.iter().filter(|b| a.shares_with(b)) {
            assert_eq!(a.uid, b.uid, "{a:?} and {b:?} shared a node");
        }
    }
    // Jobs of one user did share: the scope keeps users apart, not jobs.
    assert!(recs.iter().any(|a| recs.iter().any(|b| a.shares_with(b))), "{recs:?}");
}

/// `surpass`: a job that finds its node full suspends the earlier one
/// through Slurm (`scontrol suspend`: the controller shows it SUSPENDED
/// while the later job runs on its cores), which is resumed when the later
/// job ends; its AdminComment then holds cosched's signed resumption.
#[test]
fn surpass_suspends_the_earlier_job_through_slurm_and_resumes_it() {
    need_slurm!(no_kernel);
    let c = cluster();
    let serve = c.serve("surpass", &[]);
    let a = c.sleep("a", 8.0, &["-c2"]);
    let began = Instant::now();
    while c.job_state(a) != "RUNNING" {
        assert!(began.elapsed() < Duration::from_secs(20), "a never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    let b = c.sleep("b", 3.0, &["-c2"]);
    let mut seen_suspended = false;
    while began.elapsed() < Duration::from_secs(30) && !seen_suspended {
        seen_suspended = c.job_state(a) == "SUSPENDED" && c.job_state(b) == "RUNNING";
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(seen_suspended, "a was never suspended with b running");
    // A suspended job's mark still verifies: status reads it with serve's key.
    let status = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["slurm", "status", "--json", "--db"])
        .arg(c.dir.path().join("s.db"))
        .env("SLURM_CONF", &c.conf)
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let row = status["jobs"].as_array().unwrap().iter().find(|j| j["id"].as_u64() == Some(a)).unwrap().clone();
    let decision = row["decision"].as_str().unwrap();
    assert!(decision.contains(&format!("beside={b}")) && decision.contains("act=suspend") && decision.ends_with("(verified)"), "{row}");
    let r = report(serve, Duration::from_secs(60));
    let acted: Vec<(u64, String)> = r["acted"].as_array().unwrap().iter().map(|x| (x["job"].as_u64().unwrap(), x["act"].as_str().unwrap().to_string())).collect();
    assert_eq!(acted, [(a, "suspend".to_string()), (a, "resume".to_string())]);
    let recs = c.records();
    let (ra, rb) = (recs.iter().find(|r| r.id == a).unwrap(), recs.iter().find(|r| r.id == b).unwrap());
    assert_eq!(ra.nodes, rb.nodes, "b took a's node");
    assert!(ra.end >= rb.end, "a ended after b: {ra:?} {rb:?}");
}

/// `timeshare` with turns of one second: two jobs of two CPUs each on one
/// node take turns: the second is parked (held, placed) and released when
/// the first is suspended, then each is suspended and resumed in turn;
/// a quantum below a second is refused with exit code 2.
#[test]
fn timeshare_alternates_two_jobs_with_turns_of_a_second() {
    need_slurm!(no_kernel);
    let c = cluster();
    let refused = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["slurm", "serve", "--policy", "timeshare:quantum=0.1", "--db"])
        .arg(c.dir.path().join("s.db"))
        .env("SLURM_CONF", &c.conf)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("shorter than the Slurm engine's turns"));
    let a = c.sleep("a", 8.0, &["-c2"]);
    let b = c.sleep("b", 8.0, &["-c2"]);
    let r = report(c.serve("timeshare:quantum=1", &[]), Duration::from_secs(60));
    let acted: Vec<(u64, String)> = r["acted"].as_array().unwrap().iter().map(|x| (x["job"].as_u64().unwrap(), x["act"].as_str().unwrap().to_string())).collect();
    assert_eq!(acted.first(), Some(&(b, "park".to_string())), "{acted:?}");
    for job in [a, b] {
        assert!(acted.iter().any(|x| *x == (job, "suspend".to_string())), "{job} never suspended: {acted:?}");
    }
    assert!(acted.iter().any(|x| *x == (a, "resume".to_string())), "{acted:?}");
    // Turns: the suspensions alternate between the two jobs.
    let suspends: Vec<u64> = acted.iter().filter(|x| x.1 == "suspend").map(|x| x.0).collect();
    assert!(suspends.windows(2).all(|w| w[0] != w[1]), "{suspends:?}");
    let recs = c.records();
    let (ra, rb) = (recs.iter().find(|r| r.id == a).unwrap(), recs.iter().find(|r| r.id == b).unwrap());
    assert_eq!(ra.nodes, rb.nodes);
    assert!(rb.start < ra.end, "b began before a ended: {ra:?} {rb:?}");
}
