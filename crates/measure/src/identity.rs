//! Which program a job runs, as one stable key across workload files, so
//! every campaign of every workload adds to one knowledge base.
//!
//! A kernel job is the kernel, its parameters, its resolved work, threads
//! and cores: what `cosched-kernel` is asked to do (the kernels are versioned
//! with cosched itself). A command is its executable's content (SHA-256,
//! first 16 hex digits) and its arguments and cores: the same script or
//! binary under two names is one program, and a rebuilt binary is a new
//! one, whose slowdowns must be measured or predicted afresh.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// `kernel stream --work 501 --threads 1 --array-mib 64 cores=1`, or
/// `command sha256:0123456789abcdef stress-ng --cpu 1 cores=1` (the
/// executable's name stays for people; the digest decides identity).
pub fn program_key(is_kernel: bool, argv: &[String], cores: u32) -> String {
    if is_kernel {
        // argv[0] is the kernel binary's path, which differs between
        // installs; --json only changes how it reports.
        let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).filter(|a| *a != "--json").collect();
        return format!("kernel {} cores={cores}", args.join(" "));
    }
    let Some(exe) = argv.first() else { return format!("command (empty) cores={cores}") };
    let digest = resolve(exe).and_then(|p| digest_of(&p)).unwrap_or_else(|| "unreadable".into());
    let name = Path::new(exe).file_name().map_or(exe.clone(), |n| n.to_string_lossy().into_owned());
    let rest: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    let args = if rest.is_empty() { String::new() } else { format!(" {}", rest.join(" ")) };
    format!("command sha256:{digest} {name}{args} cores={cores}")
}

/// Whether `argv` runs a kernel of the catalogue: its binary, by name.
pub fn is_kernel_argv(argv: &[String]) -> bool {
    argv.first().is_some_and(|a| Path::new(a).file_name().is_some_and(|n| n == "cosched-kernel"))
}

/// The file `exe` names: itself when it has a `/`, else the first match on
/// $PATH, as `execvp` finds it.
fn resolve(exe: &str) -> Option<PathBuf> {
    if exe.contains('/') {
        return Some(PathBuf::from(exe));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(exe)).find(|p| p.is_file())
}

/// Where the child's `execvp` would find `prog`, when that is sure from
/// here: a name without `/`, searched on the job's `PATH` (its `env`, else
/// ours) in absolute directories only (a relative one would be relative to
/// the job's working directory), the first regular file with an execute bit
/// (for another user, one everyone may execute). `None` leaves the search
/// to the child, as before.
pub fn on_path(prog: &str, env: &[(String, String)], other_user: bool) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if prog.is_empty() || prog.contains('/') {
        return None;
    }
    let path = match env.iter().rev().find(|(k, _)| k == "PATH") {
        Some((_, v)) => std::ffi::OsString::from(v),
        None => std::env::var_os("PATH")?,
    };
    for dir in std::env::split_paths(&path) {
        if !dir.is_absolute() {
            return None;
        }
        let exe = dir.join(prog);
        let Ok(meta) = std::fs::metadata(&exe) else { continue };
        let mode = meta.permissions().mode();
        if !meta.is_file() || mode & 0o111 == 0 {
            continue;
        }
        // Another user may not execute what root could: `execvp` would go
        // on to the next directory, so the child searches.
        if other_user && mode & 0o001 == 0 {
            return None;
        }
        return Some(exe);
    }
    None
}

