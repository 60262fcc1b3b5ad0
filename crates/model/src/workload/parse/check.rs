//! Jobs checked as a whole once every key is read: their pool, program and
//! amount, memory, variants, and the dependency graph (no cycles).

use super::*;

impl Parser<'_, '_> {
    pub(super) fn resolve_jobs(&mut self, raws: &[RawJob], pools: &[Pool]) -> Vec<Job> {
        // Names first: later checks refer to jobs by name.
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for (i, j) in raws.iter().enumerate() {
            match &j.name {
                Some(n) => {
                    if let Some(&first) = by_name.get(&n.v) {
                        let msg = format!(
                            "duplicate job name `{}`; the first is declared at line {}",
                            n.v,
                            self.cx.line(raws[first].span.start)
                        );
                        self.cx.error(n.val.start, msg, "expected unique job names");
                    } else {
                        by_name.insert(n.v.clone(), i);
                    }
                }
                None if !j.keys.contains_key("name") => {
                    self.cx.error(
                        j.span.start,
                        format!("job #{} has no `name`", i + 1),
                        "expected `name = \"...\"` in every [[jobs]] table",
                    );
                }
                None => {}
            }
        }

        let mut checked: Vec<Option<Checked>> = raws.iter().map(|j| self.check_job(j, pools)).collect();
        for (j, c) in raws.iter().zip(checked.iter_mut()) {
            // A job that is wrong already said so; its variants would
            // repeat what they take from it.
            if let Some(c) = c {
                let vs = self.variants(j, c, pools);
                c.variants = vs;
            }
        }

        let known: Vec<&str> = raws
            .iter()
            .enumerate()
            .filter_map(|(i, j)| {
                j.name
                    .as_ref()
                    .filter(|n| by_name.get(&n.v) == Some(&i))
                    .map(|n| n.v.as_str())
            })
            .collect();
        for j in raws {
            for a in &j.after {
                if !by_name.contains_key(&a.v) {
                    let hint = suggest(&a.v, known.iter().copied())
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    let msg = format!("{} waits for unknown job `{}`{hint}", j.label(), a.v);
                    self.cx.error(
                        a.val.start,
                        msg,
                        format!("expected names of jobs in this file: {}", list(&known)),
                    );
                }
            }
        }
        self.check_cycles(raws, &by_name);

        // Bounded before expansion: `count = 100000000` would otherwise
        // build every copy before anything is said.
        let mut total: u64 = 0;
        for j in raws {
            total += u64::from(j.count.as_ref().map_or(1, |c| c.v));
            if total > MAX_JOBS {
                let at = j.count.as_ref().map_or(j.span.start, |c| c.val.start);
                self.cx.error(
                    at,
                    format!("{} takes the workload to {total} jobs or more", j.label()),
                    format!("expected at most {MAX_JOBS} jobs in all, copies made by `count` included"),
                );
                break;
            }
        }

        if !self.cx.diags.is_empty() {
            return Vec::new();
        }
        expand(raws, checked, &by_name, self.cx)
    }

