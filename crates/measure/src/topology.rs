//! Detecting this node's topology: hwloc's `lstopo` when installed, /sys otherwise.
//!
//! The parsing lives in `cosched_model::topology`; this module only fetches
//! the text (runs `lstopo`, reads files) and fills in what one source lacks
//! from the running system (host name, the kernel's MemTotal).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cosched_model::topology::{
    meminfo_total, parse_hwloc_xml, parse_sysfs, MapView, RecordingView, SysfsView,
};
pub use cosched_model::topology::{Node, TopologyError, TopologySource};

/// hwloc's commands, in order of preference: the `-no-graphics` build does
/// not pull in X11/cairo and starts faster; both print the same XML.
const LSTOPO: [&str; 2] = ["lstopo-no-graphics", "lstopo"];

/// `--no-io` skips the PCI walk, which is the slow part and holds no CPUs;
/// `--disallowed` keeps CPUs a cgroup hides from this process, so that hwloc
/// describes the whole node as /sys does.
const LSTOPO_ARGS: [&str; 5] = ["--of", "xml", "--no-io", "--disallowed", "-"];

/// A machine whose `lstopo` takes longer than this is broken in a way the
/// /sys fallback is more likely to survive.
const LSTOPO_TIMEOUT: Duration = Duration::from_secs(20);

/// Why the topology could not be detected.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    #[error("hwloc is not installed: neither lstopo-no-graphics nor lstopo is on PATH; install it (`apt install hwloc`) or read the topology from /sys")]
    NoLstopo,
    #[error("`{command}` failed: {reason}")]
    Lstopo { command: String, reason: String },
    #[error("cannot read the output of `{command}`: {error}")]
    HwlocParse {
        command: String,
        error: TopologyError,
    },
    #[error("reading the topology from /sys: {0}")]
    Sysfs(TopologyError),
    #[error("{hwloc}; reading /sys instead also failed: {sysfs}")]
    Both {
        hwloc: Box<DetectError>,
        sysfs: TopologyError,
    },
}

/// The real /sys and /proc, optionally under another root (a copied tree).
#[derive(Debug, Clone)]
pub struct RealSysfs {
    root: PathBuf,
}

impl RealSysfs {
    /// The running system's /sys and /proc.
    pub fn new() -> Self {
        RealSysfs {
            root: PathBuf::from("/"),
        }
    }

    /// A tree whose `sys/` and `proc/` sit under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        RealSysfs { root: root.into() }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }
}

impl Default for RealSysfs {
    fn default() -> Self {
        RealSysfs::new()
    }
}

