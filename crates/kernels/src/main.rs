//! `cosched-kernel`: runs one fixed-work kernel and reports what it did.
//!
//! The flags of each kernel come from the catalogue in `cosched-model`, so a
//! kernel or parameter added there shows up here (help, parsing, checks)
//! without a change to this file.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::builder::PossibleValuesParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, ArgMatches, Command};
use cosched_kernels::{run, KernelReport};
use cosched_model::kernel::{kernel, kernel_names, KernelSpec, ParamKind, KERNELS};

const BIN: &str = "cosched-kernel";

fn main() -> ExitCode {
    ExitCode::from(real_main() as u8)
}

fn real_main() -> i32 {
    let matches = match cli().try_get_matches() {
        Ok(m) => m,
        Err(e) => return report_clap_error(e),
    };
    if matches.get_flag("list") {
        print!("{}", list());
        return 0;
    }
    let Some((name, sub)) = matches.subcommand() else {
        eprintln!("{}", cli().render_help());
        return 2;
    };
    let spec = kernel(name).expect("subcommands are built from the catalogue");
    let work = *sub.get_one::<u64>("work").expect("--work is required");
    let threads = *sub.get_one::<u32>("threads").expect("--threads has a default");
    let params = given_params(spec, sub);
    match run(spec, work, threads, &params) {
        Ok(report) => {
            if sub.get_flag("json") {
                println!("{}", serde_json::to_string(&report).expect("a report always serialises"));
            } else {
                print!("{}", human(&report));
            }
            0
        }
        Err(e) => {
            eprintln!("{BIN} {name}: error: {e}");
            e.exit_code()
        }
    }
}

fn given_params(spec: &KernelSpec, sub: &ArgMatches) -> BTreeMap<String, String> {
    spec.params
        .iter()
        .filter_map(|p| sub.get_one::<String>(p.name).map(|v| (p.name.to_string(), v.clone())))
        .collect()
}

/// Clap's own messages name the flag and the expected value; an unknown
/// kernel gets the list of known ones instead of a generic "unrecognized
/// subcommand".
fn report_clap_error(e: clap::Error) -> i32 {
    if e.kind() == ErrorKind::InvalidSubcommand {
        if let Some(ContextValue::String(name)) = e.get(ContextKind::InvalidSubcommand) {
            eprintln!(
                "error: unknown kernel `{name}`; expected one of: {}\n(`{BIN} --list` describes them)",
                kernel_names()
            );
            return 2;
        }
    }
    let _ = e.print();
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(spec) = std::env::args().nth(1).as_deref().and_then(kernel) {
            let flags: Vec<String> = ["--work N", "--threads T", "--json"]
                .into_iter()
                .map(String::from)
                .chain(spec.params.iter().map(|p| p.flag()))
                .collect();
            eprintln!("Kernel `{}` takes: {}", spec.name, flags.join(", "));
        }
    }
    e.exit_code()
}

fn cli() -> Command {
    let mut cmd = Command::new(BIN)
        .version(env!("CARGO_PKG_VERSION"))
        .about("Runs one fixed-work workload kernel and reports its time, rate and checksum.")
        .long_about(
            "Runs one fixed-work workload kernel and reports its time, rate and checksum.\n\n\
             Each kernel exerts one known kind of node pressure (core, cache, memory bandwidth, \
             latency, system calls, file I/O, communication, accelerator host load) and does \
             exactly --work units, so its run time alone and next to other jobs can be compared.",
        )
        .subcommand_value_name("KERNEL")
        .subcommand_help_heading("Kernels")
        .args_conflicts_with_subcommands(true)
        .disable_help_subcommand(true)
        .arg_required_else_help(true)
        .arg(
            Arg::new("list")
                .long("list")
                .action(ArgAction::SetTrue)
                .help("List the kernels: name, pressure, summary"),
        )
        .after_help(format!(
            "Examples:\n  {BIN} --list\n  {BIN} stream --work 20 --threads 2 --array-mib 64\n  \
             {BIN} pingpong --work 5000 --msg-kib 1024 --transport unix --json\n  \
             {BIN} stream --help        (a kernel's parameters and defaults)"
        ));
    for spec in KERNELS {
        cmd = cmd.subcommand(kernel_command(spec));
    }
    cmd
}

