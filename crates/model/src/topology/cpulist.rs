//! Linux cpulist strings: `0-3,8,10-11`.
//!
//! The format of /sys `*_list` files, `taskset -c`, cgroup `cpuset.cpus` and
//! Slurm's CPU binding, so every place that pins or reports CPUs reads and
//! writes it through these two functions.

use std::fmt;

/// Largest CPU id a cpulist may name. Linux's NR_CPUS tops out at 8192 on
/// common architectures; the margin keeps real lists valid while stopping a
/// typo like `0-4000000000` from allocating gigabytes.
pub const MAX_CPU_ID: u32 = 65_535;

/// A cpulist that could not be parsed: the input, the 1-based column of the
/// offending element, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpulistError {
    pub input: String,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for CpulistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 60;
        let input = self.input.trim_end();
        let shown: String = input.chars().take(SHOWN).collect();
        let ellipsis = if input.chars().count() > SHOWN {
            "..."
        } else {
            ""
        };
        write!(
            f,
            "bad cpulist `{shown}{ellipsis}` at column {}: {}; expected CPU ids and ranges like `0-3,8,10-11`",
            self.column, self.message
        )
    }
}

impl std::error::Error for CpulistError {}

/// Parses a Linux cpulist into sorted, de-duplicated CPU ids.
///
/// Accepts what the kernel prints and accepts (`bitmap_parselist`): single
/// ids, ranges `a-b`, and strided ranges `a-b:used/group` (`0-15:2/4` is
/// 0,1,4,5,8,9,12,13). Surrounding whitespace, including the newline of a
/// /sys file, is ignored; an empty list is valid and means no CPUs (a
/// memory-only NUMA node's `cpulist`).
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, CpulistError> {
    let lead = s.len() - s.trim_start().len();
    let body = s.trim();
    let mut cpus = Vec::new();
    if body.is_empty() {
        return Ok(cpus);
    }
    let mut offset = lead;
    for elem in body.split(',') {
        let column = s[..offset].chars().count() + 1;
        let err = |message: String| CpulistError {
            input: s.to_string(),
            column,
            message,
        };
        parse_element(elem, &mut cpus).map_err(err)?;
        offset += elem.len() + 1;
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn parse_element(elem: &str, out: &mut Vec<u32>) -> Result<(), String> {
    let elem = elem.trim();
    if elem.is_empty() {
        return Err("empty element (two commas in a row, or a trailing comma)".into());
    }
    let (range, stride) = match elem.split_once(':') {
        Some((r, s)) => (r, Some(s)),
        None => (elem, None),
    };
    let (lo, hi) = match range.split_once('-') {
        Some((a, b)) => (cpu_id(a)?, cpu_id(b)?),
        None => {
            if stride.is_some() {
                return Err(format!(
                    "`{elem}`: a stride `:used/group` needs a range before it"
                ));
            }
            let id = cpu_id(range)?;
            (id, id)
        }
    };
    if lo > hi {
        return Err(format!("range `{range}` runs backwards"));
    }
    let (used, group) = match stride {
        None => (1, 1),
        Some(st) => {
            let (u, g) = st
                .split_once('/')
                .ok_or_else(|| format!("stride `{st}` is not `used/group`"))?;
            let used = small_number(u, "used")?;
            let group = small_number(g, "group")?;
            if used == 0 || group == 0 || used > group {
                return Err(format!("stride `{st}` needs 1 <= used <= group"));
            }
            (used, group)
        }
    };
    for id in lo..=hi {
        if (id - lo) % group < used {
            out.push(id);
        }
    }
    Ok(())
}

fn cpu_id(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("missing CPU id".into());
    }
    if !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{t}` is not a CPU id (a non-negative integer)"));
    }
    match t.parse::<u64>() {
        Ok(v) if v <= MAX_CPU_ID as u64 => Ok(v as u32),
        _ => Err(format!("CPU id {t} is larger than {MAX_CPU_ID}")),
    }
}

fn small_number(text: &str, what: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`{t}` is not a number (the {what} part of a stride)"
        ));
    }
    t.parse::<u32>()
        .map_err(|_| format!("{what} `{t}` is too large"))
}

/// Formats CPU ids as a Linux cpulist, with runs collapsed into ranges
/// (`[0,1,2,3,8]` gives `0-3,8`). The input need not be sorted or unique.
/// No CPUs give the empty string, as the kernel prints it.
pub fn format_cpulist(cpus: &[u32]) -> String {
    let ids: Vec<i64> = cpus.iter().map(|&c| i64::from(c)).collect();
    format_ranges(&ids, ",")
}

/// Ids with runs collapsed into ranges, joined by `sep`: `[1, 2, 3, 7, 9,
/// 10]` with `", "` gives `1-3, 7, 9-10`. Sorted and deduplicated first.
/// Shared by cpulists, Batsim's interval sets and lists of campaigns.
pub fn format_ranges(ids: &[i64], sep: &str) -> String {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if j == i { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    parts.join(sep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_the_kernel_prints() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("5").unwrap(), vec![5]);
        assert_eq!(parse_cpulist("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpulist("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(
            parse_cpulist("0-15:2/4").unwrap(),
            vec![0, 1, 4, 5, 8, 9, 12, 13]
        );
        assert_eq!(parse_cpulist("3,1,1-2").unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn errors_name_the_column_and_the_problem() {
        let e = parse_cpulist("0-3,x,5").unwrap_err();
        assert_eq!(e.column, 5);
        assert!(e.to_string().contains("`x` is not a CPU id"), "{e}");
        let e = parse_cpulist("4-2").unwrap_err();
        assert!(e.to_string().contains("runs backwards"), "{e}");
        let e = parse_cpulist("0,,1").unwrap_err();
        assert_eq!(e.column, 3);
        assert!(parse_cpulist("0-")
            .unwrap_err()
            .to_string()
            .contains("missing CPU id"));
        assert!(parse_cpulist("-1")
            .unwrap_err()
            .to_string()
            .contains("missing CPU id"));
        assert!(parse_cpulist("0-4000000000")
            .unwrap_err()
            .to_string()
            .contains("larger than"));
        assert!(parse_cpulist("0-7:3/2")
            .unwrap_err()
            .to_string()
            .contains("used <= group"));
        assert!(parse_cpulist("4:1/2")
            .unwrap_err()
            .to_string()
            .contains("needs a range"));
    }

    #[test]
    fn formats_runs_as_ranges() {
        assert_eq!(format_cpulist(&[8, 0, 1, 2, 3, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpulist(&[0, 1]), "0-1");
        assert_eq!(format_cpulist(&[]), "");
        assert_eq!(format_cpulist(&[4, 4]), "4");
    }
}
