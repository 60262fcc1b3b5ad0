//! One knowledge base across workloads: a program measured under one
//! workload file is the same program under another, and a cross-workload
//! evaluation predicts one workload's pairs from a fit on another's,
//! without ever fitting on a pair of a tested program.

mod common;
use std::path::Path;
use std::process::{Command, Output};

fn cosched(args: &[&str], db: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosched"))
        .args(args)
        .arg("--db")
        .arg(db)
        .env_remove("COSCHED_DB")
        // Measuring verbs take the node lock: a private one per command.
        .env("COSCHED_RUN_LOCK", common::private_lock())
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_program_in_two_workload_files_is_one_program_and_cross_workload_never_trains_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.db");
    // `nap` is the same command under two names in two files; `short` and
    // `long` are each in one file only.
    let a = dir.path().join("a.toml");
    std::fs::write(&a, "name = \"a\"\n[[jobs]]\nname = \"nap\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"short\"\ncommand = \"sleep 0.02\"\n").unwrap();
    let b = dir.path().join("b.toml");
    std::fs::write(&b, "name = \"b\"\n[[jobs]]\nname = \"doze\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"long\"\ncommand = \"sleep 0.08\"\n").unwrap();
    for w in [&a, &b] {
        ok(&cosched(&["pairs", "--repeats", "2", "--min-repeats", "2", "--svg", "/dev/null", "--workload", w.to_str().unwrap()], &db));
    }
    let out = ok(&cosched(
        // Every regime: by default the node's current one is taken and the
        // other's repeats left out, and the regime can switch between the
        // two campaigns above, which would leave `measured` nothing to fit.
        &[
            "evaluate-predictors", "--workload", b.to_str().unwrap(), "--train", a.to_str().unwrap(), "--predictor", "measured",
            "--regime", "any", "--no-store", "--json",
        ],
        &db,
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows[0]["folds"], "cross-workload", "{v}");
    // The naive baselines follow the predictor asked for, then the repeat
    // halves' floor.
    let names: Vec<&str> = rows.iter().map(|r| r["predictor"].as_str().unwrap_or("")).collect();
    assert_eq!(&names[..3], ["measured", "median", "blind"], "{v}");
    assert_eq!(rows[3]["folds"], "repeat-halves");
    // b has two programs: four ordered pairs, each predicted once.
    let preds = rows[0]["predictions"].as_array().unwrap();
    assert_eq!(preds.len(), 4);
    // Both files' `sleep 0.05` are one identity: the same key as victim name.
    let victims: std::collections::BTreeSet<&str> = preds.iter().map(|p| p["victim"].as_str().unwrap()).collect();
    assert_eq!(victims.len(), 2);
    assert!(victims.iter().all(|k| k.starts_with("command sha256:") && k.contains(" sleep ")), "{victims:?}");
    assert!(victims.iter().any(|k| k.contains("sleep 0.05 cores=1")), "{victims:?}");

    // Training on the workload under test is refused, exit code 2.
    let out = cosched(&["evaluate-predictors", "--workload", b.to_str().unwrap(), "--train", b.to_str().unwrap(), "--no-store"], &db);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn characterize_measures_each_new_program_once_alone_and_nothing_it_knows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let w = dir.path().join("w.toml");
    // Two copies of one program (twins) and another program.
    std::fs::write(&w, "[[jobs]]\nname = \"nap\"\ncommand = \"sleep 0.1\"\ncount = 2\n[[jobs]]\nname = \"other\"\ncommand = \"sleep 0.05\"\n").unwrap();
    let first = ok(&cosched(&["characterize", "--budget", "5", "--json", "--workload", w.to_str().unwrap()], &db));
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let progs = v["programs"].as_array().unwrap();
    assert_eq!(progs.len(), 2, "twins are one program: {progs:?}");
    assert!(progs.iter().all(|p| p["action"] == "profile + probe (1 levels)"), "{progs:?}");
    assert_eq!(v["ladder"].as_array().unwrap().len(), 1, "a budget of 5 buys one probe level");
    assert!(v["median_ratio"].as_f64().unwrap() > 1.0);
    // Never co-run with each other: no pairs campaign exists.
    let store = cosched_store::Store::open_existing(&db).unwrap();
    assert!(store.campaigns().unwrap().iter().all(|c| c.kind != cosched_store::CampaignKind::Pairs));
    drop(store);
    // A second call knows both and measures nothing.
    let again: serde_json::Value =
        serde_json::from_str(&ok(&cosched(&["characterize", "--json", "--workload", w.to_str().unwrap()], &db))).unwrap();
    assert!(again["programs"].as_array().unwrap().iter().all(|p| p["action"] == "known"));
    assert!(again["median_ratio"].is_null());
    // A budget of 18 buys the pipe stressor too: of what it buys only the
    // pipe is measured now (a known probe curve is not extended), and the
    // knowledge base reads it beside the DistGen curve.
    let pipe: serde_json::Value = serde_json::from_str(&ok(&cosched(
        &["characterize", "--budget", "18", "--json", "--workload", w.to_str().unwrap()],
        &db,
    )))
    .unwrap();
    assert_eq!(pipe["ladder"].as_array().unwrap().last().unwrap(), "pipe", "{pipe}");
    assert!(pipe["programs"].as_array().unwrap().iter().all(|p| p["action"] == "pipe"), "{pipe}");
    let store = cosched_store::Store::open_existing(&db).unwrap();
    let kb = cosched_learn::knowledge::knowledge_base(&store, &Default::default()).unwrap();
    for c in kb.set.programs.values() {
        assert_eq!(c.probe.len(), 1, "the pipe point is not a DistGen level: {c:?}");
        assert!(c.stressors["pipe"].job_slowdown.median > 0.0, "{c:?}");
    }
    drop(store);
    // A budget that buys no probe level is bad input.
    let out = cosched(&["characterize", "--budget", "2", "--workload", w.to_str().unwrap()], &db);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn predict_uses_pairs_measured_under_another_workload_for_the_same_programs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.db");
    let a = dir.path().join("a.toml");
    std::fs::write(&a, "name = \"a\"\n[[jobs]]\nname = \"nap\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"short\"\ncommand = \"sleep 0.02\"\n").unwrap();
    ok(&cosched(&["pairs", "--repeats", "1", "--min-repeats", "1", "--svg", "/dev/null", "--workload", a.to_str().unwrap()], &db));
    // The same two programs under other names, never co-run as `c`.
    let c = dir.path().join("c.toml");
    std::fs::write(&c, "name = \"c\"\n[[jobs]]\nname = \"again\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"brief\"\ncommand = \"sleep 0.02\"\n").unwrap();
    ok(&cosched(&["characterize", "--budget", "5", "--workload", c.to_str().unwrap()], &db));
    let out = ok(&cosched(&["predict", "--predictor", "measured", "--json", "--workload", c.to_str().unwrap(), "again", "brief"], &db));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["pairs"].as_u64().unwrap() >= 4, "a's four ordered pairs joined under c's names: {v}");
    assert_eq!(v["jobs"].as_array().unwrap().len(), 2);
    // Asked for either cache regime, one of which a's campaign did not
    // begin in (the host's, read at its start): its pairs are still used
    // rather than none, as for a pair with no repeat in the regime.
    for regime in ["shared", "apart"] {
        let out = ok(&cosched(
            &["predict", "--predictor", "measured", "--json", "--regime", regime, "--workload", c.to_str().unwrap(), "again", "brief"],
            &db,
        ));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v["pairs"].as_u64().unwrap() >= 4, "--regime {regime}: {v}");
    }
    // Narrowed to campaigns of another host, or from a later date, the
    // knowledge base holds nothing of a's, and c has no pairs of its own.
    for scope in [["--kb-node", "no-such-host"], ["--kb-since", "2999-01-01"]] {
        let mut args = vec!["predict", "--predictor", "measured", "--regime", "any", "--workload", c.to_str().unwrap(), "again", "brief"];
        args.extend(scope);
        let out = cosched(&args, &db);
        assert!(!out.status.success(), "{scope:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("no pairs campaign"), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let today = &cosched_store::format_unix_utc(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 3600)[..10];
    ok(&cosched(&["predict", "--predictor", "measured", "--kb-since", today, "--workload", c.to_str().unwrap(), "again", "brief"], &db));
    // A date that is not one is bad input.
    let out = cosched(&["predict", "--predictor", "measured", "--kb-since", "last week", "--workload", c.to_str().unwrap(), "again", "brief"], &db);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kb-since last week"));
}

#[test]
fn cross_workload_tests_the_programs_the_file_runs_now_from_their_newest_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.db");
    let a = dir.path().join("a.toml");
    std::fs::write(&a, "name = \"a\"\n[[jobs]]\nname = \"nap\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"short\"\ncommand = \"sleep 0.02\"\n").unwrap();
    let b = dir.path().join("b.toml");
    let pairs = |w: &Path| ok(&cosched(&["pairs", "--repeats", "2", "--min-repeats", "2", "--svg", "/dev/null", "--workload", w.to_str().unwrap()], &db));
    pairs(&a);
    std::fs::write(&b, "name = \"b\"\n[[jobs]]\nname = \"doze\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"long\"\ncommand = \"sleep 0.08\"\n").unwrap();
    pairs(&b);
    // `long` now runs another command: a new program. `doze` beside itself
    // is measured again.
    std::fs::write(&b, "name = \"b\"\n[[jobs]]\nname = \"doze\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"long\"\ncommand = \"sleep 0.07\"\n").unwrap();
    pairs(&b);
    let out = ok(&cosched(
        &[
            "evaluate-predictors", "--workload", b.to_str().unwrap(), "--train", a.to_str().unwrap(), "--predictor", "measured",
            "--regime", "any", "--no-store", "--json",
        ],
        &db,
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let preds = v["rows"][0]["predictions"].as_array().unwrap();
    let victims: std::collections::BTreeSet<&str> = preds.iter().map(|p| p["victim"].as_str().unwrap()).collect();
    // Two programs as the file stands: four ordered pairs; `sleep 0.08`,
    // which the first campaign of b measured, is on neither side.
    assert_eq!(preds.len(), 4, "{victims:?}");
    assert!(victims.iter().any(|k| k.contains("sleep 0.07 cores=1")), "{victims:?}");
    assert!(!out.contains("sleep 0.08"), "a program the file no longer runs was tested: {victims:?}");
    // Of b only the newest campaign's repeats (3 unordered pairs x 2
    // repeats x 2 sides), and a's of `sleep 0.05` beside itself (2 x 2):
    // the tested programs' pairs from whichever workload measured them.
    assert_eq!(v["counts"]["repeats"], 16, "{}", v["counts"]);
}

#[test]
fn skip_known_co_runs_only_the_pairs_no_campaign_measured_and_cross_workload_reads_both() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.db");
    let a = dir.path().join("a.toml");
    std::fs::write(&a, "name = \"a\"\n[[jobs]]\nname = \"nap\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"short\"\ncommand = \"sleep 0.02\"\n").unwrap();
    ok(&cosched(&["pairs", "--repeats", "2", "--min-repeats", "2", "--svg", "/dev/null", "--workload", a.to_str().unwrap()], &db));
    // `big` holds a's two programs under other names and a new one.
    let big = dir.path().join("big.toml");
    std::fs::write(
        &big,
        "name = \"big\"\n[[jobs]]\nname = \"n\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"s\"\ncommand = \"sleep 0.02\"\n[[jobs]]\nname = \"new\"\ncommand = \"sleep 0.03\"\n",
    )
    .unwrap();
    let pairs = |min: &str| {
        let out = cosched(&["pairs", "--repeats", min, "--min-repeats", min, "--skip-known", "--svg", "/dev/null", "--workload", big.to_str().unwrap()], &db);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = ok(&out);
        assert!(!err.contains("3 of 6") || stdout.contains("3 co-run(s) known from other campaigns"), "{stdout}");
        err
    };
    let err = pairs("2");
    assert!(err.contains("3 of 6 co-runs are in the knowledge base"), "{err}");
    let store = cosched_store::Store::open_existing(&db).unwrap();
    let newest = store.campaigns().unwrap().into_iter().rfind(|c| c.kind == cosched_store::CampaignKind::Pairs).unwrap();
    let measured: std::collections::BTreeSet<(String, String)> =
        store.pair_runs(newest.id).unwrap().into_iter().map(|r| (r.fg_job, r.bg_job)).collect();
    let want: std::collections::BTreeSet<(String, String)> =
        [("n", "new"), ("s", "new"), ("new", "new")].iter().map(|(x, y)| (x.to_string(), y.to_string())).collect();
    assert_eq!(measured, want, "only the co-runs with the new program");
    drop(store);
    // Asking for more repeats than the store holds measures them again.
    let err = pairs("3");
    assert!(err.contains("0 of 6 co-runs"), "{err}");
    // Tested as a whole, `big` is its three programs' nine ordered pairs,
    // from whichever campaign measured them.
    let c = dir.path().join("c.toml");
    std::fs::write(&c, "name = \"c\"\n[[jobs]]\nname = \"other\"\ncommand = \"sleep 0.04\"\n").unwrap();
    ok(&cosched(&["pairs", "--repeats", "1", "--min-repeats", "1", "--svg", "/dev/null", "--workload", c.to_str().unwrap()], &db));
    let out = ok(&cosched(
        &[
            "evaluate-predictors", "--workload", big.to_str().unwrap(), "--train", c.to_str().unwrap(), "--predictor", "measured",
            "--regime", "any", "--no-store", "--json",
        ],
        &db,
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"][0]["predictions"].as_array().unwrap().len(), 9, "{v}");
}

#[test]
fn settle_measures_again_only_the_known_co_runs_whose_interval_holds_the_level() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.db");
    let w = dir.path().join("a.toml");
    std::fs::write(&w, "name = \"a\"\n[[jobs]]\nname = \"nap\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"short\"\ncommand = \"sleep 0.02\"\n").unwrap();
    let pairs = |extra: &[&str]| {
        let mut args = vec!["pairs", "--repeats", "2", "--min-repeats", "2", "--skip-known", "--svg", "/dev/null", "--workload", w.to_str().unwrap()];
        args.extend(extra);
        let out = cosched(&args, &db);
        ok(&out);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    pairs(&[]);
    // Every co-run measured 1.00 (sleeps' real slowdowns are noise, and two
    // repeats of it may straddle 1.3), but nap beside short 1.25 and 1.35:
    // its interval, and only its, holds 1.3.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE pair_runs SET fg_corun_s = fg_solo_s, bg_corun_s = bg_solo_s", []).unwrap();
    for (repeat, s) in [(0, 1.25), (1, 1.35)] {
        let n = conn
            .execute(
                "UPDATE pair_runs SET fg_corun_s = fg_solo_s * ?2 WHERE fg_job = 'nap' AND bg_job = 'short' AND repeat_index = ?1",
                rusqlite::params![repeat, s],
            )
            .unwrap()
            + conn
                .execute(
                    "UPDATE pair_runs SET bg_corun_s = bg_solo_s * ?2 WHERE bg_job = 'nap' AND fg_job = 'short' AND repeat_index = ?1",
                    rusqlite::params![repeat, s],
                )
                .unwrap();
        assert_eq!(n, 1, "one repeat {repeat} of the pair");
    }
    drop(conn);
    let err = pairs(&[]);
    assert!(err.contains("3 of 3 co-runs are in the knowledge base"), "without --settle all are known: {err}");
    let err = pairs(&["--settle", "1.3"]);
    assert!(err.contains("2 of 3 co-runs are in the knowledge base") && err.contains("(1 more whose interval holds 1.3"), "{err}");
    let store = cosched_store::Store::open_existing(&db).unwrap();
    let newest = store.campaigns().unwrap().into_iter().rfind(|c| c.kind == cosched_store::CampaignKind::Pairs).unwrap();
    let measured: std::collections::BTreeSet<(String, String)> =
        store.pair_runs(newest.id).unwrap().into_iter().map(|r| (r.fg_job, r.bg_job)).collect();
    assert_eq!(measured.len(), 1, "only the unsettled co-run: {measured:?}");
    assert!(measured.iter().all(|(a, b)| a != b), "{measured:?}");
    drop(store);
    // A level that is no slowdown is bad input.
    let out = cosched(&["pairs", "--settle", "-1", "--workload", w.to_str().unwrap()], &db);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_workload_grown_with_skip_known_trains_on_its_older_campaigns_pairs_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.db");
    let w = dir.path().join("a.toml");
    let two = "name = \"a\"\n[[jobs]]\nname = \"nap\"\ncommand = \"sleep 0.05\"\n[[jobs]]\nname = \"short\"\ncommand = \"sleep 0.02\"\n";
    std::fs::write(&w, two).unwrap();
    let pairs = || ok(&cosched(&["pairs", "--repeats", "2", "--min-repeats", "2", "--skip-known", "--svg", "/dev/null", "--workload", w.to_str().unwrap()], &db));
    pairs();
    // One more program: its three co-runs are the newest campaign's only.
    std::fs::write(&w, format!("{two}[[jobs]]\nname = \"new\"\ncommand = \"sleep 0.03\"\n")).unwrap();
    pairs();
    // Characterized under another file: `a` never profiled or probed them,
    // and takes its programs' measurements from there.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, std::fs::read_to_string(&w).unwrap().replacen("name = \"a\"", "name = \"other\"", 1)).unwrap();
    ok(&cosched(&["characterize", "--budget", "5", "--workload", other.to_str().unwrap()], &db));
    let out = ok(&cosched(&["evaluate-predictors", "--workload", w.to_str().unwrap(), "--predictor", "measured", "--regime", "any", "--no-store", "--json"], &db));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["counts"]["ordered_pairs"], 9, "three programs, every ordered pair: {}", v["counts"]);
    assert_eq!(v["counts"]["sources"]["older_pairs"], 4, "nap and short's four from the first campaign: {}", v["counts"]);
}
