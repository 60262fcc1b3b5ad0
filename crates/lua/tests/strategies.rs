//! The VarySched paper's four strategies as the scripts of `examples/lua/`, in the
//! simulator under both governor levels: each keeps its budget, on jobs of
//! one way each and on jobs with variants (kernel collections), whose
//! variant each strategy chooses.

use std::path::PathBuf;
use std::sync::Arc;

use cosched_engine::policy::{Params, PoolInfo};
use cosched_engine::{Event, EventKind};
use cosched_lua::{Builder, Log};
use cosched_model::workload::PoolKind;
use cosched_sched::scenario::Scenario;
use cosched_sched::{simulate, simulate_with, PairTable, Platform, SimJob, SimOptions, Trace};

/// A CPU pool of 4 cores and an accelerator pool of `gpus`; `gpu` jobs on
/// the accelerator, `all` jobs on all 4 cores, `one` jobs on one core; all
/// of `solo` seconds, none slowing another.
fn node(gpus: u32, gpu: usize, all: usize, one: usize, solo: f64) -> (Platform, Vec<SimJob>, PairTable) {
    let platform = Platform {
        pools: vec![
            PoolInfo { name: "cpu".into(), cores: 4, kind: PoolKind::Cpu },
            PoolInfo { name: "gpu".into(), cores: gpus, kind: PoolKind::Accelerator { host_load: 0.0 } },
        ],
    };
    let job = |name: String, pool, cores| SimJob { name: name.clone(), arrival: 0.0, solo, pool, cores, program: name, variants: vec![] };
    let mut jobs = Vec::new();
    // Interleaved, so no kind has the queue to itself.
    for k in 0..gpu.max(all).max(one) {
        if k < gpu {
            jobs.push(job(format!("gpu{k}"), 1, 1));
        }
        if k < all {
            jobs.push(job(format!("all{k}"), 0, 4));
        }
        if k < one {
            jobs.push(job(format!("one{k}"), 0, 1));
        }
    }
    let n = jobs.len();
    (platform, jobs, PairTable::new(vec![vec![1.0; n]; n]).unwrap())
}

fn run(script: &str, governor: &str, node: &(Platform, Vec<SimJob>, PairTable)) -> Vec<Event> {
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut p = Params::new();
    p.insert("path".into(), PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua").join(script).display().to_string());
    p.insert("governor".into(), governor.into());
    let mut policy = b.build(&p).unwrap();
    let events = simulate(&node.0, &node.1, &node.2, &mut policy).unwrap();
    assert!(b.log().notes().is_empty(), "{script}: {:?}", b.log().summary());
    events
}

/// Each instant's running jobs (after the instant's finishes and starts).
fn running_sets(events: &[Event]) -> Vec<(f64, Vec<usize>)> {
    let mut times: Vec<f64> = events.iter().map(|e| e.time).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    times
        .into_iter()
        .map(|t| {
            let started = |j: usize| events.iter().any(|e| e.job == j && e.kind == EventKind::Start && e.time <= t);
            let finished = |j: usize| events.iter().any(|e| e.job == j && e.kind == EventKind::Finish && e.time <= t);
            let mut on: Vec<usize> = events.iter().map(|e| e.job).filter(|&j| started(j) && !finished(j)).collect();
            on.sort();
            on.dedup();
            (t, on)
        })
        .collect()
}

fn makespan(events: &[Event]) -> f64 {
    events.iter().map(|e| e.time).fold(0.0, f64::max)
}

fn kind(job: &SimJob) -> &'static str {
    match (job.pool, job.cores) {
        (1, _) => "accelerator",
        (_, 4) => "all",
        _ => "one",
    }
}

