//! The event trace of a schedule, simulated or real, and its one file format.
//!
//! Every engine produces a [`Trace`]: the jobs (what a reader needs to make
//! sense of an event without the workload at hand) and the events. It is
//! written and read as CSV here and as JSON through serde, so a trace from
//! `cosched simulate --trace` and one from `cosched run --report` are read
//! and scored ([`Trace::metrics`]) by the same code.
//!
//! CSV: one event a line, each line carrying its job's metadata so that it
//! reads on its own:
//!
//! ```text
//! time,job,name,program,kind,node,pool,cpus,solo,status,status_value
//! ```
//!
//! `kind` is `arrive`, `start`, `finish`, `suspend`, `resume` or `move`; `cpus` a Linux cpulist (empty when
//! the engine does not pin); `solo` the solo time estimate the engine
//! reckoned progress from; `status` the job's final status name and
//! `status_value` its exit code or signal (both empty for a job that has not
//! ended). A trace of jobs with variants (a workload's `[[jobs.variants]]`)
//! has a twelfth column, `variant`: the name of the way each job ran.
//! A trace with a job over several nodes (the cluster simulator's) has a
//! last column, `nodes`: the node runs each job held, as a list like a
//! cpulist (`0-15,32`), empty for a job on its `node` alone.
//! A trace of a run that observed its jobs' progress (issue 38) has four
//! more columns, `slowdown,lo,hi,signal`, filled on lines of kind
//! `estimate` (after the events): a running job's online slowdown
//! estimate, its interval and what it was read from (`progress`,
//! `counters`, `cpu`); the other lines leave them empty and metrics
//! ignore estimate lines.
//! Fields holding commas or quotes are quoted. The reader needs only
//! `time`, `job` and `kind`, wherever they are, so older files still read.

use serde::{Deserialize, Serialize};

use crate::metrics::{compute, Event, EventKind, JobId, Metrics, MetricsError};
use crate::run::JobStatus;
use crate::topology::{format_cpulist, parse_cpulist};

/// What a trace knows of one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceJob {
    /// Its index in the workload: the `job` of its events.
    pub job: JobId,
    pub name: String,
    /// Equal keys mean instances of one program.
    pub program: String,
    pub pool: String,
    /// Which node of the engine it ran on (0 on a single node); the first
    /// of them for a job over several.
    pub node: usize,
    /// Every node it held, as runs `[first, end)` in ascending order, for
    /// a job of an engine whose jobs span nodes (the cluster simulator);
    /// empty: `node` alone. Runs, so a job over thousands of nodes costs
    /// a few numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<(u32, u32)>,
    /// CPUs it held; empty when the engine does not pin.
    pub cpus: Vec<u32>,
    /// Solo time estimate, seconds; what its slowdown is reckoned against.
    pub solo: Option<f64>,
    /// How it ended; `None` while it has not.
    pub status: Option<JobStatus>,
    /// The variant it ran as, for a job with variants (`pool` is then that
    /// variant's pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl TraceJob {
    /// A job known by its index only (a file without metadata columns).
    pub fn bare(job: JobId) -> TraceJob {
        TraceJob {
            job,
            name: String::new(),
            program: String::new(),
            pool: String::new(),
            node: 0,
            nodes: Vec::new(),
            cpus: Vec::new(),
            solo: None,
            status: None,
            variant: None,
        }
    }

    /// The node runs `[first, end)` it held: [`TraceJob::nodes`], else its one node.
    pub fn node_runs(&self) -> Vec<(u32, u32)> {
        if self.nodes.is_empty() {
            vec![(self.node as u32, self.node as u32 + 1)]
        } else {
            self.nodes.clone()
        }
    }
}

/// Node runs as `0-15,32` (a run of one node is its number).
pub fn format_node_runs(runs: &[(u32, u32)]) -> String {
    runs.iter().map(|&(a, e)| if e == a + 1 { a.to_string() } else { format!("{a}-{}", e - 1) }).collect::<Vec<_>>().join(",")
}

