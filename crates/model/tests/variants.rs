//! Job variants (`[[jobs.variants]]`, the VarySched paper's kernel collections):
//! what a variant takes from its job, its solo time, and every mistake
//! reported at FILE:LINE:COL.

use cosched_model::workload::{parse_workload, Amount, Program, Workload};

const FILE: &str = "v.toml";

fn ok(text: &str) -> Workload {
    parse_workload(text, FILE, Some(4)).unwrap_or_else(|d| panic!("unexpected errors:\n{d}"))
}

/// The one diagnostic at `line:col`, which must hold every needle.
#[track_caller]
fn error_at(text: &str, line: u32, col: u32, needles: &[&str]) {
    let d = match parse_workload(text, FILE, Some(4)) {
        Ok(w) => panic!("expected errors, got {w:#?}"),
        Err(d) => d,
    };
    let prefix = format!("{FILE}:{line}:{col}: ");
    let Some(found) = d.0.iter().map(|x| x.to_string()).find(|s| s.starts_with(&prefix)) else {
        panic!("no error at {line}:{col}; got:\n{d}")
    };
    for n in needles {
        assert!(found.contains(n), "{found:?} lacks {n:?}; all:\n{d}");
    }
}

const POOLS: &str = "[[pools]]\nname = \"host\"\ncores = 4\n\n[[pools]]\nname = \"acc\"\nkind = \"accelerator\"\n\n";

#[test]
fn a_variant_takes_the_jobs_program_and_pool_unless_it_says_otherwise() {
    let text = format!(
        "{POOLS}[[jobs]]\nname = \"mm\"\nkernel = \"compute\"\nseconds = 2.0\n\n\
         [[jobs.variants]]\nthreads = 4\nspeed = 2.5\n\n\
         [[jobs.variants]]\nname = \"gpu\"\npool = \"acc\"\nkernel = \"offload\"\nwork = 7\n"
    );
    let w = ok(&text);
    let j = &w.jobs[0];
    assert_eq!((j.pool.as_str(), j.cores, j.own_variant_name()), ("host", 1, "host/1".to_string()));
    assert_eq!(j.variants.len(), 2);
    let all = &j.variants[0];
    assert_eq!((all.name.as_str(), all.pool.as_str(), all.threads, all.cores, all.speed), ("host/4", "host", 4, 4, Some(2.5)));
    assert_eq!(all.program, j.program);
    // The job's 2 s of work at 2.5 times the speed: sized to run 0.8 s.
    assert_eq!(all.amount, Amount::Seconds(0.8));
    assert_eq!(all.line, 14);
    // 2 s alone on one core, 2.5 times as fast on four.
    assert_eq!(all.solo(2.0), 0.8);
    let gpu = &j.variants[1];
    assert_eq!((gpu.name.as_str(), gpu.pool.as_str(), gpu.cores, gpu.speed), ("gpu", "acc", 1, None));
    assert!(matches!(&gpu.program, Program::Kernel { name, .. } if name == "offload"));
    assert_eq!(gpu.amount, Amount::Work(7));
    // No speed, no seconds of its own: the job's solo time.
    assert_eq!(gpu.solo(2.0), 2.0);
    assert_eq!(gpu.kernel_argv(7)[..3], ["offload".to_string(), "--work".into(), "7".into()]);
}

#[test]
fn a_variant_with_seconds_of_its_own_runs_that_long_alone() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nseconds = 3.0\n\n[[jobs.variants]]\nname = \"short\"\nseconds = 1.5\n";
    let v = &ok(text).jobs[0].variants[0];
    assert_eq!((v.amount, v.solo(3.0)), (Amount::Seconds(1.5), 1.5));
}

#[test]
fn copies_made_by_count_share_the_variants() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\ncount = 2\n\n[[jobs.variants]]\ncores = 2\n";
    let w = ok(text);
    assert_eq!(w.jobs.len(), 2);
    assert_eq!(w.jobs[0].variants, w.jobs[1].variants);
    assert_eq!(w.jobs[1].variants[0].name, "host/2");
}

#[test]
fn a_workload_without_variants_resolves_as_before() {
    let w = ok("[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n");
    assert!(w.jobs[0].variants.is_empty());
    // Serialized jobs keep their old shape: no `variants` key.
    assert!(!serde_json::to_string(&w).unwrap().contains("variants"));
}

#[test]
fn a_variant_key_a_variant_cannot_change_is_named_with_the_variant() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\ncount = 2\n";
    error_at(text, 7, 1, &["unknown key `count` in variant 2 of job `a`", "expected one of: name, kernel, params, work, seconds, command, threads, cores, pool, speed"]);
}

#[test]
fn a_variant_on_an_unknown_pool_or_too_big_for_its_pool_is_refused_where_it_says_so() {
    let text = format!("{POOLS}[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\npool = \"gpu\"\n");
    error_at(&text, 15, 8, &["unknown pool `gpu`", "expected one of the pools: host, acc"]);
    let text = format!("{POOLS}[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\ncores = 5\n");
    error_at(&text, 15, 9, &["variant 2 of job `a` needs 5 cores but pool `host` has 4"]);
    let text = format!("{POOLS}[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\npool = \"acc\"\ncores = 2\n");
    error_at(&text, 16, 9, &["needs 2 slots but pool `acc` has 1"]);
}

#[test]
fn bad_speeds_and_speed_beside_seconds_are_refused() {
    let base = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nseconds = 1.0\n\n[[jobs.variants]]\n";
    error_at(&format!("{base}speed = 0\n"), 7, 9, &["`speed = 0` is out of range", "expected a number > 0"]);
    error_at(&format!("{base}speed = \"fast\"\n"), 7, 9, &["wrong type for `speed`"]);
    error_at(&format!("{base}seconds = 2.0\nspeed = 2\n"), 8, 1, &["variant 2 of job `a` says both `speed` and `seconds`"]);
}

#[test]
fn a_variant_needs_its_own_amount_when_it_runs_its_own_kernel() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\nkernel = \"stream\"\n";
    error_at(text, 7, 1, &["kernel variant 2 of job `a` says neither `work` nor `seconds`"]);
}

#[test]
fn a_variant_running_a_command_takes_no_kernel_sizes() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\ncommand = \"true\"\nwork = 3\n";
    error_at(text, 8, 1, &["`work` applies only to kernel jobs, and variant 2 of job `a` runs a command"]);
}

#[test]
fn two_ways_of_one_job_may_not_share_a_name() {
    // The default name of a one-core variant on the host is the job's own.
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\nwork = 9\n";
    error_at(text, 6, 1, &["variant 2 of job `a` is named `host/1`, as is the job's own way", "expected unique names"]);
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n[[jobs.variants]]\nname = \"x\"\ncores = 2\n\n[[jobs.variants]]\nname = \"x\"\ncores = 3\n";
    error_at(text, 11, 8, &["variant 3 of job `a` is named `x`, as is variant 2"]);
}

#[test]
fn variants_must_be_an_array_of_tables_and_at_most_sixteen() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\nvariants = 3\n";
    error_at(text, 5, 12, &["wrong type for `variants`", "expected an array of tables"]);
    let many: String = (0..17).map(|i| format!("[[jobs.variants]]\nname = \"v{i}\"\n")).collect();
    let text = format!("[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 5\n\n{many}");
    let d = parse_workload(&text, FILE, Some(4)).unwrap_err();
    assert!(d.to_string().contains("17 variants; expected at most 16 [[jobs.variants]] per job"), "{d}");
}
