//! The bridge: a Lua state behind the `Policy` trait.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::ffi::{c_int, CStr};
use std::sync::{Arc, Mutex};

use cosched_engine::policy::{Decision, JobOutcome, Params, Policy, View};
use cosched_engine::online::MIN_SEGMENTS;
use cosched_engine::JobId;
use cosched_sched::policies::React;
use cosched_sched::MIN_WAIT_S;
use mlua::{ffi, ChunkMode, Compiler, Function, Lua, LuaOptions, StdLib, Table, Value, Variadic};

use crate::answer;
use crate::file::read;
use crate::gate::Gate;
pub use crate::file::MAX_SCRIPT_BYTES;
use crate::callback_state::CallbackState;
use crate::live::{self, Governor, Level};
use crate::raw;
use crate::log::{Log, Note, NoteKind};
use crate::spares::{take_spare, PooledScript};
use crate::spec::LuaSpec;

thread_local! {
    /// Interrupts so far in the Lua call in progress on this thread, and its
    /// budget. One thread runs one Lua call at a time, and the coroutines a
    /// script makes run on the thread that resumes them, so they count into
    /// the same meter.
    static METER: Cell<(u64, u64)> = const { Cell::new((0, u64::MAX)) };
}

/// Starts the budget of a Lua call (a decision, an observation, a load).
fn meter(budget: u64) {
    METER.with(|m| m.set((0, budget)));
}

/// Luau's interrupt: called at every call, return and loop back-edge of
/// any coroutine of the state (the callback is the state's, not a
/// thread's), in the interpreter and in native code alike, so a budget of
/// interrupts bounds every way a script can keep running Lua code. Raw
/// rather than mlua's `set_interrupt`, which goes through its general
/// callback machinery on each of these very frequent calls and cannot see
/// the coroutine the interrupt came from (its line is the one to report).
unsafe extern "C-unwind" fn interrupt(l: *mut ffi::lua_State, gc: c_int) {
    // A collector step (gc >= 0) may not raise, and is not the script's.
    if gc >= 0 {
        return;
    }
    let (n, budget) = METER.with(|m| {
        let (n, b) = m.get();
        m.set((n + 1, b));
        (n + 1, b)
    });
    if n <= budget {
        return;
    }
    {
        // SAFETY: `l` is the running coroutine Luau hands its interrupt,
        // whose level 0 is the Lua function at the call or back-edge; "sl"
        // fills `short_src` (NUL-terminated, owned by `ar`) and `currentline`.
        let (src, line) = unsafe {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getinfo(l, 0, c"sl".as_ptr(), &mut ar) != 0 && !ar.short_src.is_null() {
                (CStr::from_ptr(ar.short_src).to_string_lossy().into_owned(), ar.currentline)
            } else {
                ("?".to_string(), 0)
            }
        };
        let msg = format!("{src}:{line}: budget of {budget} interrupts exceeded (a runaway loop? budget=N raises it)");
        // SAFETY: an interrupt may be called with a full stack (Luau issue
        // 446), hence the check for the one slot the message takes.
        unsafe {
            ffi::lua_rawcheckstack(l, 1);
            ffi::lua_pushlstring(l, msg.as_ptr().cast(), msg.len());
        }
    }
    // SAFETY: Luau lets an interrupt raise (its VM saves the pc first, in
    // native code too); the error unwinds, as a C++ exception through this
    // "C-unwind" frame, to the protected call of the decision or load that
    // ran the script. Every value with a destructor above was dropped at the
    // end of the block.
    unsafe { ffi::lua_error(l) }
}

/// Name of the chunk of cosched's own Lua helpers (the reset's snapshot).
const HELPERS: &str = "=cosched";

