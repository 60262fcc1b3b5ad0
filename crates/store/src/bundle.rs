//! Bundles: what one store knows, as one file another store can take in
//! (`cosched db export --bundle`, `cosched db import`).
//!
//! A bundle is a gzip-compressed SQLite database with the store's own
//! schema and one more table, `bundle_info` (format, format version, the
//! exporting cosched and node, when). Reusing the schema means every
//! measurement keeps its provenance (node, kernel, commit, time) and its
//! conditions (load, cache regime) as stored, and an older bundle is
//! brought up to date by the same migrations as an older store. gzip's
//! CRC-32 refuses a truncated or altered file before anything is read.
//!
//! Import merges row by row in one transaction, in the order of
//! [`TABLES`] (a referenced table first), mapping each foreign key to the
//! row it became. A bundle row equal in every column (ids aside, keys
//! mapped) to a row already there is that row, once per copy, so importing
//! a bundle twice adds nothing and two equal rows in one bundle stay two.
//! The columns and keys are read from SQLite (`table_xinfo`,
//! `foreign_key_list`), so a later migration needs nothing here. Any
//! inconsistency (a key to a row the bundle lacks, a row that clashes with
//! a unique one already stored) rolls everything back: the store is as it
//! was.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, OpenFlags};
use serde::Serialize;

use crate::export::TABLES;
use crate::schema::{latest_version, version_of};
use crate::{Store, StoreError};

/// The `format` a bundle's `bundle_info` names.
pub const FORMAT: &str = "cosched-bundle";
/// The layout of the bundle around the store's schema; the schema has its
/// own version (`user_version`).
pub const FORMAT_VERSION: u32 = 1;
/// The most a bundle may inflate to: a bundle is measurements, not bulk.
pub const MAX_INFLATED: u64 = 4 << 30;

/// What a bundle says about itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BundleInfo {
    pub format_version: u32,
    pub schema_version: u32,
    pub cosched_version: String,
    pub hostname: String,
    pub exported_unix: i64,
}

/// One table's share of an import.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Merged {
    pub table: String,
    /// Rows the bundle holds.
    pub rows: u64,
    /// Rows added to the store; the rest were there already.
    pub added: u64,
}

/// Why a bundle was refused.
fn refused(path: &Path, why: impl Into<String>) -> StoreError {
    StoreError::Invalid { what: format!("bundle {}", path.display()), why: why.into() }
}

