//! What `cosched db info` and `cosched db export` show: row counts, and
//! every table as CSV or JSON, column for column as stored.
//!
//! Exports read inside one read transaction, so a campaign writing at the
//! same time never shows half its runs in one table and all in another.

use std::io::Write;
use std::path::PathBuf;

use rusqlite::types::ValueRef;
use serde::Serialize;

use crate::{CampaignRecord, Store, StoreError};

/// Every table, in the order `cosched db` lists and exports them (a table
/// referenced by another comes first).
pub const TABLES: &[&str] =
    &[
        "provenance",
        "calibrations",
        "campaigns",
        "pair_runs",
        "solo_runs",
        "samples",
        "profiles",
        "probe_points",
        "runs",
        "run_jobs",
        "run_journal",
        "predictor_evaluations",
        "campaign_conditions",
        "run_conditions",
        "online_samples",
    ];

/// Row order of an export: insertion order, and samples run by run.
pub(crate) fn order_of(table: &str) -> &'static str {
    if table == "samples" {
        "run_id, seq"
    } else {
        "id"
    }
}

/// The name in [`TABLES`] equal to `name`, or an error listing them; only
/// names from that list are ever put into SQL text.
fn known_table(name: &str) -> Result<&'static str, StoreError> {
    TABLES.iter().copied().find(|t| *t == name).ok_or_else(|| StoreError::NoSuchTable(name.to_string()))
}

/// Checks a table name before anything is opened, for argument validation.
pub fn check_table(name: &str) -> Result<(), StoreError> {
    known_table(name).map(|_| ())
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableCount {
    pub table: String,
    pub rows: u64,
}

/// A summary of a database, for `cosched db info`.
#[derive(Debug, Clone, Serialize)]
pub struct DbInfo {
    pub path: PathBuf,
    pub schema_version: u32,
    /// Size of the database file, and of its write-ahead log (not yet
    /// copied back into the file), in bytes.
    pub size_bytes: u64,
    pub wal_bytes: u64,
    pub tables: Vec<TableCount>,
    pub campaigns: Vec<CampaignRecord>,
}

impl Store {
    /// Row counts of every table, in [`TABLES`] order.
    pub fn table_counts(&self) -> Result<Vec<TableCount>, StoreError> {
        let err = self.sql("counting rows");
        TABLES
            .iter()
            .map(|t| {
                let rows: u64 =
                    self.conn.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).map_err(&err)?;
                Ok(TableCount { table: t.to_string(), rows })
            })
            .collect()
    }

    pub fn info(&self) -> Result<DbInfo, StoreError> {
        let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        Ok(DbInfo {
            path: self.path.clone(),
            schema_version: self.schema_version()?,
            size_bytes: size(&self.path),
            wal_bytes: size(std::path::Path::new(&wal)),
            tables: self.table_counts()?,
            campaigns: self.campaigns()?,
        })
    }

    /// Writes one table as CSV: a header row of column names, then one line
    /// per row (RFC 4180 quoting where a field needs it, through the `csv`
    /// crate as every CSV cosched writes; NULL is an empty field). Returns
    /// the number of rows written.
    pub fn export_csv(&self, table: &str, out: &mut dyn Write) -> Result<u64, StoreError> {
        let table = known_table(table)?;
        let tx = self.conn.unchecked_transaction().map_err(self.sql("starting a read"))?;
        let err = self.sql(&format!("reading {table}"));
        let mut stmt = tx.prepare(&format!("SELECT * FROM {table} ORDER BY {}", order_of(table))).map_err(&err)?;
        let names: Vec<String> = stmt.column_names().into_iter().map(String::from).collect();
        let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(out);
        let wrote = |e: csv::Error| StoreError::Write(e.into());
        w.write_record(&names).map_err(wrote)?;
        let mut rows = stmt.query([]).map_err(&err)?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(&err)? {
            for i in 0..names.len() {
                w.write_field(csv_value(row.get_ref(i).map_err(&err)?)).map_err(wrote)?;
            }
            w.write_record(None::<&[u8]>).map_err(wrote)?;
            n += 1;
        }
        w.flush().map_err(StoreError::Write)?;
        Ok(n)
    }

    /// Writes one table as a JSON array of objects, one per row, keys in
    /// column order. Returns the number of rows written.
    pub fn export_json(&self, table: &str, out: &mut dyn Write) -> Result<u64, StoreError> {
        let table = known_table(table)?;
        let tx = self.conn.unchecked_transaction().map_err(self.sql("starting a read"))?;
        let n = self.json_array(&tx, table, out, "")?;
        writeln!(out).map_err(StoreError::Write)?;
        Ok(n)
    }

    /// Writes every table as one JSON object: table name -> array of rows.
    pub fn export_json_all(&self, out: &mut dyn Write) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction().map_err(self.sql("starting a read"))?;
        write!(out, "{{").map_err(StoreError::Write)?;
        for (i, table) in TABLES.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(out, "{sep}\n  {}: ", json_string(table)).map_err(StoreError::Write)?;
            self.json_array(&tx, table, out, "  ")?;
        }
        writeln!(out, "\n}}").map_err(StoreError::Write)?;
        Ok(())
    }

    fn json_array(
        &self,
        tx: &rusqlite::Transaction,
        table: &'static str,
        out: &mut dyn Write,
        indent: &str,
    ) -> Result<u64, StoreError> {
        let err = self.sql(&format!("reading {table}"));
        let mut stmt = tx.prepare(&format!("SELECT * FROM {table} ORDER BY {}", order_of(table))).map_err(&err)?;
        let keys: Vec<String> = stmt.column_names().into_iter().map(json_string).collect();
        let mut rows = stmt.query([]).map_err(&err)?;
        write!(out, "[").map_err(StoreError::Write)?;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(&err)? {
            let mut fields = Vec::with_capacity(keys.len());
            for (i, k) in keys.iter().enumerate() {
                fields.push(format!("{k}: {}", json_value(row.get_ref(i).map_err(&err)?)));
            }
            let sep = if n == 0 { "" } else { "," };
            write!(out, "{sep}\n{indent}  {{{}}}", fields.join(", ")).map_err(StoreError::Write)?;
            n += 1;
        }
        if n > 0 {
            write!(out, "\n{indent}").map_err(StoreError::Write)?;
        }
        write!(out, "]").map_err(StoreError::Write)?;
        Ok(n)
    }
}

