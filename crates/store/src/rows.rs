//! Row helpers shared by every table: validation of a record before it is
//! written, provenance rows, and typed columns read back.

use crate::*;

pub(crate) fn sql_err(tx: &Transaction, what: &str, source: rusqlite::Error) -> StoreError {
    let path = tx.path().map(PathBuf::from).unwrap_or_else(|| PathBuf::from(":memory:"));
    sql_error(&path, what, source)
}

pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

// ---- validation -------------------------------------------------------

pub(crate) fn nonempty(what: &str, field: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() {
        return Err(StoreError::Invalid { what: what.into(), why: format!("{field} is empty") });
    }
    Ok(())
}

/// Times and slowdowns are divided by: zero, negative or NaN would poison
/// every median computed from them later.
pub(crate) fn positive(what: &str, field: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v > 0.0) {
        return Err(StoreError::Invalid { what: what.into(), why: format!("{field} = {v} is not a positive number") });
    }
    Ok(())
}

pub(crate) fn non_negative(what: &str, field: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(StoreError::Invalid {
            what: what.into(),
            why: format!("{field} = {v} is not a finite number >= 0"),
        });
    }
    Ok(())
}

pub(crate) fn check_calibration(c: &Calibration) -> Result<()> {
    let what = format!("calibration `{}`", c.key);
    nonempty(&what, "key", &c.key)?;
    nonempty(&what, "kernel", &c.kernel)?;
    let s = &c.rate;
    for (name, v) in [
        ("rate.median", s.median),
        ("rate.min", s.min),
        ("rate.max", s.max),
        ("rate.ci_lo", s.ci_lo),
        ("rate.ci_hi", s.ci_hi),
    ] {
        positive(&what, name, v)?;
    }
    if let Some((name, f)) = &c.figure {
        for v in [f.median, f.min, f.max, f.ci_lo, f.ci_hi] {
            if !v.is_finite() {
                return Err(StoreError::Invalid { what, why: format!("figure {name} has a non-finite value {v}") });
            }
        }
    }
    Ok(())
}