/// Reads [`format_node_runs`]' form, runs in the order written (an engine
/// lists a job's nodes in the order it took them).
pub fn parse_node_runs(text: &str) -> Result<Vec<(u32, u32)>, String> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |v: &str| v.trim().parse::<u32>().map_err(|_| format!("`{v}` is not a node number"));
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if b < a || b == u32::MAX {
            return Err(format!("`{part}` is not a range of nodes"));
        }
        runs.push((a, b + 1));
    }
    Ok(runs)
}

/// A schedule as it happened: its jobs, ordered by index, and its events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub jobs: Vec<TraceJob>,
    pub events: Vec<Event>,
    /// Online slowdown estimates of running jobs, in time order; empty
    /// from an engine that does not observe progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub estimates: Vec<TraceEstimate>,
}

/// One online estimate of a running job's slowdown (`kind` `estimate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEstimate {
    pub time: f64,
    pub job: JobId,
    pub slowdown: f64,
    pub lo: f64,
    pub hi: f64,
    /// What it was read from: `progress`, `counters` or `cpu`.
    pub signal: String,
}

pub const CSV_HEADER: [&str; 11] =
    ["time", "job", "name", "program", "kind", "node", "pool", "cpus", "solo", "status", "status_value"];

fn kind_name(k: EventKind) -> &'static str {
    match k {
        EventKind::Arrive => "arrive",
        EventKind::Start => "start",
        EventKind::Finish => "finish",
        EventKind::Suspend => "suspend",
        EventKind::Resume => "resume",
        EventKind::Move => "move",
    }
}

impl Trace {
    /// The job with index `job`, if the trace describes it.
    pub fn job(&self, job: JobId) -> Option<&TraceJob> {
        match self.jobs.binary_search_by_key(&job, |j| j.job) {
            Ok(k) => Some(&self.jobs[k]),
            Err(_) => None,
        }
    }

    /// Scores the trace against its jobs' own solo estimates; jobs must be
    /// `0..n`, each with a solo time.
    pub fn metrics(&self) -> Result<Metrics, MetricsError> {
        let n = self.jobs.iter().map(|j| j.job + 1).max().unwrap_or(0);
        let mut solo = vec![f64::NAN; n];
        for j in &self.jobs {
            solo[j.job] = j.solo.unwrap_or(f64::NAN);
        }
        compute(&self.events, &solo)
    }

    /// The CSV form (see the module documentation), events in trace order.
    pub fn to_csv(&self) -> String {
        let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
        let io = "writing CSV to memory cannot fail";
        // The variant column only when a job has one, so traces of plain
        // workloads read as they always did.
        let variants = self.jobs.iter().any(|j| j.variant.is_some());
        let estimates = !self.estimates.is_empty();
        // The nodes column only when a job spans several, as variant.
        let multi = self.jobs.iter().any(|j| !j.nodes.is_empty());
        let mut header = CSV_HEADER.to_vec();
        if variants || estimates {
            header.push("variant");
        }
        if estimates {
            header.extend(["slowdown", "lo", "hi", "signal"]);
        }
        if multi {
            header.push("nodes");
        }
        w.write_record(&header).expect(io);
        let bare = TraceJob::bare(0);
        // One line: the job's metadata, then `kind`'s and the optional columns'.
        let line = |w: &mut csv::Writer<Vec<u8>>, (time, job): (f64, JobId), j: &TraceJob, kind: &str, status: &str, value: &str, estimate: [&str; 4]| {
            let (time, job, node, cpus) = (time.to_string(), job.to_string(), j.node.to_string(), format_cpulist(&j.cpus));
            let solo = j.solo.map_or(String::new(), |s| s.to_string());
            let nodes = if multi { format_node_runs(&j.nodes) } else { String::new() };
            let mut fields = vec![time.as_str(), &job, &j.name, &j.program, kind, &node, &j.pool, &cpus, &solo, status, value];
            if variants || estimates {
                fields.push(j.variant.as_deref().unwrap_or(""));
            }
            if estimates {
                fields.extend(estimate);
            }
            if multi {
                fields.push(&nodes);
            }
            w.write_record(&fields).expect(io);
        };
        for e in &self.events {
            let j = self.job(e.job).unwrap_or(&bare);
            let status = j.status.map_or("", |s| s.name());
            let value = j.status.and_then(|s| s.value()).map_or(String::new(), |v| v.to_string());
            line(&mut w, (e.time, e.job), j, kind_name(e.kind), status, &value, [""; 4]);
        }
        for e in &self.estimates {
            let j = self.job(e.job).unwrap_or(&bare);
            let (sd, lo, hi) = (e.slowdown.to_string(), e.lo.to_string(), e.hi.to_string());
            line(&mut w, (e.time, e.job), j, "estimate", "", "", [&sd, &lo, &hi, &e.signal]);
        }
        String::from_utf8(w.into_inner().expect(io)).expect("every field is UTF-8")
    }

