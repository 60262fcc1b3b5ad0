//! Hardening of the binary (issue 19) and the job environment (issue 18),
//! each test one item of the adversarial list: inputs that never end are
//! refused with exit 2, a run with a job that did not end ok exits 1 naming
//! it and why, "Continue with" names the database, measuring verbs share
//! one node lock, reports never follow planted links and ignore the umask,
//! and a job's environment matches its cpuset. Issue 36: under sudo no verb
//! writes a file the invoking user could not, and job output that is a
//! device, a FIFO or one 300 MB line is never read back whole.

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
        "COSCHED_JOB=show".to_string(),
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

/// An unprivileged user made for one test (`useradd --system`), removed
/// when dropped; `None` (with `skipped:` printed) when not root.
struct TestUser {
    name: String,
    uid: u32,
}

impl TestUser {
    fn new(test: &str) -> Option<TestUser> {
        // SAFETY: geteuid cannot fail and touches no memory.
        if unsafe { libc::geteuid() } != 0 {
            cosched_testkit::skip(cosched_testkit::Lacks::Installed, &format!("{test} needs root to create a user and act for it"));
            return None;
        }
        let name = format!("cosched-t-{}", std::process::id());
        // Retried: another test's useradd may hold /etc/passwd's lock.
        let add = || Command::new("useradd").args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", &name]).status();
        let ok = (0..10).map(|_| add()).find(|r| r.as_ref().is_ok_and(|s| s.success()) || { std::thread::sleep(std::time::Duration::from_millis(300)); false }).unwrap_or_else(add);
        if !ok.as_ref().is_ok_and(|s| s.success()) {
            cosched_testkit::skip(cosched_testkit::Lacks::Installed, &format!("{test}: useradd {name} failed ({ok:?})"));
            return None;
        }
        let o = Command::new("id").args(["-u", &name]).output().unwrap();
        let uid = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
        Some(TestUser { name, uid })
    }

    /// `c` as `sudo` would start it for this user.
    fn sudo<'a>(&self, c: &'a mut Command) -> &'a mut Command {
        let o = Command::new("id").args(["-g", &self.name]).output().unwrap();
        c.env("SUDO_UID", self.uid.to_string()).env("SUDO_GID", String::from_utf8_lossy(&o.stdout).trim()).env("SUDO_USER", &self.name)
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).status();
    }
}

/// Content, mode, owner and inode of a file.
fn snapshot(p: &Path) -> (Vec<u8>, u32, u32, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (std::fs::read(p).unwrap(), m.mode(), m.uid(), m.ino())
}

#[test]
fn under_sudo_no_verb_writes_a_file_the_invoking_user_could_not() {
    use std::os::unix::fs::MetadataExt;
    let Some(u) = TestUser::new("under_sudo_no_verb_writes_a_file_the_invoking_user_could_not") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Everyone may write here: only the file's own permissions protect it.
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shadow = d.join("shadow");
    std::fs::write(&shadow, "root:secret\n").unwrap();
    std::fs::set_permissions(&shadow, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = snapshot(&shadow);
    let locked = d.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = d.join("c.db");
    drop(Store::open(&db).unwrap());
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/seed000.toml");
    let lock = private_lock();
    let trace = |out: &Path| {
        let mut c = cosched(&lock);
        c.arg("simulate").arg("--scenario").arg(&scenario).args(["--orders", "1", "--trace"]).arg(out);
        u.sudo(&mut c).output().unwrap()
    };
    let export = |out: &Path| {
        let mut c = cosched(&lock);
        c.args(["db", "export", "--format", "json", "--db"]).arg(&db).arg("--out").arg(out);
        u.sudo(&mut c).output().unwrap()
    };
    for (what, out) in [("simulate --trace", trace(&shadow)), ("db export --out", export(&shadow))] {
        let e = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{what}: {e}");
        assert!(e.contains("shadow") && e.contains("Permission denied"), "{what}: {e}");
        assert_eq!(snapshot(&shadow), before, "{what}");
    }
    // A file in a directory the user may not write is not created.
    for out in [trace(&locked.join("t.csv")), export(&locked.join("e.json"))] {
        assert_ne!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(std::fs::read_dir(&locked).unwrap().count(), 0);
    // A symbolic link to the root file is never written through.
    let link = d.join("link.json");
    std::os::unix::fs::symlink(&shadow, &link).unwrap();
    let out = export(&link);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot(&shadow), before);
    // What the user may write is written, and is theirs.
    let ok = d.join("trace.csv");
    let out = trace(&ok);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for p in [&ok, &link] {
        let m = std::fs::symlink_metadata(p).unwrap();
        assert!(m.is_file() && m.uid() == u.uid && m.len() > 0, "{}: {m:?}", p.display());
    }

    // A database root made is refused to the user's `run`, left as it was;
    // one that is the user's is theirs to write.
    let db_before = snapshot(&db);
    let mut c = run(d, "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"a\"\ncommand = \"true\"\n", &lock);
    let out = u.sudo(&mut c).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("c.db") && e.contains("Permission denied") && e.contains("invoking user"), "{e}");
    assert_eq!(snapshot(&db), db_before, "{e}");
    std::os::unix::fs::chown(&db, Some(u.uid), None).unwrap();

    // run: a job's output and the report's files, root-only, are refused.
    let report = d.join("report");
    std::fs::create_dir(&report).unwrap();
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o777)).unwrap();
    let index = report.join("index.html");
    std::fs::write(&index, "root's page").unwrap();
    std::fs::set_permissions(&index, std::fs::Permissions::from_mode(0o600)).unwrap();
    let index_before = snapshot(&index);
    let wl = format!(
        "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"a\"\ncommand = [\"sh\", \"-c\", \"echo taken\"]\noutput = \"{}\"\n",
        shadow.display()
    );
    let mut c = run(d, &wl, &lock);
    c.arg("--report").arg(&report);
    let out = u.sudo(&mut c).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{e}");
    assert!(e.contains("index.html") && e.contains("Permission denied"), "{e}");
    assert_eq!(snapshot(&shadow), before, "{e}");
    assert_eq!(snapshot(&index), index_before, "{e}");
}

