//! What changes while a run goes on: the reload signal and the resource
//! governor.
//!
//! SIGHUP (and, if asked, a change of a script file) bumps one process-wide
//! generation; each live [`LuaPolicy`](crate::LuaPolicy) compares it with
//! the one it last saw at the start of every decision, so a swap happens
//! between two decisions and never inside one. The governor is a level
//! shared by the policies of a run and whoever sets it (a file written by
//! `cosched governor`, read here by a watcher thread), so policies read an
//! atomic and never a file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// The node-level resource governor of the VarySched paper: how much a strategy may
/// use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    High,
    Low,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::High => "high",
            Level::Low => "low",
        }
    }

    pub fn parse(text: &str) -> Result<Level, String> {
        match text.trim() {
            "high" => Ok(Level::High),
            "low" => Ok(Level::Low),
            other => Err(format!("governor level `{other}`: expected high or low")),
        }
    }
}

/// A governor level shared by the policies of a run and what sets it.
#[derive(Debug, Clone)]
pub struct Governor(Arc<AtomicU8>);

impl Governor {
    pub fn new(level: Level) -> Governor {
        Governor(Arc::new(AtomicU8::new(level as u8)))
    }

    pub fn level(&self) -> Level {
        match self.0.load(Ordering::Relaxed) {
            0 => Level::High,
            _ => Level::Low,
        }
    }

    pub fn set(&self, level: Level) {
        self.0.store(level as u8, Ordering::Relaxed);
    }
}

/// The level a governor file holds: one word, `high` or `low`. `None` when
/// there is no such file; an error names the file and what it holds.
pub fn read_governor(path: &Path) -> Result<Option<Level>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Level::parse(&text).map(Some).map_err(|e| format!("{}:1: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Writes `level` into the governor file, whole or not at all (a run's
/// watcher never reads half a word).
pub fn write_governor(path: &Path, level: Level) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, format!("{}\n", level.name())).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
}

static GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_hangup(_: libc::c_int) {
    // Only an atomic add: the one thing this handler may safely do.
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// Makes SIGHUP ask live Lua policies to reload their scripts instead of
/// ending cosched (its default action).
pub fn install_reload_signal() {
    let action = nix::sys::signal::SigAction::new(
        nix::sys::signal::SigHandler::Handler(on_hangup),
        // The runner sleeps and waits between decisions; restarting keeps
        // a reload from looking like an error to those calls.
        nix::sys::signal::SaFlags::SA_RESTART,
        nix::sys::signal::SigSet::empty(),
    );
    // SAFETY: the handler only adds to an atomic, which is async-signal-safe,
    // and SIGHUP has no handler that Rust's runtime relies on.
    let _ = unsafe { nix::sys::signal::sigaction(nix::sys::signal::Signal::SIGHUP, &action) };
}

/// How many reloads were asked for since the process began.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// Asks for a reload as SIGHUP does.
pub fn request_reload() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// A thread polling files while a run goes on: script files (a change asks
/// for a reload) and the governor file (its level is set on the governor).
/// It stops when dropped.
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

impl Watch {
    /// Polls every `every`; `scripts` may be empty.
    pub fn start(scripts: Vec<PathBuf>, governor_file: Option<PathBuf>, governor: Governor, every: Duration) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut seen: Vec<Option<SystemTime>> = scripts.iter().map(|p| mtime(p)).collect();
            while !flag.load(Ordering::Relaxed) {
                for (p, s) in scripts.iter().zip(seen.iter_mut()) {
                    let now = mtime(p);
                    if now != *s {
                        *s = now;
                        request_reload();
                    }
                }
                if let Some(f) = &governor_file {
                    // A file being replaced or holding a typo keeps the level.
                    if let Ok(Some(level)) = read_governor(f) {
                        governor.set(level);
                    }
                }
                std::thread::sleep(every);
            }
        });
        Watch { stop, thread: Some(thread) }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_governor_file_round_trips_and_a_typo_is_named_with_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sub").join("governor");
        assert_eq!(read_governor(&f), Ok(None));
        write_governor(&f, Level::Low).unwrap();
        assert_eq!(read_governor(&f), Ok(Some(Level::Low)));
        std::fs::write(&f, "medium\n").unwrap();
        let e = read_governor(&f).unwrap_err();
        assert!(e.starts_with(&format!("{}:1: ", f.display())), "{e}");
        assert!(e.contains("expected high or low"), "{e}");
    }

    #[test]
    fn the_watch_sets_the_governor_from_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("governor");
        write_governor(&f, Level::Low).unwrap();
        let g = Governor::new(Level::High);
        let w = Watch::start(Vec::new(), Some(f.clone()), g.clone(), Duration::from_millis(5));
        let t = std::time::Instant::now();
        while g.level() != Level::Low {
            assert!(t.elapsed() < Duration::from_secs(60), "the watch never read the file");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(w);
    }
}
