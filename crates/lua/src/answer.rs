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
    if ds.is_empty() {
        return Ok(());
    }
    check_view(view, ds).map(drop).map_err(|(k, why)| format!("decision {}: {}", k + 1, in_lua_numbers(why)))
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
