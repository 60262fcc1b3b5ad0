//! Records for the store's tests, with values that survive only an exact
//! round trip (fractions that are not short in binary, the largest seed).

#![allow(dead_code)]

use std::collections::BTreeMap;

use cosched_model::calibration::Calibration;
use cosched_model::placement::SharingLevel;
use cosched_model::provenance::Provenance;
use cosched_model::stats::Summary;
use cosched_store::{PairRunRecord, ProbePointRecord, RepeatRegime, SampleRecord, SoloRunRecord};

pub fn prov(started: u64) -> Provenance {
    Provenance {
        hostname: "node-7".into(),
        cpu_model: "AMD EPYC 7B13, with a comma".into(),
        cores: 2,
        kernel_version: "6.1.0-13-amd64".into(),
        cosched_version: "0.1.0".into(),
        git_commit: "c2e6d81".into(),
        started_unix: started,
        command: "cosched pairs --workload \"w.toml\"".into(),
        seed: Some(u64::MAX),
    }
}

pub fn cal(key: &str, rate: f64) -> Calibration {
    let mut params = BTreeMap::new();
    params.insert("array_mib".to_string(), "64".to_string());
    Calibration {
        key: key.into(),
        kernel: "stream".into(),
        params,
        threads: 1,
        unit: "sweeps".into(),
        work_per_run: 12,
        rate: Summary::of(&[rate, rate * 1.1, rate / 3.0]).unwrap(),
        figure: Some(("bandwidth_mb_s".into(), Summary::of(&[12_700.1, 12_900.3]).unwrap())),
        provenance: Provenance { seed: None, ..prov(1_700_000_000) },
    }
}

pub fn pair(fg: &str, bg: &str, repeat: u32) -> PairRunRecord {
    PairRunRecord {
        fg_job: fg.into(),
        bg_job: bg.into(),
        repeat,
        fg_cpus: vec![0],
        bg_cpus: vec![1, 2, 3],
        shared_cpus: false,
        fg_solo_s: 1.0 / 3.0,
        fg_corun_s: 0.5,
        bg_solo_s: 0.1,
        bg_corun_s: 0.2 + f64::from(repeat),
        fg_relaunches: 0,
        bg_relaunches: 4,
        fg_timing: "work-phase".into(),
        bg_timing: "process".into(),
        // Every shape a reading takes: both, before only, none.
        regime: match repeat % 3 {
            0 => RepeatRegime { cpus: vec![0, 1], before_ns: Some(71.5), after_ns: Some(402.25) },
            1 => RepeatRegime { cpus: vec![0, 1], before_ns: Some(55.0 + f64::from(repeat)), after_ns: None },
            _ => RepeatRegime::default(),
        },
        level: if repeat.is_multiple_of(2) { Some(SharingLevel::SameLlc) } else { None },
    }
}

pub fn solo(job: &str, repeat: u32) -> SoloRunRecord {
    SoloRunRecord {
        job: job.into(),
        program: format!("kernel {job} threads=1"),
        cpus: vec![0, 1],
        repeat,
        interval_s: 1.0,
        wall_s: 2.25,
        time_s: 2.125,
        timing: "work-phase".into(),
        exit_code: Some(0),
        exit_signal: None,
        syscall_source: Some("proc-syscr-syscw".into()),
        syscall_total: None,
        counters: [("LLC-load-misses:u".to_string(), 1.0e9 / 7.0)].into_iter().collect(),
    }
}

pub fn sample(i: u64) -> SampleRecord {
    SampleRecord {
        t_s: i as f64 * 0.1,
        host_load: 0.97,
        cpu_user_s: i as f64 * 0.09,
        cpu_sys_s: 0.001,
        vol_ctx: i,
        invol_ctx: 2 * i,
        syscalls: if i & 1 == 0 { Some(1000 * i) } else { None },
        read_bytes: 4096 * i,
        write_bytes: 0,
        disk_read_bytes: 512 * i,
        disk_write_bytes: 0,
        syscr: 3 * i,
        syscw: i,
        rss_kib: 65_536 + i,
        minflt: 16_384,
        majflt: 0,
        nprocs: 1 + (i % 3) as u32,
    }
}

pub fn probe(size_kib: u64, repeat: u32) -> ProbePointRecord {
    ProbePointRecord {
        job: "triad".into(),
        stressor: "distgen".into(),
        working_set_kib: size_kib,
        intensity: 0.75,
        repeat,
        job_solo_s: 0.3,
        job_corun_s: 0.3 + size_kib as f64 / 1e5,
        stressor_solo_s: 0.7,
        stressor_corun_s: 0.75,
        regime: if repeat == 0 { RepeatRegime { cpus: vec![0, 1], before_ns: Some(388.0), after_ns: Some(390.5) } } else { RepeatRegime::default() },
    }
}
