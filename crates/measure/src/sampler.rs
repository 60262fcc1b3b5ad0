//! Sampling a job's whole process tree from /proc.
//!
//! The tree is every process in the job's process group and every descendant
//! of one (a child that moved to its own group or session is still the job's
//! work). Usually a sample reads, per member, `/proc/PID/stat`, the kernel's
//! list of its children, `/proc/PID/io` and the context-switch lines of each
//! thread's `status` (`/proc/PID/status` counts the main thread only): a few
//! tens of microseconds per member, nothing spawned. Only the first sample,
//! and a sample after a member ended or reaped a child (which may have left
//! an orphan, re-parented out of the children lists but still in the group),
//! read `/proc/PID/stat` of every process on the machine to find the group
//! and the descendants by parent pid: about 15 us per process on this VM.
//!
//! Processes that end between samples are not lost:
//!
//! * CPU time, page faults and I/O of a process reaped by a parent in the
//!   tree move into that parent's `cutime`/`cstime`/`cminflt`/`cmajflt` and
//!   its /proc/PID/io (the kernel adds a reaped child's I/O accounting to its
//!   parent's), which the sampler adds in. A process whose nearest surviving
//!   ancestor (by last-seen parent) is outside the tree, typically an orphan
//!   reaped by init, is "retired": its last-seen totals are kept.
//! * Context switches are never passed to a parent in /proc, so every thread
//!   that disappears is retired with its last-seen counts.
//!
//! A process that lives and dies entirely between two samples, with its
//! parent outside the tree, is the only thing missed. Cumulative figures are
//! kept monotone: reading a parent just before it reaps a child and the child
//! just after (or the reverse) can make one sample read a tick low or high,
//! and the next sample corrects it.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use cosched_model::profile::{host_load, Sample};

use crate::launch::POLL;

/// The fields of /proc/PID/stat the sampler uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub minflt: u64,
    pub cminflt: u64,
    pub majflt: u64,
    pub cmajflt: u64,
    /// Clock ticks (`sysconf(_SC_CLK_TCK)` per second).
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
    pub num_threads: u64,
    /// Clock ticks after boot: tells a reused pid from the process it replaced.
    pub starttime: u64,
    pub rss_pages: u64,
}

/// Parses /proc/PID/stat. The command name may hold spaces and parentheses,
/// so the fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    if f.len() < 22 {
        return None;
    }
    let n = |i: usize| f[i].parse::<u64>().ok();
    // cutime/cstime are signed in the kernel's format; they are never negative.
    let c = |i: usize| f[i].parse::<i64>().ok().map(|v| v.max(0) as u64);
    Some(ProcStat {
        pid,
        state: f[0].chars().next()?,
        ppid: f[1].parse().ok()?,
        pgrp: f[2].parse().ok()?,
        minflt: n(7)?,
        cminflt: n(8)?,
        majflt: n(9)?,
        cmajflt: n(10)?,
        utime: n(11)?,
        stime: n(12)?,
        cutime: c(13)?,
        cstime: c(14)?,
        num_threads: n(17)?,
        starttime: n(19)?,
        rss_pages: f[21].parse::<i64>().ok()?.max(0) as u64,
    })
}

/// The fields of /proc/PID/io (missing lines read as 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcIo {
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

pub fn parse_io(text: &str) -> ProcIo {
    let mut io = ProcIo::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let Ok(v) = v.trim().parse::<u64>() else { continue };
        match k {
            "rchar" => io.rchar = v,
            "wchar" => io.wchar = v,
            "syscr" => io.syscr = v,
            "syscw" => io.syscw = v,
            "read_bytes" => io.read_bytes = v,
            "write_bytes" => io.write_bytes = v,
            _ => {}
        }
    }
    io
}

/// Voluntary and involuntary context switches from a /proc status file.
pub fn parse_ctx_switches(status: &str) -> Option<(u64, u64)> {
    let mut vol = None;
    let mut invol = None;
    for line in status.lines() {
        if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
            vol = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
            invol = v.trim().parse().ok();
        }
    }
    Some((vol?, invol?))
}

