//! A job in its own control group: pinning (cpuset, with `cpuset.mems`
//! the NUMA nodes of its CPUs so its memory follows its cores), suspend and resume
//! (freezer), a memory limit with OOM detection (memory), a process cap
//! (pids), and a kill that reaches every process the job ever made.
//!
//! Both hierarchies are supported. cgroup v1 has one mount per controller
//! (`/sys/fs/cgroup/cpuset`, `.../freezer`, ...), and a job gets one
//! directory in each; cgroup v2 has one unified tree where a job gets one
//! directory with `cgroup.freeze`, `cgroup.kill`, `memory.max` and
//! `memory.events`, and only the controllers the parent delegates. Job
//! groups live under `cosched/<scope>/<job>` *below the cgroup cosched itself
//! runs in*, so limits set on cosched (a batch system's, a container's)
//! still hold for its jobs.
//!
//! When no hierarchy is usable (not root, read-only, not mounted),
//! [`Isolation::detect`] says why and the runner falls back to
//! `sched_setaffinity` for pinning and SIGSTOP / SIGCONT to the process
//! group for suspending; memory limits are then not enforced. Every choice
//! is reported per feature by [`Isolation::mechanisms`], so output can say
//! which mechanism was used and why.
//!
//! A process joins its groups between fork and exec (it writes `0`, meaning
//! itself, to `cgroup.procs` files opened by the parent), so no instruction of
//! the job runs outside them and every child it forks is inside too.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

/// Which hierarchy to use; `Auto` prefers v1 with cpuset and freezer, then v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Preference {
    Auto,
    V1,
    V2,
    /// No cgroups: affinity and signals only.
    None,
}

impl std::str::FromStr for Preference {
    type Err = String;
    fn from_str(s: &str) -> Result<Preference, String> {
        match s {
            "auto" => Ok(Preference::Auto),
            "v1" => Ok(Preference::V1),
            "v2" => Ok(Preference::V2),
            "none" => Ok(Preference::None),
            _ => Err(format!("unknown cgroup mode `{s}`; expected auto, v1, v2 or none")),
        }
    }
}

/// How one feature is carried out on this node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mechanism {
    /// `pinning`, `suspend`, `memory limit`, `process cap`, `kill`.
    pub feature: &'static str,
    /// E.g. `cgroup v1 cpuset`, `sched_setaffinity`, `not enforced`.
    pub how: String,
    /// Why this and not a cgroup, when it is not one.
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Backend {
    /// Directory of cosched's own cgroup in each v1 controller's mount.
    V1 { dirs: Vec<(V1Controller, PathBuf)> },
    /// cosched's own cgroup in the unified tree, and the controllers its
    /// children get.
    V2 { dir: PathBuf, controllers: Vec<String> },
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V1Controller {
    Cpuset,
    Freezer,
    Memory,
    Pids,
}

impl V1Controller {
    const ALL: [V1Controller; 4] = [V1Controller::Cpuset, V1Controller::Freezer, V1Controller::Memory, V1Controller::Pids];
    fn name(self) -> &'static str {
        match self {
            V1Controller::Cpuset => "cpuset",
            V1Controller::Freezer => "freezer",
            V1Controller::Memory => "memory",
            V1Controller::Pids => "pids",
        }
    }
}

/// What this node offers for isolating jobs, found once per run.
#[derive(Debug, Clone)]
pub struct Isolation {
    backend: Backend,
    /// Why cgroups (or some controllers) are not used.
    notes: Vec<String>,
}

