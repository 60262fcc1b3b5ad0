//! `phased`: a sequence of other kernels, e.g. a serial phase then a parallel
//! one. One unit is one pass through every phase in order; each phase runs
//! with its own work and thread count and its kernel's default parameters.
//!
//! Times, ops and checksums add up over the phases: `setup_s` and `wall_s`
//! are sums of the phases' own figures (the allocation of a phase counts as
//! setup), `ops` is the sum of the phases' ops whose units are listed in
//! `ops_unit` (e.g. `flops+bytes`), and the checksum folds the phases'
//! checksums in run order.

use std::collections::BTreeMap;

use cosched_model::kernel::{kernel, parse_phases};

use crate::util::{mix, KernelRun, Params, Timing, CHECKSUM_SEED};
use crate::KernelError;

pub(crate) fn run(work: u64, p: &Params) -> Result<KernelRun, KernelError> {
    let phases = parse_phases(p.text("phases")).map_err(|e| p.bad("phases", &e))?;
    let defaults = BTreeMap::new();
    let mut steps = Vec::with_capacity(phases.len());
    for (i, ph) in phases.iter().enumerate() {
        let spec = kernel(&ph.kernel).expect("parse_phases only returns catalogue kernels");
        if ph.threads > 1 && !spec.threaded {
            return Err(p.bad(
                "phases",
                &format!("phase {}: kernel `{}` runs on one thread, not {}", i + 1, spec.name, ph.threads),
            ));
        }
        let resolved = spec.resolve_params(&defaults).map_err(|e| p.bad("phases", &e))?;
        steps.push((spec, ph, resolved));
    }
    let mut units: Vec<&str> = Vec::new();
    for (spec, _, _) in &steps {
        let unit = super::ops_unit(spec.name)
            .ok_or_else(|| KernelError::Failed(format!("kernel `{}` cannot be a phase", spec.name)))?;
        if !units.contains(&unit) {
            units.push(unit);
        }
    }
    let mut timing = Timing::default();
    let mut ops = 0u64;
    let mut checksum = CHECKSUM_SEED;
    for _ in 0..work {
        for (spec, ph, resolved) in &steps {
            let out = super::dispatch(spec, ph.work, ph.threads, resolved)?;
            timing.setup_s += out.setup_s;
            timing.wall_s += out.wall_s;
            ops += out.ops;
            checksum = mix(checksum, out.checksum);
        }
    }
    Ok(KernelRun::new(timing, ops, &units.join("+"), checksum))
}
