//! A local Slurm cluster for the tests that run `cosched slurm` against a
//! real slurmctld (`scripts/slurm-local.sh`): started with the nodes, CPUs
//! and memory a test asks for, stopped (every daemon, its directory) when
//! dropped; the checks that skip with a printed reason when Slurm or root
//! is missing; and the readings of Slurm's own record the tests compare
//! against. One cluster at a time per test binary: they share the host's
//! cores.
//!
//! Included with `#[path = "common/slurm.rs"] mod slurm_cluster;` by the
//! Slurm test files only, so other test binaries do not compile it.
//! `COSCHED_TEST_SLURM_PORT` sets the controller's port (slurmd take the
//! next ones, one per node) where several people run clusters on one host;
//! `TMPDIR` where the cluster's directory goes.

// Each test binary uses only some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use cosched_store::{CampaignKind, CampaignStatus, PairRunRecord, Store};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_CLUSTER: Mutex<()> = Mutex::new(());

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn kernel() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel")
}

/// Why these tests cannot run here, if they cannot; `kernel`: the test
/// also runs `cosched-kernel` jobs.
pub fn missing(kernel_needed: bool) -> Option<String> {
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
    if kernel_needed && !kernel().is_file() {
        return Some(format!("{} is not built (cargo build --release)", kernel().display()));
    }
    None
}

/// Returns from the test with a printed `skipped:` reason when no local
/// cluster can run here; `need_slurm!(no_kernel)` for tests whose jobs are
/// not kernels.
macro_rules! need_slurm {
    () => {
        if let Some(why) = slurm_cluster::missing(true) {
            cosched_testkit::skip(cosched_testkit::Lacks::Installed, &why);
            return;
        }
    };
    (no_kernel) => {
        if let Some(why) = slurm_cluster::missing(false) {
            cosched_testkit::skip(cosched_testkit::Lacks::Installed, &why);
            return;
        }
    };
}

/// What cluster a test wants.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// slurmd on this host (they share its CPUs); one is named after the
    /// host, more are c1..cN.
    pub nodes: u32,
    /// CPUs each node declares; `None`: this host's.
    pub cpus: Option<u32>,
    /// RealMemory of each node, MB; `None`: Slurm's default.
    pub mem_mb: Option<u64>,
    /// Where the epilog wakes serve (`slurmd`, `slurmctld`, `none`).
    pub hook_at: &'static str,
    /// SlurmUser (slurm-local.sh's COSCHED_SLURM_USER); `None`: root.
    pub user: Option<&'static str>,
    /// GPUs (GRES `gpu`) each node declares; `None`: none.
    pub gpus: Option<u32>,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec { nodes: 1, cpus: None, mem_mb: None, hook_at: "slurmd", user: None, gpus: None }
    }
}

/// A running local cluster; stopped (every daemon, its directory) on drop.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    pub spec: Spec,
    _one: std::sync::MutexGuard<'static, ()>,
}

/// One finished job as the completion log records it.
#[derive(Debug, Clone)]
pub struct Rec {
    pub id: u64,
    pub name: String,
    pub state: String,
    pub uid: u32,
    pub nodes: Vec<String>,
    pub start: i64,
    pub end: i64,
}

impl Rec {
    /// Ran on a common node at a common time (whole seconds: touching
    /// intervals are not an overlap).
    pub fn shares_with(&self, o: &Rec) -> bool {
        self.id != o.id && self.start < o.end && o.start < self.end && self.nodes.iter().any(|n| o.nodes.contains(n))
    }
}

impl Cluster {
    pub fn start() -> Cluster {
        Cluster::with(Spec::default())
    }

    pub fn with_nodes(nodes: u32) -> Cluster {
        Cluster::with(Spec { nodes, ..Spec::default() })
    }

    /// A cluster whose slurmctld runs as `user`, as on a site.
    pub fn as_user(nodes: u32, user: &'static str) -> Cluster {
        Cluster::with(Spec { nodes, user: Some(user), ..Spec::default() })
    }

