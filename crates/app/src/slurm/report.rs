//! `cosched slurm report`: what sharing nodes did on the cluster. For the
//! partition's jobs that finished in a window, from Slurm's accounting
//! (`sacct`: nodes, times, users) joined by job id with what `serve`
//! learned (the store's `slurm:PARTITION:NODE` runs: each job's realized
//! slowdown against its solo time and cosched's prediction at its
//! release), per node, per pair of programs and per user: the realized
//! slowdowns of co-located jobs against their predictions and against
//! running alone, and the node-hours sharing saved.
//!
//! Node-hours: a job alone takes its node for its solo time (the stored
//! solo time; else its time over its realized slowdown; else, knowing
//! nothing better, its own time). Used is the time each node had at least
//! one of the jobs on it; each moment of a node is shared evenly among the
//! jobs on it then, which is how used hours are split among users. Saved =
//! exclusive - used: negative when sharing slowed jobs more than it packed.
//! Slurm's times are whole seconds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use cosched_model::workload::Program;
use cosched_report::html::Page;
use cosched_report::scatter::{scatter, Point};
use cosched_slurm::Slurm;
use cosched_store::Store;
use serde::Serialize;

use super::{unix_now, SlurmTarget};
use crate::common::{create_dir, db_path, load_workload, open_store, write_file};
use crate::error::bad_input;
use crate::render::{Doc, Render};
use cosched_model::text::printable;

#[derive(Debug, Clone)]
pub struct ReportRequest {
    pub target: SlurmTarget,
    /// Jobs that ended within this many days back.
    pub days: f64,
    /// Write index.html and report.json here.
    pub dir: Option<PathBuf>,
}

/// One finished job of the partition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportJob {
    pub id: u64,
    /// The workload program serve tied it to; `None`: not learned.
    pub program: Option<String>,
    pub user: String,
    pub nodes: Vec<String>,
    /// Unix seconds.
    pub start: i64,
    pub end: i64,
    /// Slurm's state (`COMPLETED`, ...), or the store's status.
    pub state: String,
    pub solo_s: Option<f64>,
    /// cosched's prediction at its release.
    pub predicted: Option<f64>,
    /// Its time over its solo time, as serve learned it.
    pub slowdown: Option<f64>,
    /// Jobs that ran on one of its nodes at some moment of its run.
    pub beside: Vec<u64>,
}

impl ReportJob {
    /// Seconds it would have taken a node alone.
    fn exclusive_s(&self) -> f64 {
        let wall = (self.end - self.start).max(0) as f64;
        match (self.solo_s, self.slowdown) {
            (Some(s), _) if s > 0.0 => s,
            (_, Some(x)) if x > 0.0 => wall / x,
            _ => wall,
        }
    }
}

/// Means over the co-located jobs of a group that have a realized slowdown.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Slowdowns {
    /// Co-located jobs with a realized slowdown.
    pub n: usize,
    /// Mean realized slowdown (against running alone).
    pub realized: Option<f64>,
    /// Mean of cosched's predictions for the same jobs.
    pub predicted: Option<f64>,
    /// Mean of |realized - predicted|.
    pub abs_error: Option<f64>,
}

impl Slowdowns {
    fn of<'a>(jobs: impl Iterator<Item = &'a ReportJob>) -> Slowdowns {
        let (mut n, mut r, mut p, mut e) = (0usize, 0.0, 0.0, 0.0);
        for j in jobs {
            if let Some(x) = j.slowdown {
                let pred = j.predicted.unwrap_or(1.0);
                n += 1;
                r += x;
                p += pred;
                e += (x - pred).abs();
            }
        }
        let mean = |s: f64| (n > 0).then(|| s / n as f64);
        Slowdowns { n, realized: mean(r), predicted: mean(p), abs_error: mean(e) }
    }
}

/// Node-hours: taken alone, used, and saved by sharing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Hours {
    pub exclusive: f64,
    pub used: f64,
    pub saved: f64,
}

