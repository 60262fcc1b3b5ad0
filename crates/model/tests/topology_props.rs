//! Properties of the cpulist functions and the parsers on arbitrary input:
//! no input makes them panic, and formatting then parsing gives the CPUs back.

use cosched_model::topology::{
    format_cpulist, parse_cpulist, parse_hwloc_xml, parse_sysfs, MapView, MAX_CPU_ID,
};
use proptest::prelude::*;

proptest! {
    #[test]
    fn cpulist_parse_never_panics_on_any_text(s in any::<String>()) {
        let _ = parse_cpulist(&s);
    }

    #[test]
    fn cpulist_parse_never_panics_on_cpulist_like_text(s in "[0-9,: /\\-]{0,40}") {
        if let Ok(cpus) = parse_cpulist(&s) {
            prop_assert!(cpus.windows(2).all(|w| w[0] < w[1]), "sorted and unique: {:?}", cpus);
            prop_assert!(cpus.iter().all(|&c| c <= MAX_CPU_ID));
        }
    }

    #[test]
    fn cpulist_format_then_parse_round_trips(cpus in proptest::collection::vec(0u32..=MAX_CPU_ID, 0..64)) {
        let mut expected = cpus.clone();
        expected.sort_unstable();
        expected.dedup();
        prop_assert_eq!(parse_cpulist(&format_cpulist(&cpus)).unwrap(), expected);
    }

    #[test]
    fn cpulist_dense_ranges_round_trip(start in 0u32..4096, lens in proptest::collection::vec(1u32..16, 1..8), gaps in proptest::collection::vec(1u32..8, 8)) {
        let mut cpus = Vec::new();
        let mut at = start;
        for (len, gap) in lens.iter().zip(&gaps) {
            cpus.extend(at..at + len);
            at += len + gap;
        }
        let text = format_cpulist(&cpus);
        prop_assert_eq!(text.split(',').count(), lens.len(), "one element per run: {}", text);
        prop_assert_eq!(parse_cpulist(&text).unwrap(), cpus);
    }

    #[test]
    fn hwloc_parse_never_panics(s in any::<String>()) {
        let _ = parse_hwloc_xml(&s);
    }

    #[test]
    fn sysfs_parse_never_panics(online in "[0-9,\\-]{0,12}", siblings in "[0-9,\\-]{0,8}", package in "-?[0-9]{0,3}", size in "[0-9]{0,6}[KMG]?") {
        let mut v = MapView::default();
        v.0.insert("/sys/devices/system/cpu/online".into(), online);
        for cpu in 0..4 {
            let d = format!("/sys/devices/system/cpu/cpu{cpu}");
            v.0.insert(format!("{d}/topology/core_cpus_list"), siblings.clone());
            v.0.insert(format!("{d}/topology/physical_package_id"), package.clone());
            v.0.insert(format!("{d}/cache/index0/level"), "2".into());
            v.0.insert(format!("{d}/cache/index0/type"), "Unified".into());
            v.0.insert(format!("{d}/cache/index0/size"), size.clone());
            v.0.insert(format!("{d}/cache/index0/shared_cpu_list"), siblings.clone());
        }
        let _ = parse_sysfs(&v);
    }

    #[test]
    fn snapshot_parse_never_panics(s in any::<String>()) {
        let _ = MapView::from_snapshot(&s);
    }
}
