//! The series' plan: the policies and baselines parsed once, the jobs as
//! the node runs them and as the engine schedules them, the node's setting
//! (isolation, topology, user) and the runs in their order.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cosched_measure::cgroup::{Isolation, Preference};
use cosched_measure::kernel::job_argv;
use cosched_measure::node::{invoking_user, NodeJob};
use cosched_model::placement::Strategy;
use cosched_model::workload::{Amount, Job, ProgressSource, Workload};
use cosched_sched::{Params, SimJob};
use cosched_store::Store;

use super::{RunRequest, SoloMode, SOLO_PASS};
use crate::common::Ctx;
use crate::error::bad_input;
use crate::policy::PolicySpec;
use cosched_learn::run_inputs::solo_time;
use crate::variants::{node_variants, sim_variants};


/// A policy spec parsed once (`policy::parse`), and a note naming the
/// defaults in force. Its label names every parameter's value (defaults
/// filled in, so the stored label says what ran) and its `placement=NAME`,
/// the engine's key: where its starts go on the node's topology
/// (`model::placement`), so one run can set two placements side by side.
pub(super) fn policy_spec(spec: &str, what: &str) -> anyhow::Result<(PolicySpec, Option<String>)> {
    let s = crate::policy::parse(spec).map_err(|e| bad_input(format!("{what}: {e}")))?;
    let defaulted = s.defaulted();
    let note = (!defaulted.is_empty()).then(|| format!("{what} {}: defaults {}", s.name(), defaulted.join(", ")));
    Ok((s, note))
}

/// The placement a plan's `placement=NAME` asks for, on this node's
/// topology, over the pools' CPUs as the runner maps them (a pool that
/// shares its CPUs with another, an accelerator's host side, is placed as
/// without a topology).
pub(super) fn placement_of(strategy: Option<Strategy>, pool_cpus: &[Vec<u32>], shared: &[bool]) -> Result<Option<cosched_engine::Placement>, String> {
    let Some(strategy) = strategy else { return Ok(None) };
    let name = cosched_sched::spec::strategy_name(strategy);
    let node = cosched_measure::topology::detect().map_err(|e| format!("placement={name}: reading this node's topology: {e}"))?;
    let pools = pool_cpus.iter().zip(shared).map(|(c, &sh)| (!sh).then(|| c.clone())).collect();
    cosched_engine::Placement::new(&node, strategy, pools).map(Some).map_err(|e| format!("placement={name}: {e}"))
}

/// What builds the run's policies. With a Lua policy among them, SIGHUP
/// reloads its script between two decisions, and the resource governor is
/// the governor file's level (`cosched governor`), watched while the run
/// goes on, else the spec's.
pub(super) fn live_policies(
    main: &PolicySpec,
    baselines: &[(PolicySpec, Option<String>)],
    ctx: &Ctx,
) -> anyhow::Result<(crate::policy::Policies, Option<cosched_lua::live::Watch>)> {
    use cosched_lua::live::{install_reload_signal, read_governor, Watch};
    use cosched_lua::Governor;
    let lua: Vec<&cosched_lua::LuaSpec> = std::iter::once(main)
        .chain(baselines.iter().map(|b| &b.0))
        .filter_map(|s| match &s.policy {
            crate::policy::Resolution::Lua(l) => Some(l),
            crate::policy::Resolution::Registered(_) => None,
        })
        .collect();
    let Some(first) = lua.first() else {
        return Ok((crate::policy::Policies::live(Governor::new(cosched_lua::Level::High)), None));
    };
    let file = crate::policy::governor_file();
    let level = match read_governor(&file).map_err(bad_input)? {
        Some(l) => l,
        None => first.governor(),
    };
    let governor = Governor::new(level);
    install_reload_signal();
    ctx.step(&format!(
        "Lua policy: `kill -HUP {}` reloads its script between two decisions; governor {} (`cosched governor high|low` sets {})",
        std::process::id(),
        level.name(),
        file.display()
    ));
    let watch = Watch::start(Vec::new(), Some(file), governor.clone(), std::time::Duration::from_millis(200));
    Ok((crate::policy::Policies::live(governor), Some(watch)))
}

/// One run of the series: a policy (or a solo pass) in one repeat.
pub(super) struct Plan {
    pub(super) label: String,
    pub(super) name: String,
    pub(super) params: Params,
    /// Where the engine places the policy's starts (`placement=NAME`).
    pub(super) placement: Option<Strategy>,
    pub(super) repeat: u32,
    /// A solo pass (one job of each program alone, arrivals ignored, CPUs
    /// rotated).
    pub(super) pass: bool,
    /// Position p of the run's job list is job `order[p]` of the workload.
    pub(super) order: Vec<usize>,
}

