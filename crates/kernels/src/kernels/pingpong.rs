//! `pingpong`: two processes exchanging messages (the Xeon Phi study's communication
//! job, 1 KiB - 4 MiB messages).
//!
//! The kernel forks a child in the same process group; the child asks to be
//! killed when its parent dies (`PR_SET_PDEATHSIG`), so a killed kernel never
//! leaves it behind. One unit is one round trip: the parent writes a
//! `msg_kib` message, the child reads and checksums all of it and answers
//! with a message of the same size derived from that checksum, which the
//! parent reads and checksums in turn. `ops` counts the message bytes moved,
//! both directions.
//!
//! Transports:
//! - `shm`: a `MAP_SHARED` anonymous mapping holding one buffer per direction
//!   and a sequence word per direction. A waiter spins briefly, then sleeps on
//!   a futex, so the two processes do not burn both cores of a small node
//!   while waiting for each other.
//! - `unix`: a `socketpair(AF_UNIX, SOCK_STREAM)`, with loops that move whole
//!   messages through partial reads and writes.
//!
//! The data and hence the checksum are the same over both transports.
//!
//! Between `fork` and `_exit` the child runs only code that cannot allocate,
//! lock or panic (atomics, system calls and arithmetic on memory prepared
//! before the fork), because the parent may be multi-threaded (tests) and a
//! lock held by another thread at the fork would never be released.

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use super::child::{end_sets, Child};
use crate::util::{bind_current_thread, mix, splitmix64, KernelRun, Params, Timing, CHECKSUM_SEED};
use crate::KernelError;

/// How errors name the forked process.
const PEER: &str = "the pingpong peer";

/// What `ops` counts.
pub(crate) const OPS_UNIT: &str = "bytes";

/// Polls of a sequence word before sleeping on it: 25-45 us on the
/// reference node (a PAUSE costs 25-45 ns there), enough for a peer on the
/// other core to prepare a message of up to about 64 KiB; a longer spin
/// mostly steals the core from the peer or a co-runner when cores are busy.
const SPINS: u32 = 1000;
/// Longest futex sleep before the parent checks that the child still lives.
const WAIT_SLICE: libc::timespec = libc::timespec { tv_sec: 0, tv_nsec: 50_000_000 };
/// Largest message: 1 GiB per direction is far past the Xeon Phi study's 4 MiB.
const MAX_MSG_KIB: u64 = 1 << 20;

pub(crate) fn run(work: u64, p: &Params) -> Result<KernelRun, KernelError> {
    let msg_kib = p.uint_min("msg_kib", 1)?;
    if msg_kib > MAX_MSG_KIB {
        return Err(p.bad("msg_kib", &format!("expected at most {MAX_MSG_KIB} (1 GiB), got {msg_kib}")));
    }
    let msg = (msg_kib * 1024) as usize;
    let (timing, checksum) = match p.text("transport") {
        "shm" => shm(work, msg)?,
        "unix" => unix(work, msg)?,
        other => return Err(p.bad("transport", &format!("`{other}` is not one of shm, unix"))),
    };
    let bytes = 2 * msg as u64 * work;
    Ok(KernelRun::new(timing, bytes, OPS_UNIT, checksum).bandwidth(bytes))
}

/// The parent's message of round `r`.
fn ping_seed(r: u64) -> u64 {
    splitmix64(r)
}

/// The child's answer to a message whose checksum is `sum`.
fn pong_seed(sum: u64) -> u64 {
    splitmix64(sum ^ 0x9090_9090_9090_9090)
}

