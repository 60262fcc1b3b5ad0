//! Stopping a job and knowing it stopped: the guarantee a turn of
//! `timeshare` rests on (the outgoing job is stopped, and known stopped,
//! before the incoming one goes on).
//!
//! Three mechanisms: the cgroup v1 freezer (`freezer.state` reads
//! `FROZEN`), cgroup v2's `cgroup.freeze` (`cgroup.events` reads
//! `frozen 1`), and SIGSTOP to the process group (every thread of every
//! member reads state `T` in /proc). Each is asked, then polled until the
//! kernel says so; a job that does not stop within [`STOP_WITHIN`] is an
//! error naming what was last read, never a silent go-ahead, since the
//! next job would then run beside it. Polling starts at a few
//! microseconds and backs off, because a freeze usually completes within
//! one scheduler tick and a fixed 2 ms sleep would be most of a 20 ms turn.

use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::launch::live_members;

/// How long a job may take to stop (or go on) before it is an error: a
/// task in uninterruptible sleep (disk, NFS) stops only when it wakes.
pub const STOP_WITHIN: Duration = Duration::from_secs(2);

/// Polls `done` until it is true or `within` passes; `true` if it became
/// true. The first look is immediate, then sleeps of 20 us doubling to
/// 1 ms.
pub fn poll_until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    let mut nap = Duration::from_micros(20);
    loop {
        if done() {
            return true;
        }
        if t0.elapsed() >= within {
            return done();
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(1));
    }
}

/// The state letter of every thread of process `pid` (`R`, `S`, `D`, `T`,
/// `t`, ...); empty when it is gone.
fn thread_states(pid: i32) -> Vec<char> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|stat| stat_state(&stat))
        .collect()
}

/// The state field of a /proc stat line (the command name may hold
/// spaces and parentheses: the fields start after the last `)`).
fn stat_state(stat: &str) -> Option<char> {
    stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).and_then(|s| s.chars().next())
}

/// A thread that runs or may run: not stopped, traced, zombie or dead.
fn runnable(state: char) -> bool {
    !matches!(state, 'T' | 't' | 'Z' | 'X' | 'x')
}

/// Threads of process group `pgid` not stopped yet, as `pid:state`.
pub fn unstopped(pgid: i32) -> Vec<String> {
    let mut out = Vec::new();
    for pid in live_members(pgid) {
        for s in thread_states(pid).into_iter().filter(|&s| runnable(s)) {
            out.push(format!("{pid}:{s}"));
        }
    }
    out
}

/// Whether some thread of group `pgid` is stopped.
fn any_stopped(pgid: i32) -> bool {
    live_members(pgid).into_iter().any(|pid| thread_states(pid).into_iter().any(|s| matches!(s, 'T' | 't')))
}

/// SIGSTOP to the group, then waits until every thread of every member
/// is stopped.
pub fn stop_group(pgid: i32) -> Result<(), String> {
    killpg(Pid::from_raw(pgid), Signal::SIGSTOP).map_err(|e| format!("SIGSTOP to process group {pgid}: {e}"))?;
    if poll_until(STOP_WITHIN, || unstopped(pgid).is_empty()) {
        return Ok(());
    }
    Err(format!(
        "process group {pgid} was not stopped {} s after SIGSTOP: threads {} still run (uninterruptible sleep, or a member left the group)",
        STOP_WITHIN.as_secs(),
        unstopped(pgid).join(", ")
    ))
}

/// SIGCONT to the group.
pub fn cont_group(pgid: i32) -> Result<(), String> {
    killpg(Pid::from_raw(pgid), Signal::SIGCONT).map_err(|e| format!("SIGCONT to process group {pgid}: {e}"))
}

/// What a turn costs with one mechanism: per turn, seconds from asking
/// to known stopped, and from asking to known going on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TurnCost {
    /// `cgroup v1 freezer`, `cgroup v2 cgroup.freeze`, `SIGSTOP/SIGCONT`.
    pub mechanism: String,
    pub stop_s: Vec<f64>,
    pub go_s: Vec<f64>,
}

