//! Progress of long work: a bar with ETA on a terminal, plain log lines
//! otherwise (CI logs and pipes get one line per step, not escape codes).

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    start: Instant,
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
        Progress { bar, label: label.to_string(), total, start: Instant::now() }
    }

    /// Marks `done` steps of the total as finished.
    fn set(&self, done: u64, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.set_position(done);
                b.set_message(msg.to_string());
            }
            None => {
                let el = self.start.elapsed().as_secs_f64();
                let eta = if done > 0 { el / done as f64 * (self.total - done.min(self.total)) as f64 } else { 0.0 };
                eprintln!("{}: {done}/{} {msg} (elapsed {el:.0}s, eta {eta:.0}s)", self.label, self.total);
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