    pub(super) fn check_job(&mut self, j: &RawJob, pools: &[Pool]) -> Option<Checked> {
        let label = j.label();
        let kernel_key = j.keys.get("kernel");
        let command_key = j.keys.get("command");

        // The program may be wrong while pool and cores are still worth checking.
        let program = match (kernel_key, command_key) {
            (Some(k), Some(c)) => {
                let later = if k.start > c.start { k } else { c };
                self.cx.error(later.start, format!("{label} has both `kernel` and `command`"), "expected exactly one of them: a kernel of the catalogue or an external command");
                None
            }
            (None, None) => {
                self.cx.error(
                    j.span.start,
                    format!("{label} has neither `kernel` nor `command`"),
                    format!(
                        "expected `kernel = \"NAME\"` (one of: {}) or `command = \"...\"`",
                        kernel::kernel_names()
                    ),
                );
                None
            }
            (Some(_), None) => j
                .kernel
                .as_ref()
                .and_then(|spec| self.kernel_program(j, spec.v)),
            (None, Some(_)) => {
                for key in ["params", "work", "seconds"] {
                    if let Some(at) = j.keys.get(key) {
                        self.cx.error(at.start, format!("`{key}` applies only to kernel jobs, and {label} runs a command"), format!("expected no `{key}`: a command's work is fixed by the command itself"));
                    }
                }
                let threads = j.threads.as_ref().map_or(1, |t| t.v);
                j.command.as_ref().map(|c| {
                    (
                        Program::Command { argv: c.v.clone() },
                        Amount::Intrinsic,
                        threads,
                    )
                })
            }
        };
        let threads = j.threads.as_ref().map_or(1, |t| t.v);
        let width = program.as_ref().map_or(threads, |p| p.2);

        let pool = match &j.pool {
            Some(p) => {
                match pools.iter().find(|q| q.name == p.v) {
                    Some(q) => q,
                    None => {
                        let hint = suggest(&p.v, pools.iter().map(|q| q.name.as_str()))
                            .map(|s| format!(" (did you mean `{s}`?)"))
                            .unwrap_or_default();
                        let names = list(pools.iter().map(|q| q.name.as_str()));
                        self.cx.error(p.val.start, format!("unknown pool `{}`{hint}", p.v), format!("expected one of the pools: {names} (declare others under [[pools]])"));
                        return None;
                    }
                }
            }
            None => pools.iter().find(|q| q.kind == PoolKind::Cpu)?,
        };

        let cores = match &j.cores {
            Some(c) if c.v < width => {
                let what = if width == threads {
                    format!("{width} threads")
                } else {
                    format!("{width} threads in its widest phase")
                };
                let got = if c.v == 1 {
                    "1 core".to_string()
                } else {
                    format!("{} cores", c.v)
                };
                self.cx.error(c.val.start, format!("{label} gets {got} but runs {what}"), format!("expected cores >= {width}: each thread of a pinned job needs a core of its own"));
                return None;
            }
            Some(c) => c.v,
            None => width,
        };
        if let Some(pc) = pool.cores {
            if cores > pc {
                let at = j
                    .cores
                    .as_ref()
                    .map(|c| c.val.start)
                    .or_else(|| j.threads.as_ref().map(|t| t.val.start))
                    .or_else(|| {
                        j.params
                            .iter()
                            .find(|p| p.key == "phases")
                            .map(|p| p.val.start)
                    })
                    .unwrap_or(j.span.start);
                let unit = if matches!(pool.kind, PoolKind::Accelerator { .. }) {
                    "slots"
                } else {
                    "cores"
                };
                self.cx.error(
                    at,
                    format!(
                        "{label} needs {cores} {unit} but pool `{}` has {pc}",
                        pool.name
                    ),
                    format!("expected at most {pc}: fewer threads or cores, or a bigger pool"),
                );
                return None;
            }
        }
        if let Some(p) = &j.pids {
            if p.v <= u64::from(width) {
                self.cx.error(
                    p.val.start,
                    format!("{label} may have {} processes and threads at once but runs {width} threads", p.v),
                    format!("expected pids >= {}: each thread counts, and the process itself", width + 1),
                );
                return None;
            }
        }
        let (program, amount, _) = program?;
        Some(Checked {
            program,
            amount,
            threads,
            cores,
            pool: pool.name.clone(),
            variants: Vec::new(),
        })
    }

