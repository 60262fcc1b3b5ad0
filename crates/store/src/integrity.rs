//! The file itself: checking a database for damage and recovering what
//! can be read from a damaged one.

use crate::*;


/// The damage `quick_check` finds; a page so broken that the check itself
/// stops is damage too.
pub(crate) fn quick_check(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    match check_pages(conn, "quick_check") {
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseCorrupt) => Ok(vec![e.to_string()]),
        other => other,
    }
}

/// The problems `PRAGMA quick_check` or `integrity_check` reports (none
/// when it says `ok`).
pub(crate) fn check_pages(conn: &Connection, pragma: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA {pragma}(100)"))?;
    let rows: Vec<String> = stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<_>>()?;
    Ok(if rows.len() == 1 && rows[0] == "ok" { Vec::new() } else { rows })
}

pub(crate) fn summary_of(damage: &[String]) -> String {
    let mut s: Vec<String> = damage.iter().take(3).cloned().collect();
    if damage.len() > 3 {
        s.push(format!("... {} problems in all", damage.len()));
    }
    s.join("; ")
}

/// SQLite's `integrity_check` of the file at `path`, opened read-only even
/// when damaged: each problem, none when it is sound. A file of a schema
/// newer than this cosched knows is refused as every other verb refuses it:
/// its checks would be of tables this cosched cannot read.
pub fn check_file(path: &Path) -> Result<Vec<String>> {
    let conn = open_reading(path)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|source| StoreError::Open { path: path.into(), source })?;
    if let Ok(found) = schema::version_of(&conn) {
        if found > latest_version() {
            return Err(StoreError::TooNew { path: path.into(), found, known: latest_version() });
        }
    }
    match check_pages(&conn, "integrity_check") {
        Err(e) if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)) => Ok(vec![e.to_string()]),
        other => other.map_err(|e| sql_error(path, "checking the database's integrity", e)),
    }
}

/// Opens the file at `path` for reading only, creating and changing
/// nothing: a missing or empty file is [`StoreError::Missing`] (SQLite
/// would take an empty file for a new database), anything but a regular
/// file (a device, a FIFO, a directory) is not a database. A database with
/// no write-ahead log beside it is opened `immutable`: a read-only
/// connection to a WAL database would otherwise leave `-wal` and `-shm`
/// files behind. With a log there, a writer has the file open, and it is
/// read as a reader among writers (through the log's existing files).
pub(crate) fn open_reading(path: &Path) -> Result<Connection> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StoreError::Missing { path: path.into() }),
        Err(e) => return Err(StoreError::Io { path: path.into(), source: e }),
        Ok(m) if m.is_dir() => return Err(StoreError::NotADatabase { path: path.into(), why: "it is a directory".into() }),
        Ok(m) if !m.is_file() => {
            return Err(StoreError::NotADatabase { path: path.into(), why: "not a regular file (a device, a FIFO or a socket)".into() })
        }
        Ok(m) if m.len() == 0 => return Err(StoreError::Missing { path: path.into() }),
        Ok(_) => {}
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let immutable = !Path::new(&wal).exists();
    let uri = format!("file:{}?mode=ro{}", uri_path(path), if immutable { "&immutable=1" } else { "" });
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    Connection::open_with_flags(uri, flags).map_err(|source| StoreError::Open { path: path.into(), source })
}

/// `path` as the path of a `file:` URI: every byte but unreserved ones and
/// `/` percent-encoded, so `?`, `#` and `%` in a name stay part of it.
pub(crate) fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What [`recover`] copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// `VACUUM INTO` read every page; else rows were copied one by one.
    pub whole: bool,
    /// Per table: rows copied and rows that could not be read.
    pub tables: Vec<(String, u64, u64)>,
    /// `integrity_check` of the copy: empty when sound.
    pub check: Vec<String>,
}

/// Copies what can be read of the database at `src` into a new file `out`,
/// leaving `src` as it is: `VACUUM INTO` (which rebuilds every index from
/// its table) when every table page reads, else a fresh database of the
/// current schema filled row by row, skipping rows that do not read.
pub fn recover(src: &Path, out: &Path) -> Result<Recovered> {
    // An empty file holds nothing to lose (under sudo, app creates the
    // copy as the invoking user first so that root writes only where they
    // could); VACUUM INTO fills an empty file too.
    if std::fs::metadata(out).is_ok_and(|m| m.len() > 0) {
        return Err(StoreError::Invalid { what: format!("recovering into {}", out.display()), why: "the file exists; name a new one".into() });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(src, flags).map_err(|source| StoreError::Open { path: src.into(), source })?;
    let vacuum = conn.execute("VACUUM INTO ?1", [out.to_string_lossy()]);
    let whole = vacuum.is_ok();
    if !whole {
        let _ = std::fs::remove_file(out);
        drop(Store::open(out)?);
    }
    let dst = Connection::open(out).map_err(|source| StoreError::Open { path: out.into(), source })?;
    let err = |what: &str| {
        let what = what.to_string();
        move |source| sql_error(out, &what, source)
    };
    let mut tables = Vec::new();
    if whole {
        for t in TABLES {
            let n: u64 = dst.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).unwrap_or(0);
            tables.push((t.to_string(), n, 0));
        }
    } else {
        dst.execute_batch("PRAGMA foreign_keys = OFF").map_err(err("preparing the copy"))?;
        dst.execute("ATTACH DATABASE ?1 AS src", [src.to_string_lossy()]).map_err(err("reading the damaged file"))?;
        for t in TABLES {
            // The largest rowid, when the table's last page reads; else ids
            // are probed upwards until a long run of them holds nothing
            // (rowids here are dense: every table is append-only).
            let max: Option<i64> = dst.query_row(&format!("SELECT max(rowid) FROM src.{t}"), [], |r| r.get::<_, Option<i64>>(0)).unwrap_or(None);
            let (mut copied, mut lost) = (0u64, 0u64);
            let sql = format!("INSERT OR IGNORE INTO main.{t} SELECT * FROM src.{t} WHERE rowid = ?1");
            let (mut id, mut misses) = (1i64, 0u32);
            while max.map_or(misses < 10_000, |m| id <= m) {
                match dst.execute(&sql, [id]) {
                    Ok(0) => misses += 1,
                    Ok(n) => {
                        copied += n as u64;
                        misses = 0;
                    }
                    Err(_) => {
                        lost += 1;
                        misses += 1;
                    }
                }
                id += 1;
            }
            tables.push((t.to_string(), copied, lost));
        }
        dst.execute_batch("DETACH DATABASE src").map_err(err("finishing the copy"))?;
    }
    let check = check_pages(&dst, "integrity_check").map_err(err("checking the copy"))?;
    Ok(Recovered { whole, tables, check })
}

/// Whether the file system holding `path` has no block left for us.
pub(crate) fn disk_full(path: &Path) -> bool {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    nix::sys::statvfs::statvfs(dir).is_ok_and(|v| v.blocks_available() == 0)
}