fn kernel_command(spec: &'static KernelSpec) -> Command {
    let threads_help = if spec.threaded {
        "Threads sharing the work"
    } else {
        "Must be 1: this kernel runs on one thread"
    };
    let mut cmd = Command::new(spec.name)
        .about(spec.summary)
        .long_about(format!(
            "{}\n\nPressure: {}\nOne unit of work: {}",
            spec.summary, spec.pressure, spec.unit
        ))
        .arg(
            Arg::new("work")
                .long("work")
                .value_name("N")
                .required(true)
                .allow_negative_numbers(true)
                .value_parser(|s: &str| {
                    s.parse::<u64>().map_err(|_| format!("`{s}` is not a non-negative integer"))
                })
                .help(format!(
                    "Units of work to do; one unit = {} (calibration runs use {})",
                    spec.unit, spec.calibration_work
                )),
        )
        .arg(
            Arg::new("threads")
                .long("threads")
                .value_name("T")
                .default_value("1")
                .allow_negative_numbers(true)
                .value_parser(|s: &str| {
                    s.parse::<u32>()
                        .ok()
                        .filter(|t| *t >= 1)
                        .ok_or_else(|| format!("`{s}` is not an integer >= 1"))
                })
                .help(threads_help),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Print the report as one line of JSON"),
        )
        .after_help(examples(spec));
    for p in spec.params {
        let default = if p.default.is_empty() { "none" } else { p.default };
        let mut arg = Arg::new(p.name)
            .long(p.name.replace('_', "-"))
            .help(format!("{} [default: {default}]", capitalise(p.help)));
        arg = match p.kind {
            ParamKind::Choice(words) => arg.value_name("WORD").value_parser(PossibleValuesParser::new(words.iter().copied())),
            kind => {
                let name = match kind {
                    ParamKind::Uint => "N",
                    ParamKind::Float => "X",
                    _ => "TEXT",
                };
                arg.value_name(name)
                    .allow_negative_numbers(true)
                    .value_parser(move |s: &str| kind.check(s).map(|()| s.to_string()))
            }
        };
        cmd = cmd.arg(arg);
    }
    cmd
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn examples(spec: &KernelSpec) -> String {
    let mut first = format!("{BIN} {} --work {}", spec.name, spec.calibration_work);
    if spec.threaded {
        first.push_str(" --threads 2");
    }
    for p in spec.params.iter().filter(|p| !p.default.is_empty()) {
        first.push_str(&format!(" {} {}", p.flag(), p.default));
    }
    format!(
        "Examples:\n  {first}\n  {BIN} {} --work {} --json",
        spec.name, spec.calibration_work
    )
}

/// `--list`: one aligned line per kernel.
fn list() -> String {
    let w_name = KERNELS.iter().map(|k| k.name.len()).max().unwrap_or(0);
    let w_pressure = KERNELS.iter().map(|k| k.pressure.len()).max().unwrap_or(0);
    KERNELS
        .iter()
        .map(|k| format!("{:w_name$}  {:w_pressure$}  {}\n", k.name, k.pressure, k.summary))
        .collect()
}

fn human(r: &KernelReport) -> String {
    let params = if r.params.is_empty() {
        "(none)".to_string()
    } else {
        r.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    };
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<11}{v}\n"));
    line("kernel", r.kernel.clone());
    line("params", params);
    line("work", format!("{} x {}", r.work, r.unit));
    line("threads", r.threads.to_string());
    line("wall time", format!("{:.4} s (setup {:.4} s, not included)", r.wall_s, r.setup_s));
    line("rate", format!("{:.3} units/s", r.rate));
    if let Some(f) = &r.figure {
        let (label, unit) = match f.name.as_str() {
            "bandwidth_mb_s" => ("bandwidth", " MB/s"),
            "gflop_s" => ("compute", " GFLOP/s"),
            "latency_ns" => ("latency", " ns/load"),
            "syscall_ns" => ("syscall", " ns/call"),
            "host_share" => ("host share", " of wall time"),
            other => (other, ""),
        };
        line(label, format!("{:.3}{unit}", f.value));
    }
    line("ops", format!("{} {}", r.ops, r.ops_unit));
    line("checksum", r.checksum.clone());
    out
}
