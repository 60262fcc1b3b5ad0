//! The bridge: a Lua state behind the `Policy` trait.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::ffi::CStr;
use std::sync::{Arc, Mutex};

use cosched_engine::policy::{Decision, JobOutcome, Params, Policy, View};
use cosched_engine::validate::Refusal;
use cosched_engine::{JobId, SlowdownSource};
use cosched_model::workload::PoolKind;
use mlua::{ffi, ChunkMode, Function, Lua, LuaOptions, StdLib, Table, Value, Variadic};

use crate::live::{self, Governor, Level};
use crate::log::{Log, Note, NoteKind};
use crate::spec::LuaSpec;

/// Instructions between two budget checks: the hook's cost is one Rust call
/// per this many VM instructions.
const HOOK_EVERY: u32 = 1000;

thread_local! {
    /// Instructions run so far by the Lua call in progress on this thread,
    /// and its budget. One thread runs one Lua call at a time, and the
    /// coroutines a script makes run on the thread that resumes them, so
    /// they count into the same meter.
    static METER: Cell<(u64, u64)> = const { Cell::new((0, u64::MAX)) };
}

/// Starts the budget of a Lua call (a decision, an observation, a load).
fn meter(budget: u64) {
    METER.with(|m| m.set((0, budget)));
}

/// The count hook, every `HOOK_EVERY` instructions of any thread of the
/// state (a coroutine inherits the hook of the thread that makes it).
/// Raw rather than mlua's `set_hook`, which serves its hook to one Lua
/// thread only: a coroutine running away escaped the budget. (Most of what
/// a budget costs is Lua's own: while any count hook is set, every
/// instruction goes through its hook dispatcher; docs/lua.md, Cost.)
unsafe extern "C-unwind" fn count_hook(l: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) {
    let (n, budget) = METER.with(|m| {
        let (n, b) = m.get();
        let n = n.saturating_add(HOOK_EVERY as u64);
        m.set((n, b));
        (n, b)
    });
    if n <= budget {
        return;
    }
    {
        // SAFETY: `l` and `ar` are the state and record Lua hands its hook;
        // "Sl" fills `short_src` (NUL-terminated) and `currentline`.
        let line = unsafe {
            ffi::lua_getinfo(l, c"Sl".as_ptr(), ar);
            (*ar).currentline
        };
        // SAFETY: filled by lua_getinfo above, NUL-terminated in its array.
        let src = unsafe { CStr::from_ptr((*ar).short_src.as_ptr()) }.to_string_lossy();
        let msg = format!("{src}:{line}: instruction budget of {budget} exceeded (a runaway loop? budget=N raises it)");
        // SAFETY: the hook may use the stack of `l`; one slot is guaranteed.
        unsafe { ffi::lua_pushlstring(l, msg.as_ptr().cast(), msg.len()) };
    }
    // SAFETY: raising an error from a count hook is allowed by Lua (the
    // error unwinds to the pcall of the decision or load that ran the
    // script). It longjmps over this frame only, and every value with a
    // destructor above (the message, the source name) was dropped at the end
    // of the block, so nothing is skipped.
    unsafe { ffi::lua_error(l) }
}

/// The slowdown source of the decision in progress, lent to the Lua
/// callbacks (`view.score`, `view.slowdown`) for the length of one call.
#[derive(Default)]
struct Lent {
    source: Cell<Option<*const (dyn SlowdownSource + 'static)>>,
    /// Ids the engine has shown this state: the only ones the source is
    /// asked about, since a source indexes its tables by them.
    known: RefCell<Vec<bool>>,
    beside: RefCell<Vec<JobId>>,
}

/// Clears the lent source when the call that lent it ends, however it ends.
struct Lending<'a>(&'a Lent);

