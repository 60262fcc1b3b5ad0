//! A Lua script behind the policy trait, in the simulator: what it sees,
//! what it may do, and what happens when it breaks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosched_engine::policy::{Params, Policy, PoolInfo};
use cosched_lua::{Builder, Governor, Level, Log, NoteKind};
use cosched_model::workload::PoolKind;
use cosched_sched::{policy_by_name, simulate, simulate_with, PairTable, Platform, SimJob, SimOptions, Variant};

fn platform(cores: u32) -> Platform {
    Platform { pools: vec![PoolInfo { name: "host".into(), cores, kind: PoolKind::Cpu }] }
}

/// Four one-core jobs of 10 s: a and b hurt each other (score 300), the
/// others do not (score 0, slowdown 1).
fn jobs() -> (Vec<SimJob>, PairTable) {
    let job = |name: &str| SimJob { name: name.into(), arrival: 0.0, solo: 10.0, pool: 0, cores: 1, program: name.into(), variants: vec![] };
    let jobs = vec![job("a"), job("b"), job("c"), job("d")];
    let mut slow = vec![vec![1.0; 4]; 4];
    slow[0][1] = 4.0;
    slow[1][0] = 4.0;
    (jobs, PairTable::new(slow).unwrap())
}

fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn params(path: &Path, extra: &[(&str, &str)]) -> Params {
    let mut p = Params::new();
    p.insert("path".into(), path.display().to_string());
    for (k, v) in extra {
        p.insert(k.to_string(), v.to_string());
    }
    p
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua")
}

fn starts(policy: &mut dyn Policy, cores: u32) -> Vec<(usize, f64)> {
    let (jobs, t) = jobs();
    let trace = simulate(&platform(cores), &jobs, &t, policy).unwrap();
    let mut s: Vec<(usize, f64)> = trace
        .iter()
        .filter(|e| e.kind == cosched_engine::EventKind::Start)
        .map(|e| (e.job, e.time))
        .collect();
    s.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    s
}

#[test]
fn noplan_lua_schedules_as_the_rust_noplan() {
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&examples().join("noplan.lua"), &[])).unwrap();
    let mut rust = policy_by_name("noplan", &Params::new()).unwrap();
    // a and b co-run at slowdown 4: both end at 40 s, then c and d.
    assert_eq!(starts(&mut lua, 2), vec![(0, 0.0), (1, 0.0), (2, 40.0), (3, 40.0)]);
    assert_eq!(starts(&mut lua, 2), starts(rust.as_mut(), 2));
    assert!(b.log().notes().is_empty());
}

#[test]
fn the_conflict_aware_script_keeps_a_conflicting_pair_apart() {
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&examples().join("conflict-aware.lua"), &[("threshold", "100")])).unwrap();
    // a runs with c, then b with d: never a beside b.
    assert_eq!(starts(&mut lua, 2), vec![(0, 0.0), (2, 0.0), (1, 10.0), (3, 10.0)]);
    let mut inf = b.build(&params(&examples().join("conflict-aware.lua"), &[("threshold", "inf")])).unwrap();
    assert_eq!(starts(&mut inf, 2), vec![(0, 0.0), (1, 0.0), (2, 40.0), (3, 40.0)], "inf is noplan");
}

