//! A decision through Luau's C API, in one protected call
//! (`Script::decide`): the view's tables brought up to date, `decide`
//! called, the decisions it returns read.
//!
//! The contract of [`decide`]: it runs inside a protected call whose stack
//! holds exactly one value, the bundle: a table only cosched holds, with
//! six tables, the script's `decide` function, a seventh table and the
//! sandbox's `table.move` at 1 to [`BUNDLE_LEN`], in the order of the
//! `VIEW` .. `MOVE` slots below (one argument rather than nine). `VIEW`, `QUEUE` and `RUNNING` are
//! the script's (it may put anything in them, but they stay tables, since
//! only cosched holds them as such); `POOLS`, `JOBS`, `KEYS` and
//! `TEMPLATES` are cosched's own, which no script reaches, so every value
//! read from `POOLS`, `JOBS` and `TEMPLATES` is a table this module made,
//! and `KEYS` holds the strings of [`KEYS`] (keys interned once rather
//! than hashed again at every field set). Every table the pass writes into
//! is therefore a table, which Luau's API requires and, in a release
//! build, does not check. A write into a table the script froze raises a
//! Lua error, which the protected call turns into an `Err`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_int;

use cosched_engine::policy::{Decision, QueuedJob, View};
use cosched_engine::JobId;
use cosched_model::workload::PoolKind;

use crate::live::Level;
use crate::callback_state::CallbackState;
use mlua::ffi;

const VIEW: c_int = 1;
const QUEUE: c_int = 2;
const RUNNING: c_int = 3;
pub const POOLS: c_int = 4;
pub const JOBS: c_int = 5;
pub const KEYS_AT: c_int = 6;
const DECIDE: c_int = 7;
pub const TEMPLATES: c_int = 8;
/// The sandbox's `table.move`, taken before the script ran: the queue's
/// jobs that stay move down in one call rather than two API calls each.
pub const MOVE: c_int = 9;
/// Where the bundle itself sits while a pass runs, above the slots it
/// holds.
const BUNDLE: c_int = 10;
/// How many values the bundle holds (`VIEW` .. `MOVE`).
pub const BUNDLE_LEN: c_int = 9;
/// The bundle's entry for an answer `decisions` could not read, left for
/// `answer::decisions` to read and word the error of.
pub const ANSWER: c_int = BUNDLE_LEN + 1;

// Luau's API has it (what `table.clone` does: one allocation and a copy
// of the table's slots); mlua's bindings leave it out.
extern "C-unwind" {
    fn lua_clonetable(l: *mut ffi::lua_State, idx: c_int);
    fn lua_rawsetfield(l: *mut ffi::lua_State, idx: c_int, k: *const std::ffi::c_char);
}

/// A waiting job's table as first made, kept (in `TEMPLATES`, at `slot`)
/// by its name with what the table was made from: a Monte-Carlo run shows
/// the same jobs in every order under other ids, and a copy of the table
/// made once, its id set, costs a fraction of making it field by field.
/// Only for jobs without variants, whose table holds no table of its own.
pub struct Template {
    program: String,
    pool: usize,
    cores: u32,
    solo: u64,
    slot: c_int,
}

/// The templates of one script, by job name; `None` where a script does
/// not keep them (a real run shows each job once).
pub type Templates = Option<HashMap<String, Template>>;

/// Templates a script keeps at most: the jobs of a scenario, a few hundred
/// at most, at a few hundred bytes each against the state's memory limit.
const MOST_TEMPLATES: usize = 1024;

/// The field names the view's tables use, in the order of the constants
/// below (1-based, as `KEYS` holds them).
pub const KEYS: [&str; 19] = [
    "id", "name", "pool", "cores", "solo", "program", "progress", "variants", "index", "kind", "free", "time", "governor", "pools", "start", "variant",
    "high", "low", "suspended",
];
const ID: c_int = 1;
const NAME: c_int = 2;
const POOL: c_int = 3;
const CORES: c_int = 4;
const SOLO: c_int = 5;
const PROGRAM: c_int = 6;
const PROGRESS: c_int = 7;
const VARIANTS: c_int = 8;
const INDEX: c_int = 9;
const KIND: c_int = 10;
const FREE: c_int = 11;
const TIME: c_int = 12;
const GOVERNOR: c_int = 13;
const POOLS_KEY: c_int = 14;
const START: c_int = 15;
const VARIANT: c_int = 16;
const HIGH: c_int = 17;
const LOW: c_int = 18;
const SUSPENDED: c_int = 19;

