//! The registry of policies: one table, one entry per policy.
//!
//! An entry declares the policy's name, a one-line summary, its typed
//! parameters with their defaults and ranges (`model::params`), and a
//! constructor that receives them validated. Everything else reads the
//! table: building by name or spec, `cosched simulate --list-policies`, and
//! the table at the top of `docs/policies.md`. Defaults live only in the
//! declarations, so no caller patches them in.
//!
//! Adding a policy: its type in a new file `policies/NAME.rs` (declared and
//! re-exported by `policies.rs`), and one [`PolicyEntry`] in [`POLICIES`];
//! the tests below build every entry with its defaults, and the docs test
//! says what to paste into `docs/policies.md`.

use std::ops::Bound;

use cosched_model::params::{self, Declared, Kind, Param, ParamSet, Range};

use crate::policies::{Action, React, ResumeWhen, Victim, AutoThreshold, BestMatch, ConflictAware, Exclusive, Idle, NoPlan, NoTwins, Colocate, Overbook, Rebalancing, Sidestep, Surpass, Timeshare, Wait, MAX_WINDOW};
use cosched_engine::policy::Policy;
use crate::spec::{Spec, PLACEMENT_KEY};

/// Policy parameters as text, by name, as given on a command line or in a scenario.
pub use cosched_engine::policy::Params;

/// One registered policy.
#[derive(Debug, Clone, Copy)]
pub struct PolicyEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [Param],
    /// Builds the policy from parameters already checked against `params`.
    pub make: fn(&ParamSet) -> Result<Box<dyn Policy>, String>,
}

impl Declared for PolicyEntry {
    fn name(&self) -> &'static str {
        self.name
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn params(&self) -> &'static [Param] {
        self.params
    }
}

