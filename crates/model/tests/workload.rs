//! Workload files: every kind of bad input is reported at the right
//! FILE:LINE:COL with what was expected, and valid files resolve to the
//! documented defaults.

use cosched_model::workload::{parse_workload, Amount, Diagnostics, PoolKind, Program, Workload};

const FILE: &str = "w.toml";

fn ok(text: &str) -> Workload {
    ok_on(text, Some(2))
}

fn ok_on(text: &str, node_cores: Option<u32>) -> Workload {
    parse_workload(text, FILE, node_cores).unwrap_or_else(|d| panic!("unexpected errors:\n{d}"))
}

fn errors(text: &str) -> Diagnostics {
    errors_on(text, Some(2))
}

fn errors_on(text: &str, node_cores: Option<u32>) -> Diagnostics {
    match parse_workload(text, FILE, node_cores) {
        Ok(w) => panic!("expected errors, got {w:#?}"),
        Err(d) => d,
    }
}

/// Asserts that some diagnostic sits at `line:col` and its text contains
/// every one of `needles`.
#[track_caller]
fn assert_error_at(text: &str, line: u32, col: u32, needles: &[&str]) {
    assert_error_at_on(text, Some(2), line, col, needles)
}

#[track_caller]
fn assert_error_at_on(text: &str, node_cores: Option<u32>, line: u32, col: u32, needles: &[&str]) {
    let d = errors_on(text, node_cores);
    let prefix = format!("{FILE}:{line}:{col}: ");
    let found =
        d.0.iter()
            .map(|x| x.to_string())
            .find(|s| s.starts_with(&prefix));
    let Some(found) = found else {
        panic!("no error at {line}:{col}; got:\n{d}")
    };
    for n in needles {
        assert!(found.contains(n), "{found:?} lacks {n:?}; all:\n{d}");
    }
    // Every diagnostic says what would be right.
    for x in &d.0 {
        assert!(x.expected.starts_with("expected"), "{x}");
    }
}

const JOB: &str = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 10\n";

// ---- syntax and shape ------------------------------------------------------

#[test]
fn toml_syntax_error_points_at_the_broken_spot() {
    assert_error_at(
        "name = \"x\"\n[[jobs]\nname = \"a\"\n",
        2,
        7,
        &["TOML syntax error", "expected valid TOML"],
    );
}

#[test]
fn duplicate_toml_key_is_a_syntax_error_at_the_second() {
    assert_error_at(
        "[[jobs]]\nname = \"a\"\nname = \"b\"\n",
        3,
        1,
        &["duplicate key"],
    );
}

#[test]
fn unknown_top_level_key_lists_the_allowed_ones() {
    let text = format!("nmae = \"x\"\n{JOB}");
    assert_error_at(
        &text,
        1,
        1,
        &[
            "unknown key `nmae` at the top level",
            "did you mean `name`",
            "name, description, pools, jobs",
        ],
    );
}

#[test]
fn unknown_pool_key_is_reported_in_its_pool() {
    let text = format!("[[pools]]\nname = \"host\"\ncorse = 2\n{JOB}");
    assert_error_at(
        &text,
        3,
        1,
        &[
            "unknown key `corse` in pool `host`",
            "did you mean `cores`",
            "name, kind, cores, host_load",
        ],
    );
}

#[test]
fn unknown_job_key_suggests_the_close_one() {
    let text = format!("{JOB}threds = 2\n");
    assert_error_at(
        &text,
        5,
        1,
        &[
            "unknown key `threds` in job `a`",
            "did you mean `threads`",
            "expected one of: name, kernel",
        ],
    );
}

#[test]
fn wrong_type_points_at_the_value() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = \"ten\"\n";
    assert_error_at(
        text,
        4,
        8,
        &[
            "wrong type for `work`: found a string (\"ten\")",
            "expected an integer >= 1",
        ],
    );
}

#[test]
fn fractional_work_is_a_wrong_type() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 2.5\n";
    assert_error_at(text, 4, 8, &["found a float (2.5)", "integer"]);
}

#[test]
fn jobs_as_a_single_table_asks_for_double_brackets() {
    assert_error_at(
        "[jobs]\nname = \"a\"\n",
        1,
        2,
        &["`jobs` is a single table", "[[jobs]]"],
    );
}