/// What one pass needs besides the stack: the view, and cosched's record of
/// what the tables hold.
pub struct Pass<'a> {
    pub view: &'a View<'a>,
    pub governor: Level,
    /// Whether `POOLS` holds this order's pool tables already.
    pub pooled: bool,
    /// The ids `QUEUE` holds, in order.
    pub shown: &'a mut Vec<JobId>,
    /// Ids with a table in `JOBS`; as long as any id of the view. Borrowed
    /// only while the view is filled: `view.score` reads it during decide.
    pub known: &'a RefCell<Vec<bool>>,
    /// Jobs whose table says how they run (the variant that started); as
    /// long as `known`.
    pub ran: &'a mut Vec<bool>,
    pub templates: &'a mut Templates,
}

/// Sets `t[KEYS[k]]` to the value on top of the stack, popping it; `t`
/// and `keys` are absolute indices.
unsafe fn set(l: *mut ffi::lua_State, t: c_int, keys: c_int, k: c_int) {
    // SAFETY: `keys` is the `KEYS` table (k in 1..=KEYS.len() holds a
    // string) and `t` a table; one stack slot is free for the key.
    unsafe {
        ffi::lua_rawgeti(l, keys, k);
        ffi::lua_insert(l, -2);
        ffi::lua_rawset(l, t);
    }
}

/// Sets `t[KEYS[k]] = n`; `t` is an absolute index. The key goes first,
/// so no value has to be moved under it.
unsafe fn num(l: *mut ffi::lua_State, t: c_int, k: c_int, n: f64) {
    // SAFETY: as for `set`; two slots for the key and the number.
    unsafe {
        ffi::lua_rawgeti(l, KEYS_AT, k);
        ffi::lua_pushnumber(l, n);
        ffi::lua_rawset(l, t);
    }
}

/// Sets `t[KEYS[k]] = s`; `t` is an absolute index.
unsafe fn text(l: *mut ffi::lua_State, t: c_int, k: c_int, s: &str) {
    // SAFETY: as for `num`; the string is copied by Lua.
    unsafe {
        ffi::lua_rawgeti(l, KEYS_AT, k);
        ffi::lua_pushlstring(l, s.as_ptr().cast(), s.len());
        ffi::lua_rawset(l, t);
    }
}

