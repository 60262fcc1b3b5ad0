//! Fuzzing of the workload parser for a fixed budget (cargo-fuzz needs a
//! nightly toolchain this project does not require): random edits of the
//! example files and of hostile fragments (huge numbers, deep nesting, long
//! names, NUL bytes, counts that expand past the limit). No input may panic,
//! and each must come back with a result (a hang would stop the test); the
//! process's peak memory stays bounded. `COSCHED_FUZZ_SECONDS` runs it for
//! that long instead of the default number of inputs (scripts/fuzz.sh),
//! `COSCHED_FUZZ_SEED` picks another sequence; it prints how many inputs
//! ran.

use cosched_model::workload::{parse_workload_on, NodeLimits};

const CORPUS: [&str; 7] = [
    include_str!("../../../examples/mixed.toml"),
    include_str!("../../../examples/characterize.toml"),
    include_str!("../../../examples/phased.toml"),
    include_str!("../../../examples/twins.toml"),
    include_str!("../../../examples/arrivals.toml"),
    include_str!("../../../examples/seed000.toml"),
    include_str!("../../../examples/few-bad.toml"),
];

const FRAGMENTS: [&str; 32] = [
    "count = 100000000\n",
    "count = 99999\n",
    "memory_mib = 17592186044416\n",
    "memory_mib = 9223372036854775807\n",
    "seconds = 1e308\n",
    "arrival = 1e300\n",
    "timeout = -0.0\n",
    "seconds = nan\n",
    "seconds = inf\n",
    "params = { array_mib = 1000000000 }\n",
    "params = { n = 4294967295 }\n",
    "params = { phases = \"compute:4096x1000000000\" }\n",
    "threads = 4294967295\n",
    "cores = 0\n",
    "after = [\"a\", \"a\", \"b\"]\n",
    "name = \"tasks\"\n",
    "env = { A = \"\\u0000\" }\n",
    "output = \"{job}{run}{repeat}{x}\"\n",
    "output = { stdout = \"\", stderr = 1 }\n",
    "workdir = \"\"\n",
    "[[jobs]]\n",
    "[[pools]]\nname = \"p\"\ncores = 4096\n",
    "[jobs]\n",
    "x = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
    "a.b.c.d.e.f.g.h = 1\n",
    "\"\\uD800\" = 1\n",
    "command = [\"sh\", \"-c\", \"true\"]\n",
    "kernel = \"stream\"\nwork = 1\n",
    "after = [\"tri.1\"]\n",
    "1979-05-27T07:32:00Z = 1\n",
    "\u{0}\u{1}\u{7f}",
    "\r\n\t \"\"\"\n",
];

/// xorshift64*: a fixed, dependency-free sequence, so a failure can be
/// replayed from its seed and index.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One input: a corpus file with a few random cuts, duplications and
/// insertions of fragments or random bytes, or a long pathological line.
fn input(r: &mut Rng) -> String {
    match r.below(10) {
        0 => {
            // Deep nesting and long runs, as an attacker would send.
            let n = 1 + r.below(200_000);
            let c = ["[", "{a=", "[[", "\"", "a.", "#"][r.below(6)];
            format!("x = {}", c.repeat(n))
        }
        1 => format!("[[jobs]]\nname = \"{}\"\ncommand = \"true\"\n", "n".repeat(r.below(100_000))),
        _ => {
            let mut s = CORPUS[r.below(CORPUS.len())].to_string();
            for _ in 0..1 + r.below(6) {
                let at = boundary(&s, r.below(s.len() + 1));
                match r.below(4) {
                    0 => s.insert_str(at, FRAGMENTS[r.below(FRAGMENTS.len())]),
                    1 => {
                        let end = boundary(&s, at + r.below(80));
                        s.replace_range(at..end, "");
                    }
                    2 => {
                        let end = boundary(&s, at + r.below(200));
                        let copy = s[at..end].to_string();
                        s.insert_str(at, &copy);
                    }
                    _ => {
                        let bytes: Vec<u8> = (0..1 + r.below(8)).map(|_| r.next() as u8).collect();
                        s.insert_str(at, &String::from_utf8_lossy(&bytes));
                    }
                }
            }
            s
        }
    }
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

#[test]
fn random_workloads_never_panic_hang_or_grow_without_bound() {
    let seed: u64 = std::env::var("COSCHED_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5e_ed_19);
    let budget = std::env::var("COSCHED_FUZZ_SECONDS").ok().and_then(|s| s.parse::<f64>().ok());
    let mut r = Rng(seed | 1);
    let start = std::time::Instant::now();
    let nodes = [
        NodeLimits { cores: Some(2), memory_mib: Some(24_000) },
        NodeLimits { cores: None, memory_mib: None },
        NodeLimits { cores: Some(4096), memory_mib: Some(1) },
    ];
    let mut runs = 0u64;
    let mut accepted = 0u64;
    loop {
        let done = match budget {
            Some(s) => start.elapsed().as_secs_f64() >= s,
            None => runs >= 10_000,
        };
        if done {
            break;
        }
        let text = input(&mut r);
        let node = &nodes[(runs % 3) as usize];
        let result = std::panic::catch_unwind(|| parse_workload_on(&text, "fuzz.toml", node));
        match result {
            Ok(Ok(w)) => {
                accepted += 1;
                assert!(w.jobs.len() as u64 <= cosched_model::workload::limits::MAX_JOBS);
            }
            Ok(Err(d)) => assert!(!d.0.is_empty()),
            Err(_) => panic!("the parser panicked on input {runs} of seed {seed}:\n{text:?}"),
        }
        runs += 1;
    }
    let peak = peak_rss_kib();
    println!("fuzz workload: {runs} inputs ({accepted} valid) in {:.1} s, seed {seed}, peak RSS {peak} KiB", start.elapsed().as_secs_f64());
    assert!(peak < 1 << 20, "peak RSS {peak} KiB: memory grew past 1 GiB");
}