#[test]
fn dates_are_rejected_with_a_position() {
    let text = format!("{JOB}arrival = 1979-05-27\n");
    assert_error_at(&text, 5, 11, &["date or time"]);
}

// ---- kernels and parameters -------------------------------------------------

#[test]
fn unknown_kernel_lists_the_known() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"strem\"\nwork = 1\n";
    assert_error_at(
        text,
        3,
        10,
        &[
            "unknown kernel `strem`",
            "did you mean `stream`",
            "expected one of: compute, dgemm, stream",
        ],
    );
}

#[test]
fn unknown_kernel_parameter_lists_the_kernels_parameters() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"stream\"\nparams = { arrays = 3 }\nwork = 1\n";
    assert_error_at(
        text,
        4,
        12,
        &[
            "kernel `stream` has no parameter `arrays`",
            "expected one of its parameters: array_mib",
        ],
    );
}

#[test]
fn parameter_on_a_kernel_without_parameters() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nparams = { n = 3 }\nwork = 1\n";
    assert_error_at(text, 4, 12, &["no parameter `n`", "takes none"]);
}

#[test]
fn negative_uint_parameter_is_a_bad_value() {
    let text =
        "[[jobs]]\nname = \"a\"\nkernel = \"stream\"\nparams = { array_mib = -3 }\nwork = 1\n";
    assert_error_at(
        text,
        4,
        24,
        &[
            "bad value for parameter `array_mib` of kernel `stream`",
            "`-3` is not a non-negative integer",
            "expected a non-negative integer",
        ],
    );
}

#[test]
fn choice_parameter_lists_the_choices() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"pingpong\"\n[jobs.params]\ntransport = \"tcp\"\n[[jobs]]\nname = \"b\"\nkernel = \"idle\"\nwork = 1\n";
    assert_error_at(text, 5, 13, &["`tcp`", "expected one of shm, unix"]);
}

#[test]
fn float_for_an_integer_parameter_is_rejected() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"dgemm\"\nparams = { n = 2.0 }\nwork = 1\n";
    assert_error_at(text, 4, 16, &["`2.0` is not a non-negative integer"]);
}

#[test]
fn array_as_a_parameter_value_is_a_wrong_type() {
    let text =
        "[[jobs]]\nname = \"a\"\nkernel = \"distgen\"\nparams = { sizes_kib = [1, 2] }\nwork = 1\n";
    assert_error_at(
        text,
        4,
        24,
        &["wrong type for parameter `sizes_kib`", "found an array"],
    );
}

#[test]
fn malformed_phases_are_rejected_where_written() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"phased\"\nparams = { phases = \"compute:1\" }\nwork = 1\n";
    assert_error_at(text, 4, 21, &["parameter `phases`", "KERNEL:WORK:THREADS"]);
}

#[test]
fn threads_on_a_single_threaded_kernel() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"fileio\"\nwork = 1\nthreads = 2\n";
    assert_error_at(
        text,
        5,
        11,
        &[
            "kernel `fileio` is single-threaded",
            "expected threads = 1; threaded kernels: compute",
        ],
    );
}

// ---- pools and cores --------------------------------------------------------

#[test]
fn unknown_pool_lists_the_pools() {
    let text = format!("{JOB}pool = \"gpu\"\n");
    assert_error_at(
        &text,
        5,
        8,
        &["unknown pool `gpu`", "expected one of the pools: host"],
    );
}

#[test]
fn zero_cores_is_out_of_range() {
    let text = format!("{JOB}cores = 0\n");
    assert_error_at(
        &text,
        5,
        9,
        &["`cores = 0` is out of range", "expected an integer from 1 to 4096"],
    );
}

#[test]
fn zero_pool_cores_is_out_of_range() {
    let text = format!("[[pools]]\nname = \"p\"\ncores = 0\n{JOB}");
    assert_error_at(&text, 3, 9, &["`cores = 0` is out of range"]);
}

#[test]
fn fewer_cores_than_threads_is_rejected() {
    let text = format!("{JOB}threads = 2\ncores = 1\n");
    assert_error_at(
        &text,
        6,
        9,
        &[
            "job `a` gets 1 core but runs 2 threads",
            "expected cores >= 2",
        ],
    );
}