/// A scratch file in a directory of its own (mode 0700, removed with
/// everything in it when dropped): a name in a shared /tmp could be taken
/// by another user first, and SQLite writes into an empty file it finds.
/// The directory is held only to be removed on drop.
struct Scratch(std::path::PathBuf, #[allow(dead_code)] tempfile::TempDir);

fn scratch(what: &str) -> crate::Result<Scratch> {
    let dir = tempfile::Builder::new()
        .prefix("cosched-bundle-")
        .tempdir()
        .map_err(|source| StoreError::Io { path: std::env::temp_dir(), source })?;
    Ok(Scratch(dir.path().join(format!("{what}.db")), dir))
}

/// A bundle read and checked, ready to import: inflated into a scratch
/// file (removed when dropped), its header read, its schema brought up to
/// date. Reading it touches no store, so a bad bundle is refused before
/// a database is even opened.
pub struct Bundle {
    path: std::path::PathBuf,
    file: Scratch,
    pub info: BundleInfo,
}

impl Bundle {
    /// Reads the bundle `bytes`, as read from `path` (named in errors).
    pub fn read(path: &Path, bytes: &[u8]) -> crate::Result<Bundle> {
        let file = scratch("in")?;
        inflate(path, bytes, &file.0)?;
        let info = {
            let c = Connection::open_with_flags(&file.0, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| refused(path, format!("not a SQLite database inside the gzip ({e})")))?;
            read_info(path, &c)?
        };
        if info.schema_version > latest_version() {
            return Err(refused(
                path,
                format!("its schema version {} is newer than this cosched knows ({}): import it with a newer cosched", info.schema_version, latest_version()),
            ));
        }
        // An older bundle is brought up to date by the store's own
        // migrations, on the scratch copy only.
        if info.schema_version < latest_version() {
            Store::open_existing(&file.0).map_err(|e| refused(path, format!("its schema could not be brought up to date: {e}")))?;
        }
        Ok(Bundle { path: path.to_path_buf(), file, info })
    }

    /// The workloads its campaigns measured, by name, sorted: what a
    /// reader of the bundle's measurements alone asks the store for.
    pub fn workloads(&self) -> crate::Result<Vec<String>> {
        let c = Connection::open_with_flags(&self.file.0, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| refused(&self.path, format!("unreadable ({e})")))?;
        let mut stmt = c
            .prepare("SELECT DISTINCT workload FROM campaigns ORDER BY workload")
            .map_err(|e| refused(&self.path, format!("its campaigns unreadable ({e})")))?;
        let rows: rusqlite::Result<Vec<String>> = stmt.query_map([], |r| r.get(0)).and_then(|rows| rows.collect());
        rows.map_err(|e| refused(&self.path, format!("its campaigns unreadable ({e})")))
    }
}

impl Store {
    /// The whole store as a bundle (gzip bytes), read in one snapshot, with
    /// `cosched_version` and `hostname` named in its `bundle_info`.
    pub fn export_bundle(&self, cosched_version: &str, hostname: &str, now_unix: i64) -> crate::Result<Vec<u8>> {
        let tmp = scratch("out")?;
        let at = |what: &str| self.sql(what);
        self.conn
            .execute("VACUUM INTO ?1", [tmp.0.to_string_lossy().as_ref()])
            .map_err(at("copying the store for a bundle"))?;
        {
            let c = Connection::open(&tmp.0).map_err(at("opening the bundle's copy"))?;
            let info = BundleInfo {
                format_version: FORMAT_VERSION,
                schema_version: version_of(&c).map_err(at("reading the copy's schema version"))?,
                cosched_version: cosched_version.into(),
                hostname: hostname.into(),
                exported_unix: now_unix,
            };
            c.execute_batch("CREATE TABLE bundle_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
                .map_err(at("writing the bundle's header"))?;
            let rows = [
                ("format", FORMAT.to_string()),
                ("format_version", info.format_version.to_string()),
                ("schema_version", info.schema_version.to_string()),
                ("cosched_version", info.cosched_version),
                ("hostname", info.hostname),
                ("exported_unix", info.exported_unix.to_string()),
            ];
            for (k, v) in rows {
                c.execute("INSERT INTO bundle_info (key, value) VALUES (?1, ?2)", [k, v.as_str()]).map_err(at("writing the bundle's header"))?;
            }
            // The copy is compact already (VACUUM INTO); the journal mode
            // of the store is not the bundle's business.
            c.execute_batch("PRAGMA journal_mode = DELETE;").map_err(at("writing the bundle"))?;
        }
        let raw = std::fs::read(&tmp.0).map_err(|source| StoreError::Io { path: tmp.0.clone(), source })?;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&raw).and_then(|()| gz.flush()).map_err(|source| StoreError::Io { path: tmp.0.clone(), source })?;
        gz.finish().map_err(|source| StoreError::Io { path: tmp.0.clone(), source })
    }

    /// Merges `bundle` into this store: one transaction, everything or
    /// nothing.
    pub fn import_bundle(&mut self, bundle: &Bundle) -> crate::Result<Vec<Merged>> {
        self.merge_from(&bundle.path, &bundle.file.0)
    }

    fn merge_from(&mut self, path: &Path, from: &Path) -> crate::Result<Vec<Merged>> {
        let at = self.path.clone();
        let sql = move |what: &'static str| {
            let at = at.clone();
            move |source: rusqlite::Error| StoreError::Sql { path: at.clone(), what: what.into(), source }
        };
        self.conn
            .execute("ATTACH DATABASE ?1 AS bundle", [from.to_string_lossy().as_ref()])
            .map_err(sql("attaching the bundle"))?;
        let result = (|| {
            let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sql("beginning the import"))?;
            let mut ids: HashMap<&str, HashMap<i64, i64>> = HashMap::new();
            let mut out = Vec::new();
            for table in TABLES {
                out.push(merge_table(&tx, path, table, &mut ids)?);
            }
            tx.commit().map_err(sql("committing the import"))?;
            Ok(out)
        })();
        // Detached whatever happened, so the connection is as it was.
        let _ = self.conn.execute("DETACH DATABASE bundle", []);
        result
    }
}

