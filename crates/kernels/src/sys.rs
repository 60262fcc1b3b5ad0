//! Small operating-system helpers used by several kernels.

use std::path::Path;

/// Size in bytes of the last-level cache seen by CPU 0, from
/// `/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`; `None` when
/// sysfs does not say.
pub fn llc_bytes() -> Option<u64> {
    llc_bytes_in(Path::new("/sys/devices/system/cpu/cpu0/cache"))
}

fn llc_bytes_in(dir: &Path) -> Option<u64> {
    let mut best: Option<(u32, u64)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("index") {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(entry.path().join(f)).ok();
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let (Some(level), Some(size)) = (read("level"), read("size")) else { continue };
        let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_cache_size(&size)) else {
            continue;
        };
        if !matches!(best, Some((l, _)) if l >= level) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size)
}

/// Parses sysfs cache sizes such as `32768K`, `1M` or `512` (bytes).
pub(crate) fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1024),
        b'M' | b'm' => (&s[..s.len() - 1], 1024 * 1024),
        b'G' | b'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok().map(|v| v * mult).filter(|v| *v > 0)
}

/// One cheap system call that glibc does not cache: `getppid` through
/// `syscall(2)`. Returns whether it succeeded.
#[inline]
pub(crate) fn cheap_syscall() -> bool {
    // SAFETY: getppid takes no arguments, touches no memory of ours and cannot
    // fail in a way that leaves state behind.
    let r = unsafe { libc::syscall(libc::SYS_getppid) };
    r >= 0
}

/// `clock_gettime(CLOCK_MONOTONIC)` through `syscall(2)`, so it enters the
/// kernel: glibc's wrapper would answer from the vDSO without a system call,
/// which is not what the SX-Aurora paper's micro-benchmark forwards.
#[inline]
pub(crate) fn clock_syscall() -> bool {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the kernel writes one timespec into `ts`, which lives on this
    // stack frame for the whole call.
    let r = unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts as *mut libc::timespec) };
    r == 0 && ts.tv_sec + ts.tv_nsec > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse_with_their_suffix() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("0K"), None);
        assert_eq!(parse_cache_size("big"), None);
    }

    #[test]
    fn llc_is_the_highest_data_level() {
        let dir = tempfile::tempdir().unwrap();
        for (i, (level, ty, size)) in
            [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"), (3, "Unified", "16M")]
                .iter()
                .enumerate()
        {
            let d = dir.path().join(format!("index{i}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{ty}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(llc_bytes_in(dir.path()), Some(16 << 20));
        assert_eq!(llc_bytes_in(&dir.path().join("missing")), None);
    }
}