#[test]
fn fewer_cores_than_the_widest_phase_is_rejected() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"phased\"\nparams = { phases = \"compute:1:1,stream:1:2\" }\nwork = 1\ncores = 1\n";
    assert_error_at(text, 6, 9, &["2 threads in its widest phase"]);
}

#[test]
fn more_cores_than_the_pool_points_at_cores() {
    let text = format!("{JOB}cores = 3\n");
    assert_error_at(
        &text,
        5,
        9,
        &[
            "job `a` needs 3 cores but pool `host` has 2",
            "expected at most 2",
        ],
    );
}

#[test]
fn more_threads_than_the_pool_points_at_threads() {
    let text = format!("{JOB}threads = 4\n");
    assert_error_at(&text, 5, 11, &["needs 4 cores but pool `host` has 2"]);
}

#[test]
fn default_phases_need_two_cores_so_a_one_core_node_rejects_them() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"phased\"\nwork = 1\n";
    assert_error_at_on(
        text,
        Some(1),
        1,
        1,
        &["needs 2 cores but pool `host` has 1"],
    );
}

#[test]
fn accelerator_slots_bound_its_jobs() {
    let text = "[[pools]]\nname = \"ve\"\nkind = \"accelerator\"\n[[jobs]]\nname = \"a\"\nkernel = \"offload\"\nwork = 1\npool = \"ve\"\ncores = 2\n";
    assert_error_at(text, 9, 9, &["needs 2 slots but pool `ve` has 1"]);
}

#[test]
fn cpu_pools_larger_than_the_node_point_at_the_overflowing_pool() {
    let text = format!("[[pools]]\nname = \"a\"\ncores = 1\n[[pools]]\nname = \"b\"\ncores = 2\n{JOB}pool = \"a\"\n");
    assert_error_at(
        &text,
        6,
        9,
        &[
            "the cpu pools take 3 cores (a: 1, b: 2) but the node has 2",
            "at most 2",
        ],
    );
}

#[test]
fn cpu_pool_sum_is_not_bounded_when_the_node_is_unknown() {
    let text = format!("[[pools]]\nname = \"a\"\ncores = 64\n{JOB}pool = \"a\"\n");
    assert_eq!(ok_on(&text, None).pools[0].cores, Some(64));
}

#[test]
fn two_cpu_pools_without_cores_cannot_both_take_the_rest() {
    let text = format!("[[pools]]\nname = \"a\"\n[[pools]]\nname = \"b\"\n{JOB}");
    assert_error_at(
        &text,
        4,
        8,
        &[
            "`a` (line 1) and `b` both leave out `cores`",
            "every cpu pool but one",
        ],
    );
}

#[test]
fn pool_taking_the_rest_needs_something_left() {
    let text = format!("[[pools]]\nname = \"a\"\ncores = 2\n[[pools]]\nname = \"b\"\n{JOB}");
    assert_error_at(
        &text,
        5,
        8,
        &[
            "cpu pool `b` takes the rest of the node",
            "all 2 of its cores",
        ],
    );
}

#[test]
fn host_load_on_a_cpu_pool() {
    let text = format!("[[pools]]\nname = \"vh\"\nhost_load = 0.3\n{JOB}");
    assert_error_at(
        &text,
        3,
        1,
        &[
            "`host_load` applies only to accelerator pools, and pool `vh` is a cpu pool",
            "kind = \"accelerator\"",
        ],
    );
}

#[test]
fn host_load_above_one_core() {
    let text = format!("[[pools]]\nname = \"ve\"\nkind = \"accelerator\"\nhost_load = 1.5\n{JOB}");
    assert_error_at(
        &text,
        4,
        13,
        &["`host_load = 1.5` is out of range", "between 0 and 1"],
    );
}

#[test]
fn unknown_pool_kind() {
    let text = format!("[[pools]]\nname = \"g\"\nkind = \"gpu\"\n{JOB}");
    assert_error_at(
        &text,
        3,
        8,
        &[
            "unknown pool kind `gpu`",
            "expected \"cpu\" or \"accelerator\"",
        ],
    );
}

// ---- names and dependencies --------------------------------------------------

#[test]
fn duplicate_job_name_points_at_the_second_and_names_the_first_line() {
    let text = format!("{JOB}{JOB}");
    assert_error_at(
        &text,
        6,
        8,
        &[
            "duplicate job name `a`; the first is declared at line 1",
            "unique job names",
        ],
    );
}

