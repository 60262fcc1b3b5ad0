//! What a Lua policy reports while it runs: swaps, refused swaps, script
//! errors and fallbacks. The engine's caller reads it (a real run journals
//! each note in the store as it happens; a simulation summarizes them).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoteKind {
    /// A reloaded script passed its checks and decides from now on.
    Swap,
    /// A reloaded script failed its checks; the old one keeps deciding.
    Refused,
    /// The script erred, overran its budget or decided what the engine
    /// would refuse; the fallback policy decides from now on.
    Error,
    /// The script left an idle node idle while jobs waited (the run would
    /// stall); the fallback policy made this one decision.
    Idle,
}

impl NoteKind {
    /// The event name in a run's journal.
    pub fn event(self) -> &'static str {
        match self {
            NoteKind::Swap => "policy-swap",
            NoteKind::Refused => "policy-swap-refused",
            NoteKind::Error => "policy-error",
            NoteKind::Idle => "policy-idle-fallback",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Note {
    /// The engine's clock at the decision it happened in.
    pub time: f64,
    pub kind: NoteKind,
    pub detail: String,
}

/// Notes of one or many policies (a Monte-Carlo run builds one per order);
/// shared between threads. It keeps the first [`Log::KEEP`] notes whole
/// and counts all.
#[derive(Debug, Default)]
pub struct Log {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    notes: Vec<Note>,
    /// Notes already handed out by `take_new`.
    taken: usize,
    counts: BTreeMap<NoteKind, u64>,
}

impl Log {
    pub const KEEP: usize = 1000;

    pub fn push(&self, note: Note) {
        let mut i = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        *i.counts.entry(note.kind).or_default() += 1;
        if i.notes.len() < Self::KEEP {
            i.notes.push(note);
        }
    }

    /// Notes not handed out before, in order.
    pub fn take_new(&self) -> Vec<Note> {
        let mut i = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let new = i.notes[i.taken..].to_vec();
        i.taken = i.notes.len();
        new
    }

    /// Every kept note.
    pub fn notes(&self) -> Vec<Note> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).notes.clone()
    }

    /// How many notes of each kind, kept or not.
    pub fn counts(&self) -> BTreeMap<NoteKind, u64> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).counts.clone()
    }

    /// One line per kind: its count and its first note, for a summary of
    /// thousands of simulated runs.
    pub fn summary(&self) -> Vec<String> {
        let i = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        i.counts
            .iter()
            .map(|(k, n)| {
                let first = i.notes.iter().find(|x| x.kind == *k).map_or(String::new(), |x| format!("; first at t={:.3}: {}", x.time, x.detail));
                format!("{} x{n}{first}", k.event())
            })
            .collect()
    }
}
