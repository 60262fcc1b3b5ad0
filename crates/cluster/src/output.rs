//! Files other tools read: Batsim's `jobs.csv` (what evalys loads) and the
//! simulated schedule as SWF.

use std::fmt::Write;

use crate::engine::{Config, Schedule};
use crate::swf::{format_record, Record};
use crate::workload::ClusterJob;

/// Batsim's job output columns, in its order.
pub const JOBS_CSV_HEAD: &str = "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata";

/// Resources are cores, numbered `node x cores + core`, so jobs sharing a
/// node hold disjoint resources in evalys' Gantt charts; `allocated_resources`
/// is Batsim's interval set (`0-3 8`). `profile` is the job's program,
/// `metadata` its solo time and co-location slowdown (`solo=...;slowdown=...`);
/// energy is not simulated (-1, as Batsim writes without its energy plugin).
pub fn jobs_csv(jobs: &[ClusterJob], programs: &[String], s: &Schedule, cfg: &Config, workload: &str) -> String {
    let mut out = String::with_capacity(jobs.len() * 160);
    out.push_str(JOBS_CSV_HEAD);
    out.push('\n');
    let workload = csv_field(workload);
    for (i, j) in jobs.iter().enumerate() {
        let a = &s.alloc[i];
        let mut ids: Vec<u64> = Vec::new();
        for n in a.nodes.iter() {
            let base = n as u64 * cfg.cores as u64;
            if a.cores.is_empty() {
                ids.extend((0..cfg.cores as u64).map(|c| base + c));
            } else {
                ids.extend(a.cores.iter().map(|&c| base + c as u64));
            }
        }
        let exec = s.finish[i] - s.start[i];
        let turnaround = s.finish[i] - j.submit;
        let _ = writeln!(
            out,
            "{},{workload},{},{},{},{},1,COMPLETED_SUCCESSFULLY,{},{},{},{},{},{},{},-1,solo={};slowdown={}",
            j.record.job,
            csv_field(&programs[j.program]),
            j.submit,
            ids.len(),
            j.walltime,
            s.start[i],
            exec,
            s.finish[i],
            s.start[i] - j.submit,
            turnaround,
            if exec > 0.0 { turnaround / exec } else { 1.0 },
            interval_set(&ids),
            j.run,
            exec / j.run,
        );
    }
    out
}

/// Sorted ids as Batsim's interval set: `0-3 5 7-8`.
pub fn interval_set(ids: &[u64]) -> String {
    let ids: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
    cosched_model::topology::format_ranges(&ids, " ")
}

/// The schedule as SWF: each record as the trace gave it, with the submit
/// time, wait and run time of the simulation (seconds from the first
/// submission, as jobs.csv counts them) and status 1; the header names the
/// cluster and what produced it.
pub fn swf(jobs: &[ClusterJob], s: &Schedule, cfg: &Config, note: &str) -> String {
    let mut out = String::with_capacity(jobs.len() * 80);
    let _ = writeln!(out, "; Version: 2.2");
    let _ = writeln!(out, "; Note: {note}");
    let _ = writeln!(out, "; MaxJobs: {}", jobs.len());
    let _ = writeln!(out, "; MaxRecords: {}", jobs.len());
    let _ = writeln!(out, "; MaxNodes: {}", cfg.nodes);
    let _ = writeln!(out, "; MaxProcs: {}", cfg.nodes as u64 * cfg.cores as u64);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| jobs[a].submit.total_cmp(&jobs[b].submit).then(jobs[a].record.job.cmp(&jobs[b].record.job)));
    for i in order {
        let j = &jobs[i];
        let r = Record {
            submit: j.submit,
            wait: s.start[i] - j.submit,
            run: s.finish[i] - s.start[i],
            allocated_procs: j.procs as i64,
            status: 1,
            ..j.record.clone()
        };
        out.push_str(&format_record(&r));
        out.push('\n');
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Alloc, Nodes, Scheduler};
    use crate::swf::parse;
    use crate::workload::{jobs, Keep, Mapping};

    #[test]
    fn interval_sets_merge_runs() {
        assert_eq!(interval_set(&[3, 0, 1, 2, 5, 7, 8]), "0-3 5 7-8");
        assert_eq!(interval_set(&[4]), "4");
        assert_eq!(interval_set(&[]), "");
    }

    #[test]
    fn jobs_csv_and_swf_carry_the_schedule() {
        let t = parse("7 100 -1 10 1 -1 -1 1 20 -1 1 3 1 2 -1 -1 -1 -1\n8 100 -1 10 4 -1 -1 4 -1 -1 1 3 1 2 -1 -1 -1 -1\n", "t").unwrap();
        let (j, _) = jobs(&t, "t", Keep::default(), 8, Mapping::Random, 1, 0).unwrap();
        let cfg = Config::new(2, 4, Scheduler::Easy);
        let s = Schedule {
            start: vec![0.0, 5.0],
            finish: vec![12.0, 15.0],
            alloc: vec![Alloc { nodes: Nodes::one(1), cores: vec![2] }, Alloc { nodes: Nodes::one(0), cores: vec![] }],
            shared: vec![true, false],
        };
        let csv = jobs_csv(&j, &["a,b".to_string()], &s, &cfg, "w");
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], JOBS_CSV_HEAD);
        assert_eq!(lines[1], "7,w,\"a,b\",0,1,20,1,COMPLETED_SUCCESSFULLY,0,12,12,0,12,1,6,-1,solo=10;slowdown=1.2");
        assert_eq!(lines[2], "8,w,\"a,b\",0,4,10,1,COMPLETED_SUCCESSFULLY,5,10,15,5,15,1.5,0-3,-1,solo=10;slowdown=1");
        let out = parse(&swf(&j, &s, &cfg, "test"), "out").unwrap();
        assert_eq!(out.header.max_procs, Some(8));
        assert_eq!((out.records[0].submit, out.records[0].wait, out.records[0].run), (0.0, 0.0, 12.0));
        assert_eq!((out.records[1].job, out.records[1].wait, out.records[1].run, out.records[1].allocated_procs), (8, 5.0, 10.0, 4));
    }
}