impl Lent {
    fn lend<'a>(&'a self, source: &'a dyn SlowdownSource) -> Lending<'a> {
        let p: *const (dyn SlowdownSource + 'a) = source;
        // SAFETY: only the lifetime is erased (same pointer, same vtable).
        // The pointer is dereferenced only by the callbacks while it is set,
        // and it is set only between this call and the drop of the returned
        // guard, which borrows `source` for as long: the callbacks run inside
        // `Function::call` on this thread, within that span.
        let p: *const (dyn SlowdownSource + 'static) = unsafe { std::mem::transmute(p) };
        self.source.set(Some(p));
        Lending(self)
    }

    fn with<R>(&self, what: &str, f: impl FnOnce(&dyn SlowdownSource) -> R) -> mlua::Result<R> {
        match self.source.get() {
            // SAFETY: set only while a `Lending` guard borrows the source
            // (see `lend`), so it points to a live source.
            Some(p) => Ok(f(unsafe { &*p })),
            None => Err(mlua::Error::runtime(format!("{what} may be called only inside decide(view)"))),
        }
    }

    fn known(&self, id: JobId) -> bool {
        self.known.borrow().get(id).copied().unwrap_or(false)
    }
}

impl Drop for Lending<'_> {
    fn drop(&mut self) {
        self.0.source.set(None);
    }
}

/// Name of the chunk of cosched's own Lua helpers (`view.score`'s memo).
const HELPERS: &str = "=cosched";

/// `view.score` as scripts call it: a memo of the Rust function `raw` in
/// `cache[a][b]`, since a strategy asks the same pairs again and again and
/// a call into Rust costs several table lookups. The cache is emptied when
/// the slowdown source changes.
const SCORE_MEMO: &str = r#"
local raw, cache = ...
return function(a, b)
  local row = cache[a]
  local v = row and row[b]
  if v == nil then
    v = raw(a, b) -- raises for a bad argument before anything is kept
    if row == nil then row = {}; cache[a] = row end
    row[b] = v
  end
  return v
end
"#;

/// Run on a fresh state before the script loads: keeps the sandbox's
/// globals and the contents of every table among them (`string`, `math`,
/// `params`, ...) and of the strings' metatable, and returns the function
/// that puts all of it back (`Script::reset`) and the set of those tables.
const SNAPSHOT: &str = r#"
local G = ...
local next, rawset, type = next, rawset, type
local function copy(t)
  local c = {}
  for k, v in next, t do c[k] = v end
  return c
end
local keep, libs = copy(G), {}
for _, v in next, G do
  if type(v) == "table" and v ~= G then libs[v] = copy(v) end
end
local smt = getmetatable("")
if smt then libs[smt] = copy(smt) end
local function put(t, c)
  for k in next, t do
    if c[k] == nil then rawset(t, k, nil) end
  end
  for k, v in next, c do rawset(t, k, v) end
end
return function()
  put(G, keep)
  for t, c in next, libs do put(t, c) end
end, libs
"#;

/// `file:line` of the script's code that called into Rust (past cosched's
/// own helpers), for errors raised by the callbacks.
fn here(lua: &Lua) -> String {
    for level in 1..8 {
        let Some(d) = lua.inspect_stack(level) else { break };
        let s = d.source();
        if s.source.as_deref() == Some(HELPERS) {
            continue;
        }
        return format!("{}:{}: ", s.short_src.unwrap_or_default(), d.curr_line());
    }
    String::new()
}

/// A job id from a number or a job table (`job.id`).
fn job_arg(lua: &Lua, lent: &Lent, v: &Value, what: &str) -> mlua::Result<JobId> {
    let id = match v {
        Value::Integer(i) => Some(*i),
        Value::Number(n) if n.fract() == 0.0 => Some(*n as i64),
        Value::Table(t) => t.raw_get::<Option<i64>>("id")?,
        _ => None,
    };
    match id {
        Some(i) if i >= 0 && lent.known(i as usize) => Ok(i as usize),
        Some(i) => Err(mlua::Error::runtime(format!("{}{what}: job {i} is not one the view has shown", here(lua)))),
        None => Err(mlua::Error::runtime(format!("{}{what}: expected a job id or a job table, got a {}", here(lua), v.type_name()))),
    }
}

/// The message of a Lua error as a user reads it: the script's
/// `file:line: what`, without mlua's wrapping.
fn message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) | mlua::Error::MemoryError(m) => m.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::CallbackError { cause, .. } => message(cause),
        mlua::Error::WithContext { context, cause } => format!("{context}: {}", message(cause)),
        other => other.to_string(),
    }
}

/// One loaded script: its Lua state, its functions, and the tables it is
/// shown (each job's table made once, so a script may annotate it).
struct Script {
    lua: Lua,
    source: String,
    /// The script's file, for errors.
    path: String,
    /// The script's chunk, run by `start`.
    main: Function,
    /// Puts the sandbox back as it was before the script ran (`SNAPSHOT`).
    restore: Function,
    /// The tables `restore` restores (keys), whose metatables `reset` clears.
    libs: Table,
    /// `view.score` and `view.slowdown`, set in each new view.
    score: Function,
    slowdown: Function,
    /// The sandbox's own `table.remove`, whatever the script does to its
    /// globals.
    remove: Function,
    /// `file:line` where `decide` is defined, for decisions the engine
    /// would refuse (no Lua line raised them).
    at: String,
    decide: Function,
    observe: Option<Function>,
    view: Table,
    /// `view.pools[i]`, kept so that each decision only sets `free`.
    pools: Vec<Table>,
    jobs: Vec<Option<Table>>,
    /// `view.queue`, kept from one decision to the next and brought up to
    /// date by removing the jobs that left it and appending arrivals: the
    /// queue changes by a job or two per decision, and rebuilding a table
    /// of every waiting job each time was most of a decision's cost.
    queue: Table,
    /// The ids `queue` holds, in order.
    shown: Vec<JobId>,
    /// `view.running`, rewritten in place at each decision.
    running: Table,
    /// Jobs whose table says how they run (pool, cores, solo of the
    /// variant that started), by id.
    ran: Vec<bool>,
    /// The script's global `wake_at` after its last decision: when it wants
    /// to be asked again though nothing happens (a bank's next refill).
    wake: Option<f64>,
    globals: Table,
    /// Whether the script mentions `wake_at` at all (else it is not read).
    wakes: bool,
    /// `view.score`'s memo, and the source it holds scores of.
    scores: Table,
    scored_by: Option<*const ()>,
    lent: Rc<Lent>,
    budget: u64,
}

