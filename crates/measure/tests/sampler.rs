//! The sampler on real, short, pinned jobs.
//!
//! No assertion here is a timing threshold. Host load is CPU time over wall
//! time, a fraction that a busy loop pins near 1 core and a sleeper near 0
//! whatever the speed of the machine; its bands are wide because this is a
//! shared VM (steal time takes CPU from a busy guest, lowering U) and CPU time
//! comes in 10 ms clock ticks. Totals are checked against the kernel's own
//! accounting (rusage of the reaped job) and against byte counts the jobs are
//! told to write. The load bands are judged only when /proc/stat shows the
//! job's core was not shared with other work during the run.

use std::sync::Mutex;
use std::time::Duration;

use cosched_measure::launch::{Exit, Launch};
use cosched_measure::perf::{perf_tool, SyscallMethod};
use cosched_measure::profile::{profile_job, profile_job_with, ProfileError, ProfileOptions, ProfileRun};
use cosched_model::profile::SyscallSource;

/// The CPU-bound tests must not share a core with each other: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const HOST_CORES: u32 = 2;

fn sh(script: &str) -> Launch {
    Launch::new(vec!["sh".into(), "-c".into(), script.into()]).pinned(vec![0])
}

/// A shell busy loop of fixed work: about half a second on this node.
const BUSY: &str = "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done";

fn profile(launch: &Launch, interval_ms: u64, method: SyscallMethod) -> ProfileRun {
    let mut opts = ProfileOptions::new(Duration::from_millis(interval_ms), HOST_CORES);
    opts.syscalls = method;
    profile_job_with(launch, &opts).unwrap_or_else(|e| panic!("{}: {e}", launch.argv.join(" ")))
}

/// Busy seconds of CPU `cpu` since boot, from /proc/stat (all but idle and
/// iowait; steal is time the VM did not get, so it is not busy either).
fn cpu_busy_s(cpu: u32) -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat.lines().find(|l| l.starts_with(&format!("cpu{cpu} "))).unwrap();
    let v: Vec<f64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).unwrap().unwrap() as f64;
    let total: f64 = v.iter().take(8).sum();
    (total - v[3] - v[4] - v[7]) / ticks
}

/// The core that was least busy over the last tenth of a second.
fn quiet_core() -> u32 {
    let n = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    let before: Vec<f64> = (0..n).map(cpu_busy_s).collect();
    std::thread::sleep(Duration::from_millis(100));
    (0..n).min_by(|&a, &b| {
        let da = cpu_busy_s(a) - before[a as usize];
        let db = cpu_busy_s(b) - before[b as usize];
        da.total_cmp(&db)
    })
    .unwrap_or(0)
}

/// Profiles a CPU-bound shell script pinned to the quietest core and says
/// whether that core was its own: the load band means nothing if another
/// session's job shared the core (this node runs other work), so such a run
/// is reported and not judged.
fn profile_alone(script: &str, interval_ms: u64) -> (ProfileRun, bool) {
    let core = quiet_core();
    let before = cpu_busy_s(core);
    let p = profile(&sh(script).pinned(vec![core]), interval_ms, SyscallMethod::Auto);
    let others = cpu_busy_s(core) - before - rusage_cpu(&p);
    let alone = others < 0.1 * p.summary.wall_s;
    if !alone {
        eprintln!("load band not judged: other work took {others:.2} s of core {core} in a {:.2} s run", p.summary.wall_s);
    }
    (p, alone)
}

fn sampled_cpu(p: &ProfileRun) -> f64 {
    p.samples.last().unwrap().cpu_s() - p.samples[0].cpu_s()
}

fn rusage_cpu(p: &ProfileRun) -> f64 {
    p.outcome.user_s + p.outcome.sys_s
}

#[test]
fn a_busy_loop_pinned_to_one_core_loads_one_core() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (p, alone) = profile_alone(BUSY, 100);
    let cores = p.summary.host_load_mean * f64::from(HOST_CORES);
    eprintln!("busy loop: U x cores = {cores:.3} over {} samples", p.samples.len());
    assert!(!alone || (0.7..=1.05).contains(&cores), "U x cores = {cores:.3}: {:?}", p.summary);
    assert!((p.summary.cores_used - cores).abs() < 1e-9);
    assert!(p.summary.host_load_peak <= 1.0, "one pinned process cannot load more than its core");
    assert_eq!(p.samples[0].t_s, 0.0);
    assert!(p.samples.windows(2).all(|w| w[1].t_s > w[0].t_s && w[1].cpu_s() >= w[0].cpu_s()));
}

#[test]
fn a_sleeping_job_loads_nothing() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let p = profile(&sh("sleep 0.3"), 100, SyscallMethod::Auto);
    let cores = p.summary.host_load_mean * f64::from(HOST_CORES);
    assert!(cores < 0.05, "U x cores = {cores:.3}");
    assert!(p.summary.vol_ctx_rate > 0.0, "a sleep is a voluntary switch: {:?}", p.summary);
}

