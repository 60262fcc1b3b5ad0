//! Issue 36's bounds on a Lua policy: its state's memory, the script files
//! it reads (first or on a swap: regular files of at most 1 MiB, never a
//! FIFO or a device), and how soon it may ask to be woken.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosched_engine::policy::{Params, Policy, PoolInfo};
use cosched_engine::{Decision, QueuedJob, View};
use cosched_lua::{Builder, Governor, Level, Log, NoteKind};
use cosched_model::workload::PoolKind;
use cosched_sched::{policy_by_name, simulate, PairTable, Platform, SimJob};

fn platform(cores: u32) -> Platform {
    Platform { pools: vec![PoolInfo { name: "host".into(), cores, kind: PoolKind::Cpu }] }
}

/// Four one-core jobs of 10 s that do not slow each other.
fn jobs() -> (Vec<SimJob>, PairTable) {
    let job = |name: &str| SimJob { name: name.into(), arrival: 0.0, solo: 10.0, pool: 0, cores: 1, program: name.into(), variants: vec![] };
    (vec![job("a"), job("b"), job("c"), job("d")], PairTable::new(vec![vec![1.0; 4]; 4]).unwrap())
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

fn starts(policy: &mut dyn Policy) -> Vec<(usize, f64)> {
    let (jobs, t) = jobs();
    let trace = simulate(&platform(2), &jobs, &t, policy).unwrap();
    let mut s: Vec<(usize, f64)> =
        trace.iter().filter(|e| e.kind == cosched_engine::EventKind::Start).map(|e| (e.job, e.time)).collect();
    s.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    s
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

#[test]
fn a_script_past_its_memory_limit_is_stopped_and_the_fallback_finishes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        dir.path(),
        "hog.lua",
        "hoard = {}\nfunction decide(view)\n  for i = 1, 1e9 do hoard[i] = string.rep('x', 100) .. i end\nend\n",
    );
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[("memory_mib", "8"), ("budget", "1000000000"), ("fallback", "noplan")])).unwrap();
    let mut rust = policy_by_name("noplan", &Params::new()).unwrap();
    assert_eq!(starts(&mut lua), starts(rust.as_mut()));
    let notes = b.log().notes();
    assert_eq!(notes.iter().map(|n| n.kind).collect::<Vec<_>>(), vec![NoteKind::Error], "{notes:?}");
    assert_eq!(notes[0].detail, format!("{}:2: memory limit of 8 MiB exceeded (memory_mib=N raises it); `noplan` decides from now on", p.display()));
}

#[test]
fn one_allocation_past_the_default_limit_fails_the_script_not_the_process() {
    let dir = tempfile::tempdir().unwrap();
    // 512 MiB at once: past the default 256 MiB.
    let p = script(dir.path(), "big.lua", "function decide(view)\n  local s = string.rep('x', 512 * 1024 * 1024)\n  return {}\nend\n");
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[])).unwrap();
    assert_eq!(starts(&mut lua).len(), 4);
    let notes = b.log().notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].detail.contains("memory limit of 256 MiB exceeded"), "{}", notes[0].detail);
}

#[test]
fn a_fifo_a_device_a_directory_or_a_huge_file_is_refused_as_a_script_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.lua");
    mkfifo(&fifo);
    let huge = dir.path().join("huge.lua");
    // Sparse: 3 GiB that take no disk, refused by their length.
    std::fs::File::create(&huge).unwrap().set_len(3 << 30).unwrap();
    let over = script(dir.path(), "over.lua", &format!("-- {}\n", "x".repeat(1 << 20)));
    let cases: [(&Path, &str); 5] = [
        (&fifo, "is a FIFO; expected a regular file"),
        (Path::new("/dev/zero"), "is a device; expected a regular file"),
        (dir.path(), "is a directory; expected a regular file"),
        (&huge, "is over 1024 KiB; expected a script of at most that"),
        (&over, "is over 1024 KiB; expected a script of at most that"),
    ];
    for (path, why) in cases {
        let b = Builder::live(Arc::new(Log::default()), Governor::new(Level::High));
        let e = b.build(&params(path, &[])).err().expect("refused");
        assert_eq!(e, format!("Lua script {} {why}", path.display()));
    }
}

#[test]
fn a_swap_to_a_fifo_a_device_or_a_huge_file_is_refused_and_the_old_script_keeps_deciding() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "strategy.lua", "function decide(view)\n  return {{start = view.queue[1].id}}\nend\n");
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
    let first = vec![Decision::Start { job: 0, pool: 0 }];
    assert_eq!(lua.decide(&view(0.0)), first);

    std::fs::remove_file(&p).unwrap();
    mkfifo(&p);
    cosched_lua::live::request_reload();
    assert_eq!(lua.decide(&view(1.0)), first, "the old script decided; nothing waited for a writer");
    std::fs::remove_file(&p).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    cosched_lua::live::request_reload();
    assert_eq!(lua.decide(&view(2.0)), first);
    std::fs::remove_file(&p).unwrap();
    std::fs::File::create(&p).unwrap().set_len(3 << 30).unwrap();
    cosched_lua::live::request_reload();
    assert_eq!(lua.decide(&view(3.0)), first);

    let notes = log.notes();
    assert_eq!(notes.iter().map(|n| (n.time, n.kind)).collect::<Vec<_>>(), vec![(1.0, NoteKind::Refused), (2.0, NoteKind::Refused), (3.0, NoteKind::Refused)]);
    let shown = p.display();
    assert_eq!(notes[0].detail, format!("Lua script {shown} is a FIFO; expected a regular file; the running script keeps deciding"));
    assert_eq!(notes[1].detail, format!("Lua script {shown} is a device; expected a regular file; the running script keeps deciding"));
    assert!(notes[2].detail.starts_with(&format!("Lua script {shown} is over 1024 KiB")), "{}", notes[2].detail);
}

#[test]
fn a_wake_at_closer_than_a_millisecond_is_moved_out_to_one_and_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        dir.path(),
        "eager.lua",
        "function decide(view)\n  wake_at = view.time + 1e-12\n  if #view.running == 0 and #view.queue > 0 then return {{start = view.queue[1].id}} end\n  return {}\nend\n",
    );
    let b = Builder::simulation(Arc::new(Log::default()));
    let mut lua = b.build(&params(&p, &[])).unwrap();
    let (_, t) = jobs();
    let queue = [QueuedJob { id: 0, name: "a", pool: 0, cores: 1, solo: 10.0, program: "a", variants: &[] }];
    let pools = platform(2).pools;
    lua.decide(&View { time: 5.0, queue: &queue, running: &[], pools: &pools, slowdown: &t });
    assert_eq!(lua.wake_at(), Some(5.0 + cosched_sched::MIN_WAIT_S));
    // One job at a time, each 10 s: with wake-ups of 1e-12 s this never ended.
    let mut lua = b.build(&params(&p, &[])).unwrap();
    assert_eq!(starts(&mut lua), vec![(0, 0.0), (1, 10.0), (2, 20.0), (3, 30.0)]);
    assert!(b.log().notes().is_empty(), "{:?}", b.log().notes());
}
