//! The Standard Workload Format of the Parallel Workloads Archive
//! (<https://www.cs.huji.ac.il/labs/parallel/workload/swf.html>): one job per
//! line, 18 whitespace-separated numeric fields, `-1` for unknown; header
//! lines start with `;` and carry `Key: value` metadata such as `MaxNodes`
//! and `MaxProcs`.
//!
//! The reader keeps every field of every record and every header line, and
//! refuses a malformed record with the file, the line and the field. Files
//! starting with the gzip magic bytes are inflated first, so archive logs
//! (`*.swf.gz`) are read as they are downloaded.
//!
//! What is read is bounded ([`MAX_FILE_BYTES`] of file, [`MAX_TEXT_BYTES`]
//! of text once inflated; [`LIMIT_ENV`] raises both), so a gzip bomb or a
//! device named as the trace is refused instead of taking the memory: the
//! archive's largest logs are about 150 MB of text.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

/// The 18 fields in file order, as the archive names them.
pub const FIELDS: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time used",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user ID",
    "group ID",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
];

/// One job record. Times are seconds; `-1` (or any negative value) means
/// unknown, as in the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// 1-based line of the file the record came from.
    pub line: usize,
    pub job: i64,
    pub submit: f64,
    pub wait: f64,
    pub run: f64,
    pub allocated_procs: i64,
    pub avg_cpu: f64,
    pub used_memory: f64,
    pub requested_procs: i64,
    pub requested_time: f64,
    pub requested_memory: f64,
    /// 1 completed, 0 failed, 5 cancelled, 2-4 partial executions, -1 unknown.
    pub status: i64,
    pub user: i64,
    pub group: i64,
    pub executable: i64,
    pub queue: i64,
    pub partition: i64,
    pub preceding: i64,
    pub think: f64,
}

impl Record {
    /// Processors the job used: allocated if known, else requested.
    pub fn procs(&self) -> Option<u64> {
        [self.allocated_procs, self.requested_procs].into_iter().find(|&p| p > 0).map(|p| p as u64)
    }

    pub fn failed(&self) -> bool {
        self.status == 0
    }

    pub fn cancelled(&self) -> bool {
        self.status == 5
    }
}

/// Header metadata: every `; Key: value` line in order, with the keys a
/// simulation needs parsed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Header {
    pub entries: Vec<(String, String)>,
    pub max_nodes: Option<u64>,
    pub max_procs: Option<u64>,
    pub unix_start_time: Option<i64>,
}

impl Header {
    /// The first value of `key` (case-insensitive), trimmed.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.as_str())
    }
}

/// A parsed trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Swf {
    pub header: Header,
    pub records: Vec<Record>,
}

/// A trace that could not be read, naming where.
#[derive(Debug, Clone, PartialEq)]
pub struct SwfError {
    pub file: String,
    /// 1-based line; `None` for errors about the whole file.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for SwfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for SwfError {}

/// The most of a trace file read, compressed or not: 256 MiB.
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// The most text a trace may hold, once inflated: 1 GiB, about 10 million
/// records (the archive's largest logs are about 150 MB).
pub const MAX_TEXT_BYTES: u64 = 1 << 30;
/// An environment variable of MiB that replaces both bounds, for a bigger
/// trace on a machine with the memory for it.
pub const LIMIT_ENV: &str = "COSCHED_SWF_MAX_MIB";

/// Reads `path`, inflating it when it is gzip (by its magic bytes, not its
/// name), within the bounds: [`MAX_FILE_BYTES`] and [`MAX_TEXT_BYTES`], or
/// [`LIMIT_ENV`] MiB for both when it is set.
pub fn read(path: &Path) -> Result<Swf, SwfError> {
    let (file_max, text_max) = match std::env::var(LIMIT_ENV) {
        Err(_) => (MAX_FILE_BYTES, MAX_TEXT_BYTES),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(mib) if (1..=1 << 24).contains(&mib) => (mib << 20, mib << 20),
            _ => {
                return Err(SwfError {
                    file: path.display().to_string(),
                    line: None,
                    message: format!("{LIMIT_ENV}={v}: expected a whole number of MiB from 1 to {}", 1u64 << 24),
                })
            }
        },
    };
    read_bounded(path, file_max, text_max)
}