/// Limits of one job's group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// CPUs the job may run on.
    pub cpus: Vec<u32>,
    /// NUMA nodes its memory may come from (`cpuset.mems`): those of its
    /// CPUs, so memory follows the cores; empty inherits the parent's.
    pub mems: Vec<u32>,
    pub memory_bytes: Option<u64>,
    pub pids_max: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cgroup {0}: processes are still inside after killing them")]
    Busy(String),
    #[error("{}: still `{last}` {within} s after asking for `{want}` (a task in uninterruptible sleep stops only when it wakes)", path.display())]
    NotSettled { path: PathBuf, want: &'static str, last: String, within: u64 },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError + '_ {
    move |source| CgroupError::Io { path: path.to_path_buf(), source }
}

fn write_file(path: &Path, value: &str) -> Result<(), CgroupError> {
    // One write call: cgroup files take a value per write(2).
    let mut f = OpenOptions::new().write(true).open(path).map_err(io(path))?;
    f.write_all(value.as_bytes()).map_err(io(path))
}

fn read_file(path: &Path) -> Result<String, CgroupError> {
    fs::read_to_string(path).map_err(io(path))
}

/// Mount points of cgroup hierarchies from /proc/self/mountinfo:
/// (v1 controller -> mount dir) and the v2 mount, if any.
fn mounts(mountinfo: &str) -> (Vec<(String, PathBuf)>, Option<PathBuf>) {
    let mut v1 = Vec::new();
    let mut v2 = None;
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else { continue };
        let pre: Vec<&str> = pre.split_whitespace().collect();
        let post: Vec<&str> = post.split_whitespace().collect();
        if pre.len() < 5 || post.len() < 3 {
            continue;
        }
        // Only mounts of the hierarchy's root map our /proc/self/cgroup
        // paths onto directories one to one.
        if pre[3] != "/" {
            continue;
        }
        let dir = PathBuf::from(pre[4].replace("\\040", " "));
        match post[0] {
            "cgroup2" => v2 = v2.or(Some(dir)),
            "cgroup" => {
                for opt in post[2].split(',') {
                    if ["cpuset", "freezer", "memory", "pids"].contains(&opt) {
                        v1.push((opt.to_string(), dir.clone()));
                    }
                }
            }
            _ => {}
        }
    }
    (v1, v2)
}

/// cosched's own cgroup path per v1 controller, and its v2 path, from
/// /proc/self/cgroup.
fn own_paths(proc_cgroup: &str) -> (Vec<(String, String)>, Option<String>) {
    let mut v1 = Vec::new();
    let mut v2 = None;
    for line in proc_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (f.next(), f.next(), f.next()) else { continue };
        if ctrl.is_empty() {
            v2 = Some(path.to_string());
        } else {
            for c in ctrl.split(',') {
                v1.push((c.to_string(), path.to_string()));
            }
        }
    }
    (v1, v2)
}

/// Creating a directory proves the hierarchy writable; it is removed at once.
/// Its name is unique within the process too: two threads detecting at once
/// (parallel tests, a verb and its watchdog) must not take each other's
/// probe for a hierarchy they cannot write.
fn probe_writable(dir: &Path) -> Result<(), String> {
    static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!("cosched-probe-{}-{n}", std::process::id()));
    match fs::create_dir(&probe) {
        Ok(()) => {
            let _ = fs::remove_dir(&probe);
            Ok(())
        }
        Err(e) => Err(format!("cannot create a group in {}: {e}", dir.display())),
    }
}

impl Isolation {
    /// Finds what this node offers, honouring `pref`.
    pub fn detect(pref: Preference) -> Isolation {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let proc_cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut notes = Vec::new();
        if pref == Preference::None {
            notes.push("cgroups were switched off (--cgroups none)".into());
            return Isolation { backend: Backend::None, notes };
        }
        let (v1_mounts, v2_mount) = mounts(&mountinfo);
        let (v1_own, v2_own) = own_paths(&proc_cgroup);
        if matches!(pref, Preference::Auto | Preference::V1) {
            match detect_v1(&v1_mounts, &v1_own) {
                Ok(b) => return Isolation { backend: b, notes },
                Err(why) => notes.push(format!("cgroup v1 not used: {why}")),
            }
        }
        if matches!(pref, Preference::Auto | Preference::V2) {
            match detect_v2(v2_mount.as_deref(), v2_own.as_deref()) {
                Ok((b, mut more)) => {
                    notes.append(&mut more);
                    return Isolation { backend: b, notes };
                }
                Err(why) => notes.push(format!("cgroup v2 not used: {why}")),
            }
        }
        Isolation { backend: Backend::None, notes }
    }