impl Pass<'_> {
    /// Pushes the table of job `id`, made by `make` (given its slot) the
    /// first time.
    unsafe fn job(&mut self, l: *mut ffi::lua_State, id: JobId, make: impl FnOnce(c_int)) {
        // SAFETY: `JOBS` is cosched's table; `known[id]` says it holds a
        // table at id + 1 (set below, and cleared with `JOBS` each order).
        unsafe {
            if self.known.borrow()[id] {
                ffi::lua_rawgeti(l, JOBS, id as ffi::lua_Integer + 1);
                return;
            }
            // Sized for its fields (id, name, pool, cores, solo, program,
            // progress, variants, suspended), so filling it never rehashes.
            ffi::lua_createtable(l, 0, 9);
            let t = ffi::lua_gettop(l);
            num(l, t, ID, id as f64);
            make(t);
            ffi::lua_pushvalue(l, t);
            ffi::lua_rawseti(l, JOBS, id as ffi::lua_Integer + 1);
        }
        self.known.borrow_mut()[id] = true;
    }

    /// Pushes a new table for waiting job `q` copied from its template, if
    /// there is one made from what `q` shows; `false` (nothing pushed) if
    /// not. The copy is the table `job` would make, slot for slot (a
    /// script's `pairs` meets its fields in the same order).
    unsafe fn copy(&mut self, l: *mut ffi::lua_State, q: &QueuedJob) -> bool {
        let Some(t) = self.templates.as_ref().and_then(|ts| ts.get(q.name)) else { return false };
        if !(q.variants.is_empty() && t.program == q.program && t.pool == q.pool && t.cores == q.cores && t.solo == q.solo.to_bits()) {
            return false;
        }
        // SAFETY: the module's contract: `TEMPLATES` holds a table at
        // `slot` (set by `keep`); `JOBS` is cosched's; `known[id]` is
        // false (the caller makes a table only for an id without one).
        unsafe {
            ffi::lua_rawgeti(l, TEMPLATES, t.slot as ffi::lua_Integer);
            lua_clonetable(l, -1);
            ffi::lua_remove(l, -2);
            num(l, ffi::lua_gettop(l), ID, q.id as f64);
            ffi::lua_pushvalue(l, -1);
            ffi::lua_rawseti(l, JOBS, q.id as ffi::lua_Integer + 1);
        }
        self.known.borrow_mut()[q.id] = true;
        true
    }

    /// Keeps a copy of the table just made for waiting job `q` (on top of
    /// the stack, untouched by the script yet) as its template.
    unsafe fn keep(&mut self, l: *mut ffi::lua_State, q: &QueuedJob) {
        let Some(ts) = self.templates.as_mut() else { return };
        if !q.variants.is_empty() || ts.len() >= MOST_TEMPLATES {
            return;
        }
        let slot = ts.len() as c_int + 1;
        // SAFETY: the table is on top; `TEMPLATES` is cosched's table.
        unsafe {
            lua_clonetable(l, -1);
            ffi::lua_rawseti(l, TEMPLATES, slot as ffi::lua_Integer);
        }
        let t = Template { program: q.program.to_string(), pool: q.pool, cores: q.cores, solo: q.solo.to_bits(), slot };
        ts.insert(q.name.to_string(), t);
    }

    /// # Safety
    ///
    /// `l` is a Luau state in a protected call whose stack holds the values
    /// of the module's contract, and nothing else.
    unsafe fn run(mut self, l: *mut ffi::lua_State) {
        let view = self.view;
        // SAFETY: the module's contract; every push below is popped (or
        // stored) before the next, so a few slots suffice.
        unsafe {
            ffi::lua_rawcheckstack(l, 8);
            num(l, VIEW, TIME, view.time);
            ffi::lua_rawgeti(l, KEYS_AT, GOVERNOR);
            ffi::lua_rawgeti(l, KEYS_AT, if self.governor == Level::High { HIGH } else { LOW });
            ffi::lua_rawset(l, VIEW);

            // The pool tables are made at an order's first decision (and
            // again should the node's pools ever change), so `POOLS` holds
            // a table for every pool below.
            if !self.pooled || ffi::lua_objlen(l, POOLS) != view.pools.len() {
                ffi::lua_cleartable(l, POOLS);
                ffi::lua_createtable(l, view.pools.len() as c_int, 0);
                let list = ffi::lua_gettop(l);
                for (k, p) in view.pools.iter().enumerate() {
                    ffi::lua_createtable(l, 0, 4);
                    let t = ffi::lua_gettop(l);
                    text(l, t, NAME, &p.name);
                    num(l, t, CORES, f64::from(p.cores));
                    text(l, t, KIND, if matches!(p.kind, PoolKind::Cpu) { "cpu" } else { "accelerator" });
                    ffi::lua_pushvalue(l, t);
                    ffi::lua_rawseti(l, POOLS, k as ffi::lua_Integer + 1);
                    ffi::lua_rawseti(l, list, k as ffi::lua_Integer + 1);
                }
                set(l, VIEW, KEYS_AT, POOLS_KEY);
            }
            for p in 0..view.pools.len() {
                ffi::lua_rawgeti(l, POOLS, p as ffi::lua_Integer + 1);
                num(l, ffi::lua_gettop(l), FREE, f64::from(view.free_cores(p)));
                ffi::lua_pop(l, 1);
            }

            self.queue(l);

            // Running jobs change at each decision, but their tables do
            // not: the list is rewritten in place, its tail cleared.
            for (k, r) in view.running.iter().enumerate() {
                self.job(l, r.id, |t| {
                    // A job the view never showed queued (a swap while it ran).
                    num(l, t, POOL, (r.pool + 1) as f64);
                    num(l, t, CORES, f64::from(r.cores));
                    num(l, t, SOLO, r.solo);
                    text(l, t, PROGRAM, r.program);
                    text(l, t, NAME, r.program);
                });
                let t = ffi::lua_gettop(l);
                if !self.ran[r.id] {
                    // Started as a variant, it runs on that variant's pool
                    // and cores; its table says so from now on.
                    self.ran[r.id] = true;
                    num(l, t, POOL, (r.pool + 1) as f64);
                    num(l, t, CORES, f64::from(r.cores));
                    num(l, t, SOLO, r.solo);
                }
                num(l, t, PROGRESS, r.progress);
                ffi::lua_rawgeti(l, KEYS_AT, SUSPENDED);
                ffi::lua_pushboolean(l, c_int::from(r.suspended));
                ffi::lua_rawset(l, t);
                ffi::lua_rawseti(l, RUNNING, k as ffi::lua_Integer + 1);
            }
            let len = ffi::lua_objlen(l, RUNNING);
            for k in view.running.len()..len {
                ffi::lua_pushnil(l);
                ffi::lua_rawseti(l, RUNNING, k as ffi::lua_Integer + 1);
            }
        }
    }

    /// Brings `QUEUE` to the view's queue: the ids that left are removed
    /// and the rest of the new queue is appended. That is right for any new
    /// queue: what stays is the part of the old one matched in order, and
    /// everything after it is appended. The queue changes by a job or two
    /// per decision; rebuilding it was most of a decision's cost.
    unsafe fn queue(&mut self, l: *mut ffi::lua_State) {
        let queue = self.view.queue;
        // SAFETY: as for `run`.
        unsafe {
            let len = ffi::lua_objlen(l, QUEUE);
            let same = self.shown.len() == queue.len() && self.shown.iter().zip(queue).all(|(a, q)| *a == q.id);
            // A script that changed the table itself gets it rebuilt.
            if same && len == self.shown.len() {
                return;
            }
            if len != self.shown.len() {
                ffi::lua_cleartable(l, QUEUE);
                self.shown.clear();
            }
            // Those that stay move down over those that left, in order: a
            // run of them behind the same gap moves at once.
            let (mut k, mut kept) = (0, 0);
            let mut run = 0;
            for i in 0..self.shown.len() {
                if queue.get(k).is_some_and(|q| q.id == self.shown[i]) {
                    if kept != i {
                        self.shown[kept] = self.shown[i];
                        run += 1;
                    }
                    kept += 1;
                    k += 1;
                } else {
                    shift(l, i - run, run, kept - run);
                    run = 0;
                }
            }
            shift(l, self.shown.len() - run, run, kept - run);
            for i in kept..self.shown.len() {
                ffi::lua_pushnil(l);
                ffi::lua_rawseti(l, QUEUE, i as ffi::lua_Integer + 1);
            }
            self.shown.truncate(kept);
            for q in &queue[k..] {
                let fresh = !self.known.borrow()[q.id];
                if !(fresh && self.copy(l, q)) {
                    self.job(l, q.id, |t| {
                        text(l, t, NAME, q.name);
                        num(l, t, POOL, (q.pool + 1) as f64);
                        num(l, t, CORES, f64::from(q.cores));
                        num(l, t, SOLO, q.solo);
                        if !q.variants.is_empty() {
                            ffi::lua_createtable(l, q.variants.len() as c_int, 0);
                            let vs = ffi::lua_gettop(l);
                            for (k, v) in q.variants.iter().enumerate() {
                                ffi::lua_createtable(l, 0, 5);
                                let vt = ffi::lua_gettop(l);
                                num(l, vt, INDEX, (k + 1) as f64);
                                text(l, vt, NAME, &v.name);
                                num(l, vt, POOL, (v.pool + 1) as f64);
                                num(l, vt, CORES, f64::from(v.cores));
                                num(l, vt, SOLO, v.solo);
                                ffi::lua_rawseti(l, vs, k as ffi::lua_Integer + 1);
                            }
                            set(l, t, KEYS_AT, VARIANTS);
                        }
                        text(l, t, PROGRAM, q.program);
                    });
                    if fresh {
                        self.keep(l, q);
                    }
                }
                self.shown.push(q.id);
                ffi::lua_rawseti(l, QUEUE, self.shown.len() as ffi::lua_Integer);
            }
        }
    }
}

