//! Scheduling policies written in Lua (the VarySched paper, VarySched), run by Luau
//! (the `mlua` crate with Luau vendored, as native code where Luau's code
//! generator supports the CPU).
//!
//! A script implements the interface of a Rust policy (`cosched_engine::
//! Policy`): a global function `decide(view)` returning a list of decisions,
//! and optionally `observe(outcome)`. It sees what a Rust policy sees (the
//! queue, the running jobs with their progress, the pools and their free
//! cores, the slowdown source's predictions, the time) and the node's
//! resource governor level. `docs/lua.md` is the user's guide.
//!
//! Scripts run in a sandbox (no `os`, `io`, `require`, `load`, `dofile`
//! unless `grant=` says so) with a budget of Luau interrupts per call. A script
//! that errs, overruns its budget or decides what the engine would refuse is
//! reported with its file and line, and a named safe policy (`fallback=`,
//! a registered Rust policy) decides in its place, so a run never stops on a
//! script. During `cosched run`, SIGHUP reloads the script: it is loaded
//! aside, checked to parse, to define `decide` and to make one valid
//! decision on the current view, and only then swapped in; a bad script is
//! refused and the old one keeps deciding. Every swap, refusal and fallback
//! is a [`Note`] in the policy's [`Log`], which the engine's caller journals.
//!
//! This crate depends on `engine` (the policy trait), `sched` (the fallback
//! policies, by name) and `model`; the application resolves `lua:` specs
//! through [`Builder`], so `sched` does not depend on mlua.

mod answer;
mod file;
mod gate;
mod io;
mod callback_state;
mod raw;
mod spares;
pub mod live;
pub mod log;
pub mod policy;
pub mod spec;

pub use live::{Governor, Level};
pub use log::{Log, Note, NoteKind};
pub use policy::{Builder, LuaPolicy};
pub use spares::spares;
pub use spec::{LuaSpec, NAME, PARAMS};

/// Whether scripts run as native code (Luau's code generator, on x86-64 and
/// arm64), so the tests of the budget know they tested it there.
#[doc(hidden)]
pub fn native_code() -> bool {
    // SAFETY: a query of the build and the CPU, with no argument or state.
    unsafe { mlua::ffi::luau_codegen_supported() != 0 }
}