    pub fn with(spec: Spec) -> Cluster {
        let one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::Builder::new().prefix("cosched-slurm-").tempdir().unwrap();
        if spec.user.is_some() {
            // SlurmUser and the service user reach the cluster's files through it.
            let _ = Command::new("chmod").arg("0755").arg(dir.path()).status();
        }
        let c = Cluster { conf: dir.path().join("slurm/etc/slurm.conf"), dir, spec, _one: one };
        let out = c.script("start");
        assert!(out.status.success(), "slurm-local.sh start: {}", String::from_utf8_lossy(&out.stderr));
        c
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("slurm")
    }

    /// The controller's port: COSCHED_TEST_SLURM_PORT, else one of this
    /// process's own (room for 15 slurmd after it).
    pub fn port() -> u32 {
        match std::env::var("COSCHED_TEST_SLURM_PORT").ok().and_then(|p| p.parse().ok()) {
            Some(p) => p,
            None => 20_000 + (std::process::id() % 600) * 16,
        }
    }

    pub fn script(&self, verb: &str) -> Output {
        let s = &self.spec;
        let mut c = Command::new(repo().join("scripts/slurm-local.sh"));
        c.arg(verb)
            .env("COSCHED_SLURM_DIR", self.state())
            .env("COSCHED_SLURM_PORT", Cluster::port().to_string())
            .env("COSCHED_SLURM_NODES", s.nodes.to_string())
            .env("COSCHED_SLURM_HOOK_AT", s.hook_at)
            // The epilog wakes serve through this binary's `slurm hook`.
            .env("COSCHED_BIN", env!("CARGO_BIN_EXE_cosched"))
            .env("COSCHED_SLURM_USER", s.user.unwrap_or("root"));
        if let Some(cpus) = s.cpus {
            c.env("COSCHED_SLURM_CPUS", cpus.to_string());
        }
        if let Some(mem) = s.mem_mb {
            c.env("COSCHED_SLURM_MEM", mem.to_string());
        }
        if let Some(gpus) = s.gpus {
            c.env("COSCHED_SLURM_GPUS", gpus.to_string());
        }
        c.output().unwrap()
    }

    /// A Slurm command against this cluster, its output; fails the test if it fails.
    pub fn slurm(&self, program: &str, args: &[&str]) -> String {
        let out = self.slurm_output(program, args);
        assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A Slurm command against this cluster, whatever it ends with.
    pub fn slurm_output(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program).args(args).env("SLURM_CONF", &self.conf).env("TZ", "UTC").output().unwrap()
    }

    /// Submits `kernel ARGS` as a batch job tied to workload job `name`.
    pub fn submit(&self, name: &str, kernel_args: &str) -> u64 {
        let script = self.dir.path().join(format!("{name}.sh"));
        std::fs::write(&script, format!("#!/bin/sh\nexec {} {kernel_args} --json\n", kernel().display())).unwrap();
        let out = self.dir.path().join(format!("{name}-%j.out"));
        let args = ["--parsable", "-p", "cosched", "-n1", "-J", name, &format!("--comment=cosched:{name}"), "-o", &out.to_string_lossy(), &script.to_string_lossy()];
        self.slurm("sbatch", &args).trim().split(';').next().unwrap().parse().unwrap()
    }

    /// `sbatch` of `sleep SECS` (a fraction allowed) named `name` with `args`; its id.
    pub fn sleep(&self, name: &str, secs: f64, args: &[&str]) -> u64 {
        let wrap = format!("sleep {secs}");
        let mut all = vec!["--parsable", "-p", "cosched", "-J", name, "-o", "/dev/null", "--chdir=/tmp"];
        all.extend(args);
        all.extend(["--wrap", &wrap]);
        self.slurm("sbatch", &all).trim().split(';').next().unwrap().parse().unwrap()
    }

    /// `cosched slurm ARGS --workload WL --db DB` against this cluster.
    pub fn cosched(&self, db: &Path, wl: &Path, args: &[&str]) -> Command {
        let mut c = self.cosched_bare(db, args);
        c.arg("--workload").arg(wl);
        c
    }

