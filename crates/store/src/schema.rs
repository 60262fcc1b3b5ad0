//! The database schema as an ordered list of migrations.
//!
//! The schema version is SQLite's `PRAGMA user_version`: 0 for a new file,
//! `n` once the first `n` migrations are applied. Each migration runs in its
//! own `BEGIN IMMEDIATE` transaction together with the version bump, so a
//! crash or a failing statement leaves the database at the previous version
//! with none of the step's changes, and two processes opening the same file
//! at once cannot both apply a step (the second re-reads the version inside
//! its transaction and finds the work done).
//!
//! A released migration is never edited: changing the schema means appending
//! a step. `tests::every_earlier_version_migrates_with_its_rows` builds a
//! database at every earlier version, fills it, and migrates it to the latest.

use rusqlite::{Connection, TransactionBehavior};

/// One step of the schema.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The `user_version` after this step; steps are numbered 1, 2, 3, ...
    pub version: u32,
    /// What the step does, for `cosched db info` and error messages.
    pub what: &'static str,
    pub sql: &'static str,
}

/// Every migration, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "provenance, calibrations, campaigns and pair runs",
        sql: r#"
CREATE TABLE provenance (
    id              INTEGER PRIMARY KEY,
    hostname        TEXT    NOT NULL,
    cpu_model       TEXT    NOT NULL,
    cores           INTEGER NOT NULL,
    kernel_version  TEXT    NOT NULL,
    cosched_version TEXT    NOT NULL,
    git_commit      TEXT    NOT NULL,
    command         TEXT    NOT NULL,
    -- Decimal text: a seed may use all 64 bits, SQLite integers only 63.
    seed            TEXT,
    started_unix    INTEGER NOT NULL
);

CREATE TABLE calibrations (
    id            INTEGER PRIMARY KEY,
    key           TEXT    NOT NULL,
    kernel        TEXT    NOT NULL,
    params_json   TEXT    NOT NULL,
    threads       INTEGER NOT NULL,
    unit          TEXT    NOT NULL,
    work_per_run  INTEGER NOT NULL,
    rate_n        INTEGER NOT NULL,
    rate_median   REAL    NOT NULL,
    rate_min      REAL    NOT NULL,
    rate_max      REAL    NOT NULL,
    rate_ci_lo    REAL    NOT NULL,
    rate_ci_hi    REAL    NOT NULL,
    figure_name   TEXT,
    figure_json   TEXT,
    provenance_id INTEGER NOT NULL REFERENCES provenance(id)
);

CREATE TABLE campaigns (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL CHECK (kind IN ('profile', 'pairs', 'probe')),
    workload      TEXT    NOT NULL,
    params_json   TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('running', 'done', 'interrupted')),
    provenance_id INTEGER NOT NULL REFERENCES provenance(id),
    started_unix  INTEGER NOT NULL,
    finished_unix INTEGER
);

