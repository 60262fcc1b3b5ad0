//! The keys of one `[[jobs]]` (or `[[jobs.variants]]`) table, each read
//! and checked on its own: names, amounts, environment, output, command,
//! dependencies.

use super::*;

impl Parser<'_, '_> {
    /// A `[[jobs]]` table, or with `VARIANT_KEYS` and a label a variant's.
    pub(super) fn raw_job(
        &mut self,
        index: usize,
        span: &Range<usize>,
        entries: &[Entry],
        allowed: &'static [&'static str],
        label: Option<String>,
    ) -> RawJob {
        let mut j = RawJob {
            span: span.clone(),
            label: label.clone(),
            index,
            keys: HashMap::new(),
            name: None,
            kernel: None,
            params: Vec::new(),
            work: None,
            seconds: None,
            command: None,
            threads: None,
            cores: None,
            pool: None,
            arrival: None,
            count: None,
            after: Vec::new(),
            timeout: None,
            memory_mib: None,
            pids: None,
            priority: None,
            env: Vec::new(),
            workdir: None,
            stdout: None,
            stderr: None,
            progress: None,
            variant_tables: Vec::new(),
            speed: None,
        };
        let place = match entries.iter().find(|e| e.key == "name") {
            _ if label.is_some() => format!("in {}", label.as_deref().unwrap_or_default()),
            Some(Entry {
                item:
                    Item {
                        value: Value::String(n),
                        ..
                    },
                ..
            }) => format!("in job `{n}`"),
            _ => format!("in job #{}", index + 1),
        };
        for e in entries {
            let Some(&key) = allowed.iter().find(|k| **k == e.key) else {
                self.cx.unknown_key(e, &place, allowed);
                continue;
            };
            j.keys.insert(key, e.key_span.clone());
            match key {
                "name" => j.name = self.cx.name(e, "job"),
                "kernel" => {
                    if let Some(k) = self.cx.string(
                        e,
                        &format!("a kernel name, one of: {}", kernel::kernel_names()),
                    ) {
                        match kernel::kernel(&k.v) {
                            Some(spec) => j.kernel = Some(k.map(|_| spec)),
                            None => {
                                let hint = suggest(&k.v, KERNELS.iter().map(|k| k.name))
                                    .map(|s| format!(" (did you mean `{s}`?)"))
                                    .unwrap_or_default();
                                self.cx.error(
                                    k.val.start,
                                    format!("unknown kernel `{}`{hint}", k.v),
                                    format!("expected one of: {}", kernel::kernel_names()),
                                );
                            }
                        }
                    }
                }
                "params" => match &e.item.value {
                    Value::Table(ps) => {
                        j.params = ps
                            .iter()
                            .map(|p| RawParam {
                                key: p.key.clone(),
                                key_span: p.key_span.clone(),
                                text: match &p.item.value {
                                    Value::String(s) => Some(s.clone()),
                                    Value::Integer(i) => Some(i.to_string()),
                                    // Debug keeps the `.0`, so a float is never taken for an integer.
                                    Value::Float(f) => Some(format!("{f:?}")),
                                    _ => None,
                                },
                                val: p.item.span.clone(),
                                found: p.item.value.describe(),
                            })
                            .collect()
                    }
                    _ => self.cx.wrong_type(
                        e,
                        "a table of kernel parameters, e.g. params = { array_mib = 64 }",
                    ),
                },
                "work" => {
                    j.work = self
                        .cx
                        .integer(e, 1, i64::MAX, "an integer >= 1 (units of kernel work)")
                        .map(|a| a.map(|v| v as u64))
                }
                "seconds" => j.seconds = self.cx.seconds(e, false, "a number of seconds"),
                "command" => j.command = self.command(e),
                "threads" => j.threads = self.cx.cpus(e, "threads"),
                "cores" => j.cores = self.cx.cpus(e, "cores"),
                "pool" => j.pool = self.cx.string(e, "a pool name"),
                "arrival" => {
                    j.arrival = self.cx.seconds(e, true, "seconds after the workload starts")
                }
                "count" => {
                    j.count = self
                        .cx
                        .count_like(e, "an integer >= 1 (how many copies of the job)")
                }
                "after" => j.after = self.after(e),
                "timeout" => j.timeout = self.cx.seconds(e, false, "a number of seconds"),
                "memory_mib" => {
                    let (max, what) = self.memory_bound();
                    j.memory_mib = self
                        .cx
                        .integer(e, 1, max as i64, &format!("an integer from 1 to {max} MiB ({what})"))
                        .map(|a| a.map(|v| v as u64))
                }
                "pids" => {
                    j.pids = self
                        .cx
                        .integer(e, 2, MAX_PIDS as i64, &format!("an integer from 2 to {MAX_PIDS} (processes and threads the job may have at once)"))
                        .map(|a| a.map(|v| v as u64))
                }
                "priority" => {
                    j.priority = self
                        .cx
                        .integer(e, 1, MAX_PRIORITY as i64, &format!("an integer from 1 to {MAX_PRIORITY} (a timeshare turn of p quanta)"))
                        .map(|a| a.map(|v| v as u32))
                }
                "env" => j.env = self.env(e),
                "workdir" => {
                    j.workdir = self.cx.text(e, "a directory path, e.g. workdir = \"run/\"").map(|s| s.v)
                }
                "progress" => j.progress = self.progress(e),
                "output" => {
                    if let Some((out, err)) = self.output(e) {
                        j.stdout = Some(out);
                        j.stderr = err;
                    }
                }
                "variants" => {
                    let tables = self.cx.tables(e);
                    if tables.len() > MAX_VARIANTS {
                        self.cx.error(
                            e.key_span.start,
                            format!("{} variants", tables.len()),
                            format!("expected at most {MAX_VARIANTS} [[jobs.variants]] per job"),
                        );
                    } else {
                        j.variant_tables = tables.into_iter().map(|(s, t)| (s.clone(), t.to_vec())).collect();
                    }
                }
                "speed" => {
                    j.speed = self.cx.number(
                        e,
                        |v| (1.0 / MAX_SPEED..=MAX_SPEED).contains(&v),
                        &format!("a number > 0 (the variant's solo speed over the job's own), from {} to {MAX_SPEED}", 1.0 / MAX_SPEED),
                    )
                }
                _ => unreachable!("every allowed key is handled"),
            }
        }
        j
    }

    /// The most memory a job may ask for, MiB, and what sets it.
    pub(super) fn memory_bound(&self) -> (u64, String) {
        match self.memory_mib {
            Some(m) => (m.min(MAX_MEMORY_MIB), format!("the node's memory, {m} MiB")),
            None => (MAX_MEMORY_MIB, "1 PiB, the most cosched handles".to_string()),
        }
    }

    pub(super) fn env(&mut self, e: &Entry) -> Vec<(String, String)> {
        let expected = "a table of variables, e.g. env = { OMP_SCHEDULE = \"static\" }";
        let Value::Table(vars) = &e.item.value else {
            self.cx.wrong_type(e, expected);
            return Vec::new();
        };
        if vars.len() > MAX_ENV {
            self.cx.error(e.item.span.start, format!("`env` sets {} variables", vars.len()), format!("expected at most {MAX_ENV}"));
            return Vec::new();
        }
        let mut out = Vec::new();
        for v in vars {
            let name_ok = !v.key.is_empty()
                && !v.key.starts_with(|c: char| c.is_ascii_digit())
                && v.key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !name_ok {
                self.cx.error(
                    v.key_span.start,
                    format!("`{}` is not an environment variable name", v.key),
                    "expected letters, digits and `_`, not starting with a digit",
                );
                continue;
            }
            if v.key.starts_with("COSCHED_") {
                self.cx.error(
                    v.key_span.start,
                    format!("`{}` is set by cosched for every job", v.key),
                    "expected a name that does not start with COSCHED_",
                );
                continue;
            }
            let value = match &v.item.value {
                Value::String(s) => s.clone(),
                Value::Integer(i) => i.to_string(),
                Value::Float(f) => f.to_string(),
                Value::Boolean(b) => b.to_string(),
                other => {
                    let msg = format!("`env.{}` is {}", v.key, other.describe());
                    self.cx.error(v.item.span.start, msg, "expected a string or a number");
                    continue;
                }
            };
            if value.len() > MAX_TEXT_BYTES || value.contains('\0') {
                let msg = format!("`env.{}` is longer than {MAX_TEXT_BYTES} bytes or holds a NUL byte", v.key);
                self.cx.error(v.item.span.start, msg, "expected a shorter value");
                continue;
            }
            out.push((v.key.clone(), value));
        }
        out
    }

    /// `output = "PATH"` (stdout and stderr together) or
    /// `output = { stdout = "PATH", stderr = "PATH" }`.
    pub(super) fn output(&mut self, e: &Entry) -> Option<(String, Option<String>)> {
        let expected = "a path, or a table { stdout = \"PATH\", stderr = \"PATH\" }; placeholders {job}, {run}, {repeat}";
        let check = |cx: &mut Checker, s: &str, at: usize| -> bool {
            let mut rest = s;
            while let Some(i) = rest.find('{') {
                let tail = &rest[i..];
                match OUTPUT_PLACEHOLDERS.iter().find(|p| tail.starts_with(**p)) {
                    Some(p) => rest = &tail[p.len()..],
                    None => {
                        let shown: String = tail.chars().take(12).collect();
                        cx.error(at, format!("unknown placeholder at `{shown}` in `output`"), format!("expected {}", OUTPUT_PLACEHOLDERS.join(", ")));
                        return false;
                    }
                }
            }
            true
        };
        match &e.item.value {
            Value::String(_) => {
                let s = self.cx.text(e, expected)?;
                check(self.cx, &s.v, s.val.start).then_some((s.v, None))
            }
            Value::Table(streams) => {
                let (mut out, mut err) = (None, None);
                for t in streams {
                    let slot = match t.key.as_str() {
                        "stdout" => &mut out,
                        "stderr" => &mut err,
                        _ => {
                            self.cx.unknown_key(t, "in `output`", &["stdout", "stderr"]);
                            continue;
                        }
                    };
                    if let Some(s) = self.cx.text(t, expected) {
                        if check(self.cx, &s.v, s.val.start) {
                            *slot = Some(s.v);
                        }
                    }
                }
                match out {
                    Some(o) => Some((o, err)),
                    None => {
                        self.cx.error(e.item.span.start, "`output` names no `stdout`", format!("expected {expected}"));
                        None
                    }
                }
            }
            _ => {
                self.cx.wrong_type(e, expected);
                None
            }
        }
    }

    pub(super) fn command(&mut self, e: &Entry) -> Option<Located<Vec<String>>> {
        let expected = "a command line string, or an array of strings, e.g. \"stress-ng --cpu 1 --cpu-ops 2000\"";
        let argv = match &e.item.value {
            Value::String(s) => match shell_words::split(s) {
                Ok(argv) => argv,
                Err(err) => {
                    self.cx.error(
                        e.item.span.start,
                        format!("cannot split `command` into arguments: {err}"),
                        "expected balanced quotes, or an array of strings",
                    );
                    return None;
                }
            },
            Value::Array(items) => {
                let mut argv = Vec::new();
                for item in items {
                    match &item.value {
                        Value::String(s) => argv.push(s.clone()),
                        other => {
                            self.cx.error(
                                item.span.start,
                                format!("an argument of `command` is {}", other.describe()),
                                "expected every argument to be a string",
                            );
                            return None;
                        }
                    }
                }
                argv
            }
            _ => {
                self.cx.wrong_type(e, expected);
                return None;
            }
        };
        if argv.first().filter(|p| !p.is_empty()).is_none() {
            self.cx.error(
                e.item.span.start,
                "`command` names no program",
                format!("expected {expected}"),
            );
            return None;
        }
        Some(Located::new(argv, e))
    }

    pub(super) fn after(&mut self, e: &Entry) -> Vec<Located<String>> {
        let expected = "an array of job names, e.g. after = [\"prep\"]";
        let Value::Array(items) = &e.item.value else {
            self.cx.wrong_type(e, expected);
            return Vec::new();
        };
        let mut out: Vec<Located<String>> = Vec::new();
        for item in items {
            match &item.value {
                Value::String(s) => {
                    if !out.iter().any(|a| a.v == *s) {
                        out.push(Located {
                            v: s.clone(),
                            key: e.key_span.clone(),
                            val: item.span.clone(),
                        });
                    }
                }
                other => {
                    self.cx.error(
                        item.span.start,
                        format!("an entry of `after` is {}", other.describe()),
                        format!("expected {expected}"),
                    );
                }
            }
        }
        out
    }

    /// `progress`: a regular expression over the job's output lines, or a
    /// table `{ regex = "...", total = N }` or `{ file = "PATH", total = N }`.
    pub(super) fn progress(&mut self, e: &Entry) -> Option<ProgressSource> {
        let expected = "a regular expression whose first capture group is the work done (a named group `total` the whole), \
                        or a table { regex = \"...\" }, { file = \"PATH\" } or { counters = \"instructions\" }, each with an optional total = N";
        let regex = |cx: &mut Checker, s: Located<String>| -> Option<String> {
            match super::super::progress_regex(&s.v) {
                Ok(_) => Some(s.v),
                Err(why) => {
                    cx.error(s.val.start, format!("`progress`: {why}"), format!("expected {expected}"));
                    None
                }
            }
        };
        match &e.item.value {
            Value::String(_) => {
                let s = self.cx.text(e, expected)?;
                Some(ProgressSource::Output { regex: regex(self.cx, s)?, total: None })
            }
            Value::Table(keys) => {
                let (mut pattern, mut file, mut counters, mut total) = (None, None, None, None);
                let mut ok = true;
                for t in keys {
                    match t.key.as_str() {
                        "regex" => pattern = self.cx.text(t, expected).and_then(|s| regex(self.cx, s)),
                        "file" => file = self.cx.text(t, "a path, e.g. file = \"progress.txt\"").map(|s| s.v),
                        "counters" => {
                            let what = "counters = \"instructions\" (instructions retired, the one hardware counter read)";
                            counters = match self.cx.text(t, what) {
                                Some(s) if s.v == "instructions" => Some(()),
                                Some(s) => {
                                    self.cx.error(s.val.start, format!("`progress`: unknown counter `{}`", s.v), format!("expected {what}"));
                                    ok = false;
                                    None
                                }
                                None => None,
                            }
                        }
                        "total" => total = self.cx.number(t, |v| v > 0.0 && v <= 1e18, "a positive number, the job's whole work in the counter's units").map(|n| n.v),
                        _ => {
                            self.cx.unknown_key(t, "in `progress`", &["regex", "file", "counters", "total"]);
                            ok = false;
                        }
                    }
                }
                let named = keys.iter().filter(|t| ["regex", "file", "counters"].contains(&t.key.as_str())).count();
                if named != 1 {
                    self.cx.error(e.item.span.start, "`progress` names none or more than one of `regex`, `file` and `counters`", format!("expected {expected}"));
                    return None;
                }
                if !ok {
                    return None;
                }
                match (pattern, file, counters) {
                    (Some(regex), None, None) => Some(ProgressSource::Output { regex, total }),
                    (None, Some(path), None) => Some(ProgressSource::File { path, total }),
                    (None, None, Some(())) => Some(ProgressSource::Counters { total }),
                    // The one given was wrong, and said so.
                    _ => None,
                }
            }
            _ => {
                self.cx.wrong_type(e, expected);
                None
            }
        }
    }
}
