//! `cosched slurm` against a real Slurm cluster on this host
//! (`scripts/slurm-local.sh`): the policy's co-location as Slurm's own
//! accounting records it, and the faults of issue 15 (the controller
//! restarted, a node drained, a job cancelled by its user, cosched killed
//! and restarted). Each test starts its cluster and stops it, leaving no
//! process and no directory; they skip with a printed reason when Slurm or
//! root is missing. One cluster at a time: they share the host's cores.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cosched_store::{CampaignKind, CampaignStatus, PairRunRecord, Store};

mod common;
use common::prov;

static ONE_CLUSTER: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn kernel() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel")
}

/// Why these tests cannot run here, if they cannot.
fn missing() -> Option<String> {
    for c in ["munged", "slurmctld", "slurmd", "sbatch", "sacct"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {c}")]).output().is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("{c} is not installed (./install.sh --deps-only installs Slurm)"));
        }
    }
    // The effective uid: the second field of /proc/self/status's `Uid:` line.
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|u| u.split_whitespace().nth(1).map(str::to_string));
    if euid.as_deref() != Some("0") {
        return Some("slurmd must run as root".into());
    }
    if !kernel().is_file() {
        return Some(format!("{} is not built (cargo build --release)", kernel().display()));
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

/// A running local cluster; stopped (every daemon, its directory) on drop.
struct Cluster {
    dir: tempfile::TempDir,
    nodes: u32,
    conf: PathBuf,
    /// SlurmUser (slurm-local.sh's COSCHED_SLURM_USER); `None`: root.
    user: Option<&'static str>,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    fn start() -> Cluster {
        Cluster::with_nodes(1)
    }

    /// `nodes` slurmd on this host (they share its CPUs).
    fn with_nodes(nodes: u32) -> Cluster {
        let one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let c = Cluster { conf: dir.path().join("slurm/etc/slurm.conf"), dir, nodes, user: None, _one: one };
        let out = c.script("start");
        assert!(out.status.success(), "slurm-local.sh start: {}", String::from_utf8_lossy(&out.stderr));
        c
    }

    /// A cluster whose slurmctld runs as `user`, as on a site.
    fn as_user(nodes: u32, user: &'static str) -> Cluster {
        let one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        // SlurmUser and the service user reach the cluster's files through it.
        sh(&format!("chmod 0755 '{}'", dir.path().display()));
        let c = Cluster { conf: dir.path().join("slurm/etc/slurm.conf"), dir, nodes, user: Some(user), _one: one };
        let out = c.script("start");
        assert!(out.status.success(), "slurm-local.sh start: {}", String::from_utf8_lossy(&out.stderr));
        c
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("slurm")
    }

    fn script(&self, verb: &str) -> Output {
        // A port of its own, so a cluster the user runs is not disturbed.
        let port = 20_000 + (std::process::id() % 10_000) * 2;
        Command::new(repo().join("scripts/slurm-local.sh"))
            .arg(verb)
            .env("COSCHED_SLURM_DIR", self.state())
            .env("COSCHED_SLURM_PORT", port.to_string())
            .env("COSCHED_SLURM_NODES", self.nodes.to_string())
            // The epilog wakes serve through this binary's `slurm hook`.
            .env("COSCHED_BIN", env!("CARGO_BIN_EXE_cosched"))
            .env("COSCHED_SLURM_USER", self.user.unwrap_or("root"))
            .output()
            .unwrap()
    }

    fn slurm(&self, program: &str, args: &[&str]) -> String {
        let out = Command::new(program).args(args).env("SLURM_CONF", &self.conf).env("TZ", "UTC").output().unwrap();
        assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Submits `kernel ARGS` as a batch job tied to workload job `name`.
    fn submit(&self, name: &str, kernel_args: &str) -> u64 {
        let script = self.dir.path().join(format!("{name}.sh"));
        std::fs::write(&script, format!("#!/bin/sh\nexec {} {kernel_args} --json\n", kernel().display())).unwrap();
        let out = self.slurm(
            "sbatch",
            &[
                "--parsable",
                "-p",
                "cosched",
                "-n1",
                "-J",
                name,
                &format!("--comment=cosched:{name}"),
                "-o",
                &self.dir.path().join(format!("{name}-%j.out")).to_string_lossy(),
                &script.to_string_lossy(),
            ],
        );
        out.trim().split(';').next().unwrap().parse().unwrap()
    }

    fn cosched(&self, db: &Path, wl: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
        c.args(["slurm"]).args(args).arg("--workload").arg(wl).arg("--db").arg(db);
        c.env("SLURM_CONF", &self.conf).env("COSCHED_KERNEL", kernel());
        // Where this cluster's epilog wakes serve (`slurm-local.sh env`).
        c.env("COSCHED_SLURM_HOOK", format!("cosched-slurm:{}", self.state().display()));
        c
    }

    /// Each job's (name, state, node, start, end) as sacct records it.
    fn sacct(&self) -> Vec<(u64, String, String, String, i64, i64)> {
        // --completion: the local cluster keeps no accounting database; its
        // job completion log (jobcomp/filetxt) is what sacct reads.
        let out = self.slurm("sacct", &["--completion", "-X", "-n", "-P", "-a", "-o", "JobIDRaw,JobName,State,NodeList,Start,End", "-S", "now-1hour"]);
        out.lines()
            .map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                let t = |s: &str| cosched_slurm_time(s);
                (f[0].parse().unwrap(), f[1].to_string(), f[2].to_string(), f[3].to_string(), t(f[4]), t(f[5]))
            })
            .collect()
    }

    /// Jobs held for cosched: priority 0 with the submission rule's mark,
    /// which may name the program (read as JSON: job names here may hold
    /// newlines).
    fn held(&self) -> Vec<u64> {
        let v: serde_json::Value = serde_json::from_str(&self.slurm("squeue", &["--json"])).unwrap();
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| {
                let mark = j["admin_comment"].as_str().unwrap_or("");
                let held = mark == "cosched;held" || mark.starts_with("cosched;held;program=");
                j["priority"].as_u64() == Some(0) && held && j["job_state"] == "PENDING"
            })
            .map(|j| j["job_id"].as_u64().unwrap())
            .collect()
    }

    /// Waits until no job of the cluster is pending or running.
    fn drained(&self, limit: Duration) {
        let began = Instant::now();
        while !self.slurm("squeue", &["-h", "-o", "%i"]).trim().is_empty() {
            assert!(began.elapsed() < limit, "jobs still queued after {limit:?}: {}", self.slurm("squeue", &[]));
            std::thread::sleep(Duration::from_millis(200));
        }
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

/// Slurm's `YYYY-MM-DDTHH:MM:SS` (UTC) as Unix seconds; `Unknown` as 0.
fn cosched_slurm_time(s: &str) -> i64 {
    let out = Command::new("date").args(["-u", "-d", s, "+%s"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// Two STREAM twins and two compute jobs; the store says the twins slow
/// each other 1.8x and every other pair not at all.
fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let wl = dir.join("twins.toml");
    std::fs::write(
        &wl,
        "name = \"slurm-twins\"\n[[pools]]\nname = \"host\"\ncores = 2\n\
         [[jobs]]\nname = \"s1\"\nkernel = \"stream\"\nwork = 1\n\
         [[jobs]]\nname = \"s2\"\nkernel = \"stream\"\nwork = 1\n\
         [[jobs]]\nname = \"c1\"\nkernel = \"compute\"\nwork = 1\n\
         [[jobs]]\nname = \"c2\"\nkernel = \"compute\"\nwork = 1\n",
    )
    .unwrap();
    let db = dir.join("s.db");
    let mut s = Store::open(&db).unwrap();
    let p = s.begin_campaign(CampaignKind::Pairs, "slurm-twins", "{}", &prov()).unwrap();
    let names = ["s1", "s2", "c1", "c2"];
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            let s_ab = if a.starts_with('s') && b.starts_with('s') { 1.8 } else { 1.0 };
            for repeat in 0..3 {
                s.add_pair_run(
                    p,
                    &PairRunRecord {
                        fg_job: a.to_string(),
                        bg_job: b.to_string(),
                        repeat,
                        fg_cpus: vec![0],
                        bg_cpus: vec![1],
                        shared_cpus: false,
                        fg_solo_s: 1.0,
                        fg_corun_s: s_ab,
                        bg_solo_s: 1.0,
                        bg_corun_s: s_ab,
                        fg_relaunches: 0,
                        bg_relaunches: 0,
                        fg_timing: "work-phase".into(),
                        bg_timing: "work-phase".into(),
                        regime: Default::default(),
                        level: None,
                    },
                )
                .unwrap();
            }
        }
    }
    s.finish_campaign(p, CampaignStatus::Done).unwrap();
    (wl, db)
}

/// Kernels of about 3 s each alone on a busy 2-core node (1-2 s on a quiet
/// one): whole-second accounting times must still show an overlap, which
/// jobs shorter than a second do not (a quiet CI node ran 1.3 s jobs in
/// under one second, and every interval collapsed to a point).
const STREAM: &str = "stream --work 900 --array-mib 32";
const COMPUTE: &str = "compute --work 120000";

/// Tenths of a second each: for the fault tests, which check which jobs
/// ran and how often, not when.
const SHORT: &str = "compute --work 3000";

fn submit_all(c: &Cluster) -> Vec<u64> {
    vec![c.submit("s1", STREAM), c.submit("s2", STREAM), c.submit("c1", COMPUTE), c.submit("c2", COMPUTE)]
}

fn submit_short(c: &Cluster) -> Vec<u64> {
    ["s1", "s2", "c1", "c2"].iter().map(|n| c.submit(n, SHORT)).collect()
}

fn serve(c: &Cluster, db: &Path, wl: &Path, policy: &str) -> serde_json::Value {
    let out = c
        .cosched(db, wl, &["serve", "--policy", policy, "--interval", "0.2", "--exit-idle", "1", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "serve: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Whether the two jobs' [start, end) intervals on one node intersect.
fn overlap(jobs: &[(u64, String, String, String, i64, i64)], a: u64, b: u64) -> bool {
    let find = |id: u64| jobs.iter().find(|j| j.0 == id).unwrap_or_else(|| panic!("job {id} not in sacct: {jobs:?}"));
    let (x, y) = (find(a), find(b));
    x.3 == y.3 && x.4 < y.5 && y.4 < x.5
}

#[test]
fn conflict_aware_keeps_stream_twins_apart_and_noplan_lets_them_share_a_node() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());

    let ids = submit_all(&c);
    let r = serve(&c, &db, &wl, "conflict-aware:threshold=50");
    assert_eq!(r["released"].as_array().unwrap().len(), 4, "{r}");
    // Job ends woke serve through the epilog's hook, not only its poll.
    assert!(r["woken"].as_u64().unwrap() >= 1, "{r}");
    let jobs = c.sacct();
    for id in &ids {
        let j = jobs.iter().find(|j| j.0 == *id).unwrap();
        assert_eq!(j.2, "COMPLETED", "{jobs:?}");
    }
    assert!(!overlap(&jobs, ids[0], ids[1]), "conflict-aware co-ran the stream twins: {jobs:?}");
    assert!(ids[2..].iter().any(|&k| overlap(&jobs, ids[0], k) || overlap(&jobs, ids[1], k)), "nothing shared the node: {jobs:?}");

    let ids = submit_all(&c);
    serve(&c, &db, &wl, "noplan");
    let jobs = c.sacct();
    assert!(overlap(&jobs, ids[0], ids[1]), "noplan kept the twins apart: {jobs:?}");

    // Every finished job is a sample of its node's run in the store.
    let store = Store::open(&db).unwrap();
    let runs: Vec<_> = store.runs().unwrap().into_iter().filter(|r| r.series.starts_with("slurm:cosched:")).collect();
    let recorded: usize = runs.iter().map(|r| store.run_jobs(r.id).unwrap().len()).sum();
    assert_eq!(recorded, 8);

    // Stopped, the cluster leaves no process and no directory behind.
    let state = c.state();
    drop(c);
    assert!(!state.exists());
    let marker = state.to_string_lossy().into_owned();
    assert_eq!(common::stray_processes(&[&marker]), Vec::<String>::new());
}

#[test]
fn over_two_nodes_conflict_aware_runs_the_twins_at_once_but_each_on_its_own_node() {
    need_slurm!();
    let c = Cluster::with_nodes(2);
    let (wl, db) = setup(c.dir.path());
    let ids = submit_all(&c);
    let r = serve(&c, &db, &wl, "conflict-aware:threshold=50");
    let placed: Vec<(u64, String)> =
        r["released"].as_array().unwrap().iter().map(|x| (x["job"].as_u64().unwrap(), x["node"].as_str().unwrap().to_string())).collect();
    // One round, node by node over the shared queue: c1 takes s1 and the
    // first compute job (s2 refused beside s1), c2 takes s2 and the other.
    let expect = [(ids[0], "c1"), (ids[2], "c1"), (ids[1], "c2"), (ids[3], "c2")];
    assert_eq!(placed, expect.map(|(j, n)| (j, n.to_string())), "{r}");
    let jobs = c.sacct();
    assert!(!overlap(&jobs, ids[0], ids[1]), "{jobs:?}");
    for id in &ids {
        assert_eq!(jobs.iter().find(|j| j.0 == *id).unwrap().2, "COMPLETED", "{jobs:?}");
    }
}

#[test]
fn a_job_released_onto_a_node_that_drained_is_held_again_and_runs_once_it_resumes() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());
    let node = c.slurm("sinfo", &["-h", "-N", "-p", "cosched", "-o", "%N"]).trim().to_string();
    let id = c.submit("c1", SHORT);
    // As cosched releases: a node list, then the hold lifted, but the node
    // drains in between.
    c.slurm("scontrol", &["update", &format!("JobId={id}"), &format!("ReqNodeList={node}")]);
    c.slurm("scontrol", &["update", &format!("NodeName={node}"), "State=DRAIN", "Reason=test"]);
    c.slurm("scontrol", &["release", &id.to_string()]);
    let out = c.cosched(&db, &wl, &["serve", "--policy", "noplan", "--interval", "0.2", "--exit-idle", "1", "--json"]);
    let mut serving = spawn(out);
    let began = Instant::now();
    while c.held() != [id] {
        assert!(began.elapsed() < Duration::from_secs(20), "not held again: {}", c.slurm("scontrol", &["show", "job", "-o"]));
        std::thread::sleep(Duration::from_millis(100));
    }
    // Several rounds later, still held: nothing is released onto a drained node.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(c.held(), [id], "released onto a drained node");
    c.slurm("scontrol", &["update", &format!("NodeName={node}"), "State=RESUME"]);
    c.drained(Duration::from_secs(30));
    let status = serving.wait().unwrap();
    assert!(status.success());
    let jobs = c.sacct();
    assert_eq!(jobs.iter().filter(|j| j.0 == id).map(|j| j.2.as_str()).collect::<Vec<_>>(), ["COMPLETED"]);
}