/// Parses campaign parameters and re-serializes them with object keys
/// sorted, so equal parameters are equal text in the database.
pub(crate) fn canonical_params(params_json: &str) -> Result<String> {
    fn sorted(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let sorted_entries: BTreeMap<String, serde_json::Value> =
                    m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
                serde_json::Value::Object(sorted_entries.into_iter().collect())
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    let v: serde_json::Value = serde_json::from_str(params_json)
        .map_err(|e| StoreError::Invalid { what: "campaign parameters".into(), why: format!("not JSON: {e}") })?;
    Ok(sorted(v).to_string())
}

// ---- rows -------------------------------------------------------------

/// The provenance row equal to `p`, inserted if there is none.
pub(crate) fn provenance_id(tx: &Transaction, p: &Provenance) -> rusqlite::Result<i64> {
    let seed = p.seed.map(|s| s.to_string());
    let found = tx
        .prepare_cached(
            "SELECT id FROM provenance WHERE hostname = ?1 AND cpu_model = ?2 AND cores = ?3 AND kernel_version = ?4
             AND cosched_version = ?5 AND git_commit = ?6 AND command = ?7 AND seed IS ?8 AND started_unix = ?9
             LIMIT 1",
        )?
        .query_row(
            params![
                p.hostname,
                p.cpu_model,
                p.cores,
                p.kernel_version,
                p.cosched_version,
                p.git_commit,
                p.command,
                seed,
                p.started_unix
            ],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    tx.execute(
        "INSERT INTO provenance (hostname, cpu_model, cores, kernel_version, cosched_version, git_commit, command,
            seed, started_unix) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            p.hostname,
            p.cpu_model,
            p.cores,
            p.kernel_version,
            p.cosched_version,
            p.git_commit,
            p.command,
            seed,
            p.started_unix
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

/// Provenance columns, always selected last, after a table's own columns.
pub(crate) const PROV_COLS: &str =
    "p.hostname, p.cpu_model, p.cores, p.kernel_version, p.cosched_version, p.git_commit, p.command, p.seed, p.started_unix";

pub(crate) fn provenance_from_row(r: &Row, at: usize) -> rusqlite::Result<Provenance> {
    let seed: Option<String> = r.get(at + 7)?;
    let seed = match seed {
        None => None,
        Some(s) => Some(
            s.parse::<u64>().map_err(|e| rusqlite::Error::FromSqlConversionFailure(at + 7, Type::Text, Box::new(e)))?,
        ),
    };
    Ok(Provenance {
        hostname: r.get(at)?,
        cpu_model: r.get(at + 1)?,
        cores: r.get(at + 2)?,
        kernel_version: r.get(at + 3)?,
        cosched_version: r.get(at + 4)?,
        git_commit: r.get(at + 5)?,
        command: r.get(at + 6)?,
        seed,
        started_unix: r.get(at + 8)?,
    })
}

pub(crate) const CAL_COLS: &str = "c.key, c.kernel, c.params_json, c.threads, c.unit, c.work_per_run, c.rate_n, c.rate_median,
    c.rate_min, c.rate_max, c.rate_ci_lo, c.rate_ci_hi, c.figure_name, c.figure_json";

pub(crate) fn calibration_from_row(r: &Row) -> rusqlite::Result<Calibration> {
    let figure_name: Option<String> = r.get(12)?;
    let figure = match figure_name {
        Some(name) => Some((name, json_col::<Summary>(r, 13)?)),
        None => None,
    };
    Ok(Calibration {
        key: r.get(0)?,
        kernel: r.get(1)?,
        params: json_col(r, 2)?,
        threads: r.get(3)?,
        unit: r.get(4)?,
        work_per_run: r.get(5)?,
        rate: Summary {
            n: r.get::<_, i64>(6)? as usize,
            median: r.get(7)?,
            min: r.get(8)?,
            max: r.get(9)?,
            ci_lo: r.get(10)?,
            ci_hi: r.get(11)?,
        },
        figure,
        provenance: provenance_from_row(r, 14)?,
    })
}

pub(crate) const CAMPAIGN_SELECT: &str = "SELECT c.id, c.kind, c.workload, c.params_json, c.status, c.started_unix, c.finished_unix,
    (SELECT count(*) FROM pair_runs WHERE campaign_id = c.id)
      + (SELECT count(*) FROM solo_runs WHERE campaign_id = c.id)
      + (SELECT count(*) FROM probe_points WHERE campaign_id = c.id),
    p.hostname, p.cpu_model, p.cores, p.kernel_version, p.cosched_version, p.git_commit, p.command, p.seed, p.started_unix
    FROM campaigns c JOIN provenance p ON p.id = c.provenance_id";

pub(crate) fn campaign_from_row(r: &Row) -> rusqlite::Result<CampaignRecord> {
    Ok(CampaignRecord {
        id: CampaignId(r.get(0)?),
        kind: parse_text(r, 1)?,
        workload: r.get(2)?,
        params: json_col(r, 3)?,
        status: parse_text(r, 4)?,
        started_unix: r.get(5)?,
        finished_unix: r.get(6)?,
        runs: r.get(7)?,
        provenance: provenance_from_row(r, 8)?,
    })
}

/// Profiles are decoded here, once, so every reader gets a `JobProfile`
/// or an error that says which stored profile to measure again.
pub(crate) fn decode_profile(campaign: CampaignId, job: String, program: String, text: &str) -> Result<ProfileRecord> {
    match serde_json::from_str(text) {
        Ok(summary) => Ok(ProfileRecord { job, program, summary }),
        Err(e) => Err(StoreError::BadProfile { campaign, job, why: e.to_string() }),
    }
}

pub(crate) fn json_col<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    serde_json::from_str(&text).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}

pub(crate) fn parse_text<T: std::str::FromStr<Err = String>>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    text.parse::<T>().map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, e.into()))
}

/// A repeat's readings: both CPUs or none, each round trip positive.
pub(crate) fn check_regime(what: &str, g: &RepeatRegime) -> Result<()> {
    let read = g.before_ns.is_some() || g.after_ns.is_some();
    if read && g.cpus.len() != 2 {
        return Err(StoreError::Invalid {
            what: what.into(),
            why: format!("a cache-line round trip is read between two CPUs, not {:?}", g.cpus),
        });
    }
    for (field, v) in [("c2c_before_ns", g.before_ns), ("c2c_after_ns", g.after_ns)] {
        if let Some(v) = v {
            positive(what, field, v)?;
        }
    }
    Ok(())
}

pub(crate) fn regime_cpus(g: &RepeatRegime) -> Option<String> {
    (!g.cpus.is_empty()).then(|| format_cpulist(&g.cpus))
}

/// Columns `c2c_cpus`, `c2c_before_ns`, `c2c_after_ns` from `at`.
pub(crate) fn regime_from_row(r: &Row, at: usize) -> rusqlite::Result<RepeatRegime> {
    let text: Option<String> = r.get(at)?;
    let cpus = match text {
        Some(t) => parse_cpulist(&t).map_err(|e| rusqlite::Error::FromSqlConversionFailure(at, Type::Text, Box::new(e)))?,
        None => Vec::new(),
    };
    Ok(RepeatRegime { cpus, before_ns: r.get(at + 1)?, after_ns: r.get(at + 2)? })
}

pub(crate) fn level_from_row(r: &Row, at: usize) -> rusqlite::Result<Option<SharingLevel>> {
    let text: Option<String> = r.get(at)?;
    text.map(|t| {
        SharingLevel::ALL.into_iter().find(|l| l.name() == t).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(at, Type::Text, format!("unknown sharing level `{t}`").into())
        })
    })
    .transpose()
}

pub(crate) fn cpus(r: &Row, i: usize) -> rusqlite::Result<Vec<u32>> {
    let text: String = r.get(i)?;
    parse_cpulist(&text).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}
