//! `cosched node` run as a binary: JSON matches /sys, sources can be forced,
//! a missing or broken hwloc falls back to /sys with a note.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use cosched_model::topology::{parse_cpulist, parse_sysfs, MapView, Node, TopologySource};

fn cosched(args: &[&str], path_env: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cosched"));
    cmd.args(args);
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    cmd.output().expect("cosched runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_node(o: &Output) -> Node {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not a Node as JSON ({e}): {}", stdout(o)))
}

fn online_cpus() -> Vec<u32> {
    parse_cpulist(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap()).unwrap()
}

fn hwloc_installed() -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p)
            .any(|d| d.join("lstopo").is_file() || d.join("lstopo-no-graphics").is_file())
    })
}

#[test]
fn json_counts_every_online_cpu() {
    let node = json_node(&cosched(&["node", "--json"], None));
    assert_eq!(node.n_pus(), online_cpus().len());
    assert_eq!(node.pus(), online_cpus());
    let expected = if hwloc_installed() {
        TopologySource::Hwloc
    } else {
        TopologySource::Sysfs
    };
    assert_eq!(node.source, expected);
    assert!(!node.numa_nodes.is_empty());
}

#[test]
fn both_sources_can_be_forced_and_agree() {
    let fs = json_node(&cosched(&["node", "--json", "--source", "sysfs"], None));
    assert_eq!(fs.source, TopologySource::Sysfs);
    assert_eq!(fs.pus(), online_cpus());
    if !hwloc_installed() {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "the hwloc half: lstopo is not installed");
        return;
    }
    let hw = json_node(&cosched(&["node", "--json", "--source", "hwloc"], None));
    assert_eq!(hw.source, TopologySource::Hwloc);
    assert_eq!(
        (hw.cores.clone(), hw.caches.clone(), hw.sockets),
        (fs.cores.clone(), fs.caches.clone(), fs.sockets)
    );
    assert_eq!(
        hw.numa_nodes.iter().map(|n| &n.cpus).collect::<Vec<_>>(),
        fs.numa_nodes.iter().map(|n| &n.cpus).collect::<Vec<_>>()
    );
}

#[test]
fn human_output_has_header_counts_and_tables() {
    let o = cosched(&["node"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "host ",
        "CPU ",
        "memory ",
        "source ",
        "NUMA node",
        "cache",
        "PUs sharing one",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
    let pus = online_cpus().len();
    let word = if pus == 1 { "PU" } else { "PUs" };
    assert!(text.contains(&format!("{pus} {word}")), "{text}");
}

#[test]
fn without_hwloc_it_falls_back_to_sysfs_and_says_why() {
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().to_str().unwrap();
    let node = json_node(&cosched(&["node", "--json"], Some(path)));
    assert_eq!(node.source, TopologySource::Sysfs);
    assert!(
        node.notes
            .iter()
            .any(|n| n.contains("hwloc (lstopo) is not installed")),
        "{:?}",
        node.notes
    );

    let o = cosched(&["node", "--source", "hwloc"], Some(path));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("apt install hwloc"), "{}", stderr(&o));
}

#[test]
fn a_broken_lstopo_falls_back_with_its_error_in_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("lstopo-no-graphics");
    write_script(
        &fake,
        "#!/bin/sh\necho 'lstopo: cannot open /sys' >&2\nexit 1\n",
    );
    let node = json_node(&cosched(
        &["node", "--json"],
        Some(dir.path().to_str().unwrap()),
    ));
    assert_eq!(node.source, TopologySource::Sysfs);
    assert!(
        node.notes[0].contains("cannot open /sys"),
        "{:?}",
        node.notes
    );

    write_script(&fake, "#!/bin/sh\necho '<topology'\n");
    let node = json_node(&cosched(
        &["node", "--json"],
        Some(dir.path().to_str().unwrap()),
    ));
    assert_eq!(node.source, TopologySource::Sysfs);
    assert!(
        node.notes[0].contains("cannot read the output"),
        "{:?}",
        node.notes
    );
}

fn write_script(path: &Path, body: &str) {
    let _ = std::fs::remove_file(path);
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn sysfs_snapshot_reads_back_as_this_node() {
    let o = cosched(&["node", "--sysfs-snapshot"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("# cosched sysfs snapshot of "), "{text}");
    let node = parse_sysfs(&MapView::from_snapshot(&text).unwrap()).unwrap();
    assert_eq!(node.pus(), online_cpus());
}

#[test]
fn bad_usage_exits_2_and_help_has_an_example() {
    let o = cosched(&["node", "--source", "lspci"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("hwloc") && stderr(&o).contains("sysfs"),
        "{}",
        stderr(&o)
    );
    let o = cosched(&["node", "--help"], None);
    assert!(o.status.success());
    assert!(stdout(&o).contains("Example"), "{}", stdout(&o));
    assert!(stdout(&o).contains("--source"), "{}", stdout(&o));
}
