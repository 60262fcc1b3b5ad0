//! The SWF reader on random input: it may refuse, never panic, and what
//! it refuses names a line of the input.

use cosched_cluster::swf::parse;
use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        (-5i64..100_000).prop_map(|v| v.to_string()),
        (-1.0e6f64..1.0e6).prop_map(|v| v.to_string()),
        Just("-1".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("1e400".to_string()),
        "[ -~]{0,6}",
    ]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(token(), 0..22).prop_map(|t| t.join(" ")),
        prop::collection::vec(token(), 18).prop_map(|t| t.join("\t")),
        "; [A-Za-z]{1,12}: [ -~]{0,12}",
        "[ -~]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = parse(&text, "fuzz.swf") {
            prop_assert!(e.to_string().starts_with("fuzz.swf:"));
        }
    }

    #[test]
    fn random_lines_are_read_or_refused_with_their_line(lines in prop::collection::vec(line(), 0..12)) {
        let text = lines.join("\n");
        match parse(&text, "fuzz.swf") {
            Ok(swf) => {
                for r in &swf.records {
                    prop_assert!(r.line >= 1 && r.line <= lines.len());
                    prop_assert!(r.submit >= 0.0 && r.run.is_finite());
                }
            }
            Err(e) => {
                let line = e.line.expect("a record error names its line");
                prop_assert!(line >= 1 && line <= lines.len(), "line {line} of {}", lines.len());
            }
        }
    }
}

/// The same random traces for a time budget: `COSCHED_FUZZ_SECONDS=600`
/// (scripts/fuzz.sh sets it) runs them for that long and prints how many
/// ran; without it the proptests above are the suite's share.
#[test]
fn random_traces_for_a_time_budget() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let Some(secs) = std::env::var("COSCHED_FUZZ_SECONDS").ok().and_then(|s| s.parse::<f64>().ok()) else {
        return;
    };
    let mut runner = TestRunner::deterministic();
    let traces = prop::collection::vec(line(), 0..40);
    let bytes = prop::collection::vec(any::<u8>(), 0..2000);
    let start = std::time::Instant::now();
    let mut runs = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        let text = if runs.is_multiple_of(2) {
            traces.new_tree(&mut runner).unwrap().current().join("\n")
        } else {
            String::from_utf8_lossy(&bytes.new_tree(&mut runner).unwrap().current()).into_owned()
        };
        let outcome = std::panic::catch_unwind(|| parse(&text, "fuzz.swf").map(|s| s.records.len()));
        assert!(outcome.is_ok(), "the SWF reader panicked on {text:?}");
        runs += 1;
    }
    println!("fuzz swf: {runs} inputs in {secs} s, no panic");
}
