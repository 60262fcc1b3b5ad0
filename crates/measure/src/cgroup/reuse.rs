//! A job's cgroup handed on to the next job of the run (issue 42): on this
//! node making a job's four v1 groups (each level's cpuset checked, its
//! CPUs and limits written) and removing them again was a fifth of what
//! the runner spent on a job of `true`; renaming an empty group to the
//! next job's name and writing only the limits that differ keeps every
//! guarantee a new group gives (a group of its own under the job's name,
//! its CPUs, memory nodes and process cap, its own OOM count) for a tenth
//! of that.
//!
//! Only v1 renames a group (cgroup v2 has no rename); only a group without
//! a memory limit, for a job without one, is handed on (the page cache the
//! last job left charged to the group would count against a new limit);
//! anything else is made anew, as before.

use std::fs;

use super::{cpulist, group_name, read_file, write_file, JobCgroup, Limits};

impl JobCgroup {
    /// Whether no process is left in the group: it may then be handed on.
    pub fn is_empty(&self) -> bool {
        self.procs().is_empty()
    }

    /// Whether the group bears job `job`'s name.
    pub fn named(&self, job: &str) -> bool {
        let name = group_name(job);
        self.dirs.iter().all(|(_, d)| d.file_name().is_some_and(|n| n == name.as_str()))
    }

    /// Hands this group, found empty ([`JobCgroup::is_empty`]), to job `job`
    /// with `limits`: each directory renamed to the job's name, the CPUs,
    /// memory nodes and process cap written where they differ from the last
    /// job's, and the OOM count taken from here on. `false` when it cannot
    /// be (a memory limit, a v2 group, a failed rename or write): the caller
    /// removes the group and makes a new one.
    pub fn reuse(&mut self, job: &str, limits: &Limits) -> bool {
        if self.version != 1 || self.limits.memory_bytes.is_some() || limits.memory_bytes.is_some() {
            return false;
        }
        let name = group_name(job);
        for (_, d) in &mut self.dirs {
            let to = d.with_file_name(&name);
            if *d != to {
                if fs::rename(&*d, &to).is_err() {
                    return false;
                }
                *d = to;
            }
        }
        let (was, now) = (&self.limits, limits);
        // A new group takes its parent's CPUs or memory nodes where the job
        // names none: handed on, it would keep the last job's.
        if (now.cpus.is_empty() || now.mems.is_empty()) && (now.cpus != was.cpus || now.mems != was.mems) {
            return false;
        }
        let set = |ctrl: &str, file: &str, value: String| match self.dirs.iter().find(|(k, _)| *k == ctrl) {
            Some((_, d)) => write_file(&d.join(file), &value).is_ok(),
            None => true,
        };
        // A cpuset never empty: new CPUs and memory nodes are written whole.
        if !now.cpus.is_empty() && now.cpus != was.cpus && !set("cpuset", "cpuset.cpus", cpulist(&now.cpus)) {
            return false;
        }
        if !now.mems.is_empty() && now.mems != was.mems && !set("cpuset", "cpuset.mems", cpulist(&now.mems)) {
            return false;
        }
        if now.pids_max != was.pids_max && !set("pids", "pids.max", now.pids_max.map_or("max".into(), |n| n.to_string())) {
            return false;
        }
        // Frozen only while a job was suspended, and thawed as it ended: a
        // group handed on must run its job.
        if let Some((_, d)) = self.dirs.iter().find(|(k, _)| *k == "freezer") {
            if read_file(&d.join("freezer.state")).map_or(true, |s| s.trim() != "THAWED") {
                return false;
            }
        }
        self.limits = now.clone();
        self.oom_base = self.oom_total();
        true
    }
}