#[test]
fn the_view_shows_time_queue_running_pools_governor_and_predictions() {
    let dir = tempfile::tempdir().unwrap();
    // Starts one job per decision while the queue is not empty and asserts
    // what it sees; an assertion failing would show as a policy-error note.
    let p = script(
        dir.path(),
        "look.lua",
        r#"
        local calls = 0
        function decide(view)
          calls = calls + 1
          assert(view.governor == params.expect, "governor " .. view.governor)
          assert(#view.pools == 1 and view.pools[1].name == "host" and view.pools[1].cores == 2)
          assert(view.pools[1].kind == "cpu")
          assert(view.pools[1].free == 2 - #view.running)
          if calls == 1 then
            assert(view.time == 0 and #view.queue == 4 and #view.running == 0)
            local a = view.queue[1]
            assert(a.id == 0 and a.name == "a" and a.program == "a" and a.pool == 1 and a.cores == 1 and a.solo == 10)
            assert(view.score(0, 1) == 300, "score " .. view.score(0, 1))
            assert(view.slowdown(a, {view.queue[2]}) == 4)
            assert(view.slowdown(0, {}) == 1)
          end
          for _, r in ipairs(view.running) do
            assert(r.progress >= 0 and r.progress < 1)
          end
          if view.queue[1] and view.pools[1].free > 0 then return {{start = view.queue[1].id}} end
        end
        "#,
    );
    for level in ["high", "low"] {
        let b = Builder::simulation(Arc::new(Log::default()));
        let mut lua = b.build(&params(&p, &[("governor", level), ("expect", level)])).unwrap();
        starts(&mut lua, 2);
        assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
    }
}

#[test]
fn the_sandbox_has_no_os_io_require_or_load_unless_granted() {
    let dir = tempfile::tempdir().unwrap();
    for (lib, line) in [("os.execute('true')", "os"), ("io.open('/etc/passwd')", "io"), ("require('x')", "require"), ("load('return 1')", "load"), ("dofile('/etc/passwd')", "dofile")] {
        let p = script(dir.path(), "s.lua", &format!("function decide(view)\n  {lib}\nend\n"));
        let b = Builder::simulation(Arc::new(Log::default()));
        let mut lua = b.build(&params(&p, &[])).unwrap();
        // The fallback (exclusive) runs the jobs one at a time.
        assert_eq!(starts(&mut lua, 2).len(), 4);
        let notes = b.log().notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].kind, NoteKind::Error);
        let at = format!("{}:2:", p.display());
        assert!(notes[0].detail.contains(&at) && notes[0].detail.contains(line), "{lib}: {}", notes[0].detail);
        assert!(notes[0].detail.ends_with("`exclusive` decides from now on"), "{}", notes[0].detail);
    }
    let p = script(dir.path(), "os.lua", "function decide(view)\n  assert(os.time() > 0)\n  if view.pools[1].free > 0 then return {{start = view.queue[1].id}} end\nend\n");
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[("grant", "os")])).unwrap();
    starts(&mut lua, 1);
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
}

/// Runs a script that never returns from `decide` under a budget of 50,000
/// instructions with `noplan` as the fallback: the schedule must be
/// noplan's, with exactly one note. Returns the note and the script's path.
fn runaway(text: &str) -> (String, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "runaway.lua", text);
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[("budget", "50000"), ("fallback", "noplan")])).unwrap();
    let mut rust = policy_by_name("noplan", &Params::new()).unwrap();
    assert_eq!(starts(&mut lua, 2), starts(rust.as_mut(), 2));
    let notes = b.log().notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    (notes[0].detail.clone(), p)
}

#[test]
fn a_runaway_script_is_stopped_by_its_budget_and_the_fallback_finishes_the_run() {
    let (detail, p) = runaway("function decide(view)\n  while true do end\nend\n");
    assert!(detail.starts_with(&format!("{}:2: budget of 50000 interrupts exceeded", p.display())), "{detail}");
    assert!(detail.ends_with("`noplan` decides from now on"));
}

#[test]
fn a_decision_the_engine_would_refuse_is_reported_with_the_scripts_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("return {{start = 99}}", "decision 1: job 99 is not waiting"),
        ("return {{start = view.queue[1].id}, {start = view.queue[1].id}}", "decision 2: job 0 is not waiting"),
        ("return {{start = view.queue[1].id}, {start = view.queue[2].id}, {start = view.queue[3].id}}", "job 2 needs 1 cores; pool 1 has 0 free"),
        ("return {{start = view.queue[1].id, pool = 2}}", "job 0 belongs to pool 1, not 2"),
        ("return {{stop = 1}}", "expected {start = JOB[, pool = P | variant = K]}"),
        ("return 7", "returned a integer"),
        ("return {view.queue[1].id}", "decision 1 is a integer"),
    ];
    for (body, why) in cases {
        let p = script(dir.path(), "bad.lua", &format!("-- line 1\nfunction decide(view)\n  {body}\nend\n"));
        let b = Builder::simulation(Arc::new(Log::default()));
        let mut lua = b.build(&params(&p, &[])).unwrap();
        assert_eq!(starts(&mut lua, 2).len(), 4, "{body}");
        let notes = b.log().notes();
        assert_eq!(notes.len(), 1, "{body}: {notes:?}");
        let d = &notes[0].detail;
        assert!(d.starts_with(&format!("{}:2: decide: ", p.display())), "{body}: {d}");
        assert!(d.contains(why), "{body}: {d}");
    }
}

