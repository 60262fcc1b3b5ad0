//! The script's answer: its decision tables read into the engine's
//! decisions and checked by the engine's one validation
//! (`cosched_engine::validate::check_view`), so a decision an engine would
//! refuse reaches the fallback, not the engine, and is refused for the same
//! reason in every engine.

use cosched_engine::policy::{Decision, View};
use cosched_engine::validate::{check_view, Refusal};
use cosched_engine::JobId;
use mlua::{Table, Value};

use crate::policy::{message, whole};

/// The decisions a script returned: `nil` or a list of tables.
pub(crate) fn decisions(out: &Value, view: &View) -> Result<Vec<Decision>, String> {
    let list = match out {
        Value::Nil => return Ok(Vec::new()),
        Value::Table(t) => t,
        other => return Err(format!("returned a {}, not a list of decisions such as {{{{start = job.id}}}}", other.type_name())),
    };
    let mut ds = Vec::new();
    for (k, d) in list.clone().sequence_values::<Value>().enumerate() {
        let d = d.map_err(|e| message(&e))?;
        let Value::Table(d) = d else {
            return Err(format!("decision {} is a {}, not a table such as {{start = job.id}}", k + 1, d.type_name()));
        };
        ds.push(decision(&d, view).map_err(|e| format!("decision {}: {e}", k + 1))?);
    }
    Ok(ds)
}

/// One decision table as an engine decision. Each kind of decision is one
/// key naming its job, as the Rust `Decision` variant it becomes (`start`,
/// `suspend`, `resume`, `move`); a new kind the engine learns is one more
/// arm here.
fn decision(d: &Table, view: &View) -> Result<Decision, String> {
    let id = |key: &str| -> Result<Option<JobId>, String> {
        match d.raw_get::<Value>(key).map_err(|e| message(&e))? {
            Value::Nil => Ok(None),
            Value::Table(t) => match whole(&t.raw_get::<Value>("id").map_err(|e| message(&e))?) {
                Some(i) if i >= 0 => Ok(Some(i as usize)),
                _ => Err(format!("`{key}` is a table without a job id")),
            },
            other => match whole(&other) {
                Some(i) if i >= 0 => Ok(Some(i as usize)),
                _ => Err(format!("`{key}` is a {}, not a job id", other.type_name())),
            },
        }
    };
    if let Some(job) = id("start")? {
        match d.raw_get::<Value>("variant").map_err(|e| message(&e))? {
            Value::Nil => {}
            // A variant table from `job.variants`.
            Value::Table(t) => match whole(&t.raw_get::<Value>("index").map_err(|e| message(&e))?) {
                Some(k) if k >= 1 => return Ok(Decision::StartVariant { job, variant: k as usize - 1 }),
                _ => return Err("`variant` is a table without an index; expected a variant number or a table of job.variants".into()),
            },
            other => match whole(&other) {
                Some(k) if k >= 1 => return Ok(Decision::StartVariant { job, variant: k as usize - 1 }),
                _ => return Err(format!("`variant` is {other:?}; expected a variant number from 1 (job.variants[k].index)")),
            },
        }
        let pool = match d.raw_get::<Value>("pool").map_err(|e| message(&e))? {
            Value::Nil => view.queue.iter().find(|q| q.id == job).map_or(usize::MAX, |q| q.pool),
            other => match whole(&other) {
                Some(p) if p >= 1 => p as usize - 1,
                _ => return Err(format!("`pool` is {other:?}; expected a pool number from 1 to {}", view.pools.len())),
            },
        };
        return Ok(Decision::Start { job, pool });
    }
    if let Some(job) = id("suspend")? {
        return Ok(Decision::Suspend { job });
    }
    if let Some(job) = id("resume")? {
        return Ok(Decision::Resume { job });
    }
    if let Some(job) = id("move")? {
        let cores = match d.raw_get::<Value>("cores").map_err(|e| message(&e))? {
            Value::Table(t) => {
                let mut cores = Vec::new();
                for v in t.sequence_values::<Value>() {
                    match whole(&v.map_err(|e| message(&e))?) {
                        Some(c) if (0..=i64::from(u32::MAX)).contains(&c) => cores.push(c as u32),
                        _ => return Err("`cores` holds something other than core numbers; expected a list such as {0, 1}".into()),
                    }
                }
                cores
            }
            other => return Err(format!("`cores` is a {}; expected a list of the pool's core numbers from 0, such as {{0, 1}}", other.type_name())),
        };
        return Ok(Decision::Move { job, cores });
    }
    Err("expected {start = JOB[, pool = P | variant = K]}, {suspend = JOB}, {resume = JOB} or {move = JOB, cores = {C, ...}}".into())
}