CREATE TABLE pair_runs (
    id            INTEGER PRIMARY KEY,
    campaign_id   INTEGER NOT NULL REFERENCES campaigns(id),
    provenance_id INTEGER NOT NULL REFERENCES provenance(id),
    fg_job        TEXT    NOT NULL,
    bg_job        TEXT    NOT NULL,
    repeat_index  INTEGER NOT NULL,
    fg_cpus       TEXT    NOT NULL,
    bg_cpus       TEXT    NOT NULL,
    shared_cpus   INTEGER NOT NULL CHECK (shared_cpus IN (0, 1)),
    fg_solo_s     REAL    NOT NULL,
    fg_corun_s    REAL    NOT NULL,
    bg_solo_s     REAL    NOT NULL,
    bg_corun_s    REAL    NOT NULL,
    fg_relaunches INTEGER NOT NULL,
    bg_relaunches INTEGER NOT NULL,
    fg_timing     TEXT    NOT NULL,
    bg_timing     TEXT    NOT NULL,
    -- A repeat stored twice (a resumed campaign redoing one) would count
    -- twice in the cell's median.
    UNIQUE (campaign_id, fg_job, bg_job, repeat_index)
);
"#,
    },
    Migration {
        version: 2,
        what: "solo runs with samples, profile summaries, probe points",
        sql: r#"
CREATE TABLE solo_runs (
    id             INTEGER PRIMARY KEY,
    campaign_id    INTEGER NOT NULL REFERENCES campaigns(id),
    provenance_id  INTEGER NOT NULL REFERENCES provenance(id),
    job            TEXT    NOT NULL,
    program        TEXT    NOT NULL,
    cpus           TEXT    NOT NULL,
    repeat_index   INTEGER NOT NULL,
    interval_s     REAL    NOT NULL,
    wall_s         REAL    NOT NULL,
    time_s         REAL    NOT NULL,
    timing         TEXT    NOT NULL,
    exit_code      INTEGER,
    exit_signal    INTEGER,
    syscall_source TEXT,
    syscall_total  INTEGER,
    counters_json  TEXT    NOT NULL,
    UNIQUE (campaign_id, job, repeat_index)
);

CREATE TABLE samples (
    run_id           INTEGER NOT NULL REFERENCES solo_runs(id),
    seq              INTEGER NOT NULL,
    t_s              REAL    NOT NULL,
    host_load        REAL    NOT NULL,
    cpu_user_s       REAL    NOT NULL,
    cpu_sys_s        REAL    NOT NULL,
    vol_ctx          INTEGER NOT NULL,
    invol_ctx        INTEGER NOT NULL,
    syscalls         INTEGER,
    read_bytes       INTEGER NOT NULL,
    write_bytes      INTEGER NOT NULL,
    disk_read_bytes  INTEGER NOT NULL,
    disk_write_bytes INTEGER NOT NULL,
    syscr            INTEGER NOT NULL,
    syscw            INTEGER NOT NULL,
    rss_kib          INTEGER NOT NULL,
    minflt           INTEGER NOT NULL,
    majflt           INTEGER NOT NULL,
    nprocs           INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE profiles (
    id           INTEGER PRIMARY KEY,
    campaign_id  INTEGER NOT NULL REFERENCES campaigns(id),
    job          TEXT    NOT NULL,
    program      TEXT    NOT NULL,
    summary_json TEXT    NOT NULL,
    UNIQUE (campaign_id, job)
);

CREATE TABLE probe_points (
    id                INTEGER PRIMARY KEY,
    campaign_id       INTEGER NOT NULL REFERENCES campaigns(id),
    provenance_id     INTEGER NOT NULL REFERENCES provenance(id),
    job               TEXT    NOT NULL,
    stressor          TEXT    NOT NULL,
    working_set_kib   INTEGER NOT NULL,
    intensity         REAL    NOT NULL,
    repeat_index      INTEGER NOT NULL,
    job_solo_s        REAL    NOT NULL,
    job_corun_s       REAL    NOT NULL,
    stressor_solo_s   REAL    NOT NULL,
    stressor_corun_s  REAL    NOT NULL,
    -- Derived, never stored: the times are the measurement.
    job_slowdown      REAL GENERATED ALWAYS AS (job_corun_s / job_solo_s) VIRTUAL,
    stressor_slowdown REAL GENERATED ALWAYS AS (stressor_corun_s / stressor_solo_s) VIRTUAL,
    UNIQUE (campaign_id, job, stressor, working_set_kib, intensity, repeat_index)
);
"#,
    },
    Migration {
        version: 3,
        what: "indexes for the API's lookups; slowdown columns of pair runs; latest_calibrations view",
        sql: r#"
CREATE INDEX calibrations_by_key ON calibrations (key, id);
CREATE INDEX campaigns_by_identity ON campaigns (kind, workload, params_json, id);
CREATE INDEX profiles_by_program ON profiles (program, id);

-- Derived from the paired times, so exports and ad-hoc queries show the
-- figure people look for without a second source of truth.
ALTER TABLE pair_runs ADD COLUMN fg_slowdown REAL GENERATED ALWAYS AS (fg_corun_s / fg_solo_s) VIRTUAL;
ALTER TABLE pair_runs ADD COLUMN bg_slowdown REAL GENERATED ALWAYS AS (bg_corun_s / bg_solo_s) VIRTUAL;

CREATE VIEW latest_calibrations AS
    SELECT c.* FROM calibrations c
    WHERE c.id = (SELECT max(id) FROM calibrations WHERE key = c.key);
"#,
    },
    Migration {
        version: 4,
        what: "real runs on a node: runs, their jobs, and the journal that resumes a killed runner",
        sql: r#"
-- One execution of a workload under one policy; `series` groups the runs of
-- one `cosched run` (policy and baseline, interleaved repeats).
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    series        TEXT    NOT NULL,
    workload      TEXT    NOT NULL,
    policy        TEXT    NOT NULL,
    repeat_index  INTEGER NOT NULL,
    params_json   TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
    provenance_id INTEGER NOT NULL REFERENCES provenance(id),
    started_unix  INTEGER NOT NULL,
    finished_unix INTEGER,
    UNIQUE (series, policy, repeat_index)
);
CREATE INDEX runs_by_params ON runs (params_json, id);

-- One attempt of one job in a run: inserted when it starts, completed
-- when it ends. An attempt left without an end was running when the
-- runner died; a resumed run marks it killed and starts the job again.
CREATE TABLE run_jobs (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id),
    job          TEXT    NOT NULL,
    job_index    INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    arrival_s    REAL    NOT NULL,
    start_s      REAL    NOT NULL,
    end_s        REAL,
    cpus         TEXT    NOT NULL,
    pgid         INTEGER NOT NULL,
    beside_json  TEXT    NOT NULL,
    predicted    REAL    NOT NULL,
    solo_s       REAL,
    status       TEXT CHECK (status IN ('ok', 'failed', 'signal', 'timeout', 'oom', 'killed', 'spawn-failed')),
    status_value INTEGER,
    work_s       REAL,
    slowdown     REAL,
    UNIQUE (run_id, job_index, attempt)
);