#[test]
fn duplicate_pool_name_points_at_the_second() {
    let text =
        format!("[[pools]]\nname = \"p\"\ncores = 1\n\n[[pools]]\nname = \"p\"\ncores = 1\n{JOB}");
    assert_error_at(
        &text,
        6,
        8,
        &["duplicate pool name `p`; the first is declared at line 1"],
    );
}

#[test]
fn dotted_job_names_are_reserved_for_copies() {
    let text = "[[jobs]]\nname = \"a.1\"\nkernel = \"idle\"\nwork = 1\n";
    assert_error_at(
        text,
        2,
        8,
        &["invalid job name \"a.1\"", "reserved for copies"],
    );
}

#[test]
fn job_without_a_name() {
    let text = "[[jobs]]\nkernel = \"idle\"\nwork = 1\n";
    assert_error_at(text, 1, 1, &["job #1 has no `name`"]);
}

#[test]
fn after_naming_an_unknown_job() {
    let text = format!("{JOB}after = [\"b\", \"prep\"]\n");
    assert_error_at(
        &text,
        5,
        15,
        &[
            "job `a` waits for unknown job `prep`",
            "expected names of jobs in this file: a",
        ],
    );
}

#[test]
fn dependency_cycle_is_printed_and_points_into_it() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"idle\"\nwork = 1\nafter = [\"b\"]\n\
                [[jobs]]\nname = \"b\"\nkernel = \"idle\"\nwork = 1\nafter = [\"c\"]\n\
                [[jobs]]\nname = \"c\"\nkernel = \"idle\"\nwork = 1\nafter = [\"a\"]\n";
    let d = errors(text);
    assert_eq!(d.0.len(), 1, "one cycle, one error:\n{d}");
    assert_error_at(
        text,
        5,
        10,
        &[
            "dependency cycle: a -> b -> c -> a",
            "remove one of these dependencies",
        ],
    );
}

#[test]
fn a_job_waiting_for_itself_is_a_cycle() {
    let text = format!("{JOB}after = [\"a\"]\n");
    assert_error_at(&text, 5, 10, &["dependency cycle: a -> a"]);
}

#[test]
fn empty_workload_without_jobs_points_at_the_start() {
    assert_error_at(
        "name = \"empty\"\n",
        1,
        1,
        &["the workload has no jobs", "at least one [[jobs]]"],
    );
    assert_error_at("", 1, 1, &["no jobs"]);
}

#[test]
fn empty_jobs_array_points_at_the_key() {
    assert_error_at(
        "name = \"e\"\njobs = []\n",
        2,
        1,
        &["the workload has no jobs"],
    );
}

// ---- programs and amounts ------------------------------------------------------

#[test]
fn both_kernel_and_command_points_at_the_second() {
    let text = format!("{JOB}command = \"true\"\n");
    assert_error_at(
        &text,
        5,
        1,
        &["job `a` has both `kernel` and `command`", "exactly one"],
    );
}

#[test]
fn neither_kernel_nor_command_points_at_the_job() {
    let text = "\n[[jobs]]\nname = \"a\"\nwork = 1\n";
    assert_error_at(
        text,
        2,
        1,
        &["job `a` has neither `kernel` nor `command`", "compute"],
    );
}

#[test]
fn both_work_and_seconds() {
    let text = format!("{JOB}seconds = 2\n");
    assert_error_at(&text, 5, 1, &["job `a` has both `work` and `seconds`"]);
}

#[test]
fn kernel_job_without_an_amount_points_at_the_kernel() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"stream\"\n";
    assert_error_at(
        text,
        3,
        1,
        &["says neither `work` nor `seconds`", "one triad pass"],
    );
}

#[test]
fn command_jobs_take_no_work_or_params() {
    let text =
        "[[jobs]]\nname = \"s\"\ncommand = \"stress-ng --cpu 1\"\nwork = 5\nparams = { x = 1 }\n";
    assert_error_at(
        text,
        4,
        1,
        &[
            "`work` applies only to kernel jobs",
            "fixed by the command itself",
        ],
    );
    assert_error_at(text, 5, 1, &["`params` applies only to kernel jobs"]);
}