/// As [`read`], with at most `file_max` bytes of file and `text_max` of text.
pub fn read_bounded(path: &Path, file_max: u64, text_max: u64) -> Result<Swf, SwfError> {
    let file = path.display().to_string();
    let whole = |message: String| SwfError { file: file.clone(), line: None, message };
    let mib = |b: u64| if b >= 1 << 20 { format!("{} MiB", b >> 20) } else { format!("{b} bytes") };
    let raise = format!("{LIMIT_ENV}=MiB raises the bound");
    let f = std::fs::File::open(path).map_err(|e| whole(format!("cannot read: {e}")))?;
    let too_big = || whole(format!("over {} of file; expected a trace of at most that ({raise})", mib(file_max)));
    if f.metadata().is_ok_and(|m| m.is_file() && m.len() > file_max) {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    // Bounded again: a device or a FIFO has no length to check first.
    f.take(file_max + 1).read_to_end(&mut bytes).map_err(|e| whole(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > file_max {
        return Err(too_big());
    }
    let too_much = |what: &str| whole(format!("{what} over {} of text; expected a trace of at most that ({raise})", mib(text_max)));
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .take(text_max + 1)
            .read_to_end(&mut out)
            .map_err(|e| whole(format!("not a readable gzip file: {e}")))?;
        if out.len() as u64 > text_max {
            return Err(too_much("inflates to"));
        }
        out
    } else if bytes.len() as u64 > text_max {
        return Err(too_much("holds"));
    } else {
        bytes
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        SwfError { file: file.clone(), line: Some(line), message: "not UTF-8 text; an SWF file is ASCII".into() }
    })?;
    parse(&text, &file)
}

/// Parses SWF text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Swf, SwfError> {
    let mut swf = Swf::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |message: String| SwfError { file: file.to_string(), line: Some(line), message };
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix(';') {
            if let Some((k, v)) = comment.split_once(':') {
                let (k, v) = (k.trim(), v.trim());
                // A key is one word (`MaxNodes`, `UnixStartTime`); notes and
                // continuation lines with colons inside are kept as they are.
                if !k.is_empty() && !k.contains(char::is_whitespace) {
                    let number = |what: &str| -> Result<u64, SwfError> {
                        v.split_whitespace()
                            .next()
                            .and_then(|w| w.parse::<u64>().ok())
                            .ok_or_else(|| err(format!("header `{k}`: `{v}` is not a whole number of {what}")))
                    };
                    match k.to_ascii_lowercase().as_str() {
                        "maxnodes" => swf.header.max_nodes = Some(number("nodes")?),
                        "maxprocs" => swf.header.max_procs = Some(number("processors")?),
                        "unixstarttime" => {
                            swf.header.unix_start_time = v.split_whitespace().next().and_then(|w| w.parse().ok());
                        }
                        _ => {}
                    }
                    swf.header.entries.push((k.to_string(), v.to_string()));
                }
            }
            continue;
        }
        let tokens: Vec<&str> = trimmed.split_whitespace().collect();
        if tokens.len() != FIELDS.len() {
            return Err(err(format!(
                "{} fields, expected {} (job number, submit time, wait time, run time, ...; -1 for unknown)",
                tokens.len(),
                FIELDS.len()
            )));
        }
        let mut v = [0.0f64; 18];
        for (k, t) in tokens.iter().enumerate() {
            let x: f64 = t.parse().map_err(|_| err(format!("field {} ({}): `{t}` is not a number", k + 1, FIELDS[k])))?;
            if !x.is_finite() {
                return Err(err(format!("field {} ({}): `{t}` is not a finite number", k + 1, FIELDS[k])));
            }
            v[k] = x;
        }
        let int = |k: usize| -> Result<i64, SwfError> {
            let x = v[k];
            if x.fract() != 0.0 || x.abs() > 9.0e15 {
                return Err(err(format!("field {} ({}): `{}` is not a whole number", k + 1, FIELDS[k], tokens[k])));
            }
            Ok(x as i64)
        };
        let rec = Record {
            line,
            job: int(0)?,
            submit: v[1],
            wait: v[2],
            run: v[3],
            allocated_procs: int(4)?,
            avg_cpu: v[5],
            used_memory: v[6],
            requested_procs: int(7)?,
            requested_time: v[8],
            requested_memory: v[9],
            status: int(10)?,
            user: int(11)?,
            group: int(12)?,
            executable: int(13)?,
            queue: int(14)?,
            partition: int(15)?,
            preceding: int(16)?,
            think: v[17],
        };
        if rec.submit < 0.0 {
            return Err(err(format!("field 2 (submit time): {} is negative; every record needs its submit time", tokens[1])));
        }
        swf.records.push(rec);
    }
    Ok(swf)
}

