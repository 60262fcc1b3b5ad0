//! Exports give back, column for column, what was stored.

mod common;

use common::*;
use cosched_store::{CampaignKind, Store, StoreError, TABLES};
use serde_json::Value;

fn filled() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let mut s = Store::open(&d.path().join("x.db")).unwrap();
    s.put_calibrations(&[cal("stream/t1", 1.0), cal("stream/t1", 2.0)]).unwrap();
    let pairs = s.begin_campaign(CampaignKind::Pairs, "mixed.toml", r#"{"repeats":3}"#, &prov(10)).unwrap();
    for r in 0..3 {
        s.add_pair_run(pairs, &pair("stream", "compute, \"quoted\"", r)).unwrap();
    }
    let profile = s.begin_campaign(CampaignKind::Profile, "mixed.toml", "{}", &prov(11)).unwrap();
    s.add_solo_run(profile, &solo("triad", 0), &(0..4).map(sample).collect::<Vec<_>>()).unwrap();
    (d, s)
}

fn json_table(s: &Store, t: &str) -> Vec<Value> {
    let mut out = Vec::new();
    s.export_json(t, &mut out).unwrap();
    match serde_json::from_slice(&out).unwrap() {
        Value::Array(rows) => rows,
        other => panic!("not an array: {other}"),
    }
}

#[test]
fn json_export_gives_back_the_stored_values() {
    let (_d, s) = filled();
    let runs = json_table(&s, "pair_runs");
    assert_eq!(runs.len(), 3);
    let want = pair("stream", "compute, \"quoted\"", 2);
    let r = &runs[2];
    assert_eq!(r["bg_job"], want.bg_job.as_str());
    assert_eq!(r["repeat_index"], 2);
    assert_eq!(r["fg_solo_s"].as_f64().unwrap(), want.fg_solo_s, "a third survives exactly");
    assert_eq!(r["bg_corun_s"].as_f64().unwrap(), want.bg_corun_s);
    assert_eq!(r["bg_cpus"], "1-3");
    assert_eq!(r["shared_cpus"], 0);
    assert_eq!(r["campaign_id"], 1);
    assert_eq!(r["fg_slowdown"].as_f64().unwrap(), want.fg_slowdown(), "derived columns are exported");

    let samples = json_table(&s, "samples");
    assert_eq!(samples.len(), 4);
    assert_eq!(samples[1]["syscalls"], Value::Null);
    assert_eq!(samples[2]["syscalls"], 2000);
    assert_eq!(samples[3]["t_s"].as_f64().unwrap(), sample(3).t_s);

    let prov_rows = json_table(&s, "provenance");
    assert_eq!(prov_rows[0]["cpu_model"], "AMD EPYC 7B13, with a comma");
    assert_eq!(prov_rows.iter().filter(|p| p["seed"] == u64::MAX.to_string().as_str()).count(), 2);

    let cals = json_table(&s, "calibrations");
    assert_eq!(cals.len(), 2, "history is exported too");
    assert_eq!(cals[1]["rate_median"].as_f64().unwrap(), cal("stream/t1", 2.0).rate.median);
}

#[test]
fn json_export_of_everything_has_every_table() {
    let (_d, s) = filled();
    let mut out = Vec::new();
    s.export_json_all(&mut out).unwrap();
    let all: serde_json::Map<String, Value> = serde_json::from_slice(&out).unwrap();
    let mut names: Vec<&str> = all.keys().map(String::as_str).collect();
    let mut want = TABLES.to_vec();
    names.sort();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(all["campaigns"].as_array().unwrap().len(), 2);
    assert_eq!(all["probe_points"].as_array().unwrap().len(), 0);
}

#[test]
fn csv_export_has_a_header_and_one_record_per_row() {
    let (_d, s) = filled();
    let mut out = Vec::new();
    assert_eq!(s.export_csv("pair_runs", &mut out).unwrap(), 3);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("id,campaign_id,provenance_id,fg_job,bg_job,repeat_index,"), "{}", lines[0]);
    assert!(lines[1].contains(",stream,\"compute, \"\"quoted\"\"\",0,0,1-3,0,"), "{}", lines[1]);

    let mut out = Vec::new();
    assert_eq!(s.export_csv("probe_points", &mut out).unwrap(), 0);
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 1, "an empty table still has its header");
}

#[test]
fn an_unknown_table_is_refused_with_the_list() {
    let (_d, s) = filled();
    let e = s.export_csv("pairs; DROP TABLE samples", &mut Vec::new()).unwrap_err();
    assert!(matches!(e, StoreError::NoSuchTable(_)), "{e}");
    assert!(e.to_string().contains("pair_runs, solo_runs"), "{e}");
    assert!(cosched_store::check_table("samples").is_ok());
    assert_eq!(s.table_counts().unwrap().iter().find(|t| t.table == "samples").unwrap().rows, 4);
}