/// Moves the `n` entries of `QUEUE` from index `from` (0-based) down to
/// `to`: by `table.move` (`MOVE`) past a few, since each entry moved
/// through the API is two calls.
///
/// # Safety
///
/// `l` is a Luau state in a protected call whose stack holds the values
/// of the module's contract; three slots are free.
unsafe fn shift(l: *mut ffi::lua_State, from: usize, n: usize, to: usize) {
    if n == 0 || from == to {
        return;
    }
    // SAFETY: `QUEUE` is a table and `MOVE` the sandbox's `table.move`
    // (the contract); a call of it raises only for a frozen table, as a
    // raw set would.
    unsafe {
        if n < 4 {
            for i in 0..n {
                ffi::lua_rawgeti(l, QUEUE, (from + i) as ffi::lua_Integer + 1);
                ffi::lua_rawseti(l, QUEUE, (to + i) as ffi::lua_Integer + 1);
            }
            return;
        }
        ffi::lua_pushvalue(l, MOVE);
        ffi::lua_pushvalue(l, QUEUE);
        ffi::lua_pushnumber(l, (from + 1) as f64);
        ffi::lua_pushnumber(l, (from + n) as f64);
        ffi::lua_pushnumber(l, (to + 1) as f64);
        ffi::lua_call(l, 4, 0);
    }
}

