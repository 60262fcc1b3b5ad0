//! Progress of long work, reported through a trait so the application never
//! decides how it is shown: the CLI draws a bar with ETA on a terminal and
//! plain log lines otherwise; tests and library users pass [`Plain`] or
//! [`Silent`].

use std::time::Instant;

/// Where the application reports what it is doing.
pub trait Progress: Sync {
    /// A step of work without a known total (shown as `==> msg`).
    fn step(&self, msg: &str);
    /// Starts a counted task of `total` steps.
    fn task(&self, label: &str, total: u64) -> Box<dyn Task + '_>;
}

/// A counted task of a [`Progress`].
pub trait Task {
    /// `done` steps of the total are finished.
    fn set(&self, done: u64, msg: &str);
    /// A line above the bar (or a plain log line).
    fn println(&self, msg: &str);
    /// The task is over; a bar is cleared.
    fn finish(&self);
}

/// One plain progress line: `label: done/total msg (elapsed Ns, eta Ns)`,
/// the ETA at the pace so far; before the first step is done there is no
/// pace, so it reads `eta -` rather than a zero that says "about to end".
pub fn plain_line(label: &str, done: u64, total: u64, msg: &str, elapsed_s: f64) -> String {
    let eta = if done > 0 {
        format!("{:.0}s", elapsed_s / done as f64 * total.saturating_sub(done) as f64)
    } else {
        "-".into()
    };
    format!("{label}: {done}/{total} {msg} (elapsed {elapsed_s:.0}s, eta {eta})")
}

/// Log lines on stderr: one per step, with elapsed time and ETA.
#[derive(Debug, Default, Clone, Copy)]
pub struct Plain;

struct PlainTask {
    label: String,
    total: u64,
    start: Instant,
}

impl Progress for Plain {
    fn step(&self, msg: &str) {
        eprintln!("==> {msg}");
    }
    fn task(&self, label: &str, total: u64) -> Box<dyn Task + '_> {
        Box::new(PlainTask { label: label.to_string(), total, start: Instant::now() })
    }
}

impl Task for PlainTask {
    fn set(&self, done: u64, msg: &str) {
        eprintln!("{}", plain_line(&self.label, done, self.total, msg, self.start.elapsed().as_secs_f64()));
    }
    fn println(&self, msg: &str) {
        eprintln!("{}: {msg}", self.label);
    }
    fn finish(&self) {}
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Progress for Silent {
    fn step(&self, _: &str) {}
    fn task(&self, _: &str, _: u64) -> Box<dyn Task + '_> {
        Box::new(Silent)
    }
}

impl Task for Silent {
    fn set(&self, _: u64, _: &str) {}
    fn println(&self, _: &str) {}
    fn finish(&self) {}
}

/// Passes each distinct step message on once and drops its repeats, so a
/// series of runs (`evaluate`'s orders) does not print the same set-up
/// lines (pinning, solo times, a policy's defaults) before every order;
/// a line that changes (the slowdown source as it learns) still shows.
pub struct OnceSteps<'a> {
    inner: &'a dyn Progress,
    seen: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl<'a> OnceSteps<'a> {
    pub fn new(inner: &'a dyn Progress) -> OnceSteps<'a> {
        OnceSteps { inner, seen: Default::default() }
    }
}

impl Progress for OnceSteps<'_> {
    fn step(&self, msg: &str) {
        // A poisoned lock only means another step panicked: print anyway.
        let new = self.seen.lock().map_or(true, |mut s| s.insert(msg.to_string()));
        if new {
            self.inner.step(msg);
        }
    }
    fn task(&self, label: &str, total: u64) -> Box<dyn Task + '_> {
        self.inner.task(label, total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Record(Mutex<Vec<String>>);

    impl Progress for Record {
        fn step(&self, msg: &str) {
            self.0.lock().unwrap().push(msg.to_string());
        }
        fn task(&self, _: &str, _: u64) -> Box<dyn Task + '_> {
            Box::new(Silent)
        }
    }

    #[test]
    fn once_steps_passes_each_distinct_message_once_in_order() {
        let rec = Record(Mutex::new(Vec::new()));
        let once = OnceSteps::new(&rec);
        for m in ["pinning: cpuset", "source: 1 sample", "pinning: cpuset", "source: 2 samples", "source: 1 sample"] {
            once.step(m);
        }
        assert_eq!(*rec.0.lock().unwrap(), ["pinning: cpuset", "source: 1 sample", "source: 2 samples"]);
    }

    #[test]
    fn a_plain_line_has_no_eta_before_the_first_step_and_the_pace_after() {
        assert_eq!(plain_line("pairs", 0, 6, "a + b", 1.2), "pairs: 0/6 a + b (elapsed 1s, eta -)");
        assert_eq!(plain_line("pairs", 2, 6, "a + b", 10.0), "pairs: 2/6 a + b (elapsed 10s, eta 20s)");
        assert_eq!(plain_line("pairs", 6, 6, "b + b", 30.0), "pairs: 6/6 b + b (elapsed 30s, eta 0s)");
        assert_eq!(plain_line("pairs", 7, 6, "", 30.0), "pairs: 7/6  (elapsed 30s, eta 0s)", "more steps than the total is no negative ETA");
    }
}