/// The engine's check of a batch of decisions on the view they were made
/// on; the refusal is told in the script's numbers (pools and variants
/// from 1, cores from 0 as in `job.cpus`).
pub(crate) fn check(view: &View, ds: &[Decision]) -> Result<(), String> {
    // Nothing to refuse in an empty answer (a quarter of a simulation's
    // answers), and the check builds the node's core map each time.
    if ds.is_empty() || fit(view, ds) {
        return Ok(());
    }
    check_view(view, ds).map(drop).map_err(|(k, why)| format!("decision {}: {}", k + 1, in_lua_numbers(why)))
}

/// Whether `check_view` surely accepts `ds`, found by counting cores
/// rather than building the node's core map: every decision starts a
/// different waiting job of one way (no variants) on its own pool, and the
/// pool's free cores, counted as `check_view` places the running jobs,
/// cover the starts before it and this one. `false` says only that the
/// count cannot tell (anything else, or a node it does not cover), and
/// `check_view` decides. The simulator's every answer of a strategy that
/// only starts jobs is this case.
fn fit(view: &View, ds: &[Decision]) -> bool {
    // Per pool, as `check_view`'s map holds them: the named cores of the
    // running (not suspended) jobs, then `cores` more for each such job
    // without named cores, from the cores still free.
    const MOST: usize = 8;
    let pools = view.pools.len();
    if pools > MOST || view.pools.iter().any(|p| p.cores > 128) {
        return false;
    }
    let mut busy = [0u128; MOST];
    let mut unnamed = [0u32; MOST];
    for r in view.running.iter().filter(|r| !r.suspended && r.pool < pools) {
        if r.cpus.is_empty() {
            unnamed[r.pool] += r.cores;
            continue;
        }
        for &c in r.cpus {
            if c >= view.pools[r.pool].cores {
                return false;
            }
            busy[r.pool] |= 1u128 << c;
        }
    }
    let mut free = [0u32; MOST];
    for p in 0..pools {
        // Fewer free cores than the unnamed jobs hold: `check_view`
        // overbooks them, which no count follows.
        match (view.pools[p].cores - busy[p].count_ones()).checked_sub(unnamed[p]) {
            Some(f) => free[p] = f,
            None => return false,
        }
    }
    for (k, d) in ds.iter().enumerate() {
        let Decision::Start { job, pool } = *d else { return false };
        if ds[..k].iter().any(|e| e.job() == job) || view.running.iter().any(|r| r.id == job) {
            return false;
        }
        let Some(q) = view.queue.iter().find(|q| q.id == job) else { return false };
        if !q.variants.is_empty() || q.pool != pool || pool >= pools || q.cores > free[pool] {
            return false;
        }
        free[pool] -= q.cores;
    }
    true
}