    /// The job's `[[jobs.variants]]`, each checked as a job is, with what
    /// it does not say taken from the job.
    pub(super) fn variants(&mut self, j: &RawJob, own: &Checked, pools: &[Pool]) -> Vec<Variant> {
        let mut out: Vec<Variant> = Vec::new();
        let mut names: Vec<(String, Option<usize>)> = vec![(variant_name(&own.pool, own.cores), None)];
        for (k, (span, entries)) in j.variant_tables.iter().enumerate() {
            let label = format!("variant {} of {}", k + 2, j.label());
            let mut v = self.raw_job(j.index, span, entries, VARIANT_KEYS, Some(label.clone()));
            let own_program = v.keys.contains_key("kernel") || v.keys.contains_key("command");
            if !own_program {
                // The job's program: its kernel or command, and what sizes it,
                // unless the variant changes that.
                v.kernel = j.kernel.clone();
                v.command = j.command.clone();
                for key in ["kernel", "command"] {
                    if let Some(s) = j.keys.get(key) {
                        v.keys.insert(key, s.clone());
                    }
                }
                if !v.keys.contains_key("params") {
                    v.params = j.params.clone();
                }
                if !v.keys.contains_key("work") && !v.keys.contains_key("seconds") {
                    v.work = j.work.clone();
                    v.seconds = j.seconds.clone();
                    for key in ["work", "seconds"] {
                        if let Some(s) = j.keys.get(key) {
                            v.keys.insert(key, s.clone());
                        }
                    }
                }
                if !v.keys.contains_key("threads") {
                    v.threads = j.threads.clone();
                }
            }
            if !v.keys.contains_key("pool") {
                v.pool = j.pool.clone();
            }
            if let (Some(sp), Some(se)) = (&v.speed, entries.iter().find(|e| e.key == "seconds")) {
                let at = sp.key.start.max(se.key_span.start);
                self.cx.error(at, format!("{label} says both `speed` and `seconds`"), "expected one of them: `speed` relative to the job's own way, or `seconds` alone on the node");
                continue;
            }
            let Some(c) = self.check_job(&v, pools) else { continue };
            let name = match &v.name {
                Some(n) => n.v.clone(),
                None if v.keys.contains_key("name") => continue,
                None => variant_name(&c.pool, c.cores),
            };
            if let Some((_, first)) = names.iter().find(|(n, _)| *n == name) {
                let at = v.name.as_ref().map_or(span.start, |n| n.val.start);
                let first = match first {
                    Some(i) => format!("variant {}", i + 2),
                    None => "the job's own way".to_string(),
                };
                self.cx.error(at, format!("{label} is named `{name}`, as is {first}"), "expected unique names among a job's ways (`name = \"...\"`; the default is POOL/CORES)");
                continue;
            }
            names.push((name.clone(), Some(k)));
            // Sized by the job's `seconds` and faster by `speed`: it runs
            // that much shorter, so its solo time is what `speed` says.
            let amount = match (c.amount, &v.speed, own_program || entries.iter().any(|e| e.key == "seconds")) {
                (Amount::Seconds(s), Some(x), false) => Amount::Seconds(s / x.v),
                (a, ..) => a,
            };
            out.push(Variant {
                name,
                program: c.program,
                amount,
                threads: c.threads,
                cores: c.cores,
                pool: c.pool,
                speed: v.speed.as_ref().map(|s| s.v),
                line: self.cx.line(span.start),
            });
        }
        out
    }