    /// Reads [`to_csv`](Trace::to_csv)'s format. Jobs take their metadata
    /// from their first line; errors name the line.
    pub fn from_csv(text: &str) -> Result<Trace, String> {
        let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
        let header = r.headers().map_err(|e| format!("line 1: {e}"))?.clone();
        if header.is_empty() || (header.len() == 1 && header[0].is_empty()) {
            return Err("empty trace: no header line".into());
        }
        let col = |name: &str| header.iter().position(|c| c.trim() == name);
        let need = |name: &str| {
            col(name).ok_or_else(|| format!("line 1: no `{name}` column in `{}`", header.iter().collect::<Vec<_>>().join(",")))
        };
        let (ti, ji, ki) = (need("time")?, need("job")?, need("kind")?);
        let [ni, pi, noi, poi, ci, si, sti, svi, vi] =
            ["name", "program", "node", "pool", "cpus", "solo", "status", "status_value", "variant"].map(col);
        let [sdi, loi, hii, sgi, nsi] = ["slowdown", "lo", "hi", "signal", "nodes"].map(col);
        let mut trace = Trace::default();
        for rec in r.records() {
            let rec = rec.map_err(|e| format!("{e}"))?;
            let line = rec.position().map_or(0, |p| p.line());
            if rec.iter().all(|f| f.trim().is_empty()) {
                continue;
            }
            let get = |k: usize| rec.get(k).map(str::trim).ok_or(format!("line {line}: only {} fields", rec.len()));
            let opt = |k: Option<usize>| k.and_then(|k| rec.get(k)).map(str::trim).unwrap_or("");
            let time: f64 = get(ti)?.parse().map_err(|_| format!("line {line}: time `{}` is not a number", &rec[ti]))?;
            let job: JobId = get(ji)?.parse().map_err(|_| format!("line {line}: job `{}` is not an index", &rec[ji]))?;
            if get(ki)? == "estimate" {
                let num = |k: Option<usize>, what: &str| {
                    let v = opt(k);
                    v.parse::<f64>().map_err(|_| format!("line {line}: {what} `{v}` is not a number"))
                };
                trace.estimates.push(TraceEstimate {
                    time,
                    job,
                    slowdown: num(sdi, "slowdown")?,
                    lo: num(loi, "lo")?,
                    hi: num(hii, "hi")?,
                    signal: opt(sgi).to_string(),
                });
                continue;
            }
            let kind = match get(ki)? {
                "arrive" => EventKind::Arrive,
                "start" => EventKind::Start,
                "finish" => EventKind::Finish,
                "suspend" => EventKind::Suspend,
                "resume" => EventKind::Resume,
                "move" => EventKind::Move,
                other => return Err(format!("line {line}: kind `{other}`; expected arrive, start, finish, suspend, resume, move or estimate")),
            };
            trace.events.push(Event { time, job, kind });
            let Err(at) = trace.jobs.binary_search_by_key(&job, |j| j.job) else { continue };
            let bad = |what: &str, v: &str| format!("line {line}: {what} `{v}`");
            let node = match opt(noi) {
                "" => 0,
                v => v.parse().map_err(|_| bad("node", v) + " is not an index")?,
            };
            let cpus = parse_cpulist(opt(ci)).map_err(|e| bad("cpus", opt(ci)) + &format!(": {e}"))?;
            let nodes = parse_node_runs(opt(nsi)).map_err(|e| bad("nodes", opt(nsi)) + &format!(": {e}"))?;
            let solo = match opt(si) {
                "" => None,
                v => Some(v.parse::<f64>().map_err(|_| bad("solo", v) + " is not a number")?),
            };
            let value = match opt(svi) {
                "" => None,
                v => Some(v.parse::<i32>().map_err(|_| bad("status_value", v) + " is not a whole number")?),
            };
            let status = match opt(sti) {
                "" => None,
                s => Some(JobStatus::parse_parts(s, value).map_err(|e| format!("line {line}: {e}"))?),
            };
            trace.jobs.insert(
                at,
                TraceJob {
                    job,
                    name: opt(ni).to_string(),
                    program: opt(pi).to_string(),
                    pool: opt(poi).to_string(),
                    node,
                    nodes,
                    cpus,
                    solo,
                    status,
                    variant: Some(opt(vi)).filter(|v| !v.is_empty()).map(str::to_string),
                },
            );
        }
        Ok(trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_jobs() -> Trace {
        use EventKind::*;
        let job = |i: usize, cpus: Vec<u32>, status| TraceJob {
            job: i,
            name: format!("j,\"{i}\""),
            program: "p".into(),
            pool: "cpu".into(),
            node: i,
            nodes: Vec::new(),
            cpus,
            solo: Some(10.0),
            status,
            variant: None,
        };
        let ev = |time, job, kind| Event { time, job, kind };
        Trace {
            jobs: vec![job(0, vec![0, 2], Some(JobStatus::Ok)), job(1, vec![], Some(JobStatus::Failed(3)))],
            events: vec![ev(0.0, 0, Arrive), ev(0.0, 0, Start), ev(0.0, 1, Arrive), ev(0.5, 1, Start), ev(12.25, 0, Finish), ev(20.0, 1, Finish)],
            estimates: Vec::new(),
        }
    }

    #[test]
    fn estimate_lines_round_trip_and_leave_the_scores_alone() {
        let mut t = two_jobs();
        t.estimates.push(TraceEstimate { time: 2.5, job: 0, slowdown: 1.5, lo: 1.25, hi: f64::INFINITY, signal: "progress".into() });
        let text = t.to_csv();
        assert!(text.starts_with("time,job,name,program,kind,node,pool,cpus,solo,status,status_value,variant,slowdown,lo,hi,signal\n"), "{text}");
        assert!(text.ends_with("2.5,0,\"j,\"\"0\"\"\",p,estimate,0,cpu,\"0,2\",10,,,,1.5,1.25,inf,progress\n"), "{text}");
        let back = Trace::from_csv(&text).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.metrics().unwrap(), two_jobs().metrics().unwrap());
        assert!(Trace::from_csv("time,job,kind,slowdown,lo,hi\n1,0,estimate,x,1,2\n").unwrap_err().contains("slowdown `x`"));
    }

    #[test]
    fn csv_round_trips_the_jobs_and_the_events_and_scores_the_same() {
        let t = two_jobs();
        let text = t.to_csv();
        assert!(
            text.starts_with("time,job,name,program,kind,node,pool,cpus,solo,status,status_value\n0,0,\"j,\"\"0\"\"\",p,arrive,0,cpu,\"0,2\",10,ok,\n"),
            "{text}"
        );
        assert!(text.ends_with("20,1,\"j,\"\"1\"\"\",p,finish,1,cpu,,10,failed,3\n"), "{text}");
        let back = Trace::from_csv(&text).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.metrics().unwrap(), compute(&t.events, &[10.0, 10.0]).unwrap());
        assert_eq!(back.metrics().unwrap().makespan, 20.0);
    }

