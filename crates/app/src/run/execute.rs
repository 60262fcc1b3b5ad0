//! Execution: each planned run carried out on this node through the one
//! run loop (`engine::run`), every start, suspension, move, estimate
//! and end journaled in the store as it happens, so a run can resume.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cosched_measure::launch::interrupted;
use cosched_measure::node::{NodeConfig, NodeEvent, NodeExecutor, NodeJob};
use cosched_model::regime::CacheRegime;
use cosched_model::run::JobStatus;
use cosched_model::text::printable;
use cosched_model::trace::Trace;
use cosched_engine::run::{run_node_placed, Done, ExecError, RunError};
use cosched_sched::{JobId, SimJob, SlowdownSource};
use cosched_store::{patiently, Durability, ExecRunId, Patience, RunJobEnd, RunJobStart, RunRecord, RunStatus, Store};

use super::journal::{done_jobs, suspended_at_death};
use super::plan::{placement_of, Plan};
use super::solo::{timed, SoloInfo, SoloRefs};
use super::{continue_command, now_unix, RunRequest, Series, SoloMode};
use crate::error::stopped;

/// What a series' runs left for its report.
pub(super) struct Ran {
    /// Every run of the series, finished now or earlier.
    pub(super) finished: Vec<RunRecord>,
    /// Traces of the runs this invocation executed, as the run loop saw
    /// them; runs finished earlier are rebuilt from the store.
    pub(super) traces: BTreeMap<ExecRunId, Trace>,
    /// Of each run this invocation executed: the wall-clock time (Unix
    /// seconds) of its clock's zero, so its times can be set against
    /// another process's clock (`bench run`'s tail after the last job).
    pub(super) clock_zero: BTreeMap<ExecRunId, f64>,
    pub(super) solo: SoloInfo,
    /// Every job of this invocation's runs that did not end ok, and why.
    pub(super) not_ok: Vec<String>,
}

/// What this invocation's runs found beside their journal.
#[derive(Default)]
pub(super) struct Findings {
    /// How each job chose its solo reference, by (run, job).
    ref_notes: BTreeMap<(i64, usize), String>,
    /// Every job that did not end ok, and why.
    not_ok: Vec<String>,
}