#[test]
fn a_script_that_leaves_an_idle_node_idle_gets_one_fallback_decision_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "idle.lua", "function decide(view)\n  return {}\nend\n");
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[])).unwrap();
    // exclusive starts one job each time the node is idle: 4 notes.
    assert_eq!(starts(&mut lua, 2), vec![(0, 0.0), (1, 10.0), (2, 20.0), (3, 30.0)]);
    let kinds: Vec<NoteKind> = b.log().notes().iter().map(|n| n.kind).collect();
    assert_eq!(kinds, vec![NoteKind::Idle; 4]);
}

#[test]
fn observe_sees_each_finished_job() {
    let dir = tempfile::tempdir().unwrap();
    // Starts the next job only once the last one has been observed.
    let p = script(
        dir.path(),
        "obs.lua",
        r#"
        local seen = {}
        local started = 0
        function observe(o)
          assert(o.finish - o.start == 10 and o.slowdown == 1 and o.solo == 10, "outcome")
          seen[#seen + 1] = o.job
        end
        function decide(view)
          if #view.running == 0 and #seen == started and view.queue[1] then
            started = started + 1
            return {{start = view.queue[1].id}}
          end
        end
        "#,
    );
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[])).unwrap();
    assert_eq!(starts(&mut lua, 2), vec![(0, 0.0), (1, 10.0), (2, 20.0), (3, 30.0)]);
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
}

#[test]
fn a_script_that_does_not_load_is_refused_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let b = Builder::simulation(Arc::new(Log::default()));
    let p = script(dir.path(), "syntax.lua", "function decide(view)\n  return {\nend\n");
    let e = b.build(&params(&p, &[])).err().unwrap();
    assert!(e.starts_with(&format!("{}:3:", p.display())), "{e}");
    let p = script(dir.path(), "none.lua", "local x = 1\n");
    assert!(b.build(&params(&p, &[])).err().unwrap().contains("defines no function decide(view)"));
    let p = script(dir.path(), "top.lua", "error('no')\n");
    assert!(b.build(&params(&p, &[])).err().unwrap().starts_with(&format!("{}:1: no", p.display())));
    let e = b.build(&params(&dir.path().join("missing.lua"), &[])).err().unwrap();
    assert!(e.contains("cannot read Lua script") && e.contains("missing.lua"), "{e}");
}

#[test]
fn a_live_policy_swaps_a_good_script_between_decisions_and_refuses_a_broken_one() {
    use cosched_engine::{Decision, QueuedJob, View};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("strategy.lua");
    std::fs::copy(examples().join("noplan.lua"), &p).unwrap();
    let log = Arc::new(Log::default());
    let b = Builder::live(log.clone(), Governor::new(Level::High));
    let mut lua = b.build(&params(&p, &[])).unwrap();
    let (_, t) = jobs();
    let queue = [
        QueuedJob { id: 0, name: "a", pool: 0, cores: 1, solo: 10.0, program: "a", variants: &[] },
        QueuedJob { id: 1, name: "b", pool: 0, cores: 1, solo: 10.0, program: "b", variants: &[] },
    ];
    let pools = platform(2).pools;
    let view = |time: f64| View { time, queue: &queue, running: &[], pools: &pools, slowdown: &t };
    let both = vec![Decision::Start { job: 0, pool: 0 }, Decision::Start { job: 1, pool: 0 }];
    let alone = vec![Decision::Start { job: 0, pool: 0 }];
    assert_eq!(lua.decide(&view(0.0)), both, "noplan co-runs the conflicting pair");

    std::fs::copy(examples().join("conflict-aware.lua"), &p).unwrap();
    assert_eq!(lua.decide(&view(1.0)), both, "no reload was asked for");
    cosched_lua::live::request_reload();
    assert_eq!(lua.decide(&view(2.0)), alone, "the new script made this decision");

    std::fs::write(&p, "-- broken\nfunction decide(view)\n  return {{start = 12345}}\nend\n").unwrap();
    cosched_lua::live::request_reload();
    assert_eq!(lua.decide(&view(3.0)), alone, "the old script decided");
    std::fs::write(&p, "function decide(view)\n  return {\n").unwrap();
    cosched_lua::live::request_reload();
    assert_eq!(lua.decide(&view(4.0)), alone);

    let notes = log.notes();
    let seen: Vec<(f64, NoteKind)> = notes.iter().map(|n| (n.time, n.kind)).collect();
    assert_eq!(seen, vec![(2.0, NoteKind::Swap), (3.0, NoteKind::Refused), (4.0, NoteKind::Refused)]);
    assert!(notes[0].detail.contains("strategy.lua swapped in"), "{}", notes[0].detail);
    assert!(notes[1].detail.starts_with(&format!("{}:2: decide: decision 1: job 12345 is not waiting", p.display())), "{}", notes[1].detail);
    assert!(notes[1].detail.ends_with("the running script keeps deciding"));
    assert!(notes[2].detail.starts_with(&format!("{}:3:", p.display())), "{}", notes[2].detail);
}

