//! Lua states kept between simulation orders: a Monte-Carlo run builds a
//! policy per order on every thread, and resetting a finished order's
//! script costs a fraction of opening a new state (`Script::reset`).

use std::cell::RefCell;
use std::sync::Arc;

use cosched_engine::policy::Params;

use crate::policy::{Code, Script};

thread_local! {
    /// Scripts of finished simulation orders on this thread, each with the
    /// code and parameters it was built from, for the next build of the same
    /// (`Builder::build`). Lua states are not `Send`, hence per thread.
    static SPARES: RefCell<Vec<(Arc<Code>, Params, Script)>> = const { RefCell::new(Vec::new()) };
}

/// Spare scripts a thread keeps: a Monte-Carlo run builds one or two Lua
/// policies per order, so a few cover it.
const SPARES_KEPT: usize = 4;

/// How many spare scripts this thread holds (for tests of the reuse).
#[doc(hidden)]
pub fn spares() -> usize {
    SPARES.with(|s| s.borrow().len())
}

pub(crate) fn take_spare(code: &Arc<Code>, params: &Params) -> Option<Script> {
    SPARES.with(|s| {
        let mut s = s.borrow_mut();
        let i = s.iter().position(|(c, p, _)| Arc::ptr_eq(c, code) && p == params)?;
        Some(s.swap_remove(i).2)
    })
}

/// A policy's script that goes back to this thread's spares when the
/// policy is dropped, if it came from a simulation build (`home`: the code
/// and parameters it was built from, which the next build must match) and
/// still works (a policy whose script failed clears `home`): the next
/// order's build then resets it rather than opening a new Lua state.
/// (Named `Held` before issue 43, after holding rather than returning.)
pub(crate) struct PooledScript {
    script: Option<Script>,
    pub(crate) home: Option<(Arc<Code>, Params)>,
}

impl PooledScript {
    pub(crate) fn new(script: Script, home: Option<(Arc<Code>, Params)>) -> PooledScript {
        PooledScript { script: Some(script), home }
    }
}

impl std::ops::Deref for PooledScript {
    type Target = Script;
    fn deref(&self) -> &Script {
        self.script.as_ref().expect("a policy holds its script until it is dropped")
    }
}

impl std::ops::DerefMut for PooledScript {
    fn deref_mut(&mut self) -> &mut Script {
        self.script.as_mut().expect("a policy holds its script until it is dropped")
    }
}

impl Drop for PooledScript {
    fn drop(&mut self) {
        if let (Some(script), Some((code, params))) = (self.script.take(), self.home.take()) {
            // At thread exit the spares may be gone already; the script then just drops.
            let _ = SPARES.try_with(|s| {
                let mut s = s.borrow_mut();
                if s.len() >= SPARES_KEPT {
                    s.remove(0);
                }
                s.push((code, params, script));
            });
        }
    }
}
