//! A damaged database is noticed when opened and left byte for byte as it
//! was; `integrity_check` lists the damage; `recover` copies what reads
//! into a new, sound file; a reader of an up-to-date file never takes the
//! write lock, and a writer kept out by another process says so (issue 19).

mod common;
use common::cal;

use cosched_store::{recover, Store, StoreError};

/// A database with enough calibrations that its last page is one of the
/// calibrations table's or its index's, checkpointed into the main file.
fn filled(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("c.db");
    let mut s = Store::open(&path).unwrap();
    let cals: Vec<_> = (0..600).map(|i| cal(&format!("stream array_mib={i} {}", "k".repeat(40)), 1.0 + i as f64)).collect();
    s.put_calibrations(&cals).unwrap();
    drop(s);
    path
}

#[test]
fn a_page_of_noise_at_the_end_is_refused_with_the_damage_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    assert!(n > 8192, "{n}");
    // A fixed pseudo-random page, so the test is the same every run.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for b in &mut bytes[n - 4096..] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    for open in [Store::open, Store::open_existing, Store::open_read_only] {
        match open(&path) {
            Err(e @ StoreError::Damaged { .. }) => {
                let m = e.to_string();
                assert!(m.contains("the database is damaged") && m.contains("cosched db recover"), "{m}");
            }
            other => panic!("opened a damaged database: {other:?}"),
        }
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the damaged file was left as it was");
    let out = dir.path().join("copy.db");
    let r = recover(&path, &out).unwrap();
    assert!(r.check.is_empty(), "{:?}", r.check);
    let copied: u64 = r.tables.iter().filter(|t| t.0 == "calibrations").map(|t| t.1).sum();
    assert!(copied > 0 && copied <= 600, "{r:?}");
    let s = Store::open_existing(&out).unwrap();
    assert!(s.integrity_check().unwrap().is_empty());
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "recovery only read the damaged file");
}

#[test]
fn a_sound_database_recovers_whole_and_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled(dir.path());
    let s = Store::open_read_only(&path).unwrap();
    assert!(s.integrity_check().unwrap().is_empty());
    let r = recover(&path, &dir.path().join("copy.db")).unwrap();
    assert!(r.whole && r.check.is_empty());
    assert_eq!(r.tables.iter().find(|t| t.0 == "calibrations").map(|t| (t.1, t.2)), Some((600, 0)));
    let e = recover(&path, &dir.path().join("copy.db")).unwrap_err().to_string();
    assert!(e.contains("the file exists"), "{e}");
}

#[test]
fn readers_do_not_wait_for_a_writer_and_a_blocked_writer_says_another_process_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled(dir.path());
    // Another process's open write transaction, as a long write holds it.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let r = Store::open_read_only(&path).unwrap();
    assert_eq!(r.calibrations().unwrap().len(), 600);
    let mut w = Store::open(&path).unwrap();
    match w.put_calibrations(&[cal("new", 1.0)]) {
        Err(e @ StoreError::Busy { .. }) => {
            let m = e.to_string();
            assert!(m.contains("another process holds the database") && m.contains("waited 10 s"), "{m}");
        }
        other => panic!("expected busy, got {other:?}"),
    }
}
