//! Schedules that must not change when the engine is made faster: the NASA
//! iPSC/860 log and synthetic traces of 100 to 4,000 nodes, exclusive and
//! shared, each reduced to a digest of every job's start, finish, nodes,
//! cores and shared flag, compared with the digests recorded in
//! `tests/fixtures/schedules.txt` before the engine was indexed (issue 42).
//!
//! A deliberate change of the scheduling rules re-records them:
//! `COSCHED_RECORD_SCHEDULES=1 cargo test --release -p cosched-cluster --test schedules`
//! rewrites the file, and the diff shows which schedules moved.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cosched_cluster::swf::read;
use cosched_cluster::workload::{jobs, Keep, Mapping};
use cosched_cluster::{simulate, synthetic, ClusterJob, Config, Schedule, Scheduler};
use cosched_sched::{policy_from_spec, Policy, ProgramTable};

/// examples/scenarios/few-bad.toml's matrix, copied so that editing the
/// example never moves these schedules.
fn matrix() -> Vec<Vec<f64>> {
    vec![
        vec![1.93, 1.05, 1.027, 1.027, 1.027],
        vec![1.05, 1.54, 1.027, 1.027, 1.027],
        vec![1.019, 1.019, 1.01, 1.01, 1.01],
        vec![1.019, 1.019, 1.01, 1.01, 1.01],
        vec![1.019, 1.019, 1.01, 1.01, 1.01],
    ]
}

fn nasa(compress: f64) -> Vec<ClusterJob> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces/NASA-iPSC-1993-3.1-cln.swf.gz");
    let swf = read(&path).unwrap();
    let (mut js, _) = jobs(&swf, "nasa", Keep::default(), 128, Mapping::Executable, 5, 1).unwrap();
    for j in &mut js {
        j.submit /= compress;
    }
    js
}

/// FNV-1a over every job's start and finish (their bits: identical means
/// identical), nodes, cores and shared flag.
fn digest(s: &Schedule) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for i in 0..s.start.len() {
        eat(s.start[i].to_bits());
        eat(s.finish[i].to_bits());
        eat(s.alloc[i].nodes.len() as u64);
        s.alloc[i].nodes.iter().for_each(|n| eat(n as u64));
        eat(s.alloc[i].cores.len() as u64);
        s.alloc[i].cores.iter().for_each(|&c| eat(c as u64));
        eat(s.shared[i] as u64);
    }
    h
}

struct Case {
    name: String,
    jobs: Vec<ClusterJob>,
    cfg: Config,
    policy: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let easy = |nodes, cores| Config::new(nodes, cores, Scheduler::Easy);
    let (recorded, doubled) = (nasa(1.0), nasa(2.0));
    out.push(Case { name: "nasa 128x1 easy exclusive".into(), jobs: recorded.clone(), cfg: easy(128, 1), policy: None });
    out.push(Case { name: "nasa 128x1 fcfs exclusive".into(), jobs: recorded.clone(), cfg: Config::new(128, 1, Scheduler::Fcfs), policy: None });
    out.push(Case { name: "nasa/2 128x1 easy exclusive".into(), jobs: doubled.clone(), cfg: easy(128, 1), policy: None });
    // Four processors a node, so the one- to three-processor jobs may share.
    for policy in ["conflict-aware:threshold=50", "noplan", "exclusive"] {
        out.push(Case { name: format!("nasa/2 32x4 easy sharing {policy}"), jobs: doubled.clone(), cfg: easy(32, 4), policy: Some(policy) });
    }
    out.push(Case { name: "nasa/2 32x4 easy exclusive".into(), jobs: doubled, cfg: easy(32, 4), policy: None });
    for (nodes, jobs) in [(100, 20_000), (1_000, 20_000), (4_000, 10_000)] {
        let trace = synthetic::trace(nodes, 16, jobs, 5, 0.95, 7);
        let name = |what: &str| format!("synthetic {jobs} jobs {nodes}x16 {what}");
        out.push(Case { name: name("easy exclusive"), jobs: trace.clone(), cfg: easy(nodes, 16), policy: None });
        out.push(Case { name: name("easy sharing conflict-aware:threshold=50"), jobs: trace.clone(), cfg: easy(nodes, 16), policy: Some("conflict-aware:threshold=50") });
        if nodes == 100 {
            out.push(Case { name: name("fcfs exclusive"), jobs: trace.clone(), cfg: Config::new(nodes, 16, Scheduler::Fcfs), policy: None });
            for policy in ["noplan", "best-match:window=0", "no-twins", "exclusive"] {
                out.push(Case { name: name(&format!("easy sharing {policy}")), jobs: trace.clone(), cfg: easy(nodes, 16), policy: Some(policy) });
            }
            let shallow = Config { depth: 5, probe: 2, ..easy(nodes, 16) };
            out.push(Case { name: name("easy depth=5 probe=2 sharing noplan"), jobs: trace.clone(), cfg: shallow, policy: Some("noplan") });
        }
    }
    out
}