/// Inflates `bytes` into `to`, refusing what gzip's checks refuse and
/// anything larger than [`MAX_INFLATED`].
fn inflate(path: &Path, bytes: &[u8], to: &Path) -> crate::Result<()> {
    let io = |source| StoreError::Io { path: to.to_path_buf(), source };
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(to).map_err(io)?;
    let mut gz = flate2::read::GzDecoder::new(bytes).take(MAX_INFLATED + 1);
    let n = std::io::copy(&mut gz, &mut file).map_err(|e| refused(path, format!("not a whole gzip file ({e}); was it cut short or changed?")))?;
    if n > MAX_INFLATED {
        return Err(refused(path, format!("inflates to more than {} GiB", MAX_INFLATED >> 30)));
    }
    file.sync_all().map_err(io)
}

fn read_info(path: &Path, c: &Connection) -> crate::Result<BundleInfo> {
    let mut stmt = c
        .prepare("SELECT key, value FROM bundle_info")
        .map_err(|e| refused(path, format!("no bundle_info table ({e}): not a cosched bundle")))?;
    let kv: HashMap<String, String> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(|e| refused(path, format!("bundle_info unreadable ({e})")))?;
    let get = |k: &str| kv.get(k).cloned().ok_or_else(|| refused(path, format!("bundle_info has no `{k}`")));
    if get("format")? != FORMAT {
        return Err(refused(path, format!("bundle_info.format is `{}`, not `{FORMAT}`", get("format")?)));
    }
    let num = |k: &str| -> crate::Result<i64> { get(k)?.parse().map_err(|_| refused(path, format!("bundle_info.{k} is not a number"))) };
    let info = BundleInfo {
        format_version: num("format_version")? as u32,
        schema_version: num("schema_version")? as u32,
        cosched_version: get("cosched_version")?,
        hostname: get("hostname")?,
        exported_unix: num("exported_unix")?,
    };
    if info.format_version != FORMAT_VERSION {
        return Err(refused(path, format!("bundle format version {} (this cosched reads {FORMAT_VERSION})", info.format_version)));
    }
    let stored = version_of(c).map_err(|e| refused(path, e.to_string()))?;
    if stored != info.schema_version {
        return Err(refused(path, format!("bundle_info says schema {} but the database is at {stored}", info.schema_version)));
    }
    Ok(info)
}

/// A column value as a hashable key: reals by their bits, so a row equal
/// in every column is found whatever it holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Cell {
    Null,
    Int(i64),
    Real(u64),
    Text(String),
    Blob(Vec<u8>),
}

impl From<&Value> for Cell {
    fn from(v: &Value) -> Cell {
        match v {
            Value::Null => Cell::Null,
            Value::Integer(i) => Cell::Int(*i),
            Value::Real(f) => Cell::Real(f.to_bits()),
            Value::Text(s) => Cell::Text(s.clone()),
            Value::Blob(b) => Cell::Blob(b.clone()),
        }
    }
}

/// The stored (not generated) columns of `table`, and whether it has an
/// `id` INTEGER PRIMARY KEY (every table but `samples`).
fn columns(tx: &Connection, table: &str) -> rusqlite::Result<(Vec<String>, bool)> {
    let mut stmt = tx.prepare(&format!("SELECT name, hidden FROM pragma_table_xinfo('{table}', 'main')"))?;
    let all: Vec<(String, i64)> = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    let has_id = all.iter().any(|(n, _)| n == "id");
    // hidden: 0 a column, 2 and 3 generated (virtual, stored).
    Ok((all.into_iter().filter(|(n, h)| *h == 0 && n != "id").map(|(n, _)| n).collect(), has_id))
}

/// Foreign keys of `table`: (column, referenced table).
fn foreign_keys(tx: &Connection, table: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = tx.prepare(&format!("SELECT \"from\", \"table\" FROM pragma_foreign_key_list('{table}', 'main')"))?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect();
    rows
}