/// Runs every plan not finished yet (a resumed series skips the done ones
/// and continues the unfinished one), solo passes adding references.
pub(super) fn run_plans(a: &RunRequest, store: &mut Store, s: &Series, plans: &[Plan], prior: &[RunRecord]) -> anyhow::Result<Ran> {
    let n = s.w.jobs.len();
    let prov = crate::common::provenance(s.ctx);
    let mut finished: Vec<RunRecord> = Vec::new();
    // Traces of the runs this invocation executed, as the run loop saw them;
    // runs finished earlier are rebuilt from the store.
    let mut traces: BTreeMap<ExecRunId, Trace> = BTreeMap::new();
    let mut clock_zero: BTreeMap<ExecRunId, f64> = BTreeMap::new();
    let mut refs = SoloRefs::for_twins(super::solo::twin_of(s.w));
    // The CPU 0-1 round trip read before each solo pass of the series.
    let mut pass_round_trip: BTreeMap<u32, f64> = BTreeMap::new();
    // The same reading before every run (passes included), by (label, repeat).
    let mut run_round_trip: BTreeMap<(String, u32), f64> = BTreeMap::new();
    let mut found = Findings::default();
    for plan in plans {
        let existing = prior.iter().find(|r| r.policy == plan.label && r.repeat == plan.repeat);
        if let Some(r) = existing.filter(|r| r.status == RunStatus::Done) {
            // The regime an earlier invocation read before this run: a
            // resumed series tells an order that switched regime part-way
            // as the live one did.
            let ns = store.run_conditions(r.id)?.first().and_then(|c| c.c2c.as_ref().map(|x| x.1));
            if let Some(ns) = ns {
                run_round_trip.insert((plan.label.clone(), plan.repeat), ns);
            }
            if plan.pass {
                if let Some(ns) = ns {
                    pass_round_trip.insert(plan.repeat, ns);
                }
                refs.add_pass(r, &store.run_jobs(r.id)?, n, ns.map(CacheRegime::of_round_trip));
            }
            finished.push(r.clone());
            continue;
        }
        // The cache regime now: passes record it, runs look up references
        // taken in the same regime.
        let round_trip = crate::common::round_trip_now();
        if let Some(ns) = round_trip {
            if plan.pass {
                pass_round_trip.insert(plan.repeat, ns);
            }
            run_round_trip.insert((plan.label.clone(), plan.repeat), ns);
        }
        let (run_id, done, attempts, origin) = match existing {
            Some(r) => {
                let recs = store.run_jobs(r.id)?;
                let origin = store.run_journal(r.id)?.iter().map(|e| e.t_s).fold(0.0, f64::max);
                let origin = recs.iter().flat_map(|j| [Some(j.start.start_s), j.end.as_ref().map(|e| e.end_s)]).flatten().fold(origin, f64::max);
                let frozen = suspended_at_death(&store.run_journal(r.id)?, &recs);
                if !frozen.is_empty() {
                    s.ctx.step(&format!(
                        "run {}: {} suspended when the runner died; the watchdog killed and thawed them, and they start again",
                        r.id,
                        frozen.join(", ")
                    ));
                }
                let killed = store.resume_run(r.id, origin)?;
                let scope = format!("{}-r{}", s.id, r.id);
                let leftovers = s.iso.clean_scope(&scope);
                s.ctx.step(&format!(
                    "run {} ({} repeat {}): resuming at t={origin:.2}s; {killed} job(s) that were running are started again{}",
                    r.id,
                    r.policy,
                    r.repeat,
                    if leftovers > 0 { format!("; killed {leftovers} leftover process(es) in its cgroups") } else { String::new() }
                ));
                let recs = store.run_jobs(r.id)?;
                let (done, attempts) = done_jobs(&recs, &store.run_journal(r.id)?, s.w.jobs.len());
                (r.id, done, attempts, origin)
            }
            None => {
                // Each run's provenance starts when the run does, so a solo
                // reference's age can be told from it.
                let prov = cosched_model::provenance::Provenance { started_unix: now_unix(), ..prov.clone() };
                let id = store.begin_run(&s.id, &s.w.name, &plan.label, plan.repeat, &s.params, &prov)?;
                (id, Vec::new(), vec![0; s.w.jobs.len()], 0.0)
            }
        };
        let refs_now = (a.solo == SoloMode::Interleaved && !plan.pass).then_some((&refs, round_trip.map(CacheRegime::of_round_trip)));
        // Stored with the run, so a resumed series knows the regime of the
        // passes this invocation runs. A failed load reading only loses it.
        if let Ok(load) = cosched_measure::provenance::load_average() {
            store.add_run_conditions(run_id, &crate::common::reading_now(load, round_trip.map(|ns| (vec![0, 1], ns))))?;
        }
        // While the jobs run, a commit waits for the log's write, not for
        // the disk (`Durability::Process`: SIGKILL-safe); the run's end
        // below commits at `Full`, which syncs every line before it.
        store.set_durability(Durability::Process)?;
        let outcome = Execution { series: s, run_id, plan, done, attempts, origin, refs: refs_now }.execute(store, &mut found);
        // The regime again once the run has ended: a run whose readings
        // disagree switched part-way and is left out of the per-regime
        // check (`steady`).
        let after = match outcome.is_ok().then(|| (crate::common::round_trip_now(), cosched_measure::provenance::load_average())) {
            Some((Some(ns), Ok(load))) => store.add_run_conditions(run_id, &crate::common::reading_now(load, Some((vec![0, 1], ns)))),
            _ => Ok(()),
        };
        store.set_durability(Durability::Full)?;
        after?;
        match outcome {
            Ok((t, trace, zero)) => {
                store.finish_run(run_id, RunStatus::Done, t, "all jobs ended")?;
                traces.insert(run_id, trace);
                clock_zero.insert(run_id, zero);
            }
            Err(RunError::Exec(ExecError::Interrupted(sig))) => {
                store.finish_run(run_id, RunStatus::Interrupted, 0.0, &format!("signal {sig}"))?;
                return Err(stopped(
                    sig,
                    format!(
                        "interrupted; every job was killed and run {run_id} is stored as interrupted. \
                         {}",
                        a.continue_with.clone().unwrap_or_else(|| format!("Continue with: {}", continue_command(a)))
                    ),
                ));
            }
            Err(e) => {
                let _ = store.finish_run(run_id, RunStatus::Failed, 0.0, &e.to_string());
                return Err(anyhow::anyhow!("run {run_id} ({} repeat {}): {e}", plan.label, plan.repeat));
            }
        }
        let rec = store.run(run_id)?.expect("just finished");
        if plan.pass {
            refs.add_pass(&rec, &store.run_jobs(run_id)?, n, round_trip.map(CacheRegime::of_round_trip));
        }
        finished.push(rec);
    }
    Ok(Ran {
        finished,
        traces,
        clock_zero,
        solo: SoloInfo {
            mode: a.solo,
            refs,
            pass_round_trip,
            run_round_trip,
            ref_notes: found.ref_notes,
            stored_from: s.stored_from.clone(),
        },
        not_ok: found.not_ok,
    })
}

