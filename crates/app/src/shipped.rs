//! The shipped dataset in the demo: the project's own measurements
//! (data/*.bundle, described in data/README.md), built into the binary,
//! imported into the demo's store, and read for the workload's pairs
//! before the demo measures any. They are another node's (or another
//! day's) and at other work amounts, and every prediction from them is
//! labelled so ([`Shipped::label`]); the policies decide with what the
//! demo measures.

use std::path::Path;

use cosched_learn::amounts::{nodes_phrase, other_amounts};
use cosched_learn::knowledge::KbScope;
use cosched_model::regime::CacheRegime;
use cosched_model::workload::{Job, Workload};
use cosched_predict::regime::RegimeChoice;
use cosched_store::Store;
use serde::Serialize;

use crate::render::{Doc, Render};

/// The project's own measurements (data/, described in data/README.md),
/// built in as they ship, so the demo runs from any directory: its first
/// predictions of the workload's pairs come from them.
const SHIPPED: &[(&str, &[u8])] = &[
    ("data/io-half.bundle", include_bytes!("../../../data/io-half.bundle")),
    ("data/memory-half.bundle", include_bytes!("../../../data/memory-half.bundle")),
];

/// One shipped bundle as the demo imported it.
#[derive(Debug, Clone, Serialize)]
pub struct ShippedBundle {
    /// Its path in the repository (`data/io-half.bundle`).
    pub name: String,
    /// The node that exported it, and when (Unix seconds).
    pub node: String,
    pub exported_unix: i64,
    /// The workloads its campaigns measured.
    pub workloads: Vec<String>,
    /// Rows it holds, and those new to this store (none on a second import).
    pub rows: u64,
    pub added: u64,
}

/// The shipped dataset's prediction of one ordered pair of the workload's
/// programs: the same two programs measured at another work amount.
#[derive(Debug, Clone, Serialize)]
pub struct ShippedRow {
    pub victim: String,
    pub beside: String,
    /// The median of its repeats, and how many.
    pub slowdown: f64,
    pub repeats: usize,
    /// The shipped workload it was read from, its two works there, and
    /// the nodes that measured it.
    pub workload: String,
    pub work: (u64, u64),
    pub nodes: Vec<String>,
}

/// The shipped dataset in the demo: what it added to the store, and its
/// predictions of the workload's pairs before the demo measures any.
#[derive(Debug, Clone, Serialize)]
pub struct Shipped {
    pub bundles: Vec<ShippedBundle>,
    pub rows: Vec<ShippedRow>,
    /// The ordered pairs it has no measurement of, at any work amount
    /// (`victim beside other`).
    pub missing: Vec<String>,
    /// This node's name: another node's measurements are said to be.
    pub here: String,
    /// The cache regime whose repeats were read, where the pairs have any.
    pub regime: Option<CacheRegime>,
}

impl Shipped {
    /// `predicted from the shipped dataset (node vm, other work amount)`:
    /// how every prediction read from it is labelled.
    pub fn label(&self) -> String {
        let mut nodes: Vec<String> = self.rows.iter().flat_map(|r| r.nodes.clone()).collect();
        nodes.sort();
        nodes.dedup();
        format!("predicted from the shipped dataset ({}, other work amount)", nodes_phrase(&nodes, &self.here))
    }

    pub(crate) fn head() -> [&'static str; 5] {
        ["victim", "beside", "shipped", "repeats", "from"]
    }

    pub(crate) fn cells(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                vec![
                    r.victim.clone(),
                    r.beside.clone(),
                    format!("{:.2}", r.slowdown),
                    r.repeats.to_string(),
                    format!("{}, work {} beside {}", r.workload, r.work.0, r.work.1),
                ]
            })
            .collect()
    }

    pub(crate) fn bundle_lines(&self) -> Vec<String> {
        self.bundles
            .iter()
            .map(|b| {
                format!(
                    "shipped dataset {} ({} of node {}, exported {} UTC): {} rows, {} new in this store",
                    b.name,
                    b.workloads.join(", "),
                    b.node,
                    cosched_store::format_unix_utc(b.exported_unix.max(0) as u64),
                    b.rows,
                    b.added
                )
            })
            .collect()
    }

    pub(crate) fn caveat(&self) -> String {
        let regime = self.regime.map_or(String::new(), |g| format!(" (each pair's repeats in the {} regime where it has any)", g.name()));
        format!("the same programs measured at another work amount{regime}; assumed: a slowdown does not depend on the amount of work")
    }
}