    /// Program, amount and width (threads at the widest) of a kernel job.
    pub(super) fn kernel_program(
        &mut self,
        j: &RawJob,
        spec: &'static KernelSpec,
    ) -> Option<(Program, Amount, u32)> {
        let label = j.label();
        let mut ok = true;
        let mut given = BTreeMap::new();
        for p in &j.params {
            let Some(ps) = spec.param(&p.key) else {
                let expected = if spec.params.is_empty() {
                    format!("expected no `params`: kernel `{}` takes none", spec.name)
                } else {
                    format!("expected one of its parameters: {}", spec.param_names())
                };
                let hint = suggest(&p.key, spec.params.iter().map(|q| q.name))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                self.cx.error(
                    p.key_span.start,
                    format!("kernel `{}` has no parameter `{}`{hint}", spec.name, p.key),
                    expected,
                );
                ok = false;
                continue;
            };
            let expected = format!("expected {} ({})", ps.kind.expected(), ps.help);
            let Some(text) = &p.text else {
                self.cx.error(
                    p.val.start,
                    format!(
                        "wrong type for parameter `{}` of kernel `{}`: found {}",
                        p.key, spec.name, p.found
                    ),
                    expected,
                );
                ok = false;
                continue;
            };
            if let Err(e) = ps.kind.check(text) {
                self.cx.error(
                    p.val.start,
                    format!(
                        "bad value for parameter `{}` of kernel `{}`: {e}",
                        p.key, spec.name
                    ),
                    expected,
                );
                ok = false;
                continue;
            }
            if let Err(e) = kernel::check_range(spec.name, ps.name, text) {
                self.cx.error(p.val.start, format!("bad value for parameter `{}` of kernel `{}`: {e}", p.key, spec.name), expected);
                ok = false;
                continue;
            }
            if spec.name == "phased" && ps.name == "phases" {
                if let Err(e) = kernel::parse_phases(text) {
                    self.cx.error(
                        p.val.start,
                        format!("bad value for parameter `phases` of kernel `phased`: {e}"),
                        expected,
                    );
                    ok = false;
                    continue;
                }
            }
            if let Some(bytes) = param_bytes(spec.name, ps.name, text) {
                let (max_mib, what) = self.memory_bound();
                if bytes > u128::from(max_mib) << 20 {
                    self.cx.error(
                        p.val.start,
                        format!("parameter `{}` of kernel `{}` asks for {} MiB of memory", p.key, spec.name, bytes >> 20),
                        format!("expected at most {max_mib} MiB ({what})"),
                    );
                    ok = false;
                    continue;
                }
            }
            given.insert(p.key.clone(), text.clone());
        }

        let threads = j.threads.as_ref().map_or(1, |t| t.v);
        if threads > 1 && !spec.threaded {
            let at = j.threads.as_ref().expect("threads > 1 was given").val.start;
            let threaded: Vec<&str> = KERNELS
                .iter()
                .filter(|k| k.threaded)
                .map(|k| k.name)
                .collect();
            self.cx.error(
                at,
                format!(
                    "kernel `{}` is single-threaded, so {label} cannot run {threads} threads",
                    spec.name
                ),
                format!(
                    "expected threads = 1; threaded kernels: {}",
                    threaded.join(", ")
                ),
            );
            ok = false;
        }

        let amount = match (
            &j.work,
            &j.seconds,
            j.keys.get("work"),
            j.keys.get("seconds"),
        ) {
            (_, _, Some(w), Some(s)) => {
                let later = if w.start > s.start { w } else { s };
                self.cx.error(later.start, format!("{label} has both `work` and `seconds`"), "expected one of them: `work` for fixed units, `seconds` for a solo duration from calibration");
                None
            }
            (None, None, None, None) => {
                let at = j.kernel.as_ref().map_or(j.span.start, |k| k.key.start);
                self.cx.error(
                    at,
                    format!("kernel {label} says neither `work` nor `seconds`"),
                    format!(
                        "expected `work = N` (units of {}) or `seconds = S`",
                        spec.unit
                    ),
                );
                None
            }
            (Some(w), _, _, _) => Some(Amount::Work(w.v)),
            (_, Some(s), _, _) => Some(Amount::Seconds(s.v)),
            // The key is there but its value was rejected (already reported).
            _ => None,
        };
        if !ok {
            return None;
        }
        let amount = amount?;

        let resolved = match spec.resolve_params(&given) {
            Ok(r) => r,
            Err(e) => {
                self.cx.error(
                    j.keys.get("params").map_or(j.span.start, |k| k.start),
                    e,
                    "expected parameters the kernel accepts",
                );
                return None;
            }
        };
        let params: BTreeMap<String, String> = resolved
            .into_iter()
            .map(|(k, v)| {
                let kind = spec.param(&k).map(|p| p.kind);
                (k, canonical(kind, v))
            })
            .collect();
        let mut width = threads;
        if spec.name == "phased" {
            if let Some(phases) = params
                .get("phases")
                .and_then(|p| kernel::parse_phases(p).ok())
            {
                width = width.max(phases.iter().map(|p| p.threads).max().unwrap_or(1));
            }
        }
        if width > MAX_CPUS {
            let at = j.keys.get("params").map_or(j.span.start, |k| k.start);
            self.cx.error(at, format!("{label} runs {width} threads in its widest phase"), format!("expected at most {MAX_CPUS}"));
            return None;
        }
        Some((
            Program::Kernel {
                name: spec.name.to_string(),
                params,
            },
            amount,
            width,
        ))
    }