/// The workload's jobs as the node runs them and as the engine schedules
/// them, and where each one's stored solo time came from.
pub(super) struct Jobs {
    pub(super) node: Vec<NodeJob>,
    pub(super) sim: Vec<SimJob>,
    /// Per job: `FROM, median of N`, or `-` without a stored solo time.
    pub(super) stored_from: Vec<String>,
    /// Source of stored solo times -> (jobs, solo runs behind each).
    solo_from: BTreeMap<String, (Vec<String>, Vec<usize>)>,
    /// Jobs without a stored solo time.
    missing: Vec<String>,
}

impl Jobs {
    /// Reads each job's argv, stored solo time and variants.
    pub(super) fn of(store: &Store, w: &Workload) -> anyhow::Result<Jobs> {
        let cals = store.calibrations()?;
        let mut jobs = Jobs { node: Vec::new(), sim: Vec::new(), stored_from: Vec::new(), solo_from: BTreeMap::new(), missing: Vec::new() };
        let measured = store.measurements(&w.name)?;
        for (i, j) in w.jobs.iter().enumerate() {
            let argv = job_argv(j, &cals).map_err(anyhow::Error::msg)?;
            let solo = solo_time(store, &measured, w, i, &cals)?;
            jobs.stored_from.push(solo.as_ref().map_or("-".into(), |(_, _, from, n)| format!("{from}, median of {n}")));
            if let Some((_, _, from, n)) = &solo {
                let e = jobs.solo_from.entry(from.clone()).or_default();
                e.0.push(j.name.clone());
                e.1.push(*n);
            }
            let pool = w.pools.iter().position(|p| p.name == j.pool).expect("the parser checked the pool");
            let estimate = match &solo {
                Some((s, ..)) => *s,
                None => {
                    jobs.missing.push(j.name.clone());
                    match j.amount {
                        Amount::Seconds(s) => s,
                        _ => j.timeout.unwrap_or(1.0),
                    }
                }
            };
            jobs.node.push(NodeJob {
                name: j.name.clone(),
                argv,
                pool,
                cores: j.cores,
                timeout: j.timeout,
                memory_mib: j.memory_mib,
                pids_max: Some(j.pids_max()),
                solo: solo.as_ref().map(|(s, t, ..)| (*s, t.clone())),
                kernel: j.kernel().is_some(),
                env: j.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                workdir: j.workdir.as_ref().map(PathBuf::from),
                // Templates here; each run fills in its id and repeat (`execute`).
                stdout: j.stdout.as_ref().map(PathBuf::from),
                stderr: j.stderr.as_ref().map(PathBuf::from),
                variants: node_variants(j, w, &cals)?,
                progress: j.progress.clone().or_else(|| stored_instructions(store, j)),
            });
            jobs.sim.push(SimJob {
                name: j.name.clone(),
                arrival: j.arrival,
                solo: estimate,
                pool,
                cores: j.cores,
                program: j.program_key(),
                variants: sim_variants(j, w, estimate),
            });
        }
        Ok(jobs)
    }

    /// Says where the stored solo times came from, and which jobs have none.
    pub(super) fn say_solo_sources(&self, ctx: &Ctx) {
        for (from, (names, ns)) in &self.solo_from {
            let (lo, hi) = (ns.iter().min().copied().unwrap_or(0), ns.iter().max().copied().unwrap_or(0));
            let n = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
            let who = if names.len() == self.node.len() { format!("all {} jobs", names.len()) } else { names.join(", ") };
            ctx.step(&format!("solo times from {from} (median of {n} solo runs each): {who}"));
        }
        if !self.missing.is_empty() {
            ctx.step(&format!(
                "no stored solo time (pairs, profile or calibration) for {}: their measured slowdown is not recorded (run `cosched profile --workload FILE`)",
                self.missing.join(", ")
            ));
        }
    }
}

/// How this node isolates jobs, its topology (memory follows the cores:
/// each job's cpuset.mems is the NUMA nodes of its CPUs) and the user jobs
/// run as, each said once.
pub(super) fn node_setting(ctx: &Ctx, pref: Preference) -> (Isolation, Option<cosched_model::topology::Node>, Option<(u32, u32)>) {
    let iso = Isolation::detect(pref);
    for m in iso.mechanisms() {
        ctx.step(&format!("{}: {}{}", m.feature, m.how, m.why.map(|w| format!(" ({w})")).unwrap_or_default()));
    }
    // The run needs the topology only for the NUMA nodes a cpuset binds
    // memory to: the kernel's own numbering, which /sys gives without
    // starting hwloc's lstopo (tens of ms of every run on a busy node,
    // issue 42); lstopo only where /sys cannot be read.
    let topology = if !iso.pins() {
        None
    } else {
        match cosched_measure::topology::detect_with(cosched_measure::topology::TopologySource::Sysfs).or_else(|_| cosched_measure::topology::detect()) {
            Ok(n) => {
                ctx.step(&format!("memory: bound to the NUMA nodes of each job's CPUs (cpuset.mems; this node has {})", n.numa_nodes.len().max(1)));
                Some(n)
            }
            Err(e) => {
                ctx.step(&format!("memory: not bound (this node's NUMA nodes cannot be read: {e})"));
                None
            }
        }
    };
    let user = invoking_user();
    if let Some((uid, gid)) = user {
        ctx.step(&format!("jobs run as uid {uid} gid {gid} (the user who invoked sudo)"));
    }
    (iso, topology, user)
}