impl Render for Shipped {
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        for l in self.bundle_lines() {
            d.line(l);
        }
        if self.rows.is_empty() {
            d.line("the shipped dataset has no pair of this workload's programs at any work amount");
        } else {
            d.line(format!("{}: {}", self.label(), self.caveat()));
            d.table(&Shipped::head(), self.cells());
        }
        if !self.missing.is_empty() && !self.rows.is_empty() {
            d.line(format!("not in the shipped dataset at any work amount: {}", self.missing.join(", ")));
        }
        d
    }
}

/// Imports every shipped bundle into `store`: rows already there are not
/// added again, so a kept `--db` takes them once.
pub fn import_shipped(store: &mut Store) -> anyhow::Result<Vec<ShippedBundle>> {
    let mut out = Vec::new();
    for (name, bytes) in SHIPPED {
        let bundle = cosched_store::Bundle::read(Path::new(name), bytes)?;
        let workloads = bundle.workloads()?;
        let merged = store.import_bundle(&bundle)?;
        out.push(ShippedBundle {
            name: name.to_string(),
            node: bundle.info.hostname.clone(),
            exported_unix: bundle.info.exported_unix,
            workloads,
            rows: merged.iter().map(|m| m.rows).sum(),
            added: merged.iter().map(|m| m.added).sum(),
        });
    }
    Ok(out)
}

