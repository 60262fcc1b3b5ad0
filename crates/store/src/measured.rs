//! What campaigns measured: pair runs, solo runs with their samples,
//! profiles and probe points.

use crate::*;

impl Store {
    /// Stores one repeat of a co-run in a `pairs` campaign.
    pub fn add_pair_run(&mut self, campaign: CampaignId, run: &PairRunRecord) -> Result<()> {
        let what = || format!("pair run {} + {} repeat {}", run.fg_job, run.bg_job, run.repeat);
        nonempty(&what(), "fg_job", &run.fg_job)?;
        nonempty(&what(), "bg_job", &run.bg_job)?;
        for (name, v) in [
            ("fg_solo_s", run.fg_solo_s),
            ("fg_corun_s", run.fg_corun_s),
            ("bg_solo_s", run.bg_solo_s),
            ("bg_corun_s", run.bg_corun_s),
        ] {
            positive(&what(), name, v)?;
        }
        check_regime(&what(), &run.regime)?;
        self.write("storing a pair run", |tx| {
            let prov = Store::open_campaign(tx, campaign, CampaignKind::Pairs, "pair runs")?;
            tx.execute(
                "INSERT INTO pair_runs (campaign_id, provenance_id, fg_job, bg_job, repeat_index, fg_cpus, bg_cpus,
                    shared_cpus, fg_solo_s, fg_corun_s, bg_solo_s, bg_corun_s, fg_relaunches, bg_relaunches,
                    fg_timing, bg_timing, c2c_cpus, c2c_before_ns, c2c_after_ns, sharing_level)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                params![
                    campaign.0,
                    prov,
                    run.fg_job,
                    run.bg_job,
                    run.repeat,
                    format_cpulist(&run.fg_cpus),
                    format_cpulist(&run.bg_cpus),
                    run.shared_cpus,
                    run.fg_solo_s,
                    run.fg_corun_s,
                    run.bg_solo_s,
                    run.bg_corun_s,
                    run.fg_relaunches,
                    run.bg_relaunches,
                    run.fg_timing,
                    run.bg_timing,
                    regime_cpus(&run.regime),
                    run.regime.before_ns,
                    run.regime.after_ns,
                    run.level.map(SharingLevel::name),
                ],
            )
            .map_err(|source| sql_err(tx, &format!("storing {}", what()), source))?;
            Ok(())
        })
    }

    /// The pair runs of a campaign, in the order they were stored.
    pub fn pair_runs(&self, campaign: CampaignId) -> Result<Vec<PairRunRecord>> {
        self.query(
            "SELECT fg_job, bg_job, repeat_index, fg_cpus, bg_cpus, shared_cpus, fg_solo_s, fg_corun_s,
                    bg_solo_s, bg_corun_s, fg_relaunches, bg_relaunches, fg_timing, bg_timing,
                    c2c_cpus, c2c_before_ns, c2c_after_ns, sharing_level
             FROM pair_runs WHERE campaign_id = ?1 ORDER BY id",
            [campaign.0],
            "reading pair runs",
            |r| {
                Ok(PairRunRecord {
                    fg_job: r.get(0)?,
                    bg_job: r.get(1)?,
                    repeat: r.get(2)?,
                    fg_cpus: cpus(r, 3)?,
                    bg_cpus: cpus(r, 4)?,
                    shared_cpus: r.get(5)?,
                    fg_solo_s: r.get(6)?,
                    fg_corun_s: r.get(7)?,
                    bg_solo_s: r.get(8)?,
                    bg_corun_s: r.get(9)?,
                    fg_relaunches: r.get(10)?,
                    bg_relaunches: r.get(11)?,
                    fg_timing: r.get(12)?,
                    bg_timing: r.get(13)?,
                    regime: regime_from_row(r, 14)?,
                    level: level_from_row(r, 17)?,
                })
            },
        )
    }

    /// Per ordered pair (victim beside aggressor) and sharing level, the
    /// median slowdown of `campaign`'s repeats, sorted by victim, aggressor
    /// and level (unlevelled last): each repeat counts once for each of its
    /// two jobs.
    pub fn pair_level_medians(&self, campaign: CampaignId) -> Result<Vec<LevelCell>> {
        type Cell = (String, String, (bool, Option<SharingLevel>));
        let mut by: BTreeMap<Cell, Vec<f64>> = BTreeMap::new();
        for r in self.pair_runs(campaign)? {
            // Levels sort closest first; repeats without one after them.
            let level = (r.level.is_none(), r.level);
            by.entry((r.fg_job.clone(), r.bg_job.clone(), level)).or_default().push(r.fg_slowdown());
            by.entry((r.bg_job.clone(), r.fg_job.clone(), level)).or_default().push(r.bg_slowdown());
        }
        Ok(by
            .into_iter()
            .map(|((victim, aggressor, (_, level)), v)| LevelCell {
                victim,
                aggressor,
                level,
                n: v.len(),
                median: cosched_model::stats::median(&v),
            })
            .collect())
    }

    // ---- solo runs, samples, profiles ---------------------------------

    /// Stores one solo run of a `profile` campaign with all its samples
    /// (numbered in the order given), in one transaction.
    pub fn add_solo_run(
        &mut self,
        campaign: CampaignId,
        run: &SoloRunRecord,
        samples: &[SampleRecord],
    ) -> Result<RunId> {
        let what = || format!("solo run of {} repeat {}", run.job, run.repeat);
        nonempty(&what(), "job", &run.job)?;
        nonempty(&what(), "program", &run.program)?;
        positive(&what(), "interval_s", run.interval_s)?;
        positive(&what(), "wall_s", run.wall_s)?;
        positive(&what(), "time_s", run.time_s)?;
        if let Some((name, v)) = run.counters.iter().find(|(_, v)| !v.is_finite()) {
            return Err(StoreError::Invalid { what: what(), why: format!("counter {name} = {v} is not finite") });
        }
        if run.exit_code.is_some() == run.exit_signal.is_some() {
            return Err(StoreError::Invalid {
                what: what(),
                why: "exactly one of exit_code and exit_signal must be set".into(),
            });
        }
        for (i, s) in samples.iter().enumerate() {
            let what = || format!("{} sample {i}", what());
            for (name, v) in
                [("t_s", s.t_s), ("host_load", s.host_load), ("cpu_user_s", s.cpu_user_s), ("cpu_sys_s", s.cpu_sys_s)]
            {
                non_negative(&what(), name, v)?;
            }
        }
        self.write("storing a solo run", |tx| {
            let err = |source| sql_err(tx, &format!("storing {}", what()), source);
            let prov = Store::open_campaign(tx, campaign, CampaignKind::Profile, "solo runs")?;
            tx.execute(
                "INSERT INTO solo_runs (campaign_id, provenance_id, job, program, cpus, repeat_index, interval_s,
                    wall_s, time_s, timing, exit_code, exit_signal, syscall_source, syscall_total, counters_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    campaign.0,
                    prov,
                    run.job,
                    run.program,
                    format_cpulist(&run.cpus),
                    run.repeat,
                    run.interval_s,
                    run.wall_s,
                    run.time_s,
                    run.timing,
                    run.exit_code,
                    run.exit_signal,
                    run.syscall_source,
                    run.syscall_total,
                    serde_json::to_string(&run.counters).expect("a number map serializes"),
                ],
            )
            .map_err(err)?;
            let id = tx.last_insert_rowid();
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO samples (run_id, seq, t_s, host_load, cpu_user_s, cpu_sys_s, vol_ctx, invol_ctx,
                        syscalls, read_bytes, write_bytes, disk_read_bytes, disk_write_bytes, syscr, syscw, rss_kib,
                        minflt, majflt, nprocs)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                )
                .map_err(err)?;
            for (seq, s) in samples.iter().enumerate() {
                stmt.execute(params![
                    id,
                    seq as i64,
                    s.t_s,
                    s.host_load,
                    s.cpu_user_s,
                    s.cpu_sys_s,
                    s.vol_ctx,
                    s.invol_ctx,
                    s.syscalls,
                    s.read_bytes,
                    s.write_bytes,
                    s.disk_read_bytes,
                    s.disk_write_bytes,
                    s.syscr,
                    s.syscw,
                    s.rss_kib,
                    s.minflt,
                    s.majflt,
                    s.nprocs,
                ])
                .map_err(err)?;
            }
            Ok(RunId(id))
        })
    }

    /// The solo runs of a campaign, in the order they were stored.
    pub fn solo_runs(&self, campaign: CampaignId) -> Result<Vec<(RunId, SoloRunRecord)>> {
        self.query(
            "SELECT id, job, program, cpus, repeat_index, interval_s, wall_s, time_s, timing,
                    exit_code, exit_signal, syscall_source, syscall_total, counters_json
             FROM solo_runs WHERE campaign_id = ?1 ORDER BY id",
            [campaign.0],
            "reading solo runs",
            |r| {
                Ok((
                    RunId(r.get(0)?),
                    SoloRunRecord {
                        job: r.get(1)?,
                        program: r.get(2)?,
                        cpus: cpus(r, 3)?,
                        repeat: r.get(4)?,
                        interval_s: r.get(5)?,
                        wall_s: r.get(6)?,
                        time_s: r.get(7)?,
                        timing: r.get(8)?,
                        exit_code: r.get(9)?,
                        exit_signal: r.get(10)?,
                        syscall_source: r.get(11)?,
                        syscall_total: r.get(12)?,
                        counters: json_col(r, 13)?,
                    },
                ))
            },
        )
    }

    /// The samples of one solo run, in order.
    pub fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>> {
        self.query(
            "SELECT t_s, host_load, cpu_user_s, cpu_sys_s, vol_ctx, invol_ctx, syscalls, read_bytes, write_bytes,
                    disk_read_bytes, disk_write_bytes, syscr, syscw, rss_kib, minflt, majflt, nprocs
             FROM samples WHERE run_id = ?1 ORDER BY seq",
            [run.0],
            "reading samples",
            |r| {
                Ok(SampleRecord {
                    t_s: r.get(0)?,
                    host_load: r.get(1)?,
                    cpu_user_s: r.get(2)?,
                    cpu_sys_s: r.get(3)?,
                    vol_ctx: r.get(4)?,
                    invol_ctx: r.get(5)?,
                    syscalls: r.get(6)?,
                    read_bytes: r.get(7)?,
                    write_bytes: r.get(8)?,
                    disk_read_bytes: r.get(9)?,
                    disk_write_bytes: r.get(10)?,
                    syscr: r.get(11)?,
                    syscw: r.get(12)?,
                    rss_kib: r.get(13)?,
                    minflt: r.get(14)?,
                    majflt: r.get(15)?,
                    nprocs: r.get(16)?,
                })
            },
        )
    }

    /// Stores a job's profile summary in a `profile` campaign, replacing the
    /// one stored before for the same job (a summary grows with repeats).
    pub fn put_profile(&mut self, campaign: CampaignId, profile: &ProfileRecord) -> Result<()> {
        let what = format!("profile of {}", profile.job);
        nonempty(&what, "job", &profile.job)?;
        nonempty(&what, "program", &profile.program)?;
        self.write("storing a profile", |tx| {
            Store::open_campaign(tx, campaign, CampaignKind::Profile, "profiles")?;
            tx.execute(
                "INSERT INTO profiles (campaign_id, job, program, summary_json) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (campaign_id, job) DO UPDATE SET program = excluded.program, summary_json = excluded.summary_json",
                params![
                    campaign.0,
                    profile.job,
                    profile.program,
                    serde_json::to_string(&profile.summary).expect("a profile serializes")
                ],
            )
            .map_err(|source| sql_err(tx, &format!("storing the {what}"), source))?;
            Ok(())
        })
    }

    /// The profile summaries of a campaign, by job name. A summary that
    /// does not read as a `JobProfile` is an error naming its campaign and
    /// job.
    pub fn profiles(&self, campaign: CampaignId) -> Result<Vec<ProfileRecord>> {
        let rows = self.query(
            "SELECT job, program, summary_json FROM profiles WHERE campaign_id = ?1 ORDER BY job",
            [campaign.0],
            "reading profiles",
            |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?)),
        )?;
        rows.into_iter().map(|(job, program, text)| decode_profile(campaign, job, program, &text)).collect()
    }

    /// The latest profile of a program (its program key) from a campaign
    /// that finished (`done`), so a partial profile of an interrupted
    /// campaign is never taken for a whole one.
    pub fn latest_job_profile(&self, program: &str) -> Result<Option<(CampaignId, ProfileRecord)>> {
        match self.latest_profile_row(program)? {
            Some((campaign, job, program, text)) => {
                Ok(Some((campaign, decode_profile(campaign, job, program, &text)?)))
            }
            None => Ok(None),
        }
    }


    pub(crate) fn latest_profile_row(&self, program: &str) -> Result<Option<(CampaignId, String, String, String)>> {
        let rows = self.query(
            "SELECT pr.job, pr.program, pr.summary_json, pr.campaign_id FROM profiles pr
             JOIN campaigns c ON c.id = pr.campaign_id
             WHERE pr.program = ?1 AND c.status = ?2 ORDER BY pr.campaign_id DESC, pr.id DESC LIMIT 1",
            params![program, CampaignStatus::Done.as_str()],
            "reading profiles",
            |r| Ok((CampaignId(r.get(3)?), r.get(0)?, r.get(1)?, r.get::<_, String>(2)?)),
        )?;
        Ok(rows.into_iter().next())
    }

    // ---- probe points -------------------------------------------------

    /// Stores one point of a `probe` campaign.
    pub fn add_probe_point(&mut self, campaign: CampaignId, point: &ProbePointRecord) -> Result<()> {
        let what = || {
            format!(
                "probe point of {} with {} at {} KiB, intensity {}, repeat {}",
                point.job, point.stressor, point.working_set_kib, point.intensity, point.repeat
            )
        };
        nonempty(&what(), "job", &point.job)?;
        nonempty(&what(), "stressor", &point.stressor)?;
        non_negative(&what(), "intensity", point.intensity)?;
        for (name, v) in [
            ("job_solo_s", point.job_solo_s),
            ("job_corun_s", point.job_corun_s),
            ("stressor_solo_s", point.stressor_solo_s),
            ("stressor_corun_s", point.stressor_corun_s),
        ] {
            positive(&what(), name, v)?;
        }
        check_regime(&what(), &point.regime)?;
        self.write("storing a probe point", |tx| {
            let prov = Store::open_campaign(tx, campaign, CampaignKind::Probe, "probe points")?;
            tx.execute(
                "INSERT INTO probe_points (campaign_id, provenance_id, job, stressor, working_set_kib, intensity,
                    repeat_index, job_solo_s, job_corun_s, stressor_solo_s, stressor_corun_s,
                    c2c_cpus, c2c_before_ns, c2c_after_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    campaign.0,
                    prov,
                    point.job,
                    point.stressor,
                    point.working_set_kib,
                    point.intensity,
                    point.repeat,
                    point.job_solo_s,
                    point.job_corun_s,
                    point.stressor_solo_s,
                    point.stressor_corun_s,
                    regime_cpus(&point.regime),
                    point.regime.before_ns,
                    point.regime.after_ns,
                ],
            )
            .map_err(|source| sql_err(tx, &format!("storing the {}", what()), source))?;
            Ok(())
        })
    }

    /// The probe points of a campaign, in the order they were stored.
    pub fn probe_points(&self, campaign: CampaignId) -> Result<Vec<ProbePointRecord>> {
        self.query(
            "SELECT job, stressor, working_set_kib, intensity, repeat_index, job_solo_s, job_corun_s,
                    stressor_solo_s, stressor_corun_s, c2c_cpus, c2c_before_ns, c2c_after_ns
             FROM probe_points WHERE campaign_id = ?1 ORDER BY id",
            [campaign.0],
            "reading probe points",
            |r| {
                Ok(ProbePointRecord {
                    job: r.get(0)?,
                    stressor: r.get(1)?,
                    working_set_kib: r.get(2)?,
                    intensity: r.get(3)?,
                    repeat: r.get(4)?,
                    job_solo_s: r.get(5)?,
                    job_corun_s: r.get(6)?,
                    stressor_solo_s: r.get(7)?,
                    stressor_corun_s: r.get(8)?,
                    regime: regime_from_row(r, 9)?,
                })
            },
        )
    }
}