/// The mechanisms of this node: a name and the isolation preference
/// that uses it.
pub fn mechanisms() -> Vec<(&'static str, crate::cgroup::Preference)> {
    use crate::cgroup::Preference;
    vec![("cgroup v1 freezer", Preference::V1), ("cgroup v2 cgroup.freeze", Preference::V2), ("SIGSTOP/SIGCONT", Preference::None)]
}

/// `turns` stops and starts of a one-thread busy loop pinned to `cpu`
/// through the mechanism `pref` selects; `Err` says why it is not
/// available here. Each stop waits until the kernel says the job is
/// stopped, as a turn does; each go until it is thawed (cgroups) or
/// every thread is running again (SIGCONT).
pub fn turn_cost(pref: crate::cgroup::Preference, turns: usize, cpu: u32) -> Result<TurnCost, String> {
    use crate::cgroup::{Isolation, Limits, Preference};
    let iso = Isolation::detect(pref);
    let want = match pref {
        Preference::V1 => "v1",
        Preference::V2 => "v2",
        _ => "none",
    };
    if iso.version() != want {
        return Err(iso.notes().join("; "));
    }
    let name = mechanisms().into_iter().find(|m| m.1 == pref).map_or("?", |m| m.0).to_string();
    let group = iso
        .create(&format!("bench-turns-{}", std::process::id()), "busy", &Limits { cpus: vec![cpu], ..Limits::default() })
        .map_err(|e| e.to_string())?;
    let mut launch = crate::launch::Launch::new(vec!["sh".into(), "-c".into(), "while :; do :; done".into()]);
    launch.cpus = Some(vec![cpu]);
    if let Some(g) = &group {
        launch.cgroup_procs = g.procs_files();
    }
    let running = crate::launch::spawn(&launch).map_err(|e| e.to_string());
    let out = running.and_then(|r| {
        let pgid = r.pid();
        let mut cost = TurnCost { mechanism: name, stop_s: Vec::with_capacity(turns), go_s: Vec::with_capacity(turns) };
        for _ in 0..turns {
            let t0 = Instant::now();
            match &group {
                Some(g) => g.set_frozen(true).map_err(|e| e.to_string())?,
                None => stop_group(pgid)?,
            }
            let t1 = Instant::now();
            match &group {
                Some(g) => g.set_frozen(false).map_err(|e| e.to_string())?,
                None => {
                    cont_group(pgid)?;
                    if !poll_until(STOP_WITHIN, || !any_stopped(pgid)) {
                        return Err(format!("process group {pgid} did not go on after SIGCONT"));
                    }
                }
            }
            cost.stop_s.push((t1 - t0).as_secs_f64());
            cost.go_s.push(t1.elapsed().as_secs_f64());
            // The job runs a moment between turns, as it would in a real one.
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(r);
        Ok(cost)
    });
    if let Some(g) = &group {
        let _ = g.remove();
        g.remove_parents();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_of_a_stat_line_is_read_after_the_last_parenthesis() {
        assert_eq!(stat_state("42 (a) b) T 1 42 42 0"), Some('T'));
        assert_eq!(stat_state("42 (sh) R 1 42"), Some('R'));
        assert_eq!(stat_state("garbage"), None);
        assert!(runnable('R') && runnable('S') && runnable('D'));
        assert!(!runnable('T') && !runnable('t') && !runnable('Z'));
    }

    #[test]
    fn polling_reports_a_condition_that_never_holds_as_false_and_one_that_holds_later_as_true() {
        assert!(!poll_until(Duration::from_millis(5), || false));
        let mut n = 0;
        assert!(poll_until(Duration::from_secs(5), || {
            n += 1;
            n >= 3
        }));
        assert_eq!(n, 3);
    }

    #[test]
    fn a_stopped_group_has_every_thread_stopped_and_goes_on_after_sigcont() {
        use std::os::unix::process::CommandExt;
        // A shell and its child in a group of their own, both busy.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done & while :; do :; done"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        assert!(poll_until(Duration::from_secs(5), || live_members(pgid).len() == 2), "the shell did not fork");
        stop_group(pgid).unwrap();
        assert!(unstopped(pgid).is_empty());
        cont_group(pgid).unwrap();
        assert!(poll_until(Duration::from_secs(5), || unstopped(pgid).len() == 2), "{:?}", unstopped(pgid));
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        let _ = child.wait();
    }
}