/// A host pool of 2 cores and an accelerator slot; two jobs preferring
/// both host cores (10 s), then the accelerator (4 s), then one core (20 s).
fn collections() -> (Platform, Vec<SimJob>, PairTable) {
    let platform = Platform {
        pools: vec![
            PoolInfo { name: "host".into(), cores: 2, kind: PoolKind::Cpu },
            PoolInfo { name: "acc".into(), cores: 1, kind: PoolKind::Accelerator { host_load: 0.0 } },
        ],
    };
    let v = |name: &str, pool, cores, solo| Variant { name: name.into(), pool, cores, solo };
    let job = |name: &str| SimJob {
        name: name.into(),
        arrival: 0.0,
        solo: 10.0,
        pool: 0,
        cores: 2,
        program: "mm".into(),
        variants: vec![v("all", 0, 2, 10.0), v("acc", 1, 1, 4.0), v("one", 0, 1, 20.0)],
    };
    (platform, vec![job("a"), job("b")], PairTable::new(vec![vec![1.0; 2]; 2]).unwrap())
}

#[test]
fn a_script_sees_a_jobs_variants_and_starts_the_one_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        dir.path(),
        "acc.lua",
        r#"
        function decide(view)
          for _, r in ipairs(view.running) do
            -- A running job's table says how it runs: the accelerator variant.
            assert(r.pool == 2 and r.cores == 1 and r.solo == 4, "running as " .. r.pool)
          end
          local j = view.queue[1]
          if not j then return {} end
          local v = j.variants[2]
          assert(#j.variants == 3 and v.index == 2 and v.name == "acc" and v.pool == 2 and v.cores == 1 and v.solo == 4)
          assert(j.variants[1].name == "all" and j.variants[3].solo == 20)
          if view.pools[v.pool].free >= v.cores then return {{start = j.id, variant = v}} end
          return {}
        end
        "#,
    );
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[])).unwrap();
    let (platform, jobs, table) = collections();
    let t = simulate_with(&platform, &jobs, &table, &table, &mut lua, &SimOptions::default()).unwrap();
    assert!(b.log().notes().is_empty(), "{:?}", b.log().summary());
    // Both on the accelerator, one after the other, though the host idles.
    assert_eq!(t.variant, vec![1, 1]);
    let finish: Vec<f64> = t.events.iter().filter(|e| e.kind == cosched_engine::EventKind::Finish).map(|e| e.time).collect();
    assert_eq!(finish, vec![4.0, 8.0]);
}

#[test]
fn a_variant_the_job_does_not_have_is_refused_and_the_fallback_decides() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "four.lua", "function decide(view)\n  return {{start = view.queue[1].id, variant = 4}}\nend\n");
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[])).unwrap();
    let (platform, jobs, table) = collections();
    let t = simulate_with(&platform, &jobs, &table, &table, &mut lua, &SimOptions::default()).unwrap();
    let notes = b.log().notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].detail.contains("four.lua:1: decide: decision 1: job 0 has no variant 4 (it has 3)"), "{}", notes[0].detail);
    // `exclusive` ran both jobs their own way, one after the other.
    assert_eq!(t.variant, vec![0, 0]);
}

