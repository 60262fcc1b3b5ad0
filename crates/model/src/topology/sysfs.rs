//! Linux's /sys and /proc, read through a [`SysfsView`].
//!
//! Files read (all optional except the first):
//! - `/sys/devices/system/cpu/online`: the PUs;
//! - `/sys/devices/system/cpu/cpuN/topology/{physical_package_id,core_cpus_list}`
//!   (`thread_siblings_list` on kernels before 5.3);
//! - `/sys/devices/system/cpu/cpuN/cache/indexK/{level,type,size,coherency_line_size,shared_cpu_list}`;
//! - `/sys/devices/system/node/nodeN/{cpulist,meminfo}`;
//! - `/proc/meminfo` (MemTotal), `/proc/cpuinfo` (model name),
//!   `/proc/sys/kernel/hostname`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use super::{parse_cpulist, Cache, CacheKind, NumaNode, Parts, TopologyError, TopologySource};

const CPU: &str = "/sys/devices/system/cpu";
const NODE: &str = "/sys/devices/system/node";

/// Read access to a /sys and /proc tree. The real one lives in
/// `cosched-measure`; [`MapView`] holds a snapshot in memory.
pub trait SysfsView {
    /// The content of the file at the absolute `path`, `None` if it does not
    /// exist or cannot be read.
    fn read(&self, path: &str) -> Option<String>;
    /// Names of the entries of directory `dir` (no path, no order promised),
    /// empty if it does not exist.
    fn list(&self, dir: &str) -> Vec<String>;
}

/// A /sys and /proc snapshot in memory: absolute path to file content.
/// Directories exist implicitly as prefixes of the paths.
///
/// Its text form (see [`MapView::from_snapshot`]) is how sysfs fixtures of
/// other machines are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapView(pub BTreeMap<String, String>);

impl SysfsView for MapView {
    fn read(&self, path: &str) -> Option<String> {
        self.0.get(path).cloned()
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let names: BTreeSet<&str> = self
            .0
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| k[prefix.len()..].split('/').next())
            .filter(|n| !n.is_empty())
            .collect();
        names.into_iter().map(str::to_string).collect()
    }
}

const HEADER: &str = "=== ";

impl MapView {
    /// Parses the snapshot text format: each file is a line `=== PATH`
    /// followed by the file's content, verbatim, up to the next such line.
    /// Lines before the first header starting with `#`, and blank ones, are
    /// comments.
    ///
    /// ```text
    /// # cosched sysfs snapshot
    /// === /sys/devices/system/cpu/online
    /// 0-3
    /// === /proc/meminfo
    /// MemTotal:       16318412 kB
    /// ```
    pub fn from_snapshot(text: &str) -> Result<MapView, TopologyError> {
        let mut map = BTreeMap::new();
        let mut current: Option<(String, String)> = None;
        for (i, line) in text.lines().enumerate() {
            if let Some(path) = line.strip_prefix(HEADER) {
                let path = path.trim();
                if !path.starts_with('/') {
                    return Err(TopologyError::Snapshot {
                        line: i + 1,
                        message: format!("path `{path}` is not absolute; expected `=== /sys/...`"),
                    });
                }
                if let Some((p, c)) = current.take() {
                    map.insert(p, c);
                }
                if map.contains_key(path) {
                    return Err(TopologyError::Snapshot {
                        line: i + 1,
                        message: format!("`{path}` appears twice"),
                    });
                }
                current = Some((path.to_string(), String::new()));
            } else if let Some((_, content)) = current.as_mut() {
                content.push_str(line);
                content.push('\n');
            } else if !(line.trim().is_empty() || line.starts_with('#')) {
                return Err(TopologyError::Snapshot {
                    line: i + 1,
                    message: "content before the first `=== /path` header".into(),
                });
            }
        }
        if let Some((p, c)) = current {
            map.insert(p, c);
        }
        Ok(MapView(map))
    }

