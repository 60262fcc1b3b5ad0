//! `cosched slurm` against a real Slurm cluster on this host
//! (`scripts/slurm-local.sh`): the policy's co-location as Slurm's own
//! accounting records it, and the faults of issue 15 (the controller
//! restarted, a node drained, a job cancelled by its user, cosched killed
//! and restarted). Each test starts its cluster and stops it, leaving no
//! process and no directory; they skip with a printed reason when Slurm or
//! root is missing. One cluster at a time: they share the host's cores.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cosched_store::Store;

mod common;
#[macro_use]
#[path = "common/slurm.rs"]
mod slurm_cluster;
use slurm_cluster::{kernel, setup, Cluster};

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
    // One record per job: none started twice, the cancelled one never.
    let states = |id: u64| jobs.iter().filter(|j| j.0 == id).map(|j| j.2.clone()).collect::<Vec<_>>();
    assert!(matches!(&states(ids[1])[..], [s] if s.starts_with("CANCELLED")), "{jobs:?}");
    for id in [ids[0], ids[2], ids[3]] {
        assert_eq!(states(id), ["COMPLETED"], "{jobs:?}");
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