/// Cumulative counters of one process including what it inherited from the
/// children it reaped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    user_ticks: u64,
    sys_ticks: u64,
    minflt: u64,
    majflt: u64,
    io: ProcIo,
}

impl Totals {
    fn of(st: &ProcStat, io: ProcIo) -> Totals {
        Totals {
            user_ticks: st.utime + st.cutime,
            sys_ticks: st.stime + st.cstime,
            minflt: st.minflt + st.cminflt,
            majflt: st.majflt + st.cmajflt,
            io,
        }
    }

    fn add(&mut self, o: &Totals) {
        self.user_ticks += o.user_ticks;
        self.sys_ticks += o.sys_ticks;
        self.minflt += o.minflt;
        self.majflt += o.majflt;
        self.io.rchar += o.io.rchar;
        self.io.wchar += o.io.wchar;
        self.io.syscr += o.io.syscr;
        self.io.syscw += o.io.syscw;
        self.io.read_bytes += o.io.read_bytes;
        self.io.write_bytes += o.io.write_bytes;
    }
}

/// A process as last seen.
#[derive(Debug, Clone, Copy)]
struct Seen {
    starttime: u64,
    ppid: i32,
    /// Minor faults of reaped children: grows exactly when it reaps one.
    cminflt: u64,
    totals: Totals,
}

/// Samples the process tree of one process group.
#[derive(Debug)]
pub struct TreeSampler {
    pgid: i32,
    host_cores: u32,
    start: Instant,
    tick_s: f64,
    page_kib: u64,
    seen: HashMap<i32, Seen>,
    /// Context switches by thread id, as last seen.
    ctx: HashMap<i32, (u64, u64)>,
    retired: Totals,
    retired_ctx: (u64, u64),
    prev: Option<Sample>,
    buf: String,
    /// Whether the kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN).
    children_files: bool,
}

impl TreeSampler {
    /// A sampler of process group `pgid`. Its clock (`Sample::t_s`) starts
    /// at the first sample, the baseline.
    pub fn new(pgid: i32, host_cores: u32) -> TreeSampler {
        use nix::unistd::{sysconf, SysconfVar};
        let ticks = sysconf(SysconfVar::CLK_TCK).ok().flatten().filter(|&t| t > 0).unwrap_or(100);
        let page = sysconf(SysconfVar::PAGE_SIZE).ok().flatten().filter(|&p| p > 0).unwrap_or(4096);
        TreeSampler {
            pgid,
            host_cores,
            start: Instant::now(),
            tick_s: 1.0 / ticks as f64,
            page_kib: page as u64 / 1024,
            seen: HashMap::new(),
            ctx: HashMap::new(),
            retired: Totals::default(),
            retired_ctx: (0, 0),
            prev: None,
            buf: String::with_capacity(4096),
            children_files: std::path::Path::new("/proc/thread-self/children").exists(),
        }
    }

    /// When `t_s` = 0: the first sample (creation, before it).
    pub fn start(&self) -> Instant {
        self.start
    }

    /// The resolution of CPU times, seconds (one clock tick).
    pub fn tick_s(&self) -> f64 {
        self.tick_s
    }