#[test]
fn a_simulation_reuses_a_finished_orders_script_with_nothing_of_that_order_left() {
    // Each decision checks that the state is as new, then changes it in
    // every way a script can outside its own chunk: a global made in
    // decide, a library field, a library's and _G's metatable, the
    // strings' metatable, `params`. Anything left over makes the next
    // order's script decide nothing on an idle node (an `Idle` note).
    let text = r#"
local top = 0
function decide(view)
  local fresh = top == 0 and leaked == nil and math.pi > 3 and string.extra == nil
    and getmetatable(_G) == nil and getmetatable(math) == nil
    and getmetatable("").__index == string and params.threshold == 100
  top = top + 1
  if top == 1 then
    leaked = true
    math.pi = 0
    string.extra = 1
    table.freeze(string)
    params.threshold = -1
    table.freeze(params)
    setmetatable(math, {__metatable = "locked"})
    setmetatable(_G, {__index = function() return 0 end, __metatable = "locked"})
  end
  if not fresh then return nil end
  return {{start = view.queue[1].id}}
end
"#;
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "leaky.lua", text);
    let b = Builder::simulation(Arc::new(Log::default()));
    let given = params(&p, &[("threshold", "100"), ("fallback", "noplan")]);
    let before = cosched_lua::spares();
    let first = {
        let mut lua = b.build(&given).unwrap();
        starts(&mut lua, 1)
    };
    assert_eq!(cosched_lua::spares(), before + 1, "the finished order's script is kept");
    let mut lua = b.build(&given).unwrap();
    assert_eq!(cosched_lua::spares(), before, "and handed to the next build");
    assert_eq!(starts(&mut lua, 1), first);
    // On one core the script starts only on its first decision of an
    // order; every later one is an idle node the fallback fills, in both
    // orders alike.
    let idle: Vec<_> = b.log().notes().iter().map(|n| n.time).collect();
    assert_eq!(idle.len() % 2, 0, "{:?}", b.log().notes());
    assert_eq!(idle[..idle.len() / 2], idle[idle.len() / 2..]);
}

#[test]
fn a_later_orders_job_tables_are_the_tables_a_first_order_makes_whatever_the_script_did_to_them() {
    // A simulation copies a job's table from the one it made for the same
    // job in an earlier order. Each decision checks that every waiting
    // job's table it meets first is as made (its fields, no metatable, not
    // frozen), then annotates it and freezes or locks it; and it starts the job picked
    // by a hash of every field in `pairs` order, so a copy laid out
    // otherwise than a made table would (almost surely) start another job.
    let text = r#"
local met = {}
function decide(view)
  local s, fresh = "", true
  for _, j in ipairs(view.queue) do
    if not met[j] then
      fresh = fresh and j.seen == nil and getmetatable(j) == nil and not table.isfrozen(j)
    end
    for k, v in pairs(j) do s = s .. k .. "=" .. tostring(v) .. ";" end
  end
  for i, j in ipairs(view.queue) do
    if not met[j] then
      met[j] = true
      j.seen = true
      if i % 2 == 0 then table.freeze(j) else setmetatable(j, {__metatable = "locked"}) end
    end
  end
  if not fresh then error("a job table was not as made") end
  if #view.queue == 0 or view.pools[1].free == 0 then return nil end
  local h = 0
  for i = 1, #s do h = (h * 31 + string.byte(s, i)) % 1000003 end
  return {{start = view.queue[h % #view.queue + 1].id}}
end
"#;
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "annotates.lua", text);
    let b = Builder::simulation(Arc::new(Log::default()));
    let given = params(&p, &[("fallback", "noplan")]);
    let run = || {
        let mut lua = b.build(&given).unwrap();
        starts(&mut lua, 2)
    };
    let first = run();
    assert_eq!(run(), first, "the second order's tables are copies");
    assert_eq!(run(), first);
    assert!(b.log().notes().is_empty(), "a job table was not as made: {:?}", b.log().summary());
}

#[test]
fn a_coroutine_cannot_escape_the_instruction_budget() {
    let (detail, p) = runaway("function decide(view)\n  coroutine.wrap(function()\n    while true do end\n  end)()\nend\n");
    assert!(detail.contains(&format!("{}:3: budget of 50000 interrupts exceeded", p.display())), "{detail}");
}

#[test]
fn deep_recursion_and_a_loop_around_pcall_are_stopped_too() {
    // Luau's own limit of nested calls stops a recursion first under a
    // generous budget, the budget under a small one; either names the line.
    let text = "local function f(n)\n  return f(n + 1) + 1\nend\nfunction decide(view)\n  return f(1)\nend\n";
    let (detail, p) = runaway(text);
    assert!(detail.starts_with(&format!("{}:2: stack overflow", p.display())), "{detail}");
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "deep.lua", text);
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[("budget", "5000"), ("fallback", "noplan")])).unwrap();
    starts(&mut lua, 2);
    let notes = b.log().notes();
    assert!(notes[0].detail.starts_with(&format!("{}:2: budget of 5000 interrupts exceeded", p.display())), "{}", notes[0].detail);
    // A script catching the budget's error still cannot keep running: every
    // interrupt past the budget raises again, outside the pcall too.
    let (detail, p) = runaway("function decide(view)\n  while true do\n    pcall(function() while true do end end)\n  end\nend\n");
    assert!(detail.starts_with(&format!("{}:", p.display())) && detail.contains("budget of 50000 interrupts exceeded"), "{detail}");
}