/// The file's digest, computed once per process for each version of a
/// file (device, inode, size, modification time): a workload of 40 jobs of
/// one program hashed its executable 80 times before the first job started
/// (issue 42's lead), and a rebuilt binary is a new version. A file changed
/// within the last second is hashed every time: file times are coarse (a
/// rewrite in the same tick keeps them), and a version older than that can
/// only change to a newer time.
fn digest_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    type Version = (u64, u64, u64, i64, i64);
    static SEEN: std::sync::Mutex<Vec<(Version, String)>> = std::sync::Mutex::new(Vec::new());
    let mut f = std::fs::File::open(path).ok()?;
    let m = f.metadata().ok()?;
    let version: Version = (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec());
    if let Some((_, d)) = SEEN.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(v, _)| *v == version) {
        return Some(d.clone());
    }
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).ok()?;
    let digest: String = h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let settled = m.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= std::time::Duration::from_secs(1));
    if settled {
        SEEN.lock().unwrap_or_else(|e| e.into_inner()).push((version, digest.clone()));
    }
    Some(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_kernel_key_ignores_the_binary_path_and_reporting_flag() {
        let a = program_key(true, &argv(&["/usr/local/bin/cosched-kernel", "stream", "--work", "501", "--threads", "1", "--json"]), 1);
        let b = program_key(true, &argv(&["/tmp/x/target/release/cosched-kernel", "stream", "--work", "501", "--threads", "1"]), 1);
        assert_eq!(a, "kernel stream --work 501 --threads 1 cores=1");
        assert_eq!(a, b);
        assert_ne!(a, program_key(true, &argv(&["k", "stream", "--work", "502", "--threads", "1"]), 1), "more work is another program");
        assert_ne!(a, program_key(true, &argv(&["k", "stream", "--work", "501", "--threads", "1"]), 2), "more cores too");
    }

    #[test]
    fn a_command_key_follows_the_executables_content_not_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (dir.path().join("solver"), dir.path().join("renamed"));
        std::fs::write(&one, "#!/bin/sh\necho v1\n").unwrap();
        std::fs::copy(&one, &two).unwrap();
        let key = |p: &Path| program_key(false, &argv(&[p.to_str().unwrap(), "--size", "8"]), 1);
        let (k1, k2) = (key(&one), key(&two));
        assert!(k1.starts_with("command sha256:") && k1.ends_with(" solver --size 8 cores=1"), "{k1}");
        assert_eq!(k1.split(' ').nth(1), k2.split(' ').nth(1), "same content, same digest under another name");
        std::fs::write(&one, "#!/bin/sh\necho v2\n").unwrap();
        assert_ne!(key(&one), k1, "a rebuilt binary is a new program");
        // Found on $PATH as execvp would.
        assert!(program_key(false, &argv(&["sh", "-c", "true"]), 1).starts_with("command sha256:"));
        assert!(program_key(false, &argv(&["/no/such/exe"]), 1).contains("sha256:unreadable"));
    }

    #[test]
    fn a_settled_executable_is_hashed_once_and_a_rewrite_is_seen_however_soon() {
        use std::time::{Duration, SystemTime};
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("solver");
        std::fs::write(&exe, "#!/bin/sh\necho v1\n").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&exe).unwrap().set_modified(old).unwrap();
        let k1 = digest_of(&exe).unwrap();
        assert_eq!(digest_of(&exe).unwrap(), k1);
        // Same size, rewritten in place: its new time tells it apart from
        // the version the cache holds, and a version this fresh is not kept.
        std::fs::write(&exe, "#!/bin/sh\necho v2\n").unwrap();
        let k2 = digest_of(&exe).unwrap();
        assert_ne!(k2, k1);
        std::fs::write(&exe, "#!/bin/sh\necho v3\n").unwrap();
        assert_ne!(digest_of(&exe).unwrap(), k2, "rewritten within the same clock tick");
    }

    #[test]
    fn a_program_named_without_a_slash_is_found_on_the_jobs_path_and_keeps_its_name() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&first).unwrap();
        std::fs::create_dir(&second).unwrap();
        // Not executable in the first directory: execvp goes on, so do we.
        std::fs::write(first.join("prog"), "#!/bin/sh\necho first\n").unwrap();
        std::fs::write(second.join("prog"), "#!/bin/sh\necho second\n").unwrap();
        std::fs::set_permissions(second.join("prog"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}:/bin", first.display(), second.display());
        let mut l = crate::launch::Launch::new(vec!["prog".into()]);
        l.env.push(("PATH".into(), path.clone()));
        assert_eq!(on_path("prog", &l.env, false), Some(second.join("prog")));
        assert_eq!(crate::launch::run(&l).unwrap().stdout.trim(), "second");
        // A job run as another user: only a file everyone may execute.
        assert_eq!(on_path("prog", &l.env, true), Some(second.join("prog")));
        std::fs::set_permissions(second.join("prog"), std::fs::Permissions::from_mode(0o750)).unwrap();
        assert_eq!(on_path("prog", &l.env, true), None);
        assert_eq!(on_path("prog", &l.env, false), Some(second.join("prog")));
        // A relative directory before it is the child's to search (it is
        // relative to the job's working directory), a path is never searched.
        l.env.push(("PATH".into(), format!("rel:{path}")));
        assert_eq!(on_path("prog", &l.env, false), None);
        assert_eq!(on_path("./prog", &l.env, false), None);
        assert_eq!(on_path(&second.join("prog").display().to_string(), &l.env, false), None);
        // The job sees the name it was given as its argv[0], not the path.
        let o = crate::launch::run(&crate::launch::Launch::new(vec!["sh".into(), "-c".into(), "tr '\\0' ' ' < /proc/$$/cmdline".into()])).unwrap();
        assert!(o.stdout.starts_with("sh -c "), "{}", o.stdout);
    }
}