/// A whole number at `idx` that is a job id, pool or variant as
/// `policy::decision` reads it without doubt (a double with no fraction, in
/// 0..=2^53); `None` for anything else, nil included.
unsafe fn whole(l: *mut ffi::lua_State, idx: c_int) -> Option<usize> {
    // SAFETY: reading a stack slot's type and number raises nothing.
    let n = unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TNUMBER {
            return None;
        }
        ffi::lua_tonumberx(l, idx, std::ptr::null_mut())
    };
    (n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0).then_some(n as usize)
}

/// The decisions in the list at stack slot `list` (a table, the top),
/// for the common case only: every decision a table whose `start`,
/// `variant` and `pool` hold plain numbers or the `id`/`index` of a table.
/// `None` for anything else, which `policy::decisions` then reads (and
/// words the error of) through mlua. Raises nothing: raw reads only.
///
/// # Safety
///
/// `l` is a Luau state whose stack holds the values of the module's
/// contract, then the list.
unsafe fn decisions(l: *mut ffi::lua_State, list: c_int, view: &View) -> Option<Vec<Decision>> {
    let d = list + 1;
    let mut ds = Vec::new();
    // SAFETY: the contract above; each iteration starts from the list on
    // top (settop), so a few slots suffice. The caller drops what is left.
    unsafe {
        ffi::lua_rawcheckstack(l, 4);
        // `t` is an absolute index: the key is pushed above it.
        let get = |t: c_int, k: c_int| {
            ffi::lua_rawgeti(l, KEYS_AT, k);
            ffi::lua_rawget(l, t);
        };
        // A number, or a table's `id`/`index` (`field`), at the top.
        let value = |field: c_int| -> Option<Option<usize>> {
            match ffi::lua_type(l, -1) {
                ffi::LUA_TNIL => Some(None),
                ffi::LUA_TNUMBER => whole(l, -1).map(Some),
                ffi::LUA_TTABLE => {
                    get(ffi::lua_gettop(l), field);
                    let v = whole(l, -1);
                    ffi::lua_pop(l, 1);
                    v.map(Some)
                }
                _ => None,
            }
        };
        for k in 1.. {
            ffi::lua_settop(l, list);
            if ffi::lua_rawgeti(l, list, k) == ffi::LUA_TNIL {
                break;
            }
            if ffi::lua_type(l, d) != ffi::LUA_TTABLE {
                return None;
            }
            get(d, START);
            let job = value(ID)??;
            ffi::lua_settop(l, d);
            get(d, VARIANT);
            match value(INDEX)? {
                Some(v) if v >= 1 => {
                    ds.push(Decision::StartVariant { job, variant: v - 1 });
                    continue;
                }
                Some(_) => return None,
                None => {}
            }
            ffi::lua_settop(l, d);
            get(d, POOL);
            let pool = match ffi::lua_type(l, -1) {
                ffi::LUA_TNIL => view.queue.iter().find(|q| q.id == job).map_or(usize::MAX, |q| q.pool),
                _ => match whole(l, -1) {
                    Some(p) if p >= 1 => p - 1,
                    _ => return None,
                },
            };
            ds.push(Decision::Start { job, pool });
        }
    }
    Some(ds)
}

