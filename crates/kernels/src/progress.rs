//! The work done so far, for whoever watches the kernel run (issue 38: the
//! node runner's online slowdown estimate). When `COSCHED_PROGRESS_FILE`
//! names a file, a thread rewrites it every [`PERIOD`] during the work
//! phase with one line, `DONE TOTAL MONO_NS`: units done, units in all,
//! and the CLOCK_MONOTONIC instant of the reading, so a reader on the same
//! node dates it exactly however late it reads. Without the variable
//! nothing is started and counting is one relaxed atomic add.
//!
//! Units are each kernel's own (FMA units, bytes, passes x elements);
//! only the ratio of rates matters to a reader. Set-up is not work: the
//! file stays empty until [`go`], called where the work phase's clock starts.

use std::io::{Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The variable naming the file.
pub const ENV: &str = "COSCHED_PROGRESS_FILE";

/// How often the file is rewritten.
pub const PERIOD: Duration = Duration::from_millis(20);

static DONE: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);
static GO: AtomicBool = AtomicBool::new(false);

/// Units done so far by every thread of the kernel.
#[inline]
pub(crate) fn add(units: u64) {
    DONE.fetch_add(units, Ordering::Relaxed);
}

/// Declares the whole work and, when the variable is set, starts the
/// writer (which waits for [`go`]). A file that cannot be opened is
/// ignored: progress is for watchers, never a reason to fail the work.
pub(crate) fn expect(total: u64) {
    TOTAL.store(total, Ordering::Relaxed);
    let Some(path) = std::env::var_os(ENV) else { return };
    let Ok(mut file) = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&path) else { return };
    let _ = std::thread::Builder::new().name("progress".into()).spawn(move || loop {
        std::thread::sleep(PERIOD);
        if !GO.load(Ordering::Acquire) {
            continue;
        }
        // Padded to a fixed width, so a rewrite never leaves the tail of a
        // longer line behind; a reader takes the first three words.
        let line = format!("{} {} {}", DONE.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed), monotonic_ns());
        let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.write_all(format!("{line:<63}\n").as_bytes()));
    });
}

/// The work phase starts now.
pub(crate) fn go() {
    GO.store(true, Ordering::Release);
}

/// CLOCK_MONOTONIC in nanoseconds (the clock `Instant` reads on Linux).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