#[test]
fn unbalanced_quotes_in_a_command() {
    let text = "[[jobs]]\nname = \"s\"\ncommand = \"sh -c 'echo\"\n";
    assert_error_at(text, 3, 11, &["cannot split `command`"]);
}

#[test]
fn empty_command() {
    let text = "[[jobs]]\nname = \"s\"\ncommand = []\n";
    assert_error_at(text, 3, 11, &["names no program"]);
}

#[test]
fn negative_arrival_and_seconds_and_zero_count() {
    let text =
        "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nseconds = -1.0\narrival = -0.5\ncount = 0\n";
    assert_error_at(text, 4, 11, &["`seconds = -1.0` is out of range", "> 0"]);
    assert_error_at(text, 5, 11, &["`arrival = -0.5` is out of range", ">= 0"]);
    assert_error_at(text, 6, 9, &["`count = 0` is out of range", "copies"]);
}

#[test]
fn zero_seconds_and_timeout_are_out_of_range() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nseconds = 0\ntimeout = 0.0\nmemory_mib = 0\n";
    let d = errors(text);
    assert_eq!(d.0.len(), 3, "{d}");
}

// ---- collecting and formatting ----------------------------------------------------

#[test]
fn every_semantic_error_is_reported_in_reading_order() {
    let text = "nmae = 1\n\
                [[jobs]]\nname = \"a\"\nkernel = \"strem\"\nwork = 1\n\
                [[jobs]]\nname = \"b\"\nkernel = \"compute\"\nwork = \"x\"\npool = \"gpu\"\n\
                [[jobs]]\nname = \"a\"\ncommand = \"true\"\nafter = [\"zz\"]\n";
    let d = errors(text);
    let lines: Vec<u32> = d.0.iter().map(|x| x.line).collect();
    assert_eq!(lines, vec![1, 4, 9, 10, 12, 14], "{d}");
}

#[test]
fn display_is_file_line_col_message_expected() {
    let d = errors("[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 0\n");
    assert_eq!(
        d.to_string(),
        "w.toml:4:8: `work = 0` is out of range; expected an integer >= 1 (units of kernel work)"
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    let text = "description = \"µs\"\n[[jobs]]\nname = \"a\"\nkernel = \"compute\"\nwork = 1 # µ\nthreads = \"µ\"\n";
    assert_error_at(text, 6, 11, &["wrong type for `threads`"]);
    let text = "description = \"µµ\"; nmae = 1\n";
    // Not TOML (`;`), so it stops at the syntax error after two multi-byte characters.
    assert_error_at(text, 1, 19, &["TOML syntax error"]);
}

// ---- happy paths ------------------------------------------------------------------

#[test]
fn defaults_fill_one_host_pool_of_the_node() {
    let w = ok(JOB);
    assert_eq!(w.name, "w");
    assert_eq!(w.description, None);
    assert_eq!(w.pools.len(), 1);
    assert_eq!(w.pools[0].name, "host");
    assert_eq!(w.pools[0].kind, PoolKind::Cpu);
    assert_eq!(w.pools[0].cores, Some(2));
    let j = &w.jobs[0];
    assert_eq!((j.name.as_str(), j.base_name.as_str()), ("a", "a"));
    assert_eq!(
        j.program,
        Program::Kernel {
            name: "compute".into(),
            params: Default::default()
        }
    );
    assert_eq!(j.amount, Amount::Work(10));
    assert_eq!((j.threads, j.cores), (1, 1));
    assert_eq!(j.pool, "host");
    assert_eq!(j.arrival, 0.0);
    assert!(j.after.is_empty());
    assert_eq!((j.timeout, j.memory_mib), (None, None));
    assert_eq!(j.line, 1);
}

#[test]
fn unknown_node_leaves_the_host_pool_unsized_and_unbounded() {
    let text = format!("{JOB}threads = 16\n");
    let w = ok_on(&text, None);
    assert_eq!(w.pools[0].cores, None);
    assert_eq!(w.jobs[0].cores, 16);
}

#[test]
fn params_resolve_with_defaults_in_canonical_form() {
    let text = "[[jobs]]\nname = \"d\"\nkernel = \"distgen\"\nparams = { intensity = 1, sizes_kib = 256 }\nseconds = 1\n";
    let w = ok(text);
    let Program::Kernel { params, .. } = &w.jobs[0].program else {
        panic!()
    };
    assert_eq!(params["intensity"], "1.0");
    assert_eq!(params["sizes_kib"], "256");
    assert_eq!(params["ratio"], "");
    assert_eq!(w.jobs[0].amount, Amount::Seconds(1.0));
}

#[test]
fn count_expands_names_and_dependencies() {
    let text = "[[jobs]]\nname = \"prep\"\nkernel = \"idle\"\nwork = 1\ncount = 2\n\
                [[jobs]]\nname = \"run\"\nkernel = \"idle\"\nwork = 1\ncount = 3\nafter = [\"prep\"]\narrival = 1.5\n";
    let w = ok(text);
    let names: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["prep.1", "prep.2", "run.1", "run.2", "run.3"]);
    for j in &w.jobs[2..] {
        assert_eq!(j.base_name, "run");
        assert_eq!(j.after, ["prep.1", "prep.2"]);
        assert_eq!(j.arrival, 1.5);
        assert_eq!(j.line, 6);
    }
}