    /// The snapshot text form, readable back by [`MapView::from_snapshot`].
    /// `comment` lines go first, each prefixed with `# `.
    pub fn to_snapshot(&self, comment: &str) -> String {
        let mut out = String::new();
        for line in comment.lines() {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
        for (path, content) in &self.0 {
            out.push_str(HEADER);
            out.push_str(path);
            out.push('\n');
            out.push_str(content);
            if !content.is_empty() && !content.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

/// Wraps a view and keeps a copy of every file read through it, so that
/// running [`parse_sysfs`] over the real /sys yields a snapshot holding exactly
/// the files the parser needs.
pub struct RecordingView<'a> {
    inner: &'a dyn SysfsView,
    seen: RefCell<BTreeMap<String, String>>,
}

impl<'a> RecordingView<'a> {
    pub fn new(inner: &'a dyn SysfsView) -> Self {
        RecordingView {
            inner,
            seen: RefCell::new(BTreeMap::new()),
        }
    }

    /// The files read so far.
    pub fn into_snapshot(self) -> MapView {
        MapView(self.seen.into_inner())
    }
}

impl SysfsView for RecordingView<'_> {
    fn read(&self, path: &str) -> Option<String> {
        let content = self.inner.read(path)?;
        self.seen
            .borrow_mut()
            .insert(path.to_string(), content.clone());
        Some(content)
    }

    fn list(&self, dir: &str) -> Vec<String> {
        self.inner.list(dir)
    }
}

/// Reads the topology from /sys and /proc through `view`.
///
/// Only `/sys/devices/system/cpu/online` is required. A missing topology
/// directory makes each CPU its own core on socket 0, a missing node
/// directory (kernel without NUMA) one NUMA node holding everything; both
/// are recorded in [`super::Node::notes`].
pub fn parse_sysfs(view: &dyn SysfsView) -> Result<super::Node, TopologyError> {
    let online_path = format!("{CPU}/online");
    let online_text = view
        .read(&online_path)
        .ok_or_else(|| TopologyError::Sysfs {
            path: online_path.clone(),
            message: "cannot be read; is sysfs mounted at /sys?".into(),
        })?;
    let online = cpulist_at(&online_path, &online_text)?;
    let online_set: BTreeSet<u32> = online.iter().copied().collect();

    let mut parts = Parts::default();
    let mut package: BTreeMap<u32, u32> = BTreeMap::new();
    let mut siblings: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &cpu in &online {
        let dir = format!("{CPU}/cpu{cpu}/topology");
        // Some architectures print -1 when the package is unknown.
        if let Some(p) = read_int(view, &format!("{dir}/physical_package_id"))?.filter(|&p| p >= 0)
        {
            package.insert(cpu, p as u32);
        }
        let list = [
            format!("{dir}/core_cpus_list"),
            format!("{dir}/thread_siblings_list"),
        ]
        .into_iter()
        .find_map(|p| view.read(&p).map(|c| (p, c)));
        if let Some((path, text)) = list {
            let mut set = cpulist_at(&path, &text)?;
            set.retain(|c| online_set.contains(c));
            if !set.contains(&cpu) {
                set.push(cpu);
                set.sort_unstable();
            }
            siblings.insert(cpu, set);
        }
    }
    let mut cores: BTreeSet<Vec<u32>> = siblings.values().cloned().collect();
    // A CPU whose own files are missing is still placed right when a sibling
    // names it; only CPUs nobody names become single-thread cores.
    let named: BTreeSet<u32> = cores.iter().flatten().copied().collect();
    let unplaced: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| !named.contains(c))
        .collect();
    if !unplaced.is_empty() {
        parts.notes.push(format!(
            "no core topology in sysfs for CPUs {}; each is counted as its own core",
            super::format_cpulist(&unplaced)
        ));
    }
    cores.extend(unplaced.iter().map(|&c| vec![c]));
    for pus in cores {
        let reported: BTreeSet<u32> = pus.iter().filter_map(|c| package.get(c).copied()).collect();
        if reported.len() > 1 {
            return Err(TopologyError::Inconsistent(format!(
                "CPUs {} share a core but report packages {}",
                super::format_cpulist(&pus),
                super::format_cpulist(&reported.into_iter().collect::<Vec<_>>())
            )));
        }
        parts
            .cores
            .push((reported.into_iter().next().unwrap_or(0), pus));
    }

    parts.numa_nodes = numa_nodes(view)?;
    let meminfo = view.read("/proc/meminfo").and_then(|m| meminfo_total(&m));
    if parts.numa_nodes.is_empty() {
        parts.notes.push(
            "no NUMA nodes in sysfs (kernel without NUMA); all CPUs and memory form node 0".into(),
        );
        parts.numa_nodes.push(NumaNode {
            os_index: 0,
            cpus: online.clone(),
            memory_bytes: meminfo,
        });
    }
    parts.memory_bytes = meminfo.or_else(|| parts.numa_nodes.iter().map(|n| n.memory_bytes).sum());

    let mut seen = BTreeSet::new();
    let mut incomplete = BTreeSet::new();
    for &cpu in &online {
        let dir = format!("{CPU}/cpu{cpu}/cache");
        let mut indices: Vec<String> = view
            .list(&dir)
            .into_iter()
            .filter(|n| n.starts_with("index"))
            .collect();
        indices.sort_by_key(|n| n["index".len()..].parse::<u32>().unwrap_or(u32::MAX));
        for index in indices {
            if let Some(cache) = cache(view, &format!("{dir}/{index}"), cpu, &mut incomplete)? {
                if seen.insert((cache.level, cache.kind, cache.cpus.clone())) {
                    parts.caches.push(cache);
                }
            }
        }
    }

    if !incomplete.is_empty() {
        // Some hypervisors expose cache directories with only part of the
        // files; such caches cannot be described and are left out.
        let cpus: Vec<u32> = incomplete.into_iter().collect();
        parts.notes.push(format!(
            "sysfs lacks level, type, size or shared_cpu_list of some caches of CPUs {}; those caches are left out",
            super::format_cpulist(&cpus)
        ));
    }

    parts.hostname = view
        .read("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string());
    parts.cpu_model = view.read("/proc/cpuinfo").and_then(|c| {
        c.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let mut node = parts.assemble(TopologySource::Sysfs)?;
    if let Some(note) = node.memory_disagreement() {
        node.notes.push(note);
    }
    Ok(node)
}

fn cpulist_at(path: &str, text: &str) -> Result<Vec<u32>, TopologyError> {
    parse_cpulist(text).map_err(|e| TopologyError::Sysfs {
        path: path.to_string(),
        message: e.to_string(),
    })
}

fn read_int(view: &dyn SysfsView, path: &str) -> Result<Option<i64>, TopologyError> {
    match view.read(path) {
        None => Ok(None),
        Some(t) => t
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| TopologyError::Sysfs {
                path: path.to_string(),
                message: format!("`{}` is not an integer", t.trim()),
            }),
    }
}

fn numa_nodes(view: &dyn SysfsView) -> Result<Vec<NumaNode>, TopologyError> {
    let mut out = Vec::new();
    for name in view.list(NODE) {
        let Some(os_index) = name
            .strip_prefix("node")
            .and_then(|i| i.parse::<u32>().ok())
        else {
            continue;
        };
        let cpulist_path = format!("{NODE}/{name}/cpulist");
        let cpus = match view.read(&cpulist_path) {
            Some(t) => cpulist_at(&cpulist_path, &t)?,
            None => Vec::new(),
        };
        let memory_bytes = view
            .read(&format!("{NODE}/{name}/meminfo"))
            .and_then(|m| meminfo_total(&m));
        out.push(NumaNode {
            os_index,
            cpus,
            memory_bytes,
        });
    }
    Ok(out)
}

/// `MemTotal` in bytes from /proc/meminfo (`MemTotal: 123 kB`) or a node's
/// meminfo (`Node 0 MemTotal: 123 kB`).
pub fn meminfo_total(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        if key.split_whitespace().last()? != "MemTotal" {
            return None;
        }
        let mut it = value.split_whitespace();
        let n: u64 = it.next()?.parse().ok()?;
        match it.next() {
            Some("kB") => n.checked_mul(1024),
            None => Some(n),
            Some(_) => None,
        }
    })
}

/// Parses a cache `size` file: `32K`, `32768K`, `1M`, or plain bytes.
fn cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1u64 << 10),
        'M' | 'm' => (&t[..t.len() - 1], 1 << 20),
        'G' | 'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// One `cache/indexK` directory of `cpu`. `Ok(None)` when the directory