fn spawn(mut c: Command) -> Child {
    c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
}

#[test]
fn a_job_cancelled_by_its_user_is_not_started_and_the_others_run() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());
    let ids = submit_short(&c);
    c.slurm("scancel", &[&ids[1].to_string()]);
    let r = serve(&c, &db, &wl, "exclusive");
    let released: Vec<u64> = r["released"].as_array().unwrap().iter().map(|x| x["job"].as_u64().unwrap()).collect();
    assert!(!released.contains(&ids[1]), "{r}");
    let jobs = c.sacct();
    let state = |id: u64| jobs.iter().find(|j| j.0 == id).unwrap().2.clone();
    assert!(state(ids[1]).starts_with("CANCELLED"), "{jobs:?}");
    for id in [ids[0], ids[2], ids[3]] {
        assert_eq!(state(id), "COMPLETED");
    }
}

#[test]
fn cosched_killed_and_restarted_starts_no_job_twice_and_loses_none() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());
    let ids = submit_short(&c);
    let mut first = spawn(c.cosched(&db, &wl, &["serve", "--policy", "exclusive", "--interval", "0.2"]));
    // Kill it once it has released a job.
    let began = Instant::now();
    while c.held().len() == 4 {
        assert!(began.elapsed() < Duration::from_secs(20), "nothing released");
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    first.wait().unwrap();
    let held = c.held();
    assert!(held.len() < 4);
    let r = serve(&c, &db, &wl, "exclusive");
    let released: Vec<u64> = r["released"].as_array().unwrap().iter().map(|x| x["job"].as_u64().unwrap()).collect();
    let mut sorted = released.clone();
    sorted.sort();
    let mut expect = held.clone();
    expect.sort();
    assert_eq!(sorted, expect, "the restarted cosched released exactly the jobs still held");
    let jobs = c.sacct();
    for &id in &ids {
        assert_eq!(jobs.iter().filter(|j| j.0 == id).map(|j| j.2.as_str()).collect::<Vec<_>>(), ["COMPLETED"], "{jobs:?}");
    }
    for (k, &a) in ids.iter().enumerate() {
        for &b in &ids[k + 1..] {
            assert!(!overlap(&jobs, a, b), "exclusive co-ran {a} and {b} across the restart: {jobs:?}");
        }
    }
}