#[test]
fn twins_group_copies_and_equal_programs_but_not_different_ones() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"stream\"\nwork = 5\ncount = 2\n\
                [[jobs]]\nname = \"b\"\nkernel = \"stream\"\nparams = { array_mib = 64 }\nwork = 5\narrival = 3\ncores = 2\n\
                [[jobs]]\nname = \"c\"\nkernel = \"stream\"\nparams = { array_mib = 32 }\nwork = 5\n\
                [[jobs]]\nname = \"d\"\nkernel = \"stream\"\nwork = 5\nthreads = 2\n\
                [[jobs]]\nname = \"e\"\ncommand = \"stress-ng --cpu 1\"\n\
                [[jobs]]\nname = \"f\"\ncommand = [\"stress-ng\", \"--cpu\", \"1\"]\n";
    let w = ok(text);
    assert_eq!(w.twins(), vec![vec![0, 1, 2], vec![5, 6]]);
    assert_eq!(w.jobs[0].program_key(), w.jobs[2].program_key());
    assert_ne!(w.jobs[0].program_key(), w.jobs[3].program_key());
}

#[test]
fn kernel_argv_passes_every_resolved_parameter_but_empty_ones() {
    let text =
        "[[jobs]]\nname = \"io\"\nkernel = \"fileio\"\nparams = { block_kib = 256 }\nseconds = 1\n\
                [[jobs]]\nname = \"s\"\ncommand = \"true\"\n";
    let w = ok(text);
    assert_eq!(
        w.jobs[0].kernel_argv(42),
        [
            "fileio",
            "--work",
            "42",
            "--threads",
            "1",
            "--block-kib",
            "256",
            "--file-mib",
            "16"
        ]
    );
    assert!(w.jobs[1].kernel_argv(42).is_empty());
    assert_eq!(
        w.jobs[1].program,
        Program::Command {
            argv: vec!["true".into()]
        }
    );
    assert_eq!(w.jobs[1].amount, Amount::Intrinsic);
}

#[test]
fn accelerator_only_files_get_the_implicit_host_pool_first() {
    let text = "[[pools]]\nname = \"ve\"\nkind = \"accelerator\"\ncores = 4\n\
                [[jobs]]\nname = \"v\"\nkernel = \"offload\"\nwork = 1\npool = \"ve\"\n\
                [[jobs]]\nname = \"h\"\nkernel = \"compute\"\nwork = 1\n";
    let w = ok(text);
    let names: Vec<&str> = w.pools.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["host", "ve"]);
    assert_eq!(w.pools[1].kind, PoolKind::Accelerator { host_load: 0.1 });
    assert_eq!(w.pools[1].cores, Some(4));
    assert_eq!(w.jobs[1].pool, "host");
    assert_eq!(w.host_pool().unwrap().name, "host");
}

