//! Slurm's host lists (`n[1-3,7],login`) and times (`YYYY-MM-DDTHH:MM:SS`,
//! printed in UTC because cosched runs Slurm's commands with `TZ=UTC`), read
//! and written without a time zone database.

/// Unix seconds of a Slurm time `YYYY-MM-DDTHH:MM:SS` printed in UTC;
/// `None` for `N/A`, `Unknown`, `None` or anything else.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let t: Vec<i64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if d.len() != 3 || t.len() != 3 || !(1..=12).contains(&d[1]) || !(1..=31).contains(&d[2]) {
        return None;
    }
    Some(days_from_civil(d[0], d[1], d[2]) * 86_400 + t[0] * 3600 + t[1] * 60 + t[2])
}

/// `YYYY-MM-DDTHH:MM:SS` in UTC of Unix seconds, as Slurm's commands take times.
pub fn format_time(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm), so no time zone database is needed.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Expands a Slurm host list (`n[1-3,7],login`, `c[01-02]`) into names;
/// empty, `(null)`, `None assigned` and `N/A` are no hosts.
pub fn expand_hostlist(s: &str) -> Result<Vec<String>, String> {
    let s = s.trim();
    if s.is_empty() || s == "(null)" || s == "N/A" || s.starts_with("None") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut depth = 0;
    let mut item = String::new();
    for c in s.chars().chain(std::iter::once(',')) {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            expand_one(&item, &mut out)?;
            item.clear();
        } else {
            item.push(c);
        }
        if depth < 0 {
            return Err(format!("host list `{s}`: `]` without `[`"));
        }
    }
    if depth != 0 {
        return Err(format!("host list `{s}`: unclosed `[`"));
    }
    Ok(out)
}

fn expand_one(item: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = item.find('[') else {
        if !item.is_empty() {
            out.push(item.to_string());
        }
        return Ok(());
    };
    let close = item.find(']').ok_or_else(|| format!("host `{item}`: unclosed `[`"))?;
    let (prefix, ranges, suffix) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    for r in ranges.split(',') {
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        let bad = || format!("host `{item}`: `{r}` is not a number or a range");
        let (lo, hi): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if hi < lo {
            return Err(bad());
        }
        for n in lo..=hi {
            // Zero-padded ranges (`c[01-10]`) keep their width.
            out.push(format!("{prefix}{n:0width$}{suffix}", width = a.len()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_expand_ranges_lists_and_padding() {
        assert_eq!(expand_hostlist("n[1-3,7],login").unwrap(), ["n1", "n2", "n3", "n7", "login"]);
        assert_eq!(expand_hostlist("c[08-10]").unwrap(), ["c08", "c09", "c10"]);
        assert_eq!(expand_hostlist("(null)").unwrap(), Vec::<String>::new());
        assert!(expand_hostlist("n[1-").is_err());
        assert!(expand_hostlist("n[3-1]").is_err());
    }

    #[test]
    fn times_are_unix_seconds_and_placeholders_are_none() {
        assert_eq!(parse_time("1970-01-01T00:00:00"), Some(0));
        assert_eq!(parse_time("2000-03-01T00:00:01"), Some(951_868_801));
        for s in ["N/A", "Unknown", "None", "2026-13-01T00:00:00", ""] {
            assert_eq!(parse_time(s), None, "{s}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_formatted_time_parses_back(t in 0i64..4_000_000_000) {
            proptest::prop_assert_eq!(parse_time(&format_time(t)), Some(t));
        }

        #[test]
        fn a_written_range_expands_to_every_number_in_it(lo in 0u64..500, len in 0u64..20) {
            let hi = lo + len;
            let hosts = expand_hostlist(&format!("n[{lo}-{hi}]")).unwrap();
            proptest::prop_assert_eq!(hosts.len() as u64, len + 1);
            proptest::prop_assert_eq!(&hosts[0], &format!("n{lo}"));
        }

        #[test]
        fn times_of_consecutive_days_are_a_day_apart(y in 1971i64..2100, m in 1i64..13, d in 1i64..28) {
            let a = parse_time(&format!("{y:04}-{m:02}-{d:02}T00:00:00")).unwrap();
            let b = parse_time(&format!("{y:04}-{m:02}-{:02}T00:00:00", d + 1)).unwrap();
            proptest::prop_assert_eq!(b - a, 86_400);
        }
    }
}
