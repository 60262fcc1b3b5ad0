//! The catalogue of fixed-work kernels.
//!
//! This is the single description of which kernels exist, what one unit of
//! their work is and which parameters they take. The `cosched-kernel` binary
//! runs them; the workload parser validates jobs against them; the CLI lists
//! them. Keeping it here (and not in the kernels crate) lets pure code validate
//! workloads without linking the kernels.

use std::collections::BTreeMap;

/// Type of a kernel parameter, used to validate workload files and command lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Non-negative integer.
    Uint,
    /// Floating point number.
    Float,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// Free text (e.g. a phase list or a directory).
    Text,
}

impl ParamKind {
    /// Human description of the expected value, for error messages.
    pub fn expected(&self) -> String {
        match self {
            ParamKind::Uint => "a non-negative integer".into(),
            ParamKind::Float => "a number".into(),
            ParamKind::Choice(c) => format!("one of {}", c.join(", ")),
            ParamKind::Text => "a string".into(),
        }
    }

    /// Checks a textual value (as given on a command line) against the kind.
    pub fn check(&self, value: &str) -> Result<(), String> {
        match self {
            ParamKind::Uint => value
                .parse::<u64>()
                .map(|_| ())
                .map_err(|_| format!("`{value}` is not {}", self.expected())),
            ParamKind::Float => match value.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(()),
                _ => Err(format!("`{value}` is not {}", self.expected())),
            },
            ParamKind::Choice(c) => {
                if c.contains(&value) {
                    Ok(())
                } else {
                    Err(format!("`{value}` is not {}", self.expected()))
                }
            }
            ParamKind::Text => Ok(()),
        }
    }
}

/// One parameter of a kernel. Names are snake_case; on the `cosched-kernel`
/// command line they become `--kebab-case` flags.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    /// Default value in command-line form.
    pub default: &'static str,
    pub help: &'static str,
}

impl ParamSpec {
    /// The command-line flag of this parameter (`array_mib` -> `--array-mib`).
    pub fn flag(&self) -> String {
        format!("--{}", self.name.replace('_', "-"))
    }
}

/// A kernel of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    pub name: &'static str,
    /// One line for `cosched-kernel --list`.
    pub summary: &'static str,
    /// The kind of node pressure it exerts (N / C / S class where it applies).
    pub pressure: &'static str,
    /// What one unit of `--work` is.
    pub unit: &'static str,
    pub params: &'static [ParamSpec],
    /// Work used by `cosched calibrate` for one timed run: big enough to be
    /// well above timer and start-up noise, small enough to repeat.
    pub calibration_work: u64,
    /// Whether `--threads` above 1 is meaningful.
    pub threaded: bool,
}

impl KernelSpec {
    pub fn param(&self, name: &str) -> Option<&'static ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Parameter values with defaults filled in, in catalogue order.
    pub fn resolve_params(
        &self,
        given: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        for k in given.keys() {
            if self.param(k).is_none() {
                return Err(format!(
                    "kernel `{}` has no parameter `{k}`; it takes {}",
                    self.name,
                    self.param_names()
                ));
            }
        }
        let mut out = BTreeMap::new();
        for p in self.params {
            let v = given.get(p.name).cloned().unwrap_or_else(|| p.default.to_string());
            p.kind
                .check(&v)
                .map_err(|e| format!("parameter `{}` of kernel `{}`: {e}", p.name, self.name))?;
            out.insert(p.name.to_string(), v);
        }
        Ok(out)
    }

    pub fn param_names(&self) -> String {
        if self.params.is_empty() {
            "no parameters".into()
        } else {
            self.params.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        }
    }
}

const TRANSPORTS: &[&str] = &["shm", "unix"];
const PIPE_SOURCES: &[&str] = &["zero", "memory"];
const DISTGEN_MODES: &[&str] = &["stream", "random", "chase"];
const SYSCALL_CALLS: &[&str] = &["getppid", "clock", "stat", "open", "read", "write"];

