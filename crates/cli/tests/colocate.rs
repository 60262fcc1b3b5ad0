//! `colocate:rebalance=on` with real processes: two 2-thread jobs split
//! the pool's two cores, one each; when the short one ends the node runner
//! re-pins the long one (cpuset, else thread affinity) onto both, and the
//! run's journal says so. Static `colocate` never moves it.

mod common;
use std::path::Path;
use std::process::Command;

/// The journal of one run of `policy` over a short and a long compute job,
/// as (event, job, detail) lines of the two jobs.
fn journal(dir: &Path, policy: &str) -> Vec<(String, String, String)> {
    let wl = dir.join("w.toml");
    let job = |n: &str, work: u32| format!("[[jobs]]\nname = \"{n}\"\nkernel = \"compute\"\nwork = {work}\nthreads = 2\ncores = 2\n");
    std::fs::write(&wl, format!("name = \"pair\"\n[[pools]]\nname = \"host\"\ncores = 2\n{}{}", job("short", 20000), job("long", 80000))).unwrap();
    let db = dir.join(format!("{}.db", policy.replace([':', '='], "-")));
    let kernel = Path::new(env!("CARGO_BIN_EXE_cosched")).with_file_name("cosched-kernel");
    let out = Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(["run", "--policy", policy, "--solo", "stored", "--json", "--workload"])
        .arg(&wl)
        .arg("--db")
        .arg(&db)
        .arg("--lock")
        .arg(common::private_lock())
        .env("COSCHED_DATA_DIR", dir)
        .env("COSCHED_KERNEL", kernel)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for j in v["runs"][0]["jobs"].as_array().unwrap() {
        assert_eq!(j["end"]["status"], "ok", "{v}");
    }
    let store = cosched_store::Store::open_existing(&db).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    store
        .run_journal(runs[0].id)
        .unwrap()
        .into_iter()
        .filter_map(|e| Some((e.event, e.job?, e.detail)))
        .collect()
}

fn cpus(detail: &str) -> &str {
    detail.strip_prefix("cpus ").and_then(|d| d.split(' ').next()).unwrap_or_else(|| panic!("no cpus in `{detail}`"))
}

#[test]
fn the_survivor_is_moved_onto_the_finished_jobs_core_and_static_colocation_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path(), "colocate:rebalance=on");
    let start = |n: &str| j.iter().find(|(e, job, _)| e == "start" && job == n).map(|x| cpus(&x.2).to_string()).unwrap_or_else(|| panic!("{j:?}"));
    let (short, long) = (start("short"), start("long"));
    assert!(!short.contains([',', '-']) && !long.contains([',', '-']) && short != long, "one core each: {j:?}");
    let pos = |e: &str, n: &str| j.iter().position(|(ev, job, _)| ev == e && job == n);
    let moves: Vec<&(String, String, String)> = j.iter().filter(|(e, _, _)| e == "move").collect();
    assert_eq!(moves.len(), 1, "one move, of the survivor: {j:?}");
    assert_eq!(moves[0].1, "long", "{j:?}");
    let mut both = [short.clone(), long.clone()];
    both.sort();
    let want = if both[1].parse::<u32>().unwrap() == both[0].parse::<u32>().unwrap() + 1 { format!("{}-{}", both[0], both[1]) } else { both.join(",") };
    assert_eq!(cpus(&moves[0].2), want, "onto both cores: {j:?}");
    assert!(pos("end", "short").unwrap() < pos("move", "long").unwrap() && pos("move", "long").unwrap() < pos("end", "long").unwrap(), "{j:?}");
    let j = journal(dir.path(), "colocate");
    assert!(j.iter().all(|(e, _, _)| e != "move"), "static co-location never moves a job: {j:?}");
}