#[test]
fn forked_children_count_in_the_tree_whether_or_not_a_sample_saw_them() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The parent only waits; all CPU is its children's. At 1 s the children
    // (a quarter of a second each) live and die between samples and reach
    // the tree only through the parent's cutime; at 100 ms they are seen
    // alive first, and must not be counted twice once reaped.
    let half = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
    let job = format!("( {half} ); ( {half} ); wait");
    for interval_ms in [1000, 100] {
        let (p, alone) = profile_alone(&job, interval_ms);
        let (sampled, rusage) = (sampled_cpu(&p), rusage_cpu(&p));
        // rusage is exact; /proc truncates each of four fields to a 10 ms tick,
        // and the held shell's ~1 ms before the baseline is in rusage only.
        assert!((sampled - rusage).abs() <= 0.05, "at {interval_ms} ms: sampled {sampled:.3} s, rusage {rusage:.3} s");
        let cores = p.summary.cores_used;
        eprintln!("children at {interval_ms} ms: sampled {sampled:.3} s, rusage {rusage:.3} s, {cores:.3} cores");
        assert!(!alone || (0.7..=1.05).contains(&cores), "at {interval_ms} ms: {cores:.3} cores");
    }
}

#[test]
fn an_orphan_left_in_the_group_is_found_and_kept() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times");
    // A subshell starts a busy loop in the background and exits at once: the
    // loop is re-parented out of the tree (init reaps it, so rusage never
    // sees it) but stays in the job's process group. It writes its own CPU
    // time when done; the job waits for that.
    let t = times.display();
    let script = format!(
        "( sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; times > {t}' & ); \
         while [ ! -s {t} ]; do sleep 0.05; done"
    );
    let p = profile(&sh(&script), 100, SyscallMethod::Auto);
    let text = std::fs::read_to_string(&times).unwrap();
    let orphan_cpu: f64 = text.lines().next().unwrap().split_whitespace().map(shell_time).sum();
    let (sampled, rusage) = (sampled_cpu(&p), rusage_cpu(&p));
    eprintln!("orphan: its own {orphan_cpu:.3} s, sampled {sampled:.3} s, rusage {rusage:.3} s");
    assert!(rusage < 0.5 * orphan_cpu, "the orphan was reaped inside the tree after all");
    // Its CPU after the last sample before it ended is lost: one interval.
    assert!(sampled >= orphan_cpu - 0.13, "sampled {sampled:.3} s of the orphan's {orphan_cpu:.3} s");
}

/// `0m0.450000s` as printed by the shell's `times`.
fn shell_time(s: &str) -> f64 {
    let (m, rest) = s.split_once('m').unwrap();
    m.parse::<f64>().unwrap() * 60.0 + rest.trim_end_matches('s').parse::<f64>().unwrap()
}

#[test]
fn written_bytes_are_counted() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("out");
    let n = 3_000_000u64;
    // Through a child and a pipe, so the bytes are the tree's, not one process's.
    let p = profile(&sh(&format!("head -c {n} /dev/zero | cat > '{}'", f.display())), 100, SyscallMethod::Auto);
    assert_eq!(std::fs::metadata(&f).unwrap().len(), n);
    let last = p.samples.last().unwrap();
    // `head` writes n into the pipe and `cat` n into the file.
    assert!(last.write_bytes - p.samples[0].write_bytes >= 2 * n, "{last:?}");
    assert!(last.read_bytes - p.samples[0].read_bytes >= 2 * n, "{last:?}");
    assert!(p.summary.write_bps > 0.0);
}

/// A job that makes system calls of every kind: `ls` stats and opens files.
fn syscall_job() -> Launch {
    sh("for i in 1 2 3 4 5 6 7 8; do ls -l /proc/self/ > /dev/null; done")
}

/// Read/write-class calls in the run, the floor of any true count.
fn syscr_syscw(p: &ProfileRun) -> u64 {
    let (a, b) = (&p.samples[0], p.samples.last().unwrap());
    (b.syscr + b.syscw) - (a.syscr + a.syscw)
}

#[test]
fn the_syscall_source_is_reported_and_proc_is_the_floor() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let p = profile(&syscall_job(), 100, SyscallMethod::Proc);
    assert_eq!(p.summary.syscall_source, SyscallSource::ProcSyscrSyscw);
    assert!(p.samples.iter().all(|s| s.syscalls.is_none()));
    let rate = p.summary.syscall_rate.expect("proc always gives a rate");
    assert_eq!(rate, syscr_syscw(&p) as f64 / p.summary.wall_s);
    assert_eq!(p.summary.syscall_count, Some(syscr_syscw(&p)));

    let p = profile_job(&syscall_job(), Duration::from_millis(100), HOST_CORES).unwrap();
    let source = p.summary.syscall_source;
    eprintln!("auto chose {source}: {}; notes: {:?}", source.describe(), p.notes);
    assert!(p.summary.syscall_rate.is_some());
    if source != SyscallSource::ProcSyscrSyscw {
        // Every read/write-class call is a system call: the tracepoint sees
        // at least as many.
        let total = p.summary.syscall_count.unwrap();
        assert!(total >= syscr_syscw(&p), "{total} calls < {} read/write calls", syscr_syscw(&p));
    }
}