    #[test]
    fn the_variant_column_appears_only_when_a_job_ran_as_a_variant_and_reads_back() {
        let mut t = two_jobs();
        assert!(!t.to_csv().contains("variant"));
        t.jobs[1].variant = Some("acc".into());
        let text = t.to_csv();
        assert!(text.starts_with("time,job,name,program,kind,node,pool,cpus,solo,status,status_value,variant\n"), "{text}");
        assert!(text.ends_with(",10,failed,3,acc\n"), "{text}");
        assert_eq!(Trace::from_csv(&text).unwrap(), t);
    }

    #[test]
    fn a_job_over_several_nodes_keeps_its_node_runs_in_csv_and_json_and_others_write_no_nodes() {
        let mut t = two_jobs();
        assert!(!t.to_csv().contains("nodes") && !serde_json::to_string(&t).unwrap().contains("nodes"), "single-node traces keep their fields");
        t.jobs[1].nodes = vec![(1, 17), (32, 33)];
        let text = t.to_csv();
        assert!(text.starts_with("time,job,name,program,kind,node,pool,cpus,solo,status,status_value,nodes\n"), "{text}");
        assert!(text.ends_with(",10,failed,3,\"1-16,32\"\n"), "{text}");
        assert!(text.lines().nth(1).unwrap().ends_with(",ok,,"), "a job on its node alone leaves the column empty: {text}");
        assert_eq!(Trace::from_csv(&text).unwrap(), t);
        let json = serde_json::to_string(&t).unwrap();
        assert!(json.contains("\"nodes\":[[1,17],[32,33]]"), "{json}");
        assert_eq!(serde_json::from_str::<Trace>(&json).unwrap(), t);
        assert_eq!(t.jobs[1].node_runs(), vec![(1, 17), (32, 33)]);
        assert_eq!(t.jobs[0].node_runs(), vec![(0, 1)]);
    }