    /// `v1`, `v2` or `none`.
    pub fn version(&self) -> &'static str {
        match self.backend {
            Backend::V1 { .. } => "v1",
            Backend::V2 { .. } => "v2",
            Backend::None => "none",
        }
    }

    fn has_v1(&self, c: V1Controller) -> bool {
        matches!(&self.backend, Backend::V1 { dirs } if dirs.iter().any(|(k, _)| *k == c))
    }

    fn has_v2(&self, c: &str) -> bool {
        matches!(&self.backend, Backend::V2 { controllers, .. } if controllers.iter().any(|k| k == c))
    }

    /// Pins through a cpuset group (else the caller pins with affinity).
    pub fn pins(&self) -> bool {
        self.has_v1(V1Controller::Cpuset) || self.has_v2("cpuset")
    }

    /// Suspends through a freezer (else SIGSTOP / SIGCONT).
    pub fn freezes(&self) -> bool {
        self.has_v1(V1Controller::Freezer) || matches!(self.backend, Backend::V2 { .. })
    }

    /// Enforces memory limits and detects OOM kills.
    pub fn limits_memory(&self) -> bool {
        self.has_v1(V1Controller::Memory) || self.has_v2("memory")
    }

    /// How each feature is carried out, and why when not by a cgroup.
    pub fn mechanisms(&self) -> Vec<Mechanism> {
        let why_none = || {
            Some(if self.notes.is_empty() { "no cgroup hierarchy is usable".to_string() } else { self.notes.join("; ") })
        };
        let v = self.version();
        let mech = |feature, ok: bool, cg: &str, other: &str| Mechanism {
            feature,
            how: if ok { format!("cgroup {v} {cg}") } else { other.to_string() },
            why: if ok {
                None
            } else if matches!(self.backend, Backend::None) {
                why_none()
            } else {
                Some(format!("the {cg} controller is not available to cosched's cgroup"))
            },
        };
        vec![
            mech("pinning", self.pins(), "cpuset", "sched_setaffinity"),
            mech("suspend", self.freezes(), "freezer", "SIGSTOP/SIGCONT to the process group"),
            mech(
                "memory limit",
                self.limits_memory(),
                "memory",
                "RLIMIT_DATA (heap and private mappings; an allocation past it fails, recorded as failed, not oom)",
            ),
            mech(
                "process cap",
                self.has_v1(V1Controller::Pids) || self.has_v2("pids"),
                "pids",
                "not enforced",
            ),
            Mechanism {
                feature: "kill",
                how: match self.backend {
                    Backend::None => "SIGKILL to the process group, and to orphans it left (cosched is their subreaper)".into(),
                    Backend::V2 { .. } => "cgroup v2 cgroup.kill, then SIGKILL to the process group".into(),
                    Backend::V1 { .. } => "SIGKILL to every member of the frozen cgroup and to the process group".into(),
                },
                why: None,
            },
        ]
    }

    /// Why cgroups or some of them are not used.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Creates the group of one job at `cosched/<scope>/<job>`, limits set,
    /// ready for a process to join. `None` without a cgroup backend.
    pub fn create(&self, scope: &str, job: &str, limits: &Limits) -> Result<Option<JobCgroup>, CgroupError> {
        let rel = Path::new("cosched").join(sanitize(scope)).join(group_name(job));
        match &self.backend {
            Backend::None => Ok(None),
            Backend::V1 { dirs } => {
                let mut made = JobCgroup { dirs: Vec::new(), version: 1, limits: limits.clone(), oom_base: 0 };
                for (ctrl, base) in dirs {
                    let dir = base.join(&rel);
                    if *ctrl == V1Controller::Cpuset {
                        // A new cpuset is empty; every level needs cpus and
                        // mems before a task may join below it. The scope's
                        // levels exist after a run's first job: its group is
                        // made and given its CPUs directly (issue 42: reading
                        // every level's cpuset was a tenth of a job's cost),
                        // and by the walk down every level if that fails.
                        if !quick_cpuset(&dir, limits) {
                            make_cpuset_path(base, &rel)?;
                            if !limits.cpus.is_empty() {
                                write_file(&dir.join("cpuset.cpus"), &cpulist(&limits.cpus))?;
                            }
                            if !limits.mems.is_empty() {
                                write_file(&dir.join("cpuset.mems"), &cpulist(&limits.mems))?;
                            }
                        }
                    } else {
                        fs::create_dir_all(&dir).map_err(io(&dir))?;
                    }
                    made.dirs.push((ctrl.name(), dir.clone()));
                    match ctrl {
                        V1Controller::Memory => {
                            if let Some(b) = limits.memory_bytes {
                                write_file(&dir.join("memory.limit_in_bytes"), &b.to_string())?;
                                // With swap, a job over its limit would page
                                // instead of being stopped.
                                let memsw = dir.join("memory.memsw.limit_in_bytes");
                                if memsw.exists() {
                                    write_file(&memsw, &b.to_string())?;
                                }
                            }
                        }
                        V1Controller::Pids => {
                            if let Some(n) = limits.pids_max {
                                write_file(&dir.join("pids.max"), &n.to_string())?;
                            }
                        }
                        _ => {}
                    }
                }
                Ok(Some(made))
            }
            Backend::V2 { dir: base, controllers } => {
                let mut path = base.clone();
                for part in rel.iter() {
                    // Delegate controllers level by level (the parent's
                    // subtree_control decides what a child gets).
                    if !controllers.is_empty() {
                        let list: Vec<String> = controllers.iter().map(|c| format!("+{c}")).collect();
                        let _ = write_file(&path.join("cgroup.subtree_control"), &list.join(" "));
                    }
                    path = path.join(part);
                    if !path.exists() {
                        fs::create_dir(&path).map_err(io(&path))?;
                    }
                }
                if controllers.iter().any(|c| c == "cpuset") {
                    if !limits.cpus.is_empty() {
                        write_file(&path.join("cpuset.cpus"), &cpulist(&limits.cpus))?;
                    }
                    if !limits.mems.is_empty() {
                        write_file(&path.join("cpuset.mems"), &cpulist(&limits.mems))?;
                    }
                }
                if controllers.iter().any(|c| c == "memory") {
                    if let Some(b) = limits.memory_bytes {
                        write_file(&path.join("memory.max"), &b.to_string())?;
                        let _ = write_file(&path.join("memory.swap.max"), "0");
                    }
                }
                if controllers.iter().any(|c| c == "pids") {
                    if let Some(n) = limits.pids_max {
                        write_file(&path.join("pids.max"), &n.to_string())?;
                    }
                }
                Ok(Some(JobCgroup { dirs: vec![("unified", path)], version: 2, limits: limits.clone(), oom_base: 0 }))
            }
        }
    }

    /// Kills whatever is left in the groups of `scope` (a runner that died
    /// before cleaning up) and removes them; returns the processes killed.
    pub fn clean_scope(&self, scope: &str) -> usize {
        let rel = Path::new("cosched").join(sanitize(scope));
        let bases: Vec<PathBuf> = match &self.backend {
            Backend::None => return 0,
            Backend::V1 { dirs } => dirs.iter().map(|(_, d)| d.join(&rel)).collect(),
            Backend::V2 { dir, .. } => vec![dir.join(&rel)],
        };
        let mut killed = 0;
        for base in &bases {
            let Ok(entries) = fs::read_dir(base) else { continue };
            for e in entries.flatten() {
                if e.path().is_dir() {
                    let version = if self.version() == "v2" { 2 } else { 1 };
                    let g = JobCgroup { dirs: vec![("leftover", e.path())], version, limits: Limits::default(), oom_base: 0 };
                    killed += g.procs().len();
                    let _ = g.remove();
                }
            }
            let _ = fs::remove_dir(base);
        }
        killed
    }
}