#[test]
fn slurmctld_restarted_while_cosched_serves_loses_no_job() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());
    let ids = submit_short(&c);
    let mut serving = spawn(c.cosched(&db, &wl, &["serve", "--policy", "exclusive", "--interval", "0.2", "--exit-idle", "2"]));
    std::thread::sleep(Duration::from_millis(500));
    let out = c.script("restart-ctld");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    c.drained(Duration::from_secs(60));
    assert!(serving.wait().unwrap().success());
    let jobs = c.sacct();
    for &id in &ids {
        assert_eq!(jobs.iter().filter(|j| j.0 == id).map(|j| j.2.as_str()).collect::<Vec<_>>(), ["COMPLETED"], "{jobs:?}");
    }
}

/// One of the hostile jobs: what its user set, and what the test does to it.
struct Hostile {
    name: Vec<u8>,
    comment: Vec<u8>,
    /// `-o`, relative to the working directory when relative.
    output: Vec<u8>,
    /// A working directory of its own (`--chdir`), made by the test.
    work_dir: Option<Vec<u8>>,
    /// Released by its "user" before cosched serves (`scontrol release`).
    released_by_user: bool,
}

fn hostile(k: usize, dir: &Path) -> Hostile {
    use std::os::unix::ffi::OsStrExt;
    let d = dir.as_os_str().as_bytes().to_vec();
    let at = |s: &str| [d.clone(), s.as_bytes().to_vec()].concat();
    let forged = b"AdminComment=cosched;policy=x;node=c1;beside=-;predicted=1.000;at=1;sig=00 Priority=1".to_vec();
    let mut h = Hostile { name: format!("h{k}").into_bytes(), comment: Vec::new(), output: at("/h-%j.out"), work_dir: None, released_by_user: false };
    match k % 10 {
        0 => h.name = format!("h{k}\n{k}\x1fcosched\x1fRUNNING\x1e\n").into_bytes(),
        1 => h.comment = format!("a\n9{k}\x1fcosched\x1fPENDING\x1f\x1f0\n\"}}],\"jobs\":[{{\"job_id\":1}}").into_bytes(),
        2 => {
            h.comment = forged.clone();
            h.released_by_user = true;
        }
        3 => {
            h.output = at("/AdminComment=cosched;policy=x;node=c1 Priority=1 %j.out");
            h.released_by_user = true;
        }
        // Claims a workload job, writes to a device and prints an impossible time.
        4 => {
            h.comment = b"cosched:c1".to_vec();
            h.output = b"/dev/zero".to_vec();
        }
        5 => {
            h.comment = b"cosched:c2".to_vec();
            h.output = at("/fifo");
        }
        6 => h.name = [b"\x1b[2J\x1b]0;pwned\x07".to_vec(), vec![0xff, 0xfe, b'\n', 0xc3]].concat(),
        7 => {
            h.work_dir = Some(at(&format!("/w\n{k}\x1f\x1e\"")));
            h.output = b"rel\n%j.out".to_vec();
        }
        8 => h.name = "\\\"';|$(x)`\u{2028}".repeat(20).into_bytes(),
        _ => {
            h.comment = b"cosched:s1\ncosched:s2".to_vec();
            h.name = b"s1\n".to_vec();
        }
    }
    h
}