impl Script {
    /// Loads `source` into a fresh sandboxed state and checks that it
    /// implements the interface.
    fn load(spec: &LuaSpec, source: String, bytecode: Option<&[u8]>) -> Result<Script, String> {
        let path = spec.path.display().to_string();
        let mut libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
        match spec.grant() {
            "os" => libs |= StdLib::OS,
            "io" => libs |= StdLib::IO,
            "all" => libs |= StdLib::OS | StdLib::IO | StdLib::PACKAGE,
            _ => {}
        }
        let lua = Lua::new_with(libs, LuaOptions::default()).map_err(|e| format!("{path}: cannot start Lua: {e}"))?;
        let setup = || -> mlua::Result<Table> {
            let g = lua.globals();
            if spec.grant() != "all" {
                // Reading or running other files, and binary chunks, are
                // outside the sandbox.
                for name in ["dofile", "loadfile", "load", "require"] {
                    g.raw_set(name, Value::Nil)?;
                }
            }
            // stdout carries tables and --json; a script's prints go to stderr.
            let who = path.clone();
            let print = lua.create_function(move |_, args: Variadic<Value>| {
                let parts: Vec<String> = args.iter().map(|v| v.to_string().unwrap_or_else(|_| format!("<{}>", v.type_name()))).collect();
                eprintln!("{who}: {}", parts.join("\t"));
                Ok(())
            })?;
            g.raw_set("print", print)?;
            let params = lua.create_table()?;
            for (k, v) in &spec.script {
                let t = v.trim();
                let value = if let Ok(i) = t.parse::<i64>() {
                    Value::Integer(i)
                } else if let Ok(x) = t.parse::<f64>() {
                    Value::Number(x)
                } else if t == "true" || t == "false" {
                    Value::Boolean(t == "true")
                } else {
                    Value::String(lua.create_string(v)?)
                };
                params.raw_set(k.as_str(), value)?;
            }
            g.raw_set("params", params)?;
            Ok(g)
        };
        let g = setup().map_err(|e| format!("{path}: {}", message(&e)))?;

        // SAFETY: `exec_raw` runs the closure on the state's main thread
        // inside a protected call; setting a hook touches no stack slot.
        unsafe {
            lua.exec_raw::<()>((), |l| ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKCOUNT, HOOK_EVERY as std::ffi::c_int))
        }
        .map_err(|e| format!("{path}: cannot set the instruction budget: {e}"))?;
        let budget = spec.budget();

        let remove: Function = (|| g.raw_get::<Table>("table")?.raw_get::<Function>("remove"))().map_err(|e| format!("{path}: {}", message(&e)))?;
        // Taken before the script runs: what `reset` puts back.
        meter(u64::MAX);
        let (restore, libs) = lua
            .load(SNAPSHOT)
            .set_name(HELPERS)
            .call::<(Function, Table)>(g.clone())
            .map_err(|e| format!("{path}: {}", message(&e)))?;
        // A text file is read as text even if it starts like bytecode;
        // bytecode comes only from `compile`, on this machine.
        let chunk = match bytecode {
            Some(b) => lua.load(b).set_mode(ChunkMode::Binary),
            None => lua.load(source.as_str()).set_mode(ChunkMode::Text),
        };
        let main = chunk.set_name(format!("@{path}")).into_function().map_err(|e| message(&e))?;