    pub(super) fn check_cycles(&mut self, raws: &[RawJob], by_name: &HashMap<String, usize>) {
        // Edges only between jobs that resolved to a unique name; the rest
        // are already reported.
        let edges: Vec<Vec<usize>> = raws
            .iter()
            .enumerate()
            .map(|(i, j)| {
                if j.name.as_ref().and_then(|n| by_name.get(&n.v)) != Some(&i) {
                    return Vec::new();
                }
                j.after
                    .iter()
                    .filter_map(|a| by_name.get(&a.v).copied())
                    .collect()
            })
            .collect();

        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnPath,
            Done,
        }
        let mut mark = vec![Mark::New; raws.len()];
        let mut cycles: Vec<Vec<usize>> = Vec::new();
        for start in 0..raws.len() {
            if mark[start] != Mark::New {
                continue;
            }
            // Iterative depth-first search: dependency chains in generated
            // workloads can be far deeper than the stack allows recursion.
            let mut path: Vec<(usize, usize)> = vec![(start, 0)];
            mark[start] = Mark::OnPath;
            while let Some(&mut (node, ref mut next)) = path.last_mut() {
                if *next < edges[node].len() {
                    let to = edges[node][*next];
                    *next += 1;
                    match mark[to] {
                        Mark::New => {
                            mark[to] = Mark::OnPath;
                            path.push((to, 0));
                        }
                        Mark::OnPath => {
                            let from = path
                                .iter()
                                .position(|(n, _)| *n == to)
                                .expect("on the path");
                            let mut cycle: Vec<usize> =
                                path[from..].iter().map(|(n, _)| *n).collect();
                            // Start at the job declared first, so one cycle reads the same however it was found.
                            let first = cycle
                                .iter()
                                .enumerate()
                                .min_by_key(|(_, n)| **n)
                                .map(|(i, _)| i)
                                .unwrap_or(0);
                            cycle.rotate_left(first);
                            if !cycles.contains(&cycle) {
                                cycles.push(cycle);
                            }
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    path.pop();
                }
            }
        }

        for cycle in cycles {
            let name = |i: usize| {
                raws[i]
                    .name
                    .as_ref()
                    .map_or("?", |n| n.v.as_str())
                    .to_string()
            };
            let mut names: Vec<String> = cycle.iter().map(|&i| name(i)).collect();
            names.push(name(cycle[0]));
            if names.len() > MAX_LISTED {
                let hidden = names.len() - 10;
                names.splice(5..names.len() - 5, [format!("... ({hidden} more)")]);
            }
            let head = &raws[cycle[0]];
            let next = name(*cycle.get(1).unwrap_or(&cycle[0]));
            let at = head
                .after
                .iter()
                .find(|a| a.v == next)
                .map_or(head.span.start, |a| a.val.start);
            self.cx.error(at, format!("dependency cycle: {} (each job waits for the next)", names.join(" -> ")), "expected `after` lists that never lead back to the same job; remove one of these dependencies");
        }
    }
}


/// Memory a kernel parameter makes the job allocate, bytes, when it sizes
/// memory: `*_mib` and `*_kib` sizes, and dgemm's three n x n matrices.
pub(super) fn param_bytes(kernel: &str, param: &str, value: &str) -> Option<u128> {
    let v: u128 = value.trim().parse::<u64>().ok()?.into();
    if param.ends_with("_mib") {
        Some(v << 20)
    } else if param.ends_with("_kib") {
        Some(v << 10)
    } else if kernel == "dgemm" && param == "n" {
        Some(3 * 8 * v * v)
    } else {
        None
    }
}

/// One spelling per value, so equal parameters make equal program keys
/// (`intensity = 1` and the default `"1.0"` are the same program).
pub(super) fn canonical(kind: Option<ParamKind>, v: String) -> String {
    match kind {
        Some(ParamKind::Uint) => v.parse::<u64>().map(|n| n.to_string()).unwrap_or(v),
        Some(ParamKind::Float) => v.parse::<f64>().map(|f| format!("{f:?}")).unwrap_or(v),
        _ => v,
    }
}