impl Hours {
    fn new(exclusive_s: f64, used_s: f64) -> Hours {
        Hours { exclusive: exclusive_s / 3600.0, used: used_s / 3600.0, saved: (exclusive_s - used_s) / 3600.0 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeUse {
    pub node: String,
    pub jobs: usize,
    /// Jobs that shared the node with another at some moment.
    pub colocated: usize,
    pub slowdowns: Slowdowns,
    pub hours: Hours,
}

/// `program`'s jobs while `beside` ran on their node (ordered: a program's
/// slowdown beside another is not the other's beside it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairUse {
    pub program: String,
    pub beside: String,
    pub slowdowns: Slowdowns,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserUse {
    pub user: String,
    pub jobs: usize,
    pub colocated: usize,
    pub slowdowns: Slowdowns,
    /// Used hours: the user's share of each moment of each node.
    pub hours: Hours,
}

#[derive(Debug, Clone, Serialize)]
pub struct SlurmReport {
    pub partition: String,
    /// Jobs that ended from this Unix time on.
    pub since: i64,
    /// Where the jobs came from, and what could not be read.
    pub notes: Vec<String>,
    pub jobs: Vec<ReportJob>,
    pub nodes: Vec<NodeUse>,
    pub pairs: Vec<PairUse>,
    pub users: Vec<UserUse>,
    pub total: Hours,
    pub index: Option<PathBuf>,
}

/// What serve learned of one job (a store row).
struct Learned {
    program: String,
    node: String,
    start: i64,
    end: i64,
    state: String,
    solo_s: Option<f64>,
    predicted: f64,
    slowdown: Option<f64>,
}

/// Jobs serve learned from the partition, by Slurm id.
fn learned(store: &Store, target: &SlurmTarget, since: i64) -> anyhow::Result<BTreeMap<u64, Learned>> {
    // Workload job names to programs, when the workload is given.
    let programs: BTreeMap<String, String> = match &target.workload {
        Some(p) => load_workload(p)?.jobs.iter().map(|j| (j.name.clone(), program_label(&j.program))).collect(),
        None => BTreeMap::new(),
    };
    let series = format!("slurm:{}:", target.partition);
    let mut out = BTreeMap::new();
    for run in store.runs()?.into_iter().filter(|r| r.series.starts_with(&series)) {
        let node = run.params.get("node").and_then(|n| n.as_str()).unwrap_or_else(|| &run.series[series.len()..]).to_string();
        let origin = run.started_unix as i64;
        for j in store.run_jobs(run.id)? {
            let Some(end) = &j.end else { continue };
            let (start, end_at) = (origin + j.start.start_s.round() as i64, origin + end.end_s.round() as i64);
            if end_at < since {
                continue;
            }
            let program = programs.get(&j.start.job).cloned().unwrap_or_else(|| j.start.job.clone());
            let l = Learned {
                program,
                node: node.clone(),
                start,
                end: end_at,
                state: end.status.name().to_string(),
                solo_s: j.start.solo_s,
                predicted: j.start.predicted,
                slowdown: end.slowdown,
            };
            out.insert(j.start.pgid as u64, l);
        }
    }
    Ok(out)
}

/// A program as people name it: a kernel's name, a command's program.
fn program_label(p: &Program) -> String {
    match p {
        Program::Kernel { name, .. } => name.clone(),
        Program::Command { argv } => argv.first().map_or("command".to_string(), |a| a.rsplit('/').next().unwrap_or(a).to_string()),
    }
}

/// User names by uid, from /etc/passwd (a uid it lacks is shown as the number).
fn user_names() -> BTreeMap<u32, String> {
    let text = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((f.get(2)?.parse().ok()?, f[0].to_string()))
        })
        .collect()
}

/// The report of the partition's jobs that ended in the last `days`.
pub fn report(req: &ReportRequest) -> anyhow::Result<SlurmReport> {
    if !(req.days.is_finite() && req.days > 0.0) {
        return Err(bad_input(format!("--days {}: expected a positive number of days", req.days)));
    }
    let target = &req.target;
    // Slurm's commands retry a missing slurm.conf for a minute, silently.
    if let Some(conf) = &target.conf {
        std::fs::metadata(conf).map_err(|e| bad_input(format!("SLURM_CONF={}: {e}: point SLURM_CONF (or --slurm-conf) at the cluster's slurm.conf", conf.display())))?;
    }
    let since = unix_now() - (req.days * 86_400.0) as i64;
    let store = open_store(&db_path(target.db.as_deref()))?;
    let mut learned = learned(&store, target, since)?;
    let mut notes = Vec::new();
    let slurm = Slurm { conf: target.conf.clone() };
    let mut completion = false;
    let acct = match slurm.finished(&target.partition, since, &mut completion) {
        Ok(jobs) => {
            let from = if completion { "sacct --completion (the job completion log: no slurmdbd)" } else { "sacct (slurmdbd)" };
            notes.push(format!("{} finished jobs of partition {} from {from}; {} of them learned by serve", jobs.len(), target.partition, jobs.iter().filter(|j| learned.contains_key(&j.id)).count()));
            jobs
        }
        Err(e) => {
            notes.push(format!(
                "Slurm's accounting could not be read ({e}): jobs from the store only, as serve learned them (no users, no jobs serve did not tie to the workload). sacct needs slurmdbd (AccountingStorageType=accounting_storage/slurmdbd) or a job completion log (JobCompType=jobcomp/filetxt)"
            ));
            Vec::new()
        }
    };
    let names = user_names();
    let mut jobs = Vec::new();
    let mut seen = BTreeSet::new();
    for a in &acct {
        let (Some(start), Some(end)) = (a.start, a.end) else { continue };
        // An id sacct lists twice (ids reused after a controller reset): which record is the job's cannot be told.
        if !seen.insert(a.id) || a.nodes.is_empty() {
            continue;
        }
        let l = learned.remove(&a.id);
        let user = a.user_id.map_or("?".to_string(), |u| names.get(&u).cloned().unwrap_or_else(|| u.to_string()));
        jobs.push(ReportJob {
            id: a.id,
            program: l.as_ref().map(|l| l.program.clone()),
            user,
            nodes: a.nodes.clone(),
            start,
            end,
            state: a.state.to_string(),
            solo_s: l.as_ref().and_then(|l| l.solo_s),
            predicted: l.as_ref().map(|l| l.predicted),
            slowdown: l.as_ref().and_then(|l| l.slowdown),
            beside: Vec::new(),
        });
    }
    // Learned jobs accounting no longer has (or never had: no sacct).
    for (id, l) in learned {
        let Learned { program, node, start, end, state, solo_s, predicted, slowdown } = l;
        let (program, predicted, user) = (Some(program), Some(predicted), "?".to_string());
        jobs.push(ReportJob { id, program, user, nodes: vec![node], start, end, state, solo_s, predicted, slowdown, beside: Vec::new() });
    }
    jobs.sort_by_key(|j| (j.start, j.id));
    let (nodes, pairs, users, total) = summarize(&mut jobs);
    let mut r = SlurmReport { partition: target.partition.clone(), since, notes, jobs, nodes, pairs, users, total, index: None };
    if let Some(dir) = &req.dir {
        create_dir(dir)?;
        write_file(&dir.join("report.json"), &serde_json::to_string_pretty(&r)?)?;
        write_file(&dir.join("index.html"), &html(&r))?;
        r.index = Some(dir.join("index.html"));
    }
    Ok(r)
}

/// Fills each job's `beside` and sums per node, per ordered pair of
/// programs and per user, and in all.
pub(crate) fn summarize(jobs: &mut [ReportJob]) -> (Vec<NodeUse>, Vec<PairUse>, Vec<UserUse>, Hours) {
    let mut on: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (k, j) in jobs.iter().enumerate() {
        for n in &j.nodes {
            on.entry(n.clone()).or_default().push(k);
        }
    }
    // Co-location: intervals that meet on a node (touching ones do not).
    let mut beside: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); jobs.len()];
    for ks in on.values_mut() {
        ks.sort_by_key(|&k| jobs[k].start);
        for (x, &a) in ks.iter().enumerate() {
            for &b in &ks[x + 1..] {
                if jobs[b].start >= jobs[a].end {
                    break;
                }
                if jobs[a].start < jobs[b].end && a != b {
                    beside[a].insert(b);
                    beside[b].insert(a);
                }
            }
        }
    }
    for (k, set) in beside.iter().enumerate() {
        jobs[k].beside = set.iter().map(|&b| jobs[b].id).collect();
    }
    // Each moment of a node split evenly among the jobs on it.
    let mut share = vec![0.0f64; jobs.len()];
    let mut nodes = Vec::new();
    let (mut all_excl, mut all_used) = (0.0, 0.0);
    for (node, ks) in &on {
        let mut times: Vec<i64> = ks.iter().flat_map(|&k| [jobs[k].start, jobs[k].end]).collect();
        times.sort_unstable();
        times.dedup();
        let mut used = 0.0;
        for w in times.windows(2) {
            let (a, b) = (w[0], w[1]);
            let here: Vec<usize> = ks.iter().copied().filter(|&k| jobs[k].start <= a && jobs[k].end >= b).collect();
            if !here.is_empty() {
                let len = (b - a) as f64;
                used += len;
                for k in &here {
                    share[*k] += len / here.len() as f64;
                }
            }
        }
        let excl: f64 = ks.iter().map(|&k| jobs[k].exclusive_s()).sum();
        let shared: Vec<&ReportJob> = ks.iter().filter(|&&k| !beside[k].is_empty()).map(|&k| &jobs[k]).collect();
        nodes.push(NodeUse { node: node.clone(), jobs: ks.len(), colocated: shared.len(), slowdowns: Slowdowns::of(shared.into_iter()), hours: Hours::new(excl, used) });
        all_excl += excl;
        all_used += used;
    }
    let mut by_pair: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (k, j) in jobs.iter().enumerate() {
        let Some(p) = &j.program else { continue };
        let others: BTreeSet<&str> = beside[k].iter().map(|&b| jobs[b].program.as_deref().unwrap_or("(not learned)")).collect();
        for o in others {
            by_pair.entry((p.clone(), o.to_string())).or_default().push(k);
        }
    }
    let pairs = by_pair.into_iter().map(|((program, beside), ks)| PairUse { program, beside, slowdowns: Slowdowns::of(ks.iter().map(|&k| &jobs[k])) }).collect();
    let mut by_user: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (k, j) in jobs.iter().enumerate() {
        by_user.entry(&j.user).or_default().push(k);
    }
    let users = by_user
        .into_iter()
        .map(|(user, ks)| {
            let excl: f64 = ks.iter().map(|&k| jobs[k].exclusive_s() * jobs[k].nodes.len() as f64).sum();
            let used: f64 = ks.iter().map(|&k| share[k]).sum();
            let shared: Vec<&ReportJob> = ks.iter().filter(|&&k| !beside[k].is_empty()).map(|&k| &jobs[k]).collect();
            UserUse { user: user.to_string(), jobs: ks.len(), colocated: shared.len(), slowdowns: Slowdowns::of(shared.into_iter()), hours: Hours::new(excl, used) }
        })
        .collect();
    (nodes, pairs, users, Hours::new(all_excl, all_used))
}