#[test]
fn constraint_keeps_the_running_credits_within_18_high_and_9_low() {
    let n = node(2, 6, 4, 10, 10.0);
    let cost = |j: &SimJob| match kind(j) {
        "accelerator" => 9,
        "all" => 6,
        _ => 3,
    };
    let mut spans = Vec::new();
    for (level, limit) in [("high", 18), ("low", 9)] {
        let ev = run("constraint.lua", level, &n);
        let mut peak = 0;
        for (t, on) in running_sets(&ev) {
            let used: u32 = on.iter().map(|&j| cost(&n.1[j])).sum();
            assert!(used <= limit, "{level} at t={t}: {used} credits > {limit}: {on:?}");
            peak = peak.max(used);
        }
        assert_eq!(peak, limit, "{level}: the limit is reached");
        spans.push(makespan(&ev));
    }
    assert!(spans[1] > spans[0], "low takes longer: {spans:?}");
}

#[test]
fn banking_spends_at_most_its_100_credits_and_the_refills_and_wakes_for_each_refill() {
    // Twenty accelerator slots: only the bank holds the starts back.
    let n = node(20, 20, 0, 0, 100.0);
    for (level, refill) in [("high", 15), ("low", 10)] {
        let ev = run("banking.lua", level, &n);
        let starts: Vec<f64> = ev.iter().filter(|e| e.kind == EventKind::Start).map(|e| e.time).collect();
        assert_eq!(starts.iter().filter(|&&t| t == 0.0).count(), 10, "{level}: 10 starts of 10 credits");
        for &t in &starts {
            let spent = 10 * starts.iter().filter(|&&u| u <= t).count() as i64;
            let income = 100 + refill * (t / 5.0).floor() as i64;
            assert!(spent <= income, "{level} at t={t}: spent {spent} > {income}");
        }
        // Woken at the refills, not only when jobs end: the 11th job starts
        // at the first refill that pays for it (5 s high, 5 s low: 15 or 10).
        assert_eq!(starts[10], 5.0, "{level}");
    }
    // Jobs of 5 s: the refills (15 high, 10 low per 5 s) set the pace.
    let n = node(20, 40, 0, 0, 5.0);
    let (high, low) = (makespan(&run("banking.lua", "high", &n)), makespan(&run("banking.lua", "low", &n)));
    assert!(low > high, "low refills slower: high {high}, low {low}");
}

#[test]
fn short_term_ignores_the_governor_and_keeps_every_core_busy() {
    let n = node(1, 4, 3, 8, 10.0);
    let (high, low) = (run("short-term.lua", "high", &n), run("short-term.lua", "low", &n));
    assert_eq!(high, low);
    // At 0 it starts the first gpu job, then one-core jobs into the 4 cores,
    // passing over the all-core job that does not fit.
    let at_zero: Vec<usize> = high.iter().filter(|e| e.kind == EventKind::Start && e.time == 0.0).map(|e| e.job).collect();
    let kinds: Vec<&str> = at_zero.iter().map(|&j| kind(&n.1[j])).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "accelerator").count(), 1);
    let cores: u32 = at_zero.iter().filter(|&&j| n.1[j].pool == 0).map(|&j| n.1[j].cores).sum();
    assert_eq!(cores, 4, "{kinds:?}");
}

#[test]
fn long_term_at_low_uses_the_accelerator_only_while_the_cpus_have_nothing_to_do() {
    let n = node(1, 4, 2, 4, 10.0);
    let high = run("long-term.lua", "high", &n);
    assert!(high.iter().any(|e| e.kind == EventKind::Start && e.time == 0.0 && n.1[e.job].pool == 1), "high uses the accelerator at once");
    let low = run("long-term.lua", "low", &n);
    let cpu_done = low.iter().filter(|e| e.kind == EventKind::Finish && n.1[e.job].pool == 0).map(|e| e.time).fold(0.0, f64::max);
    for e in low.iter().filter(|e| e.kind == EventKind::Start && n.1[e.job].pool == 1) {
        assert!(e.time >= cpu_done, "an accelerator job started at {} before the CPU work ended at {cpu_done}", e.time);
    }
    assert!(makespan(&low) > makespan(&high));
}

/// The VarySched paper's matrix multiplication as examples/scenarios/varysched.toml
/// has it: 100 jobs preferring all 4 cores (1.11 s), then one core
/// (2.74 s), then the accelerator (3.69 s).
fn mm() -> Scenario {
    Scenario::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/varysched.toml")).unwrap()
}

