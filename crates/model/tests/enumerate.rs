use cosched_model::enumerate::{
    brute_force_placements, count_placements, count_twin_free, for_each_placement, has_twin,
    landscape, optimal_placement, placement_slowdown, EnumerateError, Pair, OPTIMAL_MAX_N,
};
use std::time::Instant;

// Deterministic pseudo-random matrix; no rand dependency in this crate.
fn random_matrix(n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n).map(|_| (0..n).map(|_| 1.0 + 0.2 * next()).collect()).collect()
}

fn collect(n: usize, twin_free_only: bool) -> Vec<Vec<Pair>> {
    let mut out = Vec::new();
    for_each_placement(n, twin_free_only, |p| out.push(p.to_vec()));
    out
}

#[test]
fn counts_match_known_sequences() {
    // OEIS A002135 and A002137; the paper's "1.4 million schedules" is n = 10.
    let all = [1u128, 1, 2, 5, 17, 73, 388, 2461, 18155, 152531, 1436714];
    let free = [1u128, 0, 1, 1, 6, 22, 130, 822, 6202, 52552, 499194];
    for n in 0..=10 {
        assert_eq!(count_placements(n), Some(all[n]), "n = {n}");
        assert_eq!(count_twin_free(n), Some(free[n]), "n = {n}");
    }
}

#[test]
fn counts_overflow_is_reported_not_wrapped() {
    let mut last = 0;
    let mut n = 0;
    while let Some(c) = count_placements(n) {
        assert!(c >= last);
        last = c;
        n += 1;
    }
    assert!(n > 20, "u128 should reach well past 20 programs, stopped at {n}");
    assert_eq!(count_placements(n + 5), None);
}

#[test]
fn counts_equal_brute_force() {
    for n in 1..=6 {
        let brute = brute_force_placements(n).unwrap();
        let free = brute.iter().filter(|p| !has_twin(p)).count() as u128;
        assert_eq!(count_placements(n), Some(brute.len() as u128), "n = {n}");
        assert_eq!(count_twin_free(n), Some(free), "n = {n}");
    }
}

#[test]
fn enumerator_produces_exactly_the_brute_force_set() {
    for n in 1..=6 {
        let brute = brute_force_placements(n).unwrap();
        let mut listed = collect(n, false);
        // Canonical form is part of the contract: pairs ordered, a <= b.
        for p in &listed {
            assert!(p.windows(2).all(|w| w[0] <= w[1]));
            assert!(p.iter().all(|&(a, b)| a <= b));
        }
        listed.sort();
        assert_eq!(listed, brute, "n = {n}");
        let mut free = collect(n, true);
        free.sort();
        let brute_free: Vec<_> = brute.into_iter().filter(|p| !has_twin(p)).collect();
        assert_eq!(free, brute_free, "n = {n}");
    }
}

#[test]
fn brute_force_refuses_large_n() {
    assert!(matches!(brute_force_placements(8), Err(EnumerateError::TooLarge { .. })));
}

#[test]
fn slowdown_of_a_placement() {
    let s = vec![vec![1.5, 1.1], vec![1.3, 1.0]];
    let twins = placement_slowdown(&s, &[(0, 0), (1, 1)]);
    assert!((twins.total - 5.0).abs() < 1e-12);
    assert!((twins.average - 1.25).abs() < 1e-12);
    assert_eq!(twins.worst, 1.5);
    let mixed = placement_slowdown(&s, &[(0, 1), (0, 1)]);
    assert!((mixed.average - 1.2).abs() < 1e-12);
    assert_eq!(mixed.worst, 1.3);
}

#[test]
fn optimum_on_hand_made_matrix_equals_brute_force_minimum() {
    // Program 0 is a heavy memory user: it hurts its twin most, so the best
    // schedule spreads it out beside the light program 2.
    let s = vec![
        vec![1.60, 1.30, 1.05],
        vec![1.25, 1.20, 1.02],
        vec![1.04, 1.03, 1.01],
    ];
    let brute = brute_force_placements(3).unwrap();
    let (best, best_total) = brute
        .iter()
        .map(|p| (p.clone(), placement_slowdown(&s, p).total))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    let opt = optimal_placement(&s, true).unwrap().unwrap();
    assert!((opt.slowdown.total - best_total).abs() < 1e-12);
    assert_eq!(opt.placement, best);
    assert_eq!(opt.placement, vec![(0, 2), (0, 2), (1, 1)]);

    let free_best = brute
        .iter()
        .filter(|p| !has_twin(p))
        .map(|p| placement_slowdown(&s, p).total)
        .fold(f64::INFINITY, f64::min);
    let opt_free = optimal_placement(&s, false).unwrap().unwrap();
    assert!(!has_twin(&opt_free.placement));
    assert!((opt_free.slowdown.total - free_best).abs() < 1e-12);
}

#[test]
fn optimum_equals_enumerated_minimum_on_random_matrices() {
    for (n, seed) in [(2, 1), (4, 2), (5, 3), (7, 4)] {
        let s = random_matrix(n, seed);
        let mut min_all = f64::INFINITY;
        let mut min_free = f64::INFINITY;
        for_each_placement(n, false, |p| {
            let t = placement_slowdown(&s, p).total;
            min_all = min_all.min(t);
            if !has_twin(p) {
                min_free = min_free.min(t);
            }
        });
        let opt = optimal_placement(&s, true).unwrap().unwrap();
        assert!((opt.slowdown.total - min_all).abs() < 1e-9, "n = {n}");
        let opt_free = optimal_placement(&s, false).unwrap().unwrap();
        assert!((opt_free.slowdown.total - min_free).abs() < 1e-9, "n = {n}");
    }
}

