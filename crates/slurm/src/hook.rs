//! Waking `cosched slurm serve` at a job's end instead of waiting for its
//! next poll.
//!
//! Slurm runs an epilog when a job ends: `Epilog=` on the job's node
//! (slurmd), `EpilogSlurmctld=` on the controller. Its script runs
//! `cosched slurm hook`, which sends one datagram (`end JOBID`) to the
//! socket `serve` listens on and waits, at most a bound, for the answer
//! that the round it started is done. Waiting is the point on a node's
//! epilog: Slurm frees the job's cores and runs a scheduling pass when the
//! epilog ends, so a job cosched released in that round starts at once
//! rather than at Slurm's next periodic pass (once a second in 22.05).
//!
//! The socket is in Linux's abstract namespace (a name, no file): nothing
//! to clean up after a SIGKILL, and a hook run as `SlurmUser` can reach a
//! `serve` run as root. Anyone on the host can send to it; a datagram only
//! makes `serve` read the cluster a round early, which it does anyway.
//! The hook never fails its job: no `serve` listening, a lost answer or
//! any error ends it at once or at the bound, with success.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

/// Longest datagram read; `end JOBID` is far shorter.
const MAX_DATAGRAM: usize = 256;

/// `serve`'s end of the hook: the socket it listens on.
pub struct Wake {
    sock: UnixDatagram,
}

/// A hook waiting for its answer.
#[derive(Debug)]
pub struct Waiting {
    from: SocketAddr,
    /// What it said (`end JOBID`).
    pub text: String,
}

impl Wake {
    /// Listens on the abstract socket `name`; fails if another `serve`
    /// listens there.
    pub fn bind(name: &str) -> io::Result<Wake> {
        let sock = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)?;
        Ok(Wake { sock })
    }

    /// Waits at most `timeout` for hooks; returns every one that spoke,
    /// the first as soon as it arrives (with those already queued behind it).
    pub fn wait(&self, timeout: Duration) -> io::Result<Vec<Waiting>> {
        let mut out = Vec::new();
        let mut buf = [0u8; MAX_DATAGRAM];
        // A zero timeout would mean "block for ever" to set_read_timeout.
        self.sock.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        match self.sock.recv_from(&mut buf) {
            Ok((n, from)) => out.push(Waiting { from, text: String::from_utf8_lossy(&buf[..n]).into_owned() }),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {
                return Ok(out)
            }
            Err(e) => return Err(e),
        }
        self.sock.set_nonblocking(true)?;
        while let Ok((n, from)) = self.sock.recv_from(&mut buf) {
            out.push(Waiting { from, text: String::from_utf8_lossy(&buf[..n]).into_owned() });
        }
        self.sock.set_nonblocking(false)?;
        Ok(out)
    }

    /// Tells each hook its round is done. A hook that gave up is not an error.
    pub fn answer(&self, waiting: &[Waiting]) {
        for w in waiting {
            let _ = self.sock.send_to_addr(b"done", &w.from);
        }
    }
}

/// What a hook saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// `serve` answered: the round that read this job's end is done.
    Answered,
    /// Nobody listens on the name (no `serve` running).
    NotServing,
    /// `serve` got the datagram but did not answer within the bound.
    TimedOut,
    /// Sent, not waited for (a bound of zero).
    Sent,
}

/// Sends `text` (`end JOBID`, or `submit JOBID` from the submission rule,
/// which must not wait: slurmctld runs it under its job lock) to the
/// `serve` listening on `name`, and waits at most `wait` for its answer.
pub fn send(name: &str, text: &str, wait: Duration) -> io::Result<Heard> {
    // An abstract name of its own for the answer: pid and clock, unique on the host.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let me = format!("{name}.hook.{}.{nanos}", std::process::id());
    let sock = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(me.as_bytes())?)?;
    let to = SocketAddr::from_abstract_name(name.as_bytes())?;
    if let Err(e) = sock.send_to_addr(text.as_bytes(), &to) {
        return match e.kind() {
            io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound => Ok(Heard::NotServing),
            _ => Err(e),
        };
    }
    if wait.is_zero() {
        return Ok(Heard::Sent);
    }
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; MAX_DATAGRAM];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Heard::TimedOut);
        }
        sock.set_read_timeout(Some(left))?;
        match sock.recv(&mut buf) {
            Ok(_) => return Ok(Heard::Answered),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Ok(Heard::TimedOut),
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(tag: &str) -> String {
        format!("cosched-test-hook-{}-{tag}", std::process::id())
    }

    #[test]
    fn a_hook_with_nobody_listening_says_so_instead_of_waiting() {
        assert_eq!(send(&name("none"), "end 7", Duration::from_secs(3600)).unwrap(), Heard::NotServing);
    }

    #[test]
    fn a_hook_waits_for_the_answer_and_serve_hears_which_job_ended() {
        let n = name("answer");
        let wake = Wake::bind(&n).unwrap();
        let hook = std::thread::spawn({
            let n = n.clone();
            move || send(&n, "end 42", Duration::from_secs(60)).unwrap()
        });
        let mut heard = Vec::new();
        while heard.is_empty() {
            heard = wake.wait(Duration::from_secs(60)).unwrap();
        }
        assert_eq!(heard.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["end 42"]);
        wake.answer(&heard);
        assert_eq!(hook.join().unwrap(), Heard::Answered);
    }

    #[test]
    fn a_hook_that_gets_no_answer_gives_up_at_its_bound() {
        let n = name("silent");
        let _wake = Wake::bind(&n).unwrap();
        assert_eq!(send(&n, "end 1", Duration::from_millis(50)).unwrap(), Heard::TimedOut);
    }

    #[test]
    fn a_second_serve_cannot_listen_on_the_same_name_and_no_hook_means_an_empty_wait() {
        let n = name("twice");
        let wake = Wake::bind(&n).unwrap();
        assert!(Wake::bind(&n).is_err());
        assert!(wake.wait(Duration::from_millis(10)).unwrap().is_empty());
    }
}