/// lacks a file needed to describe the cache; `cpu` is then added to
/// `incomplete` so that one note can name all such CPUs.
fn cache(
    view: &dyn SysfsView,
    dir: &str,
    cpu: u32,
    incomplete: &mut BTreeSet<u32>,
) -> Result<Option<Cache>, TopologyError> {
    let file = |name: &str| {
        view.read(&format!("{dir}/{name}"))
            .map(|s| s.trim().to_string())
    };
    let bad = |name: &str, what: String| TopologyError::Sysfs {
        path: format!("{dir}/{name}"),
        message: what,
    };
    let (Some(level), Some(kind), Some(size)) = (file("level"), file("type"), file("size")) else {
        // Some hypervisors expose an index directory with only part of the
        // files; such a cache cannot be described and is left out.
        incomplete.insert(cpu);
        return Ok(None);
    };
    let level: u32 = level
        .parse()
        .map_err(|_| bad("level", format!("`{level}` is not a cache level")))?;
    let kind = match kind.to_ascii_lowercase().as_str() {
        "data" => CacheKind::Data,
        "instruction" => CacheKind::Instruction,
        "unified" => CacheKind::Unified,
        _ => {
            return Err(bad(
                "type",
                format!("`{kind}` is not Data, Instruction or Unified"),
            ))
        }
    };
    let size_bytes =
        cache_size(&size).ok_or_else(|| bad("size", format!("`{size}` is not a size like 32K")))?;
    if size_bytes == 0 {
        return Ok(None);
    }
    let line_bytes = match file("coherency_line_size") {
        Some(l) => Some(
            l.parse::<u32>()
                .map_err(|_| bad("coherency_line_size", format!("`{l}` is not a number")))?,
        ),
        None => None,
    }
    .filter(|&l| l > 0);
    let shared_path = format!("{dir}/shared_cpu_list");
    let Some(shared) = view.read(&shared_path) else {
        incomplete.insert(cpu);
        return Ok(None);
    };
    let mut cpus = cpulist_at(&shared_path, &shared)?;
    if !cpus.contains(&cpu) {
        cpus.push(cpu);
    }
    Ok(Some(Cache {
        level,
        kind,
        size_bytes,
        line_bytes,
        cpus,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(entries: &[(&str, &str)]) -> MapView {
        MapView(
            entries
                .iter()
                .map(|(p, c)| (p.to_string(), format!("{c}\n")))
                .collect(),
        )
    }

    #[test]
    fn map_view_lists_immediate_children_only() {
        let v = view(&[
            ("/sys/devices/system/node/node0/cpulist", "0"),
            ("/sys/devices/system/node/node1/cpulist", "1"),
            ("/sys/devices/system/node/online", "0-1"),
            ("/sys/devices/system/nodex", "x"),
        ]);
        assert_eq!(
            v.list("/sys/devices/system/node"),
            vec!["node0", "node1", "online"]
        );
        assert_eq!(
            v.list("/sys/devices/system/node/"),
            vec!["node0", "node1", "online"]
        );
        assert!(v.list("/nope").is_empty());
    }

    #[test]
    fn snapshot_text_round_trips() {
        let v = view(&[
            ("/proc/meminfo", "MemTotal: 1 kB\nMemFree: 0 kB"),
            ("/sys/devices/system/cpu/online", "0"),
        ]);
        let text = v.to_snapshot("two files\nfor a test");
        assert!(text.starts_with("# two files\n# for a test\n=== /proc/meminfo\n"));
        assert_eq!(MapView::from_snapshot(&text).unwrap(), v);
    }

    #[test]
    fn snapshot_errors_name_the_line() {
        let e = MapView::from_snapshot("# c\n0-3\n").unwrap_err();
        assert_eq!(
            e,
            TopologyError::Snapshot {
                line: 2,
                message: "content before the first `=== /path` header".into()
            }
        );
        let e = MapView::from_snapshot("=== /a\n1\n=== /a\n2\n").unwrap_err();
        assert!(
            e.to_string().contains("line 3") && e.to_string().contains("twice"),
            "{e}"
        );
        let e = MapView::from_snapshot("=== sys/a\n").unwrap_err();
        assert!(e.to_string().contains("not absolute"), "{e}");
    }

    #[test]
    fn missing_online_file_is_a_clear_error() {
        let e = parse_sysfs(&MapView::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/sys/devices/system/cpu/online: cannot be read"),
            "{e}"
        );
    }

    #[test]
    fn bad_cpulist_names_the_file() {
        let e = parse_sysfs(&view(&[("/sys/devices/system/cpu/online", "0-x")])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/sys/devices/system/cpu/online: bad cpulist `0-x"),
            "{e}"
        );
    }

    #[test]
    fn bare_kernel_gives_one_core_per_cpu_and_one_numa_node_with_notes() {
        let v = view(&[
            ("/sys/devices/system/cpu/online", "0-2"),
            ("/proc/meminfo", "MemTotal:  2048 kB"),
        ]);
        let n = parse_sysfs(&v).unwrap();
        assert_eq!((n.n_cores(), n.n_pus(), n.sockets), (3, 3, 1));
        assert_eq!(
            n.numa_nodes,
            vec![NumaNode {
                os_index: 0,
                cpus: vec![0, 1, 2],
                memory_bytes: Some(2 << 20)
            }]
        );
        assert_eq!(n.memory_bytes, Some(2 << 20));
        assert!(n.caches.is_empty());
        assert_eq!(n.notes.len(), 2, "{:?}", n.notes);
    }

    #[test]
    fn offline_siblings_are_dropped_and_unknown_package_is_socket_0() {
        let v = view(&[
            ("/sys/devices/system/cpu/online", "0"),
            (
                "/sys/devices/system/cpu/cpu0/topology/physical_package_id",
                "-1",
            ),
            (
                "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
                "0-1",
            ),
        ]);
        let n = parse_sysfs(&v).unwrap();
        assert_eq!(n.cores[0].pus, vec![0]);
        assert_eq!(n.cores[0].socket, 0);
    }

    #[test]
    fn bad_cache_files_are_errors_with_paths() {
        let base = [
            ("/sys/devices/system/cpu/online", "0"),
            ("/sys/devices/system/cpu/cpu0/cache/index0/level", "1"),
            ("/sys/devices/system/cpu/cpu0/cache/index0/type", "Data"),
            ("/sys/devices/system/cpu/cpu0/cache/index0/size", "32K"),
            (
                "/sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list",
                "0",
            ),
        ];
        let n = parse_sysfs(&view(&base)).unwrap();
        assert_eq!(n.caches[0].size_bytes, 32 << 10);
        assert_eq!(n.caches[0].cpus, vec![0]);
        let mut bad = base.to_vec();
        bad[3].1 = "lots";
        let e = parse_sysfs(&view(&bad)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/sys/devices/system/cpu/cpu0/cache/index0/size: `lots`"),
            "{e}"
        );
        let mut bad = base.to_vec();
        bad[2].1 = "Trace";
        assert!(parse_sysfs(&view(&bad))
            .unwrap_err()
            .to_string()
            .contains("Data, Instruction or Unified"));
        let incomplete: Vec<_> = base[..4].to_vec();
        let n = parse_sysfs(&view(&incomplete)).unwrap();
        assert!(n.caches.is_empty());
        assert!(
            n.notes
                .iter()
                .any(|m| m.contains("shared_cpu_list of some caches of CPUs 0")),
            "{:?}",
            n.notes
        );
    }

    #[test]
    fn meminfo_and_sizes_parse() {
        assert_eq!(
            meminfo_total("Node 1 MemFree: 5 kB\nNode 1 MemTotal:  10 kB\n"),
            Some(10240)
        );
        assert_eq!(meminfo_total("MemTotal: 7\n"), Some(7));
        assert_eq!(meminfo_total("MemFree: 7 kB\n"), None);
        assert_eq!(cache_size("32768K"), Some(32 << 20));
        assert_eq!(cache_size("1M"), Some(1 << 20));
        assert_eq!(cache_size("64"), Some(64));
        assert_eq!(cache_size("K"), None);
        assert_eq!(cache_size(""), None);
    }

    #[test]
    fn recording_view_keeps_what_was_read() {
        let v = view(&[("/sys/devices/system/cpu/online", "0"), ("/unrelated", "x")]);
        let rec = RecordingView::new(&v);
        parse_sysfs(&rec).unwrap();
        let snap = rec.into_snapshot();
        assert_eq!(
            snap.0.keys().collect::<Vec<_>>(),
            vec!["/sys/devices/system/cpu/online"]
        );
    }
}