fn merge_table(tx: &Connection, path: &Path, table: &'static str, ids: &mut HashMap<&'static str, HashMap<i64, i64>>) -> crate::Result<Merged> {
    let sql = |what: String| {
        let p = path.to_path_buf();
        move |source: rusqlite::Error| StoreError::Sql { path: p.clone(), what: what.clone(), source }
    };
    let (cols, has_id) = columns(tx, table).map_err(sql(format!("reading the columns of {table}")))?;
    let fks = foreign_keys(tx, table).map_err(sql(format!("reading the keys of {table}")))?;
    let list = cols.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
    let id_col = if has_id { "id" } else { "NULL" };
    let read = |db: &str| -> rusqlite::Result<Vec<(Option<i64>, Vec<Value>)>> {
        let mut stmt = tx.prepare(&format!("SELECT {id_col}, {list} FROM {db}.{table} ORDER BY {}", crate::export::order_of(table)))?;
        let n = cols.len();
        let rows = stmt.query_map([], |r| Ok((r.get::<_, Option<i64>>(0)?, (1..=n).map(|k| r.get::<_, Value>(k)).collect::<rusqlite::Result<Vec<_>>>()?)))?;
        rows.collect()
    };
    let theirs = read("bundle").map_err(|e| refused(path, format!("table {table} unreadable: {e}")))?;
    // Rows already stored, by content: each may stand for one bundle row.
    let mut have: HashMap<Vec<Cell>, Vec<Option<i64>>> = HashMap::new();
    for (id, vals) in read("main").map_err(sql(format!("reading {table}")))? {
        have.entry(vals.iter().map(Cell::from).collect()).or_default().push(id);
    }
    let positions: Vec<(usize, &'static str)> = fks
        .iter()
        .filter_map(|(col, to)| {
            let to = TABLES.iter().copied().find(|t| t == to)?;
            Some((cols.iter().position(|c| c == col)?, to))
        })
        .collect();
    let insert = format!("INSERT INTO main.{table} ({list}) VALUES ({})", vec!["?"; cols.len()].join(", "));
    let mut stmt = tx.prepare(&insert).map_err(sql(format!("preparing the import of {table}")))?;
    let mut added = 0;
    let mut map: HashMap<i64, i64> = HashMap::new();
    for (id, mut vals) in theirs.iter().cloned() {
        for &(k, to) in &positions {
            if let Value::Integer(old) = vals[k] {
                let new = ids.get(to).and_then(|m| m.get(&old)).copied().ok_or_else(|| {
                    refused(path, format!("{table} row {} refers to {to} {old}, which the bundle does not hold", id.unwrap_or(0)))
                })?;
                vals[k] = Value::Integer(new);
            }
        }
        let key: Vec<Cell> = vals.iter().map(Cell::from).collect();
        let found = have.get_mut(&key).and_then(|v| v.pop());
        let new_id = match found {
            Some(existing) => existing,
            None => {
                stmt.execute(params_from_iter(vals.iter())).map_err(|e| {
                    refused(path, format!("{table} row {} clashes with what the store holds ({e})", id.unwrap_or(0)))
                })?;
                added += 1;
                Some(tx.last_insert_rowid())
            }
        };
        if let (Some(old), Some(new)) = (id, new_id) {
            map.insert(old, new);
        }
    }
    ids.insert(table, map);
    Ok(Merged { table: table.to_string(), rows: theirs.len() as u64, added })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table's rows, ids left out and keys kept, sorted: what two
    /// stores must agree on after a round trip.
    fn contents(s: &Store) -> Vec<(String, Vec<String>)> {
        TABLES
            .iter()
            .map(|t| {
                let (cols, _) = columns(&s.conn, t).unwrap();
                let list = cols.iter().map(|c| format!("quote(\"{c}\")")).collect::<Vec<_>>().join(" || '|' || ");
                let mut stmt = s.conn.prepare(&format!("SELECT {list} FROM {t}")).unwrap();
                let mut rows: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
                rows.sort();
                (t.to_string(), rows)
            })
            .collect()
    }

    const PROVENANCE: &str = "INSERT INTO provenance (hostname, cpu_model, cores, kernel_version, cosched_version, git_commit, command, seed, started_unix)
         VALUES ('node-a', 'EPYC', 2, '6.1', '0.1.0', 'abc', 'cosched pairs', NULL, 100), ('node-a', 'EPYC', 2, '6.1', '0.1.0', 'abc', 'cosched run', '7', 200)";

    /// A store with rows in most tables: two provenances, a pairs campaign
    /// with its conditions and two repeats, a solo run with samples, a run
    /// with two jobs and a journal holding two equal lines.
    fn seed(s: &Store, series: &str) {
        let c = &s.conn;
        c.execute_batch(PROVENANCE).unwrap();
        let p: i64 = c.query_row("SELECT max(id) FROM provenance", [], |r| r.get(0)).unwrap();
        c.execute("INSERT INTO campaigns (kind, workload, params_json, status, provenance_id, started_unix, finished_unix) VALUES ('pairs', 'w', '{}', 'done', ?1 - 1, 100, 150)", [p]).unwrap();
        let camp = c.last_insert_rowid();
        c.execute("INSERT INTO campaign_conditions (campaign_id, taken_unix, load1, load5, load15, c2c_cpus, c2c_round_trip_ns) VALUES (?1, 100, 0.1, 0.2, 0.3, '0,1', 42.5)", [camp]).unwrap();
        for (k, slow) in [(0, 1.25), (1, 1.3125)] {
            c.execute(
                "INSERT INTO pair_runs (campaign_id, provenance_id, fg_job, bg_job, repeat_index, fg_cpus, bg_cpus, shared_cpus, fg_solo_s, fg_corun_s,
                 bg_solo_s, bg_corun_s, fg_relaunches, bg_relaunches, fg_timing, bg_timing, sharing_level)
                 VALUES (?1, ?2 - 1, 'a', 'b', ?3, '0', '1', 0, 2.0, ?4, 1.0, 1.5, 0, 0, 'process', 'process', 'same-llc')",
                rusqlite::params![camp, p, k, 2.0 * slow],
            )
            .unwrap();
        }
        c.execute("INSERT INTO solo_runs (campaign_id, provenance_id, job, program, cpus, repeat_index, interval_s, wall_s, time_s, timing, counters_json)
                   VALUES (?1, ?2 - 1, 'a', 'A', '0', 0, 0.1, 2.0, 2.0, 'process', '{}')", [camp, p]).unwrap();
        let solo = c.last_insert_rowid();
        for seq in 0..3 {
            c.execute("INSERT INTO samples (run_id, seq, t_s, host_load, cpu_user_s, cpu_sys_s, vol_ctx, invol_ctx, syscalls, read_bytes, write_bytes,
                       disk_read_bytes, disk_write_bytes, syscr, syscw, rss_kib, minflt, majflt, nprocs)
                       VALUES (?1, ?2, ?2 * 0.1, 1.0, 0.1, 0.0, 1, 0, NULL, 0, 0, 0, 0, 0, 0, 1024, 0, 0, 1)", [solo, seq]).unwrap();
        }
        c.execute("INSERT INTO runs (series, workload, policy, repeat_index, params_json, status, provenance_id, started_unix, finished_unix)
                   VALUES (?1, 'w', 'noplan', 0, '{}', 'done', ?2, 200, 210)", rusqlite::params![series, p]).unwrap();
        let run = c.last_insert_rowid();
        for (k, job) in ["a", "b"].iter().enumerate() {
            c.execute("INSERT INTO run_jobs (run_id, job, job_index, attempt, arrival_s, start_s, end_s, cpus, pgid, beside_json, predicted, solo_s, status, slowdown)
                       VALUES (?1, ?2, ?3, 0, 0, 0, 2.5, '0', 1, '[]', 1.25, 2.0, 'ok', 1.25)", rusqlite::params![run, job, k as i64]).unwrap();
        }
        for _ in 0..2 {
            c.execute("INSERT INTO run_journal (run_id, t_s, event, job, detail) VALUES (?1, 1.0, 'start', 'a', 'cpus 0')", [run]).unwrap();
        }
        c.execute("INSERT INTO run_conditions (run_id, taken_unix, load1, load5, load15) VALUES (?1, 200, 0.5, 0.5, 0.5)", [run]).unwrap();
    }

    fn seeded(dir: &Path) -> Store {
        std::fs::create_dir_all(dir).unwrap();
        let s = Store::open(&dir.join("a.db")).unwrap();
        seed(&s, "s1");
        s
    }

    #[test]
    fn every_table_of_the_schema_is_exported_and_bundled() {
        let s = Store::open_in_memory().unwrap();
        let mut stmt = s.conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").unwrap();
        let mut tables: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
        tables.sort();
        let mut listed: Vec<String> = TABLES.iter().map(|t| t.to_string()).collect();
        listed.sort();
        assert_eq!(tables, listed, "a table the schema has and TABLES lacks is neither exported nor bundled");
    }

    #[test]
    fn a_bundle_imported_into_an_empty_store_holds_every_row_and_a_second_import_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = seeded(dir.path());
        let bytes = a.export_bundle("0.1.0 (test)", "node-a", 1_700_000_000).unwrap();
        let mut b = Store::open(&dir.path().join("b.db")).unwrap();
        let bundle = Bundle::read(Path::new("x.bundle"), &bytes).unwrap();
        let info = bundle.info.clone();
        assert_eq!(bundle.workloads().unwrap(), ["w"], "the workloads of its campaigns");
        let merged = b.import_bundle(&bundle).unwrap();
        assert_eq!((info.hostname.as_str(), info.schema_version), ("node-a", latest_version()));
        assert!(merged.iter().all(|m| m.added == m.rows), "{merged:?}");
        assert_eq!(merged.iter().find(|m| m.table == "run_journal").map(|m| m.added), Some(2), "two equal lines stay two");
        assert!(merged.iter().map(|m| m.rows).sum::<u64>() > 10, "the seed fills several tables: {merged:?}");
        assert_eq!(contents(&a), contents(&b));
        let again = b.import_bundle(&Bundle::read(Path::new("x.bundle"), &bytes).unwrap()).unwrap();
        assert!(again.iter().all(|m| m.added == 0), "{again:?}");
        assert_eq!(contents(&a), contents(&b));
    }

    #[test]
    fn a_cut_or_altered_bundle_is_refused_and_the_store_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let a = seeded(dir.path());
        let bytes = a.export_bundle("v", "n", 0).unwrap();
        let mut b = seeded(&dir.path().join("b"));
        let before = contents(&b);
        let cut = &bytes[..bytes.len() / 2];
        let mut flipped = bytes.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0x40;
        for (name, bad) in [("cut", cut.to_vec()), ("flipped", flipped), ("empty", Vec::new()), ("plain", b"not gzip".to_vec())] {
            let e = Bundle::read(Path::new("x.bundle"), &bad).and_then(|x| b.import_bundle(&x)).unwrap_err().to_string();
            assert!(e.contains("x.bundle"), "{name}: {e}");
            assert_eq!(contents(&b), before, "{name} changed the store");
        }
    }

    #[test]
    fn a_bundle_whose_row_clashes_with_a_stored_one_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let a = seeded(dir.path());
        let bytes = a.export_bundle("v", "n", 0).unwrap();
        // Another store with a run of the same series, policy and repeat
        // but other content: the bundle's run cannot be added beside it.
        let mut b = Store::open(&dir.path().join("b.db")).unwrap();
        b.conn.execute_batch(PROVENANCE).unwrap();
        b.conn.execute("INSERT INTO runs (series, workload, policy, repeat_index, params_json, status, provenance_id, started_unix) VALUES ('s1', 'other', 'noplan', 0, '{}', 'running', 1, 5)", []).unwrap();
        let before = contents(&b);
        let e = b.import_bundle(&Bundle::read(Path::new("x.bundle"), &bytes).unwrap()).unwrap_err().to_string();
        assert!(e.contains("clashes") && e.contains("nothing was stored"), "{e}");
        assert_eq!(contents(&b), before);
    }
}
