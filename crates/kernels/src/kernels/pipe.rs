//! `pipe`: a stream of bytes through a pipe from one process to another, as
//! a shell pipeline moves data (`head -c 1G /dev/zero | openssl enc ...`).
//!
//! The parent reads `work` MiB from /dev/zero in `chunk_kib` reads and
//! writes each chunk into the pipe, as `head -c N /dev/zero` does; a forked
//! child reads them in reads of `read_kib` and drops them, as `cat >
//! /dev/null` does. Neither touches the data in user space: the time goes
//! to the kernel (zeroing the writer's buffer, copies in and out of the
//! pipe, page handling, wake-ups and the context switches between the two
//! ends). `source = memory` leaves out the zeroing: the writer writes one
//! buffer again and again. A one-core job time-shares its
//! core between the two ends, as a pipeline pinned to one core does; with
//! two CPUs or more each end gets one, as `pingpong`'s do.
//!
//! Why a kernel of its own: shell pipelines are a common way to feed a
//! program, and the pipe path is a resource no other kernel exercises. It
//! was built as a probe stressor after a pipeline of zeros slowed `openssl
//! enc` 2.4-3.2x on the reference node; that turned out to be /dev/null
//! being a regular file both wrote into, and with a real /dev/null neither
//! slows the other (1.00; docs/measurements.md, 2026-11-25).

use std::os::fd::AsRawFd;
use std::time::Instant;

use super::child::{end_sets, Child};
use crate::util::{bind_current_thread, mix, KernelRun, Params, Timing, CHECKSUM_SEED};
use crate::KernelError;

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "bytes";

/// How errors name the forked process.
const PEER: &str = "the pipe's reader";

/// Largest chunk: a pipe holds 64 KiB by default; 16 MiB is far past it.
const MAX_CHUNK_KIB: u64 = 16 * 1024;

const MIB: u64 = 1 << 20;

pub(crate) fn run(work: u64, p: &Params) -> Result<KernelRun, KernelError> {
    let kib = |name: &str| -> Result<usize, KernelError> {
        let v = p.uint_min(name, 1)?;
        if v > MAX_CHUNK_KIB {
            return Err(p.bad(name, &format!("expected at most {MAX_CHUNK_KIB} (16 MiB), got {v}")));
        }
        Ok((v * 1024) as usize)
    };
    let (chunk, read_chunk) = (kib("chunk_kib")?, kib("read_kib")?);
    let zero = match p.text("source") {
        "zero" => Some(std::fs::File::open("/dev/zero").map_err(|e| KernelError::io("opening /dev/zero", e))?),
        "memory" => None,
        other => return Err(p.bad("source", &format!("`{other}` is not one of zero, memory"))),
    };
    let total = work.checked_mul(MIB).ok_or_else(|| KernelError::Failed(format!("{work} MiB is too much to move")))?;
    let (timing, moved) = stream(total, chunk, read_chunk, zero.as_ref().map(|f| f.as_raw_fd()))?;
    let checksum = mix(mix(CHECKSUM_SEED, moved), chunk as u64);
    Ok(KernelRun::new(timing, moved, OPS_UNIT, checksum).bandwidth(moved))
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Moves `total` bytes through a pipe in writes of `chunk` and reads of
/// `read_chunk`, each write's bytes first read from `zero` (/dev/zero) when
/// given; returns the timing and the bytes the reader confirmed (it exits 0
/// only if it read exactly `total`).
fn stream(total: u64, chunk: usize, read_chunk: usize, zero: Option<libc::c_int>) -> Result<(Timing, u64), KernelError> {
    let started = Instant::now();
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid out-array of two ints for the call.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(KernelError::io("pipe2", std::io::Error::last_os_error()));
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    // Both buffers exist before the fork: the child cannot allocate.
    let mut out = vec![0u8; chunk];
    let mut inbuf = vec![0u8; read_chunk];
    let (mine, peer) = end_sets();
    let child = Child::spawn(PEER, || {
        if let Some(set) = &peer {
            bind_current_thread(set);
        }
        // SAFETY: the child's copy of the write end; closing it lets the
        // child see end-of-file once the parent closes its own.
        unsafe { libc::close(write_fd) };
        read_all(read_fd, &mut inbuf, total)
    });
    // SAFETY: the parent never reads; its copy of the read end is closed so
    // a dead reader shows as EPIPE rather than a full pipe that never drains.
    unsafe { libc::close(read_fd) };
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(write_fd) };
            return Err(e);
        }
    };
    drop(inbuf);
    if let Some(set) = &mine {
        bind_current_thread(set);
    }

    let t0 = Instant::now();
    let mut left = total;
    let mut failure = None;
    while left > 0 {
        let n = left.min(chunk as u64) as usize;
        if let Some(z) = zero {
            // SAFETY: `out` is valid for writes of `n <= chunk` bytes.
            let r = unsafe { libc::read(z, out.as_mut_ptr().cast(), n) };
            if r < 0 && errno() != libc::EINTR {
                failure = Some(errno());
                break;
            }
        }
        // SAFETY: `out` is valid for reads of `n <= chunk` bytes. A vanished
        // reader gives EPIPE, not death by SIGPIPE: Rust's runtime ignores
        // SIGPIPE before `main`.
        let w = unsafe { libc::write(write_fd, out.as_ptr().cast(), n) };
        if w < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            failure = Some(e);
            break;
        }
        left -= w as u64;
    }
    // SAFETY: our own descriptor, closed once; the reader then sees EOF.
    unsafe { libc::close(write_fd) };
    let wall_s = t0.elapsed().as_secs_f64();
    if let Some(e) = failure {
        return Err(match child.check_alive() {
            Err(died) => died,
            Ok(()) => KernelError::io("writing into the pipe", std::io::Error::from_raw_os_error(e)),
        });
    }
    child.reap()?;
    Ok((Timing { setup_s: t0.duration_since(started).as_secs_f64(), wall_s }, total))
}

/// The reader: drains the pipe to end-of-file; exit status 0 only if it
/// read exactly `total` bytes.
fn read_all(fd: libc::c_int, buf: &mut [u8], total: u64) -> i32 {
    let mut got = 0u64;
    loop {
        // SAFETY: `buf` is valid for writes of its length during the call.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return 76;
        }
        if n == 0 {
            return if got == total { 0 } else { 77 };
        }
        got += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_confirms_every_byte_including_a_last_partial_chunk() {
        // 3 chunks of 8 KiB and a 1 KiB tail.
        let total = 3 * 8192 + 1024;
        let (_, moved) = stream(total, 8192, 131072, None).unwrap();
        assert_eq!(moved, total);
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let (t, moved) = stream(total, 8192, 4096, Some(zero.as_raw_fd())).unwrap();
        assert_eq!(moved, total);
        assert!(t.wall_s >= 0.0);
    }

    #[test]
    fn a_reader_that_dies_is_an_error_not_a_hang() {
        // The reader expects more than is written, so it exits 77 at EOF.
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid out-array of two ints.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let mut buf = vec![0u8; 16];
        let mut child = Child::spawn(PEER, || {
            // SAFETY: the child's copy of the write end, closed once.
            unsafe { libc::close(fds[1]) };
            read_all(fds[0], &mut buf, 100)
        })
        .unwrap();
        // SAFETY: our own descriptors, each closed once; the buffer is valid
        // for the 10 bytes written.
        unsafe {
            libc::close(fds[0]);
            libc::write(fds[1], [0u8; 10].as_ptr().cast(), 10);
            libc::close(fds[1]);
        }
        let e = child.reap().unwrap_err().to_string();
        assert!(e.contains("exit status 77"), "{e}");
    }
}