fn detect_v1(mounts: &[(String, PathBuf)], own: &[(String, String)]) -> Result<Backend, String> {
    let mut dirs = Vec::new();
    let mut missing = Vec::new();
    for c in V1Controller::ALL {
        let mount = mounts.iter().find(|(n, _)| n == c.name());
        let path = own.iter().find(|(n, _)| n == c.name());
        match (mount, path) {
            (Some((_, m)), Some((_, p))) => {
                let dir = m.join(p.trim_start_matches('/'));
                match probe_writable(&dir) {
                    Ok(()) => dirs.push((c, dir)),
                    Err(why) => missing.push(format!("{}: {why}", c.name())),
                }
            }
            _ => missing.push(format!("{}: not mounted as v1", c.name())),
        }
    }
    let has = |c| dirs.iter().any(|(k, _)| *k == c);
    if !(has(V1Controller::Cpuset) && has(V1Controller::Freezer)) {
        return Err(missing.join("; "));
    }
    Ok(Backend::V1 { dirs })
}

fn detect_v2(mount: Option<&Path>, own: Option<&str>) -> Result<(Backend, Vec<String>), String> {
    let (Some(mount), Some(own)) = (mount, own) else {
        return Err("no cgroup2 mount".into());
    };
    let dir = mount.join(own.trim_start_matches('/'));
    probe_writable(&dir)?;
    let available = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let controllers: Vec<String> = ["cpuset", "memory", "pids"]
        .iter()
        .filter(|c| available.split_whitespace().any(|a| a == **c))
        .map(|c| c.to_string())
        .collect();
    let mut notes = Vec::new();
    let lacking: Vec<&str> =
        ["cpuset", "memory", "pids"].into_iter().filter(|c| !controllers.iter().any(|k| k == c)).collect();
    if !lacking.is_empty() {
        notes.push(format!(
            "cgroup v2 at {} offers no {} controller (cgroup.controllers: `{}`)",
            dir.display(),
            lacking.join(", "),
            available.trim()
        ));
    }
    Ok((Backend::V2 { dir, controllers }, notes))
}

