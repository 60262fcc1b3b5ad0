//! One replay's two outputs agree: jobs.csv (Batsim's columns, what evalys
//! reads) and the SWF schedule name the same jobs with the same processor
//! counts and times, and every SWF field is an integer (issue 40).

use std::collections::HashMap;

use cosched_cluster::output::{jobs_csv, swf, JOBS_CSV_HEAD};
use cosched_cluster::swf::parse;
use cosched_cluster::{simulate, synthetic, Config, Scheduler};
use cosched_sched::{policy_from_spec, Policy, ProgramTable};

#[test]
fn jobs_csv_and_swf_of_one_replay_agree_row_by_row() {
    let (nodes, cores) = (12, 8);
    let mut js = synthetic::trace(nodes, cores, 400, 3, 1.2, 11);
    // Halved submits, as `--compress 2` gives: fractional seconds.
    for j in &mut js {
        j.submit /= 2.0;
    }
    let m = vec![vec![1.5, 1.1, 1.02], vec![1.1, 1.3, 1.02], vec![1.02, 1.02, 1.01]];
    let table = ProgramTable::new(js.iter().map(|j| j.program).collect(), m, None).unwrap();
    let names: Vec<String> = (0..3).map(|i| format!("p{i}")).collect();
    let cfg = Config::new(nodes, cores, Scheduler::Easy);
    for policy in [None, Some("noplan")] {
        let mut p: Option<Box<dyn Policy>> = policy.map(|s| policy_from_spec(s).unwrap());
        let s = simulate(&js, &names, &cfg, &table, &table, p.as_deref_mut().map(|p| p as &mut dyn Policy), &mut |_| {}).unwrap();
        let t = s.trace(&js, &names);
        let csv_text = jobs_csv(&js, &t, &cfg, "w").unwrap();
        let swf_text = swf(&js, &t, &cfg, "test").unwrap();
        for line in swf_text.lines().filter(|l| !l.starts_with(';')) {
            for (k, field) in line.split_whitespace().enumerate() {
                assert!(field.parse::<i64>().is_ok(), "{policy:?}: field {} of `{line}` is `{field}`, not an integer", k + 1);
            }
        }
        let out = parse(&swf_text, "out").unwrap();
        let by_job: HashMap<i64, &cosched_cluster::swf::Record> = out.records.iter().map(|r| (r.job, r)).collect();
        let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
        assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), JOBS_CSV_HEAD.to_vec());
        let mut rows = 0;
        let mut fewer = 0;
        for row in reader.records() {
            let row = row.unwrap();
            let f = |k: usize| row[k].parse::<f64>().unwrap();
            let r = by_job[&(f(0) as i64)];
            let resources = f(4) as i64;
            assert_eq!(resources, r.allocated_procs, "{policy:?}: job {}: processors", &row[0]);
            let listed: i64 = row[14].split(' ').map(|part| match part.split_once('-') {
                Some((a, b)) => b.parse::<i64>().unwrap() - a.parse::<i64>().unwrap() + 1,
                None => 1,
            }).sum();
            assert_eq!(listed, resources, "{policy:?}: job {}: allocated_resources `{}`", &row[0], &row[14]);
            // The same instants, SWF's rounded to whole seconds.
            let (submit, start, finish) = (f(3), f(8), f(10));
            assert_eq!(r.submit, submit.round(), "job {}", &row[0]);
            assert_eq!(r.submit + r.wait, start.round(), "job {}", &row[0]);
            assert_eq!(r.submit + r.wait + r.run, finish.round(), "job {}", &row[0]);
            fewer += (resources > r.requested_procs) as usize;
            rows += 1;
        }
        assert_eq!(rows, js.len());
        // Exclusive nodes round small jobs up to a node: both files say so.
        if policy.is_none() {
            assert!(fewer > 0, "some job held more cores than it asked for");
        }
    }
}
