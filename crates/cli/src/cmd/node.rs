//! `cosched node`: show the topology of this node.
use std::collections::BTreeSet;
use std::fmt::Write as _;

use clap::{Args, ValueEnum};
use cosched_app::node::{counts_line, node, sysfs_snapshot, LatencyRequest, LatencyRow, NodeRequest};
use cosched_model::topology::{format_bytes, format_cpulist, Node, TopologySource};

use super::common::JsonArgs;

#[derive(Args, Debug)]
pub struct NodeArgs {
    #[command(flatten)]
    pub json: JsonArgs,

    /// Read the topology from this source only [default: hwloc when lstopo is
    /// installed, else sysfs].
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub source: Option<Source>,

    /// Print the /sys and /proc files the topology is read from, in the
    /// snapshot format of the test fixtures, so another machine can be added
    /// to the tests.
    #[arg(long, conflicts_with_all = ["json", "source"])]
    pub sysfs_snapshot: bool,

    /// Also measure core-to-core latency: a cache line bounced between two
    /// pinned threads, for each pair of CPUs (see below).
    #[arg(long, conflicts_with = "sysfs_snapshot")]
    pub latency: bool,

    /// CPUs whose pairs --latency measures [default: all when there are at
    /// most 8, else CPU 0 against each other CPU].
    #[arg(long, value_name = "LIST", requires = "latency")]
    pub cpus: Option<String>,

    /// Round trips per measurement of a pair.
    #[arg(long, default_value_t = 200_000, value_name = "N", requires = "latency")]
    pub round_trips: u64,

    /// Measurements per pair (median and range shown).
    #[arg(long, default_value_t = 5, value_name = "N", requires = "latency")]
    pub repeats: usize,
}

fn render_latency(rows: &[LatencyRow], args: &NodeArgs) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let s = &r.round_trip_ns;
            vec![
                format!("{} <-> {}", r.a, r.b),
                format!("{:.0} ({:.0}-{:.0}, n={})", s.median, s.min, s.max, s.n),
                format!("{:.0}", s.median / 2.0),
                r.declared_shared.clone().unwrap_or_else(|| "none".into()),
            ]
        })
        .collect();
    format!(
        "{}\ncore-to-core latency: one cache line bounced {} times between two threads pinned to the pair, {} measurements each; \
         tens of ns: the CPUs share a cache; hundreds: the line crosses a chiplet or socket (a VM's vCPUs may sit on different ones \
         whatever the declared topology says, and may move).\n",
        cosched_report::table(&["CPUs", "round trip ns, median (min-max, n)", "one way ns", "declared shared cache"], &body),
        args.round_trips,
        args.repeats,
    )
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// hwloc's `lstopo --of xml`.
    Hwloc,
    /// /sys/devices/system and /proc.
    Sysfs,
}

impl From<Source> for TopologySource {
    fn from(s: Source) -> Self {
        match s {
            Source::Hwloc => TopologySource::Hwloc,
            Source::Sysfs => TopologySource::Sysfs,
        }
    }
}

pub fn run(args: NodeArgs) -> anyhow::Result<()> {
    if args.sysfs_snapshot {
        print!("{}", sysfs_snapshot()?);
        return Ok(());
    }
    let latency = args.latency.then(|| LatencyRequest { cpus: args.cpus.clone(), round_trips: args.round_trips, repeats: args.repeats });
    let r = node(&NodeRequest { source: args.source.map(Into::into), latency }, &super::common::ctx())?;
    if args.json.json {
        return super::common::print_json(&r);
    }
    print!("{}", render(&r.node, r.huge_pages.as_ref()));
    if let Some(rows) = &r.latency {
        print!("\n{}", render_latency(rows, &args));
    }
    Ok(())
}