/// Fills the view, calls `decide(view)` and reads the decisions it returns
/// (into `fast`, when `decisions` can; else the answer is left in the
/// bundle at [`ANSWER`]), leaving the stack empty. `filled` says whether
/// the view was filled, so that an error is told as the view's or the
/// script's. A Lua error (the script's, its budget's, or a frozen table
/// the pass writes into) unwinds to the protected call around.
///
/// # Safety
///
/// `l` is a Luau state in a protected call whose stack holds the bundle of
/// the module's contract, and nothing else.
pub unsafe fn decide(l: *mut ffi::lua_State, pass: Pass, filled: &mut bool, fast: &mut Option<Vec<Decision>>) {
    let view = pass.view;
    // SAFETY: the contract; the bundle's values go to slots 1 to
    // BUNDLE_LEN and the bundle above them; `run` leaves the stack as it
    // found it, the call leaves one result above the bundle.
    unsafe {
        ffi::lua_rawcheckstack(l, BUNDLE_LEN + 2);
        for k in 1..=BUNDLE_LEN {
            ffi::lua_rawgeti(l, 1, k as ffi::lua_Integer);
        }
        ffi::lua_pushvalue(l, 1);
        ffi::lua_remove(l, 1);
        pass.run(l);
        *filled = true;
        ffi::lua_pushvalue(l, DECIDE);
        ffi::lua_pushvalue(l, VIEW);
        ffi::lua_call(l, 1, 1);
        let out = BUNDLE + 1;
        if ffi::lua_type(l, out) == ffi::LUA_TTABLE {
            *fast = decisions(l, out, view);
        }
        if fast.is_none() {
            ffi::lua_settop(l, out);
            ffi::lua_rawseti(l, BUNDLE, ANSWER as ffi::lua_Integer);
        }
        ffi::lua_settop(l, 0);
    }
}

/// Gives an order new view tables (those of the last order are dropped,
/// since a script may have annotated them): `view` with its callbacks,
/// `queue` and `running`, put in the bundle with `decide`; `POOLS` and
/// `JOBS` are emptied, not made anew, so they keep their size from order to
/// order. One protected call, where each table made and field set through
/// mlua was one of its own. Leaves the stack empty.
///
/// # Safety
///
/// `l` is a Luau state in a protected call whose stack holds the bundle of
/// the module's contract (its `POOLS` and `JOBS` set), `view.score`,
/// `view.slowdown`, `view.cpus`, `view.estimate` and the script's
/// `decide`, in that order, and nothing else.
pub unsafe fn fresh_view(l: *mut ffi::lua_State) {
    const B: c_int = 1;
    let (view, queue, running) = (7, 8, 9);
    // SAFETY: the contract above; three tables and one value at a time
    // are pushed.
    unsafe {
        ffi::lua_rawcheckstack(l, 4);
        for _ in 0..3 {
            ffi::lua_createtable(l, 0, 0);
        }
        for (slot, name) in [(2, c"score"), (3, c"slowdown"), (4, c"cpus"), (5, c"estimate"), (queue, c"queue"), (running, c"running")] {
            ffi::lua_pushvalue(l, slot);
            lua_rawsetfield(l, view, name.as_ptr());
        }
        for (k, slot) in [(VIEW, view), (QUEUE, queue), (RUNNING, running), (DECIDE, 6)] {
            ffi::lua_pushvalue(l, slot);
            ffi::lua_rawseti(l, B, k as ffi::lua_Integer);
        }
        for k in [POOLS, JOBS] {
            ffi::lua_rawgeti(l, B, k as ffi::lua_Integer);
            ffi::lua_cleartable(l, -1);
            ffi::lua_pop(l, 1);
        }
        ffi::lua_settop(l, 0);
    }
}

