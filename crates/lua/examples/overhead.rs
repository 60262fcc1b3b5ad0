//! The Lua overhead case of `cosched bench simulate` alone, for profiling
//! (`perf record target/release/examples/overhead 2000`): seed 000's
//! Monte-Carlo under `examples/lua/conflict-aware.lua` and under the Rust
//! `conflict-aware`, one after the other, each with the exclusive baseline,
//! on one thread. Prints seconds of each and their ratio.
//!
//!   overhead ORDERS [both|lua|rust]   the Monte-Carlo under each
//!   overhead ORDERS build             only building the Lua policy
//!   overhead ORDERS count             decide calls per order (Rust policy)

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cosched_engine::policy::{Params, Policy};
use cosched_lua::{Builder, Log};
use cosched_sched::montecarlo::order;
use cosched_sched::scenario::Scenario;
use cosched_sched::{policy_by_name, simulate_with, SimOptions};

fn main() {
    let orders: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let which = std::env::args().nth(2).unwrap_or_else(|| "both".into());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = Scenario::load(&root.join("examples/scenarios/seed000.toml")).expect("seed 000's scenario");
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut rust = Params::new();
    rust.insert("threshold".into(), "100".into());
    let mut lua = rust.clone();
    lua.insert("path".into(), root.join("examples/lua/conflict-aware.lua").display().to_string());
    let opts = SimOptions { nodes: 1, window: None };
    if which == "count" {
        struct C(Box<dyn Policy>, usize, usize);
        impl Policy for C {
            fn decide(&mut self, v: &cosched_engine::policy::View) -> Vec<cosched_engine::policy::Decision> {
                self.1 += 1;
                let d = self.0.decide(v);
                if d.is_empty() { self.2 += 1; }
                d
            }
        }
        let n = scenario.job_program.len();
        let mut c = C(policy_by_name("conflict-aware", &rust).unwrap(), 0, 0);
        for k in 0..orders {
            let ord = order(n, 1, k);
            let (jobs, table) = (scenario.jobs_in(&ord), scenario.source_in(&ord));
            c.0 = policy_by_name("conflict-aware", &rust).unwrap();
            simulate_with(&scenario.platform, &jobs, &table, &table, &mut c, &opts).unwrap();
        }
        println!("{:.1} decide calls per order, {:.1} of them empty", c.1 as f64 / orders as f64, c.2 as f64 / orders as f64);
        return;
    }
    if which == "build" {
        let t = Instant::now();
        for _ in 0..orders {
            drop(b.build(&lua).unwrap());
        }
        println!("{orders} builds of the Lua policy: {:.1} us each", t.elapsed().as_secs_f64() * 1e6 / orders as f64);
        return;
    }
    let n = scenario.job_program.len();
    let run = |make: &mut dyn FnMut() -> Box<dyn Policy>| {
        let t = Instant::now();
        let mut makespan = 0.0;
        for k in 0..orders {
            let ord = order(n, 1, k);
            let (jobs, table) = (scenario.jobs_in(&ord), scenario.source_in(&ord));
            for mut p in [make(), policy_by_name("exclusive", &Params::new()).unwrap()] {
                let tr = simulate_with(&scenario.platform, &jobs, &table, &table, p.as_mut(), &opts).unwrap();
                makespan += tr.events.last().map_or(0.0, |e| e.time);
            }
        }
        (t.elapsed().as_secs_f64(), makespan)
    };
    let r = if which != "lua" { Some(run(&mut || policy_by_name("conflict-aware", &rust).unwrap())) } else { None };
    let l = if which != "rust" { Some(run(&mut || Box::new(b.build(&lua).unwrap()))) } else { None };
    if let (Some(r), Some(l)) = (r, l) {
        assert_eq!(r.1, l.1, "the two schedules differ");
        println!("{orders} orders: rust {:.3} s, lua {:.3} s, ratio {:.2}", r.0, l.0, l.0 / r.0);
    } else {
        println!("{orders} orders: {:?}", r.or(l));
    }
}
