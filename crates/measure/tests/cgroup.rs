//! Jobs in their own cgroups, with real short processes: pinned by the
//! cpuset, frozen and thawed, stopped by their memory limit, killed to the
//! last process, and the groups removed. Each test skips with a printed
//! reason where cgroups cannot be used (not root, not mounted, read-only).

use std::time::Duration;

use cosched_measure::cgroup::{Isolation, Limits, Preference};
use cosched_measure::launch::{spawn, Exit, Launch, POLL};

fn sh(cmd: &str) -> Launch {
    Launch::new(vec!["sh".into(), "-c".into(), cmd.into()])
}

fn usable(pref: Preference) -> Option<Isolation> {
    let iso = Isolation::detect(pref);
    if iso.version() == "none" {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("no usable cgroup hierarchy ({:?}): {}", pref, iso.notes().join("; ")));
        return None;
    }
    Some(iso)
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

fn scope(tag: &str) -> String {
    format!("test-{tag}-{}", std::process::id())
}

fn wait(mut r: cosched_measure::launch::Running) -> cosched_measure::launch::ExitReport {
    loop {
        if let Some(o) = r.try_wait().unwrap() {
            return o;
        }
        std::thread::sleep(POLL);
    }
}

fn pinned_by_the_cpuset(pref: Preference) {
    let Some(iso) = usable(pref) else { return };
    if !iso.pins() {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("cgroup {} has no cpuset controller here", iso.version()));
        return;
    }
    let s = scope("pin");
    let g = iso.create(&s, "a", &Limits { cpus: vec![0], ..Limits::default() }).unwrap().unwrap();
    let mut l = sh("grep Cpus_allowed_list /proc/self/status; cat /proc/self/cgroup");
    l.cgroup_procs = g.procs_files();
    let o = wait(spawn(&l).unwrap());
    assert!(o.stdout.lines().next().unwrap().ends_with("\t0"), "{}", o.stdout);
    assert!(o.stdout.contains(&format!("cosched/{s}/a")), "the job ran in its group: {}", o.stdout);
    g.remove().unwrap();
    g.remove_parents();
    assert!(g.dirs().iter().all(|d| !d.exists()));
}

#[test]
fn a_job_is_pinned_by_its_cpuset_v1() {
    pinned_by_the_cpuset(Preference::V1);
}

#[test]
fn a_job_is_pinned_by_its_cpuset_v2() {
    pinned_by_the_cpuset(Preference::V2);
}

/// Memory follows the cores: the NUMA nodes of the job's CPUs, as the
/// node runner computes them from this node's topology, are its cpuset's
/// `cpuset.mems`, and the kernel holds its processes to them.
fn memory_bound_to_the_numa_nodes_of_its_cpus(pref: Preference) {
    let Some(iso) = usable(pref) else { return };
    if !iso.pins() {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("cgroup {} has no cpuset controller here", iso.version()));
        return;
    }
    let node = cosched_measure::topology::detect().expect("this node's topology reads");
    let mems = cosched_measure::place::mems_of(&node, &[0]);
    assert_eq!(mems, vec![node.numa_of(0).expect("CPU 0 has a NUMA node")], "one node: CPU 0's");
    let s = scope("mems");
    let g = iso.create(&s, "a", &Limits { cpus: vec![0], mems: mems.clone(), ..Limits::default() }).unwrap().unwrap();
    let want = cosched_model::topology::format_cpulist(&mems);
    assert_eq!(g.mems().as_deref(), Some(want.as_str()));
    let mut l = sh("grep Mems_allowed_list /proc/self/status");
    l.cgroup_procs = g.procs_files();
    let o = wait(spawn(&l).unwrap());
    assert_eq!(o.stdout.trim().rsplit('\t').next(), Some(want.as_str()), "{}", o.stdout);
    g.set_cpus_and_mems(&[0], &mems).unwrap();
    assert_eq!(g.mems().as_deref(), Some(want.as_str()));
    g.remove().unwrap();
    g.remove_parents();
}

#[test]
fn a_jobs_memory_is_bound_to_the_numa_nodes_of_its_cpus_v1() {
    memory_bound_to_the_numa_nodes_of_its_cpus(Preference::V1);
}

