//! Calibrations: the rate of each kernel configuration on this node, with
//! their history.

use crate::*;

impl Store {
    /// Stores calibrations, all or none. Earlier calibrations of the same
    /// key are kept as history; [`Store::calibrations`] returns the latest.
    pub fn put_calibrations(&mut self, cals: &[Calibration]) -> Result<()> {
        for c in cals {
            check_calibration(c)?;
        }
        self.write("storing calibrations", |tx| {
            let err = |source| sql_err(tx, "storing calibrations", source);
            for c in cals {
                let prov = provenance_id(tx, &c.provenance).map_err(err)?;
                let (figure_name, figure_json) = match &c.figure {
                    Some((name, s)) => {
                        (Some(name.as_str()), Some(serde_json::to_string(s).expect("a summary serializes")))
                    }
                    None => (None, None),
                };
                tx.execute(
                    "INSERT INTO calibrations (key, kernel, params_json, threads, unit, work_per_run,
                        rate_n, rate_median, rate_min, rate_max, rate_ci_lo, rate_ci_hi,
                        figure_name, figure_json, provenance_id)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                    params![
                        c.key,
                        c.kernel,
                        serde_json::to_string(&c.params).expect("a string map serializes"),
                        c.threads,
                        c.unit,
                        c.work_per_run,
                        c.rate.n as i64,
                        c.rate.median,
                        c.rate.min,
                        c.rate.max,
                        c.rate.ci_lo,
                        c.rate.ci_hi,
                        figure_name,
                        figure_json,
                        prov,
                    ],
                )
                .map_err(err)?;
            }
            Ok(())
        })
    }

    /// The latest calibration of every key.
    pub fn calibrations(&self) -> Result<BTreeMap<String, Calibration>> {
        let sql = format!(
            "SELECT {CAL_COLS}, {PROV_COLS} FROM calibrations c JOIN provenance p ON p.id = c.provenance_id
             WHERE c.id IN (SELECT max(id) FROM calibrations GROUP BY key) ORDER BY c.key"
        );
        let rows = self.query(&sql, [], "reading calibrations", calibration_from_row)?;
        Ok(rows.into_iter().map(|c| (c.key.clone(), c)).collect())
    }

    /// The latest calibration of `key`, if any.
    pub fn calibration(&self, key: &str) -> Result<Option<Calibration>> {
        Ok(self.calibration_history(key)?.pop())
    }

    /// Every calibration of `key`, oldest first.
    pub fn calibration_history(&self, key: &str) -> Result<Vec<Calibration>> {
        let sql = format!(
            "SELECT {CAL_COLS}, {PROV_COLS} FROM calibrations c JOIN provenance p ON p.id = c.provenance_id
             WHERE c.key = ?1 ORDER BY c.id"
        );
        self.query(&sql, [key], "reading calibrations", calibration_from_row)
    }
}