/// Makes a job's cpuset `dir` below an existing parent and writes the
/// job's CPUs and memory nodes into it, when `limits` names both (a new
/// cpuset takes no task before both are set); `false` when that cannot be
/// done so, leaving the directory (if made) for [`make_cpuset_path`].
fn quick_cpuset(dir: &Path, limits: &Limits) -> bool {
    if limits.cpus.is_empty() || limits.mems.is_empty() {
        return false;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return false,
    }
    write_file(&dir.join("cpuset.cpus"), &cpulist(&limits.cpus)).is_ok() && write_file(&dir.join("cpuset.mems"), &cpulist(&limits.mems)).is_ok()
}

fn make_cpuset_path(base: &Path, rel: &Path) -> Result<(), CgroupError> {
    let mut parent = base.to_path_buf();
    for part in rel.iter() {
        let dir = parent.join(part);
        if !dir.exists() {
            fs::create_dir(&dir).map_err(io(&dir))?;
        }
        for f in ["cpuset.cpus", "cpuset.mems"] {
            let cur = read_file(&dir.join(f))?;
            if cur.trim().is_empty() {
                let from = read_file(&parent.join(f))?;
                write_file(&dir.join(f), from.trim())?;
            }
        }
        parent = dir;
    }
    Ok(())
}

/// Names become one path component of safe characters.
fn sanitize(s: &str) -> String {
    let out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    if out.is_empty() || out == "." || out == ".." {
        "_".into()
    } else {
        out
    }
}

/// A job's group directory: its name made safe, and kept apart from the
/// files a cgroup directory holds (`tasks`, `notify_on_release`,
/// `cgroup.procs`, `memory.max`, ...): a job named `tasks` would otherwise
/// collide with the file and never start. `@` is never in a job name, so
/// the escaped name cannot meet another job's.
fn group_name(job: &str) -> String {
    const FILES: [&str; 3] = ["tasks", "notify_on_release", "release_agent"];
    const PREFIXES: [&str; 14] = [
        "cgroup.", "cpuset.", "cpu.", "cpuacct.", "memory.", "memsw.", "freezer.", "pids.", "io.", "blkio.", "hugetlb.",
        "rdma.", "misc.", "net_",
    ];
    let name = sanitize(job);
    if FILES.contains(&name.as_str()) || PREFIXES.iter().any(|p| name.starts_with(p)) {
        format!("{name}@job")
    } else {
        name
    }
}

