//! `cosched simulate`: the SX-Aurora paper's Monte-Carlo evaluation from the command line.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn cosched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios/seed000.toml")
        .display()
        .to_string()
}

fn write(dir: &Path, text: &str) -> String {
    let p = dir.join("s.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// One VH job (host load 0.9) and one VE job (0.3) of 100 s; beside each
/// other the VH job takes 1.4 x and the VE job 1.2 x (the SX-Aurora paper's example).
const PAIR: &str = r#"
[[pools]]
name = "vh"
cores = 1
kind = "cpu"
[[pools]]
name = "ve"
cores = 1
kind = "accelerator"
[[programs]]
name = "a"
pool = "vh"
solo = 100.0
count = 1
host_load = 0.9
[[programs]]
name = "b"
pool = "ve"
solo = 100.0
count = 1
host_load = 0.3
[slowdown]
matrix = [[1.0, 1.4], [1.2, 1.0]]
"#;

#[test]
fn two_jobs_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), PAIR);
    let v = json(&cosched(&[
        "simulate", "--scenario", &s, "--orders", "4", "--seed", "3", "--json",
        "--policy", "noplan", "--policy", "conflict-aware:threshold=100", "--policy", "exclusive",
    ]));
    let sum = &v["summaries"];
    // noplan: both start at 0; b ends at 120, then a runs alone: 20 s of its
    // work left at 1/1.4 took 120 s, so 100 - 120/1.4 s remain.
    let a_end = 120.0 + (100.0 - 120.0 / 1.4);
    let makespan_rate = (a_end - 200.0) / 200.0;
    assert!((sum[0]["makespan"]["median"].as_f64().unwrap() - makespan_rate).abs() < 1e-9);
    assert_eq!(sum[0]["makespan"]["min"], sum[0]["makespan"]["max"]);
    // Run times a_end and 120 against 100 and 100.
    let run_rate = (a_end + 120.0) / 200.0 - 1.0;
    assert!((sum[0]["avg_slowdown"]["median"].as_f64().unwrap() - run_rate).abs() < 1e-9);
    // C_all = 120 % > 100 %: the pair never co-runs, which is sequential.
    assert_eq!(sum[1]["policy"], "conflict-aware:threshold=100");
    assert_eq!(sum[1]["makespan"]["max"], 0.0);
    assert_eq!(sum[1]["avg_turnaround"]["min"], 0.0);
    assert_eq!(sum[2]["makespan"]["max"], 0.0);
}

#[test]
fn exclusive_is_its_own_baseline_on_every_order() {
    let v = json(&cosched(&[
        "simulate", "--scenario", &example(), "--orders", "50", "--seed", "9", "--json",
        "--policy", "exclusive",
    ]));
    let s = &v["summaries"][0];
    for metric in ["makespan", "avg_turnaround", "worst_turnaround", "avg_slowdown", "worst_slowdown"] {
        for stat in ["min", "max"] {
            assert_eq!(s[metric][stat], 0.0, "{metric} {stat}");
        }
    }
    assert_eq!(v["jobs"], 38);
}

#[test]
fn same_seed_same_results_other_seed_other_orders() {
    let run = |seed: &str| {
        let mut v = json(&cosched(&[
            "simulate", "--scenario", &example(), "--orders", "200", "--seed", seed, "--json",
        ]));
        v.as_object_mut().unwrap().remove("elapsed_seconds");
        v
    };
    let a = run("1");
    assert_eq!(a, run("1"));
    assert_eq!(a["summaries"].as_array().unwrap().len(), 5);
    let b = run("2");
    assert_ne!(a["summaries"], b["summaries"]);
}

#[test]
fn the_example_shows_seed_000s_trade_off() {
    let v = json(&cosched(&[
        "simulate", "--scenario", &example(), "--orders", "300", "--seed", "1", "--json",
    ]));
    let s = v["summaries"].as_array().unwrap();
    let get = |i: usize, m: &str| s[i][m]["median"].as_f64().unwrap();
    assert_eq!(s[2]["policy"], "conflict-aware:threshold=100");
    // T = 100 shortens the makespan and keeps the worst run time below noplan's.
    assert!(get(2, "makespan") < 0.0);
    assert!(get(2, "worst_slowdown") < get(0, "worst_slowdown"));
    // T = inf is noplan exactly.
    assert_eq!(s[4]["makespan"], s[0]["makespan"]);
}

