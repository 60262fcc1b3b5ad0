//! Progress of long work: a bar with ETA on a terminal, plain log lines
//! otherwise (CI logs and pipes get at most one line a second and the last
//! step, not escape codes).

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    start: Instant,
    /// When the last plain line was printed.
    printed: Mutex<Option<Instant>>,
}

/// Off a terminal, the least time between two progress lines: a replay of
/// a fraction of a second printed 38 lines (issue 40).
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Whether a plain progress line is due at `now`: the task's last step,
/// or a second or more after the last line (or the start).
fn line_due(start: Instant, last: Option<Instant>, now: Instant, done: u64, total: u64) -> bool {
    done >= total || now.saturating_duration_since(last.unwrap_or(start)) >= LOG_EVERY
}

impl Progress {
    fn new(label: &str, total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(total);
            b.set_style(
                ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {msg} (eta {eta})")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            b.set_prefix(label.to_string());
            b
        });
        Progress { bar, label: label.to_string(), total, start: Instant::now(), printed: Mutex::new(None) }
    }

    /// Marks `done` steps of the total as finished.
    fn set(&self, done: u64, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.set_position(done);
                b.set_message(msg.to_string());
            }
            None => {
                let now = Instant::now();
                let mut printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
                if !line_due(self.start, *printed, now, done, self.total) {
                    return;
                }
                *printed = Some(now);
                let el = now.duration_since(self.start).as_secs_f64();
                eprintln!("{}", cosched_app::progress::plain_line(&self.label, done, self.total, msg, el));
            }
        }
    }

    /// A line above the bar (or a plain log line).
    fn println(&self, msg: &str) {
        match &self.bar {
            Some(b) => b.println(msg),
            None => eprintln!("{}: {msg}", self.label),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The application's progress on this terminal: a bar per task on a
/// terminal, log lines otherwise.
#[derive(Debug, Default, Clone, Copy)]
pub struct Terminal;

impl cosched_app::Progress for Terminal {
    fn step(&self, msg: &str) {
        eprintln!("==> {msg}");
    }
    fn task(&self, label: &str, total: u64) -> Box<dyn cosched_app::Task + '_> {
        Box::new(Progress::new(label, total))
    }
}

impl cosched_app::Task for Progress {
    fn set(&self, done: u64, msg: &str) {
        Progress::set(self, done, msg);
    }
    fn println(&self, msg: &str) {
        Progress::println(self, msg);
    }
    fn finish(&self) {
        Progress::finish(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_a_terminal_a_line_is_due_each_second_and_at_the_last_step() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // A step within the first second of the task: quiet.
        assert!(!line_due(t0, None, at(280), 5, 38));
        // The last step always says so, however soon.
        assert!(line_due(t0, None, at(280), 38, 38));
        assert!(line_due(t0, Some(at(900)), at(950), 38, 38));
        // A second after the start, then a second after the last line.
        assert!(line_due(t0, None, at(1000), 6, 38));
        assert!(!line_due(t0, Some(at(1000)), at(1999), 20, 38));
        assert!(line_due(t0, Some(at(1000)), at(2000), 21, 38));
    }
}
