//! Behaviour of the kernels through the library entry point, on tiny sizes.
//! Nothing here depends on how fast the machine is.

use std::collections::BTreeMap;

use cosched_kernels::{run, KernelError, KernelReport};
use cosched_model::kernel::{kernel, KERNELS};

/// Work and parameters small enough for a debug build to finish each run in
/// a fraction of a second.
fn tiny(name: &str, dir: &std::path::Path) -> (u64, BTreeMap<String, String>) {
    let (work, params): (u64, &[(&str, &str)]) = match name {
        "compute" => (2, &[]),
        "dgemm" => (2, &[("n", "24")]),
        "stream" => (2, &[("array_mib", "1")]),
        "cache" => (3, &[("ws_kib", "64")]),
        "chase" => (1, &[("ws_mib", "1")]),
        "distgen" => (1, &[("sizes_kib", "16,64"), ("ratio", "1,2")]),
        "syscall" => (5, &[]),
        "fileio" => (2, &[("file_mib", "1"), ("block_kib", "256")]),
        "pingpong" => (20, &[("msg_kib", "4")]),
        "pipe" => (2, &[("chunk_kib", "8")]),
        "offload" => (2, &[("period_ms", "1"), ("host_load", "0.5")]),
        "idle" => (2, &[]),
        "phased" => (1, &[("phases", "compute:1:1,syscall:3:2,idle:1:1")]),
        other => panic!("no tiny parameters for kernel `{other}`; add them here"),
    };
    let mut map: BTreeMap<String, String> =
        params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    if name == "fileio" {
        map.insert("dir".into(), dir.display().to_string());
    }
    (work, map)
}

