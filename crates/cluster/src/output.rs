//! Files other tools read: Batsim's `jobs.csv` (what evalys loads) and the
//! simulated schedule as SWF, both from the schedule's one trace
//! ([`Schedule::trace`](crate::engine::Schedule::trace)) so they agree job
//! by job: the same processor count (the cores a job held) and, in SWF,
//! whole seconds. The jobs give what a trace does not carry: the log's
//! record, its submission and requested time.

use std::fmt::Write;

use cosched_model::metrics::MetricsError;
use cosched_model::trace::{Trace, TraceJob};

use crate::engine::Config;
use crate::swf::{format_record, Record};
use crate::trace::times;
use crate::workload::ClusterJob;

/// Batsim's job output columns, in its order: the one list `model::batsim`
/// writes real runs with.
pub use cosched_model::batsim::JOBS_CSV_HEAD;

/// The cores a job held: every core of its nodes when it held whole nodes,
/// else its own cores on its one node.
pub fn held_cores(j: &TraceJob, cfg: &Config) -> u64 {
    if j.cpus.is_empty() {
        j.node_runs().iter().map(|&(a, e)| (e - a) as u64).sum::<u64>() * cfg.cores as u64
    } else {
        j.cpus.len() as u64
    }
}

/// The cores a job held as Batsim's interval set (`0-3 8`), cores numbered
/// `node x cores + core`: built from the node runs, so a job over thousands
/// of nodes costs its runs, not its cores.
pub fn allocated_resources(j: &TraceJob, cfg: &Config) -> String {
    let c = cfg.cores as u64;
    let mut out = String::new();
    let mut put = |lo: u64, hi: u64| {
        if !out.is_empty() {
            out.push(' ');
        }
        if lo == hi {
            let _ = write!(out, "{lo}");
        } else {
            let _ = write!(out, "{lo}-{hi}");
        }
    };
    if j.cpus.is_empty() {
        for (first, end) in j.node_runs() {
            put(first as u64 * c, end as u64 * c - 1);
        }
    } else {
        let base = j.node as u64 * c;
        let mut cores: Vec<u64> = j.cpus.iter().map(|&k| base + k as u64).collect();
        cores.sort_unstable();
        let mut i = 0;
        while i < cores.len() {
            let mut j = i;
            while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
                j += 1;
            }
            put(cores[i], cores[j]);
            i = j + 1;
        }
    }
    out
}

/// Resources are cores, numbered `node x cores + core`, so jobs sharing a
/// node hold disjoint resources in evalys' Gantt charts; `allocated_resources`
/// is Batsim's interval set (`0-3 8`) and `requested_number_of_resources`
/// its size, the cores the job held ([`held_cores`]), as the SWF output's
/// allocated processors. `profile` is the job's program (the trace's), `metadata` its solo
/// time and co-location slowdown (`solo=...;slowdown=...`); energy is not
/// simulated (-1, as Batsim writes without its energy plugin). Written
/// through the `csv` crate, as every CSV cosched writes, so a program or
/// workload name with a comma or a quote is quoted one way.
pub fn jobs_csv(jobs: &[ClusterJob], t: &Trace, cfg: &Config, workload: &str) -> Result<String, MetricsError> {
    let tm = times(t, jobs.len())?;
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::with_capacity(jobs.len() * 160));
    let io = "writing CSV to memory cannot fail";
    w.write_record(JOBS_CSV_HEAD).expect(io);
    for (i, j) in jobs.iter().enumerate() {
        let (a, s) = (t.job(i).expect("the schedule's trace describes every job"), &tm[i]);
        let exec = s.finish - s.start;
        let turnaround = s.finish - j.submit;
        let row = [
            j.record.job.to_string(),
            workload.to_string(),
            a.program.clone(),
            j.submit.to_string(),
            held_cores(a, cfg).to_string(),
            j.walltime.to_string(),
            "1".into(),
            "COMPLETED_SUCCESSFULLY".into(),
            s.start.to_string(),
            exec.to_string(),
            s.finish.to_string(),
            (s.start - j.submit).to_string(),
            turnaround.to_string(),
            (if exec > 0.0 { turnaround / exec } else { 1.0 }).to_string(),
            allocated_resources(a, cfg),
            "-1".into(),
            format!("solo={};slowdown={}", j.run, exec / j.run),
        ];
        w.write_record(&row).expect(io);
    }
    Ok(String::from_utf8(w.into_inner().expect(io)).expect("the fields are UTF-8"))
}

/// Whole seconds for SWF, whose time fields are integers: half a second
/// rounds away from zero.
fn whole(t: f64) -> f64 {
    t.round()
}

