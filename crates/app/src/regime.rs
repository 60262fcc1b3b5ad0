//! The cache regime of measurements: the one a prediction is for
//! (`--regime`), and the switches a campaign ran into.
//!
//! Each pair and probe repeat reads the cache-line round trip between a
//! CPU of each of its two jobs just before and just after it
//! (`cosched_measure::c2c::around`) and stores it with the repeat. A
//! campaign whose repeat runs in another regime than the campaign's first
//! says so on stderr as it happens and in its output, and keeps every
//! repeat labelled; predictors fit on one regime's repeats
//! (`cosched_predict::regime`).

use cosched_measure::c2c::{RegimeWatch, Switch};
use cosched_model::regime::CacheRegime;
use cosched_predict::regime::RegimeChoice;
use serde::Serialize;

use crate::error::bad_input;

/// The regime a prediction is for, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChosenRegime {
    pub regime: RegimeChoice,
    /// `given`, `read now: CPU 0-1 round trip 73 ns`, or why `any`.
    pub how: String,
}

impl ChosenRegime {
    pub fn describe(&self) -> String {
        format!("cache regime {} ({})", self.regime.name(), self.how)
    }
}

/// `--regime NAME`, else the regime the node is in now (`read` gives the
/// CPU 0-1 round trip, once), else `any` when it cannot be read.
pub fn choose(given: Option<&str>, read: impl FnOnce() -> Option<f64>) -> anyhow::Result<ChosenRegime> {
    if let Some(name) = given {
        let regime = RegimeChoice::parse(name).map_err(|e| bad_input(format!("--regime: {e}")))?;
        return Ok(ChosenRegime { regime, how: "given".into() });
    }
    Ok(match read() {
        Some(ns) => {
            let g = CacheRegime::of_round_trip(ns);
            ChosenRegime { regime: RegimeChoice::Only(g), how: format!("the node's now: CPU 0-1 round trip {ns:.0} ns, {}", g.name()) }
        }
        None => ChosenRegime { regime: RegimeChoice::Any, how: "the node's regime could not be read (one CPU?)".into() },
    })
}

/// The node's regime now, cheaply: the round trip between CPUs 0 and 1.
pub fn read_now() -> Option<f64> {
    (crate::common::node_cpu_count() >= 2).then(|| cosched_measure::c2c::read_round_trip(0, 1)).flatten()
}

/// A campaign's regime record for its output: the regime it began with,
/// how many repeats were read, and every repeat that switched.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CampaignRegimes {
    /// `shared cache` / `caches apart` of the first repeat read.
    pub first: Option<String>,
    /// Repeats with a reading, in the regime of their first reading.
    pub read: usize,
    pub shared: usize,
    pub apart: usize,
    /// Repeats whose regime changed during the repeat.
    pub changed_within: usize,
    pub switches: Vec<Switch>,
}

/// Follows a campaign's repeats: a switch is said on stderr (through
/// `say`) when the regime differs from the previous repeat's, and every
/// repeat away from the first regime is kept in `switches`.
pub struct Tracker {
    watch: RegimeWatch,
    last: Option<Option<CacheRegime>>,
    pub out: CampaignRegimes,
}

impl Default for Tracker {
    fn default() -> Self {
        Tracker::new()
    }
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker { watch: RegimeWatch::new(), last: None, out: CampaignRegimes::default() }
    }

    /// Takes a repeat's reading (`None`: not read).
    pub fn observe(&mut self, what: &str, r: Option<&cosched_measure::c2c::Reading>, say: &mut dyn FnMut(&str)) {
        let Some(r) = r else { return };
        if r.before_ns.is_none() && r.after_ns.is_none() {
            return;
        }
        self.out.read += 1;
        match r.regime() {
            Some(CacheRegime::Shared) => self.out.shared += 1,
            Some(CacheRegime::Apart) => self.out.apart += 1,
            None => self.out.changed_within += 1,
        }
        let switch = self.watch.observe(what, r);
        if self.out.first.is_none() {
            self.out.first = self.watch.first(r.cpus).map(|g| g.name().to_string());
        }
        let now = r.regime();
        if let Some(s) = switch {
            if self.last != Some(now) {
                say(&format!("warning: {}", s.describe()));
            }
            self.out.switches.push(s);
        }
        self.last = Some(now);
    }

    /// One line for the end of a campaign, when it switched.
    pub fn summary(&self) -> Option<String> {
        let o = &self.out;
        (!o.switches.is_empty()).then(|| {
            format!(
                "the cache regime switched during the campaign: of {} repeats read, {} shared cache, {} caches apart, {} changed \
                 during the repeat (began with {}); every repeat is stored with its regime, and predictors can fit on one (--regime)",
                o.read,
                o.shared,
                o.apart,
                o.changed_within,
                o.first.as_deref().unwrap_or("-")
            )
        })
    }
}

