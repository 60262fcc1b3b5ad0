//! Job variants as the engines run them: each way's pool index, cores and
//! solo estimate for the decision loop, and its command for the node
//! executor.

use std::collections::BTreeMap;

use cosched_measure::kernel::job_argv;
use cosched_measure::node::NodeJob;
use cosched_model::calibration::Calibration;
use cosched_model::workload::{Job, Workload};
use cosched_sched::Variant;

fn pool_index(w: &Workload, name: &str) -> usize {
    w.pools.iter().position(|p| p.name == name).expect("the parser checked the pool")
}

/// The engines' variants of `j`: its own way first (`solo`: its estimate),
/// then each variant with the solo time that implies; empty without
/// variants, so a plain job runs as it always did.
pub(crate) fn sim_variants(j: &Job, w: &Workload, solo: f64) -> Vec<Variant> {
    if j.variants.is_empty() {
        return Vec::new();
    }
    let own = Variant { name: j.own_variant_name(), pool: pool_index(w, &j.pool), cores: j.cores, solo };
    std::iter::once(own)
        .chain(j.variants.iter().map(|v| Variant { name: v.name.clone(), pool: pool_index(w, &v.pool), cores: v.cores, solo: v.solo(solo) }))
        .collect()
}

/// What the node executor runs for each of `j`'s variants, after its own
/// way: the variant's command under the job's name, limits and output.
pub(crate) fn node_variants(j: &Job, w: &Workload, cals: &BTreeMap<String, Calibration>) -> anyhow::Result<Vec<NodeJob>> {
    (0..j.variants.len())
        .map(|k| {
            let v = j.as_variant(k).expect("k indexes the variants");
            let argv = job_argv(&v, cals).map_err(anyhow::Error::msg)?;
            Ok(NodeJob {
                name: v.name.clone(),
                argv,
                pool: pool_index(w, &v.pool),
                cores: v.cores,
                timeout: v.timeout,
                memory_mib: v.memory_mib,
                pids_max: Some(j.pids_max()),
                // The stored solo time is the job's own way's, not this
                // one's: no measured slowdown against it.
                solo: None,
                kernel: v.kernel().is_some(),
                env: v.env.iter().map(|(k, x)| (k.clone(), x.clone())).collect(),
                workdir: v.workdir.as_ref().map(Into::into),
                stdout: v.stdout.as_ref().map(Into::into),
                stderr: v.stderr.as_ref().map(Into::into),
                variants: Vec::new(),
                // The job's `progress` key reads the output of whichever
                // way it runs.
                progress: v.progress.clone(),
            })
        })
        .collect()
}