        let lent = Rc::new(Lent::default());
        let scores = lua.create_table().map_err(|e| format!("{path}: {}", message(&e)))?;
        let (score, slowdown) = (|| -> mlua::Result<(Function, Function)> {
            let l = lent.clone();
            let raw = lua.create_function(move |lua, (a, b): (Value, Value)| {
                let (a, b) = (job_arg(lua, &l, &a, "score")?, job_arg(lua, &l, &b, "score")?);
                l.with("score", |s| s.score(a, b))
            })?;
            let memo: Function = lua.load(SCORE_MEMO).set_name(HELPERS).call((raw, scores.clone()))?;
            let l = lent.clone();
            let slowdown = lua.create_function(move |lua, (job, beside): (Value, Option<Table>)| {
                let job = job_arg(lua, &l, &job, "slowdown")?;
                let mut ids = l.beside.take();
                ids.clear();
                if let Some(t) = beside {
                    for v in t.sequence_values::<Value>() {
                        ids.push(job_arg(lua, &l, &v?, "slowdown")?);
                    }
                }
                let r = l.with("slowdown", |s| s.slowdown(job, &ids));
                l.beside.replace(ids);
                r
            })?;
            Ok((memo, slowdown))
        })()
        .map_err(|e| format!("{path}: {}", message(&e)))?;
        let table = || lua.create_table().map_err(|e| format!("{path}: {}", message(&e)));
        let (view, queue, running) = (table()?, table()?, table()?);
        let wakes = source.contains("wake_at");
        let mut script = Script {
            globals: g,
            wakes,
            scores,
            scored_by: None,
            source,
            path,
            at: String::new(),
            main,
            restore,
            libs,
            // Set by `start`.
            decide: score.clone(),
            observe: None,
            score,
            slowdown,
            view,
            pools: Vec::new(),
            jobs: Vec::new(),
            queue,
            shown: Vec::new(),
            running,
            ran: Vec::new(),
            wake: None,
            remove,
            lent,
            budget,
            lua,
        };
        script.start()?;
        Ok(script)
    }

    /// Runs the script's chunk, finds its interface, and gives it a view no
    /// decision has touched.
    fn start(&mut self) -> Result<(), String> {
        let path = &self.path;
        meter(self.budget);
        self.main.call::<()>(()).map_err(|e| message(&e))?;
        let g = &self.globals;
        self.decide = match g.raw_get::<Value>("decide").map_err(|e| message(&e))? {
            Value::Function(f) => f,
            Value::Nil => return Err(format!("{path}: defines no function decide(view); a strategy must (docs/lua.md)")),
            other => return Err(format!("{path}: `decide` is a {}, not a function", other.type_name())),
        };
        self.observe = match g.raw_get::<Value>("observe").map_err(|e| message(&e))? {
            Value::Function(f) => Some(f),
            Value::Nil => None,
            other => return Err(format!("{path}: `observe` is a {}, not a function", other.type_name())),
        };
        let info = self.decide.info();
        self.at = format!("{}:{}", info.short_src.unwrap_or(path.clone()), info.line_defined.unwrap_or(0));
        (|| -> mlua::Result<()> {
            // Tables of the last order's are dropped: a script may have
            // annotated them.
            self.view = self.lua.create_table()?;
            self.queue = self.lua.create_table()?;
            self.running = self.lua.create_table()?;
            self.view.raw_set("score", &self.score)?;
            self.view.raw_set("slowdown", &self.slowdown)?;
            self.view.raw_set("queue", &self.queue)?;
            self.view.raw_set("running", &self.running)?;
            self.scores.clear()
        })()
        .map_err(|e| format!("{path}: {}", message(&e)))?;
        self.scored_by = None;
        self.pools.clear();
        self.jobs.clear();
        self.lent.known.borrow_mut().clear();
        self.shown.clear();
        self.ran.clear();
        self.wake = None;
        Ok(())
    }

    /// Makes the state as `load` found it before the script ran (the
    /// sandbox's globals, the contents of its libraries and of `params`, no
    /// metatable on any of them) and starts the script again, as on a fresh
    /// state: a simulation hands a finished order's script to the next
    /// order, since opening a state was a sixth of a Lua order's cost.
    fn reset(&mut self) -> Result<(), String> {
        (|| -> mlua::Result<()> {
            // Raw: a script's `__metatable` field cannot stop it.
            self.globals.set_metatable(None);
            for t in self.libs.clone().pairs::<Table, Value>() {
                t?.0.set_metatable(None);
            }
            meter(u64::MAX);
            self.restore.call::<()>(())?;
            // A script may have stopped the collector. (Only then: a
            // restart also starts a collection step at once.)
            if !self.lua.gc_is_running() {
                self.lua.gc_restart();
            }
            Ok(())
        })()
        .map_err(|e| format!("{}: {}", self.path, message(&e)))?;
        self.start()
    }

    /// The job's table, made the first time the view shows the job.
    fn job(&mut self, id: JobId, make: impl FnOnce(&Lua, &Table) -> mlua::Result<()>) -> mlua::Result<Table> {
        if id >= self.jobs.len() {
            self.jobs.resize(id + 1, None);
            self.lent.known.borrow_mut().resize(id + 1, false);
        }
        if let Some(t) = &self.jobs[id] {
            return Ok(t.clone());
        }
        // Sized for its fields (id, name, pool, cores, solo, program,
        // progress, variants), so filling it never rehashes.
        let t = self.lua.create_table_with_capacity(0, 8)?;
        t.raw_set("id", id as i64)?;
        make(&self.lua, &t)?;
        self.jobs[id] = Some(t.clone());
        self.lent.known.borrow_mut()[id] = true;
        Ok(t)
    }

    fn fill_view(&mut self, view: &View, governor: Level) -> mlua::Result<Table> {
        // Scores are of the source's: another source, another memo.
        let by = view.slowdown as *const dyn SlowdownSource as *const ();
        if self.scored_by != Some(by) {
            self.scores.clear()?;
            self.scored_by = Some(by);
        }
        let v = self.view.clone();
        v.raw_set("time", view.time)?;
        v.raw_set("governor", governor.name())?;
        if self.pools.is_empty() {
            let pools = self.lua.create_table_with_capacity(view.pools.len(), 0)?;
            for p in view.pools {
                let t = self.lua.create_table_with_capacity(0, 4)?;
                t.raw_set("name", p.name.as_str())?;
                t.raw_set("cores", p.cores)?;
                t.raw_set("kind", if matches!(p.kind, PoolKind::Cpu) { "cpu" } else { "accelerator" })?;
                pools.raw_push(&t)?;
                self.pools.push(t);
            }
            v.raw_set("pools", pools)?;
        }
        for (p, t) in self.pools.iter().enumerate() {
            t.raw_set("free", view.free_cores(p))?;
        }
        self.sync_queue(view)?;
        // Running jobs change at each decision, but their tables do not:
        // the list is rewritten in place, its tail cleared.
        let running = self.running.clone();
        for (k, r) in view.running.iter().enumerate() {
            let t = self.job(r.id, |_, t| {
                // A job the view never showed queued (a swap while it ran).
                t.raw_set("pool", r.pool + 1)?;
                t.raw_set("cores", r.cores)?;
                t.raw_set("solo", r.solo)?;
                t.raw_set("program", r.program)?;
                t.raw_set("name", r.program)
            })?;
            if self.ran.get(r.id) != Some(&true) {
                // Started as a variant, it runs on that variant's pool and
                // cores; its table says so from now on.
                self.ran.resize(self.ran.len().max(r.id + 1), false);
                self.ran[r.id] = true;
                t.raw_set("pool", r.pool + 1)?;
                t.raw_set("cores", r.cores)?;
                t.raw_set("solo", r.solo)?;
            }
            t.raw_set("progress", r.progress)?;
            running.raw_set(k + 1, t)?;
        }
        for k in view.running.len()..running.raw_len() {
            running.raw_set(k + 1, Value::Nil)?;
        }
        Ok(v)
    }

    /// Brings `view.queue` to the view's queue: the ids that left are
    /// removed (highest position first) and the rest of the new queue is
    /// appended. That is right for any new queue: what stays is the part of
    /// the old one matched in order, and everything after it is appended.
    fn sync_queue(&mut self, view: &View) -> mlua::Result<()> {
        let same = self.shown.len() == view.queue.len() && self.shown.iter().zip(view.queue).all(|(a, q)| *a == q.id);
        // A script that changed the table itself gets it rebuilt.
        if same && self.queue.raw_len() == self.shown.len() {
            return Ok(());
        }
        if self.queue.raw_len() != self.shown.len() {
            self.queue.clear()?;
            self.shown.clear();
        }
        let mut k = 0;
        let mut gone = Vec::new();
        for (i, id) in self.shown.iter().enumerate() {
            if view.queue.get(k).is_some_and(|q| q.id == *id) {
                k += 1;
            } else {
                gone.push(i);
            }
        }
        for &i in gone.iter().rev() {
            self.remove.call::<()>((self.queue.clone(), i as i64 + 1))?;
        }
        self.shown.clear();
        self.shown.extend(view.queue[..k].iter().map(|q| q.id));
        for q in &view.queue[k..] {
            let t = self.job(q.id, |lua, t| {
                t.raw_set("name", q.name)?;
                t.raw_set("pool", q.pool + 1)?;
                t.raw_set("cores", q.cores)?;
                t.raw_set("solo", q.solo)?;
                if !q.variants.is_empty() {
                    let vs = lua.create_table_with_capacity(q.variants.len(), 0)?;
                    for (k, v) in q.variants.iter().enumerate() {
                        let vt = lua.create_table_with_capacity(0, 5)?;
                        vt.raw_set("index", k + 1)?;
                        vt.raw_set("name", v.name.as_str())?;
                        vt.raw_set("pool", v.pool + 1)?;
                        vt.raw_set("cores", v.cores)?;
                        vt.raw_set("solo", v.solo)?;
                        vs.raw_push(vt)?;
                    }
                    t.raw_set("variants", vs)?;
                }
                t.raw_set("program", q.program)
            })?;
            self.shown.push(q.id);
            self.queue.raw_set(self.shown.len(), t)?;
        }
        Ok(())
    }

    /// The script's decisions for `view`, checked as the engine checks them.
    fn decide(&mut self, view: &View, governor: Level) -> Result<Vec<Decision>, String> {
        let v = self.fill_view(view, governor).map_err(|e| format!("{}: {}", self.at, message(&e)))?;
        meter(self.budget);
        let out = {
            let _lent = self.lent.lend(view.slowdown);
            self.decide.call::<Value>(v).map_err(|e| message(&e))?
        };
        // Only a time ahead: a stale one would have engines wake at once, again and again.
        if self.wakes {
            self.wake = match self.globals.raw_get::<Value>("wake_at").map_err(|e| message(&e))? {
                Value::Number(t) if t.is_finite() && t > view.time => Some(t),
                Value::Integer(t) if t as f64 > view.time => Some(t as f64),
                _ => None,
            };
        }
        let ds = decisions(&out, view).map_err(|e| format!("{}: decide: {e}", self.at))?;
        check(view, &ds).map_err(|e| format!("{}: decide: {e}", self.at))?;
        Ok(ds)
    }

    fn observe(&mut self, o: &JobOutcome) -> Result<(), String> {
        let Some(f) = &self.observe else { return Ok(()) };
        let t = (|| -> mlua::Result<Table> {
            let t = self.lua.create_table()?;
            t.raw_set("job", o.job as i64)?;
            t.raw_set("program", o.program)?;
            t.raw_set("arrival", o.arrival)?;
            t.raw_set("start", o.start)?;
            t.raw_set("finish", o.finish)?;
            t.raw_set("solo", o.solo)?;
            t.raw_set("slowdown", o.slowdown)?;
            Ok(t)
        })()
        .map_err(|e| message(&e))?;
        meter(self.budget);
        f.call::<()>(t).map_err(|e| message(&e))
    }
}

