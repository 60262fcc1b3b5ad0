//! Properties of the workload parser over generated input: it never panics,
//! its diagnostics always point inside the text, and a generated valid
//! workload resolves to exactly what was written.

use cosched_model::workload::{parse_workload, Amount, Program};
use proptest::prelude::*;

const MIXED: &str = include_str!("../../../examples/mixed.toml");

/// Every diagnostic lies within the text: a line that exists (or the one
/// just past a final newline) and a column no further than its end + 1.
fn assert_positions_inside(text: &str, node_cores: Option<u32>) {
    if let Err(d) = parse_workload(text, "p.toml", node_cores) {
        assert!(
            !d.0.is_empty(),
            "an error result carries at least one diagnostic"
        );
        let lines: Vec<&str> = text.split('\n').collect();
        for x in &d.0 {
            assert!(
                x.line >= 1 && (x.line as usize) <= lines.len(),
                "{x} in {text:?}"
            );
            let len = lines[x.line as usize - 1].chars().count() as u32;
            assert!(x.col >= 1 && x.col <= len + 1, "{x} in {text:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        assert_positions_inside(&text, Some(2));
    }

    #[test]
    fn toml_like_text_never_panics(text in "([a-z_\\[\\]=\"{}., 0-9\\n-]|jobs|kernel|pools|after|count){0,120}") {
        assert_positions_inside(&text, Some(2));
        assert_positions_inside(&text, None);
    }

    #[test]
    fn edits_of_a_valid_example_never_panic(
        at in 0usize..MIXED.len(),
        cut in 0usize..40,
        insert in "[a-z0-9 =\"\\[\\]{},.\\n-]{0,6}",
    ) {
        let mut at = at;
        while !MIXED.is_char_boundary(at) { at -= 1; }
        let mut end = (at + cut).min(MIXED.len());
        while !MIXED.is_char_boundary(end) { end -= 1; }
        let text = format!("{}{}{}", &MIXED[..at], insert, &MIXED[end..]);
        assert_positions_inside(&text, Some(2));
    }
}

#[derive(Debug, Clone)]
struct GenJob {
    kernel: &'static str,
    params: &'static str,
    amount: GenAmount,
    threads: u32,
    count: u32,
    arrival_ms: u32,
    /// Depend on the job this many places earlier (0: none), so the graph
    /// is acyclic by construction.
    after_back: usize,
}

#[derive(Debug, Clone)]
enum GenAmount {
    Work(u64),
    Seconds(u32),
    Command,
}

fn gen_job() -> impl Strategy<Value = GenJob> {
    let kernels = prop_oneof![
        Just(("compute", "", true)),
        Just(("stream", "params = { array_mib = 32 }", true)),
        Just(("cache", "", true)),
        Just(("syscall", "", true)),
        Just(("fileio", "params = { file_mib = 4, block_kib = 64 }", false)),
        Just(("pingpong", "params = { transport = \"unix\" }", false)),
        Just((
            "distgen",
            "params = { sizes_kib = \"64,4096\", intensity = 0.5 }",
            true
        )),
        Just(("offload", "params = { host_load = 0.25 }", false)),
        Just(("stress-ng", "", false)),
    ];
    (
        kernels,
        1u64..1_000_000,
        1u32..10,
        any::<bool>(),
        1u32..5,
        1u32..4,
        0u32..5000,
        0usize..4,
    )
        .prop_map(
            |(
                (kernel, params, threaded),
                work,
                secs,
                use_work,
                threads,
                count,
                arrival_ms,
                after_back,
            )| GenJob {
                kernel,
                params,
                amount: if kernel == "stress-ng" {
                    GenAmount::Command
                } else if use_work {
                    GenAmount::Work(work)
                } else {
                    GenAmount::Seconds(secs)
                },
                threads: if threaded { threads } else { 1 },
                count,
                arrival_ms,
                after_back,
            },
        )
}

fn render(jobs: &[GenJob]) -> String {
    let mut out = String::from("name = \"gen\"\n");
    for (i, j) in jobs.iter().enumerate() {
        out.push_str(&format!("\n[[jobs]]\nname = \"j{i}\"\n"));
        match j.amount {
            GenAmount::Command => out.push_str("command = \"stress-ng --cpu 1 --cpu-ops 10\"\n"),
            GenAmount::Work(w) => out.push_str(&format!("kernel = \"{}\"\nwork = {w}\n", j.kernel)),
            GenAmount::Seconds(s) => {
                out.push_str(&format!("kernel = \"{}\"\nseconds = {s}\n", j.kernel))
            }
        }
        if !j.params.is_empty() {
            out.push_str(j.params);
            out.push('\n');
        }
        out.push_str(&format!(
            "threads = {}\ncount = {}\narrival = {}\n",
            j.threads,
            j.count,
            j.arrival_ms as f64 / 1000.0
        ));
        if j.after_back > 0 && j.after_back <= i {
            out.push_str(&format!("after = [\"j{}\"]\n", i - j.after_back));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn generated_valid_workloads_resolve_to_what_was_written(jobs in prop::collection::vec(gen_job(), 1..12)) {
        let text = render(&jobs);
        let w = parse_workload(&text, "gen.toml", Some(4)).unwrap_or_else(|d| panic!("{d}\n---\n{text}"));
        prop_assert_eq!(w.jobs.len(), jobs.iter().map(|j| j.count as usize).sum::<usize>());
        let mut resolved = w.jobs.iter();
        for (i, g) in jobs.iter().enumerate() {
            let copies: Vec<_> = resolved.by_ref().take(g.count as usize).collect();
            for (k, job) in copies.iter().enumerate() {
                let name = if g.count == 1 { format!("j{i}") } else { format!("j{i}.{}", k + 1) };
                prop_assert_eq!(&job.name, &name);
                prop_assert_eq!(&job.base_name, &format!("j{i}"));
                prop_assert_eq!(job.threads, g.threads);
                prop_assert_eq!(job.cores, g.threads);
                prop_assert_eq!(job.arrival, g.arrival_ms as f64 / 1000.0);
                match (&g.amount, &job.amount, &job.program) {
                    (GenAmount::Work(a), Amount::Work(b), Program::Kernel { name, .. }) => {
                        prop_assert_eq!(a, b);
                        prop_assert_eq!(name, g.kernel);
                        let argv = job.kernel_argv(*a);
                        prop_assert_eq!(&argv[..5], &[g.kernel.to_string(), "--work".into(), a.to_string(), "--threads".into(), g.threads.to_string()]);
                    }
                    (GenAmount::Seconds(a), Amount::Seconds(b), Program::Kernel { .. }) => prop_assert_eq!(*a as f64, *b),
                    (GenAmount::Command, Amount::Intrinsic, Program::Command { argv }) => prop_assert_eq!(argv[0].as_str(), "stress-ng"),
                    other => prop_assert!(false, "mismatch {:?}", other),
                }
                let dep = (g.after_back > 0 && g.after_back <= i).then(|| i - g.after_back);
                prop_assert_eq!(job.after.is_empty(), dep.is_none());
            }
        }
        // Copies made by `count` always land in one twin group.
        let twins = w.twins();
        for (i, g) in jobs.iter().enumerate().filter(|(_, g)| g.count > 1) {
            let idx: Vec<usize> = w.jobs.iter().enumerate().filter(|(_, j)| j.base_name == format!("j{i}")).map(|(k, _)| k).collect();
            prop_assert!(twins.iter().any(|grp| idx.iter().all(|k| grp.contains(k))), "{:?} not twins in {:?} ({:?})", idx, twins, g);
        }
        // The resolved workload survives JSON unchanged.
        let back: cosched_model::workload::Workload = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
        prop_assert_eq!(back, w);
    }
}

#[test]
fn a_long_dependency_chain_does_not_overflow_the_stack() {
    let mut text = String::new();
    for i in 0..5_000 {
        text.push_str(&format!(
            "[[jobs]]\nname = \"j{i}\"\nkernel = \"idle\"\nwork = 1\n"
        ));
        if i > 0 {
            text.push_str(&format!("after = [\"j{}\"]\n", i - 1));
        }
    }
    let w = parse_workload(&text, "chain.toml", Some(2)).unwrap();
    assert_eq!(w.jobs.len(), 5_000);
    // Closing the chain into a loop is reported once, from its first job.
    text.push_str("[[jobs]]\nname = \"loop\"\nkernel = \"idle\"\nwork = 1\nafter = [\"j4999\"]\n");
    text = text.replacen(
        "name = \"j0\"\nkernel = \"idle\"\nwork = 1\n",
        "name = \"j0\"\nkernel = \"idle\"\nwork = 1\nafter = [\"loop\"]\n",
        1,
    );
    let d = parse_workload(&text, "chain.toml", Some(2)).unwrap_err();
    assert_eq!(d.0.len(), 1);
    let m = &d.0[0].message;
    assert!(
        m.starts_with("dependency cycle: j0 -> loop -> j4999 -> j4998"),
        "{m}"
    );
    // A long cycle is shortened to stay readable.
    assert!(
        m.contains("(4992 more)") && m.ends_with("j1 -> j0 (each job waits for the next)"),
        "{m}"
    );
}
