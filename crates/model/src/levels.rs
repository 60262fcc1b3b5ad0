//! A domain-aware interference model: a pair's slowdown per sharing level.
//!
//! On a node with several domains the same pair hurts much or not at all
//! depending on what its two jobs share (the VM NUMA talk, the nOS-V paper: 16-37 % lost to
//! remote NUMA; this VM: cache beside cache 1.93 when two vCPUs share a
//! cache, 1.01 when they do not). A [`LevelMatrix`] holds the pair's
//! slowdown at each [`SharingLevel`] it was measured or given at, over the
//! `base` matrix: the single number per pair of a campaign that named no
//! level (what a one-domain node measures).
//!
//! The fallback, so a matrix answers at every level: a level without a
//! table of its own uses the next closer level that has one (SMT sibling
//! is the closest), and a level with none closer uses `base`. Harm
//! measured nearby overstates harm at a distance, which is the safe error
//! for a scheduler deciding whom to keep apart; harm measured at a
//! distance would understate it nearby, so it is never used for a closer
//! level. A matrix with no levels is `base` at every level: today's model,
//! exactly, and what a one-domain node gives whatever its levels.
//!
//! Pure: it holds numbers it is handed.

use crate::placement::SharingLevel;

/// Slowdowns per sharing level: `get(level, i, j)` is job (or program) i
/// beside j when the closest CPUs of the two share `level`.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelMatrix {
    base: Vec<Vec<f64>>,
    /// One table per level given, in [`SharingLevel::ALL`] order.
    tables: Vec<(SharingLevel, Vec<Vec<f64>>)>,
    /// For each level of [`SharingLevel::ALL`], the index into `tables`
    /// answering for it; `None`: `base`.
    answer: [Option<usize>; 5],
}

fn check_square(name: &str, m: &[Vec<f64>], n: usize) -> Result<(), String> {
    if m.len() != n {
        return Err(format!("{name}: {} rows for {n}", m.len()));
    }
    for (i, row) in m.iter().enumerate() {
        if row.len() != n {
            return Err(format!("{name}[{i}]: {} cells for {n}", row.len()));
        }
        if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v > 0.0)) {
            return Err(format!("{name}[{i}][{j}]: {v} is not a positive slowdown"));
        }
    }
    Ok(())
}

fn index(level: SharingLevel) -> usize {
    SharingLevel::ALL.iter().position(|&l| l == level).expect("ALL lists every level")
}

impl LevelMatrix {
    /// One number per pair at every level: today's model.
    pub fn single(base: Vec<Vec<f64>>) -> Result<LevelMatrix, String> {
        LevelMatrix::new(base, Vec::new())
    }

    /// `base` and a table per level, each square like `base` with positive
    /// finite cells; a level given twice is refused.
    pub fn new(base: Vec<Vec<f64>>, levels: Vec<(SharingLevel, Vec<Vec<f64>>)>) -> Result<LevelMatrix, String> {
        let n = base.len();
        check_square("matrix", &base, n)?;
        let mut tables = levels;
        tables.sort_by_key(|(l, _)| *l);
        for w in tables.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(format!("level {} given twice", w[0].0.name()));
            }
        }
        for (l, m) in &tables {
            check_square(l.name(), m, n)?;
        }
        let mut answer = [None; 5];
        for (k, level) in SharingLevel::ALL.iter().enumerate() {
            // The level itself, else the next closer one given.
            answer[k] = tables.iter().rposition(|(l, _)| l <= level);
        }
        Ok(LevelMatrix { base, tables, answer })
    }

    /// Number of jobs (or programs).
    pub fn len(&self) -> usize {
        self.base.len()
    }

    pub fn is_empty(&self) -> bool {
        self.base.is_empty()
    }

    /// Whether any level has a table of its own: if not, every level is `base`.
    pub fn by_level(&self) -> bool {
        !self.tables.is_empty()
    }

    /// The levels given, closest first.
    pub fn levels(&self) -> Vec<SharingLevel> {
        self.tables.iter().map(|(l, _)| *l).collect()
    }

    /// The level whose table answers for `level`, `None` for `base`.
    pub fn answers(&self, level: SharingLevel) -> Option<SharingLevel> {
        self.answer[index(level)].map(|k| self.tables[k].0)
    }

    /// i beside j with no level known (a start not yet placed, a pool off
    /// the topology): `base`.
    pub fn base(&self, i: usize, j: usize) -> f64 {
        self.base[i][j]
    }

    /// i beside j when they share `level` (`None`: no level known, `base`).
    pub fn get(&self, level: Option<SharingLevel>, i: usize, j: usize) -> f64 {
        match level.and_then(|l| self.answer[index(l)]) {
            Some(k) => self.tables[k].1[i][j],
            None => self.base[i][j],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SharingLevel::*;

    #[test]
    fn no_levels_is_the_single_number_at_every_level() {
        let m = LevelMatrix::single(vec![vec![1.4, 1.1], vec![1.2, 1.0]]).unwrap();
        assert!(!m.by_level());
        for l in SharingLevel::ALL {
            assert_eq!(m.get(Some(l), 0, 1), 1.1);
            assert_eq!(m.get(Some(l), 1, 0), 1.2);
            assert_eq!(m.answers(l), None);
        }
        assert_eq!(m.get(None, 0, 0), 1.4);
    }

    #[test]
    fn a_missing_level_uses_the_next_closer_one_then_base() {
        let t = |v: f64| vec![vec![v]];
        let m = LevelMatrix::new(t(2.0), vec![(SameNuma, t(1.3)), (SameLlc, t(1.6))]).unwrap();
        assert_eq!(m.levels(), vec![SameLlc, SameNuma], "closest first whatever the order given");
        // Nothing closer than same-llc is given: smt-sibling falls back to base.
        assert_eq!(m.get(Some(SmtSibling), 0, 0), 2.0);
        assert_eq!(m.get(Some(SameLlc), 0, 0), 1.6);
        assert_eq!(m.get(Some(SameNuma), 0, 0), 1.3);
        // Farther levels take the closest table below them: same-numa.
        assert_eq!(m.get(Some(SameSocket), 0, 0), 1.3);
        assert_eq!(m.get(Some(OtherSocket), 0, 0), 1.3);
        assert_eq!(m.answers(OtherSocket), Some(SameNuma));
        assert_eq!(m.answers(SmtSibling), None);
        assert_eq!(m.get(None, 0, 0), 2.0);
    }

    #[test]
    fn tables_must_be_square_positive_and_each_level_once() {
        let e = LevelMatrix::new(vec![vec![1.0]], vec![(SameLlc, vec![vec![1.0, 1.0]])]).unwrap_err();
        assert_eq!(e, "same-llc[0]: 2 cells for 1");
        let e = LevelMatrix::new(vec![vec![1.0]], vec![(SameLlc, vec![vec![0.0]])]).unwrap_err();
        assert_eq!(e, "same-llc[0][0]: 0 is not a positive slowdown");
        let e = LevelMatrix::new(vec![vec![1.0]], vec![(SameLlc, vec![vec![1.0]]), (SameLlc, vec![vec![1.1]])]).unwrap_err();
        assert_eq!(e, "level same-llc given twice");
        assert_eq!(LevelMatrix::single(vec![]).unwrap().len(), 0);
    }
}