/// Every policy, in the order `--list-policies` and the docs show them.
pub const POLICIES: &[PolicyEntry] = &[
    PolicyEntry {
        name: "exclusive",
        summary: "one job at a time on the node: the sequential baseline",
        params: &[],
        make: |_| Ok(Box::new(Exclusive)),
    },
    PolicyEntry {
        name: "noplan",
        summary: "an idle pool starts the next job of its queue at once (unconditional co-execution)",
        params: &[],
        make: |_| Ok(Box::new(NoPlan)),
    },
    PolicyEntry {
        name: "conflict-aware",
        summary: "SX-Aurora co-execution paper: an idle pool starts the first queued job whose score with every running job is within the threshold",
        params: &[
            Param::new(
                "threshold",
                Kind::FloatOrInf(Range::NON_NEGATIVE),
                // The SX-Aurora paper's sweep is 50/100/150/inf; its middle value is the one
                // a run without a threshold gets.
                "100",
                "largest conflict score of a pair that may co-run (C_all in percent, else the worse predicted slowdown's increase in percent); inf = noplan",
            ),
            Param::new(
                "idle",
                Kind::Word(&["always", "gain"]),
                // The SX-Aurora paper's rule, so that a spec without it runs what the seed ran.
                "always",
                "when no waiting job is within the threshold: always = leave the core idle; gain = start the cheapest one if it raises the node's predicted progress rate",
            ),
        ],
        make: |p| Ok(Box::new(ConflictAware::new(p.float("threshold"))?.idling(Idle::parse(p.word("idle"))?))),
    },
    PolicyEntry {
        name: "no-twins",
        summary: "Terrible Twins: never co-run two instances of one program",
        params: &[],
        make: |_| Ok(Box::new(NoTwins)),
    },
    PolicyEntry {
        name: "best-match",
        summary: "an idle pool starts the waiting job with the least predicted extra slowdown (its own and its co-runners')",
        params: &[
            Param::new(
                "aging",
                Kind::Uint { max: u32::MAX as u64 },
                "4",
                "times the oldest waiting job may be passed over before it is forced; 0 = noplan",
            ),
            Param::new(
                "window",
                Kind::Uint { max: MAX_WINDOW as u64 },
                // The smallest window that paired every triad with a loop in
                // all 1000 orders of examples/scenarios/memory-half.toml and
                // kept few-bad's bad pairs apart (docs/policies.md).
                "8",
                "waiting jobs a start looks ahead over: each candidate among them is rolled out in virtual time and the shortest rollout wins; 0 = the greedy rule",
            ),
        ],
        make: |p| Ok(Box::new(BestMatch::new(p.uint("aging") as u32).with_window(p.uint("window") as usize)?)),
    },
    PolicyEntry {
        name: "auto-threshold",
        summary: "conflict-aware whose threshold tunes itself from finished jobs under a worst-slowdown bound",
        params: &[
            Param::new("bound", Kind::Float(Range::at_least(1.0)), "1.5", "worst slowdown a co-run job may have"),
            Param::new("start", Kind::Float(Range::NON_NEGATIVE), "100", "threshold before any job has finished"),
            Param::new("step", Kind::Float(Range::POSITIVE), "10", "how far the threshold moves past a score that worked or broke"),
            Param::new("explore", Kind::Flag, "on", "when a pool would idle, try the waiting job of least unknown score"),
        ],
        make: |p| {
            let policy = AutoThreshold::new(p.float("bound"), p.float("start"), p.float("step"))?;
            Ok(Box::new(policy.exploring(p.flag("explore"))))
        },
    },
    PolicyEntry {
        name: "wait",
        summary: "ParaStation (Clauss et al.): sessions start in arrival order on free cores; one that finds none waits for them",
        params: &[],
        make: |_| Ok(Box::new(Wait)),
    },
    PolicyEntry {
        name: "surpass",
        summary: "ParaStation (Clauss et al.): a session that finds no free cores suspends the running ones (latest first) until it ends",
        params: &[],
        make: |_| Ok(Box::new(Surpass::default())),
    },
    PolicyEntry {
        name: "overbook",
        summary: "ParaStation (Clauss et al.): a session that finds no free cores starts on busy ones; the OS time-shares them",
        params: &[
            Param::new("pin", Kind::Flag, "on", "on: pinned to the chosen cores; off: free to run on every core of the pool"),
            Param::new("spread", Kind::Flag, "off", "spread the session over the pool's free cores instead of compactly"),
        ],
        make: |p| Ok(Box::new(Overbook { pin: p.flag("pin"), spread: p.flag("spread") })),
    },
    PolicyEntry {
        name: "sidestep",
        summary: "ParaStation (Clauss et al.): running sessions are re-pinned off the new one's cores, so only theirs are overbooked",
        params: &[Param::new("spread", Kind::Flag, "off", "spread the session over the pool's free cores instead of compactly")],
        make: |p| Ok(Box::new(Sidestep::new(p.flag("spread")))),
    },
    PolicyEntry {
        name: "timeshare",
        summary: "nOS-V's co-execution at process level: every job starts at once and they take turns on the cores, a quantum each (freeze/thaw)",
        params: &[
            Param::new(
                "quantum",
                // A floor: a quantum of 1e-9 s never ends a run (crate::MIN_WAIT_S).
                Kind::Float(Range { lo: Bound::Included(crate::MIN_WAIT_S), hi: Bound::Included(cosched_model::workload::limits::MAX_SECONDS) }),
                "0.02",
                "seconds a job's turn lasts per unit of its priority (workload `priority`, default 1); at least 0.001",
            ),
            Param::new(
                "affinity",
                Kind::Word(&["preferred", "strict"]),
                "preferred",
                "preferred: a job's turn gives it every core of its pool; strict: it keeps its own cores and jobs on other cores run beside it",
            ),
        ],
        make: |p| Ok(Box::new(Timeshare::new(p.float("quantum"), p.word("affinity") == "strict"))),
    },
    PolicyEntry {
        name: "colocate",
        summary: "nOS-V's co-location: the free cores split among the waiting jobs; static, or re-balanced when a job ends (its cores go to the survivors)",
        params: &[Param::new(
            "rebalance",
            Kind::Flag,
            "off",
            "off: the nOS-V paper's static co-location, never moved; on: its dynamic co-location (DLB at job ends), a finished job's cores lent to the squeezed survivors, taken back for a newcomer",
        )],
        make: |p| if p.flag("rebalance") { Ok(Box::new(Rebalancing::new())) } else { Ok(Box::new(Colocate)) },
    },
    PolicyEntry {
        name: "react",
        summary: "issue 38: another policy, plus a reaction when a running job's online slowdown estimate passes the threshold with its interval (suspend or move a job of the harmful pair; resume it once its co-runners are gone)",
        params: &[
            Param::new("inner", Kind::WordOf(inner_names), "best-match", "the policy that starts jobs (with its defaults)"),
            Param::new("threshold", Kind::Float(Range::at_least(1.0)), "1.3", "slowdown whose excess, with the whole interval above it, is harm"),
            Param::new("action", Kind::Word(Action::NAMES), "suspend", "what is done to the chosen job of a harmful co-run: suspend, move (onto free cores) or nothing"),
            Param::new("victim", Kind::Word(Victim::NAMES), "newest", "which job of the harmful pair: newest (the node's), most-left (of the pair, the one with the most work left)").before("newest"),
            Param::new("resume", Kind::Word(ResumeWhen::NAMES), "free", "a suspended job resumes once the jobs it was suspended beside are gone, on its own cores (own) or on any free ones beside jobs the run knows it fits (free)").before("own"),
            Param::new("gain", Kind::Flag, "off", "act only when suspending is expected to pay: a waiting job fits the freed cores, or the pair's summed completion times shrink").before("off"),
            Param::new("plan", Kind::Word(crate::policies::Planning::NAMES), "off", "off: the inner policy starts every job; learned: once the run learns a pair, jobs start in a planned order (the oracle's search over what the run knows, from the node's present state, harmful pairs kept apart), planned again at each pair learned").before("off"),
        ],
        make: |p| {
            let inner = policy_by_name(p.word("inner"), &Params::new())?;
            Ok(Box::new(React::from_params(inner, p)))
        },
    },
];