/// A job id argument `view.score` can answer for at once: a whole number,
/// or a table whose `id` is one.
unsafe fn job_id(l: *mut ffi::lua_State, idx: c_int) -> Option<usize> {
    // SAFETY: reads of slot `idx` (an argument) and, for a table, of its
    // `id` field pushed above it and popped.
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TNUMBER => whole(l, idx),
            ffi::LUA_TTABLE => {
                ffi::lua_rawgetfield(l, idx, c"id".as_ptr());
                let id = whole(l, -1);
                ffi::lua_pop(l, 1);
                id
            }
            _ => None,
        }
    }
}

/// `view.score(a, b)` as a C function: the source's score of two jobs the
/// view has shown, read without going through mlua, whose callbacks cost
/// more than the lookup they make (a strategy asks for many scores per
/// decision). Anything else (another argument, a job not shown, a call
/// outside `decide`) goes to the mlua callback, its upvalue 2, which
/// answers or raises the error with the script's line.
unsafe extern "C-unwind" fn score(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: upvalue 1 is the `CallbackState` pointer `push_score` was given, alive
    // as long as this function (see there); the arguments are read raw.
    let answer = unsafe {
        let shared = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const CallbackState);
        match (job_id(l, 1), job_id(l, 2), shared.source.get()) {
            (Some(a), Some(b), Some(source)) => {
                let known = shared.known.try_borrow().ok();
                let shown = known.is_some_and(|k| k.get(a) == Some(&true) && k.get(b) == Some(&true));
                // SAFETY: set only while a `SourceLoan` guard borrows the source.
                let source = &*source;
                // A panic is not let through Luau's frames: the callback
                // below meets it again, where mlua catches it.
                shown.then(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| source.score(a, b))).ok()).flatten()
            }
            _ => None,
        }
    };
    // SAFETY: one slot for the result or the callback (a C function has at
    // least LUA_MINSTACK); the callback gets the arguments as given.
    unsafe {
        match answer {
            Some(v) => ffi::lua_pushnumber(l, v),
            None => {
                let n = ffi::lua_gettop(l);
                ffi::lua_pushvalue(l, ffi::lua_upvalueindex(2));
                ffi::lua_insert(l, 1);
                ffi::lua_call(l, n, 1);
            }
        }
    }
    1
}

/// Leaves `view.score`'s C function as the only value on the stack, with
/// the callback at slot 1 as its upvalue 2.
///
/// # Safety
///
/// `l` is a Luau state in a protected call whose stack holds that callback
/// only; `shared` points to a `CallbackState` that lives as long as the function made
/// here (the callback, its upvalue, holds an `Rc` of it), since the
/// function reads it at each call.
pub unsafe fn push_score(l: *mut ffi::lua_State, shared: *const CallbackState) {
    // SAFETY: the contract above; two slots are pushed and one left.
    unsafe {
        ffi::lua_rawcheckstack(l, 2);
        ffi::lua_pushlightuserdata(l, shared as *mut std::ffi::c_void);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushcclosurek(l, score, c"score".as_ptr(), 2, None);
        ffi::lua_replace(l, 1);
    }
}
