//! Lua policies that act on running jobs (issue 38 "also from Lua", issue
//! 43): a script suspends, resumes and moves jobs through the same check
//! as every engine, runs inside `react` (`react:inner=lua,...`), and reads
//! the running jobs' online estimates.
//!
//! The node of `cosched-sched`'s online tests: a 2-core pool; job A
//! (program a, 100 s alone), B1 and B2 (program b, 10 s) and C (program
//! c, 10 s), one core each, all waiting at t = 0. The truth: a and b slow
//! each other by 3, every other pair by nothing. The policy is shown the
//! blind prediction (every pair 1) and the node is read every second.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosched_engine::policy::{Params, Policy, PoolInfo};
use cosched_lua::{Builder, Log};
use cosched_model::metrics::{EventKind, JobId};
use cosched_model::workload::PoolKind;
use cosched_engine::run::run_node;
use cosched_sched::{policy_from_spec, simulate, PairTable, Platform, SimJob, VirtualNode};

fn platform() -> Platform {
    Platform { pools: vec![PoolInfo { name: "cpu".into(), cores: 2, kind: PoolKind::Cpu }] }
}

fn jobs() -> Vec<SimJob> {
    let job = |name: &str, program: &str, solo: f64| SimJob { name: name.into(), arrival: 0.0, solo, pool: 0, cores: 1, program: program.into(), variants: vec![] };
    vec![job("A", "a", 100.0), job("B1", "b", 10.0), job("B2", "b", 10.0), job("C", "c", 10.0)]
}

fn truth() -> PairTable {
    let mut m = vec![vec![1.0; 4]; 4];
    for b in [1, 2] {
        m[0][b] = 3.0;
        m[b][0] = 3.0;
    }
    PairTable::new(m).unwrap()
}

fn blind() -> PairTable {
    PairTable::new(vec![vec![1.0; 4]; 4]).unwrap()
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua")
}

fn params(kv: &[(&str, &str)]) -> Params {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The trace of `policy` on the sampled node, events in time order (ties
/// by job and kind), as (job, kind, time).
fn run(policy: &mut dyn Policy) -> Vec<(JobId, EventKind, f64)> {
    let (p, j, t, b) = (platform(), jobs(), truth(), blind());
    let mut node = VirtualNode::new(&j, &t).sampled(1.0);
    let trace = run_node(&p, &j, &b, policy, &mut node, &[]).unwrap();
    let mut e: Vec<(JobId, EventKind, f64)> = trace.events.iter().map(|e| (e.job, e.kind, e.time)).collect();
    e.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)).then(format!("{:?}", a.1).cmp(&format!("{:?}", b.1))));
    e
}

