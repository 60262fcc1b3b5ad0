//! `cosched slurm serve` on a real local cluster of four nodes
//! (`scripts/slurm-local.sh`, two CPUs and 1000 MB of RealMemory each):
//! the site constraints every policy honours (`--exclusive`, a sharing
//! scope, `--mem`, multi-node jobs) and the policies that act on running
//! jobs through Slurm's own suspend and resume (surpass, timeshare), as the
//! controller and its job completion log record them. Each test starts
//! its cluster and stops it; they skip with a printed reason when Slurm or
//! root is missing. One cluster at a time: they share the host's cores.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_CLUSTER: Mutex<()> = Mutex::new(());

const NODE_MEM_MB: u64 = 1000;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Why these tests cannot run here, if they cannot.
fn missing() -> Option<String> {
    for c in ["munged", "slurmctld", "slurmd", "sbatch", "sacct"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {c}")]).output().is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("{c} is not installed (./install.sh --deps-only installs Slurm)"));
        }
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|u| u.split_whitespace().nth(1).map(str::to_string));
    if euid.as_deref() != Some("0") {
        return Some("slurmd must run as root".into());
    }
    None
}

macro_rules! need_slurm {
    () => {
        if let Some(why) = missing() {
            cosched_testkit::skip(cosched_testkit::Lacks::Installed, &why);
            return;
        }
    };
}

/// A running local cluster of four nodes; stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    _one: std::sync::MutexGuard<'static, ()>,
}

/// One job as the completion log records it.
#[derive(Debug, Clone)]
struct Rec {
    id: u64,
    name: String,
    uid: u32,
    nodes: Vec<String>,
    start: i64,
    end: i64,
}

impl Rec {
    /// Ran on a common node at a common time (whole seconds: touching
    /// intervals are not an overlap).
    fn shares_with(&self, o: &Rec) -> bool {
        self.id != o.id && self.start < o.end && o.start < self.end && self.nodes.iter().any(|n| o.nodes.contains(n))
    }
}

impl Cluster {
    fn start() -> Cluster {
        let one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::Builder::new().prefix("cosched-sites-").tempdir_in("/tmp").unwrap();
        let c = Cluster { conf: dir.path().join("slurm/etc/slurm.conf"), dir, _one: one };
        let out = c.script("start");
        assert!(out.status.success(), "slurm-local.sh start: {}", String::from_utf8_lossy(&out.stderr));
        c
    }

    fn script(&self, verb: &str) -> Output {
        // Ports of their own (31000-31999), apart from tests/slurm.rs's.
        let port = 31_000 + (std::process::id() % 450) * 2;
        Command::new(repo().join("scripts/slurm-local.sh"))
            .arg(verb)
            .env("COSCHED_SLURM_DIR", self.dir.path().join("slurm"))
            .env("COSCHED_SLURM_PORT", port.to_string())
            .env("COSCHED_SLURM_NODES", "4")
            .env("COSCHED_SLURM_CPUS", "2")
            .env("COSCHED_SLURM_MEM", NODE_MEM_MB.to_string())
            .env("COSCHED_SLURM_HOOK_AT", "none")
            .output()
            .unwrap()
    }

    fn slurm(&self, program: &str, args: &[&str]) -> String {
        let out = Command::new(program).args(args).env("SLURM_CONF", &self.conf).env("TZ", "UTC").output().unwrap();
        assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `sbatch` of `sleep SECS` named `name` with `args`; its id.
    fn sleep(&self, name: &str, secs: u32, args: &[&str]) -> u64 {
        let wrap = format!("sleep {secs}");
        let mut all = vec!["--parsable", "-p", "cosched", "-J", name, "-o", "/dev/null", "--chdir=/tmp"];
        all.extend(args);
        all.extend(["--wrap", &wrap]);
        self.slurm("sbatch", &all).trim().split(';').next().unwrap().parse().unwrap()
    }

    /// `cosched slurm serve --policy POLICY ARGS`, its JSON report on stdout.
    fn serve(&self, policy: &str, args: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_cosched"))
            .args(["slurm", "serve", "--policy", policy, "--interval", "0.5", "--exit-idle", "2", "--json", "--db"])
            .arg(self.dir.path().join("s.db"))
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Each finished job as the completion log records it.
    fn records(&self) -> Vec<Rec> {
        let out = self.slurm("sacct", &["--completion", "-X", "-n", "-P", "-a", "-o", "JobIDRaw,JobName,UID,NodeList,Start,End", "-S", "now-1hour"]);
        out.lines()
            .map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                Rec { id: f[0].parse().unwrap(), name: f[1].into(), uid: f[2].parse().unwrap_or(0), nodes: hosts(f[3]), start: unix(f[4]), end: unix(f[5]) }
            })
            .collect()
    }