-- Every state transition of a run, in order, each written as it happened.
CREATE TABLE run_journal (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    t_s     REAL    NOT NULL,
    event   TEXT    NOT NULL CHECK (event IN ('begin', 'start', 'end', 'interrupted', 'resume', 'done', 'failed')),
    job     TEXT,
    detail  TEXT    NOT NULL
);
"#,
    },
    Migration {
        version: 5,
        what: "predictor evaluations",
        sql: r#"
-- One row per predictor per `cosched evaluate-predictors` run: its accuracy
-- on a workload's measured pairs under a fold method, and every prediction
-- behind the figures (JSON), so a figure can be re-derived and plotted.
CREATE TABLE predictor_evaluations (
    id               INTEGER PRIMARY KEY,
    provenance_id    INTEGER NOT NULL REFERENCES provenance(id),
    workload         TEXT    NOT NULL,
    predictor        TEXT    NOT NULL,
    folds            TEXT    NOT NULL,
    level            REAL    NOT NULL,
    n                INTEGER NOT NULL,
    within_5         REAL    NOT NULL,
    within_30        REAL    NOT NULL,
    mae              REAL    NOT NULL,
    pearson          REAL,
    spearman         REAL,
    severe_precision REAL,
    severe_recall    REAL,
    -- The campaigns whose measurements were used, by kind.
    sources_json     TEXT    NOT NULL,
    predictions_json TEXT    NOT NULL
);
CREATE INDEX predictor_evaluations_by_workload ON predictor_evaluations (workload, id);
"#,
    },
    Migration {
        version: 6,
        what: "node conditions at campaign start",
        sql: r#"
-- What the node was like when a campaign started or resumed: its load
-- average, and the round trip of one cache line between two CPUs (tens of
-- ns: they share a cache; hundreds: they do not). On a shared VM both move
-- between campaigns, and the measured slowdowns move with them.
CREATE TABLE campaign_conditions (
    id                INTEGER PRIMARY KEY,
    campaign_id       INTEGER NOT NULL REFERENCES campaigns(id),
    taken_unix        INTEGER NOT NULL,
    load1             REAL    NOT NULL CHECK (load1 >= 0),
    load5             REAL    NOT NULL CHECK (load5 >= 0),
    load15            REAL    NOT NULL CHECK (load15 >= 0),
    -- Both NULL on a one-CPU node.
    c2c_cpus          TEXT,
    c2c_round_trip_ns REAL    CHECK (c2c_round_trip_ns > 0)
);
CREATE INDEX campaign_conditions_by_campaign ON campaign_conditions (campaign_id, id);
"#,
    },
    Migration {
        version: 7,
        what: "node conditions at each real run's start",
        sql: r#"
-- The same reading before each run of `cosched run` and `cosched evaluate`
-- (solo passes included): a run's solo references are matched to the
-- cache regime it read, and a resumed series needs the regimes of the
-- passes an earlier invocation ran.
CREATE TABLE run_conditions (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs(id),
    taken_unix        INTEGER NOT NULL,
    load1             REAL    NOT NULL CHECK (load1 >= 0),
    load5             REAL    NOT NULL CHECK (load5 >= 0),
    load15            REAL    NOT NULL CHECK (load15 >= 0),
    -- Both NULL on a one-CPU node or when the reading failed.
    c2c_cpus          TEXT,
    c2c_round_trip_ns REAL    CHECK (c2c_round_trip_ns > 0)
);
CREATE INDEX run_conditions_by_run ON run_conditions (run_id, id);
"#,
    },
    Migration {
        version: 8,
        what: "a run's journal keeps what its policy reported",
        sql: r#"
-- A Lua policy's swaps (SIGHUP), refused swaps and fallbacks are lines of
-- its run's journal, between the job events they came before. SQLite
-- cannot change a CHECK in place, so the table is rebuilt, ids kept.
CREATE TABLE run_journal_v8 (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    t_s     REAL    NOT NULL,
    event   TEXT    NOT NULL CHECK (event IN ('begin', 'start', 'end', 'interrupted', 'resume', 'done', 'failed',
                                              'policy-swap', 'policy-swap-refused', 'policy-error', 'policy-idle-fallback')),
    job     TEXT,
    detail  TEXT    NOT NULL
);
INSERT INTO run_journal_v8 (id, run_id, t_s, event, job, detail) SELECT id, run_id, t_s, event, job, detail FROM run_journal;
DROP TABLE run_journal;
ALTER TABLE run_journal_v8 RENAME TO run_journal;
"#,
    },
    Migration {
        version: 9,
        what: "journal lines for jobs suspended, resumed and moved",
        sql: r#"
-- Policies act on running jobs: a job's `suspend`, `resume` (with `job`
-- set; the run's own `resume` has none) and `move` lines let a resumed
-- run know which jobs were suspended and leave their suspended time out
-- of their run time. SQLite cannot widen a CHECK in place: the table is
-- copied, rows and ids kept.
CREATE TABLE run_journal_v9 (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    t_s     REAL    NOT NULL,
    event   TEXT    NOT NULL CHECK (event IN ('begin', 'start', 'end', 'interrupted', 'resume', 'done', 'failed',
                                              'policy-swap', 'policy-swap-refused', 'policy-error', 'policy-idle-fallback',
                                              'suspend', 'move')),
    job     TEXT,
    detail  TEXT    NOT NULL
);
INSERT INTO run_journal_v9 (id, run_id, t_s, event, job, detail) SELECT id, run_id, t_s, event, job, detail FROM run_journal;
DROP TABLE run_journal;
ALTER TABLE run_journal_v9 RENAME TO run_journal;
"#,
    },
    Migration {
        version: 10,
        what: "the cache regime of each pair and probe repeat, a pair's sharing level, a run job's memory nodes",
        sql: r#"
-- Whether the two CPUs of a repeat shared a last-level cache moves on a
-- shared VM within a campaign, and a slowdown moves with it: the round
-- trip of one cache line between them is read just before each repeat
-- and just after it. Rows of older versions keep NULL: not read.
ALTER TABLE pair_runs ADD COLUMN c2c_cpus TEXT;
ALTER TABLE pair_runs ADD COLUMN c2c_before_ns REAL CHECK (c2c_before_ns > 0);
ALTER TABLE pair_runs ADD COLUMN c2c_after_ns REAL CHECK (c2c_after_ns > 0);
-- What the two jobs' CPUs shared as observed (model::placement::SharingLevel).
ALTER TABLE pair_runs ADD COLUMN sharing_level TEXT
    CHECK (sharing_level IN ('smt-sibling', 'same-llc', 'same-numa', 'same-socket', 'other-socket'));
ALTER TABLE probe_points ADD COLUMN c2c_cpus TEXT;
ALTER TABLE probe_points ADD COLUMN c2c_before_ns REAL CHECK (c2c_before_ns > 0);
ALTER TABLE probe_points ADD COLUMN c2c_after_ns REAL CHECK (c2c_after_ns > 0);
-- The NUMA nodes a job's memory was bound to (cpuset.mems), following its
-- CPUs; NULL for attempts recorded before memory binding.
ALTER TABLE run_jobs ADD COLUMN mems TEXT;
"#,
    },
    Migration {
        version: 11,
        what: "severe detection with the cut swept, and cross-workload's cut set on the training side",
        sql: r#"
-- A predictor that ranks severe pairs right but shrinks towards 1 misses
-- them at the fixed level: the best recall at precision >= 0.7 with the
-- cut swept over its predictions (and that cut) reads the ranking; the
-- cut chosen the same way on the training programs' own held-out
-- predictions, and what it gives on the tested pairs, reads what a
-- scheduler would get. Older rows keep NULL: not computed.
ALTER TABLE predictor_evaluations ADD COLUMN recall_at_precision REAL CHECK (recall_at_precision BETWEEN 0 AND 1);
ALTER TABLE predictor_evaluations ADD COLUMN at_precision_cut REAL;
ALTER TABLE predictor_evaluations ADD COLUMN trained_cut REAL;
ALTER TABLE predictor_evaluations ADD COLUMN trained_cut_precision REAL CHECK (trained_cut_precision BETWEEN 0 AND 1);
ALTER TABLE predictor_evaluations ADD COLUMN trained_cut_recall REAL CHECK (trained_cut_recall BETWEEN 0 AND 1);
"#,
    },
    Migration {
        version: 12,
        what: "the kernel's transparent huge page policy in each reading of the node",
        sql: r#"
-- Under the `madvise` policy a program that asks for huge pages gets them
-- only when compaction finds free 2 MiB blocks, and a memory-bound
-- program's solo time moves with its luck (NumPy's gathers: 1.76-2.18 s):
-- the policy in force (the bracketed word of
-- /sys/kernel/mm/transparent_hugepage/enabled and .../defrag) is read
-- with the load and the round trip. Older readings keep NULL: not read.
ALTER TABLE campaign_conditions ADD COLUMN thp_enabled TEXT;
ALTER TABLE campaign_conditions ADD COLUMN thp_defrag TEXT;
ALTER TABLE run_conditions ADD COLUMN thp_enabled TEXT;
ALTER TABLE run_conditions ADD COLUMN thp_defrag TEXT;
"#,
    },
    Migration {
        version: 13,
        what: "online pair samples: a running pair's settled slowdown estimate, kept as the run sees it",
        sql: r#"
-- Issue 38: while jobs run, each one's slowdown is estimated from its own
-- progress (engine::online); when the estimate of a job beside exactly one
-- other excludes the prediction, the observation is kept at once, marked
-- online (a running estimate, not a finished job's measured slowdown), in
-- the cache regime of the run. hi is NULL when the interval is open above
-- (a segment made no progress at all).
CREATE TABLE online_samples (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(id),
    t_s            REAL    NOT NULL,
    victim         TEXT    NOT NULL,
    beside         TEXT    NOT NULL,
    victim_program TEXT    NOT NULL,
    beside_program TEXT    NOT NULL,
    slowdown       REAL    NOT NULL CHECK (slowdown > 0),
    lo             REAL    NOT NULL CHECK (lo > 0),
    hi             REAL,
    segments       INTEGER NOT NULL CHECK (segments > 0),
    signal         TEXT    NOT NULL,
    predicted      REAL    NOT NULL,
    regime         TEXT
);
CREATE INDEX online_samples_by_programs ON online_samples(victim_program, beside_program);
"#,
    },
];