/// Every kernel, in the order `--list` prints them.
pub const KERNELS: &[KernelSpec] = &[
    KernelSpec {
        name: "compute",
        summary: "core-bound floating point in registers and L1 (class N)",
        pressure: "core (N)",
        unit: "1e6 fused multiply-adds",
        params: &[],
        calibration_work: 10000,
        threaded: true,
    },
    KernelSpec {
        name: "dgemm",
        summary: "blocked double-precision matrix multiply C += A*B",
        pressure: "core + cache (N)",
        unit: "one n x n multiply (2n^3 flops)",
        params: &[ParamSpec {
            name: "n",
            kind: ParamKind::Uint,
            default: "256",
            help: "matrix dimension",
        }],
        calibration_work: 150,
        threaded: true,
    },
    KernelSpec {
        name: "stream",
        summary: "STREAM triad a = b + s*c over arrays far larger than the LLC (class S)",
        pressure: "memory bandwidth (S)",
        unit: "one triad pass over the arrays",
        params: &[ParamSpec {
            name: "array_mib",
            kind: ParamKind::Uint,
            default: "64",
            help: "size of each of the three arrays in MiB (>= 4x LLC for STREAM rules)",
        }],
        calibration_work: 20,
        threaded: true,
    },
    KernelSpec {
        name: "cache",
        summary: "repeated sweeps over a working set that fits in the LLC (class C)",
        pressure: "last-level cache (C)",
        unit: "one sweep over the working set",
        params: &[ParamSpec {
            name: "ws_kib",
            kind: ParamKind::Uint,
            default: "0",
            help: "working set in KiB; 0 = half the LLC of this node",
        }],
        calibration_work: 500,
        threaded: true,
    },
    KernelSpec {
        name: "chase",
        summary: "random pointer chase, one dependent load at a time (latency-bound)",
        pressure: "memory latency",
        unit: "1e6 dependent loads",
        params: &[ParamSpec {
            name: "ws_mib",
            kind: ParamKind::Uint,
            default: "256",
            help: "size of the pointer ring in MiB",
        }],
        calibration_work: 3,
        threaded: true,
    },
    KernelSpec {
        name: "distgen",
        summary: "DistGen-style stressor: streams 64-byte blocks at given reuse distances",
        pressure: "cache / bandwidth at a chosen reuse distance",
        unit: "1e6 block accesses",
        params: &[
            ParamSpec {
                name: "sizes_kib",
                kind: ParamKind::Text,
                default: "16384",
                help: "comma-separated reuse distances (working sets) in KiB, e.g. 256,16384",
            },
            ParamSpec {
                name: "ratio",
                kind: ParamKind::Text,
                default: "",
                help: "comma-separated access shares of the distances (default equal)",
            },
            ParamSpec {
                name: "intensity",
                kind: ParamKind::Float,
                default: "1.0",
                help: "share of time spent accessing memory, 0 < x <= 1 (the rest pauses)",
            },
            ParamSpec {
                name: "mode",
                kind: ParamKind::Choice(DISTGEN_MODES),
                default: "stream",
                help: "order of the accesses in a sweep: stream (address order), random (a fixed pseudo-random order, no stride to prefetch) or chase (a linked list, one dependent load at a time; at most 8 distances)",
            },
        ],
        calibration_work: 150,
        threaded: true,
    },
    KernelSpec {
        name: "syscall",
        summary: "the SX-Aurora paper's micro-benchmark: system calls of a chosen type, as fast as possible or at a chosen rate",
        pressure: "kernel entry / system calls",
        unit: "1000 system calls",
        params: &[
            ParamSpec {
                name: "call",
                kind: ParamKind::Choice(SYSCALL_CALLS),
                default: "getppid",
                help: "getppid (kernel entry only), clock (clock_gettime through syscall(2), not the vDSO), stat (a path lookup), open (open and close /dev/null), read (4 KiB from /dev/zero) or write (4 KiB to /dev/null)",
            },
            ParamSpec {
                name: "rate",
                kind: ParamKind::Float,
                default: "0",
                help: "calls per second per thread at fixed intervals; 0 = as fast as possible",
            },
        ],
        calibration_work: 2000,
        threaded: true,
    },
    KernelSpec {
        name: "fileio",
        summary: "IOR-like: write, fsync and read back files in a temporary directory",
        pressure: "file I/O",
        unit: "1 MiB written, synced and read back",
        params: &[
            ParamSpec {
                name: "block_kib",
                kind: ParamKind::Uint,
                default: "1024",
                help: "size of one write / read call in KiB",
            },
            ParamSpec {
                name: "file_mib",
                kind: ParamKind::Uint,
                default: "16",
                help: "size of each file before fsync and read-back, in MiB",
            },
            ParamSpec {
                name: "dir",
                kind: ParamKind::Text,
                default: "",
                help: "directory for the temporary files (default: the system temp dir)",
            },
        ],
        calibration_work: 128,
        threaded: false,
    },
    KernelSpec {
        name: "pingpong",
        summary: "two processes exchanging messages (1 KiB - 4 MiB) over shared memory or a Unix socket",
        pressure: "communication",
        unit: "one round trip",
        params: &[
            ParamSpec {
                name: "msg_kib",
                kind: ParamKind::Uint,
                default: "64",
                help: "message size in KiB (the Xeon Phi study: 1 - 4096)",
            },
            ParamSpec {
                name: "transport",
                kind: ParamKind::Choice(TRANSPORTS),
                default: "shm",
                help: "shm (shared-memory ring) or unix (Unix stream socket)",
            },
        ],
        calibration_work: 5000,
        threaded: false,
    },
    KernelSpec {
        name: "pipe",
        summary: "a stream of bytes through a pipe from one process to another, as a shell pipeline moves data",
        pressure: "the kernel's pipe path (copies, wake-ups, context switches)",
        unit: "one MiB moved",
        params: &[
            ParamSpec {
                name: "chunk_kib",
                kind: ParamKind::Uint,
                default: "8",
                help: "size of each write in KiB (8: what head writes)",
            },
            ParamSpec {
                name: "read_kib",
                kind: ParamKind::Uint,
                default: "128",
                help: "size of each read in KiB (128: what cat reads)",
            },
            ParamSpec {
                name: "source",
                kind: ParamKind::Choice(PIPE_SOURCES),
                default: "zero",
                help: "zero (each chunk read from /dev/zero first, as head -c N /dev/zero does) or memory (one buffer written again and again)",
            },
        ],
        calibration_work: 200,
        threaded: false,
    },
    KernelSpec {
        name: "offload",
        summary: "accelerator-job pattern of the SX-Aurora paper: waits on the device, services system calls on the host",
        pressure: "host load from an accelerator job",
        unit: "one offload period",
        params: &[
            ParamSpec {
                name: "host_load",
                kind: ParamKind::Float,
                default: "0.2",
                help: "share of each period the host spends servicing the device, 0..1",
            },
            ParamSpec {
                name: "period_ms",
                kind: ParamKind::Uint,
                default: "10",
                help: "length of one period in ms on an idle host",
            },
        ],
        calibration_work: 100,
        threaded: false,
    },
    KernelSpec {
        name: "idle",
        summary: "sleeps: occupies a slot, exerts no pressure",
        pressure: "none",
        unit: "1 ms of sleep",
        params: &[],
        calibration_work: 500,
        threaded: false,
    },
    KernelSpec {
        name: "phased",
        summary: "a sequence of the kernels above, e.g. a serial phase then a parallel one",
        pressure: "changes by phase",
        unit: "one pass through all phases",
        params: &[ParamSpec {
            name: "phases",
            kind: ParamKind::Text,
            default: "compute:500:1,stream:10:2",
            help: "comma-separated KERNEL:WORK:THREADS phases, run in order (kernel params at defaults)",
        }],
        calibration_work: 2,
        threaded: false,
    },
];