fn at(trace: &[(JobId, EventKind, f64)], job: JobId, kind: EventKind) -> Option<f64> {
    trace.iter().find(|e| e.0 == job && e.1 == kind).map(|e| e.2)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn react_around_a_lua_script_reacts_as_around_the_rust_policy_it_copies() {
    let b = Builder::simulation(Arc::new(Log::default()));
    let noplan = examples().join("noplan.lua").display().to_string();
    let spec = params(&[("inner", "lua"), ("path", &noplan), ("threshold", "1.3"), ("action", "suspend")]);
    let mut lua = b.build_named("react", &spec).unwrap();
    let mut rust = policy_from_spec("react:inner=noplan,threshold=1.3,action=suspend").unwrap();
    let (l, r) = (run(lua.as_mut()), run(rust.as_mut()));
    assert_eq!(l, r);
    // It did react: B1, the newer of A and B1, is suspended once its
    // estimate settles at t = 7 (crates/sched/tests/online.rs).
    assert!(close(at(&l, 1, EventKind::Suspend).unwrap(), 7.0), "{l:?}");
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
}

#[test]
fn a_script_suspends_on_the_online_estimate_and_resumes_when_its_co_runner_is_gone() {
    let b = Builder::simulation(Arc::new(Log::default()));
    let path = examples().join("suspend-harm.lua").display().to_string();
    let mut lua = b.build(&params(&[("path", &path), ("threshold", "1.3")])).unwrap();
    let trace = run(&mut lua);
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
    // As `react` over noplan: B1 suspended at 7, B2 started on its core and
    // suspended after its own six segments at 14, C started then; both
    // resume only after A ends.
    let mut rust = policy_from_spec("react:inner=noplan,threshold=1.3,action=suspend,resume=own").unwrap();
    assert_eq!(trace, run(rust.as_mut()));
    assert!(close(at(&trace, 1, EventKind::Suspend).unwrap(), 7.0), "{trace:?}");
    assert!(close(at(&trace, 2, EventKind::Suspend).unwrap(), 14.0), "{trace:?}");
    let a_end = at(&trace, 0, EventKind::Finish).unwrap();
    for j in [1, 2] {
        assert!(at(&trace, j, EventKind::Resume).unwrap() >= a_end - 1e-9, "{trace:?}");
    }
}

#[test]
fn without_estimates_the_example_suspends_on_the_predicted_slowdown() {
    // The plain simulator shows no estimate: shown the truth as its
    // prediction, the script suspends B1 as soon as it starts beside A.
    let b = Builder::simulation(Arc::new(Log::default()));
    let path = examples().join("suspend-harm.lua").display().to_string();
    let mut lua = b.build(&params(&[("path", &path)])).unwrap();
    let (p, j, t) = (platform(), jobs(), truth());
    let trace = simulate(&p, &j, &t, &mut lua).unwrap();
    let b1 = trace.iter().find(|e| e.job == 1 && e.kind == EventKind::Suspend).expect("B1 suspended");
    assert_eq!(b1.time, 0.0);
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
}

fn script(dir: &Path, text: &str) -> String {
    let p = dir.join("s.lua");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn suspend_resume_and_move_are_checked_as_every_engine_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    // Each body runs once two jobs run (A and B1 on cores 0 and 1).
    let cases = [
        ("return {{suspend = 2}}", "decision 1: job 2 is not running"),
        ("return {{resume = view.running[1].id}}", "decision 1: job 0 is not suspended"),
        ("return {{suspend = view.running[1]}, {suspend = view.running[1]}}", "decision 2: job 0 is suspended already"),
        ("return {{move = view.running[1].id, cores = {2}}}", "decision 1: job 0: pool 1 has no core 2 (its cores are 0..1)"),
        ("return {{move = view.running[1].id, cores = {}}}", "decision 1: job 0: no cores named"),
        ("return {{move = view.running[1].id, cores = 1}}", "`cores` is a integer; expected a list"),
        // A suspension frees the core the start then takes.
        ("return {{suspend = view.running[2].id}, {start = view.queue[1].id}, {start = view.queue[2].id}}", "decision 3: job 3 needs 1 cores; pool 1 has 0 free"),
    ];
    for (body, why) in cases {
        let text = format!("function decide(view)\n  if #view.running < 2 then return {{{{start = view.queue[1].id}}}} end\n  {body}\nend\n");
        let b = Builder::simulation(Arc::new(Log::default()));
        let mut lua = b.build(&params(&[("path", &script(dir.path(), &text)), ("fallback", "noplan")])).unwrap();
        let (p, j, t) = (platform(), jobs(), blind());
        simulate(&p, &j, &t, &mut lua).unwrap();
        let notes = b.log().notes();
        assert_eq!(notes.len(), 1, "{body}: {notes:?}");
        assert!(notes[0].detail.contains(why), "{body}: {}", notes[0].detail);
    }
}

#[test]
fn a_script_sees_which_jobs_are_suspended_and_on_which_cores_and_moves_them() {
    // Starts A and B1, suspends B1, moves it onto core 0 (A's) while it is
    // suspended, and resumes it there once A ends; records what it saw.
    let text = r#"
local function want(what, got, expected)
  if got ~= expected then error(what .. " is " .. tostring(got) .. ", expected " .. tostring(expected)) end
end
function decide(view)
  local r = view.running
  if #r == 0 and #view.queue == 2 then return {{start = view.queue[1]}, {start = view.queue[2]}} end
  if #r == 2 and not r[2].suspended and not moved then
    want("B1's cores", table.concat(view.cpus(r[2]), ","), "1")
    want("A's suspended", r[1].suspended, false)
    return {{suspend = r[2]}}
  end
  if #r == 2 and r[2].suspended and not moved then
    moved = true
    want("free cores", view.pools[1].free, 1)
    return {{move = r[2], cores = {0}}}
  end
  if #r == 1 and r[1].suspended then
    want("B1's cores after the move", table.concat(view.cpus(r[1]), ","), "0")
    want("B1's estimate", view.estimate(r[1]), nil)
    return {{resume = r[1]}}
  end
  return {}
end
"#;
    let dir = tempfile::tempdir().unwrap();
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&[("path", &script(dir.path(), text)), ("fallback", "noplan")])).unwrap();
    let j: Vec<SimJob> = jobs().into_iter().take(2).collect();
    let (p, t) = (platform(), blind());
    let trace = simulate(&p, &j, &t, &mut lua).unwrap();
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
    let kinds: Vec<(JobId, EventKind, f64)> = trace.iter().map(|e| (e.job, e.kind, e.time)).collect();
    // B1 runs its 10 s only after A's 100 s: suspended at 0, resumed at 100
    // on core 0, which A left.
    assert!(kinds.contains(&(1, EventKind::Suspend, 0.0)), "{kinds:?}");
    assert!(kinds.contains(&(1, EventKind::Move, 0.0)), "{kinds:?}");
    assert!(kinds.contains(&(1, EventKind::Resume, 100.0)), "{kinds:?}");
    assert!(kinds.contains(&(1, EventKind::Finish, 110.0)), "{kinds:?}");
}