/// A refusal with its pool and variant numbers as a script writes them.
fn in_lua_numbers(r: Refusal) -> Refusal {
    let p = |pool: usize| pool.wrapping_add(1);
    match r {
        Refusal::WrongPool { job, pool, belongs } => Refusal::WrongPool { job, pool: p(pool), belongs: p(belongs) },
        Refusal::NoRoom { job, pool, needs, free } => Refusal::NoRoom { job, pool: p(pool), needs, free },
        Refusal::NoSuchCore { job, pool, core, cores } => Refusal::NoSuchCore { job, pool: p(pool), core, cores },
        Refusal::Busy { job, pool, core } => Refusal::Busy { job, pool: p(pool), core },
        Refusal::NoSuchVariant { job, variant, variants } => Refusal::NoSuchVariant { job, variant: variant + 1, variants },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_engine::policy::{PoolInfo, QueuedJob, RunningJob, Variant};
    use cosched_engine::SlowdownSource;
    use cosched_model::workload::PoolKind;
    use proptest::prelude::*;

    struct Flat;
    impl SlowdownSource for Flat {
        fn slowdown(&self, _: JobId, _: &[JobId]) -> f64 {
            1.0
        }
        fn score(&self, _: JobId, _: JobId) -> f64 {
            0.0
        }
    }

    /// A node and a batch of decisions drawn from small numbers, so that
    /// full pools, busy named cores, overbooked ones, suspended jobs,
    /// variants, jobs started twice and wrong pools all occur.
    #[derive(Debug, Clone)]
    struct Case {
        pools: Vec<u32>,
        /// (pool, cores, named cores, suspended)
        running: Vec<(usize, u32, Vec<u32>, bool)>,
        /// (pool, cores, variants)
        queue: Vec<(usize, u32, bool)>,
        /// (job id, pool, kind): kind 0 start, 1 start a variant, 2 suspend
        decisions: Vec<(usize, usize, u8)>,
    }

    fn case() -> impl Strategy<Value = Case> {
        (
            prop::collection::vec(1u32..5, 1..4),
            prop::collection::vec((0usize..4, 0u32..4, prop::collection::vec(0u32..6, 0..3), prop::bool::weighted(0.2)), 0..4),
            prop::collection::vec((0usize..4, 0u32..4, prop::bool::weighted(0.1)), 0..6),
            prop::collection::vec((0usize..10, 0usize..4, prop::sample::select(vec![0u8, 0, 0, 0, 1, 2])), 0..4),
        )
            .prop_map(|(pools, running, queue, decisions)| Case { pools, running, queue, decisions })
    }

    fn with_view<R>(c: &Case, f: impl FnOnce(&View) -> R) -> R {
        let pools: Vec<PoolInfo> = c.pools.iter().map(|&cores| PoolInfo { name: "p".into(), cores, kind: PoolKind::Cpu }).collect();
        let variants = vec![Variant { name: "v".into(), pool: 0, cores: 1, solo: 1.0 }];
        let mut cpus: Vec<Vec<u32>> = c.running.iter().map(|r| r.2.clone()).collect();
        for v in &mut cpus {
            v.sort_unstable();
            v.dedup();
        }
        let running: Vec<RunningJob> = c
            .running
            .iter()
            .zip(&cpus)
            .enumerate()
            .map(|(k, ((pool, cores, _, suspended), cpus))| RunningJob {
                id: k,
                pool: *pool,
                cores: *cores,
                cpus,
                suspended: *suspended,
                suspended_s: 0.0,
                progress: 0.5,
                solo: 10.0,
                program: "r",
            })
            .collect();
        let queue: Vec<QueuedJob> = c
            .queue
            .iter()
            .enumerate()
            .map(|(k, (pool, cores, v))| QueuedJob {
                id: 4 + k,
                name: "q",
                pool: *pool,
                cores: *cores,
                solo: 10.0,
                program: "q",
                variants: if *v { &variants } else { &[] },
            })
            .collect();
        f(&View { time: 0.0, queue: &queue, running: &running, pools: &pools, slowdown: &Flat })
    }

    fn decisions(c: &Case) -> Vec<Decision> {
        c.decisions
            .iter()
            .map(|&(job, pool, kind)| match kind {
                0 => Decision::Start { job, pool },
                1 => Decision::StartVariant { job, variant: pool },
                _ => Decision::Suspend { job },
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// The count never accepts what the engine's check refuses, so the
        /// shortcut cannot let a bad decision through to an engine.
        #[test]
        fn what_the_core_count_accepts_the_engines_check_accepts(c in case()) {
            let ds = decisions(&c);
            with_view(&c, |v| {
                if fit(v, &ds) {
                    prop_assert!(check_view(v, &ds).is_ok(), "{:?}", check_view(v, &ds).err());
                }
                Ok(())
            })?;
        }
    }

    #[test]
    fn the_count_accepts_starts_into_free_cores_and_leaves_the_rest_to_the_engines_check() {
        // Pool 0 of 4 cores: cores 0 and 2 named by a running job, one more
        // held by a job without named cores; a suspended job holds none.
        let c = Case {
            pools: vec![4, 2],
            running: vec![(0, 2, vec![0, 2], false), (0, 1, vec![], false), (0, 3, vec![1, 3], true)],
            queue: vec![(0, 1, false), (1, 2, false), (0, 1, false), (1, 1, true)],
            decisions: vec![],
        };
        let check = |ds: &[(usize, usize, u8)]| {
            let c = Case { decisions: ds.to_vec(), ..c.clone() };
            with_view(&c, |v| (fit(v, &decisions(&c)), check_view(v, &decisions(&c)).is_ok()))
        };
        assert_eq!(check(&[(4, 0, 0), (5, 1, 0)]), (true, true), "one free core in pool 0, two in pool 1");
        assert_eq!(check(&[(4, 0, 0), (6, 0, 0)]), (false, false), "a second core pool 0 does not have");
        assert_eq!(check(&[(4, 0, 0), (4, 0, 0)]), (false, false), "the same job twice");
        assert_eq!(check(&[(4, 1, 0)]), (false, false), "the wrong pool");
        assert_eq!(check(&[(7, 0, 0)]), (false, true), "a job with variants: the engine's check decides");
        assert_eq!(check(&[(2, 0, 2)]), (false, false), "not a start: the engine's check decides");
    }
}
