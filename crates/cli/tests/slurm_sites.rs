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
    Cluster::with(Spec { nodes: 4, cpus: Some(2), mem_mb: Some(NODE_MEM_MB), hook_at: "none", ..Spec::default() })
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
/// job ends; its AdminComment then holds cosched's signed resumption, and
/// Slurm's record counts the time it spent suspended.
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
    // Slurm's own account of the suspension: the controller's run time of
    // a (squeue's TimeUsed, which leaves suspended time out) falls short of
    // its wall time by it (sacct's Suspended column needs slurmdbd, which
    // the local cluster lacks). b ran 3 s while a was suspended.
    let used = c.slurm("squeue", &["-h", "-t", "all", "-j", &a.to_string(), "-o", "%M"]);
    let used_s = used.trim().split(':').try_fold(0i64, |acc, x| x.parse::<i64>().map(|v| acc * 60 + v)).unwrap_or_else(|e| panic!("TimeUsed `{used}`: {e}"));
    assert!(ra.end - ra.start - used_s >= 1, "a suspended for {} s by Slurm's record (wall {} s, run {used_s} s)", ra.end - ra.start - used_s, ra.end - ra.start);
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

/// Each job's AdminComment as the controller holds it, ended jobs too
/// (kept for MinJobAge).
fn admin_comments(c: &Cluster) -> std::collections::BTreeMap<u64, String> {
    let v: serde_json::Value = serde_json::from_str(&c.slurm("squeue", &["--json", "--states=all"])).unwrap();
    v["jobs"].as_array().unwrap().iter().map(|j| (j["job_id"].as_u64().unwrap(), j["admin_comment"].as_str().unwrap_or("").to_string())).collect()
}

/// GPUs as Slurm's GRES (slurm-local.sh's COSCHED_SLURM_GPUS): on two
/// nodes of 2 CPUs and 1 GPU, four `--gres=gpu:1` jobs submitted before two
/// CPU jobs under `noplan`, which fills a node core by core (it would put
/// two GPU jobs on the first node). cosched never places
/// more GPU jobs on a node than it has GPUs: not in its decisions (each
/// release with the jobs beside it), not in Slurm's record; CPU jobs still
/// share nodes beside GPU jobs; each GPU job's AdminComment names the unit
/// it holds; and `slurm status` shows the GPU jobs, and only them, in the
/// node's accelerator pool.
#[test]
fn gpu_jobs_never_outnumber_a_nodes_gpus_and_cpu_jobs_share_beside_them() {
    need_slurm!(no_kernel);
    const GPUS: usize = 1;
    let c = Cluster::with(Spec { nodes: 2, cpus: Some(2), gpus: Some(GPUS as u32), hook_at: "none", ..Spec::default() });
    let gpu: Vec<u64> = (0..4).map(|k| c.sleep(&format!("g{k}"), 3.0, &["-n1", "--gres=gpu:1"])).collect();
    let cpu: Vec<u64> = (0..2).map(|k| c.sleep(&format!("p{k}"), 3.0, &["-n1"])).collect();
    let serve = c.serve("noplan", &[]);
    // While they run, the accelerator pools `slurm status` shows.
    let (mut in_pool, began) = (std::collections::BTreeSet::new(), Instant::now());
    while in_pool.len() < gpu.len() && began.elapsed() < Duration::from_secs(40) {
        let out = c.cosched_bare(&c.dir.path().join("s.db"), &["status", "--json"]).output().unwrap();
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        for n in s["nodes"].as_array().into_iter().flatten() {
            let pools = n["accelerators"].as_array().unwrap();
            assert_eq!(pools.len(), 1, "{n}");
            let (units, held) = (pools[0]["units"].as_u64().unwrap(), pools[0]["held"].as_u64().unwrap());
            assert_eq!((pools[0]["kind"].as_str(), units), (Some("gpu"), GPUS as u64), "{n}");
            assert!(held <= units, "more GPUs held than the node has: {n}");
            for j in pools[0]["jobs"].as_array().unwrap() {
                assert!(gpu.contains(&j.as_u64().unwrap()), "a CPU job in the accelerator pool: {n}");
                in_pool.insert(j.as_u64().unwrap());
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let r = report(serve, Duration::from_secs(90));
    // cosched's own decisions: the GPU jobs placed on the node at each release.
    for rel in r["released"].as_array().unwrap() {
        let job = rel["job"].as_u64().unwrap();
        let beside: Vec<u64> = rel["beside"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).collect();
        let on_gpus = beside.iter().chain([job].iter()).filter(|j| gpu.contains(j)).count();
        assert!(on_gpus <= GPUS || !gpu.contains(&job), "{job} released onto {} beside {on_gpus} GPU jobs: {rel}", rel["node"]);
    }
    let recs = c.records();
    let all: Vec<u64> = gpu.iter().chain(&cpu).copied().collect();
    for id in &all {
        let states: Vec<&str> = recs.iter().filter(|r| r.id == *id).map(|r| r.state.as_str()).collect();
        assert_eq!(states, ["COMPLETED"], "job {id}: {recs:?}");
    }
    let g: Vec<&Rec> = recs.iter().filter(|r| gpu.contains(&r.id)).collect();
    for a in &g {
        let at_once = g.iter().filter(|o| o.nodes == a.nodes && o.start <= a.start && a.start < o.end).count();
        assert!(at_once <= GPUS, "{at_once} GPU jobs on {:?} at {}: {g:?}", a.nodes, a.start);
    }
    let p: Vec<&Rec> = recs.iter().filter(|r| cpu.contains(&r.id)).collect();
    assert!(p.iter().any(|x| g.iter().any(|y| x.shares_with(y))), "no CPU job ran beside a GPU job: {recs:?}");
    assert_eq!(in_pool.len(), gpu.len(), "GPU jobs never seen in a pool: {in_pool:?} of {gpu:?}");
    let marks = admin_comments(&c);
    for id in &all {
        let m = &marks[id];
        assert!(m.starts_with("cosched;policy=noplan;"), "{id}: {m}");
        assert_eq!(m.contains(";gres=gpu:1;"), gpu.contains(id), "{id}: {m}");
    }
}
