//! The real trace the repository carries (examples/traces/README.md says
//! where it comes from) reads whole and replays under exclusive EASY.

use std::path::Path;

use cosched_cluster::metrics::figures;
use cosched_cluster::swf::read;
use cosched_cluster::workload::{jobs, Keep, Mapping};
use cosched_cluster::{simulate, Config, Scheduler};
use cosched_sched::ProgramTable;

#[test]
fn the_nasa_ipsc_log_reads_whole_and_replays() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces/NASA-iPSC-1993-3.1-cln.swf.gz");
    let swf = read(&path).unwrap();
    assert_eq!(swf.records.len(), 18_239, "the header's MaxJobs");
    assert_eq!((swf.header.max_nodes, swf.header.max_procs), (Some(128), Some(128)));
    assert_eq!(swf.header.get("Computer"), Some("Intel iPSC/860"));
    let (js, skipped) = jobs(&swf, "nasa", Keep::default(), 128, Mapping::Executable, 5, 1).unwrap();
    assert_eq!((js.len(), skipped.no_run_time), (18_066, 173));
    let table = ProgramTable::new(js.iter().map(|j| j.program).collect(), vec![vec![1.0; 5]; 5], None).unwrap();
    let names: Vec<String> = (0..5).map(|i| i.to_string()).collect();
    let cfg = Config::new(128, 1, Scheduler::Easy);
    let s = simulate(&js, &names, &cfg, &table, &table, None, &mut |_| {}).unwrap();
    assert!(js.iter().zip(&s.start).all(|(j, &t)| t >= j.submit));
    // Alone on its nodes every job runs exactly its trace time.
    assert!(js.iter().enumerate().all(|(i, j)| s.finish[i] - s.start[i] == j.run));
    let t = s.trace(&js, &names);
    let tm = cosched_cluster::trace::times(&t, js.len()).unwrap();
    let f = figures(&js, &tm, &s.shared, 128, 1).unwrap();
    // The one metrics code of every engine reads the same span off the trace.
    assert_eq!(t.metrics().unwrap().makespan, f.makespan);
    assert!(f.utilization > 0.0 && f.utilization < 1.0);
}