/// The schema version this build writes.
pub fn latest_version() -> u32 {
    MIGRATIONS.len() as u32
}

/// The database's `user_version`.
pub(crate) fn version_of(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Applies every step of `migrations` above the database's version, one
/// transaction each, and returns the version reached.
pub(crate) fn migrate(conn: &mut Connection, migrations: &[Migration]) -> rusqlite::Result<u32> {
    for m in migrations {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if version_of(&tx)? >= m.version {
            continue;
        }
        tx.execute_batch(m.sql)?;
        tx.pragma_update(None, "user_version", m.version)?;
        tx.commit()?;
    }
    version_of(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_numbered_from_one_without_gaps() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.what);
        }
    }

    #[test]
    fn a_failing_step_leaves_the_previous_version_and_none_of_its_changes() {
        let mut conn = Connection::open_in_memory().unwrap();
        let broken = [
            MIGRATIONS[0],
            Migration {
                version: 2,
                what: "half-broken",
                sql: "CREATE TABLE half (x); INSERT INTO nowhere VALUES (1);",
            },
        ];
        assert!(migrate(&mut conn, &broken).is_err());
        assert_eq!(version_of(&conn).unwrap(), 1);
        let half: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'half'", [], |r| r.get(0)).unwrap();
        assert_eq!(half, 0, "the failed step's table was rolled back");
    }

    #[test]
    fn migrating_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn, MIGRATIONS).unwrap(), latest_version());
        assert_eq!(migrate(&mut conn, MIGRATIONS).unwrap(), latest_version());
    }
}