fn record_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schedules.txt")
}

fn line(c: &Case) -> String {
    let table = ProgramTable::new(c.jobs.iter().map(|j| j.program).collect(), matrix(), None).unwrap();
    let names: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
    let mut p: Option<Box<dyn Policy>> = c.policy.map(|s| policy_from_spec(s).unwrap());
    let s = simulate(&c.jobs, &names, &c.cfg, &table, &table, p.as_deref_mut().map(|p| p as &mut dyn Policy), &mut |_| {}).unwrap();
    let makespan = s.finish.iter().copied().fold(0.0, f64::max);
    let shared = s.shared.iter().filter(|&&x| x).count();
    format!("{}\t{:016x}\tmakespan {makespan}\tshared {shared}", c.name, digest(&s))
}

#[test]
fn schedules_are_those_recorded_before_the_engine_was_indexed() {
    let mut got = String::new();
    for c in cases() {
        writeln!(got, "{}", line(&c)).unwrap();
    }
    if std::env::var_os("COSCHED_RECORD_SCHEDULES").is_some() {
        std::fs::create_dir_all(record_file().parent().unwrap()).unwrap();
        std::fs::write(record_file(), &got).unwrap();
        eprintln!("recorded {}", record_file().display());
        return;
    }
    let want = std::fs::read_to_string(record_file()).unwrap();
    let (want, got): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    assert_eq!(want.len(), got.len(), "cases recorded vs run");
    let moved: Vec<String> = want.iter().zip(&got).filter(|(w, g)| w != g).map(|(w, g)| format!("recorded {w}\n     now {g}")).collect();
    assert!(moved.is_empty(), "{} schedules moved:\n{}", moved.len(), moved.join("\n"));
}

/// The digest sees a single job moved by one float step, or onto another node.
#[test]
fn the_digest_sees_one_start_or_one_node_moved() {
    let c = &cases()[0];
    let table = ProgramTable::new(c.jobs.iter().map(|j| j.program).collect(), matrix(), None).unwrap();
    let names: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
    let s = simulate(&c.jobs, &names, &c.cfg, &table, &table, None, &mut |_| {}).unwrap();
    let mut later = s.clone();
    later.start[9000] = f64::from_bits(later.start[9000].to_bits() + 1);
    let mut moved = s.clone();
    let mut nodes: Vec<u32> = moved.alloc[9000].nodes.iter().collect();
    nodes[0] ^= 1;
    moved.alloc[9000].nodes = nodes.into_iter().collect();
    assert_ne!(digest(&s), digest(&later));
    assert_ne!(digest(&s), digest(&moved));
}

/// The generator's size mix: shares are checked, and a mix of only small
/// jobs (or only whole-node ones) gives only those.
#[test]
fn the_trace_generator_follows_its_size_mix() {
    use cosched_cluster::synthetic::{trace_of, Mix};
    assert_eq!(Mix::parse("0.6, 0.25, 0.15").unwrap(), Mix::default());
    for bad in ["0.6,0.25", "0.5,0.25,0.15", "a,0.5,0.5", "-0.5,1,0.5", "0.5,0.5,0,0"] {
        assert!(Mix::parse(bad).is_err(), "{bad}");
    }
    let small = trace_of(50, 16, 2_000, 5, 0.9, Mix { small: 1.0, nodes: 0.0, wide: 0.0 }, 3);
    assert!(small.iter().all(|j| (1..=8).contains(&j.procs)));
    let whole = trace_of(50, 16, 2_000, 5, 0.9, Mix { small: 0.0, nodes: 1.0, wide: 0.0 }, 3);
    assert!(whole.iter().all(|j| j.procs % 16 == 0 && (1..=4).contains(&(j.procs / 16))));
    assert!(whole.windows(2).all(|w| w[0].submit <= w[1].submit));
    assert_eq!(trace_of(50, 16, 500, 5, 0.9, Mix::default(), 3), synthetic::trace(50, 16, 500, 5, 0.9, 3));
}