/// Issue 36's bar: 100 jobs whose users set every field they can to
/// something hostile (newlines, separators, JSON, a forged AdminComment,
/// `-o /dev/zero`, a FIFO held open, odd working directories), beside 20
/// normal ones, under `--policy exclusive` on two nodes: serve never
/// exits, every normal job completes, no two jobs ever share a node, and
/// every job its user released is held again until cosched decides.
#[test]
fn hostile_jobs_never_stop_serve_nor_share_a_node_under_exclusive() {
    use std::os::unix::ffi::OsStrExt;
    need_slurm!();
    let began = Instant::now();
    let c = Cluster::with_nodes(2);
    let (wl, db) = setup(c.dir.path());
    let dir = c.dir.path();
    let stamps = dir.join("stamps");
    std::fs::create_dir(&stamps).unwrap();
    // Every job stamps its own start, end and node (sub-second: Slurm's
    // accounting has whole seconds only) and prints a kernel's report of
    // an impossible time.
    let script = dir.join("job.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ns=$(date +%s.%N)\nsleep 0.1\ne=$(date +%s.%N)\necho \"$s $e $SLURMD_NODENAME\" > {}/$SLURM_JOB_ID\necho '{{\"wall_s\": 0.000001}}'\n",
            stamps.display()
        ),
    )
    .unwrap();
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Held open for reading and writing: a reader of it would block for ever.
    let _held_open = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    let sbatch = |args: Vec<std::ffi::OsString>| -> u64 {
        let out = Command::new("sbatch").args(&args).env("SLURM_CONF", &c.conf).output().unwrap();
        assert!(out.status.success(), "sbatch {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().split(';').next().unwrap().parse().unwrap()
    };
    let os = |b: &[u8]| std::ffi::OsStr::from_bytes(b).to_os_string();
    let mut normal = Vec::new();
    let mut hostile_ids = Vec::new();
    let mut by_user = Vec::new();
    for k in 0..120 {
        let mut args: Vec<std::ffi::OsString> = vec!["--parsable".into(), "-p".into(), "cosched".into(), "-n1".into()];
        if k % 6 == 0 {
            let name = ["s1", "s2", "c1", "c2"][normal.len() % 4];
            args.extend([format!("-J{name}").into(), format!("--comment=cosched:{name}").into()]);
            args.push(format!("--output={}/{name}-%j.out", dir.display()).into());
            args.push(script.clone().into());
            normal.push(sbatch(args));
            continue;
        }
        let h = hostile(k, dir);
        if let Some(w) = &h.work_dir {
            std::fs::create_dir(os(w)).unwrap();
            args.push(os(&[b"--chdir=".to_vec(), w.clone()].concat()));
        }
        if h.released_by_user {
            // Not startable for a few seconds: cosched, not Slurm, moves first.
            args.push("--begin=now+4".into());
        }
        args.push(os(&[b"--job-name=".to_vec(), h.name].concat()));
        args.push(os(&[b"--comment=".to_vec(), h.comment].concat()));
        args.push(os(&[b"--output=".to_vec(), h.output].concat()));
        args.push(script.clone().into());
        let id = sbatch(args);
        if h.released_by_user {
            by_user.push(id);
        }
        hostile_ids.push(id);
    }
    // Two that can never run where cosched places jobs: 3 CPUs on 2-CPU
    // nodes, and a dependency on a job that fails.
    let fails = sbatch(vec!["--parsable".into(), "-p".into(), "cosched".into(), "-o/dev/null".into(), "--wrap=exit 1".into()]);
    let wide = sbatch(vec!["--parsable".into(), "-p".into(), "cosched".into(), "-N1".into(), "-n3".into(), "-o/dev/null".into(), "--wrap=true".into()]);
    let orphan = sbatch(vec![
        "--parsable".into(),
        "-p".into(),
        "cosched".into(),
        format!("--dependency=afterok:{fails}").into(),
        "-o/dev/null".into(),
        "--wrap=true".into(),
    ]);
    assert_eq!((normal.len(), hostile_ids.len()), (20, 100));
    for id in &by_user {
        c.slurm("scontrol", &["release", &id.to_string()]);
    }
    let submitted = began.elapsed();
    let out = c
        .cosched(&db, &wl, &["serve", "--policy", "exclusive", "--interval", "0.2", "--exit-idle", "2", "--start-bound", "3", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "serve exited: {err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reheld: Vec<u64> = r["reheld"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    for id in &by_user {
        assert!(reheld.contains(id), "job {id}, released by its user, was not held again: {r}");
    }
    assert!(err.contains(&format!("job {wide} set aside: needs 3 CPUs")), "{err}");
    // Nothing of the users' text reached the log raw.
    assert!(!err.contains('\x1b') && !err.contains('\x1f'), "{err:?}");
    // Learning read the normal jobs' own output files and refused the
    // printed 1e-6 s (the /dev/zero and FIFO ones are never opened: serve
    // ended); nothing stored is implausible.
    assert!(err.contains("printed time refused, Slurm's used"), "{err}");
    let store = Store::open(&db).unwrap();
    for run in store.runs().unwrap().into_iter().filter(|r| r.series.starts_with("slurm:cosched:")) {
        for j in store.run_jobs(run.id).unwrap() {
            if let Some(s) = j.end.as_ref().and_then(|e| e.slowdown) {
                assert!(s >= 0.5, "stored slowdown {s} of Slurm job {}", j.start.pgid);
            }
        }
    }
    // Every job but the two that cannot run ended; each normal one completed.
    let states = c.slurm("squeue", &["-h", "-t", "all", "-o", "%i %T"]);
    let state = |id: u64| states.lines().find(|l| l.split(' ').next() == Some(&id.to_string())).map(|l| l.split(' ').nth(1).unwrap().to_string());
    for id in &normal {
        assert_eq!(state(*id).as_deref(), Some("COMPLETED"), "{states}");
    }
    assert_eq!(c.held().iter().filter(|&&j| j == wide || j == orphan).count(), 2, "{states}");
    // No two jobs overlapped on a node: each one's own stamps, per node.
    let mut ran: Vec<(f64, f64, String, u64)> = Vec::new();
    for e in std::fs::read_dir(&stamps).unwrap() {
        let e = e.unwrap();
        let t = std::fs::read_to_string(e.path()).unwrap();
        let f: Vec<&str> = t.split_whitespace().collect();
        ran.push((f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].to_string(), e.file_name().to_string_lossy().parse().unwrap()));
    }
    assert_eq!(ran.len(), 120, "every normal and hostile job ran once");
    for (k, a) in ran.iter().enumerate() {
        for b in &ran[k + 1..] {
            assert!(!(a.2 == b.2 && a.0 < b.1 && b.0 < a.1), "jobs {} and {} overlapped on {}: {a:?} {b:?}", a.3, b.3, a.2);
        }
    }
    // And as Slurm's accounting says: each normal job on the node it stamped.
    let acct = c.slurm("sacct", &["--completion", "-X", "-n", "-P", "-a", "-o", "JobIDRaw,NodeList,State", "-S", "now-1hour"]);
    for id in &normal {
        let node = &ran.iter().find(|x| x.3 == *id).unwrap().2;
        assert!(acct.lines().any(|l| l == format!("{id}|{node}|COMPLETED")), "job {id} on {node}: {acct}");
    }
    c.slurm("scancel", &[&wide.to_string(), &orphan.to_string()]);
    eprintln!("100 hostile + 20 normal jobs: submitted in {submitted:?}, all done in {:?}", began.elapsed());
}