/// The decisions a script returned: `nil` or a list of tables.
fn decisions(out: &Value, view: &View) -> Result<Vec<Decision>, String> {
    let list = match out {
        Value::Nil => return Ok(Vec::new()),
        Value::Table(t) => t,
        other => return Err(format!("returned a {}, not a list of decisions such as {{{{start = job.id}}}}", other.type_name())),
    };
    let mut ds = Vec::new();
    for (k, d) in list.clone().sequence_values::<Value>().enumerate() {
        let d = d.map_err(|e| message(&e))?;
        let Value::Table(d) = d else {
            return Err(format!("decision {} is a {}, not a table such as {{start = job.id}}", k + 1, d.type_name()));
        };
        ds.push(decision(&d, view).map_err(|e| format!("decision {}: {e}", k + 1))?);
    }
    Ok(ds)
}

/// One decision table as an engine decision. Each kind of decision is one
/// key naming its job; a new kind the engine learns is one more arm here.
fn decision(d: &Table, view: &View) -> Result<Decision, String> {
    let id = |key: &str| -> Result<Option<JobId>, String> {
        match d.raw_get::<Value>(key).map_err(|e| message(&e))? {
            Value::Nil => Ok(None),
            Value::Integer(i) if i >= 0 => Ok(Some(i as usize)),
            Value::Number(n) if n >= 0.0 && n.fract() == 0.0 => Ok(Some(n as usize)),
            Value::Table(t) => match t.raw_get::<Value>("id").map_err(|e| message(&e))? {
                Value::Integer(i) if i >= 0 => Ok(Some(i as usize)),
                _ => Err(format!("`{key}` is a table without a job id")),
            },
            other => Err(format!("`{key}` is a {}, not a job id", other.type_name())),
        }
    };
    if let Some(job) = id("start")? {
        match d.raw_get::<Value>("variant").map_err(|e| message(&e))? {
            Value::Nil => {}
            Value::Integer(k) if k >= 1 => return Ok(Decision::StartVariant { job, variant: k as usize - 1 }),
            Value::Number(k) if k >= 1.0 && k.fract() == 0.0 => return Ok(Decision::StartVariant { job, variant: k as usize - 1 }),
            // A variant table from `job.variants`.
            Value::Table(t) => match t.raw_get::<Value>("index").map_err(|e| message(&e))? {
                Value::Integer(k) if k >= 1 => return Ok(Decision::StartVariant { job, variant: k as usize - 1 }),
                _ => return Err("`variant` is a table without an index; expected a variant number or a table of job.variants".into()),
            },
            other => return Err(format!("`variant` is {other:?}; expected a variant number from 1 (job.variants[k].index)")),
        }
        let pool = match d.raw_get::<Value>("pool").map_err(|e| message(&e))? {
            Value::Nil => view.queue.iter().find(|q| q.id == job).map_or(usize::MAX, |q| q.pool),
            Value::Integer(p) if p >= 1 => p as usize - 1,
            other => return Err(format!("`pool` is {other:?}; expected a pool number from 1 to {}", view.pools.len())),
        };
        return Ok(Decision::Start { job, pool });
    }
    Err("expected {start = JOB[, pool = P | variant = K]}".into())
}