#[test]
fn tables_and_policy_list() {
    let out = cosched(&["simulate", "--scenario", &example(), "--orders", "20", "--seed", "5"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Increase rate of makespan"));
    assert!(text.contains("| conflict-aware:threshold=150 |"));
    assert!(text.contains("38 jobs, 20 orders, seed 5, "));
    let out = cosched(&["simulate", "--list-policies"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for p in ["exclusive", "noplan", "conflict-aware", "no-twins"] {
        assert!(text.contains(p), "{p}");
    }
    // Each parameter with its kind, range and default, from the registry.
    assert!(text.contains("    threshold: number >= 0 or inf; default 100; "), "{text}");
    assert!(text.contains("    bound: number >= 1; default 1.5; "), "{text}");
}

#[test]
fn bad_input_exits_2_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), &PAIR.replace("pool = \"ve\"\nsolo", "pool = \"gpu\"\nsolo"));
    let out = cosched(&["simulate", "--scenario", &s, "--orders", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s.toml: programs[1].pool: unknown pool `gpu`"), "{err}");

    let s = write(dir.path(), &PAIR.replace("count = 1\nhost_load = 0.3", "count = \"one\"\nhost_load = 0.3"));
    let out = cosched(&["simulate", "--scenario", &s]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("s.toml:20:9: "));

    let s = write(dir.path(), PAIR);
    for p in ["fifo", "conflict-aware:threshold=lots", "conflict-aware:threshold=-5", "noplan:x=1"] {
        let out = cosched(&["simulate", "--scenario", &s, "--policy", p]);
        assert_eq!(out.status.code(), Some(2), "{p}");
    }
    let out = cosched(&["simulate", "--scenario", "/nonexistent/s.toml"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_and_trace_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), PAIR);
    let rep = dir.path().join("rep");
    let trace = dir.path().join("t.csv");
    let out = cosched(&[
        "simulate", "--scenario", &s, "--orders", "3", "--seed", "1", "--policy", "noplan",
        "--policy", "best-match:aging=2", "--policy", "auto-threshold:bound=1.3,step=5",
        "--report", rep.to_str().unwrap(), "--trace", trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Performance score"), "{text}");
    for f in ["index.html", "fig11-avg-run-time.svg", "fig12-makespan.svg", "fig13-worst-run-time.svg", "score.svg", "summary.csv", "summary.json", "orders.csv"] {
        assert!(rep.join(f).is_file(), "{f}");
    }
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 6);
    assert!(html.contains("best-match:aging=2"));
    // Three orders, four strategies each (exclusive and three policies).
    let orders = std::fs::read_to_string(rep.join("orders.csv")).unwrap();
    assert_eq!(orders.lines().count(), 1 + 3 * 4);
    assert!(orders.contains(",\"auto-threshold:bound=1.3,step=5\","), "{orders}");
    // The noplan trace of order 0: the pair's schedule worked out above.
    let t = std::fs::read_to_string(&trace).unwrap();
    let first = cosched_model::trace::Trace::from_csv(&t).unwrap();
    let m = cosched_model::metrics::compute(&first.events, &[100.0, 100.0]).unwrap();
    assert!((m.makespan - (120.0 + (100.0 - 120.0 / 1.4))).abs() < 1e-9);
    assert_eq!(first.events[0].kind, cosched_model::metrics::EventKind::Arrive, "{t}");
    let j = first.job(first.events[0].job).unwrap();
    assert!((j.pool == "vh" || j.pool == "ve") && j.node == 0 && j.status == Some(cosched_model::run::JobStatus::Ok), "{t}");
    assert_eq!(first.metrics().unwrap(), m, "the file carries the solo times it is scored against");
    // JSON by extension, another policy by name.
    let tj = dir.path().join("t.json");
    let out = cosched(&["simulate", "--scenario", &s, "--orders", "1", "--trace", tj.to_str().unwrap(), "--trace-policy", "exclusive", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tj).unwrap()).unwrap();
    assert_eq!(v["events"].as_array().unwrap().len(), 6);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(v["events"][0]["kind"], "arrive");
    let out = cosched(&["simulate", "--scenario", &s, "--orders", "1", "--trace", tj.to_str().unwrap(), "--trace-policy", "fifo"]);
    assert_eq!(out.status.code(), Some(2));
}

fn measured_example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios/seed000-measured.toml")
        .display()
        .to_string()
}

/// A store holding a pairs campaign of `characterize` (every pair of its six
/// jobs, given slowdowns, three repeats) and a profile campaign.
fn characterize_store(dir: &Path) -> std::path::PathBuf {
    use cosched_store::{CampaignKind, CampaignStatus, PairRunRecord, ProfileRecord, Store};
    let path = dir.join("m.db");
    let mut s = Store::open(&path).unwrap();
    let prov = cosched_model::provenance::Provenance {
        hostname: "n".into(),
        cpu_model: "c".into(),
        cores: 2,
        kernel_version: "k".into(),
        cosched_version: "0".into(),
        git_commit: "g".into(),
        started_unix: 1,
        command: "cosched pairs".into(),
        seed: None,
    };
    let jobs = ["stream", "compute", "syscall", "ng-stream", "ng-cpu", "ng-cache"];
    let params = serde_json::json!({"jobs": jobs.iter().map(|j| serde_json::json!({"name": j})).collect::<Vec<_>>()});
    let id = s.begin_campaign(CampaignKind::Pairs, "characterize", &params.to_string(), &prov).unwrap();
    // Memory-heavy pairs (stream-like jobs together) slow down x1.6/x1.8; the
    // syscall job beside the cache thrasher x2.2; everything else x1.05.
    let heavy = |a: &str, b: &str| -> (f64, f64) {
        let mem = |j: &str| j.contains("stream") || j == "ng-cache";
        if (a == "syscall" && b == "ng-cache") || (b == "syscall" && a == "ng-cache") {
            (2.2, 2.2)
        } else if mem(a) && mem(b) {
            (1.6, 1.8)
        } else {
            (1.05, 1.05)
        }
    };
    for (i, a) in jobs.iter().enumerate() {
        for b in &jobs[i..] {
            let (sa, sb) = heavy(a, b);
            for repeat in 0..3u32 {
                let jitter = [0.98, 1.0, 1.03][repeat as usize];
                s.add_pair_run(id, &PairRunRecord {
                    fg_job: a.to_string(),
                    bg_job: b.to_string(),
                    repeat,
                    fg_cpus: vec![0],
                    bg_cpus: vec![1],
                    shared_cpus: false,
                    fg_solo_s: 1.0,
                    fg_corun_s: sa * jitter,
                    bg_solo_s: 2.0,
                    bg_corun_s: 2.0 * sb,
                    fg_relaunches: 0,
                    bg_relaunches: 0,
                    fg_timing: "work-phase".into(),
                    bg_timing: "work-phase".into(),
                    regime: Default::default(),
                    level: None,
                }).unwrap();
            }
        }
    }
    s.finish_campaign(id, CampaignStatus::Done).unwrap();
    let id = s.begin_campaign(CampaignKind::Profile, "characterize", "{}", &prov).unwrap();
    for (j, u) in jobs.iter().zip([0.5, 0.5, 0.45, 0.5, 0.5, 0.5]) {
        let summary = common::job_profile(1.0, u);
        s.put_profile(id, &ProfileRecord { job: j.to_string(), program: j.to_string(), summary }).unwrap();
    }
    s.finish_campaign(id, CampaignStatus::Done).unwrap();
    path
}

#[test]
fn the_measured_example_reads_its_matrix_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = characterize_store(dir.path());
    let v = json(&cosched(&[
        "simulate", "--scenario", &measured_example(), "--db", db.to_str().unwrap(), "--orders", "200", "--seed", "1", "--json",
    ]));
    assert_eq!(v["jobs"], 38);
    assert!(v["slowdowns"].as_str().unwrap().starts_with("pairs campaign 1 of `characterize` (63 repeats, done)"), "{}", v["slowdowns"]);
    let s = v["summaries"].as_array().unwrap();
    let get = |i: usize, m: &str| s[i][m]["median"].as_f64().unwrap();
    assert_eq!(s[2]["policy"], "conflict-aware:threshold=100");
    // T = 100 keeps the x2.2 pair (score 120) apart, and so its worst run time
    // below noplan's, while co-running the rest shortens the makespan.
    assert!(get(2, "makespan") < -0.2, "{}", get(2, "makespan"));
    assert!(get(2, "worst_slowdown") < get(0, "worst_slowdown"));
    assert!((get(2, "worst_slowdown") - 0.8).abs() < 1e-9, "stream pairs at x1.8 are within T = 100");

    // The same cells from a `cosched pairs --json` matrix file.
    let m = serde_json::json!({
        "jobs": ["stream", "compute", "syscall", "ng-stream", "ng-cpu", "ng-cache"],
        "cells": (0..6).map(|i| (0..6).map(|j| if (i == 2 && j == 5) || (i == 5 && j == 2) {
            serde_json::json!({"n": 3, "median": 2.2, "min": 2.1, "max": 2.3, "ci_lo": 2.1, "ci_hi": 2.3})
        } else {
            serde_json::json!({"n": 3, "median": 1.05, "min": 1.0, "max": 1.1, "ci_lo": 1.0, "ci_hi": 1.1})
        }).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    std::fs::write(dir.path().join("m.json"), m.to_string()).unwrap();
    let text = std::fs::read_to_string(measured_example()).unwrap().replace("store = \"characterize\"", "file = \"m.json\"");
    let s = write(dir.path(), &text);
    let v = json(&cosched(&["simulate", "--scenario", &s, "--orders", "20", "--json", "--policy", "conflict-aware:threshold=100"]));
    assert!(v["slowdowns"].as_str().unwrap().ends_with("m.json"));
    assert!((v["summaries"][0]["worst_slowdown"]["max"].as_f64().unwrap() - 0.05).abs() < 1e-9);

    // Host loads from the stored profiles make the score C_all: at T = 99 only
    // pairs with the syscall job (U 0.45 + 0.5) co-run, and its worst is x2.2.
    let text = std::fs::read_to_string(measured_example()).unwrap() + "profiles = \"characterize\"\n";
    let s = write(dir.path(), &text);
    let v = json(&cosched(&[
        "simulate", "--scenario", &s, "--db", db.to_str().unwrap(), "--orders", "20", "--json", "--policy", "conflict-aware:threshold=99",
    ]));
    let w = &v["summaries"][0]["worst_slowdown"];
    assert!((w["max"].as_f64().unwrap() - 1.2).abs() < 1e-9, "{w}");

    // No such campaign, or no store: exit 2 naming the field.
    let empty = dir.path().join("none.db");
    let out = cosched(&["simulate", "--scenario", &measured_example(), "--db", empty.to_str().unwrap(), "--orders", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("slowdown.store: "), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn bench_simulate_runs_its_three_cases() {
    let out = cosched(&["bench", "simulate", "--repeats", "1", "--orders", "20", "--jobs", "2000", "--nodes", "20", "--json"]);
    let v = json(&out);
    assert_eq!(v["montecarlo"]["simulations"], 100);
    assert_eq!(v["enumeration"]["placements"], 1_436_714);
    let c = v["cluster"].as_array().unwrap();
    assert_eq!(c.len(), 2);
    for case in c {
        assert_eq!(case["events"], 6000);
        assert_eq!(case["seconds"]["n"], 1);
        assert!(case["cpu_seconds"]["median"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(cosched(&["bench", "simulate", "--repeats", "0"]).status.code(), Some(2));
}

#[test]
fn simulate_names_the_campaigns_of_its_measured_cells_with_the_node_at_their_start() {
    use cosched_store::{CampaignId, NodeConditions, Store};
    let dir = tempfile::tempdir().unwrap();
    let db = characterize_store(dir.path());
    let node = NodeConditions { taken_unix: 5, load: [0.5, 0.25, 0.125], c2c: Some((vec![0, 1], 452.0)), huge_pages: None };
    Store::open(&db).unwrap().add_conditions(CampaignId(1), &node).unwrap();
    let text = std::fs::read_to_string(measured_example()).unwrap() + "profiles = \"characterize\"\n";
    let s = write(dir.path(), &text);
    let out = cosched(&["simulate", "--scenario", &s, "--db", db.to_str().unwrap(), "--orders", "2", "--policy", "noplan"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains(
            "from pairs campaign 1 of `characterize` (done, started 1970-01-01 00:00:01 UTC; node at start: load 0.50 0.25 0.12, CPU 0-1 round trip 452 ns)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("from profile campaign 2 of `characterize` (done,"), "{stdout}");
    let v = json(&cosched(&["simulate", "--scenario", &s, "--db", db.to_str().unwrap(), "--orders", "2", "--json"]));
    let mut ids: Vec<i64> = v["campaigns"].as_array().unwrap().iter().map(|c| c["id"].as_i64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [1, 2]);
}

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios").join(name).display().to_string()
}

#[test]
fn placements_are_listed_and_named_in_help() {
    let out = cosched(&["simulate", "--list-placements"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let help = String::from_utf8(cosched(&["simulate", "--help"]).stdout).unwrap();
    for p in ["compact", "scatter", "range", "numa-first", "interference-aware"] {
        assert!(text.contains(p), "--list-placements lacks {p}:\n{text}");
        assert!(help.contains(p), "--help lacks {p}");
    }
    let out = cosched(&["simulate", "--list-placements", "--json"]);
    assert_eq!(json(&out).as_array().unwrap().len(), 5);
}

#[test]
fn placements_side_by_side_on_a_topology_scenario() {
    let s = scenario("epyc-8ccx-nps4.toml");
    let args = ["simulate", "--scenario", &s, "--orders", "3", "--policy", "noplan", "--placement", "compact,scatter", "--placement", "interference-aware"];
    let out = cosched(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Placement on ../../crates/model/tests/fixtures/topology/epyc-64c-8ccx-nps4-smt2.hwloc2.xml (128 PUs)"), "{text}");
    assert!(text.contains("| noplan @ interference-aware |"), "{text}");
    assert!(text.contains("oracle: none (its slowdowns depend on where jobs are placed"), "{text}");
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let doc = json(&cosched(&with_json));
    assert_eq!(doc["placements"], serde_json::json!(["compact", "scatter", "interference-aware"]));
    let rows = doc["placement_table"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2]["placement"], "interference-aware");
    assert_eq!(doc["summaries"].as_array().unwrap().len(), 3);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r");
    let mut with_report = args.to_vec();
    with_report.extend(["--report", report.to_str().unwrap()]);
    assert!(cosched(&with_report).status.success());
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(html.contains(">Placement</h2>") && html.contains("interference-aware"), "the report has the placement table");
}

/// `placement=NAME` in a spec is the same key a `--placement` sweep sets:
/// the policy under that strategy gives the sweep's figures on the same
/// orders, labelled alike; a spec naming its own placement beside a sweep
/// is refused.
#[test]
fn a_placement_in_the_spec_runs_as_the_sweep_runs_it() {
    let s = scenario("xeon-2s-smt.toml");
    let base = ["simulate", "--scenario", &s, "--orders", "4", "--seed", "5", "--json"];
    let swept = json(&cosched(&[&base[..], &["--policy", "noplan", "--placement", "compact,scatter"]].concat()));
    let keyed = json(&cosched(&[&base[..], &["--policy", "noplan:placement=compact", "--policy", "noplan:placement=scatter"]].concat()));
    assert_eq!(keyed["summaries"], swept["summaries"]);
    assert_eq!(keyed["placement_table"], swept["placement_table"]);
    assert_eq!(keyed["placements"], serde_json::json!(["compact", "scatter"]));
    assert_eq!(keyed["summaries"][1]["policy"], "noplan @ scatter");
    assert_eq!(keyed["policies"], serde_json::json!(["noplan:placement=compact", "noplan:placement=scatter"]));
    let out = cosched(&[&base[..], &["--policy", "noplan:placement=scatter", "--placement", "compact,scatter"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--policy noplan:placement=scatter names its placement"));
}

#[test]
fn a_placement_needs_a_topology_and_a_registered_name() {
    let out = cosched(&["simulate", "--scenario", &example(), "--orders", "2", "--placement", "scatter"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("seed000.toml: the scenario has no [topology]"), "{err}");
    let out = cosched(&["simulate", "--scenario", &scenario("arm-2s.toml"), "--placement", "round-robin"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("round-robin"));
}

#[test]
fn told_blind_compares_react_with_its_inner_policy_order_by_order() {
    let scenario = scenario("io-half-long.toml");
    let out = cosched(&[
        "simulate", "--scenario", &scenario, "--orders", "20", "--seed", "7", "--told", "blind", "--json",
        "--policy", "best-match", "--policy", "react:inner=best-match,threshold=1.3,action=suspend",
    ]);
    let v = json(&out);
    assert!(v["told"].as_str().unwrap().starts_with("blind"), "{v}");
    let row = &v["paired"][0];
    assert_eq!(row["against"], "best-match");
    // Told blind, best-match pairs two I/O jobs in every order (1.617); react
    // suspends one of them once its estimate settles.
    assert!(row["worst_slowdown"]["median_rel_diff"].as_f64().unwrap() < 0.0, "{row}");
    assert_eq!(row["worst_slowdown"]["n"], 20);
    // A file without the scenario's programs, or several nodes: exit 2.
    let out = cosched(&["simulate", "--scenario", &scenario, "--orders", "2", "--told", &example()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no program `io`"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_told_sweep_runs_each_scale_on_the_same_orders_and_scale_zero_is_blind() {
    let scenario = scenario("io-half-long.toml");
    let base = ["simulate", "--scenario", &scenario, "--orders", "8", "--seed", "7", "--json",
        "--policy", "best-match", "--policy", "react:inner=best-match,threshold=1.3,action=suspend"];
    let sweep = json(&cosched(&[&base[..], &["--told", "scaled:0,1"]].concat()));
    let blind = json(&cosched(&[&base[..], &["--told", "blind"]].concat()));
    let rows = sweep["told_sweep"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{sweep}");
    assert_eq!((rows[0]["scale"].as_f64(), rows[1]["scale"].as_f64()), (Some(0.0), Some(1.0)));
    // Every cell told 1 is the blind predictor exactly: same orders, same figures.
    assert_eq!(rows[0]["paired"], blind["paired"]);
    // The first scale is also the report's own tables.
    assert_eq!(rows[0]["paired"], sweep["paired"]);
    // Told the truth, best-match never pairs two I/O jobs while a loop
    // waits, so react has nothing worse to undo than blind best-match had.
    let worst = |r: &serde_json::Value| r["paired"][0]["worst_slowdown"]["median_rel_diff"].as_f64().unwrap();
    assert!(worst(&rows[1]) >= worst(&rows[0]), "{sweep}");
    // One scale is no sweep; a bad scale, or one that makes a cell no
    // slowdown, is the user's input.
    let one = json(&cosched(&[&base[..], &["--told", "scaled:0.5"]].concat()));
    assert!(one["told_sweep"].as_array().unwrap().is_empty());
    assert!(one["told"].as_str().unwrap().contains("scaled by 0.5"), "{one}");
    for (told, says) in [("scaled:x", "`x` is not a scale"), ("scaled:-1", "`-1` is not a scale")] {
        let out = cosched(&[&base[..], &["--told", told]].concat());
        assert_eq!(out.status.code(), Some(2), "{told}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