#[test]
fn a_jobs_memory_is_bound_to_the_numa_nodes_of_its_cpus_v2() {
    memory_bound_to_the_numa_nodes_of_its_cpus(Preference::V2);
}

fn frozen_job_makes_no_progress(pref: Preference) {
    let Some(iso) = usable(pref) else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ticks");
    let g = iso.create(&scope("freeze"), "a", &Limits { cpus: vec![0], ..Limits::default() }).unwrap().unwrap();
    let mut l = sh(&format!("while :; do echo x >> {}; done", file.display())).pinned(vec![0]);
    l.cgroup_procs = g.procs_files();
    let r = spawn(&l).unwrap();
    while std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) == 0 {
        std::thread::sleep(POLL);
    }
    g.set_frozen(true).unwrap();
    let len = std::fs::metadata(&file).unwrap().len();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), len, "a frozen job wrote on");
    g.set_frozen(false).unwrap();
    while std::fs::metadata(&file).unwrap().len() == len {
        std::thread::sleep(POLL);
    }
    g.kill_all().unwrap();
    assert!(g.procs().is_empty());
    drop(r);
    g.remove().unwrap();
    g.remove_parents();
}

#[test]
fn a_frozen_job_makes_no_progress_until_thawed_v1() {
    frozen_job_makes_no_progress(Preference::V1);
}

#[test]
fn a_frozen_job_makes_no_progress_until_thawed_v2() {
    frozen_job_makes_no_progress(Preference::V2);
}

#[test]
fn a_job_over_its_memory_limit_is_oom_killed_and_counted() {
    let Some(iso) = usable(Preference::Auto) else { return };
    if !iso.limits_memory() {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("cgroup {} has no memory controller here", iso.version()));
        return;
    }
    let g = iso
        .create(&scope("oom"), "a", &Limits { cpus: vec![0], mems: Vec::new(), memory_bytes: Some(16 << 20), pids_max: None })
        .unwrap()
        .unwrap();
    // dd's 64 MiB buffer is filled by read(2): four times the limit.
    let mut l = sh("exec dd if=/dev/zero of=/dev/null bs=64M count=1").pinned(vec![0]);
    l.cgroup_procs = g.procs_files();
    let o = wait(spawn(&l).unwrap());
    assert_eq!(o.exit, Exit::Signal(9), "{o:?}");
    assert_eq!(g.oom_kills(), 1);
    g.remove().unwrap();
    g.remove_parents();
}

#[test]
fn killing_a_group_reaches_processes_that_left_the_process_group() {
    let Some(iso) = usable(Preference::Auto) else { return };
    let g = iso.create(&scope("kill"), "a", &Limits { cpus: vec![0], ..Limits::default() }).unwrap().unwrap();
    // The sleeper lets go of the output pipes, or dropping the job would
    // wait for it to close them. setsid puts the sleeper in a session and group of its own, out of
    // reach of killpg; the cgroup still holds it.
    let mut l = sh("setsid sleep 30 >/dev/null 2>&1 & wait").pinned(vec![0]);
    l.cgroup_procs = g.procs_files();
    let r = spawn(&l).unwrap();
    // Until the sleeper runs `sleep`, it may not have left the group yet.
    while !g.procs().iter().any(|p| comm(*p) == "sleep") {
        std::thread::sleep(POLL);
    }
    drop(r);
    assert_eq!(g.procs().len(), 1, "the escaped sleeper outlived its process group");
    g.remove().unwrap();
    assert!(g.procs().is_empty());
    g.remove_parents();
}

#[test]
fn clean_scope_kills_leftovers_of_a_dead_runner_and_removes_the_groups() {
    let Some(iso) = usable(Preference::Auto) else { return };
    let s = scope("clean");
    let g = iso.create(&s, "a", &Limits { cpus: vec![0], ..Limits::default() }).unwrap().unwrap();
    let mut l = sh("setsid sleep 30 >/dev/null 2>&1 & wait").pinned(vec![0]);
    l.cgroup_procs = g.procs_files();
    let r = spawn(&l).unwrap();
    // Until the sleeper runs `sleep`, it may not have left the group yet.
    while !g.procs().iter().any(|p| comm(*p) == "sleep") {
        std::thread::sleep(POLL);
    }
    drop(r);
    assert_eq!(iso.clean_scope(&s), 1);
    assert!(g.dirs().iter().all(|d| !d.exists()));
}