/// Policies `react` may wrap: every one but itself.
fn inner_names() -> Vec<&'static str> {
    POLICIES.iter().map(|e| e.name).filter(|&n| n != "react").collect()
}

/// A policy spec resolved against its entry: what runs and how to name it.
#[derive(Debug, Clone)]
pub struct PolicySpec {
    pub entry: &'static PolicyEntry,
    pub params: ParamSet,
}

impl PolicySpec {
    pub fn build(&self) -> Result<Box<dyn Policy>, String> {
        (self.entry.make)(&self.params).map_err(|e| format!("policy `{}`: {e}", self.entry.name))
    }

    /// `name:key=value,...` with every parameter's value, defaults included,
    /// so that a stored label still says what ran if a default changes.
    pub fn label(&self) -> String {
        if self.entry.params.is_empty() {
            self.entry.name.to_string()
        } else {
            format!("{}:{}", self.entry.name, self.params)
        }
    }
}

/// Resolves `name` with textual parameters against the table.
fn resolve_in(table: &'static [PolicyEntry], name: &str, given: &Params) -> Result<PolicySpec, String> {
    let (entry, params) = params::resolve(table, "policy", name, given)?;
    Ok(PolicySpec { entry, params })
}

/// Resolves a parsed spec against the registry: its parameters typed and
/// checked, defaults filled in. The spec's placement is the engine's, not
/// the policy's, and is left to the caller.
pub fn resolve(spec: &Spec) -> Result<PolicySpec, String> {
    resolve_in(POLICIES, &spec.name, &spec.params)
}

/// Resolves a `NAME` or `NAME:key=value,...` spec without building it, for
/// engines that place no starts on a topology: a `placement=NAME` is
/// refused rather than silently dropped.
pub fn resolve_spec(text: &str) -> Result<PolicySpec, String> {
    let spec = Spec::parse(text)?;
    if let Some(p) = spec.placement_name() {
        return Err(format!(
            "policy `{}`: {PLACEMENT_KEY}={p}: this engine places no starts on a node's topology; `run`, `simulate` and `evaluate` do (docs/placement.md)",
            text.trim()
        ));
    }
    resolve(&spec)
}

/// Builds a policy from `NAME` or `NAME:key=value,...`.
pub fn policy_from_spec(spec: &str) -> Result<Box<dyn Policy>, String> {
    resolve_spec(spec)?.build()
}

/// Builds a policy by name; unknown names and parameters and values out of
/// range are errors, so a typo never silently runs a default.
pub fn policy_by_name(name: &str, params: &Params) -> Result<Box<dyn Policy>, String> {
    resolve_in(POLICIES, name, params)?.build()
}