/// Looks a kernel up by name.
pub fn kernel(name: &str) -> Option<&'static KernelSpec> {
    KERNELS.iter().find(|k| k.name == name)
}

/// Names of every kernel, for error messages.
pub fn kernel_names() -> String {
    KERNELS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

/// Arguments of `cosched-kernel` (after the program name) for one run:
/// `NAME --work N --threads T --param value...`. Parameters go in catalogue
/// order so command lines are stable; empty values ("let the kernel choose")
/// are left out, since an empty flag value would not mean the same.
pub fn kernel_args(name: &str, work: u64, threads: u32, params: &BTreeMap<String, String>) -> Vec<String> {
    let mut argv = vec![
        name.to_string(),
        "--work".to_string(),
        work.to_string(),
        "--threads".to_string(),
        threads.to_string(),
    ];
    let spec = kernel(name);
    let order: Vec<&str> = match spec {
        Some(s) => s.params.iter().map(|p| p.name).collect(),
        None => params.keys().map(String::as_str).collect(),
    };
    for pname in order {
        let Some(value) = params.get(pname) else { continue };
        if value.is_empty() {
            continue;
        }
        let flag = match spec.and_then(|s| s.param(pname)) {
            Some(p) => p.flag(),
            None => format!("--{}", pname.replace('_', "-")),
        };
        argv.push(flag);
        argv.push(value.clone());
    }
    argv
}

/// One phase of the `phased` kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    pub kernel: String,
    pub work: u64,
    pub threads: u32,
}

