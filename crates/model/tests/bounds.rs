//! Every number of a workload is bounded by what a node and the engines can
//! do, and the message names the bound (issue 19: values that passed
//! `check` and then overflowed, hung or never ended a run); and the job
//! environment keys `env`, `workdir`, `output` (issue 18).

use cosched_model::workload::{limits, output_path, parse_workload, parse_workload_on, NodeLimits};

fn err(text: &str, node: &NodeLimits) -> String {
    match parse_workload_on(text, "w.toml", node) {
        Ok(w) => panic!("accepted: {w:?}"),
        Err(d) => d.to_string(),
    }
}

const UNKNOWN: NodeLimits = NodeLimits { cores: None, memory_mib: None };

#[test]
fn memory_mib_of_2_pow_44_is_refused_naming_the_limit_instead_of_wrapping() {
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nmemory_mib = 17592186044416\n", &UNKNOWN);
    assert!(e.starts_with("w.toml:4:14:"), "{e}");
    assert!(e.contains("from 1 to 1073741824 MiB") && e.contains("1 PiB"), "{e}");
    let node = NodeLimits { cores: Some(2), memory_mib: Some(24_000) };
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nmemory_mib = 24001\n", &node);
    assert!(e.contains("the node's memory, 24000 MiB"), "{e}");
    assert!(parse_workload_on("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nmemory_mib = 24000\n", "w.toml", &node).is_ok());
}

#[test]
fn a_count_past_the_job_limit_is_refused_before_any_copy_is_made() {
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\ncount = 100000000\n", &UNKNOWN);
    assert!(e.contains("w.toml:4:9:") && e.contains("at most 100000 jobs"), "{e}");
    // The sum counts, not each count alone.
    let two = "[[jobs]]\nname = \"a\"\ncommand = \"true\"\ncount = 60000\n[[jobs]]\nname = \"b\"\ncommand = \"true\"\ncount = 40001\n";
    let e = err(two, &UNKNOWN);
    assert!(e.contains("w.toml:8:9:") && e.contains("job `b` takes the workload to 100001 jobs"), "{e}");
    let w = parse_workload("[[jobs]]\nname = \"a\"\ncommand = \"true\"\ncount = 100000\n", "w.toml", None).unwrap();
    assert_eq!(w.jobs.len() as u64, limits::MAX_JOBS);
}

#[test]
fn times_beyond_30_days_are_refused() {
    for (key, v, col) in [("seconds", "1e308", 11), ("arrival", "1e300", 11), ("timeout", "2592001", 11)] {
        let prog = if key == "seconds" { "kernel = \"compute\"" } else { "command = \"true\"" };
        let e = err(&format!("[[jobs]]\nname = \"a\"\n{prog}\n{key} = {v}\n"), &UNKNOWN);
        assert!(e.contains(&format!("w.toml:4:{col}:")) && e.contains("at most 2592000 (30 days)"), "{key}: {e}");
    }
    assert!(parse_workload("[[jobs]]\nname = \"a\"\ncommand = \"true\"\narrival = 2592000\n", "w.toml", None).is_ok());
}

#[test]
fn kernel_sizes_beyond_the_nodes_memory_are_refused() {
    let node = NodeLimits { cores: Some(2), memory_mib: Some(1024) };
    let e = err("[[jobs]]\nname = \"a\"\nkernel = \"stream\"\nwork = 1\nparams = { array_mib = 1000000000 }\n", &node);
    assert!(e.contains("asks for 1000000000 MiB") && e.contains("at most 1024 MiB"), "{e}");
    // dgemm holds three n x n doubles: n = 8192 is 1536 MiB.
    let e = err("[[jobs]]\nname = \"a\"\nkernel = \"dgemm\"\nwork = 1\nparams = { n = 8192 }\n", &node);
    assert!(e.contains("asks for 1536 MiB"), "{e}");
    let e = err("[[jobs]]\nname = \"a\"\nkernel = \"cache\"\nwork = 1\nparams = { ws_kib = 2000000 }\n", &node);
    assert!(e.contains("asks for 1953 MiB"), "{e}");
    assert!(parse_workload_on("[[jobs]]\nname = \"a\"\nkernel = \"stream\"\nwork = 1\nparams = { array_mib = 64 }\n", "w.toml", &node).is_ok());
}

#[test]
fn names_longer_than_64_characters_and_huge_thread_counts_are_refused() {
    let long = "x".repeat(300);
    let e = err(&format!("[[jobs]]\nname = \"{long}\"\ncommand = \"true\"\n"), &UNKNOWN);
    assert!(e.contains("300 characters long") && e.contains("at most 64 characters"), "{e}");
    let ok = "x".repeat(64);
    assert!(parse_workload(&format!("[[jobs]]\nname = \"{ok}\"\ncommand = \"true\"\n"), "w.toml", None).is_ok());
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\ncores = 5000\n", &UNKNOWN);
    assert!(e.contains("from 1 to 4096"), "{e}");
    let e = err("[[pools]]\nname = \"p\"\ncores = 4294967295\n[[jobs]]\nname = \"a\"\ncommand = \"true\"\n", &UNKNOWN);
    assert!(e.contains("from 1 to 4096"), "{e}");
}