/// The waiting of a campaign gated on a regime (`--in-regime`): it naps
/// between readings, says once per wait what it is waiting for, and gives
/// up once one wait has lasted `limit` (or on Ctrl-C). `waiting` restarts
/// with each measured repeat ([`RegimeWait::measured`]).
pub struct RegimeWait {
    pub want: CacheRegime,
    pub limit: std::time::Duration,
    waiting: std::cell::Cell<std::time::Duration>,
    waited_all: std::cell::Cell<std::time::Duration>,
}

impl RegimeWait {
    /// How often the CPUs are read while waiting.
    pub const POLL: std::time::Duration = std::time::Duration::from_secs(3);

    pub fn new(want: CacheRegime, limit: std::time::Duration) -> RegimeWait {
        RegimeWait { want, limit, waiting: Default::default(), waited_all: Default::default() }
    }

    /// One turn of waiting, after the CPUs read `ns`: false to give up.
    pub fn wait(&self, ns: Option<f64>, say: &mut dyn FnMut(&str)) -> bool {
        if cosched_measure::launch::interrupted().is_some() || self.waiting.get() >= self.limit {
            return false;
        }
        if self.waiting.get().is_zero() {
            let read = ns.map_or("nothing".to_string(), |ns| format!("{ns:.0} ns"));
            say(&format!(
                "waiting for the {} regime (the CPUs read {read}); up to {:.0} min, checking every {} s",
                self.want.name(),
                self.limit.as_secs_f64() / 60.0,
                Self::POLL.as_secs()
            ));
        }
        crate::common::nap(Self::POLL);
        self.waiting.set(self.waiting.get() + Self::POLL);
        self.waited_all.set(self.waited_all.get() + Self::POLL);
        true
    }

    /// A repeat was measured: the next wait starts from zero.
    pub fn measured(&self) {
        self.waiting.set(std::time::Duration::ZERO);
    }

    /// Time waited in all.
    pub fn waited(&self) -> std::time::Duration {
        self.waited_all.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_measure::c2c::Reading;

    #[test]
    fn a_given_regime_wins_else_the_node_is_read_once_else_any() {
        let never = || -> Option<f64> { panic!("not read when given") };
        assert_eq!(choose(Some("apart"), never).unwrap().regime, RegimeChoice::Only(CacheRegime::Apart));
        assert!(choose(Some("both"), || None).is_err());
        let now = choose(None, || Some(73.0)).unwrap();
        assert_eq!(now.regime, RegimeChoice::Only(CacheRegime::Shared));
        assert!(now.describe().contains("round trip 73 ns"), "{}", now.describe());
        assert_eq!(choose(None, || Some(402.0)).unwrap().regime, RegimeChoice::Only(CacheRegime::Apart));
        assert_eq!(choose(None, || None).unwrap().regime, RegimeChoice::Any);
    }

    #[test]
    fn a_switch_is_said_once_when_it_happens_and_every_repeat_after_it_is_kept() {
        let r = |b: f64, a: f64| Reading { cpus: [0, 1], before_ns: Some(b), after_ns: Some(a) };
        let mut t = Tracker::new();
        let mut said = Vec::new();
        for (i, (b, a)) in [(70.0, 71.0), (72.0, 390.0), (400.0, 401.0), (402.0, 399.0), (60.0, 61.0)].into_iter().enumerate() {
            t.observe(&format!("x + y repeat {i}"), Some(&r(b, a)), &mut |m| said.push(m.to_string()));
        }
        t.observe("unread", None, &mut |m| said.push(m.to_string()));
        assert_eq!(said.len(), 2, "at the change within repeat 1 and at repeat 2 apart; not again at 3: {said:?}");
        assert!(said[0].contains("x + y repeat 1") && said[1].contains("x + y repeat 2"), "{said:?}");
        let o = &t.out;
        assert_eq!((o.read, o.shared, o.apart, o.changed_within, o.switches.len()), (5, 2, 2, 1, 3));
        assert_eq!(o.first.as_deref(), Some("shared cache"));
        assert!(t.summary().unwrap().contains("of 5 repeats read, 2 shared cache, 2 caches apart, 1 changed"));
        assert_eq!(Tracker::new().summary(), None);
    }

    #[test]
    fn a_wait_that_has_lasted_its_limit_gives_up_at_once_and_says_nothing() {
        let w = RegimeWait::new(CacheRegime::Shared, std::time::Duration::ZERO);
        let mut said = Vec::new();
        assert!(!w.wait(Some(400.0), &mut |m| said.push(m.to_string())));
        assert!(said.is_empty());
        assert_eq!(w.waited(), std::time::Duration::ZERO);
    }
}