#[test]
fn a_job_dropped_to_another_user_still_joins_its_cgroup() {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "dropping to another user needs root");
        return;
    }
    let Some(iso) = usable(Preference::Auto) else { return };
    let s = scope("user");
    let g = iso.create(&s, "a", &Limits { cpus: vec![0], ..Limits::default() }).unwrap().unwrap();
    let mut l = sh("id -u; id -g; cat /proc/self/cgroup").pinned(vec![0]);
    l.cgroup_procs = g.procs_files();
    // nobody / nogroup: what a job of `sudo cosched run` runs as is the
    // invoking user's ids; any unprivileged ids show the same.
    l.user = Some((65534, 65534));
    let o = wait(spawn(&l).unwrap());
    assert_eq!(o.exit, Exit::Code(0), "{o:?}");
    let mut lines = o.stdout.lines();
    assert_eq!((lines.next(), lines.next()), (Some("65534"), Some("65534")));
    assert!(o.stdout.contains(&format!("cosched/{s}/a")), "{}", o.stdout);
    g.remove().unwrap();
    g.remove_parents();
}

/// The node runner hands an ended job's empty group to the next job
/// (issue 42): the group bears the new job's name, pins it to its own
/// CPU and process cap, and a group with a memory limit, a v2 group, or
/// one a process still holds is never handed on.
#[test]
fn an_empty_group_handed_on_runs_the_next_job_under_its_name_and_limits() {
    let Some(iso) = usable(Preference::Auto) else { return };
    let s = scope("reuse");
    let first = Limits { cpus: vec![0], mems: vec![0], memory_bytes: None, pids_max: Some(64) };
    let mut g = iso.create(&s, "a", &first).unwrap().unwrap();
    let run = |g: &cosched_measure::cgroup::JobCgroup| {
        let mut l = sh("grep Cpus_allowed_list /proc/self/status; cat /proc/self/cgroup");
        l.cgroup_procs = g.procs_files();
        wait(spawn(&l).unwrap()).stdout
    };
    assert!(run(&g).contains(&format!("cosched/{s}/a")));
    assert!(g.is_empty());
    if iso.version() != "v1" {
        // cgroup v2 renames no group: the runner makes a new one.
        assert!(!g.reuse("b", &first));
        g.remove().unwrap();
        g.remove_parents();
        return;
    }
    let last_cpu = std::thread::available_parallelism().map_or(1, |n| n.get() as u32) - 1;
    let second = Limits { cpus: vec![last_cpu], pids_max: Some(32), ..first.clone() };
    let old: Vec<std::path::PathBuf> = g.dirs().iter().map(|d| d.to_path_buf()).collect();
    assert!(g.reuse("b/2", &second));
    assert!(g.named("b/2") && !g.named("a"));
    assert!(old.iter().all(|d| !d.exists()), "renamed, not copied: {old:?}");
    let out = run(&g);
    assert!(out.lines().next().unwrap().ends_with(&format!("\t{last_cpu}")), "{out}");
    assert!(out.contains(&format!("cosched/{s}/b_2")), "{out}");
    assert_eq!(g.cpus().as_deref(), Some(last_cpu.to_string().as_str()));
    let pids = g.dirs().iter().map(|d| d.join("pids.max")).find(|p| p.exists());
    if let Some(p) = pids {
        assert_eq!(std::fs::read_to_string(p).unwrap().trim(), "32");
    }
    assert_eq!(g.oom_kills(), 0);
    // A memory limit: made anew.
    assert!(!g.reuse("c", &Limits { memory_bytes: Some(64 << 20), ..second.clone() }));
    g.remove().unwrap();
    // A process inside: not empty, so never handed on.
    let h = iso.create(&s, "d", &first).unwrap().unwrap();
    let mut l = sh("sleep 30 >/dev/null 2>&1");
    l.cgroup_procs = h.procs_files();
    let r = spawn(&l).unwrap();
    assert!(!h.is_empty());
    drop(r);
    h.remove().unwrap();
    h.remove_parents();
}
