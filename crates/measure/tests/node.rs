//! The node runner with real processes: `cosched_engine::run_node` over
//! `NodeExecutor`. Jobs are tiny shell commands, pinned; a failing job, a
//! hanging one and one over its memory limit are recorded while the rest
//! complete.

use cosched_measure::cgroup::{Isolation, Preference};
use cosched_measure::node::{Ended, JobStatus, NodeConfig, NodeEvent, NodeExecutor, NodeJob};
use cosched_model::workload::PoolKind;
use cosched_engine::{run_node, Platform, PoolInfo, SimJob};

mod common;
use common::{Alone, FirstFit};
use cosched_model::trace::Trace;

fn job(name: &str, cmd: &str, timeout: Option<f64>, memory_mib: Option<u64>) -> NodeJob {
    NodeJob {
        name: name.into(),
        argv: vec!["sh".into(), "-c".into(), cmd.into()],
        pool: 0,
        cores: 1,
        timeout,
        memory_mib,
        pids_max: None,
        solo: Some((0.05, "process".into())),
        kernel: false,
        env: Vec::new(),
        workdir: None,
        stdout: None,
        stderr: None,
        variants: vec![],
        progress: None,
    }
}

fn run(tag: &str, pref: Preference, jobs: &[NodeJob]) -> (Vec<Ended>, Trace, Isolation) {
    let iso = Isolation::detect(pref);
    let dir = tempfile::tempdir().unwrap();
    let cfg = NodeConfig {
        pool_cpus: vec![vec![0]],
        shared_pool: vec![false],
        topology: None,
        scope: format!("test-node-{tag}-{}-{:?}", std::process::id(), pref),
        log_dir: dir.path().to_path_buf(),
        user: None,
        isolation: iso.clone(),
        clock_origin: 0.0,
        env: Vec::new(),
    };
    let sim: Vec<SimJob> = jobs
        .iter()
        .map(|j| SimJob { name: j.name.clone(), arrival: 0.0, solo: 0.05, pool: 0, cores: 1, program: j.name.clone(), variants: vec![] })
        .collect();
    let platform = Platform { pools: vec![PoolInfo { name: "host".into(), cores: 1, kind: PoolKind::Cpu }] };
    let mut ended = Vec::new();
    let mut sink = |e: NodeEvent| {
        if let NodeEvent::Ended(e) = e {
            ended.push(e);
        }
        Ok(())
    };
    let trace = {
        let mut ex = NodeExecutor::new(cfg, jobs, &mut sink).unwrap();
        run_node(&platform, &sim, &Alone, &mut FirstFit, &mut ex, &[]).unwrap()
    };
    ended.sort_by_key(|e| e.job);
    (ended, trace, iso)
}

#[test]
fn failing_and_hanging_jobs_are_recorded_while_the_rest_complete() {
    let jobs = [
        job("ok", "grep Cpus_allowed_list /proc/self/status", None, None),
        job("fails", "exit 3", None, None),
        job("hangs", "sleep 30", Some(0.2), None),
        job("missing", "exec /nonexistent/program", None, None),
        job("ok2", "true", None, None),
    ];
    for pref in [Preference::Auto, Preference::None] {
        let (ended, trace, _) = run("fail", pref, &jobs);
        let status: Vec<JobStatus> = ended.iter().map(|e| e.status).collect();
        assert_eq!(
            status,
            vec![JobStatus::Ok, JobStatus::Failed(3), JobStatus::Timeout, JobStatus::Failed(127), JobStatus::Ok],
            "{pref:?}"
        );
        assert!(ended[0].output_tail.ends_with("\t0"), "pinned to CPU 0: {}", ended[0].output_tail);
        assert!(ended.iter().all(|e| e.cpus == vec![0]));
        assert!(ended[0].slowdown.is_some() && ended[1].slowdown.is_none());
        // One core: the jobs ran one after another, in queue order.
        let m = cosched_model::metrics::job_times(&trace.events, jobs.len()).unwrap();
        for w in m.windows(2) {
            assert!(w[0].finish <= w[1].start);
        }
        // The loop learnt each end from the executor's outcomes, as the
        // journal did from its sink.
        for (e, t) in ended.iter().zip(&trace.jobs) {
            assert_eq!((t.status, &t.cpus, m[e.job].start, m[e.job].finish), (Some(e.status), &e.cpus, e.start, e.end), "{pref:?}");
        }
    }
}