/// The schedule as SWF: each record as the trace gave it, with the submit
/// time, wait and run time of the simulation (seconds from the first
/// submission, as jobs.csv counts them), the cores the job held as its
/// allocated processors ([`held_cores`], the trace's request stays in
/// field 8) and status 1; the header names the cluster and what produced
/// it. Times are whole seconds: submit, start and finish are each rounded
/// to the nearest second (half away from zero) and the wait and run time
/// are their differences, so submit + wait + run is the rounded finish and
/// a run of at least a second stays at least a second.
pub fn swf(jobs: &[ClusterJob], t: &Trace, cfg: &Config, note: &str) -> Result<String, MetricsError> {
    let tm = times(t, jobs.len())?;
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
        let (submit, start, finish) = (whole(j.submit), whole(tm[i].start), whole(tm[i].finish));
        let r = Record {
            submit,
            wait: start - submit,
            run: finish - start,
            allocated_procs: held_cores(t.job(i).expect("the schedule's trace describes every job"), cfg) as i64,
            status: 1,
            ..j.record.clone()
        };
        out.push_str(&format_record(&r));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Alloc, Nodes, Schedule, Scheduler};
    use crate::swf::parse;
    use crate::workload::{jobs, Keep, Mapping};

    #[test]
    fn allocated_resources_are_interval_sets_of_cores() {
        let cfg = Config::new(8, 4, Scheduler::Easy);
        let job = |nodes: Nodes, cpus: Vec<u32>| {
            let runs = nodes.runs().to_vec();
            TraceJob { node: runs[0].0 as usize, nodes: if nodes.len() > 1 { runs } else { vec![] }, cpus, ..TraceJob::bare(0) }
        };
        let whole = job([0u32, 1, 2, 3, 5, 7].into_iter().collect(), vec![]);
        assert_eq!(allocated_resources(&whole, &cfg), "0-15 20-23 28-31");
        assert_eq!(held_cores(&whole, &cfg), 24);
        let part = job(Nodes::one(2), vec![3, 0, 1]);
        assert_eq!(allocated_resources(&part, &cfg), "8-9 11");
        assert_eq!(held_cores(&part, &cfg), 3);
        let one = job(Nodes::one(1), vec![0]);
        assert_eq!(allocated_resources(&one, &Config::new(8, 1, Scheduler::Easy)), "1");
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
        let t = s.trace(&j, &["a,b".to_string()]);
        let csv = jobs_csv(&j, &t, &cfg, "w \"x\"").unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], JOBS_CSV_HEAD.join(","));
        assert_eq!(lines[1], "7,\"w \"\"x\"\"\",\"a,b\",0,1,20,1,COMPLETED_SUCCESSFULLY,0,12,12,0,12,1,6,-1,solo=10;slowdown=1.2");
        assert_eq!(lines[2], "8,\"w \"\"x\"\"\",\"a,b\",0,4,10,1,COMPLETED_SUCCESSFULLY,5,10,15,5,15,1.5,0-3,-1,solo=10;slowdown=1");
        let out = parse(&swf(&j, &t, &cfg, "test").unwrap(), "out").unwrap();
        assert_eq!(out.header.max_procs, Some(8));
        assert_eq!((out.records[0].submit, out.records[0].wait, out.records[0].run), (0.0, 0.0, 12.0));
        assert_eq!((out.records[1].job, out.records[1].wait, out.records[1].run, out.records[1].allocated_procs), (8, 5.0, 10.0, 4));
    }

    /// Fractional times (a trace's submits divided by `--compress`, or
    /// interference) come out as whole seconds that still add up.
    #[test]
    fn swf_times_are_whole_seconds_that_add_up() {
        let t = parse("1 0 -1 10 1 -1 -1 1 20 -1 1 3 1 2 -1 -1 -1 -1\n2 3 -1 10 1 -1 -1 1 20 -1 1 3 1 2 -1 -1 -1 -1\n", "t").unwrap();
        let (mut j, _) = jobs(&t, "t", Keep::default(), 8, Mapping::Random, 1, 0).unwrap();
        j[1].submit = 1.5;
        let cfg = Config::new(2, 4, Scheduler::Easy);
        let s = Schedule {
            start: vec![0.25, 2.5],
            finish: vec![10.75, 12.4999],
            alloc: vec![Alloc { nodes: Nodes::one(0), cores: vec![] }, Alloc { nodes: Nodes::one(1), cores: vec![] }],
            shared: vec![false, false],
        };
        let text = swf(&j, &s.trace(&j, &["p".to_string()]), &cfg, "test").unwrap();
        for line in text.lines().filter(|l| !l.starts_with(';')) {
            for (k, field) in line.split_whitespace().enumerate() {
                assert!(field.parse::<i64>().is_ok(), "field {} of `{line}` is `{field}`, not an integer", k + 1);
            }
        }
        let out = parse(&text, "out").unwrap();
        let r: Vec<(f64, f64, f64)> = out.records.iter().map(|r| (r.submit, r.wait, r.run)).collect();
        assert_eq!(r, vec![(0.0, 0.0, 11.0), (2.0, 1.0, 9.0)]);
    }
}