/// The engine's check of a batch of decisions (`validate::check_start`),
/// made here so a bad decision reaches the fallback, not the engine.
fn check(view: &View, ds: &[Decision]) -> Result<(), String> {
    let mut used: Vec<u32> = vec![0; view.pools.len()];
    for r in view.running {
        used[r.pool] += r.cores;
    }
    let mut started: Vec<JobId> = Vec::new();
    for (k, d) in ds.iter().enumerate() {
        let at = |why: Refusal| format!("decision {}: {why}", k + 1);
        let waiting = |job: JobId| view.queue.iter().find(|q| q.id == job && !started.contains(&job)).ok_or_else(|| at(Refusal::NotWaiting { job }));
        // The job's way k: its variant k, or (k = 0) itself.
        let way = |q: &cosched_engine::QueuedJob, k: usize| -> Option<(usize, u32)> {
            match q.variants.get(k) {
                Some(v) => Some((v.pool, v.cores)),
                None => (k == 0 && q.variants.is_empty()).then_some((q.pool, q.cores)),
            }
        };
        #[allow(unreachable_patterns)]
        match *d {
            Decision::Start { job, pool } => {
                let q = waiting(job)?;
                // As the engine: the first of its ways on the pool that fits.
                let free = view.pools.get(pool).map_or(0, |p| p.cores.saturating_sub(used[pool]));
                let on_pool = || (0..q.variants.len().max(1)).filter_map(|k| way(q, k)).filter(|w| w.0 == pool).map(|w| w.1);
                let Some(first) = on_pool().next() else {
                    return Err(at(Refusal::WrongPool { job, pool: pool.wrapping_add(1), belongs: q.pool + 1 }));
                };
                let Some(cores) = on_pool().find(|&c| c <= free) else {
                    return Err(at(Refusal::NoRoom { job, pool: pool + 1, needs: first, free }));
                };
                used[pool] += cores;
                started.push(job);
            }
            Decision::StartVariant { job, variant } => {
                let q = waiting(job)?;
                let Some((pool, cores)) = way(q, variant) else {
                    return Err(at(Refusal::NoSuchVariant { job, variant: variant + 1, variants: q.variants.len().max(1) }));
                };
                let free = view.pools[pool].cores.saturating_sub(used[pool]);
                if cores > free {
                    return Err(at(Refusal::NoRoom { job, pool: pool + 1, needs: cores, free }));
                }
                used[pool] += cores;
                started.push(job);
            }
            _ => {}
        }
    }
    Ok(())
}

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