/// A stored value as CSV text, before quoting.
fn csv_value(v: ValueRef) -> String {
    match v {
        ValueRef::Null => String::new(),
        ValueRef::Integer(i) => i.to_string(),
        // Debug keeps the decimal point of whole numbers and round-trips.
        ValueRef::Real(f) => format!("{f:?}"),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => hex(b),
    }
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn json_value(v: ValueRef) -> String {
    match v {
        ValueRef::Null => "null".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map(|n| n.to_string()).unwrap_or_else(|| "null".into()),
        ValueRef::Text(t) => json_string(&String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => json_string(&hex(b)),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `YYYY-MM-DD HH:MM:SS` in UTC, for listing stored times to people.
pub fn format_unix_utc(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's days-to-civil: exact for the proleptic Gregorian
    // calendar, with no table and no dependency.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The Unix time of `YYYY-MM-DD`, `YYYY-MM-DD HH:MM` or `YYYY-MM-DD
/// HH:MM:SS` in UTC (a `T` may stand for the space), the form
/// [`format_unix_utc`] writes; `None` for anything else or a date before
/// 1970.
pub fn parse_utc(s: &str) -> Option<u64> {
    let s = s.trim();
    let (date, time) = match s.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let num = |p: &str, len: usize| (p.len() == len && p.bytes().all(|b| b.is_ascii_digit())).then(|| p.parse::<i64>().ok()).flatten();
    let mut d = date.split('-');
    let (y, m, day) = (num(d.next()?, 4)?, num(d.next()?, 2)?, num(d.next()?, 2)?);
    if d.next().is_some() || !(1..=12).contains(&m) {
        return None;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][(m - 1) as usize];
    if !(1..=month_days).contains(&day) {
        return None;
    }
    let mut secs = 0;
    if let Some(t) = time {
        let parts: Vec<&str> = t.split(':').collect();
        if !(2..=3).contains(&parts.len()) {
            return None;
        }
        let (h, min) = (num(parts[0], 2)?, num(parts[1], 2)?);
        let sec = if parts.len() == 3 { num(parts[2], 2)? } else { 0 };
        if h > 23 || min > 59 || sec > 59 {
            return None;
        }
        secs = h * 3600 + min * 60 + sec;
    }
    // Hinnant's days-from-civil, the inverse of format_unix_utc's.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_parse_back_to_the_instants_they_format() {
        assert_eq!(parse_utc("1970-01-01"), Some(0));
        assert_eq!(parse_utc("2000-02-29"), Some(951_782_400));
        assert_eq!(parse_utc("2023-11-14 22:13:20"), Some(1_700_000_000));
        assert_eq!(parse_utc("2023-11-14T22:13"), Some(1_700_000_000 - 20));
        for t in [0u64, 68_169_599, 951_782_399, 1_700_000_000, 1_795_000_000, 4_102_444_800] {
            assert_eq!(parse_utc(&format_unix_utc(t)), Some(t), "{}", format_unix_utc(t));
        }
        for bad in ["", "2023-13-01", "2023-02-29", "1969-12-31", "2023-1-01", "2023-11-14 24:00", "2023-11-14 10", "yesterday"] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }

    #[test]
    fn utc_dates_match_known_instants() {
        assert_eq!(format_unix_utc(0), "1970-01-01 00:00:00");
        assert_eq!(format_unix_utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(format_unix_utc(1_700_000_000), "2023-11-14 22:13:20");
    }

    /// One table's CSV as `db export` writes it.
    fn exported(texts: &[&str]) -> String {
        let store = Store::open_in_memory().unwrap();
        for t in texts {
            store
                .conn
                .execute(
                    "INSERT INTO provenance (hostname, cpu_model, cores, kernel_version, cosched_version, git_commit, command, started_unix) \
                     VALUES ('h', 'c', 1, 'k', 'v', 'g', ?1, 0)",
                    [t],
                )
                .unwrap();
        }
        let mut out = Vec::new();
        store.export_csv("provenance", &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn csv_quotes_only_what_needs_it_and_round_trips_commas_quotes_and_newlines() {
        let awkward = "a,b \"hi\"\ntwo";
        let csv = exported(&["plain", awkward]);
        assert_eq!(csv.lines().nth(1), Some("1,h,c,1,k,v,g,plain,,0"), "plain fields stay bare, NULL is empty:\n{csv}");
        assert!(csv.contains("\"a,b \"\"hi\"\"\ntwo\""), "quoted, inner quotes doubled:\n{csv}");
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        let head = r.headers().unwrap().clone();
        let value = head.iter().position(|h| h == "command").unwrap();
        let got: Vec<String> = r.records().map(|rec| rec.unwrap()[value].to_string()).collect();
        assert_eq!(got, ["plain", awkward]);
        assert_eq!(csv_value(ValueRef::Real(2.0)), "2.0");
        assert_eq!(csv_value(ValueRef::Null), "");
    }
}