/// Peak resident memory (KiB) of `c`'s process, sampled from /proc while
/// it runs (VmHWM only grows), with its output.
fn peak_of(c: &mut Command) -> (u64, std::process::Output) {
    let child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = peak.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let sampler = std::thread::spawn(move || {
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let hwm = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()));
            if let Some(k) = hwm {
                seen.fetch_max(k, std::sync::atomic::Ordering::SeqCst);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    sampler.join().unwrap();
    (peak.load(std::sync::atomic::Ordering::SeqCst), out)
}

#[test]
fn a_300_mb_output_line_is_shown_cut_and_the_runner_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let wl = "[[pools]]\nname = \"host\"\ncores = 1\n[[jobs]]\nname = \"long\"\n\
              command = [\"sh\", \"-c\", \"head -c 300000000 /dev/zero | tr '\\\\0' x; printf '\\\\n\\\\033[2J'; exit 3\"]\n";
    let (peak_kib, out) = peak_of(&mut run(dir.path(), wl, &private_lock()));
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", &e[..e.len().min(2000)]);
    assert!(e.len() < 4000, "stderr holds {} bytes", e.len());
    assert!(e.contains("job `long` in run 1 (exclusive repeat 1): failed (exit code 3): \\e[2J"), "{e}");
    assert!(!e.contains('\u{1b}'), "an escape sequence reached the terminal raw: {e}");
    assert!(peak_kib > 0 && peak_kib < 150 * 1024, "cosched's peak memory was {peak_kib} KiB");
    let out = run(dir.path(), &wl.replace("\\\\033[2J", ""), &private_lock()).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("bytes cut] xxxx") && e.contains("more bytes]") && e.len() < 4000, "{}", &e[..e.len().min(2000)]);
}

#[test]
fn device_and_fifo_outputs_finish_without_a_terminal_and_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
    let mut wl = String::from("[[pools]]\nname = \"host\"\ncores = 1\n");
    for (name, out) in [("zero", "/dev/zero"), ("full", "/dev/full"), ("tty", "/dev/tty"), ("fifo", fifo.to_str().unwrap())] {
        // `exit 0`: writing into /dev/full fails, and that is the job's business.
        wl.push_str(&format!("[[jobs]]\nname = \"{name}\"\ncommand = [\"sh\", \"-c\", \"echo hi; exit 0\"]\noutput = \"{out}\"\n"));
    }
    let mut c = run(dir.path(), &wl, &private_lock());
    // No controlling terminal, as under a batch system or nohup.
    // SAFETY: setsid is async-signal-safe and touches no memory.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            libc::setsid();
            Ok(())
        });
    }
    let (peak_kib, out) = peak_of(c.stdin(Stdio::null()));
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("2 job(s) did not end ok"), "{e}");
    assert!(e.contains("job `tty` in run 1 (exclusive repeat 1): spawn-failed: ") && e.contains("/dev/tty: a device everyone may write, but it cannot be opened"), "{e}");
    assert!(e.contains("job `fifo` in run 1 (exclusive repeat 1): spawn-failed: ") && e.contains("fifo: is a device, FIFO or socket"), "{e}");
    assert!(peak_kib < 150 * 1024, "cosched's peak memory was {peak_kib} KiB");
}
