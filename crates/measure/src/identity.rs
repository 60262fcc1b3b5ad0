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

fn digest_of(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).ok()?;
    Some(h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
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
}