    /// `cosched slurm ARGS --db DB` against this cluster, no workload.
    pub fn cosched_bare(&self, db: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
        c.args(["slurm"]).args(args).arg("--db").arg(db);
        c.env("SLURM_CONF", &self.conf).env("COSCHED_KERNEL", kernel());
        // Where this cluster's epilog wakes serve (`slurm-local.sh env`).
        c.env("COSCHED_SLURM_HOOK", format!("cosched-slurm:{}", self.state().display()));
        c
    }

    /// `cosched slurm serve --policy POLICY ARGS` with its JSON report on
    /// stdout, on the cluster's own database (`s.db` in its directory);
    /// `--interval 0.5` and `--exit-idle 2` unless ARGS say otherwise.
    pub fn serve(&self, policy: &str, args: &[&str]) -> Child {
        let db = self.dir.path().join("s.db");
        let mut c = self.cosched_bare(&db, &["serve", "--policy", policy, "--json"]);
        for (flag, default) in [("--interval", "0.5"), ("--exit-idle", "2")] {
            if !args.contains(&flag) {
                c.args([flag, default]);
            }
        }
        if self.spec.hook_at == "none" {
            c.env_remove("COSCHED_SLURM_HOOK");
        }
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    }

    /// Each finished job as the completion log records it.
    pub fn records(&self) -> Vec<Rec> {
        // --completion: the local cluster keeps no accounting database; its
        // job completion log (jobcomp/filetxt) is what sacct reads.
        let out = self.slurm("sacct", &["--completion", "-X", "-n", "-P", "-a", "-o", "JobIDRaw,JobName,State,UID,NodeList,Start,End", "-S", "now-1hour"]);
        out.lines()
            .map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                let (id, name, state, uid) = (f[0].parse().unwrap(), f[1].into(), f[2].into(), f[3].parse().unwrap_or(0));
                Rec { id, name, state, uid, nodes: hosts(f[4]), start: unix(f[5]), end: unix(f[6]) }
            })
            .collect()
    }

    /// Each job's (id, name, state, node, start, end) as sacct records it.
    pub fn sacct(&self) -> Vec<(u64, String, String, String, i64, i64)> {
        self.records().into_iter().map(|r| (r.id, r.name, r.state, r.nodes.join(","), r.start, r.end)).collect()
    }

    /// Slurm's state of `job` now (`RUNNING`, `SUSPENDED`, ...).
    pub fn job_state(&self, job: u64) -> String {
        self.slurm("squeue", &["-h", "-j", &job.to_string(), "-o", "%T"]).trim().to_string()
    }

    /// Jobs held for cosched: priority 0 with the submission rule's mark,
    /// which may name the program (read as JSON: job names here may hold
    /// newlines).
    pub fn held(&self) -> Vec<u64> {
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
    pub fn drained(&self, limit: Duration) {
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

/// `c[1-2,4]` or `c1,c3` as names.
pub fn hosts(s: &str) -> Vec<String> {
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
    s.split(',').filter(|x| !x.is_empty() && *x != "(null)" && *x != "None assigned").map(str::to_string).collect()
}

/// Slurm's `YYYY-MM-DDTHH:MM:SS` (UTC) as Unix seconds; `Unknown` as 0.
pub fn unix(s: &str) -> i64 {
    let out = Command::new("date").args(["-u", "-d", s, "+%s"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

/// Waits for a serve to exit (at most `limit`) and returns its JSON report.
/// Its output is read while it runs: a report of 500 jobs is larger than a
/// pipe holds, and a serve writing it to a pipe no one reads never exits.
pub fn report(child: Child, limit: Duration) -> serde_json::Value {
    let pid = child.id().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            let out = rx.recv().unwrap().unwrap();
            panic!("serve still running after {limit:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
    };
    assert!(out.status.success(), "serve: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Two STREAM twins and two compute jobs; the store says the twins slow
/// each other 1.8x and every other pair not at all.
pub fn setup(dir: &Path) -> (PathBuf, PathBuf) {
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
    let p = s.begin_campaign(CampaignKind::Pairs, "slurm-twins", "{}", &crate::common::prov()).unwrap();
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
