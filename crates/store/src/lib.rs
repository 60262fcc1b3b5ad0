//! The performance database of cosched.
//!
//! For now it holds calibrations as one JSON file in the data directory; the
//! SQLite database with a versioned schema replaces the file when the
//! characterization work lands, behind the same functions. The store never
//! measures anything: it keeps what `measure` produced.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use cosched_model::calibration::Calibration;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a valid calibration file ({source}); it was left untouched: move it away or fix it, then calibrate again")]
    Corrupt { path: PathBuf, source: serde_json::Error },
}

/// The data directory: `$COSCHED_DATA_DIR`, else the user's data directory
/// (`~/.local/share/cosched`), else `./.cosched`.
pub fn default_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("COSCHED_DATA_DIR") {
        return PathBuf::from(d);
    }
    dirs::data_dir().map(|d| d.join("cosched")).unwrap_or_else(|| PathBuf::from(".cosched"))
}

/// Calibrations of one data directory, keyed by `calibration_key`.
#[derive(Debug, Clone)]
pub struct Calibrations {
    path: PathBuf,
}

impl Calibrations {
    pub fn in_dir(dir: &Path) -> Calibrations {
        Calibrations { path: dir.join("calibration.json") }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every stored calibration; empty when none was stored yet.
    pub fn load(&self) -> Result<BTreeMap<String, Calibration>, StoreError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(source) => return Err(StoreError::Io { path: self.path.clone(), source }),
        };
        serde_json::from_str(&text).map_err(|source| StoreError::Corrupt { path: self.path.clone(), source })
    }

    pub fn get(&self, key: &str) -> Result<Option<Calibration>, StoreError> {
        Ok(self.load()?.remove(key))
    }

    /// Adds or replaces calibrations. The file is replaced atomically (write
    /// to a temporary file, fsync, rename), so a crash never leaves half a
    /// file, and a corrupt existing file makes this fail instead of being
    /// overwritten.
    pub fn put_all(&self, cals: impl IntoIterator<Item = Calibration>) -> Result<(), StoreError> {
        let mut all = self.load()?;
        for c in cals {
            all.insert(c.key.clone(), c);
        }
        let io = |source| StoreError::Io { path: self.path.clone(), source };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let tmp = self.path.with_extension("json.tmp");
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        let text = serde_json::to_string_pretty(&all).expect("calibrations serialize");
        f.write_all(text.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::provenance::Provenance;
    use cosched_model::stats::Summary;

    fn cal(key: &str, rate: f64) -> Calibration {
        Calibration {
            key: key.into(),
            kernel: "compute".into(),
            params: BTreeMap::new(),
            threads: 1,
            unit: "u".into(),
            work_per_run: 10,
            rate: Summary::of(&[rate]).unwrap(),
            figure: None,
            provenance: Provenance {
                hostname: "h".into(),
                cpu_model: "c".into(),
                cores: 2,
                kernel_version: "k".into(),
                cosched_version: "v".into(),
                git_commit: "g".into(),
                started_unix: 1,
                command: "cmd".into(),
                seed: None,
            },
        }
    }

    #[test]
    fn put_then_load_round_trips_and_replaces_by_key() {
        let d = tempfile::tempdir().unwrap();
        let s = Calibrations::in_dir(d.path());
        assert!(s.load().unwrap().is_empty());
        s.put_all([cal("a", 1.0), cal("b", 2.0)]).unwrap();
        s.put_all([cal("a", 3.0)]).unwrap();
        let all = s.load().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all["a"].rate.median, 3.0);
        assert_eq!(s.get("b").unwrap().unwrap().rate.median, 2.0);
    }

    #[test]
    fn a_corrupt_file_is_reported_and_never_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let s = Calibrations::in_dir(d.path());
        std::fs::write(s.path(), "{not json").unwrap();
        let e = s.put_all([cal("a", 1.0)]).unwrap_err();
        assert!(e.to_string().contains("calibration.json"), "{e}");
        assert_eq!(std::fs::read_to_string(s.path()).unwrap(), "{not json");
    }
}
