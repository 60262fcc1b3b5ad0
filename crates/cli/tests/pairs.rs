//! `cosched pairs`: a campaign is stored run by run, survives Ctrl-C without
//! leaving processes behind, and `--resume` finishes it without redoing work.

mod common;
use common::{process_state as state, stray_processes, wait_until};
use std::path::Path;
use std::process::{Command, Stdio};

use cosched_store::{CampaignStatus, Store};

fn cosched() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
    c.env("COSCHED_RUN_LOCK", common::private_lock());
    c
}

/// Two short command jobs whose command lines carry a marker, so the test
/// can find any of their processes that outlive the runner.
fn workload(dir: &Path, marker: &str) -> std::path::PathBuf {
    let path = dir.join("w.toml");
    std::fs::write(
        &path,
        format!(
            "[[jobs]]\nname = \"a\"\ncommand = \"sh -c 'sleep 0.3; : {marker}'\"\n\
             [[jobs]]\nname = \"b\"\ncommand = \"sh -c 'sleep 0.2; : {marker}'\"\n"
        ),
    )
    .unwrap();
    path
}

fn pair_runs(db: &Path) -> usize {
    let Ok(store) = Store::open_existing(db) else { return 0 };
    let Ok(cs) = store.campaigns() else { return 0 };
    cs.iter().map(|c| store.pair_runs(c.id).map(|r| r.len()).unwrap_or(0)).sum()
}

#[test]
fn sigint_leaves_no_process_and_resume_completes_the_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-pairs-test-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let db = dir.path().join("c.db");
    let args = ["--repeats", "2", "--min-repeats", "2", "--svg"];
    let svg = dir.path().join("m.svg");

    let pairs = || {
        let mut c = cosched();
        c.arg("pairs").arg("--workload").arg(&wl).args(args).arg(&svg).arg("--db").arg(&db);
        c
    };
    let child = pairs()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first repeat is stored, i.e. mid-campaign.
    wait_until("storing a run", || pair_runs(&db) > 0);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    assert_eq!(stray_processes(&[&marker]), Vec::<String>::new(), "stray job processes");

    let stored_before = pair_runs(&db);
    assert!(stored_before < 6, "the campaign finished before the interrupt: {stored_before}");
    {
        let store = Store::open_existing(&db).unwrap();
        let c = store.campaigns().unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, CampaignStatus::Interrupted);
    }

    let out = pairs().arg("--resume").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let store = Store::open_existing(&db).unwrap();
    let c = store.campaigns().unwrap();
    assert_eq!(c.len(), 1, "resume continued the same campaign");
    assert_eq!(c[0].status, CampaignStatus::Done);
    // (a,a), (a,b), (b,b) with exactly two repeats each, none measured twice.
    let runs = store.pair_runs(c[0].id).unwrap();
    assert_eq!(runs.len(), 6);
    // The node's conditions, once at the start and once at the resume.
    let conds = store.conditions(c[0].id).unwrap();
    assert_eq!(conds.len(), 2, "{conds:?}");
    assert!(conds.iter().all(|k| k.load.iter().all(|l| *l >= 0.0)));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("n=4"), "each ordered cell of (a,b) has 2 repeats, diagonal cells 4:\n{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

#[test]
fn a_bad_workload_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("bad.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\nkernel = \"stream\"\nwork = \"ten\"\n").unwrap();
    let db = dir.path().join("c.db");
    let out = cosched().arg("pairs").arg("--workload").arg(&wl).arg("--db").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.toml:4:"));
    assert!(!db.exists());
}

#[test]
fn the_heatmap_goes_beside_the_database_not_into_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let marker = format!("cosched-pairs-svg-test-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let db = dir.path().join("data").join("c.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let out = cosched()
        .current_dir(cwd.path())
        .args(["pairs", "--repeats", "1", "--min-repeats", "1", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = dir.path().join("data/figures/pairs-w.svg");
    assert!(svg.is_file(), "expected {}", svg.display());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&svg.display().to_string()), "the path is printed");
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "nothing written into the current directory");
}

/// the SX-Aurora paper's shape on this node: a host job and an accelerator-pool job.
/// `pairs` runs them where `run` would (the accelerator job on the host
/// pool's CPUs beside the host job, not on a CPU of its own), and every
/// repeat stores the cache regime read around it.
#[test]
fn an_accelerator_job_is_paired_on_the_host_cpus_and_every_repeat_keeps_its_regime() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        cosched_testkit::skip(cosched_testkit::Lacks::Machine, "a regime is read between two CPUs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("seed000.toml");
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"vh\"\nkind = \"cpu\"\ncores = 2\n\
         [[pools]]\nname = \"ve\"\nkind = \"accelerator\"\ncores = 2\nhost_load = 0.2\n\
         [[jobs]]\nname = \"vh\"\npool = \"vh\"\ncommand = \"sleep 0.1\"\n\
         [[jobs]]\nname = \"ve\"\npool = \"ve\"\ncommand = \"sleep 0.15\"\n",
    )
    .unwrap();
    let db = dir.path().join("c.db");
    let out = cosched()
        .args(["pairs", "--repeats", "2", "--min-repeats", "2", "--json", "--workload"])
        .arg(&wl)
        .arg("--svg")
        .arg(dir.path().join("m.svg"))
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"], serde_json::json!(["vh", "ve"]), "the matrix keeps its shape: {v}");
    assert_eq!(v["regimes"]["read"], 6, "three co-runs, two repeats each, all read: {v}");
    let store = Store::open_existing(&db).unwrap();
    let runs = store.pair_runs(store.campaigns().unwrap()[0].id).unwrap();
    assert_eq!(runs.len(), 6);
    for r in &runs {
        assert_eq!(r.regime.cpus, vec![0, 1], "{r:?}");
        assert!(r.regime.before_ns.is_some_and(|ns| ns > 0.0) && r.regime.after_ns.is_some_and(|ns| ns > 0.0), "{r:?}");
        assert_eq!(r.level.is_some(), r.regime.regime().is_some(), "a level when the regime held: {r:?}");
    }
    let vh_ve = runs.iter().find(|r| r.fg_job == "vh" && r.bg_job == "ve").unwrap();
    assert_eq!((vh_ve.fg_cpus.clone(), vh_ve.bg_cpus.clone(), vh_ve.shared_cpus), (vec![0], vec![0, 1], true));
    let vh_vh = runs.iter().find(|r| r.fg_job == "vh" && r.bg_job == "vh").unwrap();
    assert_eq!((vh_vh.fg_cpus.clone(), vh_vh.bg_cpus.clone(), vh_vh.shared_cpus), (vec![0], vec![1], false));
}