/// The shipped dataset's slowdown of each ordered pair of `reps` (one job
/// of each program): the same two programs at another work amount in the
/// shipped workloads only, each pair's repeats in `regime` where it has
/// any.
pub(crate) fn shipped_predictions(
    store: &Store,
    w: &Workload,
    reps: &[&Job],
    regime: Option<CacheRegime>,
    bundles: Vec<ShippedBundle>,
    here: &str,
) -> anyhow::Result<Shipped> {
    let keys = cosched_learn::knowledge::jobs_by_program(store, w)?;
    let key_of = |job: &str| keys.iter().find(|(_, jobs)| jobs.iter().any(|j| j == job)).map(|(k, _)| k.clone());
    let mut asked = Vec::new();
    for v in reps {
        for o in reps {
            if let (Some(kv), Some(ko)) = (key_of(&v.name), key_of(&o.name)) {
                asked.push(((v.name.clone(), o.name.clone()), (kv, ko)));
            }
        }
    }
    let workloads: Vec<String> = bundles.iter().flat_map(|b| b.workloads.clone()).collect();
    let wanted: Vec<(String, String)> = asked.iter().map(|(_, k)| k.clone()).collect();
    let choice = regime.map_or(RegimeChoice::Any, RegimeChoice::Only);
    let found = other_amounts(store, &wanted, choice, &KbScope::default(), &workloads)?;
    let (mut rows, mut missing) = (Vec::new(), Vec::new());
    for ((v, o), (kv, ko)) in &asked {
        match found.iter().find(|f| f.victim == *kv && f.beside == *ko) {
            Some(f) => rows.push(ShippedRow {
                victim: v.clone(),
                beside: o.clone(),
                slowdown: f.median(),
                repeats: f.slowdowns.len(),
                workload: f.workload.clone(),
                work: f.work,
                nodes: f.nodes.clone(),
            }),
            None => missing.push(format!("{v} beside {o}")),
        }
    }
    Ok(Shipped { bundles, rows, missing, here: here.to_string(), regime })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::DemoWorkload;

    #[test]
    fn every_bundle_in_data_is_built_into_the_demo() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".bundle"))
            .map(|n| format!("data/{n}"))
            .collect();
        on_disk.sort();
        let mut built: Vec<String> = SHIPPED.iter().map(|(n, _)| n.to_string()).collect();
        built.sort();
        assert_eq!(built, on_disk, "a bundle in data/ and not in SHIPPED is one the demo never predicts from");
    }

    #[test]
    fn the_built_in_dataset_imports_whole_once_and_a_second_import_adds_nothing() {
        let mut store = Store::open_in_memory().unwrap();
        let first = import_shipped(&mut store).unwrap();
        assert!(first.iter().all(|b| b.rows > 0 && b.added == b.rows), "{first:?}");
        assert_eq!(first[0].workloads, ["io-half", "io-half-long"]);
        assert_eq!(first[0].node, "vm");
        let again = import_shipped(&mut store).unwrap();
        assert!(again.iter().all(|b| b.added == 0), "{again:?}");
    }

    /// Stage 3 on the io-half workload as the demo names and sizes it,
    /// with the calibrations the dataset brought standing in for this
    /// node's (the demo calibrates first; a unit test runs no kernel).
    #[test]
    fn the_shipped_dataset_predicts_every_pair_of_io_half_and_labels_where_from() {
        let mut store = Store::open_in_memory().unwrap();
        let bundles = import_shipped(&mut store).unwrap();
        let text = crate::demo::demo_workload_text(DemoWorkload::IoHalf, 1.0);
        let w = cosched_model::workload::parse_workload(&text, "w.toml", Some(2)).unwrap();
        assert_eq!(w.name, "io-half-demo");
        let reps = crate::demo::representatives(&w);
        let s = shipped_predictions(&store, &w, &reps, None, bundles, "elsewhere").unwrap();
        let pairs: Vec<(&str, &str, &str)> = s.rows.iter().map(|r| (r.victim.as_str(), r.beside.as_str(), r.workload.as_str())).collect();
        assert_eq!(
            pairs,
            [("io.1", "io.1", "io-half"), ("io.1", "flops.1", "io-half"), ("flops.1", "io.1", "io-half"), ("flops.1", "flops.1", "io-half")],
            "every ordered pair, from io-half (1.5 s a job there: nearer 1 s than io-half-long's 4 s)"
        );
        assert!(s.missing.is_empty());
        assert_eq!(s.label(), "predicted from the shipped dataset (node vm, another node's, other work amount)");
        let printed = s.doc().text();
        assert!(printed.starts_with("shipped dataset data/io-half.bundle (io-half, io-half-long of node vm, exported "), "{printed}");
        assert!(printed.contains("predicted from the shipped dataset (node vm, another node's, other work amount): the same programs measured at another work amount; assumed: a slowdown does not depend on the amount of work"), "{printed}");
        let on_vm = Shipped { here: "vm".into(), ..s.clone() };
        assert_eq!(on_vm.label(), "predicted from the shipped dataset (node vm, other work amount)");
    }

    /// The same on memory-half: its triads come from the shipped
    /// memory-half campaign, read in the regime the demo found.
    #[test]
    fn the_shipped_dataset_predicts_every_pair_of_memory_half() {
        let mut store = Store::open_in_memory().unwrap();
        let bundles = import_shipped(&mut store).unwrap();
        assert_eq!(bundles.len(), 2, "io-half and memory-half");
        let text = crate::demo::demo_workload_text(DemoWorkload::MemoryHalf, 1.0);
        let w = cosched_model::workload::parse_workload(&text, "w.toml", Some(2)).unwrap();
        let reps = crate::demo::representatives(&w);
        let s = shipped_predictions(&store, &w, &reps, Some(CacheRegime::Shared), bundles, "vm").unwrap();
        assert!(s.missing.is_empty(), "{:?}", s.missing);
        let triads = s.rows.iter().find(|r| r.victim == "triad.1" && r.beside == "triad.1").expect("triad beside triad");
        assert_eq!(triads.workload, "memory-half");
        assert!(triads.slowdown > 1.1, "two triads contend: {}", triads.slowdown);
    }
}