    /// Reads the tree now. `syscalls` is the tree's system-call count when a
    /// perf counter provides one.
    pub fn sample(&mut self, syscalls: Option<u64>) -> Sample {
        let t_s = if self.prev.is_none() {
            self.start = Instant::now();
            0.0
        } else {
            self.start.elapsed().as_secs_f64()
        };
        let members = self.members();
        let mut now: HashMap<i32, Seen> = HashMap::with_capacity(members.len());
        let mut ctx: HashMap<i32, (u64, u64)> = HashMap::new();
        let mut total = Totals::default();
        let (mut rss_pages, mut nprocs) = (0u64, 0u32);
        for st in &members {
            let io = if self.read(&format!("/proc/{}/io", st.pid)) { parse_io(&self.buf) } else { ProcIo::default() };
            let t = Totals::of(st, io);
            total.add(&t);
            now.insert(st.pid, Seen { starttime: st.starttime, ppid: st.ppid, cminflt: st.cminflt, totals: t });
            if st.state != 'Z' {
                rss_pages += st.rss_pages;
                nprocs += 1;
            }
            self.read_ctx(st, &mut ctx);
        }
        self.retire_gone(&now);
        for (tid, c) in &self.ctx {
            if !ctx.contains_key(tid) {
                self.retired_ctx.0 += c.0;
                self.retired_ctx.1 += c.1;
            }
        }
        total.add(&self.retired);
        let (vol, invol) = ctx.values().fold(self.retired_ctx, |a, c| (a.0 + c.0, a.1 + c.1));
        self.seen = now;
        self.ctx = ctx;

        let mut s = Sample {
            t_s,
            host_load: 0.0,
            cpu_user_s: total.user_ticks as f64 * self.tick_s,
            cpu_sys_s: total.sys_ticks as f64 * self.tick_s,
            vol_ctx: vol,
            invol_ctx: invol,
            syscalls,
            read_bytes: total.io.rchar,
            write_bytes: total.io.wchar,
            disk_read_bytes: total.io.read_bytes,
            disk_write_bytes: total.io.write_bytes,
            syscr: total.io.syscr,
            syscw: total.io.syscw,
            rss_kib: rss_pages * self.page_kib,
            minflt: total.minflt,
            majflt: total.majflt,
            nprocs,
        };
        if let Some(p) = &self.prev {
            s.cpu_user_s = s.cpu_user_s.max(p.cpu_user_s);
            s.cpu_sys_s = s.cpu_sys_s.max(p.cpu_sys_s);
            s.vol_ctx = s.vol_ctx.max(p.vol_ctx);
            s.invol_ctx = s.invol_ctx.max(p.invol_ctx);
            s.syscalls = match (s.syscalls, p.syscalls) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, _) => a,
            };
            s.read_bytes = s.read_bytes.max(p.read_bytes);
            s.write_bytes = s.write_bytes.max(p.write_bytes);
            s.disk_read_bytes = s.disk_read_bytes.max(p.disk_read_bytes);
            s.disk_write_bytes = s.disk_write_bytes.max(p.disk_write_bytes);
            s.syscr = s.syscr.max(p.syscr);
            s.syscw = s.syscw.max(p.syscw);
            s.minflt = s.minflt.max(p.minflt);
            s.majflt = s.majflt.max(p.majflt);
            s.host_load = host_load(s.cpu_s() - p.cpu_s(), s.t_s - p.t_s, self.host_cores);
        }
        self.prev = Some(s.clone());
        s
    }

    /// Every process of the group and every descendant of one, zombies
    /// included (a zombie's times are not yet in its parent's), in pid order,
    /// which reads parents before their children (pid wrap-around aside): a
    /// parent read before the child it reaps meanwhile gives a dip that the
    /// next sample corrects; the other order would count the child twice.
    fn members(&mut self) -> Vec<ProcStat> {
        let mut out = match self.walk() {
            Some(m) => m,
            None => self.scan(),
        };
        out.sort_by_key(|s| s.pid);
        out
    }

    /// The tree from what is known: the members last seen, the group leader,
    /// and their children as the kernel lists them (/proc/PID/task/TID/children),
    /// recursively; a few reads per member instead of one per process on the
    /// machine. `None` when that may miss something and a full scan is
    /// needed: on the first sample, and whenever a member ended or reaped a
    /// child since the last one, since an orphan it left behind is re-parented
    /// out of reach of the children lists (it is still in the group).
    fn walk(&mut self) -> Option<Vec<ProcStat>> {
        if !self.children_files || self.seen.is_empty() {
            return None;
        }
        let mut stack: Vec<i32> = self.seen.keys().copied().collect();
        stack.push(self.pgid);
        let mut visited = HashSet::new();
        let mut out = Vec::new();
        while let Some(pid) = stack.pop() {
            if !visited.insert(pid) {
                continue;
            }
            let st = if self.read(&format!("/proc/{pid}/stat")) { parse_stat(&self.buf) } else { None };
            let seen = self.seen.get(&pid).map(|s| (s.starttime, s.cminflt));
            let st = match (st, seen) {
                (Some(st), Some((start, cminflt))) if st.starttime == start => {
                    if st.cminflt > cminflt {
                        return None;
                    }
                    st
                }
                // A member has ended (or its pid was reused).
                (_, Some(_)) => return None,
                (Some(st), None) if st.cminflt > 0 => return None,
                (Some(st), None) => st,
                (None, None) => continue,
            };
            for tid in self.tids(&st) {
                if self.read(&format!("/proc/{pid}/task/{tid}/children")) {
                    stack.extend(self.buf.split_whitespace().filter_map(|c| c.parse::<i32>().ok()));
                }
            }
            out.push(st);
        }
        Some(out)
    }

    /// The thread ids of a process.
    fn tids(&self, st: &ProcStat) -> Vec<i32> {
        if st.num_threads <= 1 {
            return vec![st.pid];
        }
        std::fs::read_dir(format!("/proc/{}/task", st.pid))
            .map(|d| d.flatten().filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok())).collect())
            .unwrap_or_default()
    }

    /// The tree from every process on the machine: the group's members and
    /// their descendants by parent pid.
    fn scan(&mut self) -> Vec<ProcStat> {
        let mut all = Vec::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
                if self.read(&format!("/proc/{pid}/stat")) {
                    if let Some(st) = parse_stat(&self.buf) {
                        all.push(st);
                    }
                }
            }
        }
        let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
        for (i, st) in all.iter().enumerate() {
            children.entry(st.ppid).or_default().push(i);
        }
        let mut inside: HashSet<usize> = HashSet::new();
        let mut stack: Vec<usize> = (0..all.len()).filter(|&i| all[i].pgrp == self.pgid).collect();
        while let Some(i) = stack.pop() {
            if inside.insert(i) {
                stack.extend(children.get(&all[i].pid).into_iter().flatten().copied());
            }
        }
        inside.into_iter().map(|i| all[i]).collect()
    }

    /// Context switches of each thread of a member.
    fn read_ctx(&mut self, st: &ProcStat, ctx: &mut HashMap<i32, (u64, u64)>) {
        for tid in self.tids(st) {
            if self.read(&format!("/proc/{}/task/{tid}/status", st.pid)) {
                if let Some(c) = parse_ctx_switches(&self.buf) {
                    ctx.insert(tid, c);
                }
            }
        }
    }

    /// Keeps the totals of processes that vanished without a parent in the
    /// tree to inherit them.
    fn retire_gone(&mut self, now: &HashMap<i32, Seen>) {
        let alive = |pid: i32, starttime: Option<u64>| {
            now.get(&pid).is_some_and(|s| match starttime {
                Some(t) => t == s.starttime,
                None => true,
            })
        };
        for (&pid, s) in &self.seen {
            if alive(pid, Some(s.starttime)) {
                continue;
            }
            // Walk up the last-seen parents: the first one still in the tree
            // reaped this process (directly or through reaped ancestors) and
            // holds its totals now.
            let mut p = s.ppid;
            let mut steps = 0;
            let absorbed = loop {
                if alive(p, self.seen.get(&p).map(|q| q.starttime)) {
                    break true;
                }
                match self.seen.get(&p) {
                    Some(q) if steps < self.seen.len() => {
                        p = q.ppid;
                        steps += 1;
                    }
                    _ => break false,
                }
            };
            if !absorbed {
                self.retired.add(&s.totals);
            }
        }
    }

    /// Reads a small /proc file into the reused buffer; false if it is gone.
    fn read(&mut self, path: &str) -> bool {
        self.buf.clear();
        match std::fs::File::open(path) {
            Ok(mut f) => f.read_to_string(&mut self.buf).is_ok(),
            Err(_) => false,
        }
    }
}