#[test]
fn a_job_over_its_memory_limit_is_recorded_as_oom() {
    let jobs = [job("hog", "exec dd if=/dev/zero of=/dev/null bs=64M count=1", None, Some(16)), job("ok", "true", None, None)];
    let iso = Isolation::detect(Preference::Auto);
    if !iso.limits_memory() {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("no memory cgroup here: {}", iso.notes().join("; ")));
        return;
    }
    let (ended, _, _) = run("oom", Preference::Auto, &jobs);
    assert_eq!(ended.iter().map(|e| e.status).collect::<Vec<_>>(), vec![JobStatus::Oom, JobStatus::Ok]);
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
fn cpu_seconds(pid: i32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after the name: state is 3rd of stat, utime the 14th, stime the 15th.
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf reads a constant of the system and touches no memory.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn allowed_cpus(pid: i32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string()
}

#[test]
fn a_frozen_job_makes_no_progress_and_ends_right_after_resume() {
    // A fixed amount of shell arithmetic: its count is the result.
    let count = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo counted $i";
    let node_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    for pref in [Preference::Auto, Preference::None] {
        let iso = Isolation::detect(pref);
        let dir = tempfile::tempdir().unwrap();
        let cpus: Vec<u32> = (0..node_cpus.min(2)).collect();
        let cfg = NodeConfig {
            pool_cpus: vec![cpus.clone()],
            shared_pool: vec![false],
            topology: None,
            scope: format!("test-freeze-{}-{:?}", std::process::id(), pref),
            log_dir: dir.path().to_path_buf(),
            user: None,
            isolation: iso.clone(),
            clock_origin: 0.0,
            env: Vec::new(),
        };
        let jobs = [job("count", count, None, None)];
        let mut events = Vec::new();
        let mut sink = |e: NodeEvent| {
            events.push(e);
            Ok(())
        };
        let mut ex = NodeExecutor::new(cfg, &jobs, &mut sink).unwrap();
        use cosched_engine::Executor;
        let plan = cosched_engine::StartPlan { job: 0, pool: 0, cpus: vec![0], beside: vec![], predicted: 1.0, variant: 0 };
        ex.start(&plan).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        ex.suspend(0).unwrap();
        let pid = ex.pgid(0).unwrap();
        // Not running and not ended: stopped (T), or frozen, which a kernel
        // shows as D or, for a task that was already asleep in a wait, S.
        // The CPU-time check below is what proves it makes no progress.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let state = state[state.rfind(')').unwrap() + 1..].split_whitespace().next().unwrap().to_string();
        assert!(state != "R" && state != "Z", "{pref:?}: state {state} when suspended");
        let frozen_at = cpu_seconds(pid);
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(cpu_seconds(pid), frozen_at, "{pref:?}: CPU time grew while suspended");
        if cpus.len() > 1 {
            ex.move_to(0, &[1]).unwrap();
            assert_eq!(allowed_cpus(pid), "1", "{pref:?}: moved to CPU 1");
        }
        ex.resume(0).unwrap();
        let mut ended = Vec::new();
        while ended.is_empty() {
            ended = ex.wait(None).unwrap();
        }
        drop(ex);
        assert_eq!(ended[0].status, JobStatus::Ok, "{pref:?}");
        let end = events.iter().find_map(|e| if let NodeEvent::Ended(x) = e { Some(x.clone()) } else { None }).unwrap();
        assert!(end.output_tail.ends_with("counted 300000"), "{pref:?}: {}", end.output_tail);
        assert!(end.suspended_s >= 0.3, "{pref:?}: suspended {} s", end.suspended_s);
        assert!(events.iter().any(|e| matches!(e, NodeEvent::Suspended { job: 0, .. })));
        assert!(events.iter().any(|e| matches!(e, NodeEvent::Resumed { job: 0, .. })));
    }
}

#[test]
fn a_suspended_job_that_is_dropped_is_killed_not_left_frozen() {
    let iso = Isolation::detect(Preference::Auto);
    let dir = tempfile::tempdir().unwrap();
    let cfg = NodeConfig {
        pool_cpus: vec![vec![0]],
        shared_pool: vec![false],
        topology: None,
        scope: format!("test-freeze-drop-{}", std::process::id()),
        log_dir: dir.path().to_path_buf(),
        user: None,
        isolation: iso.clone(),
        clock_origin: 0.0,
        env: Vec::new(),
    };
    let jobs = [job("sleeper", "sleep 30", None, None)];
    let mut sink = |_: NodeEvent| Ok(());
    let mut ex = NodeExecutor::new(cfg, &jobs, &mut sink).unwrap();
    use cosched_engine::Executor;
    ex.start(&cosched_engine::StartPlan { job: 0, pool: 0, cpus: vec![0], beside: vec![], predicted: 1.0, variant: 0 }).unwrap();
    ex.suspend(0).unwrap();
    let pgid = ex.pgid(0).unwrap();
    drop(ex);
    assert!(cosched_measure::launch::live_members(pgid).is_empty(), "the frozen job's processes are gone");
}
