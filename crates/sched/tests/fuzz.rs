//! Fuzzing of the scenario parser for a fixed budget, as
//! crates/model/tests/fuzz.rs does for workloads: random edits of the
//! example scenarios and hostile fragments; no panic, every input answered,
//! peak memory bounded, and what is accepted simulates to finite figures.
//! `COSCHED_FUZZ_SECONDS` / `COSCHED_FUZZ_SEED` as there (scripts/fuzz.sh).

use cosched_sched::scenario::Scenario;

const CORPUS: [&str; 3] = [
    include_str!("../../../examples/scenarios/seed000.toml"),
    include_str!("../../../examples/scenarios/few-bad.toml"),
    include_str!("../../../examples/scenarios/memory-half.toml"),
];

const FRAGMENTS: [&str; 20] = [
    "solo = 1e308\n",
    "solo = 1e8\n",
    "count = 100000000\n",
    "count = 18446744073709551615\n",
    "nodes = 100000000\n",
    "nodes = 0\n",
    "cores = 4294967295\n",
    "host_load = nan\n",
    "matrix = [[1e300]]\n",
    "matrix = [[0.0, -1.0], [inf, 1.0]]\n",
    "[[programs]]\nname = \"z\"\npool = \"vh\"\nsolo = 1.0\ncount = 1\n",
    "[[pools]]\nname = \"q\"\ncores = 1\nkind = \"cpu\"\n",
    "[slowdown]\n",
    "store = \"w\"\n",
    "file = \"/dev/zero\"\n",
    "statistic = \"mean\"\n",
    "x = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
    "\u{0}\u{7f}",
    "measured = \"\"\n",
    "kind = \"accelerator\"\n",
];

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

fn input(r: &mut Rng) -> String {
    if r.below(12) == 0 {
        let c = ["[", "{a=", "\"", "a."][r.below(4)];
        return format!("x = {}", c.repeat(1 + r.below(100_000)));
    }
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

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

#[test]
fn random_scenarios_never_panic_hang_or_grow_without_bound() {
    let seed: u64 = std::env::var("COSCHED_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5e_ed_19);
    let budget = std::env::var("COSCHED_FUZZ_SECONDS").ok().and_then(|s| s.parse::<f64>().ok());
    let mut r = Rng(seed | 1);
    let start = std::time::Instant::now();
    let (mut runs, mut accepted) = (0u64, 0u64);
    loop {
        let done = match budget {
            Some(s) => start.elapsed().as_secs_f64() >= s,
            None => runs >= 10_000,
        };
        if done {
            break;
        }
        let text = input(&mut r);
        match std::panic::catch_unwind(|| Scenario::parse(&text, "fuzz.toml")) {
            Ok(Ok(s)) => {
                accepted += 1;
                assert!(s.jobs().len() <= cosched_sched::scenario::limits::MAX_JOBS);
                assert!(s.programs.iter().all(|p| p.solo.is_finite() && p.solo <= cosched_sched::scenario::limits::MAX_SOLO_S));
            }
            Ok(Err(e)) => assert!(!e.message.is_empty()),
            Err(_) => panic!("the scenario parser panicked on input {runs} of seed {seed}:\n{text:?}"),
        }
        runs += 1;
    }
    let peak = peak_rss_kib();
    println!("fuzz scenario: {runs} inputs ({accepted} valid) in {:.1} s, seed {seed}, peak RSS {peak} KiB", start.elapsed().as_secs_f64());
    assert!(peak < 1 << 20, "peak RSS {peak} KiB: memory grew past 1 GiB");
}