#[test]
fn optimum_edge_cases() {
    let one = vec![vec![1.3]];
    assert_eq!(optimal_placement(&one, true).unwrap().unwrap().placement, vec![(0, 0)]);
    assert_eq!(optimal_placement(&one, false).unwrap(), None);
    let big = random_matrix(OPTIMAL_MAX_N + 1, 9);
    assert!(matches!(optimal_placement(&big, true), Err(EnumerateError::TooLarge { .. })));
    assert_eq!(optimal_placement(&[], true), Err(EnumerateError::Empty));
    let ragged = vec![vec![1.0, 1.0], vec![1.0]];
    assert!(matches!(landscape(&ragged, 10), Err(EnumerateError::NotSquare { row: 1, .. })));
    let nan = vec![vec![1.0, f64::NAN], vec![1.0, 1.0]];
    assert_eq!(landscape(&nan, 10), Err(EnumerateError::NotFinite { row: 0, col: 1 }));
    assert_eq!(landscape(&one, 0), Err(EnumerateError::NoBins));
}

#[test]
fn landscape_of_single_program_has_no_twin_free_population() {
    let l = landscape(&[vec![1.3]], 4).unwrap();
    assert_eq!(l.all.count, 1);
    assert_eq!(l.twin_free, None);
    assert_eq!(l.all.average.min, 1.3);
}

#[test]
fn landscape_small_matches_direct_computation() {
    let n = 6;
    let s = random_matrix(n, 11);
    let l = landscape(&s, 25).unwrap();
    let brute = brute_force_placements(n).unwrap();
    let avgs: Vec<f64> = brute.iter().map(|p| placement_slowdown(&s, p).average).collect();
    let mean = avgs.iter().sum::<f64>() / avgs.len() as f64;
    assert_eq!(l.all.count, brute.len() as u64);
    assert!((l.all.average.mean - mean).abs() < 1e-12);
    assert_eq!(l.all.average.min, avgs.iter().copied().fold(f64::INFINITY, f64::min));
    assert_eq!(l.all.average.max, avgs.iter().copied().fold(f64::NEG_INFINITY, f64::max));
    let free = l.twin_free.unwrap();
    assert_eq!(free.count as u128, count_twin_free(n).unwrap());
    assert!(free.average.min >= l.all.average.min);
    assert!(free.worst.max <= l.all.worst.max);
}

#[test]
fn landscape_ten_programs_histograms_total_the_counts() {
    let n = 10;
    let s = random_matrix(n, 2024);
    let start = Instant::now();
    let l = landscape(&s, 40).unwrap();
    let elapsed = start.elapsed();
    let free = l.twin_free.as_ref().unwrap();
    println!(
        "n = {n}: {} placements ({} twin-free) in {:?}; avg slowdown all {:.4}/{:.4}/{:.4}, \
         twin-free {:.4}/{:.4}/{:.4} (min/mean/max)",
        l.all.count,
        free.count,
        elapsed,
        l.all.average.min,
        l.all.average.mean,
        l.all.average.max,
        free.average.min,
        free.average.mean,
        free.average.max,
    );
    assert_eq!(l.all.count as u128, count_placements(n).unwrap());
    assert_eq!(free.count as u128, count_twin_free(n).unwrap());
    for pop in [&l.all, free] {
        assert_eq!(pop.average.histogram.total(), pop.count);
        assert_eq!(pop.worst.histogram.total(), pop.count);
        assert!(pop.average.min <= pop.average.mean && pop.average.mean <= pop.average.max);
        assert!(pop.average.max <= pop.worst.max);
    }
    let opt = optimal_placement(&s, true).unwrap().unwrap();
    assert!((opt.slowdown.average - l.all.average.min).abs() < 1e-9);
    let opt_free = optimal_placement(&s, false).unwrap().unwrap();
    assert!((opt_free.slowdown.average - free.average.min).abs() < 1e-9);
}

/// Table 2's groups on a matrix whose twin slowdowns rank the programs
/// 0 < 1 < ... < 9: low = {0, 1, 2}, mid = {3..6}, high = {7, 8, 9}. The
/// counts are placements holding a twin of k given programs out of 10,
/// counted independently (a canonical-order recursion over the multiset,
/// outside this crate): k = 3: 405,589; k = 4: 510,650; k = 10: 937,520,
/// which with the 499,194 twin-free ones make the 1,436,714.
#[test]
fn twin_groups_split_the_twins_into_thirds_by_their_slowdown() {
    let n = 10;
    let mut s = random_matrix(n, 7);
    for (i, row) in s.iter_mut().enumerate() {
        row[i] = 1.0 + 0.1 * i as f64;
    }
    let l = landscape(&s, 10).unwrap();
    let g: Vec<(&str, Vec<usize>, u64)> =
        l.twin_groups.iter().map(|g| (g.name, g.programs.clone(), g.population.as_ref().unwrap().count)).collect();
    assert_eq!(
        g,
        vec![
            ("all twins", (0..10).collect(), 937_520),
            ("low twins", vec![0, 1, 2], 405_589),
            ("mid twins", vec![3, 4, 5, 6], 510_650),
            ("high twins", vec![7, 8, 9], 405_589),
        ]
    );
    assert_eq!(l.twin_free.as_ref().unwrap().count + g[0].2, l.all.count);
    // Holding a high twin (the worst pairs on the diagonal) is worse on
    // average than holding none.
    let high = l.twin_groups[3].population.as_ref().unwrap();
    assert!(high.average.mean > l.twin_free.as_ref().unwrap().average.mean);
}