#[test]
fn the_runaway_tests_run_native_code() {
    // The budget must hold in Luau's native code, not only its interpreter.
    assert!(cosched_lua::native_code(), "Luau's code generator is off on this machine: the runaway tests tested the interpreter only");
}

#[test]
fn grant_io_gives_files_and_grant_all_gives_loading() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.txt");
    let text = r#"
local path = params.file
function decide(view)
  local f = assert(io.open(path, "w"))
  f:write("12.5 7\n", "second line\n", 3, "\n")
  assert(f:close())
  local r = assert(io.open(path))
  assert(r:read("n") == 12.5 and r:read("n") == 7)
  assert(r:read("l") == "" and r:read("l") == "second line")
  assert(r:read(1) == "3" and r:read("a") == "\n" and r:read("l") == nil)
  r:close()
  -- In "r+", a write lands where reading stopped.
  local u = assert(io.open(path, "r+"))
  assert(u:read("l") == "12.5 7")
  u:write("S")
  u:close()
  assert(io.open(path):read("a") == "12.5 7\nSecond line\n3\n")
  local n = 0
  for line in io.lines(path) do n = n + 1 end
  assert(n == 3, n)
  local missing, why = io.open(path .. ".none")
  assert(missing == nil and why:find("No such file"), why)
  assert(not pcall(r.read, r), "a closed file is refused")
  if view.pools[1].free > 0 then return {{start = view.queue[1].id}} end
end
"#;
    let p = script(dir.path(), "files.lua", text);
    let file = data.display().to_string();
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[("grant", "io"), ("file", &file)])).unwrap();
    starts(&mut lua, 1);
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());

    std::fs::write(dir.path().join("helper.lua"), "return {twice = function(x) return 2 * x end}\n").unwrap();
    let text = r#"
package.path = params.dir .. "/?.lua"
local helper = require("helper")
assert(helper.twice(21) == 42)
assert(load("return 1 + 1")() == 2 and loadstring("return 3")() == 3)
assert(dofile(params.dir .. "/helper.lua").twice(2) == 4)
local f, why = load("return +")
assert(f == nil and why, "a chunk that does not compile")
assert(os.time() > 0 and io.open ~= nil)
function decide(view)
  if view.pools[1].free > 0 then return {{start = view.queue[1].id}} end
end
"#;
    let p = script(dir.path(), "all.lua", text);
    let d = dir.path().display().to_string();
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[("grant", "all"), ("dir", &d)])).unwrap();
    starts(&mut lua, 1);
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
}

#[test]
fn an_error_a_view_callback_raises_reaches_the_note_with_the_scripts_line() {
    // Raised by Rust (the callbacks behind `view.score` and
    // `view.slowdown`), not by Luau: it crosses the decision's protected
    // call as mlua's error value and must still read as the script's.
    let dir = tempfile::tempdir().unwrap();
    for (call, why) in [("view.score(12345, view.queue[1])", "score: job 12345 is not one the view has shown"), ("view.slowdown('x', {})", "slowdown: expected a job id or a job table, got a string")] {
        let p = script(dir.path(), "cb.lua", &format!("function decide(view)\n  local s = {call}\n  return {{}}\nend\n"));
        let b = Builder::simulation(Arc::new(Log::default()));
        let mut lua = b.build(&params(&p, &[("fallback", "noplan")])).unwrap();
        let mut rust = policy_by_name("noplan", &Params::new()).unwrap();
        assert_eq!(starts(&mut lua, 2), starts(rust.as_mut(), 2));
        let notes = b.log().notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].kind, NoteKind::Error);
        let at = format!("{}:2: {why}", p.display());
        assert!(notes[0].detail.contains(&at), "{call}: {}", notes[0].detail);
        assert!(notes[0].detail.ends_with("`noplan` decides from now on"), "{}", notes[0].detail);
    }
}