fn run_tiny(name: &str, work: u64, threads: u32) -> KernelReport {
    let dir = tempfile::tempdir().unwrap();
    let (_, params) = tiny(name, dir.path());
    run(kernel(name).unwrap(), work, threads, &params).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn same_work_gives_the_same_checksum_for_every_kernel() {
    let dir = tempfile::tempdir().unwrap();
    for spec in KERNELS {
        let (work, params) = tiny(spec.name, dir.path());
        let threads = if spec.threaded { 2 } else { 1 };
        let a = run(spec, work, threads, &params).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        let b = run(spec, work, threads, &params).unwrap();
        assert_eq!(a.checksum, b.checksum, "{}", spec.name);
        assert_eq!(a.checksum.len(), 16, "{}", spec.name);
        assert!(a.checksum.chars().all(|c| c.is_ascii_hexdigit()), "{}", spec.name);
    }
}

#[test]
fn different_work_gives_a_different_checksum_for_every_kernel() {
    let dir = tempfile::tempdir().unwrap();
    for spec in KERNELS {
        let (work, params) = tiny(spec.name, dir.path());
        let a = run(spec, work, 1, &params).unwrap();
        let b = run(spec, work + 1, 1, &params).unwrap();
        assert_ne!(a.checksum, b.checksum, "{}", spec.name);
    }
}

#[test]
fn ops_scale_exactly_linearly_with_work_for_every_kernel() {
    let dir = tempfile::tempdir().unwrap();
    for spec in KERNELS {
        let (work, params) = tiny(spec.name, dir.path());
        let one = run(spec, work, 1, &params).unwrap();
        let two = run(spec, 2 * work, 1, &params).unwrap();
        let none = run(spec, 0, 1, &params).unwrap();
        assert!(one.ops > 0, "{}", spec.name);
        assert_eq!(two.ops, 2 * one.ops, "{}", spec.name);
        assert_eq!(none.ops, 0, "{}", spec.name);
        assert_eq!(one.ops_unit, two.ops_unit, "{}", spec.name);
    }
}

#[test]
fn splitting_across_threads_keeps_the_ops() {
    for spec in KERNELS.iter().filter(|k| k.threaded) {
        let one = run_tiny(spec.name, 3, 1);
        for threads in [2, 3] {
            let split = run_tiny(spec.name, 3, threads);
            assert_eq!(split.ops, one.ops, "{} on {threads} threads", spec.name);
            assert_eq!(split.threads, threads);
        }
    }
}

#[test]
fn dgemm_result_does_not_depend_on_the_thread_count() {
    assert_eq!(run_tiny("dgemm", 2, 1).checksum, run_tiny("dgemm", 2, 3).checksum);
}

#[test]
fn single_threaded_kernels_refuse_more_threads() {
    for spec in KERNELS.iter().filter(|k| !k.threaded) {
        let err = run(spec, 1, 2, &BTreeMap::new()).unwrap_err();
        assert!(matches!(err, KernelError::Usage(_)), "{}: {err}", spec.name);
        assert!(err.to_string().contains("--threads"), "{err}");
        assert_eq!(err.exit_code(), 2);
    }
    assert!(matches!(run(kernel("compute").unwrap(), 1, 0, &BTreeMap::new()), Err(KernelError::Usage(_))));
}

#[test]
fn pingpong_moves_the_same_data_over_both_transports() {
    for msg_kib in ["1", "64"] {
        let mut reports = Vec::new();
        for transport in ["shm", "unix"] {
            let params: BTreeMap<String, String> = [("msg_kib", msg_kib), ("transport", transport)]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let r = run(kernel("pingpong").unwrap(), 30, 1, &params).unwrap();
            let msg: u64 = msg_kib.parse::<u64>().unwrap() * 1024;
            assert_eq!(r.ops, 2 * msg * 30, "{transport}");
            assert_eq!(r.params["transport"], transport);
            reports.push(r);
        }
        assert_eq!(reports[0].checksum, reports[1].checksum, "msg_kib = {msg_kib}");
    }
}

#[test]
fn fileio_leaves_no_files_behind() {
    let dir = tempfile::tempdir().unwrap();
    let params: BTreeMap<String, String> = [
        ("dir", dir.path().to_str().unwrap()),
        ("file_mib", "1"),
        ("block_kib", "192"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    // 3 MiB in 1 MiB files, with a partial last block in each.
    let r = run(kernel("fileio").unwrap(), 3, 1, &params).unwrap();
    assert_eq!(r.ops, 2 * 3 * (1 << 20));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn fileio_in_a_missing_directory_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-there");
    let params: BTreeMap<String, String> =
        [("dir".to_string(), missing.display().to_string())].into_iter().collect();
    let err = run(kernel("fileio").unwrap(), 1, 1, &params).unwrap_err();
    assert!(matches!(err, KernelError::Io { .. }), "{err}");
    assert!(err.to_string().contains("not-there"), "{err}");
}

/// Kernel, parameters, and a text the error must contain.
type BadCase<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

#[test]
fn bad_parameters_are_usage_errors_naming_the_flag() {
    let cases: &[BadCase] = &[
        ("stream", &[("array_mib", "0")], "--array-mib"),
        ("stream", &[("array_mib", "lots")], "array_mib"),
        ("stream", &[("arrays", "3")], "arrays"),
        ("dgemm", &[("n", "0")], "--n"),
        ("chase", &[("ws_mib", "0")], "--ws-mib"),
        ("distgen", &[("sizes_kib", "16,,32")], "--sizes-kib"),
        ("distgen", &[("sizes_kib", "16,32"), ("ratio", "1")], "--ratio"),
        ("distgen", &[("ratio", "-1")], "--ratio"),
        ("distgen", &[("intensity", "0")], "--intensity"),
        ("distgen", &[("intensity", "1.5")], "--intensity"),
        ("fileio", &[("block_kib", "0")], "--block-kib"),
        ("pingpong", &[("msg_kib", "0")], "--msg-kib"),
        ("pingpong", &[("transport", "tcp")], "transport"),
        ("pipe", &[("chunk_kib", "0")], "--chunk-kib"),
        ("pipe", &[("chunk_kib", "99999")], "--chunk-kib"),
        ("pipe", &[("read_kib", "0")], "--read-kib"),
        ("pipe", &[("source", "disk")], "source"),
        ("offload", &[("host_load", "1.5")], "--host-load"),
        ("offload", &[("period_ms", "0")], "--period-ms"),
        ("phased", &[("phases", "compute:1")], "--phases"),
        ("phased", &[("phases", "fileio:1:2")], "--phases"),
    ];
    for (name, params, needle) in cases {
        let map: BTreeMap<String, String> =
            params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let err = run(kernel(name).unwrap(), 1, 1, &map).unwrap_err();
        assert!(matches!(err, KernelError::Usage(_)), "{name} {params:?}: {err}");
        assert!(err.to_string().contains(needle), "{name} {params:?}: `{err}` should name {needle}");
    }
}

#[test]
fn distgen_pauses_keep_the_access_count_and_data() {
    let dir = tempfile::tempdir().unwrap();
    let (work, mut params) = tiny("distgen", dir.path());
    let full = run(kernel("distgen").unwrap(), work, 1, &params).unwrap();
    params.insert("intensity".into(), "0.5".into());
    let paced = run(kernel("distgen").unwrap(), work, 1, &params).unwrap();
    assert_eq!(paced.ops, full.ops);
    assert_eq!(paced.checksum, full.checksum);
}

#[test]
fn distgen_reports_the_resolved_ratio() {
    let params: BTreeMap<String, String> =
        [("sizes_kib".to_string(), "16, 64".to_string())].into_iter().collect();
    let r = run(kernel("distgen").unwrap(), 1, 1, &params).unwrap();
    assert_eq!(r.params["sizes_kib"], "16,64");
    assert_eq!(r.params["ratio"], "1,1");
}

#[test]
fn cache_reports_the_working_set_it_used() {
    let r = run(kernel("cache").unwrap(), 1, 1, &BTreeMap::new()).unwrap();
    let ws: u64 = r.params["ws_kib"].parse().unwrap();
    assert!(ws > 0, "ws_kib = 0 must resolve to a size");
    assert_eq!(r.ops, 16 * ws * 1024 / 8);
}

#[test]
fn phased_adds_up_its_phases() {
    let r = run_tiny("phased", 2, 1);
    let compute = run_tiny("compute", 1, 1);
    let syscall = run_tiny("syscall", 3, 2);
    let idle = run_tiny("idle", 1, 1);
    assert_eq!(r.ops, 2 * (compute.ops + syscall.ops + idle.ops));
    assert_eq!(r.ops_unit, "flops+syscalls+ms");
}

#[test]
fn report_rate_is_work_over_wall_time() {
    let r = run_tiny("syscall", 4, 1);
    assert_eq!(r.work, 4);
    assert_eq!(r.unit, kernel("syscall").unwrap().unit);
    assert!((r.rate - 4.0 / r.wall_s).abs() <= 1e-9 * r.rate);
    assert_eq!(r.pid, std::process::id());
}

#[test]
fn shm_handshake_survives_many_round_trips() {
    // Many short exchanges hit every interleaving of spinning, sleeping and
    // waking; the unix transport gives the expected data independently.
    let mut sums = Vec::new();
    for transport in ["shm", "unix"] {
        let params: BTreeMap<String, String> = [("msg_kib", "1"), ("transport", transport)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        sums.push(run(kernel("pingpong").unwrap(), 5000, 1, &params).unwrap().checksum);
    }
    assert_eq!(sums[0], sums[1]);
}