fn take_spare(code: &Arc<Code>, params: &Params) -> Option<Script> {
    SPARES.with(|s| {
        let mut s = s.borrow_mut();
        let i = s.iter().position(|(c, p, _)| Arc::ptr_eq(c, code) && p == params)?;
        Some(s.swap_remove(i).2)
    })
}

/// A policy's script, and where it goes when the policy is dropped: back to
/// this thread's spares if it came from a simulation build and still works.
struct Held {
    script: Option<Script>,
    home: Option<(Arc<Code>, Params)>,
}

impl std::ops::Deref for Held {
    type Target = Script;
    fn deref(&self) -> &Script {
        self.script.as_ref().expect("a policy holds its script until it is dropped")
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut Script {
        self.script.as_mut().expect("a policy holds its script until it is dropped")
    }
}

impl Drop for Held {
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

/// A policy whose decisions a Lua script makes.
pub struct LuaPolicy {
    spec: LuaSpec,
    script: Held,
    fallback: Box<dyn Policy>,
    /// The script failed; the fallback decides until a swap succeeds.
    broken: bool,
    log: Arc<Log>,
    governor: Governor,
    /// Reload on SIGHUP (`live::generation`), and the generation last seen.
    live: bool,
    seen: u64,
}

impl LuaPolicy {
    /// Checks a script as a swap would: reads, loads and checks that it
    /// defines `decide` (and `observe`, if at all, as a function).
    pub fn check(spec: &LuaSpec) -> Result<(), String> {
        let text = read(&spec.path)?;
        Script::load(spec, text, None).map(drop)
    }

    fn note(&self, time: f64, kind: NoteKind, detail: String) {
        self.log.push(Note { time, kind, detail });
    }

    /// A swap asked for by SIGHUP: the script file is loaded aside and
    /// checked; its first decision, on this view, must pass too. `Some` with
    /// that decision when it is swapped in.
    fn reload(&mut self, view: &View) -> Option<Vec<Decision>> {
        let path = self.spec.path.display().to_string();
        let text = match read(&self.spec.path) {
            Ok(t) => t,
            Err(e) => {
                self.note(view.time, NoteKind::Refused, format!("{e}; the running script keeps deciding"));
                return None;
            }
        };
        if text == self.script.source && !self.broken {
            return None;
        }
        let level = self.governor.level();
        match Script::load(&self.spec, text, None).and_then(|mut s| s.decide(view, level).map(|d| (s, d))) {
            Ok((s, d)) => {
                *self.script = s;
                self.broken = false;
                self.note(view.time, NoteKind::Swap, format!("{path} swapped in ({} lines)", self.script.source.lines().count()));
                Some(d)
            }
            Err(e) => {
                let keeps = if self.broken { format!("`{}` keeps deciding", self.spec.fallback()) } else { "the running script keeps deciding".into() };
                self.note(view.time, NoteKind::Refused, format!("{e}; {keeps}"));
                None
            }
        }
    }
}

impl Policy for LuaPolicy {
    fn decide(&mut self, view: &View) -> Vec<Decision> {
        if self.live && live::generation() != self.seen {
            self.seen = live::generation();
            if let Some(d) = self.reload(view) {
                return d;
            }
        }
        if self.broken {
            return self.fallback.decide(view);
        }
        match self.script.decide(view, self.governor.level()) {
            // Waiting for a wake-up it asked for is not a stall.
            Ok(d) if d.is_empty() && view.running.is_empty() && !view.queue.is_empty() && self.script.wake.is_none() => {
                let d = self.fallback.decide(view);
                self.note(
                    view.time,
                    NoteKind::Idle,
                    format!(
                        "{}: decide started nothing on an idle node while {} job(s) wait; `{}` decided instead",
                        self.script.at,
                        view.queue.len(),
                        self.spec.fallback()
                    ),
                );
                d
            }
            Ok(d) => d,
            Err(e) => {
                self.broken = true;
                self.script.home = None;
                self.note(view.time, NoteKind::Error, format!("{e}; `{}` decides from now on", self.spec.fallback()));
                self.fallback.decide(view)
            }
        }
    }

