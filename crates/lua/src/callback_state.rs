//! What the view's Rust callbacks (`view.score`, `view.slowdown`,
//! `view.cpus`, `view.estimate`) read: the decision in progress's slowdown
//! source, lent for the length of one call, and what the state has shown.

use std::cell::{Cell, RefCell};

use cosched_engine::{JobId, SlowdownSource};

/// The state the view's Rust callbacks read, one per script and held by
/// each callback (an `Rc`): they are made once per Lua state, while the
/// slowdown source is the engine's and lives only as long as one decision,
/// so it is lent here for that call (`lend`) and read through `with`.
/// (Named `Lent` before issue 43, after the loan rather than what it holds.)
#[derive(Default)]
pub(crate) struct CallbackState {
    pub(crate) source: Cell<Option<*const (dyn SlowdownSource + 'static)>>,
    /// Ids the engine has shown this state: the only ones the source is
    /// asked about, since a source indexes its tables by them.
    pub(crate) known: RefCell<Vec<bool>>,
    pub(crate) beside: RefCell<Vec<JobId>>,
    /// The running jobs' cores in the decision in progress, for
    /// `view.cpus` (copied only for a script that mentions `cpus`).
    pub(crate) cpus: RefCell<Vec<(JobId, Vec<u32>)>>,
}

/// The loan of a slowdown source to the callbacks: clears it when the call
/// that lent it ends, however it ends.
pub(crate) struct SourceLoan<'a>(&'a CallbackState);

impl CallbackState {
    pub(crate) fn lend<'a>(&'a self, source: &'a dyn SlowdownSource) -> SourceLoan<'a> {
        let p: *const (dyn SlowdownSource + 'a) = source;
        // SAFETY: only the lifetime is erased (same pointer, same vtable).
        // The pointer is dereferenced only by the callbacks while it is set,
        // and it is set only between this call and the drop of the returned
        // guard, which borrows `source` for as long: the callbacks run inside
        // `Function::call` on this thread, within that span.
        let p: *const (dyn SlowdownSource + 'static) = unsafe { std::mem::transmute(p) };
        self.source.set(Some(p));
        SourceLoan(self)
    }

    pub(crate) fn with<R>(&self, what: &str, f: impl FnOnce(&dyn SlowdownSource) -> R) -> mlua::Result<R> {
        match self.source.get() {
            // SAFETY: set only while a `SourceLoan` guard borrows the source
            // (see `lend`), so it points to a live source.
            Some(p) => Ok(f(unsafe { &*p })),
            None => Err(mlua::Error::runtime(format!("{what} may be called only inside decide(view)"))),
        }
    }

    pub(crate) fn known(&self, id: JobId) -> bool {
        self.known.borrow().get(id).copied().unwrap_or(false)
    }
}

impl Drop for SourceLoan<'_> {
    fn drop(&mut self) {
        self.0.source.set(None);
    }
}