fn num(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.3}"))
}

/// One table of the report: its title, headers and rows.
type Table = (&'static str, Vec<&'static str>, Vec<Vec<String>>);

/// Headers and rows of the report's three tables, as the terminal and the
/// page show them.
fn tables(r: &SlurmReport) -> [Table; 3] {
    let s = |s: &Slowdowns| vec![s.n.to_string(), num(s.realized), num(s.predicted), num(s.abs_error)];
    let h = |h: &Hours| vec![format!("{:.3}", h.exclusive), format!("{:.3}", h.used), format!("{:.3}", h.saved)];
    fn head(first: &[&'static str], hours: bool) -> Vec<&'static str> {
        let mut v = first.to_vec();
        v.extend(["with slowdown", "realized", "predicted", "|error|"]);
        if hours {
            v.extend(["node-h alone", "node-h used", "node-h saved"]);
        }
        v
    }
    let nodes = r.nodes.iter().map(|n| [vec![n.node.clone(), n.jobs.to_string(), n.colocated.to_string()], s(&n.slowdowns), h(&n.hours)].concat()).collect();
    let pairs = r.pairs.iter().map(|p| [vec![p.program.clone(), p.beside.clone()], s(&p.slowdowns)].concat()).collect();
    let users = r.users.iter().map(|u| [vec![u.user.clone(), u.jobs.to_string(), u.colocated.to_string()], s(&u.slowdowns), h(&u.hours)].concat()).collect();
    [
        ("Per node", head(&["node", "jobs", "co-located"], true), nodes),
        ("Per pair of programs (the first program's jobs beside the second)", head(&["program", "beside"], false), pairs),
        ("Per user", head(&["user", "jobs", "co-located"], true), users),
    ]
}

impl Render for SlurmReport {
    /// Text from Slurm (node, user and program names, notes) is shown with
    /// its control characters escaped.
    fn doc(&self) -> Doc {
        let mut d = Doc::new();
        for n in &self.notes {
            d.line(printable(n));
        }
        let t = &self.total;
        d.line(format!("\n{} jobs; node-hours alone {:.3}, used {:.3}, saved by sharing {:.3}\n", self.jobs.len(), t.exclusive, t.used, t.saved));
        for (title, head, rows) in tables(self) {
            let rows = rows.iter().map(|row| row.iter().map(|c| printable(c).into_owned()).collect()).collect();
            d.line(format!("{title}:")).table(&head, rows).line("");
        }
        d.line("realized = a job's time / its solo time; predicted = cosched's prediction at its release; |error| = |realized - predicted|.");
        if let Some(index) = &self.index {
            d.line(format!("report: {}", index.display()));
        }
        d
    }
}

fn html(r: &SlurmReport) -> String {
    let mut page = Page::new(&format!("cosched on Slurm: partition {}", r.partition));
    page.note(&format!(
        "Jobs of partition {} that ended since {} (Unix). Realized slowdown: a job's time over its solo time, as serve learned it; predicted: cosched's prediction at its release; node-hours alone: each job's solo time on a node of its own. {}",
        r.partition,
        r.since,
        r.notes.join(" ")
    ));
    page.section("Node-hours").paragraph(&format!(
        "alone {:.3}, used {:.3}, saved by sharing {:.3} ({} jobs)",
        r.total.exclusive,
        r.total.used,
        r.total.saved,
        r.jobs.len()
    ));
    for (title, head, rows) in tables(r) {
        page.section(title).table(&head, &rows);
    }
    let points: Vec<Point> = r
        .jobs
        .iter()
        .filter(|j| !j.beside.is_empty())
        .filter_map(|j| {
            let (m, p) = (j.slowdown?, j.predicted?);
            Some(Point { measured: m, predicted: p, lo: p, hi: p, label: format!("job {} ({})", j.id, j.program.as_deref().unwrap_or("?")) })
        })
        .collect();
    if !points.is_empty() {
        page.section("Co-located jobs: predicted against realized").svg(&scatter("Co-located jobs", "each point a job: its realized slowdown (x), cosched's prediction (y)", &points, None));
    }
    let rows: Vec<Vec<String>> = r
        .jobs
        .iter()
        .map(|j| {
            let beside: Vec<String> = j.beside.iter().map(u64::to_string).collect();
            vec![j.id.to_string(), j.program.clone().unwrap_or("-".into()), j.user.clone(), j.nodes.join(","), j.state.clone(), num(j.slowdown), num(j.predicted), beside.join(" ")]
        })
        .collect();
    page.section("Jobs").table(&["job", "program", "user", "nodes", "state", "realized", "predicted", "beside"], &rows);
    page.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Job `id` of `program` and `user` on `node` over `span`, with (solo time, realized slowdown, predicted).
    fn job(id: u64, program: &str, user: &str, node: &str, span: (i64, i64), times: (f64, Option<f64>, f64)) -> ReportJob {
        let ((start, end), (solo, slowdown, predicted)) = (span, times);
        ReportJob {
            id,
            program: Some(program.into()),
            user: user.into(),
            nodes: vec![node.into()],
            start,
            end,
            state: "COMPLETED".into(),
            solo_s: Some(solo),
            predicted: Some(predicted),
            slowdown,
            beside: vec![],
        }
    }

    #[test]
    fn two_jobs_sharing_a_node_save_what_they_did_not_lose_and_the_third_alone_saves_nothing() {
        // On n1, a (solo 100 s) and b (solo 100 s) share [0, 120) and
        // [0, 150): alone they take 200 node-seconds, together 150.
        let mut jobs = vec![
            job(1, "stream", "ann", "n1", (0, 120), (100.0, Some(1.2), 1.1)),
            job(2, "dgemm", "bob", "n1", (0, 150), (100.0, Some(1.5), 1.3)),
            job(3, "stream", "ann", "n2", (0, 100), (100.0, Some(1.0), 1.0)),
        ];
        let (nodes, pairs, users, total) = summarize(&mut jobs);
        assert_eq!(jobs[0].beside, [2]);
        assert_eq!(jobs[1].beside, [1]);
        assert!(jobs[2].beside.is_empty());
        let n1 = &nodes[0];
        assert_eq!((n1.node.as_str(), n1.jobs, n1.colocated), ("n1", 2, 2));
        assert_eq!(n1.hours, Hours::new(200.0, 150.0));
        assert_eq!(n1.slowdowns.n, 2);
        assert!((n1.slowdowns.realized.unwrap() - 1.35).abs() < 1e-12);
        assert!((n1.slowdowns.abs_error.unwrap() - 0.15).abs() < 1e-12);
        assert_eq!(nodes[1].hours, Hours::new(100.0, 100.0));
        assert_eq!(nodes[1].colocated, 0);
        assert_eq!(total, Hours::new(300.0, 250.0));
        // Ordered pairs: stream beside dgemm, dgemm beside stream.
        let p: Vec<(&str, &str, Option<f64>)> = pairs.iter().map(|p| (p.program.as_str(), p.beside.as_str(), p.slowdowns.realized)).collect();
        assert_eq!(p, [("dgemm", "stream", Some(1.5)), ("stream", "dgemm", Some(1.2))]);
        // ann: [0, 120) shared in halves (60) + job 3 alone (100); bob: 60 + 30 alone.
        let ann = users.iter().find(|u| u.user == "ann").unwrap();
        let bob = users.iter().find(|u| u.user == "bob").unwrap();
        assert_eq!(ann.hours, Hours::new(200.0, 160.0));
        assert_eq!(bob.hours, Hours::new(100.0, 90.0));
        assert_eq!((ann.jobs, ann.colocated, bob.colocated), (2, 1, 1));
        assert!((users.iter().map(|u| u.hours.used).sum::<f64>() - total.used).abs() < 1e-12);
    }

    #[test]
    fn touching_intervals_do_not_share_and_a_job_without_a_solo_time_counts_its_own() {
        let mut jobs = vec![job(1, "a", "u", "n1", (0, 10), (10.0, Some(1.0), 1.0)), job(2, "b", "u", "n1", (10, 30), (0.0, None, 1.0))];
        jobs[1].solo_s = None;
        let (nodes, pairs, _, total) = summarize(&mut jobs);
        assert!(jobs.iter().all(|j| j.beside.is_empty()));
        assert!(pairs.is_empty());
        assert_eq!(nodes[0].colocated, 0);
        assert_eq!(total, Hours::new(30.0, 30.0));
        // Known slowdown, no solo time: its time over its slowdown.
        let mut j = job(3, "c", "u", "n1", (0, 30), (0.0, Some(1.5), 1.0));
        j.solo_s = None;
        assert_eq!(j.exclusive_s(), 20.0);
    }

    /// A property over 2,000 schedules drawn by a fixed LCG (the app crate
    /// has no proptest): used hours split among users add up to the
    /// nodes' and never exceed the jobs' times; with solo times equal to
    /// the run times sharing saves exactly the overlap, never less than 0;
    /// co-location is symmetric.
    #[test]
    fn used_hours_split_among_users_add_up_to_the_nodes_and_never_exceed_the_jobs_times() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        for _ in 0..2000 {
            let n = 1 + next(12) as usize;
            let mut jobs: Vec<ReportJob> = (0..n)
                .map(|k| {
                    let (s, d, node, user) = (next(50) as i64, 1 + next(40) as i64, next(3), next(3));
                    job(k as u64, "p", &format!("u{user}"), &format!("n{node}"), (s, s + d), (d as f64, None, 1.0))
                })
                .collect();
            let walls: f64 = jobs.iter().map(|j| (j.end - j.start) as f64).sum();
            let (nodes, _, users, total) = summarize(&mut jobs);
            let by_users: f64 = users.iter().map(|u| u.hours.used).sum();
            let by_nodes: f64 = nodes.iter().map(|n| n.hours.used).sum();
            assert!((by_users - total.used).abs() < 1e-9 && (by_nodes - total.used).abs() < 1e-9);
            assert!(total.used * 3600.0 <= walls + 1e-6);
            assert!(total.saved >= -1e-9);
            for j in &jobs {
                for b in &j.beside {
                    assert!(jobs.iter().find(|o| o.id == *b).unwrap().beside.contains(&j.id));
                }
            }
        }
    }
}
