//! Campaigns: a `profile`, `pairs` or `probe` measurement over a workload,
//! found again by its parameters so it can be resumed.

use crate::*;

impl Store {
    /// parameters as a JSON document; it is stored with object keys sorted,
    /// so [`Store::find_campaign`] matches it whatever order the caller
    /// serialized it in. The verbs use [`Store::begin_campaign_typed`]; this
    /// text form is for parameters no [`CampaignParams`] describes, such as
    /// a test's.
    pub fn begin_campaign(
        &mut self,
        kind: CampaignKind,
        workload: &str,
        params_json: &str,
        provenance: &Provenance,
    ) -> Result<CampaignId> {
        nonempty("campaign", "workload", workload)?;
        let params = canonical_params(params_json)?;
        self.write("starting a campaign", |tx| {
            let prov = provenance_id(tx, provenance).map_err(|source| sql_err(tx, "starting a campaign", source))?;
            tx.execute(
                "INSERT INTO campaigns (kind, workload, params_json, status, provenance_id, started_unix)
                 VALUES (?1, ?2, ?3, 'running', ?4, ?5)",
                params![kind.as_str(), workload, params, prov, provenance.started_unix],
            )
            .map_err(|source| sql_err(tx, "starting a campaign", source))?;
            Ok(CampaignId(tx.last_insert_rowid()))
        })
    }

    /// Starts a campaign of the kind of `params`; what the verbs call, so
    /// their parameters are stored as [`Store::find_campaign_typed`] and
    /// [`CampaignRecord::parameters`] read them.
    pub fn begin_campaign_typed(
        &mut self,
        workload: &str,
        params: &CampaignParams,
        provenance: &Provenance,
    ) -> Result<CampaignId> {
        self.begin_campaign(params.kind(), workload, &params.to_json(), provenance)
    }

    /// [`Store::find_campaign`] with typed parameters: finds campaigns
    /// stored by earlier versions too, whose text is the same.
    pub fn find_campaign_typed(
        &self,
        workload: &str,
        params: &CampaignParams,
    ) -> Result<Option<(CampaignId, CampaignStatus)>> {
        let exact = self.find_campaign(params.kind(), workload, &params.to_json())?;
        let Some(want) = params.by_program() else { return Ok(exact) };
        // The same programs launched from another path (cosched's kernel
        // binary installed elsewhere, a command found through another PATH
        // entry) are the same campaign: their identities, which name the
        // kernel and its parameters or the executable's content, agree.
        let rows = self.query(
            "SELECT id, status, params_json FROM campaigns WHERE kind = ?1 AND workload = ?2 ORDER BY id DESC",
            params![params.kind().as_str(), workload],
            "finding a campaign",
            |r| Ok((CampaignId(r.get(0)?), parse_text::<CampaignStatus>(r, 1)?, r.get::<_, String>(2)?)),
        )?;
        for (id, status, text) in rows {
            if exact.is_some_and(|(e, _)| e.0 >= id.0) {
                break; // the newest match is the exact one
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            let Ok(stored) = CampaignParams::from_value(id, params.kind(), &v) else { continue };
            if stored.by_program().as_ref() == Some(&want) {
                return Ok(Some((id, status)));
            }
        }
        Ok(exact)
    }

    /// Marks a campaign `done` or `interrupted`, with the time it ended.
    pub fn finish_campaign(&mut self, id: CampaignId, status: CampaignStatus) -> Result<()> {
        if status == CampaignStatus::Running {
            return Err(StoreError::Invalid {
                what: format!("finishing campaign {id}"),
                why: "a finished campaign is done or interrupted; reopen_campaign makes it running".into(),
            });
        }
        self.set_status(id, status, Some(now_unix()))
    }

    /// Makes an interrupted (or killed, hence still `running`) campaign
    /// running again so runs can be added; returns the status it had.
    pub fn reopen_campaign(&mut self, id: CampaignId) -> Result<CampaignStatus> {
        let before = self.campaign(id)?.ok_or(StoreError::NoSuchCampaign(id))?.status;
        self.set_status(id, CampaignStatus::Running, None)?;
        Ok(before)
    }

    pub(crate) fn set_status(&mut self, id: CampaignId, status: CampaignStatus, finished: Option<u64>) -> Result<()> {
        let n = self.write("updating a campaign", |tx| {
            tx.execute(
                "UPDATE campaigns SET status = ?2, finished_unix = ?3 WHERE id = ?1",
                params![id.0, status.as_str(), finished],
            )
            .map_err(|source| sql_err(tx, "updating a campaign", source))
        })?;
        if n == 0 {
            return Err(StoreError::NoSuchCampaign(id));
        }
        Ok(())
    }

    /// The latest campaign of this kind over this workload with these
    /// parameters (compared as JSON values), whatever its status: what
    /// `--resume` continues.
    pub fn find_campaign(
        &self,
        kind: CampaignKind,
        workload: &str,
        params_json: &str,
    ) -> Result<Option<(CampaignId, CampaignStatus)>> {
        let params = canonical_params(params_json)?;
        let err = self.sql("finding a campaign");
        self.conn
            .query_row(
                "SELECT id, status FROM campaigns WHERE kind = ?1 AND workload = ?2 AND params_json = ?3
                 ORDER BY id DESC LIMIT 1",
                params![kind.as_str(), workload, params],
                |r| Ok((CampaignId(r.get(0)?), parse_text::<CampaignStatus>(r, 1)?)),
            )
            .optional()
            .map_err(err)
    }

    /// One campaign with its run count and provenance.
    pub fn campaign(&self, id: CampaignId) -> Result<Option<CampaignRecord>> {
        let sql = format!("{CAMPAIGN_SELECT} WHERE c.id = ?1");
        Ok(self.query(&sql, [id.0], "reading a campaign", campaign_from_row)?.pop())
    }

    /// Every campaign, oldest first.
    pub fn campaigns(&self) -> Result<Vec<CampaignRecord>> {
        let sql = format!("{CAMPAIGN_SELECT} ORDER BY c.id");
        self.query(&sql, [], "reading campaigns", campaign_from_row)
    }

    /// Checks that runs of `what` may be added to campaign `id` now, and
    /// returns the campaign's provenance row, which its runs share.
    pub(crate) fn open_campaign(tx: &Transaction, id: CampaignId, kind: CampaignKind, what: &'static str) -> Result<i64> {
        let row = tx
            .query_row("SELECT kind, status, provenance_id FROM campaigns WHERE id = ?1", [id.0], |r| {
                Ok((parse_text::<CampaignKind>(r, 0)?, parse_text::<CampaignStatus>(r, 1)?, r.get::<_, i64>(2)?))
            })
            .optional()
            .map_err(|source| sql_err(tx, "reading a campaign", source))?;
        let (k, status, prov) = row.ok_or(StoreError::NoSuchCampaign(id))?;
        if k != kind {
            return Err(StoreError::WrongKind { id, kind: k, what });
        }
        if status != CampaignStatus::Running {
            return Err(StoreError::NotRunning { id, status });
        }
        Ok(prov)
    }
}