/// Run on a fresh state before the script loads: keeps the sandbox's
/// globals and the contents of every table among them (`string`, `math`,
/// `params`, ...) and of the strings' metatable, and returns the function
/// that puts all of it back (`Script::reset`) and the set of those tables.
const SNAPSHOT: &str = r#"
local G = ...
local type, rawequal = type, rawequal
-- Luau's own iteration over a table (`for k, v in t`), not `next` calls;
-- plain stores rather than rawset calls: `reset` has removed every
-- metatable of these tables first, so no metamethod can intervene; and
-- rawequal, not `~=`, which could call a script's __eq.
local function copy(t)
  local c, n = {}, 0
  for k, v in t do c[k] = v; n += 1 end
  return {c, n}
end
local keep, libs = copy(G), {}
for _, v in G do
  if type(v) == "table" and v ~= G then libs[v] = copy(v) end
end
local smt = getmetatable("")
if smt then libs[smt] = copy(smt) end
local function put(t, kept)
  local c, n = kept[1], kept[2]
  -- Most tables are as kept: one pass that finds every entry and no
  -- other says so, and the two below are for the rest.
  local m = 0
  for k, v in t do
    if not rawequal(c[k], v) then m = -1; break end
    m += 1
  end
  if m == n then return end
  for k in t do
    if c[k] == nil then t[k] = nil end
  end
  for k, v in c do
    if not rawequal(t[k], v) then t[k] = v end
  end
end
return function()
  put(G, keep)
  for t, c in libs do put(t, c) end
end, libs
"#;

/// `file:line` of the script's code that called into Rust (past cosched's
/// own helpers), for errors raised by the callbacks.
fn here(lua: &Lua) -> String {
    for level in 1..8 {
        let Some(d) = lua.inspect_stack(level) else { break };
        let s = d.source();
        // `view.score`'s C function calls the callback when it cannot answer.
        if s.source.as_deref() == Some(HELPERS) || s.what == "C" {
            continue;
        }
        return format!("{}:{}: ", s.short_src.unwrap_or_default(), d.curr_line());
    }
    String::new()
}

/// A whole number as Luau holds it, a double (mlua hands whole ones that fit
/// an i32 over as `Integer`), if it is one exactly: ids, cores, pools and
/// variants stay below 2^53, where every whole number is a double.
pub(crate) fn whole(v: &Value) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match *v {
        Value::Integer(i) => Some(i64::from(i)),
        Value::Number(n) if n.fract() == 0.0 && n.abs() <= EXACT => Some(n as i64),
        _ => None,
    }
}

/// A job id from a number or a job table (`job.id`).
fn job_arg(lua: &Lua, shared: &CallbackState, v: &Value, what: &str) -> mlua::Result<JobId> {
    let id = match v {
        Value::Table(t) => whole(&t.raw_get::<Value>("id")?),
        v => whole(v),
    };
    match id {
        Some(i) if i >= 0 && shared.known(i as usize) => Ok(i as usize),
        Some(i) => Err(mlua::Error::runtime(format!("{}{what}: job {i} is not one the view has shown", here(lua)))),
        None => Err(mlua::Error::runtime(format!("{}{what}: expected a job id or a job table, got a {}", here(lua), v.type_name()))),
    }
}

/// The message of a Lua error as a user reads it: the script's
/// `file:line: what`, without mlua's wrapping.
pub(crate) fn message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) | mlua::Error::MemoryError(m) => m.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::CallbackError { cause, .. } => message(cause),
        mlua::Error::WithContext { context, cause } => format!("{context}: {}", message(cause)),
        other => other.to_string(),
    }
}

/// What the sandbox leaves out (`grant=` none), and which grant gives it:
/// Luau's error for calling or indexing a missing global does not name it,
/// so the script's line is searched for these names to say why.
const OUTSIDE: &[(&str, &str)] = &[
    ("os", "os"),
    ("io", "io"),
    ("require", "all"),
    ("load", "all"),
    ("loadstring", "all"),
    ("loadfile", "all"),
    ("dofile", "all"),
    ("getfenv", ""),
    ("setfenv", ""),
];