/// One line of SWF for a record (integers where the format has them).
pub fn format_record(r: &Record) -> String {
    let t = |x: f64| if x.fract() == 0.0 { format!("{}", x as i64) } else { format!("{x:.2}") };
    format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
        r.job,
        t(r.submit),
        t(r.wait),
        t(r.run),
        r.allocated_procs,
        t(r.avg_cpu),
        t(r.used_memory),
        r.requested_procs,
        t(r.requested_time),
        t(r.requested_memory),
        r.status,
        r.user,
        r.group,
        r.executable,
        r.queue,
        r.partition,
        r.preceding,
        t(r.think)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "; Version: 2.2\n; MaxNodes: 128\n; MaxProcs: 256\n; Note: a note: with colons\n\
                       1 0 5 100 4 -1 -1 4 200 -1 1 3 1 7 -1 -1 -1 -1\n\
                       \n   2 10 -1 50.5 -1 -1 -1 2 -1 -1 5 4 1 -1 -1 -1 -1 -1\n";

    #[test]
    fn every_field_and_the_header_are_read() {
        let s = parse(TWO, "t.swf").unwrap();
        assert_eq!(s.header.max_nodes, Some(128));
        assert_eq!(s.header.max_procs, Some(256));
        assert_eq!(s.header.get("version"), Some("2.2"));
        assert_eq!(s.records.len(), 2);
        let a = &s.records[0];
        assert_eq!((a.line, a.job, a.submit, a.wait, a.run, a.allocated_procs), (5, 1, 0.0, 5.0, 100.0, 4));
        assert_eq!((a.requested_procs, a.requested_time, a.status, a.user, a.executable), (4, 200.0, 1, 3, 7));
        let b = &s.records[1];
        assert_eq!((b.line, b.run, b.procs(), b.cancelled()), (7, 50.5, Some(2), true));
    }

    #[test]
    fn malformed_records_name_the_file_line_and_field() {
        let e = parse("; x\n1 0 5 abc 4 -1 -1 4 200 -1 1 3 1 7 -1 -1 -1 -1\n", "w.swf").unwrap_err().to_string();
        assert_eq!(e, "w.swf:2: field 4 (run time): `abc` is not a number");
        let e = parse("1 0 5 10 4\n", "w.swf").unwrap_err().to_string();
        assert!(e.starts_with("w.swf:1: 5 fields, expected 18"), "{e}");
        let e = parse("1 0 5 10 4.5 -1 -1 4 200 -1 1 3 1 7 -1 -1 -1 -1\n", "w.swf").unwrap_err().to_string();
        assert_eq!(e, "w.swf:1: field 5 (allocated processors): `4.5` is not a whole number");
        let e = parse("; MaxNodes: many\n", "w.swf").unwrap_err().to_string();
        assert!(e.starts_with("w.swf:1: header `MaxNodes`"), "{e}");
        let e = parse("1 -3 5 10 4 -1 -1 4 200 -1 1 3 1 7 -1 -1 -1 -1\n", "w.swf").unwrap_err().to_string();
        assert!(e.starts_with("w.swf:1: field 2 (submit time)"), "{e}");
    }

    #[test]
    fn a_formatted_record_reads_back_equal() {
        let s = parse(TWO, "t.swf").unwrap();
        for r in &s.records {
            let back = parse(&format_record(r), "t.swf").unwrap().records.remove(0);
            assert_eq!(Record { line: r.line, ..back }, *r);
        }
    }

    #[test]
    fn gzip_is_recognised_by_its_magic_bytes() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("cosched-swf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.log");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(TWO.as_bytes()).unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        assert_eq!(read(&path).unwrap(), parse(TWO, &path.display().to_string()).unwrap());
        std::fs::write(&path, [0x1f, 0x8b, 0, 1, 2]).unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("not a readable gzip file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A gzip of `members` copies of one member inflating to `mib` MiB of
    /// zeros: a bomb of members * mib MiB in about a thousandth of that.
    fn bomb(mib: usize, members: usize) -> Vec<u8> {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&vec![0u8; mib << 20]).unwrap();
        gz.finish().unwrap().repeat(members)
    }

    #[test]
    fn a_gzip_bomb_is_refused_at_the_inflated_bound_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("cosched-swf-bomb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bomb.swf.gz");
        std::fs::write(&path, bomb(1, 4)).unwrap();
        let e = read_bounded(&path, MAX_FILE_BYTES, 3 << 20).unwrap_err().to_string();
        assert_eq!(e, format!("{}: inflates to over 3 MiB of text; expected a trace of at most that (COSCHED_SWF_MAX_MIB=MiB raises the bound)", path.display()));
        // At the bound exactly it inflates (and then is no SWF: zeros are no text).
        let e = read_bounded(&path, MAX_FILE_BYTES, 4 << 20).unwrap_err().to_string();
        assert!(!e.contains("inflates to"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_over_the_bound_is_refused_before_it_is_read() {
        let dir = std::env::temp_dir().join(format!("cosched-swf-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.swf");
        // Sparse: 3 GiB that take no disk, refused by its length.
        std::fs::File::create(&path).unwrap().set_len(3 << 30).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert_eq!(e, format!("{}: over 256 MiB of file; expected a trace of at most that (COSCHED_SWF_MAX_MIB=MiB raises the bound)", path.display()));
        // A device has no length: its read stops at the bound.
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20, 1 << 20).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero: over 1 MiB of file"), "{e}");
        // Plain text past the text bound.
        std::fs::write(&path, TWO.repeat(100)).unwrap();
        let e = read_bounded(&path, 1 << 20, 1000).unwrap_err().to_string();
        assert!(e.contains("holds over 1000 bytes of text"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
