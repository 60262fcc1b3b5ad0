//! The issue-17 bar: `examples/lua/conflict-aware.lua` gives exactly the
//! Rust `conflict-aware` schedule on 1,000 random orders of the SX-Aurora paper's
//! scenario (and `noplan.lua` the Rust `noplan`'s), event for event.

use std::path::PathBuf;
use std::sync::Arc;

use cosched_engine::policy::Params;
use cosched_lua::{Builder, Log};
use cosched_sched::montecarlo::order;
use cosched_sched::scenario::Scenario;
use cosched_sched::{policy_by_name, simulate_with, SimOptions};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn same_schedules(script: &str, rust: &str, rust_params: &[(&str, &str)], orders: usize) {
    let scenario = Scenario::parse(&std::fs::read_to_string(root().join("examples/scenarios/seed000.toml")).unwrap(), "seed000.toml").unwrap();
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua_params = Params::new();
    lua_params.insert("path".into(), root().join("examples/lua").join(script).display().to_string());
    let mut params = Params::new();
    for (k, v) in rust_params {
        params.insert(k.to_string(), v.to_string());
        lua_params.insert(k.to_string(), v.to_string());
    }
    let opts = SimOptions { nodes: scenario.nodes, window: None };
    let n = scenario.job_program.len();
    for index in 0..orders {
        let ord = order(n, 1, index);
        let jobs = scenario.jobs_in(&ord);
        let table = scenario.source_in(&ord);
        let mut r = policy_by_name(rust, &params).unwrap();
        let mut l = b.build(&lua_params).unwrap();
        let want = simulate_with(&scenario.platform, &jobs, &table, &table, r.as_mut(), &opts).unwrap();
        let got = simulate_with(&scenario.platform, &jobs, &table, &table, &mut l, &opts).unwrap();
        assert_eq!(got, want, "{script} {rust_params:?}, order {index}: {ord:?}");
    }
    assert!(b.log().notes().is_empty(), "{:?}", b.log().summary());
}

#[test]
fn conflict_aware_lua_gives_the_rust_schedule_on_1000_orders_of_seed_000() {
    same_schedules("conflict-aware.lua", "conflict-aware", &[("threshold", "100")], 1000);
}

#[test]
fn conflict_aware_lua_gives_the_rust_schedule_at_seed_000s_other_thresholds() {
    for t in ["0", "50", "150", "inf"] {
        same_schedules("conflict-aware.lua", "conflict-aware", &[("threshold", t)], 200);
    }
}

#[test]
fn noplan_lua_gives_the_rust_schedule_on_1000_orders_of_seed_000() {
    same_schedules("noplan.lua", "noplan", &[], 1000);
}