/// The ranges a parameter's kind does not say, checked by `cosched check`
/// (file, line, field, exit 2) as the kernel checks them when it runs.
pub fn check_range(kernel: &str, param: &str, text: &str) -> Result<(), String> {
    let x = text.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    let (ok, want) = match (kernel, param) {
        ("syscall", "rate") => (x.is_some_and(|r| r == 0.0 || r >= 1.0), "0 (as fast as possible) or at least 1 call/s"),
        ("offload", "host_load") => (x.is_some_and(|l| (0.0..=1.0).contains(&l)), "a share of the period in [0, 1]"),
        ("distgen", "intensity") => (x.is_some_and(|i| i > 0.0 && i <= 1.0), "a share of time in (0, 1]"),
        _ => return Ok(()),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("`{text}` is not {want}"))
    }
}

/// Parses the `phases` parameter of `phased`: `KERNEL:WORK:THREADS,...`.
pub fn parse_phases(spec: &str) -> Result<Vec<Phase>, String> {
    let mut out = Vec::new();
    for (i, part) in spec.split(',').map(str::trim).enumerate() {
        let fields: Vec<&str> = part.split(':').collect();
        if fields.len() != 3 {
            return Err(format!(
                "phase {} `{part}` must be KERNEL:WORK:THREADS, e.g. compute:500:1",
                i + 1
            ));
        }
        let k = kernel(fields[0]).ok_or_else(|| {
            format!("phase {}: unknown kernel `{}`; known: {}", i + 1, fields[0], kernel_names())
        })?;
        if k.name == "phased" {
            return Err(format!("phase {}: `phased` cannot contain itself", i + 1));
        }
        let work = fields[1]
            .parse::<u64>()
            .map_err(|_| format!("phase {}: work `{}` is not a non-negative integer", i + 1, fields[1]))?;
        let threads = fields[2]
            .parse::<u32>()
            .ok()
            .filter(|t| *t >= 1)
            .ok_or_else(|| format!("phase {}: threads `{}` must be an integer >= 1", i + 1, fields[2]))?;
        out.push(Phase { kernel: k.name.to_string(), work, threads });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_the_kinds_do_not_say_are_checked() {
        use super::check_range;
        assert!(check_range("syscall", "rate", "0").is_ok());
        assert!(check_range("syscall", "rate", "1").is_ok());
        assert!(check_range("syscall", "rate", "0.5").unwrap_err().contains("at least 1 call/s"));
        assert!(check_range("syscall", "rate", "-5").is_err());
        assert!(check_range("offload", "host_load", "1.0").is_ok());
        assert!(check_range("offload", "host_load", "1.2").is_err());
        assert!(check_range("distgen", "intensity", "0").is_err());
        assert!(check_range("compute", "anything", "-1").is_ok(), "only the listed parameters have ranges");
    }

    use super::*;

    #[test]
    fn every_default_parameter_is_valid_for_its_kind() {
        for k in KERNELS {
            k.resolve_params(&BTreeMap::new())
                .unwrap_or_else(|e| panic!("{}: {e}", k.name));
        }
    }

    #[test]
    fn kernel_names_are_unique() {
        let mut names: Vec<_> = KERNELS.iter().map(|k| k.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KERNELS.len());
    }

    #[test]
    fn unknown_parameter_is_rejected_with_the_known_ones() {
        let mut given = BTreeMap::new();
        given.insert("arrays".to_string(), "3".to_string());
        let err = kernel("stream").unwrap().resolve_params(&given).unwrap_err();
        assert!(err.contains("array_mib"), "{err}");
    }

    #[test]
    fn phases_parse_and_reject_nesting() {
        let p = parse_phases("compute:500:1, stream:10:2").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[1], Phase { kernel: "stream".into(), work: 10, threads: 2 });
        assert!(parse_phases("phased:1:1").is_err());
        assert!(parse_phases("compute:1").is_err());
        assert!(parse_phases("compute:1:0").is_err());
        assert!(parse_phases("nope:1:1").is_err());
    }

    #[test]
    fn flags_are_kebab_case() {
        assert_eq!(kernel("stream").unwrap().params[0].flag(), "--array-mib");
    }
}