/// The registry as the Markdown table `docs/policies.md` carries.
pub fn markdown_table() -> String {
    params::markdown_table(POLICIES, "policy")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::params::DefaultValue;

    use cosched_engine::policy::{Decision, View};

    #[test]
    fn every_registered_policy_builds_with_its_defaults() {
        for e in POLICIES {
            policy_by_name(e.name, &Params::new()).unwrap_or_else(|err| panic!("{err}"));
        }
    }

    #[test]
    fn every_declared_default_parses_under_its_own_kind() {
        for e in POLICIES {
            for p in e.params {
                let DefaultValue::Fixed(v) = p.default else { panic!("{}.{} has no default", e.name, p.name) };
                p.parse(v).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            }
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = POLICIES.iter().map(|e| e.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), POLICIES.len());
    }

    #[test]
    fn conflict_aware_without_parameters_has_threshold_100() {
        let s = resolve_spec("conflict-aware").unwrap();
        assert_eq!(s.params.float("threshold"), 100.0);
        assert_eq!(s.label(), "conflict-aware:threshold=100,idle=always");
        assert_eq!(s.params.defaulted(), vec!["threshold=100", "idle=always"]);
        assert_eq!(resolve_spec("conflict-aware:threshold=inf").unwrap().params.float("threshold"), f64::INFINITY);
    }

    #[test]
    fn labels_name_every_value_and_read_back_to_the_same_policy() {
        let s = resolve_spec("auto-threshold:step=5,explore=no").unwrap();
        assert_eq!(s.label(), "auto-threshold:bound=1.5,start=100,step=5,explore=off");
        assert_eq!(resolve_spec(&s.label()).unwrap().params, s.params);
        assert_eq!(resolve_spec("noplan").unwrap().label(), "noplan");
    }

    #[test]
    fn mistakes_are_refused_naming_the_parameter_and_the_value() {
        let err = |spec: &str| policy_from_spec(spec).err().unwrap();
        assert_eq!(err("fifo"), "unknown policy `fifo`; expected one of exclusive, noplan, conflict-aware, no-twins, best-match, auto-threshold, wait, surpass, overbook, sidestep, timeshare, colocate, react");
        assert_eq!(err("react:inner=react"), "policy `react`: inner=react: expected one of exclusive, noplan, conflict-aware, no-twins, best-match, auto-threshold, wait, surpass, overbook, sidestep, timeshare, colocate");
        assert_eq!(err("conflict-aware:threshold=lots"), "policy `conflict-aware`: threshold=lots: expected a number >= 0 or inf");
        assert_eq!(err("noplan:threshold=1"), "policy `noplan`: no parameter `threshold`; it takes no parameters");
        assert_eq!(err("best-match:aging=-1"), "policy `best-match`: aging=-1: expected a whole number <= 4294967295");
        assert_eq!(err("auto-threshold:bound=0.9"), "policy `auto-threshold`: bound=0.9: expected a number >= 1");
        assert_eq!(err("auto-threshold:explore=maybe"), "policy `auto-threshold`: explore=maybe: expected on or off");
        assert_eq!(err("auto-threshold:stp=1"), "policy `auto-threshold`: no parameter `stp`; known: bound, start, step, explore");
        assert_eq!(err("best-match:aging"), "policy `best-match:aging`: `aging` is not key=value");
    }

    /// A policy defined outside `policies.rs`, to show that registering one
    /// is an entry of the same type read by the same resolution path.
    struct Oldest {
        patience: u64,
    }

    impl Policy for Oldest {
        fn decide(&mut self, view: &View) -> Vec<Decision> {
            match view.queue.first() {
                Some(q) if view.running.len() < self.patience as usize => vec![Decision::Start { job: q.id, pool: q.pool }],
                _ => Vec::new(),
            }
        }
    }

    fn spec_in(table: &'static [PolicyEntry], text: &str) -> Result<PolicySpec, String> {
        let s = Spec::parse(text)?;
        resolve_in(table, &s.name, &s.params)
    }

    #[test]
    fn engines_without_a_topology_refuse_a_placement_naming_it() {
        let err = resolve_spec("noplan:placement=scatter").unwrap_err();
        assert!(err.starts_with("policy `noplan:placement=scatter`: placement=scatter: this engine places no starts"), "{err}");
        let s = resolve(&Spec::parse("conflict-aware:placement=compact,threshold=50").unwrap()).unwrap();
        assert_eq!(s.label(), "conflict-aware:threshold=50,idle=always");
    }

    const WITH_A_NEW_POLICY: &[PolicyEntry] = &[PolicyEntry {
        name: "oldest",
        summary: "the queue's head whenever fewer than `patience` jobs run",
        params: &[Param::new("patience", Kind::Uint { max: 64 }, "2", "jobs that may run at once")],
        make: |p| Ok(Box::new(Oldest { patience: p.uint("patience") })),
    }];

    #[test]
    fn a_policy_from_another_module_registers_through_one_entry() {
        let s = spec_in(WITH_A_NEW_POLICY, "oldest").unwrap();
        assert_eq!(s.label(), "oldest:patience=2");
        assert!(s.build().is_ok());
        assert!(spec_in(WITH_A_NEW_POLICY, "oldest:patience=65").unwrap_err().contains("patience=65: expected a whole number <= 64"));
        assert!(params::markdown_table(WITH_A_NEW_POLICY, "policy").contains("| `oldest` |"));
    }

    #[test]
    fn a_timeshare_quantum_below_a_millisecond_is_refused_naming_the_floor() {
        let e = resolve_spec("timeshare:quantum=1e-9").map(|_| ()).unwrap_err();
        assert!(e.contains("quantum=1e-9") && e.contains(">= 0.001"), "{e}");
        assert!(resolve_spec("timeshare:quantum=0").is_err());
        assert!(resolve_spec("timeshare:quantum=0.001").unwrap().build().is_ok());
    }
}