/// `msg` with, if it is Luau's nameless error for a nil global at a line of
/// `source` that names something the sandbox under `grant` leaves out, what
/// that is and how to grant it.
fn explain(msg: String, path: &str, source: &str, grant: &str) -> String {
    let Some(rest) = msg.strip_prefix(path).and_then(|r| r.strip_prefix(':')) else { return msg };
    let Some((line, what)) = rest.split_once(": ") else { return msg };
    let Ok(line) = line.parse::<usize>() else { return msg };
    if !(what.starts_with("attempt to call a nil value") || what.starts_with("attempt to index nil with")) {
        return msg;
    }
    let Some(text) = source.lines().nth(line.wrapping_sub(1)) else { return msg };
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let named = |name: &str| {
        text.match_indices(name).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + name.len()..].chars().next();
            !before.is_some_and(|c| word(c) || c == '.' || c == ':') && !after.is_some_and(word)
        })
    };
    let granted = |g: &str| !g.is_empty() && (grant == g || grant == "all");
    match OUTSIDE.iter().find(|(name, g)| !granted(g) && named(name)) {
        Some((name, "")) => format!("{msg} (`{name}` is not offered to scripts)"),
        Some((name, g)) => format!("{msg} (`{name}` is outside the sandbox; grant={g} gives it)"),
        None => msg,
    }
}

/// One loaded script: its Lua state, its functions, and the tables it is
/// shown (each job's table made once, so a script may annotate it).
pub(crate) struct Script {
    lua: Lua,
    source: String,
    /// The script's file, for errors.
    path: String,
    /// `grant=`, for errors naming what the sandbox leaves out.
    grant: String,
    /// The script's chunk, run by `start`.
    main: Function,
    /// Puts the sandbox back as it was before the script ran (`SNAPSHOT`).
    restore: Function,
    /// The tables `restore` restores (keys), whose metatables `reset` clears.
    libs: Table,
    /// `view.score` and `view.slowdown`, set in each new view.
    score: Function,
    slowdown: Function,
    /// `view.cpus` and `view.estimate`.
    cpus: Function,
    estimate: Function,
    /// Whether the script mentions `cpus` (else `view.cpus` has nothing to
    /// read and the cores are not copied).
    reads_cpus: bool,
    /// `file:line` where `decide` is defined, for decisions the engine
    /// would refuse (no Lua line raised them).
    at: String,
    decide: Function,
    observe: Option<Function>,
    /// Whether this order's pool tables are made.
    pooled: bool,
    /// The waiting jobs' templates (`raw::Template`), by job name.
    templates: raw::Templates,
    /// The one argument of a decision's protected call, as `raw`'s
    /// contract lists it: the view's tables, made anew each order; the
    /// tables only cosched reaches: the pool tables by index, the job
    /// tables by id + 1 (made the first time the view shows a job, the
    /// same for its whole life), the strings of `raw::KEYS` interned once,
    /// the templates' tables; `decide`; and an answer `raw::decisions`
    /// could not read. Kept apart from the view, which the script may
    /// change, so that each decision only sets `free` and `progress` in
    /// tables that are surely these. `view.queue` is kept from one
    /// decision to the next and brought up to date by removing the jobs
    /// that left it and appending arrivals: the queue changes by a job or
    /// two per decision, and rebuilding a table of every waiting job each
    /// time was most of a decision's cost; `view.running` is rewritten in
    /// place at each decision.
    bundle: Table,
    /// The decisions' way into the state (the bundle's protected call).
    gate: Gate,
    /// The ids `view.queue` holds, in order.
    shown: Vec<JobId>,
    /// Jobs whose table says how they run (pool, cores, solo of the
    /// variant that started), by id.
    ran: Vec<bool>,
    /// The script's global `wake_at` after its last decision: when it wants
    /// to be asked again though nothing happens (a bank's next refill).
    wake: Option<f64>,
    globals: Table,
    /// Whether the script mentions `wake_at` at all (else it is not read).
    wakes: bool,
    /// Whether the script names a decision on running jobs (`suspend`,
    /// `resume`, `move`): engines then ask it about full nodes too.
    acts: bool,
    shared: Rc<CallbackState>,
    budget: u64,
    /// `memory_mib`, for the message when the state runs out of it.
    memory_mib: usize,
}