fn cpulist(cpus: &[u32]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

mod reuse;

/// One job's group: a directory per v1 controller, or one in the v2 tree.
#[derive(Debug)]
pub struct JobCgroup {
    dirs: Vec<(&'static str, PathBuf)>,
    version: u8,
    /// What was written into it (`reuse` writes only what changes).
    limits: Limits,
    /// OOM kills counted before its job (a group handed on keeps its count).
    oom_base: u64,
}

impl JobCgroup {
    /// The `cgroup.procs` files a process writes `0` to in order to join.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|(_, d)| d.join("cgroup.procs")).collect()
    }

    /// Directories of the group, one per hierarchy or controller.
    pub fn dirs(&self) -> Vec<&Path> {
        self.dirs.iter().map(|(_, d)| d.as_path()).collect()
    }

    /// Live processes in the group.
    pub fn procs(&self) -> Vec<i32> {
        let mut out: Vec<i32> = Vec::new();
        for f in self.procs_files() {
            if let Ok(s) = fs::read_to_string(&f) {
                out.extend(s.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn dir_of(&self, ctrl: &str) -> Option<&Path> {
        self.dirs.iter().find(|(k, _)| *k == ctrl || *k == "unified" || *k == "leftover").map(|(_, d)| d.as_path())
    }

    /// Freezes (`true`) or thaws the job; returns once the kernel says the
    /// group is in that state (v1 `freezer.state` reads `FROZEN` or
    /// `THAWED`, v2 `cgroup.events` reads `frozen 1` or `frozen 0`), and an
    /// error naming what it last read when that does not come within
    /// [`crate::freeze::STOP_WITHIN`]: a turn must never begin beside a
    /// job that may still run.
    pub fn set_frozen(&self, frozen: bool) -> Result<(), CgroupError> {
        let (file, want) = if self.version == 2 {
            let d = self.dir_of("unified").expect("a v2 group has its directory");
            write_file(&d.join("cgroup.freeze"), if frozen { "1" } else { "0" })?;
            (d.join("cgroup.events"), if frozen { "frozen 1" } else { "frozen 0" })
        } else {
            let Some(d) = self.dir_of("freezer") else { return Ok(()) };
            let state = d.join("freezer.state");
            write_file(&state, if frozen { "FROZEN" } else { "THAWED" })?;
            (state, if frozen { "FROZEN" } else { "THAWED" })
        };
        let mut last = String::new();
        let mut failed = None;
        let done = crate::freeze::poll_until(crate::freeze::STOP_WITHIN, || match read_file(&file) {
            Ok(text) => {
                let hit = text.lines().any(|l| l.trim() == want);
                last = text.trim().replace('\n', "; ");
                if !hit && self.version == 1 {
                    // v1 retries the tasks still running (FREEZING) on
                    // each write; a failed write shows in the next read.
                    let _ = write_file(&file, want);
                }
                hit
            }
            Err(e) => {
                failed = Some(e);
                true
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if done {
            return Ok(());
        }
        Err(CgroupError::NotSettled { path: file, want, last, within: crate::freeze::STOP_WITHIN.as_secs() })
    }

    /// Moves the job onto other CPUs (re-pinning, the ParaStation paper's sidestep).
    pub fn set_cpus(&self, cpus: &[u32]) -> Result<(), CgroupError> {
        match self.dirs.iter().find(|(k, _)| *k == "cpuset" || *k == "unified") {
            Some((_, d)) if d.join("cpuset.cpus").exists() => write_file(&d.join("cpuset.cpus"), &cpulist(cpus)),
            _ => Ok(()),
        }
    }

    /// Moves the job onto other CPUs and its memory onto the NUMA nodes
    /// of those CPUs (`mems` empty: memory stays where it may be).
    pub fn set_cpus_and_mems(&self, cpus: &[u32], mems: &[u32]) -> Result<(), CgroupError> {
        self.set_cpus(cpus)?;
        match self.dirs.iter().find(|(k, _)| *k == "cpuset" || *k == "unified") {
            Some((_, d)) if !mems.is_empty() && d.join("cpuset.mems").exists() => write_file(&d.join("cpuset.mems"), &cpulist(mems)),
            _ => Ok(()),
        }
    }

    /// CPUs the group allows, if it has a cpuset.
    pub fn cpus(&self) -> Option<String> {
        self.cpuset_file("cpuset.cpus")
    }

    /// NUMA nodes the group's memory may come from, if it has a cpuset.
    pub fn mems(&self) -> Option<String> {
        self.cpuset_file("cpuset.mems")
    }

    fn cpuset_file(&self, name: &str) -> Option<String> {
        let d = self.dirs.iter().find(|(k, _)| *k == "cpuset" || *k == "unified")?.1.join(name);
        fs::read_to_string(d).ok().map(|s| s.trim().to_string())
    }

    /// OOM kills inside the group since its job started: v2 `memory.events`
    /// `oom_kill`, v1 `memory.oom_control` `oom_kill` (kernel >= 4.13).
    pub fn oom_kills(&self) -> u64 {
        self.oom_total().saturating_sub(self.oom_base)
    }

    fn oom_total(&self) -> u64 {
        let (file, d) = if self.version == 2 {
            ("memory.events", self.dir_of("unified"))
        } else {
            ("memory.oom_control", self.dirs.iter().find(|(k, _)| *k == "memory").map(|(_, d)| d.as_path()))
        };
        let Some(text) = d.and_then(|d| fs::read_to_string(d.join(file)).ok()) else { return 0 };
        text.lines()
            .filter_map(|l| l.strip_prefix("oom_kill "))
            .filter_map(|v| v.trim().parse::<u64>().ok())
            .next()
            .unwrap_or(0)
    }

    /// Kills every process in the group and waits until it is empty.
    pub fn kill_all(&self) -> Result<(), CgroupError> {
        for _ in 0..400 {
            let procs = self.procs();
            if procs.is_empty() {
                return Ok(());
            }
            if self.version == 2 {
                if let Some(d) = self.dir_of("unified") {
                    let _ = write_file(&d.join("cgroup.kill"), "1");
                }
            } else {
                // Frozen, the members cannot fork new ones while we kill
                // them one by one; SIGKILL takes effect as they thaw.
                let _ = self.set_frozen(true);
                for p in &procs {
                    // SAFETY: kill(2) with a pid read from the group's own
                    // cgroup.procs; it touches no memory of ours.
                    unsafe { libc::kill(*p, libc::SIGKILL) };
                }
                let _ = self.set_frozen(false);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.procs().is_empty() {
            Ok(())
        } else {
            Err(CgroupError::Busy(self.dirs.first().map(|d| d.1.display().to_string()).unwrap_or_default()))
        }
    }

    /// Kills what is left and removes the group's directories.
    ///
    /// The kernel removes only an empty group (`EBUSY` otherwise), so each
    /// directory is removed at once first: a job that ended with nothing
    /// left (the common case) costs one `rmdir` per directory, not a read
    /// of every `cgroup.procs` as well (issue 42). A group still busy is
    /// killed and removed as before.
    pub fn remove(&self) -> Result<(), CgroupError> {
        let mut busy = false;
        for (_, d) in &self.dirs {
            match fs::remove_dir(d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => busy = true,
            }
        }
        if !busy {
            return Ok(());
        }
        self.kill_all()?;
        for (_, d) in &self.dirs {
            // An exiting task may keep the directory busy for a moment.
            let mut last = None;
            for _ in 0..200 {
                match fs::remove_dir(d) {
                    Ok(()) => {
                        last = None;
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(e),
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            if let Some(e) = last {
                return Err(CgroupError::Io { path: d.clone(), source: e });
            }
        }
        Ok(())
    }

    /// Removes the scope directories above the job group when empty.
    pub fn remove_parents(&self) {
        for (_, d) in &self.dirs {
            if let Some(scope) = d.parent() {
                let _ = fs::remove_dir(scope);
            }
        }
    }
}

/// A group in the cgroup v2 tree that only accounts: the kernel keeps
/// pressure stall information (PSI) for every v2 group whatever controllers
/// it has, so a profile run joins one to learn how long its job waited for a
/// CPU, for I/O and for memory. On a v1 node the v2 tree is the hybrid
/// `unified` mount, which controls nothing, so joining it changes nothing
/// about how the job runs.
#[derive(Debug)]
pub struct StallGroup {
    dir: PathBuf,
}

/// Cumulative stall times of a group, microseconds (`some ... total=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallTotals {
    pub cpu_us: u64,
    pub io_us: u64,
    pub memory_us: u64,
}

impl StallTotals {
    /// Seconds stalled since `before`, per resource.
    pub fn since(self, before: StallTotals) -> cosched_model::profile::Stall {
        let s = |a: u64, b: u64| a.saturating_sub(b) as f64 * 1e-6;
        cosched_model::profile::Stall {
            cpu: s(self.cpu_us, before.cpu_us),
            io: s(self.io_us, before.io_us),
            memory: s(self.memory_us, before.memory_us),
        }
    }
}

/// The `total=` of a pressure file's `some` line.
fn some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace().find_map(|f| f.strip_prefix("total="))?.parse().ok()
}

impl StallGroup {
    /// Makes `cosched/stall-<pid>-<n>` below cosched's own v2 group. Fails,
    /// saying why, without a writable cgroup2 mount or without PSI (booted
    /// with `psi=0`, or a kernel built without it). Groups left behind by
    /// cosched processes that are gone are removed first; a live process's
    /// group may be empty for a moment before its job joins, so it is left
    /// alone (and the kernel refuses to remove a group with processes).
    pub fn create() -> Result<StallGroup, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let proc_cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let (_, mount) = mounts(&mountinfo);
        let (_, own) = own_paths(&proc_cgroup);
        let (Some(mount), Some(own)) = (mount, own) else {
            return Err("no cgroup2 hierarchy is mounted".into());
        };
        let own = mount.join(own.trim_start_matches('/'));
        if !own.join("io.pressure").exists() && !own.join("cgroup.pressure").exists() {
            return Err(format!("{} has no pressure files (PSI is off: boot with psi=1)", own.display()));
        }
        let base = own.join("cosched");
        fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
        if let Ok(entries) = fs::read_dir(&base) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let owner = name.strip_prefix("stall-").and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok());
                if owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                    let _ = fs::remove_dir(e.path());
                }
            }
        }
        let dir = base.join(format!("stall-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let g = StallGroup { dir };
        g.totals().ok_or_else(|| format!("{}: cannot read its pressure files", g.dir.display()))?;
        Ok(g)
    }

    /// The file a process writes `0` to, between fork and exec, to join.
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The group's stall totals now; `None` if a file cannot be read. A
    /// memory or CPU file the kernel lacks (cpu.pressure needs a cpu
    /// controller on some kernels) reads as 0 rather than losing the others.
    pub fn totals(&self) -> Option<StallTotals> {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).ok().and_then(|t| some_total(&t));
        Some(StallTotals {
            cpu_us: read("cpu.pressure").unwrap_or(0),
            io_us: read("io.pressure")?,
            memory_us: read("memory.pressure").unwrap_or(0),
        })
    }
}

impl Drop for StallGroup {
    fn drop(&mut self) {
        // The job has been reaped; an exiting task can keep the group busy
        // for a moment, and a group left behind is removed by the next
        // `create`.
        for _ in 0..20 {
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_some_total_of_a_pressure_file_is_read() {
        let text = "some avg10=0.00 avg60=0.12 avg300=0.00 total=98765\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=12\n";
        assert_eq!(some_total(text), Some(98765));
        assert_eq!(some_total("full avg10=0.00 total=3\n"), None);
        assert_eq!(some_total(""), None);
        let after = StallTotals { cpu_us: 1_500_000, io_us: 250_000, memory_us: 7 };
        let before = StallTotals { cpu_us: 500_000, io_us: 0, memory_us: 9 };
        let s = after.since(before);
        assert_eq!((s.cpu, s.io, s.memory), (1.0, 0.25, 0.0), "a counter that went back counts 0");
    }

    #[test]
    fn mountinfo_gives_v1_controllers_and_the_v2_mount() {
        let text = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n\
            35 31 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n\
            36 31 0:33 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
            37 31 0:34 /sub /mnt/freezer rw - cgroup cgroup rw,freezer\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let (v1, v2) = mounts(text);
        assert_eq!(
            v1,
            vec![
                ("cpuset".to_string(), PathBuf::from("/sys/fs/cgroup/cpuset")),
                ("memory".to_string(), PathBuf::from("/sys/fs/cgroup/memory"))
            ],
            "a bind mount of a sub-tree (freezer here) is not the hierarchy's root"
        );
        assert_eq!(v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
    }

    #[test]
    fn proc_cgroup_gives_own_paths() {
        let (v1, v2) = own_paths("4:memory:/a/b\n3:cpu,cpuacct:/\n0::/user.slice\n");
        assert_eq!(
            v1,
            vec![
                ("memory".to_string(), "/a/b".to_string()),
                ("cpu".to_string(), "/".to_string()),
                ("cpuacct".to_string(), "/".to_string())
            ]
        );
        assert_eq!(v2.as_deref(), Some("/user.slice"));
    }

    #[test]
    fn job_names_of_cgroup_files_get_a_directory_of_their_own() {
        assert_eq!(group_name("tasks"), "tasks@job");
        assert_eq!(group_name("notify_on_release"), "notify_on_release@job");
        assert_eq!(group_name("memory.max"), "memory.max@job");
        assert_eq!(group_name("a"), "a");
        assert_eq!(group_name("tasks.1"), "tasks.1");
    }

    #[test]
    fn names_become_one_safe_path_component() {
        assert_eq!(sanitize("run 3/job.1"), "run_3_job.1");
        assert_eq!(sanitize(".."), "_");
        assert_eq!(sanitize(""), "_");
    }

    #[test]
    fn without_cgroups_the_fallbacks_are_named_with_the_reason() {
        let iso = Isolation::detect(Preference::None);
        let m = iso.mechanisms();
        assert_eq!(m[0].how, "sched_setaffinity");
        assert!(m[0].why.as_deref().unwrap().contains("--cgroups none"));
        assert_eq!(m[1].how, "SIGSTOP/SIGCONT to the process group");
        assert!(m[2].how.starts_with("RLIMIT_DATA"), "{}", m[2].how);
        assert!(iso.create("s", "j", &Limits::default()).unwrap().is_none());
    }
}