impl SysfsView for RealSysfs {
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.path(path)).ok()
    }

    fn list(&self, dir: &str) -> Vec<String> {
        match std::fs::read_dir(self.path(dir)) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// This node's topology: from hwloc when `lstopo` is on PATH, else from /sys.
/// When hwloc is present but fails, /sys is used and the node's notes say why.
pub fn detect() -> Result<Node, DetectError> {
    match from_hwloc() {
        Ok(node) => Ok(node),
        Err(hwloc) => {
            let why = match &hwloc {
                DetectError::NoLstopo => "hwloc (lstopo) is not installed".to_string(),
                other => other.to_string(),
            };
            match from_sysfs() {
                Ok(mut node) => {
                    node.notes.insert(0, format!("read from /sys: {why}"));
                    Ok(node)
                }
                Err(DetectError::Sysfs(sysfs)) => Err(DetectError::Both {
                    hwloc: Box::new(hwloc),
                    sysfs,
                }),
                Err(other) => Err(other),
            }
        }
    }
}

/// This node's topology from the given source only, without falling back.
pub fn detect_with(source: TopologySource) -> Result<Node, DetectError> {
    match source {
        TopologySource::Hwloc => from_hwloc(),
        TopologySource::Sysfs => from_sysfs(),
    }
}

/// Reads the topology from this machine's /sys and also returns the files it
/// read as a snapshot, the form the sysfs test fixtures of other machines
/// take (`MapView::to_snapshot`).
pub fn sysfs_snapshot() -> Result<(Node, MapView), DetectError> {
    let real = RealSysfs::new();
    let recorder = RecordingView::new(&real);
    let node = parse_sysfs(&recorder).map_err(DetectError::Sysfs)?;
    let mut snapshot = recorder.into_snapshot();
    // The parser reads only the first `model name`; the first processor's
    // block is enough, and keeps a 256-CPU machine's snapshot small.
    if let Some(cpuinfo) = snapshot.0.get_mut("/proc/cpuinfo") {
        if let Some(end) = cpuinfo.find("\n\n") {
            cpuinfo.truncate(end + 1);
        }
    }
    Ok((fill_hostname(node), snapshot))
}

fn from_sysfs() -> Result<Node, DetectError> {
    parse_sysfs(&RealSysfs::new())
        .map(fill_hostname)
        .map_err(DetectError::Sysfs)
}

fn from_hwloc() -> Result<Node, DetectError> {
    let program = LSTOPO
        .iter()
        .find_map(|name| on_path(name))
        .ok_or(DetectError::NoLstopo)?;
    let command = format!("{} {}", program.display(), LSTOPO_ARGS.join(" "));
    let xml = run_with_timeout(&program, &LSTOPO_ARGS, LSTOPO_TIMEOUT).map_err(|reason| {
        DetectError::Lstopo {
            command: command.clone(),
            reason,
        }
    })?;
    let mut node =
        parse_hwloc_xml(&xml).map_err(|error| DetectError::HwlocParse { command, error })?;
    // hwloc's XML has no MemTotal, only per-NUMA-node memory; the kernel's
    // figure is the one capacity decisions need.
    if let Some(total) = RealSysfs::new()
        .read("/proc/meminfo")
        .and_then(|m| meminfo_total(&m))
    {
        node.memory_bytes = Some(total);
        if let Some(note) = node.memory_disagreement() {
            node.notes.push(note);
        }
    }
    Ok(fill_hostname(node))
}

fn fill_hostname(mut node: Node) -> Node {
    if node.hostname.is_none() {
        node.hostname = nix::sys::utsname::uname()
            .ok()
            .map(|u| u.nodename().to_string_lossy().into_owned())
            .filter(|h| !h.is_empty());
    }
    node
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `program args`, returns its stdout; the error says how it failed,
/// with its stderr.
fn run_with_timeout(program: &Path, args: &[&str], timeout: Duration) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    // Read both pipes on their own threads: a large XML would otherwise fill
    // the pipe and block lstopo while we wait for it to exit.
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).map(|_| s)
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s; killed", timeout.as_secs()));
            }
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    let stdout = out_reader
        .join()
        .map_err(|_| "stdout reader panicked".to_string())?;
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() {
        let stderr = stderr.trim();
        return Err(if stderr.is_empty() {
            format!("{status}")
        } else {
            format!("{status}: {stderr}")
        });
    }
    stdout.map_err(|e| format!("its output is not UTF-8 text: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::topology::parse_cpulist;

    fn online() -> Vec<u32> {
        parse_cpulist(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap()).unwrap()
    }

    #[test]
    fn sysfs_detection_finds_every_online_cpu() {
        let node = detect_with(TopologySource::Sysfs).unwrap();
        assert_eq!(node.source, TopologySource::Sysfs);
        assert_eq!(node.pus(), online());
        assert!(node.hostname.is_some());
        assert!(node.memory_bytes.is_some_and(|m| m > 0));
    }

    #[test]
    fn hwloc_and_sysfs_agree_on_this_machine() {
        let hw = match detect_with(TopologySource::Hwloc) {
            Err(DetectError::NoLstopo) => {
                cosched_testkit::skip(cosched_testkit::Lacks::Installed, "hwloc (lstopo) is not installed");
                return;
            }
            other => other.unwrap(),
        };
        let fs = detect_with(TopologySource::Sysfs).unwrap();
        assert_eq!(hw.source, TopologySource::Hwloc);
        assert_eq!(hw.cores, fs.cores);
        assert_eq!(hw.sockets, fs.sockets);
        assert_eq!(hw.numa_nodes, fs.numa_nodes);
        assert_eq!(hw.caches, fs.caches);
        assert_eq!(hw.memory_bytes, fs.memory_bytes);
    }

    #[test]
    fn auto_detection_prefers_hwloc_when_installed() {
        let node = detect().unwrap();
        let expected = if LSTOPO.iter().any(|n| on_path(n).is_some()) {
            TopologySource::Hwloc
        } else {
            TopologySource::Sysfs
        };
        assert_eq!(node.source, expected);
    }

    #[test]
    fn snapshot_reparses_to_the_same_node() {
        let (node, snap) = sysfs_snapshot().unwrap();
        let again =
            parse_sysfs(&MapView::from_snapshot(&snap.to_snapshot("test")).unwrap()).unwrap();
        assert_eq!(again.cores, node.cores);
        assert_eq!(again.caches, node.caches);
        assert_eq!(again.numa_nodes, node.numa_nodes);
        assert!(snap.0.contains_key("/sys/devices/system/cpu/online"));
    }

    #[test]
    fn real_sysfs_reads_a_copied_tree() {
        let dir = tempfile::tempdir().unwrap();
        let write = |p: &str, c: &str| {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        };
        write("sys/devices/system/cpu/online", "0-1\n");
        for cpu in 0..2 {
            write(
                &format!("sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"),
                "0\n",
            );
            write(
                &format!("sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list"),
                "0-1\n",
            );
        }
        write("sys/devices/system/node/node0/cpulist", "0-1\n");
        write(
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal: 1024 kB\n",
        );
        write("sys/devices/system/node/online", "0\n");
        let view = RealSysfs::at(dir.path());
        assert_eq!(view.list("/sys/devices/system/node").len(), 2);
        let node = parse_sysfs(&view).unwrap();
        assert_eq!((node.n_cores(), node.n_pus(), node.smt_width()), (1, 2, 2));
        assert_eq!(node.numa_nodes[0].memory_bytes, Some(1 << 20));
    }

    #[test]
    fn a_failing_command_reports_its_stderr() {
        let e = run_with_timeout(
            Path::new("/bin/sh"),
            &["-c", "echo oops >&2; exit 3"],
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(e.contains("oops") && e.contains('3'), "{e}");
        let e = run_with_timeout(
            Path::new("/bin/sh"),
            &["-c", "exec sleep 5"],
            Duration::from_millis(50),
        )
        .unwrap_err();
        assert!(e.contains("killed"), "{e}");
        let e = run_with_timeout(
            Path::new("/nonexistent/lstopo"),
            &[],
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(e.contains("cannot start"), "{e}");
    }
}
