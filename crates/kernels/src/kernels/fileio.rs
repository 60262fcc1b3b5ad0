//! `fileio`: IOR-like file I/O in a temporary directory.
//!
//! The work (`work` MiB in total) is cut into files of `file_mib` MiB (the
//! last one shorter if needed). Each file is written with `block_kib` writes,
//! fsync'ed, dropped from the page cache (`POSIX_FADV_DONTNEED`, so the read
//! back goes to the device as IOR's does on a file system larger than memory;
//! file systems without a device such as tmpfs keep it cached), read back with
//! reads of the same size, verified against what was written, and deleted.
//! `ops` counts the bytes written plus the bytes read.
//!
//! The directory is a fresh `tempfile::TempDir` inside `dir` (default: the
//! system temporary directory) and is removed whatever happens: on errors by
//! its destructor, and on SIGINT / SIGTERM by a handler that only raises a
//! flag, checked between blocks, after which the kernel returns
//! [`KernelError::Interrupted`] (the binary then exits 130 / 143).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

use crate::util::{mix, splitmix64, KernelRun, Params, Timing, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "bytes";

const MIB: u64 = 1 << 20;

pub(crate) fn run(work: u64, p: &Params) -> Result<KernelRun, KernelError> {
    let block_kib = p.uint_min("block_kib", 1)?;
    let file_mib = p.uint_min("file_mib", 1)?;
    let total = work
        .checked_mul(MIB)
        .ok_or_else(|| KernelError::Usage(format!("--work {work}: too many MiB")))?;
    let file_bytes = file_mib
        .checked_mul(MIB)
        .ok_or_else(|| p.bad("file_mib", "too large"))?;
    // A block larger than a file is one write of the whole file.
    let block = usize::try_from(block_kib.saturating_mul(1024).min(file_bytes))
        .map_err(|_| p.bad("block_kib", "too large for this machine"))?;
    let parent = match p.text("dir") {
        "" => std::env::temp_dir(),
        d => Path::new(d).to_path_buf(),
    };

    let started = Instant::now();
    let _signals = SignalGuard::install()?;
    let dir = tempfile::Builder::new()
        .prefix("cosched-fileio-")
        .tempdir_in(&parent)
        .map_err(|e| KernelError::io(format!("creating a temporary directory in {}", parent.display()), e))?;
    let mut pattern: Vec<u8> = (0..block / 8).flat_map(|k| splitmix64(k as u64).to_le_bytes()).collect();
    let mut readback = vec![0u8; block];

    crate::progress::expect(2 * total);
    let t0 = Instant::now();
    crate::progress::go();
    let mut checksum = CHECKSUM_SEED;
    let mut done = 0u64;
    let mut index = 0u64;
    while done < total {
        let len = file_bytes.min(total - done);
        let path = dir.path().join(format!("file-{index:06}"));
        let sum = one_file(&path, index, len, &mut pattern, &mut readback)?;
        checksum = mix(checksum, sum);
        done += len;
        index += 1;
    }
    let wall_s = t0.elapsed().as_secs_f64();
    interrupted()?;
    dir.close()
        .map_err(|e| KernelError::io(format!("removing the temporary directory in {}", parent.display()), e))?;

    let timing = Timing { setup_s: t0.duration_since(started).as_secs_f64(), wall_s };
    let bytes = 2 * total;
    Ok(KernelRun::new(timing, bytes, OPS_UNIT, checksum)
        .bandwidth(bytes)
        .resolved("dir", parent.display().to_string()))
}

/// Writes, syncs, reads back, verifies and deletes one file of `len` bytes;
/// returns the checksum of what was read.
fn one_file(path: &Path, index: u64, len: u64, pattern: &mut [u8], readback: &mut [u8]) -> Result<u64, KernelError> {
    let io = |what: &str, e| KernelError::io(format!("{what} {}", path.display()), e);
    let mut f: File = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io("creating", e))?;
    let block = pattern.len() as u64;
    let blocks = len.div_ceil(block);
    let block_len = |b: u64| (len - b * block).min(block) as usize;

    let mut written = CHECKSUM_SEED;
    for b in 0..blocks {
        let n = block_len(b);
        // A distinct first word per block, so misplaced blocks are caught.
        pattern[..8].copy_from_slice(&((index << 32) | b).to_le_bytes());
        f.write_all(&pattern[..n]).map_err(|e| io("writing", e))?;
        crate::progress::add(n as u64);
        written = mix(written, block_sum(&pattern[..n]));
        interrupted()?;
    }
    f.sync_all().map_err(|e| io("fsync of", e))?;
    drop_cached_pages(&f).map_err(|e| io("dropping cached pages of", e))?;
    f.seek(SeekFrom::Start(0)).map_err(|e| io("seeking in", e))?;

    let mut read = CHECKSUM_SEED;
    for b in 0..blocks {
        let n = block_len(b);
        f.read_exact(&mut readback[..n]).map_err(|e| io("reading back", e))?;
        crate::progress::add(n as u64);
        read = mix(read, block_sum(&readback[..n]));
        interrupted()?;
    }
    drop(f);
    std::fs::remove_file(path).map_err(|e| io("deleting", e))?;
    if read != written {
        return Err(KernelError::Failed(format!(
            "the data read back from {} differs from what was written",
            path.display()
        )));
    }
    Ok(read)
}