/// Waits for a child process to exit without reaping it, so its /proc
/// entries can still be read as a zombie for the final sample.
///
/// Uses a pidfd (Linux >= 5.3): the waiting thread sleeps in poll(2) until the
/// exit or the next sample, with no wake-ups in between. Elsewhere it polls
/// `waitid(WNOWAIT)` every [`POLL`].
#[derive(Debug)]
pub struct ExitWatch {
    pid: i32,
    pidfd: Option<OwnedFd>,
}

impl ExitWatch {
    pub fn new(pid: i32) -> ExitWatch {
        // SAFETY: pidfd_open takes a pid and flags and returns a new file
        // descriptor or -1; no memory is passed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) };
        let pidfd = (fd >= 0).then(|| {
            // SAFETY: the descriptor was just returned by pidfd_open and is
            // owned by nothing else.
            unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) }
        });
        ExitWatch { pid, pidfd }
    }

    /// Whether the process has exited (it stays unreaped).
    pub fn has_exited(&self) -> bool {
        // SAFETY: siginfo_t is plain data for which all-zero is valid; waitid
        // writes into it only.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, exclusively borrowed out-pointer; WNOWAIT
        // leaves the child waitable for its owner (`Running`).
        let r = unsafe {
            libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
        };
        // SAFETY: after a successful waitid, si_pid is the field the kernel
        // filled (0 when no child changed state).
        r == 0 && unsafe { info.si_pid() } != 0
    }

    /// Sleeps until the process exits (true) or `deadline` passes or a signal
    /// arrives (false).
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let Some(fd) = &self.pidfd else {
            loop {
                if self.has_exited() {
                    return true;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                std::thread::sleep(left.min(POLL));
            }
        };
        let left = deadline.saturating_duration_since(Instant::now());
        // Rounded up: waking a fraction of a millisecond early would only
        // loop back into poll.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r > 0 {
            if self.has_exited() {
                return true;
            }
            // Readable but not waitable should not happen; never spin on it.
            std::thread::sleep(POLL.min(left));
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let text = "4242 (a (weird) name) S 4200 4242 4242 0 -1 4194560 67 77 1 2 13 5 20 7 20 0 3 0 231768 8192000 1234 18446744073709551615\n";
        let st = parse_stat(text).unwrap();
        assert_eq!(
            st,
            ProcStat {
                pid: 4242,
                state: 'S',
                ppid: 4200,
                pgrp: 4242,
                minflt: 67,
                cminflt: 77,
                majflt: 1,
                cmajflt: 2,
                utime: 13,
                stime: 5,
                cutime: 20,
                cstime: 7,
                num_threads: 3,
                starttime: 231768,
                rss_pages: 1234,
            }
        );
        assert_eq!(parse_stat("12 (x) S 1 2"), None);
    }

    #[test]
    fn io_and_context_switches_parse() {
        let io = "rchar: 3010956\nwchar: 3000000\nsyscr: 385\nsyscw: 732\nread_bytes: 24576\nwrite_bytes: 3002368\ncancelled_write_bytes: 0\n";
        assert_eq!(
            parse_io(io),
            ProcIo { rchar: 3010956, wchar: 3000000, syscr: 385, syscw: 732, read_bytes: 24576, write_bytes: 3002368 }
        );
        let status = "Name:\tsh\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t9\nnonvoluntary_ctxt_switches:\t17\n";
        assert_eq!(parse_ctx_switches(status), Some((9, 17)));
        assert_eq!(parse_ctx_switches("Name:\tsh\n"), None);
    }

    #[test]
    fn this_process_is_not_in_a_foreign_group() {
        // A group id no process has: an empty tree reads as all zeros.
        let mut s = TreeSampler::new(i32::MAX, 2);
        let a = s.sample(None);
        assert_eq!((a.nprocs, a.cpu_s(), a.rss_kib), (0, 0.0, 0));
    }
}