/// One run to carry out: the series' setting, the plan, and where a
/// resumed run stands.
pub(super) struct Execution<'a> {
    pub(super) series: &'a Series<'a>,
    pub(super) run_id: ExecRunId,
    pub(super) plan: &'a Plan,
    /// Jobs a resumed run had finished (workload indices).
    pub(super) done: Vec<Done>,
    /// Each job's next attempt number.
    pub(super) attempts: Vec<u32>,
    /// Where the run's clock starts: 0, or where a resumed run stopped.
    pub(super) origin: f64,
    /// The solo passes so far and the cache regime now, when jobs divide by
    /// interleaved references.
    pub(super) refs: Option<(&'a SoloRefs, Option<CacheRegime>)>,
}

impl Execution<'_> {
    /// Runs the plan's jobs to their end: the run's end time, its trace and
    /// the wall-clock time (Unix seconds) of its clock's zero.
    pub(super) fn execute(self, store: &mut Store, found: &mut Findings) -> Result<(f64, Trace, f64), RunError> {
        let Execution { series: s, run_id, plan, done, mut attempts, origin, refs } = self;
        let (ctx, w, jobs, sim, platform, policies, user) = (s.ctx, s.w, &s.jobs[..], &s.sim[..], &s.platform, s.policies, s.user);
        let (notes, not_ok) = (&mut found.ref_notes, &mut found.not_ok);
        let mut policy = policies.build(&plan.name, &plan.params).map_err(RunError::Input)?;
        policy.set_priorities(&crate::policy::priorities(w));
        // The run's job list in the plan's order; engines see positions, the
        // store keeps workload indices (`order[position]`).
        let order = &plan.order;
        // A solo pass runs only some of the workload's jobs (one of each
        // program), so positions are indexed by workload index.
        let mut pos_of = vec![0usize; w.jobs.len()];
        for (p, &j) in order.iter().enumerate() {
            pos_of[j] = p;
        }
        let jobs: Vec<NodeJob> = order
            .iter()
            .map(|&j| {
                let mut nj = jobs[j].clone();
                if plan.pass || refs.is_some() {
                    // The app divides by the reference itself (below).
                    nj.solo = None;
                }
                let fill = |t: &PathBuf| {
                    PathBuf::from(cosched_model::workload::output_path(&t.to_string_lossy(), &nj.name, run_id.0, plan.repeat + 1))
                };
                nj.stdout = nj.stdout.as_ref().map(fill);
                nj.stderr = nj.stderr.as_ref().map(fill);
                nj
            })
            .collect();
        for p in jobs.iter().flat_map(|j| [&j.stdout, &j.stderr]).flatten() {
            if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
                cosched_measure::files::create_dir(d, user).map_err(|e| RunError::Input(e.to_string()))?;
            }
        }
        let jobs = &jobs[..];
        let sim_run: Vec<SimJob> = order
            .iter()
            .map(|&j| {
                let mut s = sim[j].clone();
                if plan.pass {
                    s.arrival = 0.0;
                } else if let Some(c) = refs.and_then(|(refs, regime)| refs.lookup(j, &[], regime)) {
                    // The solo passes' median is the job's rate alone, which
                    // its online slowdown estimate divides by (issue 38), and
                    // what is left of it better than a stored guess.
                    s.solo = c.time;
                }
                s
            })
            .collect();
        let done: Vec<Done> = done.into_iter().map(|d| Done { job: pos_of[d.job], ..d }).collect();
        let permuted = Permuted { inner: s.source.as_ref(), order };
        let source: &dyn SlowdownSource = &permuted;
        // The reference each running job is divided by: (seconds, timing).
        let mut chosen: Vec<Option<(f64, &'static str)>> = vec![None; order.len()];
        let total = order.len() as u64;
        let progress = ctx.progress.task(&format!("{} #{}", plan.label, plan.repeat + 1), total);
        let mut ended = done.len() as u64;
        let mut running: BTreeMap<usize, (f64, Vec<u32>)> = BTreeMap::new();
        let names: Vec<String> = w.jobs.iter().map(|j| j.name.clone()).collect();
        let mut last_t = origin;
        // Each running job's latest online estimate, by position, for the
        // progress line.
        let mut estimates: BTreeMap<usize, cosched_engine::online::Estimate> = BTreeMap::new();
        let regime_now = refs.and_then(|r| r.1).map(|g| g.name().to_string());
        let mut store_err: Option<String> = None;
        let mut pool_cpus = s.cpus_of_pool.clone();
        if plan.pass {
            // Each pass starts its single-core jobs on another core, so every
            // core gets references over the repeats.
            for cpus in &mut pool_cpus {
                if !cpus.is_empty() {
                    let k = plan.repeat as usize % cpus.len();
                    cpus.rotate_left(k);
                }
            }
        }
        let placement = placement_of(plan.placement, &pool_cpus, &s.shared).map_err(RunError::Input)?;
        let cfg = NodeConfig {
            pool_cpus,
            shared_pool: s.shared.clone(),
            topology: s.topology.clone(),
            scope: format!("{}-r{run_id}", s.id),
            log_dir: s.log_root.join(format!("run-{run_id}")),
            user,
            isolation: s.iso.clone(),
            clock_origin: origin,
            env: vec![("COSCHED_RUN".into(), run_id.0.to_string()), ("COSCHED_REPEAT".into(), (plan.repeat + 1).to_string())],
        };
        let log = policies.log().clone();
        // What the policy reported (Lua swaps, refusals, fallbacks) is journaled
        // before the event that follows it, so the journal keeps their order.
        let journal_notes = |store: &mut Store| -> Result<(), String> {
            for n in log.take_new() {
                progress.println(&format!("t={:.2}s {}: {}", n.time, n.kind.event(), n.detail));
                store.run_note(run_id, n.time, n.kind.event(), &n.detail).map_err(|e| e.to_string())?;
            }
            Ok(())
        };
        // Suspensions, resumptions and moves not journaled yet: (t, event,
        // job, detail). A suspension waits for the next event (in a turn,
        // the incoming job's resumption, written with it in one
        // transaction), so the node is not idle for a sync to disk between
        // the outgoing job's freeze and the incoming one's thaw (issue 42:
        // most of a 20 ms turn's cost). Every other event writes what
        // waits first, so the journal keeps the order, and a job's end is
        // never journaled before its suspensions. A runner killed while a
        // suspension waits loses only that line, of a job not ended: the
        // resumed run starts it again, as any job running at the kill.
        let mut pending: Vec<(f64, &'static str, String, String)> = Vec::new();
        let flush = |store: &mut Store, pending: &mut Vec<(f64, &'static str, String, String)>| {
            if pending.is_empty() {
                return Ok(());
            }
            let lines: Vec<cosched_store::JobEvent> =
                pending.iter().map(|(t_s, event, job, detail)| cosched_store::JobEvent { t_s: *t_s, event, job, detail }).collect();
            let what = lines.iter().map(|l| format!("a {} of job `{}`", l.event, l.job)).collect::<Vec<_>>().join(", ");
            let r = patiently(&format!("{what} in run {run_id}"), Patience::FINISHED_WORK, || store.run_job_events(run_id, &lines), &mut |m| eprintln!("cosched: {m}"));
            pending.clear();
            r
        };
        let result = {
            let mut sink = |e: NodeEvent| -> Result<(), String> {
                journal_notes(store)?;
                if !matches!(e, NodeEvent::Suspended { .. } | NodeEvent::Estimate { .. } | NodeEvent::Silent { .. }) {
                    flush(store, &mut pending).map_err(|e| {
                        store_err = Some(e.to_string());
                        e.to_string()
                    })?;
                }
                let r = match &e {
                    NodeEvent::Started(s) => {
                        let j = order[s.job];
                        running.insert(j, (s.start, s.cpus.clone()));
                        last_t = last_t.max(s.start);
                        let solo_s = match refs {
                            Some((refs, regime)) => {
                                let c = refs.lookup(j, &s.cpus, regime);
                                if let Some(c) = &c {
                                    let age = now_unix() as f64 - c.newest.at_unix;
                                    let regime = c.newest.regime.map(|g| format!(", {}", g.name())).unwrap_or_default();
                                    notes.insert(
                                        (run_id.0, j),
                                        format!("median of {} pass(es): {}{regime}; newest {age:.0} s before", c.n, c.which),
                                    );
                                }
                                chosen[s.job] = c.map(|c| (c.time, c.timing));
                                chosen[s.job].map(|c| c.0)
                            }
                            None => jobs[s.job].solo.as_ref().map(|x| x.0),
                        };
                        let started = RunJobStart {
                                job: names[j].clone(),
                                job_index: j as u32,
                                attempt: attempts[j],
                                arrival_s: sim_run[s.job].arrival,
                                start_s: s.start,
                                cpus: s.cpus.clone(),
                                mems: s.mems.clone(),
                                pgid: s.pgid,
                                beside: s.beside.clone(),
                                predicted: s.predicted,
                                solo_s,
                        };
                        patiently(&format!("the start of job `{}` in run {run_id}", names[j]), Patience::FINISHED_WORK, || store.run_job_started(run_id, &started), &mut |m| eprintln!("cosched: {m}"))
                    }
                    NodeEvent::Suspended { job, t } => {
                        last_t = last_t.max(*t);
                        pending.push((*t, "suspend", names[order[*job]].clone(), String::new()));
                        Ok(())
                    }
                    NodeEvent::Resumed { job, t } => {
                        last_t = last_t.max(*t);
                        pending.push((*t, "resume", names[order[*job]].clone(), String::new()));
                        flush(store, &mut pending)
                    }
                    NodeEvent::Moved { job, t, cpus, mems } => {
                        last_t = last_t.max(*t);
                        let f = cosched_model::topology::format_cpulist;
                        let detail = if mems.is_empty() { format!("cpus {}", f(cpus)) } else { format!("cpus {} mems {}", f(cpus), f(mems)) };
                        running.entry(order[*job]).and_modify(|r| r.1 = cpus.clone());
                        pending.push((*t, "move", names[order[*job]].clone(), detail));
                        flush(store, &mut pending)
                    }
                    NodeEvent::Estimate { job, estimate } => {
                        // Readings come between starts and ends: the line's
                        // clock and each job's share done move with them.
                        last_t = last_t.max(estimate.time);
                        estimates.insert(*job, *estimate);
                        Ok(())
                    }
                    NodeEvent::Settled(s) => {
                        // The observation, kept at once: the run's source has
                        // learned it already (engine::online).
                        let e = &s.estimate;
                        let sample = cosched_store::OnlineSample {
                            t_s: s.time,
                            victim: names[order[s.job]].clone(),
                            beside: names[order[s.beside]].clone(),
                            victim_program: sim[order[s.job]].program.clone(),
                            beside_program: sim[order[s.beside]].program.clone(),
                            slowdown: e.slowdown,
                            lo: e.lo,
                            hi: e.hi.is_finite().then_some(e.hi),
                            segments: e.n as u32,
                            signal: e.signal.name().to_string(),
                            predicted: s.predicted,
                            regime: regime_now.clone(),
                        };
                        progress.println(&format!(
                            "t={:.2}s settled: {} beside {} x{:.2} [{:.2}, {:.2}] (predicted {:.2})",
                            s.time, printable(&names[order[s.job]]), printable(&names[order[s.beside]]), e.slowdown, e.lo, e.hi, s.predicted
                        ));
                        patiently(&format!("an online sample of job `{}` in run {run_id}", names[order[s.job]]), Patience::FINISHED_WORK, || store.add_online_sample(run_id, &sample), &mut |m| eprintln!("cosched: {m}"))
                    }
                    NodeEvent::Silent { job, observer, why } => {
                        let name = printable(&names[order[*job]]);
                        progress.println(&format!("job {name}: no online estimate ({observer}): {}; it runs on untouched", printable(why)));
                        Ok(())
                    }
                    NodeEvent::Ended(x) => {
                        estimates.remove(&x.job);
                        let j = order[x.job];
                        running.remove(&j);
                        ended += 1;
                        last_t = last_t.max(x.end);
                        // The learning loop's sample: the time it ran, not the
                        // time it was suspended.
                        let ran = |t: f64| (t - x.suspended_s).max(f64::MIN_POSITIVE);
                        let slowdown = match (refs, chosen[x.job]) {
                            (Some(_), Some((solo, timing))) if x.status.is_ok() => Some(ran(timed(timing, x.work_s, x.end - x.start)) / solo),
                            (Some(_), _) => None,
                            (None, _) => x.slowdown,
                        };
                        // A busy database or a full disk is waited out: failing
                        // here would make `--resume` run a finished job again.
                        let end = RunJobEnd { end_s: x.end, status: x.status, work_s: x.work_s, slowdown };
                        let r = patiently(
                            &format!("the end of job `{}` in run {run_id}", names[j]),
                            Patience::FINISHED_WORK,
                            || store.run_job_ended(run_id, j as u32, attempts[j], &end),
                            &mut |m| eprintln!("cosched: {m}"),
                        );
                        attempts[j] += 1;
                        if !matches!(x.status, JobStatus::Ok | JobStatus::Killed) {
                            // The job's last line (already cut to a bound) and
                            // its name reach a terminal: control characters
                            // are shown, not obeyed.
                            let why = x.output_tail.lines().last().map(|l| format!(": {}", printable(l))).unwrap_or_default();
                            let name = printable(&names[j]);
                            not_ok.push(format!("job `{name}` in run {} ({} repeat {}): {}{why}", run_id.0, plan.label, plan.repeat + 1, x.status));
                            progress.println(&format!("job {name} {} after {:.2}s{why}", x.status, x.end - x.start));
                        }
                        r
                    }
                };
                let now = last_t;
                let msg: Vec<String> = running
                    .iter()
                    .map(|(&j, (start, cpus))| {
                        let pct = ((now - start) / sim[j].solo * 100.0).clamp(0.0, 99.0);
                        let est = estimates
                            .get(&pos_of[j])
                            .map(|e| format!(" x{:.2}[{:.2}-{:.2}]{}", e.slowdown, e.lo, e.hi, if e.signal.decisive() { "" } else { "?" }))
                            .unwrap_or_default();
                        format!("{}@{} {pct:.0}%{est}", printable(&names[j]), cosched_model::topology::format_cpulist(cpus))
                    })
                    .collect();
                progress.set(ended, &format!("t={now:.1}s running: {}", if msg.is_empty() { "-".into() } else { msg.join(" ") }));
                r.map_err(|e| {
                    let m = e.to_string();
                    store_err = Some(m.clone());
                    m
                })
            };
            let mut ex = NodeExecutor::new(cfg, jobs, &mut sink).map_err(|e| RunError::Exec(ExecError::Fatal(e)))?;
            // The run's clock and the wall clock read together.
            let zero = unix_now_f64() - cosched_engine::Executor::now(&mut ex);
            let r = run_node_placed(platform, &sim_run, source, policy.as_mut(), &mut ex, &done, placement.as_ref());
            let end = cosched_engine::Executor::now(&mut ex);
            r.map(|trace| (end, trace, zero))
        };
        // What still waits (a last suspension) goes in before the run is
        // finished in the store, which takes no more lines.
        let flushed = journal_notes(store).and_then(|()| flush(store, &mut pending).map_err(|e| e.to_string()));
        progress.finish();
        if interrupted().is_some() {
            if let Err(RunError::Exec(ExecError::Interrupted(_))) = &result {
                return result;
            }
        }
        if let (Ok(_), Err(e)) = (&result, flushed) {
            return Err(RunError::Exec(ExecError::Fatal(format!("journaling what the policy reported or a last suspension: {e}"))));
        }
        result
    }
}