/// Sum of the 8-byte words of a block (its length is a multiple of 1024).
fn block_sum(bytes: &[u8]) -> u64 {
    let words = bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("chunks of 8")))
        .fold(0u64, u64::wrapping_add);
    mix(words, bytes.len() as u64)
}

fn drop_cached_pages(f: &File) -> std::io::Result<()> {
    // SAFETY: the descriptor is open for the lifetime of `f`; fadvise only
    // reads its arguments.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(r))
    }
}

/// The signal that interrupted the current fileio runs (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

fn interrupted() -> Result<(), KernelError> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => Ok(()),
        sig => Err(KernelError::Interrupted(sig)),
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // An atomic store is async-signal-safe; the work loop does the rest.
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// Handlers installed while at least one fileio run is active in the process
/// (runs may overlap in tests or phased kernels); the first run saves the old
/// dispositions and the last one restores them.
static INSTALLED: Mutex<(usize, Option<(SigAction, SigAction)>)> = Mutex::new((0, None));

struct SignalGuard;

impl SignalGuard {
    fn install() -> Result<Self, KernelError> {
        let mut state = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
        if state.0 == 0 {
            SIGNAL.store(0, Ordering::SeqCst);
            // No SA_RESTART: a blocked write returns early (std retries it),
            // and the flag is seen at the next block.
            let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::empty(), SigSet::empty());
            let set = |sig| {
                // SAFETY: the handler only stores into an atomic, which is
                // async-signal-safe.
                unsafe { sigaction(sig, &action) }
                    .map_err(|e| KernelError::io(format!("installing a {sig} handler"), e.into()))
            };
            let old_int = set(Signal::SIGINT)?;
            let old_term = match set(Signal::SIGTERM) {
                Ok(o) => o,
                Err(e) => {
                    // SAFETY: restores the disposition that was in place before.
                    let _ = unsafe { sigaction(Signal::SIGINT, &old_int) };
                    return Err(e);
                }
            };
            state.1 = Some((old_int, old_term));
        }
        state.0 += 1;
        Ok(SignalGuard)
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        let mut state = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
        state.0 -= 1;
        if state.0 == 0 {
            if let Some((old_int, old_term)) = state.1.take() {
                // SAFETY: these are the dispositions saved at installation,
                // valid handlers (or SIG_DFL / SIG_IGN) of this process.
                unsafe {
                    let _ = sigaction(Signal::SIGINT, &old_int);
                    let _ = sigaction(Signal::SIGTERM, &old_term);
                }
            }
        }
    }
}