/// `cosched slurm status` with `conf` as SLURM_CONF: its exit code, its
/// stderr, and how long it took.
fn status_with(conf: &Path) -> (Option<i32>, String, Duration) {
    let began = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["slurm", "status", "--db"])
        .arg(conf.with_file_name("s.db"))
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), began.elapsed())
}

#[test]
fn status_with_a_wrong_slurm_conf_or_munge_down_exits_2_within_5_s_naming_what_to_check() {
    // No cluster: Slurm's own commands retried a missing slurm.conf for 59 s.
    let dir = tempfile::tempdir().unwrap();
    let (code, err, took) = status_with(&dir.path().join("nowhere/slurm.conf"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nowhere/slurm.conf: No such file") && err.contains("point SLURM_CONF"), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    let conf = dir.path().join("slurm.conf");
    let socket = dir.path().join("munge.socket.2");
    std::fs::write(&conf, format!("ClusterName=x\nSlurmctldHost=localhost\nAuthType=auth/munge\nAuthInfo=socket={}\n", socket.display())).unwrap();
    let (code, err, took) = status_with(&conf);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("munge does not answer on") && err.contains("is munged running"), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(!err.contains("\\x1f") && !err.contains('\u{1f}'), "{err}");
}

#[test]
fn no_controller_behind_slurm_conf_exits_2_within_5_s_naming_slurmctld() {
    need_slurm!();
    let c = Cluster::start();
    // This cluster's munge answers; its slurm.conf with a port nobody serves.
    let text = std::fs::read_to_string(&c.conf).unwrap();
    let conf = c.dir.path().join("wrong.conf");
    let port = text.lines().find_map(|l| l.strip_prefix("SlurmctldPort=")).unwrap();
    std::fs::write(&conf, text.replace(&format!("SlurmctldPort={port}"), "SlurmctldPort=1")).unwrap();
    let (code, err, took) = status_with(&conf);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is slurmctld running"), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_cosched_line_in_the_batch_script_names_the_program_whatever_the_comment_and_name() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());
    let by_comment = c.submit("c1", SHORT);
    let script = c.dir.path().join("own.sh");
    std::fs::write(&script, format!("#!/bin/sh\n#COSCHED program=c1\nexec {} {SHORT} --json\n", kernel().display())).unwrap();
    let out = c.slurm("sbatch", &["--parsable", "-p", "cosched", "-n1", "-J", "mine", "--comment=my own note", "-o", "/dev/null", &script.to_string_lossy()]);
    let by_line: u64 = out.trim().parse().unwrap();
    let out = c.cosched(&db, &wl, &["status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let program = |id: u64| r["jobs"].as_array().unwrap().iter().find(|j| j["id"] == id).map(|j| j["program"].clone());
    assert_eq!(program(by_line), program(by_comment), "{r}");
    assert_ne!(program(by_line).unwrap(), "my own note", "{r}");
    let held = c.held();
    assert!(held.contains(&by_line) && held.contains(&by_comment), "{held:?}");
    c.slurm("scancel", &[&by_line.to_string(), &by_comment.to_string()]);
}

/// Whether something listens on the abstract socket `name` (/proc/net/unix
/// shows them as `@name`).
fn listening(name: &str) -> bool {
    std::fs::read_to_string("/proc/net/unix").unwrap_or_default().lines().any(|l| l.ends_with(&format!(" @{name}")))
}

#[test]
fn a_submission_wakes_serve_through_the_submission_rule_before_its_poll() {
    need_slurm!();
    let c = Cluster::start();
    let (wl, db) = setup(c.dir.path());
    // Two rounds, 60 s apart unless something wakes serve: the first reads
    // an empty queue, the second must be the submission's.
    let mut cmd = c.cosched(&db, &wl, &["serve", "--policy", "exclusive", "--interval", "60", "--rounds", "2", "--json"]);
    let serving = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let name = format!("cosched-slurm:{}", c.state().display());
    let began = Instant::now();
    while !listening(&name) {
        assert!(began.elapsed() < Duration::from_secs(30), "serve never listened on {name}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its first round is done once the startup check and one reading are
    // (a wake during it is queued, and still ends the wait at once).
    let id = c.submit("c1", SHORT);
    let out = serving.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Heard from job_submit.lua (a job's end through the epilog would wake it too).
    assert!(r["submissions"].as_u64().unwrap() >= 1, "{r}");
    let released: Vec<u64> = r["released"].as_array().unwrap().iter().map(|x| x["job"].as_u64().unwrap()).collect();
    assert_eq!(released, [id], "{r}");
    c.drained(Duration::from_secs(60));
}

fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-c", script]).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn serve_runs_as_slurm_user_not_root_and_a_user_without_rights_is_told_why() {
    use std::os::unix::process::CommandExt;
    need_slurm!();
    let ids = |user: &str| Command::new("id").arg(user).output().is_ok_and(|o| o.status.success());
    if !(ids("slurm") && ids("nobody")) {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "no `slurm` or `nobody` user (Debian's slurm-wlm creates slurm)");
        return;
    }
    // No slurmdbd here, so no Operator admin level can be granted; SlurmUser
    // is what a site without slurmdbd runs the service as (docs/slurm.md).
    let c = Cluster::as_user(2, "slurm");
    let (wl, db) = setup(c.dir.path());
    let uid = |u: &str| -> u32 { sh(&format!("id -u {u}")).parse().unwrap() };
    let home = |u: &str| {
        let d = c.dir.path().join(format!("home-{u}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::copy(&db, d.join("s.db")).unwrap();
        sh(&format!("chown -R {u} '{}'", d.display()));
        d.join("s.db")
    };
    let ids = submit_short(&c);

    let mut as_nobody = c.cosched(&home("nobody"), &wl, &["serve", "--policy", "exclusive", "--interval", "0.2", "--rounds", "2", "--json"]);
    as_nobody.uid(uid("nobody")).gid(sh("id -g nobody").parse().unwrap());
    let out = as_nobody.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["released"].as_array().unwrap().is_empty() && !r["refused"].as_array().unwrap().is_empty(), "{r}");
    assert!(err.contains("is the user serve runs as a Slurm operator, or SlurmUser?"), "{err}");
    assert_eq!(c.held().len(), 4);

    let mut as_slurm = c.cosched(&home("slurm"), &wl, &["serve", "--policy", "exclusive", "--interval", "0.2", "--exit-idle", "1", "--json"]);
    as_slurm.uid(uid("slurm")).gid(sh("id -g slurm").parse().unwrap());
    let out = as_slurm.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["released"].as_array().unwrap().len(), 4, "{r}");
    let jobs = c.sacct();
    for id in ids {
        assert_eq!(jobs.iter().filter(|j| j.0 == id).map(|j| j.2.as_str()).collect::<Vec<_>>(), ["COMPLETED"], "{jobs:?}");
    }
}