#[test]
fn the_first_cpu_pool_is_the_host_pool_and_takes_the_rest() {
    let text = "[[pools]]\nname = \"ve\"\nkind = \"accelerator\"\nhost_load = 0.3\n\
                [[pools]]\nname = \"vh\"\n\
                [[pools]]\nname = \"side\"\ncores = 1\n\
                [[jobs]]\nname = \"h\"\nkernel = \"compute\"\nwork = 1\n";
    let w = ok_on(text, Some(8));
    let names: Vec<(&str, Option<u32>)> =
        w.pools.iter().map(|p| (p.name.as_str(), p.cores)).collect();
    assert_eq!(names, [("vh", Some(7)), ("ve", Some(1)), ("side", Some(1))]);
    assert_eq!(w.jobs[0].pool, "vh");
}

#[test]
fn name_and_description_come_from_the_file_when_given() {
    let w = ok(&format!("name = \"mine\"\ndescription = \"d\"\n{JOB}"));
    assert_eq!(
        (w.name.as_str(), w.description.as_deref()),
        ("mine", Some("d"))
    );
}

#[test]
fn inline_job_tables_work_too() {
    let w = ok("jobs = [{ name = \"a\", kernel = \"idle\", work = 3 }, { name = \"b\", command = \"true\", after = [\"a\"] }]\n");
    assert_eq!(w.jobs[1].after, ["a"]);
}

#[test]
fn resolved_workload_serializes_to_json_and_back() {
    let w = ok_on(include_str!("../../../examples/seed000.toml"), Some(2));
    let json = serde_json::to_string(&w).unwrap();
    assert!(
        json.contains(r#""kind":"accelerator","host_load":0.2"#),
        "{json}"
    );
    assert!(json.contains(r#""amount":{"seconds":3.0}"#), "{json}");
    let back: Workload = serde_json::from_str(&json).unwrap();
    assert_eq!(back, w);
}

#[test]
fn every_example_is_valid_on_a_two_core_node() {
    for (name, text) in [
        ("mixed", include_str!("../../../examples/mixed.toml")),
        ("seed000", include_str!("../../../examples/seed000.toml")),
        (
            "pair-stream",
            include_str!("../../../examples/pair-stream.toml"),
        ),
        ("twins", include_str!("../../../examples/twins.toml")),
        ("phased", include_str!("../../../examples/phased.toml")),
    ] {
        let w = parse_workload(text, &format!("examples/{name}.toml"), Some(2))
            .unwrap_or_else(|d| panic!("{name}:\n{d}"));
        assert_eq!(w.name, name);
    }
}

#[test]
fn mixed_example_has_eight_jobs_of_distinct_kinds() {
    let w = ok(include_str!("../../../examples/mixed.toml"));
    assert_eq!(w.jobs.len(), 8);
    let mut programs: Vec<String> = w
        .jobs
        .iter()
        .map(|j| match &j.program {
            Program::Kernel { name, .. } => name.clone(),
            Program::Command { argv } => argv[0].clone(),
        })
        .collect();
    programs.sort();
    assert_eq!(
        programs,
        [
            "cache",
            "compute",
            "distgen",
            "fileio",
            "pingpong",
            "stream",
            "stress-ng",
            "syscall"
        ]
    );
}

#[test]
fn seed000_example_has_two_pools_with_several_jobs_each() {
    let w = ok(include_str!("../../../examples/seed000.toml"));
    assert_eq!(w.pools.len(), 2);
    for pool in ["vh", "ve"] {
        assert!(
            w.jobs.iter().filter(|j| j.pool == pool).count() >= 3,
            "{pool}"
        );
    }
}

#[test]
fn twins_example_groups_copies_and_written_out_twins() {
    let w = ok(include_str!("../../../examples/twins.toml"));
    let groups: Vec<Vec<&str>> = w
        .twins()
        .iter()
        .map(|g| g.iter().map(|&i| w.jobs[i].name.as_str()).collect())
        .collect();
    assert_eq!(
        groups,
        [vec!["solve.1", "solve.2"], vec!["check-a", "check-b"]]
    );
    assert_eq!(w.job("post").unwrap().after, ["solve.1", "solve.2"]);
}

#[test]
fn a_syscall_rate_below_one_call_a_second_is_a_bad_value_at_its_place() {
    let text = "[[jobs]]\nname = \"a\"\nkernel = \"syscall\"\nparams = { call = \"clock\", rate = 0.5 }\nwork = 1\n";
    assert_error_at(
        text,
        4,
        35,
        &["bad value for parameter `rate` of kernel `syscall`", "`0.5` is not 0 (as fast as possible) or at least 1 call/s"],
    );
}