/// The wall clock in Unix seconds, to the microsecond.
pub(super) fn unix_now_f64() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// A slowdown source over a permuted job list: position `p` is job
/// `order[p]` of the source's list.
struct Permuted<'a> {
    inner: &'a dyn SlowdownSource,
    order: &'a [usize],
}

impl SlowdownSource for Permuted<'_> {
    fn slowdown(&self, job: JobId, beside: &[JobId]) -> f64 {
        let b: Vec<JobId> = beside.iter().map(|&p| self.order[p]).collect();
        self.inner.slowdown(self.order[job], &b)
    }
    fn score(&self, a: JobId, b: JobId) -> f64 {
        self.inner.score(self.order[a], self.order[b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_sched::PairTable;

    #[test]
    fn a_permuted_source_answers_for_the_workload_job_at_each_position() {
        let table = PairTable::new(vec![vec![1.0, 2.0, 3.0], vec![4.0, 1.0, 5.0], vec![6.0, 7.0, 1.0]]).unwrap();
        let order = [2, 0, 1];
        let p = Permuted { inner: &table, order: &order };
        // Position 0 is job 2, position 2 is job 1: job 2 beside job 1.
        assert_eq!(p.slowdown(0, &[2]), 7.0);
        assert_eq!(p.slowdown(1, &[0]), 3.0);
        assert_eq!(p.slowdown(1, &[]), 1.0);
    }
}