fn run_variants(script: &str, governor: &str, s: &Scenario) -> Trace {
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut p = Params::new();
    p.insert("path".into(), PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua").join(script).display().to_string());
    p.insert("governor".into(), governor.into());
    let mut policy = b.build(&p).unwrap();
    let jobs = s.jobs();
    let table = s.source_in(&(0..jobs.len()).collect::<Vec<_>>());
    let t = simulate_with(&s.platform, &jobs, &table, &table, &mut policy, &SimOptions::default()).unwrap();
    assert!(b.log().notes().is_empty(), "{script}: {:?}", b.log().summary());
    t
}

/// How many jobs ran as each of the three variants.
fn used(t: &Trace) -> [usize; 3] {
    let mut n = [0; 3];
    for &v in &t.variant {
        n[v] += 1;
    }
    n
}

/// Each instant's credits of the running jobs, by the variant each runs.
fn peak_credits(t: &Trace, cost: [u32; 3]) -> u32 {
    running_sets(&t.events).iter().map(|(_, on)| on.iter().map(|&j| cost[t.variant[j]]).sum::<u32>()).max().unwrap_or(0)
}

#[test]
fn constraint_chooses_variants_within_its_limit_and_at_low_runs_one_job_at_a_time() {
    let s = mm();
    // Costs of the variants: all cores 6, one core 3, accelerator 9.
    let cost = [6, 3, 9];
    let high = run_variants("constraint.lua", "high", &s);
    let low = run_variants("constraint.lua", "low", &s);
    assert_eq!(peak_credits(&high, cost), 15, "all cores and the accelerator together");
    assert_eq!(peak_credits(&low, cost), 6);
    // At low the accelerator (9) never joins the all-core job (6), and the
    // all-core way is always free when a job is asked: every job runs it,
    // one after another.
    assert_eq!(used(&low), [100, 0, 0]);
    assert!((makespan(&low.events) - 111.0).abs() < 1e-6, "{}", makespan(&low.events));
    assert!(used(&high)[2] > 0);
    assert!(makespan(&high.events) < makespan(&low.events));
}

#[test]
fn banking_falls_back_to_cheaper_variants_as_its_credits_run_out() {
    let s = mm();
    for level in ["high", "low"] {
        let t = run_variants("banking.lua", level, &s);
        // At 0 the first job takes all cores (5) and the second the
        // accelerator (10); nothing else fits.
        let at_zero: Vec<usize> = t.events.iter().filter(|e| e.kind == EventKind::Start && e.time == 0.0).map(|e| t.variant[e.job]).collect();
        assert_eq!(at_zero, vec![0, 2], "{level}");
        assert_eq!(used(&t).iter().sum::<usize>(), 100);
    }
    let (high, low) = (run_variants("banking.lua", "high", &s), run_variants("banking.lua", "low", &s));
    assert!(makespan(&low.events) >= makespan(&high.events));
}

#[test]
fn short_term_keeps_every_resource_busy_whatever_the_governor() {
    let s = mm();
    let (high, low) = (run_variants("short-term.lua", "high", &s), run_variants("short-term.lua", "low", &s));
    assert_eq!(high.events, low.events);
    assert_eq!(high.variant, low.variant);
    // The accelerator runs a job as soon as it is free: a job preferring it
    // least still takes it when nothing else is.
    assert!(used(&high)[2] > 10, "{:?}", used(&high));
}

#[test]
fn long_term_spreads_jobs_by_the_delta_rule_and_at_low_masks_the_accelerator() {
    let s = mm();
    let high = run_variants("long-term.lua", "high", &s);
    let u = used(&high);
    assert!(u[0] > 0 && u[2] > 0, "the queues spread over the resources: {u:?}");
    let low = run_variants("long-term.lua", "low", &s);
    assert_eq!(used(&low)[2], 0, "no accelerator at low");
}