#[test]
fn ctrl_z_pauses_between_repeats_so_no_repeat_is_timed_across_the_pause() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosched-pairs-tstp-{}", std::process::id());
    let wl = workload(dir.path(), &marker);
    let db = dir.path().join("c.db");
    let mut child = cosched()
        .args(["pairs", "--repeats", "2", "--min-repeats", "2", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Ctrl-Z while a job is being timed.
    common::wait_while_alive(&mut child, "a job running", || !stray_processes(&[&marker]).is_empty());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTSTP).unwrap();
    wait_until("cosched stopped", || state(pid) == Some('T'));
    assert_eq!(stray_processes(&[&marker]), Vec::<String>::new(), "a job runs while cosched is stopped");
    let paused = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(state(pid), Some('T'), "cosched went on by itself");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGCONT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("paused between two measurements"), "{stderr}");
    assert!(paused.elapsed() >= std::time::Duration::from_millis(1500));
    // Jobs of 0.2 and 0.3 s: a repeat timed across the 1.5 s pause would
    // read over 1.5 s.
    let store = Store::open_existing(&db).unwrap();
    let c = store.campaigns().unwrap();
    let runs = store.pair_runs(c[0].id).unwrap();
    assert_eq!(runs.len(), 6);
    for r in &runs {
        for t in [r.fg_solo_s, r.fg_corun_s, r.bg_solo_s, r.bg_corun_s] {
            assert!(t < 1.2, "a time of {t:.2} s was taken across the pause: {r:?}");
        }
    }
}

#[test]
fn a_job_with_two_speeds_alone_is_named_and_a_steady_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let flip = dir.path().join("flip");
    let wl = dir.path().join("w.toml");
    // `twospeed` takes 0.05 s and 0.25 s on alternate runs (a file it
    // creates and removes), as a pipeline of two speeds does; `steady`
    // always 0.05 s.
    std::fs::write(
        &wl,
        format!(
            "[[jobs]]\nname = \"twospeed\"\ncommand = \"sh -c 'if rm {f} 2>/dev/null; then sleep 0.25; else touch {f}; sleep 0.05; fi'\"\n\
             [[jobs]]\nname = \"steady\"\ncommand = \"sleep 0.05\"\n",
            f = flip.display()
        ),
    )
    .unwrap();
    let db = dir.path().join("c.db");
    let out = cosched()
        .args(["pairs", "--repeats", "3", "--min-repeats", "3", "--svg", "/dev/null", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("warning: `twospeed` alone took"), "{text}");
    assert!(!text.contains("`steady` alone took"), "{text}");
    // The JSON report carries every job's spread.
    let out = cosched()
        .args(["pairs", "--repeats", "3", "--min-repeats", "3", "--json", "--svg", "/dev/null", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let solo = v["solo"].as_array().unwrap();
    assert_eq!(solo.len(), 2, "{solo:?}");
    let twospeed = solo.iter().find(|s| s["job"] == "twospeed").unwrap();
    assert!(twospeed["p90_s"].as_f64().unwrap() / twospeed["p10_s"].as_f64().unwrap() > 2.0, "{twospeed}");
}

/// A job is measured with the environment a run gives it: `pairs` and
/// `profile` pass its `env` and the thread count and CPUs a run sets
/// (before, both ran it without its `env`, so an OpenMP job's
/// `OMP_WAIT_POLICY` or a solver's input variable was lost).
#[test]
fn pairs_and_profile_run_each_job_with_its_env_and_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let path = dir.path().join("w.toml");
    let cmd = |name: &str| format!("sh -c 'echo {name} $MARK $OMP_NUM_THREADS $COSCHED_JOB >> {}; sleep 0.1'", seen.display());
    std::fs::write(
        &path,
        format!(
            "[[jobs]]\nname = \"a\"\ncommand = \"{}\"\nenv = {{ MARK = \"given\" }}\n\
             [[jobs]]\nname = \"b\"\ncommand = \"{}\"\nenv = {{ MARK = \"other\" }}\n",
            cmd("a"),
            cmd("b")
        ),
    )
    .unwrap();
    let db = dir.path().join("c.db");
    for verb in [&["pairs", "--repeats", "1", "--min-repeats", "1"][..], &["profile", "--repeats", "1"][..]] {
        let out = cosched().args(verb).arg("--workload").arg(&path).arg("--db").arg(&db).output().unwrap();
        assert!(out.status.success(), "{verb:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let lines = std::fs::read_to_string(&seen).unwrap();
    assert!(!lines.is_empty());
    for line in lines.lines() {
        assert!(line == "a given 1 a" || line == "b other 1 b", "a job ran without its environment: {line:?}\n{lines}");
    }
}