    fn wake_at(&self) -> Option<f64> {
        if self.broken {
            return self.fallback.wake_at();
        }
        self.script.wake
    }

    fn observe(&mut self, outcome: &JobOutcome) {
        self.fallback.observe(outcome);
        if self.broken {
            return;
        }
        if let Err(e) = self.script.observe(outcome) {
            self.broken = true;
            self.script.home = None;
            self.note(outcome.finish, NoteKind::Error, format!("{e}; `{}` decides from now on", self.spec.fallback()));
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read Lua script {}: {e}", path.display()))
}

/// Builds Lua policies from `lua:` parameters for one verb.
///
/// For a simulation, each script is read once and its text kept, since a
/// Monte-Carlo run builds a policy per order on every thread; the governor
/// is the spec's level. For a real run, each build reads the file as it is
/// now, the policy reloads on SIGHUP, and every policy shares one governor.
pub struct Builder {
    log: Arc<Log>,
    governor: Option<Governor>,
    live: bool,
    texts: Mutex<HashMap<PathBuf, Arc<Code>>>,
}

/// A script's text and, for simulations, its bytecode: compiling once saves
/// each of a Monte-Carlo run's thousands of builds the parse.
struct Code {
    text: String,
    bytecode: Option<Vec<u8>>,
}

/// The bytecode of `text`, with its debug information (lines, names), so
/// errors still name the script's file and line; `None` if it does not
/// compile (loading the text then reports why).
fn compile(path: &Path, text: &str) -> Option<Vec<u8>> {
    let lua = Lua::new_with(StdLib::NONE, LuaOptions::default()).ok()?;
    let f = lua.load(text).set_mode(ChunkMode::Text).set_name(format!("@{}", path.display())).into_function().ok()?;
    Some(f.dump(false))
}

impl Builder {
    pub fn simulation(log: Arc<Log>) -> Builder {
        Builder { log, governor: None, live: false, texts: Mutex::new(HashMap::new()) }
    }

    pub fn live(log: Arc<Log>, governor: Governor) -> Builder {
        Builder { log, governor: Some(governor), live: true, texts: Mutex::new(HashMap::new()) }
    }

    /// Uses `text` as the script at `path` without reading the file (a
    /// script compiled into the binary, as the benchmark's).
    pub fn preload(&self, path: &Path, text: &str) {
        let code = Code { text: text.to_string(), bytecode: compile(path, text) };
        self.texts.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_path_buf(), Arc::new(code));
    }

    pub fn log(&self) -> &Arc<Log> {
        &self.log
    }

    fn code(&self, path: &Path) -> Result<Arc<Code>, String> {
        let mut texts = self.texts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = texts.get(path) {
            return Ok(c.clone());
        }
        let text = read(path)?;
        if self.live {
            return Ok(Arc::new(Code { text, bytecode: None }));
        }
        let code = Arc::new(Code { bytecode: compile(path, &text), text });
        texts.insert(path.to_path_buf(), code.clone());
        Ok(code)
    }

    /// A policy from the parameters of `lua:...`. A simulation's build of a
    /// sandboxed script (no `grant=`) takes a spare script of this thread
    /// built from the same code and parameters, reset as new, if there is
    /// one (a Monte-Carlo run builds a policy per order).
    pub fn build(&self, params: &Params) -> Result<LuaPolicy, String> {
        let spec = LuaSpec::from_params(params)?;
        let fallback = cosched_sched::policy_by_name(spec.fallback(), &Params::new())?;
        let code = self.code(&spec.path)?;
        let reuse = !self.live && spec.grant() == "none";
        let spare = if reuse { take_spare(&code, params).and_then(|mut s| s.reset().ok().map(|()| s)) } else { None };
        let script = match spare {
            Some(s) => s,
            None => Script::load(&spec, code.text.clone(), code.bytecode.as_deref())?,
        };
        let script = Held { script: Some(script), home: reuse.then(|| (code, params.clone())) };
        let governor = self.governor.clone().unwrap_or_else(|| Governor::new(spec.governor()));
        Ok(LuaPolicy { spec, script, fallback, broken: false, log: self.log.clone(), governor, live: self.live, seen: live::generation() })
    }
}