/// The series' runs in their order: per repeat, a solo pass (interleaved
/// references) and the policy and baselines, rotated.
pub(super) fn plans(a: &RunRequest, twin_of: &[usize], main: &PolicySpec, baselines: &[(PolicySpec, Option<String>)]) -> anyhow::Result<Vec<Plan>> {
    let n = twin_of.len();
    if let Some(o) = &a.order {
        let mut seen = o.clone();
        seen.sort_unstable();
        if seen != (0..n).collect::<Vec<_>>() {
            anyhow::bail!("the job order {o:?} is not an order of the workload's {n} jobs");
        }
    }
    let main_label = main.label();
    let mut plans = Vec::new();
    for r in a.first_repeat..a.first_repeat + a.repeats {
        let order: Vec<usize> = match (&a.order, a.order_seed) {
            (Some(o), _) => o.clone(),
            (None, Some(seed)) => cosched_sched::montecarlo::order(n, seed, r as usize),
            (None, None) => (0..n).collect(),
        };
        let plan = |label: String, name: &str, params: &Params, placement: Option<Strategy>| Plan {
            label,
            name: name.to_string(),
            params: params.clone(),
            placement,
            repeat: r,
            pass: false,
            order: order.clone(),
        };
        let mut pair = vec![plan(main_label.clone(), main.name(), &main.params(), main.placement())];
        for (b, _) in baselines {
            pair.push(plan(b.label(), b.name(), &b.params(), b.placement()));
        }
        // Rotating which goes first keeps a drift of the node from
        // favouring one policy.
        let k = pair.len();
        pair.rotate_left(r as usize % k);
        if a.solo == SoloMode::Interleaved {
            // One solo run per program: twins share it (`solo::twin_of`).
            let pass = Plan { pass: true, ..plan(SOLO_PASS.to_string(), "exclusive", &Params::new(), None) };
            plans.push(Plan { order: super::solo::pass_jobs(&pass.order, twin_of), ..pass });
        }
        plans.extend(pair);
    }
    Ok(plans)
}

/// The series' settings as stored with each run: `--resume` finds the
/// series by them.
pub(super) fn series_params(a: &RunRequest, w: &Workload, jobs: &[NodeJob], main: &str, baselines: &[String], predictor: &str) -> String {
    // Keys in name order and compact, as this string was always stored:
    // `--resume` finds a series by comparing it whole.
    #[derive(serde::Serialize)]
    struct Job<'a> {
        argv: &'a [String],
        cores: u32,
        name: &'a str,
    }
    #[derive(serde::Serialize)]
    struct SeriesParams<'a> {
        baseline: &'a [String],
        jobs: Vec<Job<'a>>,
        // Only when given, so series stored before orders could be given
        // keep their settings (and `--resume` finds them).
        #[serde(skip_serializing_if = "Option::is_none")]
        order: Option<&'a [usize]>,
        order_seed: Option<u64>,
        policy: &'a str,
        // What decided (and predicted), for `evaluate-predictors --from-runs`.
        predictor: &'a str,
        repeats: u32,
        solo: super::SoloMode,
        workload: &'a str,
    }
    let params = SeriesParams {
        baseline: baselines,
        jobs: jobs.iter().map(|j| Job { argv: &j.argv, cores: j.cores, name: &j.name }).collect(),
        order: a.order.as_deref(),
        order_seed: a.order_seed,
        policy: main,
        predictor,
        repeats: a.repeats,
        solo: a.solo,
        workload: &w.name,
    };
    serde_json::to_string(&params).expect("series settings serialize")
}

/// A command's hardware counters as its progress where it has no
/// `progress` key (a kernel counts its own): the instructions of its
/// stored solo profile, when this machine counts them (docs/policies.md,
/// the observers' order).
fn stored_instructions(store: &Store, j: &Job) -> Option<ProgressSource> {
    if j.kernel().is_some() || cosched_measure::perf::instructions_counting().is_err() {
        return None;
    }
    let (_, p) = store.latest_job_profile(&j.program_key()).ok()??;
    let c = &p.summary.summary.counters;
    let total = c.get("instructions").or_else(|| c.get("instructions:u")).copied()?;
    (total > 0.0).then_some(ProgressSource::Counters { total: Some(total) })
}