#[test]
fn the_tracepoint_counts_per_sample_when_the_kernel_allows() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut opts = ProfileOptions::new(Duration::from_millis(100), HOST_CORES);
    opts.syscalls = SyscallMethod::Tracepoint;
    let p = match profile_job_with(&syscall_job(), &opts) {
        Ok(p) => p,
        Err(ProfileError::Counters(e)) => {
            cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("the syscall tracepoint cannot be opened here: {e}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(p.summary.syscall_source, SyscallSource::PerfTracepoint);
    assert!(p.samples.iter().all(|s| s.syscalls.is_some()));
    let calls = p.samples.last().unwrap().syscalls.unwrap() - p.samples[0].syscalls.unwrap();
    // Eight `ls` processes, each well over a hundred calls (exec, loader, stat).
    assert!(calls >= syscr_syscw(&p) && calls >= 800, "{calls} calls, {} read/write", syscr_syscw(&p));
    // Counting starts at the exec: the held shell's calls are not in it.
    assert_eq!(p.samples[0].syscalls, Some(0));
}

#[test]
fn perf_stat_attached_to_the_job_counts_the_tree() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !perf_tool().is_some_and(|p| p.syscalls) {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, "`perf stat -e raw_syscalls:sys_enter` does not work here");
        return;
    }
    let p = profile(&syscall_job(), 100, SyscallMethod::PerfStat);
    assert_eq!(p.summary.syscall_source, SyscallSource::PerfStat);
    let total = p.summary.syscall_count.unwrap();
    assert!(total >= syscr_syscw(&p) && total >= 800, "{total} calls, {} read/write", syscr_syscw(&p));
    // A job killed by a signal is a failure, not hidden behind perf's exit code.
    let mut opts = ProfileOptions::new(Duration::from_millis(100), HOST_CORES);
    opts.syscalls = SyscallMethod::PerfStat;
    match profile_job_with(&sh("kill -TERM $$"), &opts) {
        Err(ProfileError::Failed { exit, .. }) => assert_eq!(exit, Exit::Signal(15)),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn the_held_job_keeps_its_pinning_output_and_exit_code() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let p = profile(&sh("grep Cpus_allowed_list /proc/self/status"), 100, SyscallMethod::Auto);
    assert!(p.outcome.stdout.trim().ends_with("\t0"), "{}", p.outcome.stdout);
    match profile_job(&sh("echo oops >&2; exit 3"), Duration::from_millis(100), HOST_CORES) {
        Err(ProfileError::Failed { exit, stderr, cmd }) => {
            assert_eq!(exit, Exit::Code(3));
            assert!(stderr.contains("oops"), "{stderr}");
            assert!(cmd.contains("exit 3") && !cmd.contains("kill -STOP"), "{cmd}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn a_kernel_report_gives_the_work_phase_time() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let report = r#"{"kernel":"k","work":1,"threads":1,"unit":"u","wall_s":0.25,"rate":4,"checksum":"0"}"#;
    let p = profile(&sh(&format!("echo '{report}'")), 100, SyscallMethod::Auto);
    assert_eq!(p.job_time(), (0.25, "work-phase"));
}

#[test]
fn an_empty_command_or_a_zero_interval_is_refused() {
    let e = profile_job(&Launch::new(Vec::new()), Duration::from_millis(100), HOST_CORES).unwrap_err();
    assert!(e.to_string().contains("empty command"), "{e}");
    let e = profile_job(&sh("true"), Duration::ZERO, HOST_CORES).unwrap_err();
    assert!(matches!(e, ProfileError::ZeroInterval), "{e}");
}

#[test]
fn stalls_show_two_busy_processes_sharing_one_core_and_nothing_for_a_sleeper() {
    // Shares of wall time, not timings: two busy loops on one core keep one
    // of them waiting almost all the time; a sleeper waits for nothing.
    if let Err(why) = cosched_measure::cgroup::StallGroup::create() {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, &format!("stalls are not measurable here: {why}"));
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let two = profile(&sh(&format!("({BUSY}) & ({BUSY}); wait")), 50, SyscallMethod::Proc);
    let stall = two.summary.stall.expect("a stall group was made, so the run has stalls");
    assert!(stall.cpu > 0.5, "two busy loops on one core: cpu stall share {}", stall.cpu);
    assert!(stall.io < 0.1, "no I/O: {}", stall.io);
    let sleeper = profile(&sh("sleep 0.3"), 50, SyscallMethod::Proc);
    let s = sleeper.summary.stall.expect("stalls measured");
    assert!(s.cpu < 0.2 && s.io < 0.1 && s.memory < 0.1, "a sleeper stalls on nothing: {s:?}");
}
