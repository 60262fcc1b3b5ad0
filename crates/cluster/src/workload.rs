//! From trace records to the jobs the cluster simulator runs, and which
//! measured program each job is.

use serde::Serialize;

use crate::swf::{Record, Swf, SwfError};

/// A job of the cluster: what the trace says about it, plus its program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterJob {
    /// Its record, for the outputs (job number, user, executable, line).
    pub record: Record,
    /// Seconds from the trace's first submission.
    pub submit: f64,
    /// Run time alone: the trace's run time, seconds.
    pub run: f64,
    /// What the scheduler believes the run time is: the requested time when
    /// the trace has one (and it covers the run), else the run time itself.
    pub walltime: f64,
    /// Processors (cores) it uses.
    pub procs: u32,
    /// Index into the programs of the slowdown matrix.
    pub program: usize,
}

/// Which records become jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keep {
    /// Records of status 0.
    pub failed: bool,
    /// Records of status 5 (those that ran; a cancelled job that never ran has no run time).
    pub cancelled: bool,
}

/// What was left out, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub failed: usize,
    pub cancelled: usize,
    /// No run time, or a run time of 0.
    pub no_run_time: usize,
    /// Neither allocated nor requested processors.
    pub no_procs: usize,
}

impl Skipped {
    pub fn total(&self) -> usize {
        self.failed + self.cancelled + self.no_run_time + self.no_procs
    }
}

/// How a job's program is chosen among `programs` measured ones. Every
/// choice hashes (seed, key) with SplitMix64, so the mapping is the same on
/// every machine and one key (one executable, one user) is always one program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// By the executable (application) number; records without one (-1)
    /// fall back to their user, then to their job number.
    Executable,
    /// By the user ID; without one, by the job number.
    User,
    /// Each job on its own, by its job number.
    Random,
}

impl Mapping {
    pub fn parse(word: &str) -> Result<Mapping, String> {
        match word {
            "exe" | "executable" => Ok(Mapping::Executable),
            "user" => Ok(Mapping::User),
            "random" => Ok(Mapping::Random),
            other => Err(format!("mapping `{other}`: expected exe, user or random")),
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Mapping::Executable => "exe",
            Mapping::User => "user",
            Mapping::Random => "random",
        }
    }

    /// The program of `r` among `programs`.
    pub fn program(&self, r: &Record, programs: usize, seed: u64) -> usize {
        // Keys of different kinds are kept apart by a tag in the top bits.
        let key = match self {
            Mapping::Executable if r.executable >= 0 => r.executable as u64,
            Mapping::Executable | Mapping::User if r.user >= 0 => (1 << 62) | r.user as u64,
            _ => (2 << 62) | r.job as u64,
        };
        (splitmix64(seed ^ splitmix64(key)) % programs.max(1) as u64) as usize
    }
}

/// SplitMix64's finaliser: a fixed, well-mixed 64-bit hash.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The jobs of a trace in submit order (ties: file order), submit times
/// shifted so the first is 0, and what was left out. A job wider than the
/// cluster (`max_procs`) is an error naming its line.
pub fn jobs(
    swf: &Swf,
    file: &str,
    keep: Keep,
    max_procs: u64,
    mapping: Mapping,
    programs: usize,
    seed: u64,
) -> Result<(Vec<ClusterJob>, Skipped), SwfError> {
    let mut skipped = Skipped::default();
    let mut out = Vec::with_capacity(swf.records.len());
    for r in &swf.records {
        if r.failed() && !keep.failed {
            skipped.failed += 1;
            continue;
        }
        if r.cancelled() && !keep.cancelled {
            skipped.cancelled += 1;
            continue;
        }
        if r.run <= 0.0 {
            skipped.no_run_time += 1;
            continue;
        }
        let Some(procs) = r.procs() else {
            skipped.no_procs += 1;
            continue;
        };
        if procs > max_procs {
            return Err(SwfError {
                file: file.to_string(),
                line: Some(r.line),
                message: format!("job {} uses {procs} processors; the cluster has {max_procs} (give --nodes and --cores)", r.job),
            });
        }
        // An estimate below the run would make EASY plan with a job that
        // should have been killed; the archive's cleaned logs keep such runs.
        let walltime = if r.requested_time > 0.0 { r.requested_time.max(r.run) } else { r.run };
        out.push(ClusterJob {
            record: r.clone(),
            submit: r.submit,
            run: r.run,
            walltime,
            procs: procs as u32,
            program: mapping.program(r, programs, seed),
        });
    }
    out.sort_by(|a, b| a.submit.total_cmp(&b.submit));
    if let Some(t0) = out.first().map(|j| j.submit) {
        for j in &mut out {
            j.submit -= t0;
        }
    }
    Ok((out, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swf::parse;

    #[test]
    fn one_executable_is_one_program_and_the_seed_moves_it() {
        let s = parse(
            "1 0 -1 10 1 -1 -1 -1 -1 -1 1 3 1 7 -1 -1 -1 -1\n2 5 -1 10 1 -1 -1 -1 -1 -1 1 4 1 7 -1 -1 -1 -1\n\
             3 6 -1 10 1 -1 -1 -1 -1 -1 1 4 1 -1 -1 -1 -1 -1\n",
            "t",
        )
        .unwrap();
        let p = |m: Mapping, i: usize, seed| m.program(&s.records[i], 1000, seed);
        assert_eq!(p(Mapping::Executable, 0, 1), p(Mapping::Executable, 1, 1));
        assert_eq!(p(Mapping::Executable, 2, 1), p(Mapping::User, 1, 1), "no executable: by user");
        assert_eq!(p(Mapping::User, 1, 1), p(Mapping::User, 2, 1));
        assert!((0..20).any(|seed| p(Mapping::Executable, 0, seed) != p(Mapping::Executable, 0, 1)));
        assert!(Mapping::parse("exe").is_ok() && Mapping::parse("app").is_err());
    }

    #[test]
    fn skipped_records_are_counted_and_submits_start_at_zero() {
        let s = parse(
            "1 100 -1 10 2 -1 -1 -1 50 -1 1 3 1 7 -1 -1 -1 -1\n2 90 -1 -1 2 -1 -1 2 -1 -1 5 3 1 7 -1 -1 -1 -1\n\
             3 95 -1 20 -1 -1 -1 -1 -1 -1 0 3 1 7 -1 -1 -1 -1\n4 99 -1 20 -1 -1 -1 -1 -1 -1 1 3 1 7 -1 -1 -1 -1\n",
            "t",
        )
        .unwrap();
        let (j, skip) = jobs(&s, "t", Keep::default(), 8, Mapping::Random, 3, 0).unwrap();
        assert_eq!(j.len(), 1);
        assert_eq!((j[0].submit, j[0].walltime, j[0].procs), (0.0, 50.0, 2));
        assert_eq!(skip, Skipped { failed: 1, cancelled: 1, no_run_time: 0, no_procs: 1 });
        let (j, skip) = jobs(&s, "t", Keep { failed: true, cancelled: true }, 8, Mapping::Random, 3, 0).unwrap();
        assert_eq!((j.len(), skip.no_run_time, skip.no_procs), (1, 1, 2));
        let e = jobs(&s, "t", Keep::default(), 1, Mapping::Random, 3, 0).unwrap_err().to_string();
        assert_eq!(e, "t:1: job 1 uses 2 processors; the cluster has 1 (give --nodes and --cores)");
    }
}
