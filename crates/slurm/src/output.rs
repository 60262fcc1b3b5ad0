//! A job's output file, read for learning only as far as is safe: the
//! path is the job's user's choice (`sbatch -o /dev/zero`, a FIFO, a link
//! to someone else's file), so it is read only if it is a regular file of
//! that user, not a link, no larger than [`OUTPUT_BOUND`], opened without
//! blocking. Anything else is refused with the reason and the job is
//! timed from Slurm's own record instead.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::parse::QueueJob;

/// Largest output file read, bytes: a kernel's report is one short line.
pub const OUTPUT_BOUND: u64 = 1 << 20;

/// The output path of `job` with Slurm's `%` patterns that cosched can
/// expand (`%%`, `%j`, `%J`, `%A`, `%x`, `%N`), relative to its working
/// directory; anything else (`%u`, array indexes, widths, `\` escapes) is
/// refused rather than guessed.
pub fn output_path(job: &QueueJob) -> Result<PathBuf, String> {
    let pattern = if job.stdout.is_empty() { "slurm-%j.out" } else { job.stdout.as_str() };
    if pattern.contains('\\') {
        return Err("its output path has `\\` escapes".into());
    }
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('j' | 'J' | 'A') => out.push_str(&job.id.to_string()),
            Some('x') => out.push_str(&job.name),
            Some('N') => out.push_str(job.nodes.first().map_or("", String::as_str)),
            other => return Err(format!("its output path has the pattern `%{}`, which cosched does not expand", other.map_or(String::new(), String::from))),
        }
    }
    let path = PathBuf::from(out);
    if path.is_relative() {
        if job.work_dir.is_empty() {
            return Err("its output path is relative and its working directory unknown".into());
        }
        return Ok(PathBuf::from(&job.work_dir).join(path));
    }
    Ok(path)
}

/// The text of `job`'s output file, if it is safe to read (module doc).
pub fn read_output(job: &QueueJob) -> Result<String, String> {
    let path = output_path(job)?;
    let shown = path.display();
    let uid = job.user_id.ok_or("its user is unknown")?;
    let m = std::fs::symlink_metadata(&path).map_err(|e| format!("{shown}: {e}"))?;
    if !m.file_type().is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    if m.uid() != uid {
        return Err(format!("{shown}: owned by uid {}, not by the job's user {uid}", m.uid()));
    }
    if m.len() > OUTPUT_BOUND {
        return Err(format!("{shown}: {} bytes, more than the {OUTPUT_BOUND} cosched reads", m.len()));
    }
    // Swapped for a FIFO or a device between the look and the open: the
    // open does not block, and the file opened is checked again.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(&path)
        .map_err(|e| format!("{shown}: {e}"))?;
    let m2 = f.metadata().map_err(|e| format!("{shown}: {e}"))?;
    if !m2.file_type().is_file() || (m2.dev(), m2.ino()) != (m.dev(), m.ino()) {
        return Err(format!("{shown}: changed while being opened"));
    }
    let mut bytes = Vec::new();
    f.take(OUTPUT_BOUND).read_to_end(&mut bytes).map_err(|e| format!("{shown}: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The work-phase seconds a kernel printed in its JSON report (its last
/// JSON line's `wall_s`), if any.
pub fn kernel_work_s(text: &str) -> Option<f64> {
    let line = text.lines().rev().find(|l| l.trim_start().starts_with('{'))?;
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v.get("wall_s")?.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::JobState;

    fn job(stdout: &str, dir: &str) -> QueueJob {
        QueueJob {
            id: 42,
            partition: "cosched".into(),
            state: JobState::Completed,
            reason: String::new(),
            priority: 1,
            cpus: 1,
            nodes: vec!["n1".into()],
            requested: vec![],
            submit: None,
            start: None,
            end: None,
            exit_code: 0,
            dependency: String::new(),
            // SAFETY: geteuid has no preconditions and cannot fail.
            user_id: Some(unsafe { libc::geteuid() }),
            name: "s1".into(),
            command: String::new(),
            comment: String::new(),
            admin_comment: String::new(),
            stdout: stdout.into(),
            work_dir: dir.into(),
            site: Default::default(),
        }
    }

    #[test]
    fn output_patterns_expand_or_are_refused() {
        assert_eq!(output_path(&job("/o/%x-%j.%N.out", "/w")).unwrap(), PathBuf::from("/o/s1-42.n1.out"));
        assert_eq!(output_path(&job("", "/w")).unwrap(), PathBuf::from("/w/slurm-42.out"));
        assert_eq!(output_path(&job("rel/100%%", "/w")).unwrap(), PathBuf::from("/w/rel/100%"));
        assert!(output_path(&job("/o/%u.out", "/w")).unwrap_err().contains("`%u`"));
        assert!(output_path(&job("/o/a\\%j", "/w")).is_err());
    }

    #[test]
    fn only_a_small_regular_file_of_the_jobs_user_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_string_lossy().into_owned();
        std::fs::write(dir.path().join("ok.out"), "x\n{\"wall_s\": 1.5}\n").unwrap();
        assert_eq!(kernel_work_s(&read_output(&job("ok.out", &d)).unwrap()), Some(1.5));
        for dev in ["/dev/zero", "/dev/null"] {
            assert!(read_output(&job(dev, &d)).unwrap_err().contains("not a regular file"), "{dev}");
        }
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(read_output(&job("fifo", &d)).unwrap_err().contains("not a regular file"));
        std::os::unix::fs::symlink(dir.path().join("ok.out"), dir.path().join("link")).unwrap();
        assert!(read_output(&job("link", &d)).unwrap_err().contains("not a regular file"));
        let big = std::fs::File::create(dir.path().join("big")).unwrap();
        big.set_len(OUTPUT_BOUND + 1).unwrap();
        assert!(read_output(&job("big", &d)).unwrap_err().contains("more than"));
        let mut other = job("ok.out", &d);
        other.user_id = other.user_id.map(|u| u + 1);
        assert!(read_output(&other).unwrap_err().contains("not by the job's user"));
    }
}