/// Fills a message; cheap and vectorisable, like copying user data in.
fn fill(buf: &mut [u8], seed: u64) {
    for (k, w) in buf.chunks_exact_mut(8).enumerate() {
        let v = seed.wrapping_add((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        w.copy_from_slice(&v.to_le_bytes());
    }
}

/// Reads every word of a message; position-dependent so reordered data shows.
fn checksum(buf: &[u8]) -> u64 {
    let mut s = 0u64;
    for (k, w) in buf.chunks_exact(8).enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        s = s.wrapping_add(u64::from_le_bytes(word) ^ k as u64);
    }
    s
}

// ------------------------------------------------------------------ shm ---

/// A sequence word and whether its waiter is (about to be) asleep on it.
#[repr(C, align(64))]
struct Flag {
    seq: AtomicU32,
    sleeping: AtomicU32,
}

/// Start of the shared mapping. All-zero bytes are a valid value.
#[repr(C)]
struct Header {
    /// Parent -> child: number of the message waiting in the ping buffer.
    ping: Flag,
    /// Child -> parent: number of the message answered in the pong buffer.
    pong: Flag,
    stop: AtomicU32,
    child_sum: AtomicU64,
}

const PAGE: usize = 4096;
const _: () = assert!(std::mem::size_of::<Header>() <= PAGE);

/// The MAP_SHARED anonymous mapping: a header page, then the two buffers.
struct Shared {
    base: *mut u8,
    len: usize,
    msg: usize,
    stride: usize,
}

impl Shared {
    fn new(msg: usize) -> Result<Shared, KernelError> {
        let stride = msg.div_ceil(PAGE) * PAGE;
        let len = PAGE + 2 * stride;
        // SAFETY: an anonymous shared mapping at an address of the kernel's
        // choosing touches no existing memory.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(KernelError::io("mmap of the pingpong buffers", std::io::Error::last_os_error()));
        }
        Ok(Shared { base: base.cast(), len, msg, stride })
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping is page-aligned, at least a page long, zero
        // filled (a valid Header: atomics of value 0) and lives as long as
        // `self`; the header is only accessed through atomics, which is what
        // makes sharing it with the other process sound.
        unsafe { &*(self.base as *const Header) }
    }

    /// The buffer of direction `which` (0 ping, 1 pong).
    ///
    /// Callers hold it only while the protocol gives them that buffer: the
    /// parent writes ping and reads pong, the child the reverse, and each
    /// hand-over is a release store / acquire load of a sequence word.
    #[allow(clippy::mut_from_ref)]
    fn buffer(&self, which: usize) -> &mut [u8] {
        // SAFETY: the range lies inside the mapping; the two buffers do not
        // overlap each other or the header; exclusive use follows from the
        // protocol described above.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(PAGE + which * self.stride), self.msg) }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly the mapping made in `new`, and no
        // reference into it outlives `self`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a live, aligned u32 in memory mapped by this process;
    // FUTEX_WAIT (shared, since the word is in a MAP_SHARED mapping used by
    // two processes) only reads it, and the timeout outlives the call. The
    // result is ignored: every return leads to a re-check of the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &WAIT_SLICE as *const libc::timespec,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as in `futex_wait`; FUTEX_WAKE does not access the word.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1) };
}

/// Makes `v` visible on `flag` and wakes its waiter if it may be asleep.
/// SeqCst on both sides (here and in `wait_change`) means that either the
/// waiter sees the new value before sleeping or this side sees `sleeping`.
fn publish(flag: &Flag, v: u32) {
    flag.seq.store(v, Ordering::SeqCst);
    if flag.sleeping.load(Ordering::SeqCst) != 0 {
        futex_wake(&flag.seq);
    }
}

/// Waits until `flag` differs from `old` and returns the new value. With a
/// child to watch (parent side), gives up with its status if it dies.
fn wait_change(flag: &Flag, old: u32, mut child: Option<&mut Child>) -> Result<u32, KernelError> {
    for _ in 0..SPINS {
        let v = flag.seq.load(Ordering::Acquire);
        if v != old {
            return Ok(v);
        }
        std::hint::spin_loop();
    }
    loop {
        flag.sleeping.store(1, Ordering::SeqCst);
        let v = flag.seq.load(Ordering::SeqCst);
        if v != old {
            flag.sleeping.store(0, Ordering::Relaxed);
            return Ok(v);
        }
        futex_wait(&flag.seq, old);
        flag.sleeping.store(0, Ordering::Relaxed);
        let v = flag.seq.load(Ordering::Acquire);
        if v != old {
            return Ok(v);
        }
        if let Some(c) = child.as_deref_mut() {
            c.check_alive()?;
        }
    }
}

fn shm(work: u64, msg: usize) -> Result<(Timing, u64), KernelError> {
    let started = Instant::now();
    let shared = Shared::new(msg)?;
    let (mine, peer) = end_sets();
    let mut child = Child::spawn(PEER, || {
        if let Some(set) = &peer {
            bind_current_thread(set);
        }
        shm_peer(&shared)
    })?;
    if let Some(set) = &mine {
        bind_current_thread(set);
    }
    let h = shared.header();

    let t0 = Instant::now();
    let mut seq = 0u32;
    let mut sum = CHECKSUM_SEED;
    for r in 0..work {
        fill(shared.buffer(0), ping_seed(r));
        seq = seq.wrapping_add(1);
        publish(&h.ping, seq);
        wait_change(&h.pong, seq.wrapping_sub(1), Some(&mut child))?;
        sum = mix(sum, checksum(shared.buffer(1)));
    }
    let wall_s = t0.elapsed().as_secs_f64();

    h.stop.store(1, Ordering::SeqCst);
    publish(&h.ping, seq.wrapping_add(1));
    child.reap()?;
    let peer = h.child_sum.load(Ordering::Acquire);
    let timing = Timing { setup_s: t0.duration_since(started).as_secs_f64(), wall_s };
    Ok((timing, mix(sum, peer)))
}

/// The child's side over shared memory; the return value is its exit status.
fn shm_peer(shared: &Shared) -> i32 {
    let h = shared.header();
    let mut last = 0u32;
    let mut acc = CHECKSUM_SEED;
    loop {
        last = match wait_change(&h.ping, last, None) {
            Ok(v) => v,
            Err(_) => return 72,
        };
        if h.stop.load(Ordering::SeqCst) != 0 {
            break;
        }
        let s = checksum(shared.buffer(0));
        acc = mix(acc, s);
        fill(shared.buffer(1), pong_seed(s));
        publish(&h.pong, last);
    }
    h.child_sum.store(acc, Ordering::Release);
    0
}

// ----------------------------------------------------------------- unix ---

/// Sends all of `buf`; Err(errno) on failure. MSG_NOSIGNAL turns a vanished
/// peer into EPIPE instead of a SIGPIPE that would kill the process.
fn send_all(fd: libc::c_int, mut buf: &[u8]) -> Result<(), i32> {
    while !buf.is_empty() {
        // SAFETY: `buf` is valid for reads of its length during the call.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Fills all of `buf`. Ok(false) on end of stream before the first byte,
/// Err(errno) on failure (an end of stream inside a message is EPIPE).
fn recv_all(fd: libc::c_int, buf: &mut [u8]) -> Result<bool, i32> {
    let mut got = 0;
    while got < buf.len() {
        let rest = &mut buf[got..];
        // SAFETY: `rest` is valid for writes of its length during the call.
        let n = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return if got == 0 { Ok(false) } else { Err(libc::EPIPE) };
        }
        got += n as usize;
    }
    Ok(true)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn unix(work: u64, msg: usize) -> Result<(Timing, u64), KernelError> {
    let started = Instant::now();
    let (mine, theirs) = UnixStream::pair().map_err(|e| KernelError::io("socketpair for pingpong", e))?;
    let mut buf = vec![0u8; msg];
    // The child's buffer, allocated before the fork: the child cannot allocate.
    let mut peer_buf = vec![0u8; msg];
    let (my_fd, their_fd) = (mine.as_raw_fd(), theirs.as_raw_fd());
    let (mine_cpu, peer_cpu) = end_sets();
    let mut child = Child::spawn(PEER, || {
        if let Some(set) = &peer_cpu {
            bind_current_thread(set);
        }
        // SAFETY: `my_fd` is the child's own copy of the parent's end, which
        // the child never uses (it leaves through _exit, so the UnixStream
        // owning the number is never dropped here). Closing it lets the
        // child see end-of-stream once the parent is done.
        unsafe { libc::close(my_fd) };
        unix_peer(their_fd, &mut peer_buf)
    })?;
    drop(theirs);
    drop(peer_buf);
    if let Some(set) = &mine_cpu {
        bind_current_thread(set);
    }

    let failed = |child: &mut Child, what: &str, e: i32| -> KernelError {
        match child.check_alive() {
            Err(died) => died,
            Ok(()) => KernelError::io(format!("{what} the pingpong peer"), std::io::Error::from_raw_os_error(e)),
        }
    };
    let t0 = Instant::now();
    let mut sum = CHECKSUM_SEED;
    for r in 0..work {
        fill(&mut buf, ping_seed(r));
        send_all(my_fd, &buf).map_err(|e| failed(&mut child, "sending to", e))?;
        match recv_all(my_fd, &mut buf) {
            Ok(true) => {}
            Ok(false) => return Err(failed(&mut child, "receiving from", libc::EPIPE)),
            Err(e) => return Err(failed(&mut child, "receiving from", e)),
        }
        sum = mix(sum, checksum(&buf));
    }
    let wall_s = t0.elapsed().as_secs_f64();

    mine.shutdown(std::net::Shutdown::Write)
        .map_err(|e| KernelError::io("closing the pingpong socket", e))?;
    let mut peer = [0u8; 8];
    match recv_all(my_fd, &mut peer) {
        Ok(true) => {}
        Ok(false) => return Err(failed(&mut child, "receiving the final checksum from", libc::EPIPE)),
        Err(e) => return Err(failed(&mut child, "receiving the final checksum from", e)),
    }
    child.reap()?;
    let timing = Timing { setup_s: t0.duration_since(started).as_secs_f64(), wall_s };
    Ok((timing, mix(sum, u64::from_le_bytes(peer))))
}

/// The child's side over the socket; the return value is its exit status.
fn unix_peer(fd: libc::c_int, buf: &mut [u8]) -> i32 {
    let mut acc = CHECKSUM_SEED;
    loop {
        match recv_all(fd, buf) {
            Ok(true) => {}
            Ok(false) => break,
            Err(_) => return 73,
        }
        let s = checksum(buf);
        acc = mix(acc, s);
        fill(buf, pong_seed(s));
        if send_all(fd, buf).is_err() {
            return 74;
        }
    }
    if send_all(fd, &acc.to_le_bytes()).is_err() {
        return 75;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_sees_the_filled_seed_and_order() {
        let mut a = vec![0u8; 1024];
        let mut b = vec![0u8; 1024];
        fill(&mut a, 1);
        fill(&mut b, 2);
        assert_ne!(checksum(&a), checksum(&b));
        b.copy_from_slice(&a);
        b.swap(0, 8);
        assert_ne!(checksum(&a), checksum(&b));
    }
}
