//! The `[[pools]]` tables: each read, then resolved into the node's pools
//! (the host pool first, an implicit one when the file names none).

use super::*;

impl Parser<'_, '_> {
    pub(super) fn raw_pool(&mut self, span: &Range<usize>, entries: &[Entry]) -> RawPool {
        let mut p = RawPool {
            span: span.clone(),
            keys: HashMap::new(),
            name: None,
            accelerator: false,
            cores: None,
            host_load: None,
        };
        for e in entries {
            let Some(&key) = POOL_KEYS.iter().find(|k| **k == e.key) else {
                let place = match entries.iter().find(|e| e.key == "name") {
                    Some(Entry {
                        item:
                            Item {
                                value: Value::String(n),
                                ..
                            },
                        ..
                    }) => format!("in pool `{n}`"),
                    _ => "in a pool".to_string(),
                };
                self.cx.unknown_key(e, &place, POOL_KEYS);
                continue;
            };
            p.keys.insert(key, e.key_span.clone());
            match key {
                "name" => p.name = self.cx.name(e, "pool"),
                "kind" => {
                    if let Some(k) = self.cx.string(e, "\"cpu\" or \"accelerator\"") {
                        match k.v.as_str() {
                            "cpu" => p.accelerator = false,
                            "accelerator" => p.accelerator = true,
                            other => {
                                let hint = suggest(other, ["cpu", "accelerator"].into_iter())
                                    .map(|s| format!(" (did you mean `{s}`?)"))
                                    .unwrap_or_default();
                                self.cx.error(
                                    k.val.start,
                                    format!("unknown pool kind `{other}`{hint}"),
                                    "expected \"cpu\" or \"accelerator\"",
                                );
                            }
                        }
                    }
                }
                "cores" => {
                    p.cores = self.cx.cpus(e, "cpu: cores; accelerator: devices or job slots")
                }
                "host_load" => {
                    p.host_load = self.cx.number(
                        e,
                        |v| (0.0..=1.0).contains(&v),
                        "a share of one host core between 0 and 1",
                    )
                }
                _ => unreachable!("every key of POOL_KEYS is handled"),
            }
        }
        p
    }

    pub(super) fn resolve_pools(&mut self, raws: Vec<RawPool>) -> Vec<Pool> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut kept: Vec<RawPool> = Vec::new();
        let has_cpu = raws.iter().any(|p| !p.accelerator);
        for p in raws {
            if let (false, Some(k)) = (p.accelerator, p.keys.get("host_load")) {
                let name = p
                    .name
                    .as_ref()
                    .map_or("this pool".to_string(), |n| format!("pool `{}`", n.v));
                self.cx.error(
                    k.start,
                    format!(
                        "`host_load` applies only to accelerator pools, and {name} is a cpu pool"
                    ),
                    "expected `kind = \"accelerator\"` or no `host_load`",
                );
            }
            let Some(name) = &p.name else {
                if !p.keys.contains_key("name") {
                    self.cx.error(
                        p.span.start,
                        "a pool has no `name`",
                        "expected `name = \"...\"` in every [[pools]] table",
                    );
                }
                continue;
            };
            if let Some(first) = seen.get(&name.v) {
                let msg = format!(
                    "duplicate pool name `{}`; the first is declared at line {first}",
                    name.v
                );
                self.cx
                    .error(name.val.start, msg, "expected unique pool names");
                continue;
            }
            if !has_cpu && name.v == HOST_POOL {
                self.cx.error(name.val.start, format!("accelerator pool `{HOST_POOL}` clashes with the implicit cpu pool `{HOST_POOL}` added when no cpu pool is declared"), "expected another name, or a cpu pool declared explicitly");
                continue;
            }
            seen.insert(name.v.clone(), self.cx.line(p.span.start) as usize);
            kept.push(p);
        }

        let mut pools = Vec::new();
        if !has_cpu {
            pools.push(Pool {
                name: HOST_POOL.into(),
                kind: PoolKind::Cpu,
                cores: self.node_cores,
            });
        }

        // The cpu pools split the node; at most one takes what the others leave.
        let mut declared: u64 = 0;
        let mut shares: Vec<String> = Vec::new();
        let mut overflow_reported = false;
        let mut rest_pool: Option<&RawPool> = None;
        for p in kept.iter().filter(|p| !p.accelerator) {
            let name = &p.name.as_ref().expect("kept pools are named").v;
            match &p.cores {
                Some(c) => {
                    declared += u64::from(c.v);
                    shares.push(format!("{name}: {}", c.v));
                    if let Some(n) = self.node_cores {
                        if declared > u64::from(n) && !overflow_reported {
                            overflow_reported = true;
                            let msg = format!(
                                "the cpu pools take {declared} cores ({}) but the node has {n}",
                                shares.join(", ")
                            );
                            self.cx.error(
                                c.val.start,
                                msg,
                                format!("expected the cpu pools' `cores` to add up to at most {n}"),
                            );
                        }
                    }
                }
                None if p.keys.contains_key("cores") => {}
                None => {
                    if let Some(first) = rest_pool {
                        let first_name = &first.name.as_ref().expect("kept pools are named").v;
                        let msg = format!("cpu pools `{first_name}` (line {}) and `{name}` both leave out `cores`, so both would take the rest of the node", self.cx.line(first.span.start));
                        self.cx.error(
                            p.name.as_ref().map_or(p.span.start, |n| n.val.start),
                            msg,
                            "expected `cores = N` on every cpu pool but one",
                        );
                    } else {
                        rest_pool = Some(p);
                    }
                }
            }
        }
        let rest = match (self.node_cores, rest_pool) {
            (Some(n), Some(p)) if declared >= u64::from(n) && !overflow_reported => {
                let name = p.name.as_ref().expect("kept pools are named");
                let msg = format!("cpu pool `{}` takes the rest of the node, but the other cpu pools take all {n} of its cores", name.v);
                self.cx.error(
                    name.val.start,
                    msg,
                    "expected fewer cores on the other cpu pools, or `cores = N` here",
                );
                None
            }
            (Some(n), Some(_)) => u32::try_from(u64::from(n).saturating_sub(declared)).ok(),
            _ => None,
        };

        for p in &kept {
            let name = p.name.as_ref().expect("kept pools are named").v.clone();
            let (kind, cores) = if p.accelerator {
                let host_load = p.host_load.as_ref().map_or(DEFAULT_HOST_LOAD, |h| h.v);
                (
                    PoolKind::Accelerator { host_load },
                    Some(p.cores.as_ref().map_or(1, |c| c.v)),
                )
            } else {
                let takes_rest = rest_pool.is_some_and(|r| std::ptr::eq(r, p));
                let cores = match &p.cores {
                    Some(c) => Some(c.v),
                    None if takes_rest => rest,
                    None => None,
                };
                (PoolKind::Cpu, cores)
            };
            pools.push(Pool { name, kind, cores });
        }
        // The host pool leads so that "the first cpu pool" is also "the first pool".
        if let Some(i) = pools.iter().position(|p| p.kind == PoolKind::Cpu) {
            let host = pools.remove(i);
            pools.insert(0, host);
        }
        pools
    }
}