/// The human-readable report: header, counts, NUMA nodes, caches, notes.
fn render(n: &Node, huge_pages: Option<&cosched_model::provenance::HugePages>) -> String {
    let mut out = String::new();
    let unknown = || "unknown".to_string();
    let _ = writeln!(
        out,
        "host    {}",
        n.hostname.clone().unwrap_or_else(unknown)
    );
    let _ = writeln!(
        out,
        "CPU     {}",
        n.cpu_model.clone().unwrap_or_else(unknown)
    );
    let _ = writeln!(
        out,
        "memory  {}",
        n.memory_bytes.map(format_bytes).unwrap_or_else(unknown)
    );
    let _ = writeln!(out, "pages   {}", huge_pages.map_or("THP policy not readable".to_string(), |h| h.describe()));
    let _ = writeln!(out, "source  {}", n.source);
    let _ = writeln!(out, "\n{}", counts_line(n));
    if n.smt_width() > 1 {
        if let Some(core) = n.cores.iter().find(|c| c.pus.len() > 1) {
            let _ = writeln!(
                out,
                "SMT siblings share a core, e.g. CPUs {}",
                format_cpulist(&core.pus)
            );
        }
    }

    let numa_rows: Vec<Vec<String>> = n
        .numa_nodes
        .iter()
        .map(|numa| {
            let cores = n.cores_of_numa(numa.os_index);
            let sockets: BTreeSet<u32> = cores.iter().map(|c| c.socket).collect();
            let sockets: Vec<u32> = sockets.into_iter().collect();
            vec![
                numa.os_index.to_string(),
                if sockets.is_empty() {
                    "-".into()
                } else {
                    format_cpulist(&sockets)
                },
                if numa.cpus.is_empty() {
                    "-".into()
                } else {
                    format_cpulist(&numa.cpus)
                },
                cores.len().to_string(),
                numa.memory_bytes
                    .map(format_bytes)
                    .unwrap_or_else(|| "?".into()),
            ]
        })
        .collect();
    let _ = writeln!(
        out,
        "\n{}",
        cosched_report::table(
            &["NUMA node", "socket", "CPUs", "cores", "memory"],
            &numa_rows
        )
    );

    let groups = n.cache_groups();
    if groups.is_empty() {
        let _ = writeln!(out, "\nno cache information");
    } else {
        let cache_rows: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                vec![
                    g.kind.label(g.level),
                    format_bytes(g.size_bytes),
                    g.instances.to_string(),
                    g.pus_per_instance.to_string(),
                    g.line_bytes
                        .map(|l| format!("{l} B"))
                        .unwrap_or_else(|| "?".into()),
                ]
            })
            .collect();
        let _ = writeln!(
            out,
            "\n{}",
            cosched_report::table(
                &["cache", "size each", "instances", "PUs sharing one", "line"],
                &cache_rows
            )
        );
    }
    let domain_rows: Vec<Vec<String>> = cosched_model::placement::domains(n)
        .iter()
        .map(|d| vec![d.socket.to_string(), d.numa.map_or("-".into(), |k| k.to_string()), format_cpulist(&d.cpus)])
        .collect();
    let levels: Vec<&str> = cosched_model::placement::levels_offered(n).iter().map(|l| l.name()).collect();
    let _ = writeln!(
        out,
        "\nplacement domains (last-level caches, as declared; on a VM `--latency` tells whether they hold):\n{}\nsharing levels between CPUs here: {}",
        cosched_report::table(&["socket", "NUMA node", "CPUs"], &domain_rows),
        levels.join(", ")
    );
    for note in &n.notes {
        let _ = writeln!(out, "\nnote: {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::topology::parse_hwloc_xml;

    #[test]
    fn render_shows_counts_numa_and_caches() {
        let xml = r#"<topology version="2.0"><object type="Machine"><info name="HostName" value="box"/>
          <object type="Package" os_index="0"><object type="NUMANode" os_index="0" local_memory="1073741824"/>
            <object type="L3Cache" depth="3" cache_size="8388608" cache_linesize="64" cache_type="0">
              <object type="Core" os_index="0"><object type="PU" os_index="0"/><object type="PU" os_index="2"/></object>
              <object type="Core" os_index="1"><object type="PU" os_index="1"/><object type="PU" os_index="3"/></object>
            </object></object></object></topology>"#;
        let thp = cosched_model::provenance::HugePages { enabled: "madvise".into(), defrag: "never".into() };
        let text = render(&parse_hwloc_xml(xml).unwrap(), Some(&thp));
        assert!(text.contains("host    box"), "{text}");
        assert!(text.contains("pages   THP madvise (defrag never)"), "{text}");
        assert!(
            text.contains("1 socket, 1 NUMA node, 2 cores, 4 PUs, 2 threads per core (SMT)"),
            "{text}"
        );
        assert!(text.contains("e.g. CPUs 0,2"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains("0-3") && l.contains("1 GiB")),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains("L3") && l.contains("8 MiB") && l.contains("64 B")),
            "{text}"
        );
    }
}