impl Script {
    /// Loads `source` into a fresh sandboxed state and checks that it
    /// implements the interface.
    fn load(spec: &LuaSpec, source: String, bytecode: Option<&[u8]>) -> Result<Script, String> {
        let path = spec.path.display().to_string();
        // bit32 stands in for Lua 5.4's bitwise operators, which Luau lacks.
        let mut libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE | StdLib::BIT;
        let grant = spec.grant();
        if grant == "os" || grant == "all" {
            // Luau's os is clock, date, difftime and time: nothing that
            // runs commands or touches files.
            libs |= StdLib::OS;
        }
        if grant == "all" {
            libs |= StdLib::PACKAGE;
        }
        let lua = Lua::new_with(libs, LuaOptions::default()).map_err(|e| format!("{path}: cannot start Lua: {e}"))?;
        // Before anything is built in it: the sandbox counts too.
        lua.set_memory_limit(spec.memory_bytes()).map_err(|e| format!("{path}: cannot limit Lua's memory: {e}"))?;
        lua.set_compiler(compiler());
        let setup = || -> mlua::Result<Table> {
            let g = lua.globals();
            // Luau has no dofile, loadfile or load; `getfenv`/`setfenv`
            // could give the script's chunk another environment, which a
            // reset (below) would not put back.
            for name in ["getfenv", "setfenv", "loadstring"] {
                g.raw_set(name, Value::Nil)?;
            }
            if grant == "io" || grant == "all" {
                g.raw_set("io", crate::io::library(&lua)?)?;
            }
            if grant == "all" {
                crate::io::loaders(&lua, &g)?;
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
                // Luau's numbers are doubles: `inf` is math.huge.
                let value = if let Ok(x) = t.parse::<f64>() {
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
        // inside a protected call; the callbacks it sets are the state's
        // (shared by its coroutines) and touch no stack slot.
        unsafe { lua.exec_raw::<()>((), |l| (*ffi::lua_callbacks(l)).interrupt = Some(interrupt)) }
            .map_err(|e| format!("{path}: cannot set the budget: {e}"))?;
        let budget = spec.budget();

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

        let shared = Rc::new(CallbackState::default());
        let (score, slowdown) = (|| -> mlua::Result<(Function, Function)> {
            let l = shared.clone();
            let raw = lua.create_function(move |lua, (a, b): (Value, Value)| {
                let (a, b) = (job_arg(lua, &l, &a, "score")?, job_arg(lua, &l, &b, "score")?);
                l.with("score", |s| s.score(a, b))
            })?;
            // SAFETY: the closure runs inside mlua's protected call with
            // `raw` at stack slot 1; the pointer is to the `CallbackState` that `raw`
            // holds an `Rc` of, and `raw` becomes the C function's upvalue,
            // so the `CallbackState` lives as long as the function, as
            // `raw::push_score` requires.
            let fast: Function = unsafe { lua.exec_raw((raw,), |l| raw::push_score(l, Rc::as_ptr(&shared))) }?;
            let l = shared.clone();
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
            Ok((fast, slowdown))
        })()
        .map_err(|e| format!("{path}: {}", message(&e)))?;
        let (cpus, estimate) = (|| -> mlua::Result<(Function, Function)> {
            let l = shared.clone();
            let cpus = lua.create_function(move |lua, job: Value| {
                let job = job_arg(lua, &l, &job, "cpus")?;
                l.with("cpus", |_| ())?;
                let cpus = l.cpus.borrow();
                let held = cpus.iter().find(|(j, _)| *j == job).map(|(_, c)| c.clone());
                held.map(|c| lua.create_sequence_from(c)).transpose()
            })?;
            let l = shared.clone();
            let estimate = lua.create_function(move |lua, job: Value| {
                let job = job_arg(lua, &l, &job, "estimate")?;
                let Some(e) = l.with("estimate", |s| s.online(job))? else { return Ok(None) };
                let t = lua.create_table()?;
                t.raw_set("slowdown", e.slowdown)?;
                t.raw_set("lo", e.lo)?;
                t.raw_set("hi", e.hi)?;
                t.raw_set("n", e.n as f64)?;
                t.raw_set("signal", e.signal.name())?;
                // As `react` reads it: an interval a reaction may act on.
                t.raw_set("decisive", e.signal.decisive() && e.n >= MIN_SEGMENTS)?;
                t.raw_set("time", e.time)?;
                Ok(Some(t))
            })?;
            Ok((cpus, estimate))
        })()
        .map_err(|e| format!("{path}: {}", message(&e)))?;
        let table = || lua.create_table().map_err(|e| format!("{path}: {}", message(&e)));
        let bundle = table()?;
        // cosched's own tables, for good; the view's are made by `start`.
        (|| -> mlua::Result<()> {
            bundle.raw_set(raw::POOLS, lua.create_table()?)?;
            bundle.raw_set(raw::JOBS, lua.create_table()?)?;
            bundle.raw_set(raw::KEYS_AT, lua.create_sequence_from(raw::KEYS)?)?;
            bundle.raw_set(raw::TEMPLATES, lua.create_table()?)?;
            // Before the script runs, so its own `table.move` (if it sets
            // one) is never what moves the queue.
            bundle.raw_set(raw::MOVE, g.raw_get::<Table>("table")?.raw_get::<Function>("move")?)
        })()
        .map_err(|e| format!("{path}: {}", message(&e)))?;
        let gate = Gate::new(&lua, &bundle).map_err(|e| format!("{path}: {}", message(&e)))?;
        let wakes = source.contains("wake_at");
        let reads_cpus = source.contains("cpus");
        let acts = ["suspend", "resume", "move"].iter().any(|k| source.contains(k));
        let memory_mib = spec.memory_bytes() >> 20;
        let mut script = Script {
            globals: g,
            wakes,
            acts,
            source,
            path,
            grant: spec.grant().to_string(),
            at: String::new(),
            main,
            restore,
            libs,
            // Set by `start`.
            decide: score.clone(),
            observe: None,
            score,
            slowdown,
            cpus,
            estimate,
            reads_cpus,
            pooled: false,
            templates: None,
            bundle,
            gate,
            shown: Vec::new(),
            ran: Vec::new(),
            wake: None,
            shared,
            budget,
            memory_mib,
            lua,
        };
        script.start()?;
        Ok(script)
    }

    /// The message of an error the script raised, as `explain` tells it.
    fn explain(&self, e: &mlua::Error) -> String {
        self.out_of_memory(e, &self.path).unwrap_or_else(|| explain(message(e), &self.path, &self.source, &self.grant))
    }

    /// The message of an allocation the memory limit refused: Luau's own
    /// ("not enough memory") names neither the line nor the limit.
    fn out_of_memory(&self, e: &mlua::Error, at: &str) -> Option<String> {
        fn is_memory(e: &mlua::Error) -> bool {
            match e {
                mlua::Error::MemoryError(_) => true,
                mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => is_memory(cause),
                _ => false,
            }
        }
        is_memory(e).then(|| format!("{at}: memory limit of {} MiB exceeded (memory_mib=N raises it)", self.memory_mib))
    }

    /// Runs the script's chunk, finds its interface, and gives it a view no
    /// decision has touched.
    fn start(&mut self) -> Result<(), String> {
        let path = &self.path;
        meter(self.budget);
        self.main.call::<()>(()).map_err(|e| self.explain(&e))?;
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
        let args = (&self.bundle, &self.score, &self.slowdown, &self.cpus, &self.estimate, &self.decide);
        // SAFETY: the closure runs inside mlua's protected call with these
        // six values at stack slots 1 to 6, as `raw::fresh_view` requires;
        // the bundle's `POOLS` and `JOBS` were set by `load`.
        unsafe { self.lua.exec_raw::<()>(args, |l| raw::fresh_view(l)) }.map_err(|e| format!("{path}: {}", message(&e)))?;
        self.pooled = false;
        self.shared.known.borrow_mut().clear();
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
    pub(crate) fn reset(&mut self) -> Result<(), String> {
        (|| -> mlua::Result<()> {
            // Raw: a script's `__metatable` field cannot stop it. A table
            // the script froze (`table.freeze`) is thawed first: the
            // sandbox made none read-only.
            self.globals.set_readonly(false);
            self.globals.set_metatable(None);
            for t in self.libs.clone().pairs::<Table, Value>() {
                let t = t?.0;
                t.set_readonly(false);
                t.set_metatable(None);
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

    /// The script's decisions for `view`, checked as the engine checks them.
    ///
    /// One protected call per decision does it all through Luau's C API
    /// (`raw`): bring the view's tables up to `view`, call `decide`, read
    /// the decisions it returns. Through mlua, each field set and each call
    /// was a protected call of its own, and those were most of a decision's
    /// cost.
    fn decide(&mut self, view: &View, governor: Level) -> Result<Vec<Decision>, String> {
        let most = view.queue.iter().map(|q| q.id).chain(view.running.iter().map(|r| r.id)).max().unwrap_or(0);
        {
            let mut known = self.shared.known.borrow_mut();
            if known.len() <= most {
                known.resize(most + 1, false);
            }
        }
        if self.ran.len() <= most {
            self.ran.resize(most + 1, false);
        }
        if self.reads_cpus {
            let mut cpus = self.shared.cpus.borrow_mut();
            cpus.clear();
            cpus.extend(view.running.iter().map(|r| (r.id, r.cpus.to_vec())));
        }
        let (mut filled, mut fast) = (false, None);
        meter(self.budget);
        {
            let _loan = self.shared.lend(view.slowdown);
            let mut pass = Some(raw::Pass {
                view,
                governor,
                pooled: self.pooled,
                shown: &mut self.shown,
                known: &self.shared.known,
                ran: &mut self.ran,
                templates: &mut self.templates,
            });
            let mut body = |l: *mut ffi::lua_State| {
                if let Some(pass) = pass.take() {
                    // SAFETY: the gate runs this inside a protected call with
                    // the bundle of `raw`'s contract (set by `start`) as its
                    // one stack slot; `raw::decide` keeps to the contract.
                    unsafe { raw::decide(l, pass, &mut filled, &mut fast) }
                }
            };
            // SAFETY: called between the state's Lua calls (a decision is
            // never made from inside one), with a body that keeps to `raw`'s
            // contract.
            let r = unsafe { self.gate.call(&self.lua, &mut body) };
            r.map_err(|e| match self.out_of_memory(&e, &self.at) {
                Some(m) => m,
                None if filled => self.explain(&e),
                None => format!("{}: {}", self.at, message(&e)),
            })?;
        }
        self.pooled = true;
        // Only a time ahead: a stale one would have engines wake at once,
        // again and again; and at least MIN_WAIT_S ahead, since one of
        // 1e-12 s never lets time pass.
        if self.wakes {
            let ahead = |t: f64| Some(t.max(view.time + MIN_WAIT_S));
            self.wake = match self.globals.raw_get::<Value>("wake_at").map_err(|e| message(&e))? {
                Value::Number(t) if t.is_finite() && t > view.time => ahead(t),
                Value::Integer(t) if f64::from(t) > view.time => ahead(f64::from(t)),
                _ => None,
            };
        }
        let ds = match fast {
            Some(ds) => ds,
            None => {
                let out = (|| -> mlua::Result<Value> {
                    let out = self.bundle.raw_get(raw::ANSWER)?;
                    self.bundle.raw_set(raw::ANSWER, Value::Nil)?;
                    Ok(out)
                })()
                .map_err(|e| format!("{}: decide: {}", self.at, message(&e)))?;
                answer::decisions(&out, view).map_err(|e| format!("{}: decide: {e}", self.at))?
            }
        };
        answer::check(view, &ds).map_err(|e| format!("{}: decide: {e}", self.at))?;
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
        f.call::<()>(t).map_err(|e| self.explain(&e))
    }
}

/// A policy whose decisions a Lua script makes.
pub struct LuaPolicy {
    spec: LuaSpec,
    script: PooledScript,
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

    fn acts_on_running(&self) -> bool {
        // The simulator reads it once per order: a script broken since is
        // asked more often than its fallback needs, which costs questions,
        // not decisions. A mention in a comment (or in `remove`) only costs
        // questions too.
        if self.broken { self.fallback.acts_on_running() } else { self.script.acts }
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
pub(crate) struct Code {
    text: String,
    bytecode: Option<Vec<u8>>,
}

/// How every script is compiled, from text in its state or to bytecode once
/// for a simulation's many states, so both give the same code. Level 2
/// adds Luau's inlining of local functions and loop unrolling (a script's
/// small helpers, such as `conflict-aware.lua`'s `start`):
/// `examples/overhead` ran its Lua side about 5 % faster (6 runs each,
/// alternated, on a loaded node: rough); errors still name the script's
/// line.
fn compiler() -> Compiler {
    Compiler::new().set_optimization_level(2)
}

/// The bytecode of `text`, with its line information, so errors still name
/// the script's line (the file is named when it loads); `None` if it does
/// not compile (loading the text then reports why).
fn compile(text: &str) -> Option<Vec<u8>> {
    compiler().compile(text).ok()
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
        let code = Code { text: text.to_string(), bytecode: compile(text) };
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
        let code = Arc::new(Code { bytecode: compile(&text), text });
        texts.insert(path.to_path_buf(), code.clone());
        Ok(code)
    }

    /// A policy from the parameters of `lua:...`. A simulation's build of a
    /// sandboxed script (no `grant=`) takes a spare script of this thread
    /// built from the same code and parameters, reset as new, if there is
    /// one (a Monte-Carlo run builds a policy per order).
    pub fn build(&self, params: &Params) -> Result<LuaPolicy, String> {
        self.build_spec(LuaSpec::from_params(params)?, params)
    }

    /// A policy from a spec's name and parameters: `lua:...`, or
    /// `react:inner=lua,...`, the script inside the `react` wrapper (which
    /// suspends or moves the newest job of a harmful co-run and lets the
    /// script start what fits).
    pub fn build_named(&self, name: &str, params: &Params) -> Result<Box<dyn Policy>, String> {
        let mut spec = LuaSpec::from_spec(name, params)?;
        let Some(react) = spec.react.take() else { return Ok(Box::new(self.build_spec(spec, params)?)) };
        let inner = self.build_spec(spec, params)?;
        Ok(Box::new(React::from_params(Box::new(inner), &react)))
    }

    /// A policy of `spec`, reusing a spare script built from the same
    /// `params` (see [`Builder::build`]).
    fn build_spec(&self, spec: LuaSpec, params: &Params) -> Result<LuaPolicy, String> {
        let fallback = cosched_sched::policy_by_name(spec.fallback(), &Params::new())?;
        let code = self.code(&spec.path)?;
        let reuse = !self.live && spec.grant() == "none";
        let spare = if reuse { take_spare(&code, params).and_then(|mut s| s.reset().ok().map(|()| s)) } else { None };
        let mut script = match spare {
            Some(s) => s,
            None => Script::load(&spec, code.text.clone(), code.bytecode.as_deref())?,
        };
        // A simulation's script meets the same jobs order after order.
        if reuse && script.templates.is_none() {
            script.templates = Some(HashMap::new());
        }
        let script = PooledScript::new(script, reuse.then(|| (code, params.clone())));
        let governor = self.governor.clone().unwrap_or_else(|| Governor::new(spec.governor()));
        Ok(LuaPolicy { spec, script, fallback, broken: false, log: self.log.clone(), governor, live: self.live, seen: live::generation() })
    }
}