#[test]
fn env_workdir_and_output_resolve_to_the_job() {
    let text = "[[jobs]]\nname = \"a\"\ncommand = \"env\"\nenv = { OMP_SCHEDULE = \"static\", N = 4 }\n\
                workdir = \"/tmp\"\noutput = \"out/{job}-{run}-{repeat}.log\"\n\
                [[jobs]]\nname = \"b\"\ncommand = \"true\"\noutput = { stdout = \"b.out\", stderr = \"b.err\" }\n";
    let w = parse_workload(text, "w.toml", Some(2)).unwrap();
    let a = &w.jobs[0];
    assert_eq!(a.env.get("OMP_SCHEDULE").map(String::as_str), Some("static"));
    assert_eq!(a.env.get("N").map(String::as_str), Some("4"));
    assert_eq!(a.workdir.as_deref(), Some("/tmp"));
    assert_eq!(a.stdout.as_deref(), Some("out/{job}-{run}-{repeat}.log"));
    assert_eq!(a.stderr, None);
    assert_eq!(output_path(a.stdout.as_deref().unwrap(), &a.name, 7, 2), "out/a-7-2.log");
    let b = &w.jobs[1];
    assert_eq!((b.stdout.as_deref(), b.stderr.as_deref()), (Some("b.out"), Some("b.err")));
    assert!(b.env.is_empty() && b.workdir.is_none());
}

#[test]
fn bad_env_names_cosched_variables_and_unknown_placeholders_are_refused() {
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nenv = { \"1X\" = \"v\" }\n", &UNKNOWN);
    assert!(e.contains("w.toml:4:9:") && e.contains("not an environment variable name"), "{e}");
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nenv = { COSCHED_CPUS = \"0\" }\n", &UNKNOWN);
    assert!(e.contains("set by cosched"), "{e}");
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\noutput = \"{jobs}.log\"\n", &UNKNOWN);
    assert!(e.contains("unknown placeholder at `{jobs}.log`") && e.contains("{job}, {run}, {repeat}"), "{e}");
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\noutput = { stderr = \"e\" }\n", &UNKNOWN);
    assert!(e.contains("names no `stdout`"), "{e}");
}

#[test]
fn priority_defaults_to_1_is_copied_by_count_and_is_refused_outside_1_to_1000() {
    let w = parse_workload("[[jobs]]\nname = \"a\"\ncommand = \"true\"\n[[jobs]]\nname = \"b\"\ncommand = \"true\"\npriority = 3\ncount = 2\n", "w.toml", None).unwrap();
    assert_eq!(w.jobs.iter().map(|j| (j.name.as_str(), j.priority)).collect::<Vec<_>>(), [("a", 1), ("b.1", 3), ("b.2", 3)]);
    for (bad, col) in [("0", 12), ("1001", 12), ("2.5", 12), ("\"high\"", 12)] {
        let e = err(&format!("[[jobs]]\nname = \"a\"\ncommand = \"true\"\npriority = {bad}\n"), &UNKNOWN);
        assert!(e.starts_with(&format!("w.toml:4:{col}:")) && e.contains("an integer from 1 to 1000"), "{bad}: {e}");
    }
}

#[test]
fn pids_is_bounded_above_the_threads_and_by_linux_and_defaults_to_4096() {
    let w = parse_workload("[[jobs]]\nname = \"a\"\ncommand = \"true\"\npids = 64\n", "w.toml", None).unwrap();
    assert_eq!((w.jobs[0].pids, w.jobs[0].pids_max()), (Some(64), 64));
    let w = parse_workload("[[jobs]]\nname = \"a\"\ncommand = \"true\"\n", "w.toml", None).unwrap();
    assert_eq!((w.jobs[0].pids, w.jobs[0].pids_max()), (None, limits::DEFAULT_PIDS));
    // A job as wide as the node never trips the default.
    let w = parse_workload("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nthreads = 4096\n", "w.toml", None).unwrap();
    assert_eq!(w.jobs[0].pids_max(), 8192);
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\npids = 0\n", &UNKNOWN);
    assert!(e.starts_with("w.toml:4:8:") && e.contains("from 2 to 4194304"), "{e}");
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\npids = 4194305\n", &UNKNOWN);
    assert!(e.starts_with("w.toml:4:8:") && e.contains("from 2 to 4194304"), "{e}");
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\npids = \"many\"\n", &UNKNOWN);
    assert!(e.starts_with("w.toml:4:8:"), "{e}");
    let e = err("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nthreads = 4\ncores = 4\npids = 4\n", &UNKNOWN);
    assert!(e.starts_with("w.toml:6:8:") && e.contains("runs 4 threads") && e.contains("expected pids >= 5"), "{e}");
    assert!(parse_workload("[[jobs]]\nname = \"a\"\ncommand = \"true\"\nthreads = 4\ncores = 4\npids = 5\n", "w.toml", None).is_ok());
}