    /// Slurm's state of `job` now (`RUNNING`, `SUSPENDED`, ...).
    fn state(&self, job: u64) -> String {
        self.slurm("squeue", &["-h", "-j", &job.to_string(), "-o", "%T"]).trim().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let out = self.script("stop");
        if !out.status.success() {
            eprintln!("slurm-local.sh stop: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// `c[1-2,4]` or `c1,c3` as names.
fn hosts(s: &str) -> Vec<String> {
    let s = s.trim();
    if let Some((stem, rest)) = s.split_once('[') {
        return rest
            .trim_end_matches(']')
            .split(',')
            .flat_map(|r| {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                (a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()).map(move |k| format!("{stem}{k}"))
            })
            .collect();
    }
    s.split(',').filter(|x| !x.is_empty() && *x != "(null)").map(str::to_string).collect()
}

fn unix(s: &str) -> i64 {
    let out = Command::new("date").args(["-u", "-d", s, "+%s"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// Waits for serve to exit (at most `limit`) and returns its report.
fn report(mut child: Child, limit: Duration) -> serde_json::Value {
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("serve still running after {limit:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "serve: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// With a policy that fills nodes (`noplan`): two `--exclusive` jobs never
/// overlap another job on their nodes; jobs of `--mem=600` on nodes of
/// 1000 MB never run two on a node at once (memory is not a consumable of
/// this cluster's CR_Core, so only cosched keeps them apart); a job of
/// `-N 2` starts on two nodes, and its decision names both.
#[test]
fn exclusive_jobs_run_alone_memory_is_never_oversubscribed_and_a_two_node_job_gets_two_nodes() {
    need_slurm!();
    let c = Cluster::start();
    let mut ids = vec![c.sleep("x1", 3, &["-n1", "--exclusive"]), c.sleep("x2", 3, &["-n1", "--exclusive"])];
    for k in 0..3 {
        ids.push(c.sleep(&format!("m{k}"), 3, &["-n1", "--mem=600"]));
    }
    for k in 0..3 {
        ids.push(c.sleep(&format!("p{k}"), 3, &["-n1"]));
    }
    ids.push(c.sleep("two", 3, &["-N2", "-n2"]));
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
    need_slurm!();
    let c = Cluster::start();
    for k in 0..3 {
        c.sleep(&format!("root{k}"), 3, &["-n1"]);
        c.sleep(&format!("nobody{k}"), 3, &["-n1", "--uid=nobody", "--gid=nogroup"]);
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
    need_slurm!();
    let c = Cluster::start();
    let serve = c.serve("surpass", &[]);
    let a = c.sleep("a", 8, &["-c2"]);
    let began = Instant::now();
    while c.state(a) != "RUNNING" {
        assert!(began.elapsed() < Duration::from_secs(20), "a never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    let b = c.sleep("b", 3, &["-c2"]);
    let mut seen_suspended = false;
    while began.elapsed() < Duration::from_secs(30) && !seen_suspended {
        seen_suspended = c.state(a) == "SUSPENDED" && c.state(b) == "RUNNING";
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
    need_slurm!();
    let c = Cluster::start();
    let refused = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["slurm", "serve", "--policy", "timeshare:quantum=0.1", "--db"])
        .arg(c.dir.path().join("s.db"))
        .env("SLURM_CONF", &c.conf)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("shorter than the Slurm engine's turns"));
    let a = c.sleep("a", 8, &["-c2"]);
    let b = c.sleep("b", 8, &["-c2"]);
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
