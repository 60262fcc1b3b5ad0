//! Options and helpers shared by several verbs.

use std::path::PathBuf;

use clap::Args;

/// Where measurements are kept.
#[derive(Args, Debug, Clone)]
pub struct DbArgs {
    /// The performance database (SQLite); default: cosched.db in
    /// $COSCHED_DATA_DIR or ~/.local/share/cosched.
    #[arg(long, env = "COSCHED_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(cosched_store::default_db_path)
    }

    /// Opens the database, creating it when missing. A file that cannot be
    /// used as the database is the user's to fix: exit code 2.
    pub fn open(&self) -> anyhow::Result<cosched_store::Store> {
        cosched_store::Store::open(&self.path()).map_err(store_input_error)
    }

    /// Opens an existing database; a missing one is an error, not created.
    pub fn open_existing(&self) -> anyhow::Result<cosched_store::Store> {
        cosched_store::Store::open_existing(&self.path()).map_err(store_input_error)
    }
}

/// Errors opening a database mean the path or the file is wrong (exit code
/// 2); anything else is the work failing (exit code 1).
pub fn store_input_error(e: cosched_store::StoreError) -> anyhow::Error {
    use cosched_store::StoreError as E;
    match e {
        E::Missing { .. } | E::NotADatabase { .. } | E::TooNew { .. } | E::Io { .. } | E::Open { .. } | E::NoSuchTable(_) => {
            crate::exit::bad_input(e.to_string())
        }
        other => other.into(),
    }
}

/// The git commit this binary was built from, for provenance.
pub const GIT_COMMIT: &str = cosched_app::GIT_COMMIT;

/// The command line of this invocation, for provenance.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// Parses a CPU list such as `0`, `0,1` or `0-3`, checking each CPU exists.
pub fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    let cpus = cosched_model::topology::parse_cpulist(s).map_err(|e| e.to_string())?;
    let n = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    if let Some(bad) = cpus.iter().find(|&&c| c >= n) {
        return Err(format!("CPU {bad} does not exist here (this node has CPUs 0-{})", n - 1));
    }
    if cpus.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(cpus)
}


/// Reads and validates a workload file; invalid input is exit code 2 with
/// every diagnostic as FILE:LINE:COL.
pub fn load_workload(path: &std::path::Path) -> anyhow::Result<cosched_model::workload::Workload> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::exit::bad_input(format!("{shown}: cannot read the workload file: {e}")))?;
    let cores = std::thread::available_parallelism().ok().and_then(|n| u32::try_from(n.get()).ok());
    cosched_model::workload::parse_workload(&text, &shown, cores)
        .map_err(|d| crate::exit::bad_input(d.to_string()))
}

/// Reads the node's conditions now (load average, and the cache-line round
/// trip between the first two CPUs) and stores them with `campaign`, saying
/// what they were. A reading that fails is reported and skipped: it
/// explains a campaign, it is not part of it.
pub fn record_conditions(store: &mut cosched_store::Store, campaign: cosched_store::CampaignId, announce: bool) -> anyhow::Result<()> {
    let load = match cosched_measure::provenance::load_average() {
        Ok(l) => l,
        Err(e) => {
            crate::progress::step(&format!("node conditions not recorded: {e}"));
            return Ok(());
        }
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // About 20-40 ms: the median of 21 batches of 5,000 round trips, so a
    // vCPU preempted during one batch does not move it.
    let c2c = if cpus >= 2 {
        match cosched_measure::c2c::measure_pair(0, 1, 5_000, 21) {
            Ok(s) => Some((vec![0, 1], s.median)),
            Err(e) => {
                crate::progress::step(&format!("core-to-core latency not measured: {e}"));
                None
            }
        }
    } else {
        None
    };
    let taken_unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let c = cosched_store::NodeConditions { taken_unix, load, c2c };
    store.add_conditions(campaign, &c)?;
    if announce {
        crate::progress::step(&format!("node at start: {}", describe_conditions(&c)));
    }
    Ok(())
}

/// `load 1.36 1.53 1.54, CPU 0-1 round trip 73 ns`.
pub fn describe_conditions(c: &cosched_store::NodeConditions) -> String {
    let mut s = format!("load {:.2} {:.2} {:.2}", c.load[0], c.load[1], c.load[2]);
    if let Some((cpus, ns)) = &c.c2c {
        s.push_str(&format!(", CPU {} round trip {ns:.0} ns", cosched_model::topology::format_cpulist(cpus)));
    }
    s
}

/// Prints a registry (`simulate --list-policies`, `predict --list`): a row
/// per entry, then a line per parameter with kind and range, default and
/// help; or JSON.
pub fn print_registry<E: cosched_model::params::Declared>(entries: &[E], json: bool) -> anyhow::Result<()> {
    if json {
        let v: Vec<_> = entries
            .iter()
            .map(|e| {
                let params: Vec<_> = e
                    .params()
                    .iter()
                    .map(|p| serde_json::json!({"name": p.name, "kind": p.kind.describe(), "default": p.default_text(), "help": p.help}))
                    .collect();
                serde_json::json!({"name": e.name(), "description": e.summary(), "params": params})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", cosched_model::params::list_text(entries));
    }
    Ok(())
}
