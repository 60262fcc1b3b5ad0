//! Hardening of the binary (issue 19) and the job environment (issue 18),
//! each test one item of the adversarial list: inputs that never end are
//! refused with exit 2, a run with a job that did not end ok exits 1 naming
//! it and why, "Continue with" names the database, measuring verbs share
//! one node lock, reports never follow planted links and ignore the umask,
//! and a job's environment matches its cpuset.

mod common;
use common::{private_lock, wait_until};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use cosched_store::Store;

fn cosched(lock: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
    c.env("COSCHED_RUN_LOCK", lock).env_remove("COSCHED_DB");
    c
}

fn started(db: &Path) -> Vec<String> {
    let Ok(s) = Store::open_existing(db) else { return vec![] };
    let Ok(runs) = s.runs() else { return vec![] };
    runs.iter().flat_map(|r| s.run_jobs(r.id).unwrap_or_default()).map(|j| j.start.job).collect()
}

fn run(dir: &Path, wl: &str, lock: &Path) -> Command {
    let path = dir.join("w.toml");
    std::fs::write(&path, wl).unwrap();
    let mut c = cosched(lock);
    c.arg("run").arg("--workload").arg(&path).args(["--policy", "exclusive", "--solo", "stored", "--db"]).arg(dir.join("c.db"));
    c.env("COSCHED_DATA_DIR", dir).current_dir(dir);
    c
}

#[test]
fn check_refuses_an_endless_input_and_a_missing_program_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosched(&private_lock()).args(["check", "/dev/zero"]).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("/dev/zero: larger than 16 MiB"), "{e}");
    let wl = dir.path().join("w.toml");
    std::fs::write(&wl, "[[jobs]]\nname = \"a\"\ncommand = \"/nonexistent/bin\"\n").unwrap();
    let out = cosched(&private_lock()).arg("check").arg(&wl).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("w.toml:1:1: job `a` runs `/nonexistent/bin`: no executable file there"), "{e}");
}

#[test]
fn a_run_with_a_job_that_failed_exits_1_naming_the_job_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let wl = "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"good\"\ncommand = \"true\"\n\
              [[jobs]]\nname = \"bad\"\ncommand = [\"sh\", \"-c\", \"echo it-broke >&2; exit 3\"]\n";
    let out = run(dir.path(), wl, &private_lock()).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("1 job(s) did not end ok"), "{e}");
    assert!(e.contains("job `bad` in run 1 (exclusive repeat 1): failed (exit code 3): it-broke"), "{e}");
    assert!(!e.contains("job `good`"), "{e}");
}

#[test]
fn after_ctrl_c_continue_with_names_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let wl = "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"long\"\ncommand = \"sleep 30\"\n";
    let db = dir.path().join("c.db");
    let child = run(dir.path(), wl, &private_lock()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    wait_until("the job starting", || !started(&db).is_empty());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{e}");
    let cont = e.lines().find(|l| l.contains("Continue with:")).expect(&e);
    assert!(cont.contains(&format!("--db {}", db.display())), "{cont}");
    assert!(cont.contains("--solo stored") && cont.ends_with("--resume"), "{cont}");
}

#[test]
fn measuring_verbs_are_refused_while_a_run_holds_the_node_naming_its_pid_and_command() {
    let dir = tempfile::tempdir().unwrap();
    let lock = private_lock();
    let wl = "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"long\"\ncommand = \"sleep 30\"\n";
    let db = dir.path().join("c.db");
    let mut first = run(dir.path(), wl, &lock).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until("the job starting", || !started(&db).is_empty());
    let other = dir.path().join("other.db");
    let prof = dir.path().join("p.toml");
    std::fs::write(&prof, "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 1\n").unwrap();
    for args in [vec!["calibrate", "--kernel", "compute"], vec!["profile", "--workload", prof.to_str().unwrap()], vec!["pairs", "--workload", prof.to_str().unwrap()]] {
        let out = cosched(&lock).args(&args).arg("--db").arg(&other).output().unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains(&format!("pid {} (`", first.id())) && e.contains(" run --workload "), "{args:?}: {e}");
        assert!(e.contains(&format!("`cosched {}` runs measured work", args[0])), "{e}");
    }
    assert!(!other.exists(), "a refused verb opened no store");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(first.wait().unwrap().code(), Some(143));
}

#[test]
fn a_report_replaces_planted_links_and_ignores_a_zero_umask() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    std::fs::create_dir(&report).unwrap();
    let precious = dir.path().join("precious");
    std::fs::write(&precious, "keep").unwrap();
    std::os::unix::fs::symlink(&precious, report.join("index.html")).unwrap();
    std::os::unix::fs::symlink(&precious, report.join("logs")).unwrap();
    let wl = "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"a\"\ncommand = \"true\"\n";
    let mut c = run(dir.path(), wl, &private_lock());
    c.arg("--report").arg(&report);
    // Through a shell with umask 000, as a careless admin's session.
    let argv: Vec<String> = std::iter::once(c.get_program()).chain(c.get_args()).map(|a| format!("'{}'", a.to_string_lossy())).collect();
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(format!("umask 000; exec {}", argv.join(" ")));
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    let out = sh.current_dir(dir.path()).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep", "{e}");
    // The planted directory link is refused, not written through.
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("logs: is a symbolic link"), "{e}");
    std::fs::remove_file(report.join("logs")).unwrap();
    let out = sh.output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep");
    let index = report.join("index.html");
    assert!(std::fs::symlink_metadata(&index).unwrap().is_file());
    assert_eq!(std::fs::metadata(&index).unwrap().permissions().mode() & 0o777, 0o644);
    assert_eq!(std::fs::metadata(report.join("logs")).unwrap().permissions().mode() & 0o777, 0o755);
    let log = std::fs::read_dir(report.join("logs")).unwrap().flatten().next().unwrap().path().join("a.log");
    assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o644, "{}", log.display());
}

#[test]
fn an_env_job_sees_omp_and_cosched_variables_matching_its_cpuset() {
    let dir = tempfile::tempdir().unwrap();
    let wl = "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"show\"\ncommand = \"env\"\n\
              env = { MY_SETTING = \"42\" }\noutput = \"out/{job}-{run}-{repeat}.txt\"\n";
    let out = run(dir.path(), wl, &private_lock()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = Store::open_existing(&dir.path().join("c.db")).unwrap();
    let r = &s.runs().unwrap()[0];
    let job = &s.run_jobs(r.id).unwrap()[0];
    let cpus = &job.start.cpus;
    assert_eq!(cpus.len(), 1);
    let text = std::fs::read_to_string(dir.path().join(format!("out/show-{}-1.txt", r.id.0))).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for want in [
        format!("COSCHED_JOB=show"),
        format!("COSCHED_RUN={}", r.id.0),
        "COSCHED_REPEAT=1".to_string(),
        format!("COSCHED_CPUS={}", cpus[0]),
        "OMP_NUM_THREADS=1".to_string(),
        format!("OMP_PLACES={{{}}}", cpus[0]),
        "OMP_PROC_BIND=close".to_string(),
        "MY_SETTING=42".to_string(),
    ] {
        assert!(lines.contains(&want.as_str()), "no `{want}` in:\n{text}");
    }
}