    #[test]
    fn node_runs_read_back_as_written_and_bad_ones_are_named() {
        assert_eq!(parse_node_runs("0-3,5,7-8").unwrap(), vec![(0, 4), (5, 6), (7, 9)]);
        assert_eq!(format_node_runs(&[(0, 4), (5, 6), (7, 9)]), "0-3,5,7-8");
        assert_eq!(parse_node_runs(&format_node_runs(&[(8, 10), (2, 3)])).unwrap(), vec![(8, 10), (2, 3)], "in the order taken");
        assert_eq!(parse_node_runs("").unwrap(), vec![]);
        assert!(parse_node_runs("3-1").unwrap_err().contains("not a range"));
        assert!(parse_node_runs("x").unwrap_err().contains("not a node number"));
    }

    #[test]
    fn json_round_trips() {
        let t = two_jobs();
        let back: Trace = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn a_file_with_only_time_job_and_kind_reads_with_bare_jobs() {
        let t = Trace::from_csv("kind,job,time\nstart,1,0.5\nfinish,1,2\n").unwrap();
        assert_eq!(t.jobs, vec![TraceJob::bare(1)]);
        assert_eq!(t.events[1], Event { time: 2.0, job: 1, kind: EventKind::Finish });
    }

    #[test]
    fn broken_lines_are_named() {
        assert!(Trace::from_csv("time,job\n").unwrap_err().contains("no `kind` column"));
        assert!(Trace::from_csv("time,job,kind\n1,2,begin\n").unwrap_err().starts_with("line 2: kind `begin`"));
        assert!(Trace::from_csv("time,job,kind\n1,2,start\nx,2,finish\n").unwrap_err().starts_with("line 3: time `x`"));
        assert!(Trace::from_csv("time,job,kind,status\n1,0,start,failed\n").unwrap_err().contains("line 2: status `failed` needs its code"));
        assert!(Trace::from_csv("").unwrap_err().contains("empty trace"));
    }
}
