//! hwloc's XML export (`lstopo --of xml`), versions 2.x and 1.x.
//!
//! Differences between the versions that matter here:
//! - 2.x attaches NUMA nodes as *memory children* (leaf `NUMANode` objects
//!   beside the CPU-side children of a Package, Die or Group); the CPUs local
//!   to such a node are those of the object it hangs from. 1.x makes the
//!   `NUMANode` an ordinary parent of the CPUs it is local to.
//! - 2.x names caches `L1Cache`, `L1iCache`, `L2Cache`, ...; 1.x has a single
//!   `Cache` type with a `depth` attribute. Both carry `cache_type` (0 unified,
//!   1 data, 2 instruction).
//! - 1.x calls packages `Socket`.
//!
//! Only the object tree is read; cpuset bitmaps are not needed because the
//! tree already says which PUs sit below what.

use roxmltree::{Document, Node as XmlNode, ParsingOptions};

use super::{Cache, CacheKind, NumaNode, Parts, TopologyError, TopologySource};

/// Parses the output of `lstopo --of xml` (hwloc 2.x, or 1.x).
pub fn parse_hwloc_xml(xml: &str) -> Result<super::Node, TopologyError> {
    // hwloc writes a DOCTYPE line; roxmltree refuses DTDs unless asked.
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let depth = max_element_depth(xml);
    if depth > MAX_DEPTH {
        return Err(TopologyError::Hwloc {
            line: 1,
            message: format!(
                "elements nested {depth} levels deep (more than {MAX_DEPTH}); this is not an hwloc topology"
            ),
        });
    }
    let doc = Document::parse_with_options(xml, opts).map_err(|e| xml_error(xml, e))?;
    let root = doc.root_element();
    if root.tag_name().name() != "topology" {
        return Err(TopologyError::Hwloc {
            line: line_of(&doc, root),
            message: format!(
                "root element is <{}>, expected <topology>; is this the output of `lstopo --of xml`?",
                root.tag_name().name()
            ),
        });
    }
    let v2 = root
        .attribute("version")
        .is_some_and(|v| v.starts_with('2') || v.starts_with('3'));
    let mut walk = Walk {
        doc: &doc,
        v2,
        parts: Parts::default(),
        machine_memory: None,
        packages_seen: 0,
    };
    for obj in objects(root) {
        walk.visit(obj, None, None)?;
    }
    let Walk {
        mut parts,
        machine_memory,
        ..
    } = walk;

    if parts.numa_nodes.is_empty() {
        // A 1.x export of a machine without NUMA: hwloc 2 itself would show
        // one node holding all CPUs and the machine's memory, so do the same.
        let cpus = parts
            .cores
            .iter()
            .flat_map(|(_, p)| p.iter().copied())
            .collect();
        parts.numa_nodes.push(NumaNode {
            os_index: 0,
            cpus,
            memory_bytes: machine_memory,
        });
    }
    parts.memory_bytes = parts
        .numa_nodes
        .iter()
        .map(|n| n.memory_bytes)
        .sum::<Option<u64>>()
        .or(machine_memory);
    parts.assemble(TopologySource::Hwloc)
}

/// hwloc trees are a few dozen levels deep at most. roxmltree parses nested
/// elements by recursion, so a corrupted or hostile file nested thousands of
/// levels deep would overflow the stack; such input is refused before parsing.
const MAX_DEPTH: usize = 128;

/// The deepest element nesting in `xml`, by a scan that knows tags (with
/// quoted attribute values), comments, CDATA, processing instructions and
/// the DOCTYPE, which is all an hwloc file holds.
fn max_element_depth(xml: &str) -> usize {
    let b = xml.as_bytes();
    let after = |from: usize, pat: &[u8]| -> usize {
        b.get(from..)
            .and_then(|rest| rest.windows(pat.len()).position(|w| w == pat))
            .map_or(b.len(), |p| from + p + pat.len())
    };
    let (mut i, mut depth, mut max) = (0, 0usize, 0usize);
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        if rest.starts_with(b"<!--") {
            i = after(i + 4, b"-->");
        } else if rest.starts_with(b"<![CDATA[") {
            i = after(i + 9, b"]]>");
        } else if rest.starts_with(b"<?") {
            i = after(i + 2, b"?>");
        } else if rest.starts_with(b"<!") {
            let mut j = i + 2;
            let mut brackets = 0usize;
            while j < b.len() {
                match b[j] {
                    b'[' => brackets += 1,
                    b']' => brackets = brackets.saturating_sub(1),
                    b'>' if brackets == 0 => break,
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            i = after(i + 2, b">");
        } else {
            let mut j = i + 1;
            let mut quote = None;
            while j < b.len() {
                let c = b[j];
                match quote {
                    Some(q) if c == q => quote = None,
                    Some(_) => {}
                    None if c == b'"' || c == b'\'' => quote = Some(c),
                    None if c == b'>' => break,
                    None => {}
                }
                j += 1;
            }
            if b.get(j.wrapping_sub(1)) != Some(&b'/') || j == i + 1 {
                depth += 1;
                max = max.max(depth);
            }
            i = j + 1;
        }
    }
    max
}

fn xml_error(xml: &str, e: roxmltree::Error) -> TopologyError {
    use roxmltree::Error as E;
    match e {
        // roxmltree places these at 1:1; where the text stops is the useful
        // position (a file cut short by a full disk or an interrupted copy).
        E::UnexpectedEndOfStream | E::UnclosedRootNode => {
            let line = xml.lines().count().max(1) as u32;
            let column = xml.lines().last().map_or(0, |l| l.chars().count()) as u32 + 1;
            TopologyError::Xml {
                line,
                column,
                message: "the text ends before the XML is complete (truncated file?)".into(),
            }
        }
        E::NoRootNode => TopologyError::Xml {
            line: 1,
            column: 1,
            message: "no XML element found (empty input?)".into(),
        },
        other => {
            let pos = other.pos();
            TopologyError::Xml {
                line: pos.row,
                column: pos.col,
                message: other.to_string(),
            }
        }
    }
}

fn objects<'a, 'i>(n: XmlNode<'a, 'i>) -> impl Iterator<Item = XmlNode<'a, 'i>> {
    n.children()
        .filter(|c| c.is_element() && c.tag_name().name() == "object")
}

fn line_of(doc: &Document, n: XmlNode) -> u32 {
    doc.text_pos_at(n.range().start).row
}

/// Child elements `<info name=".." value=".."/>` of an object.
fn info<'a>(n: XmlNode<'a, '_>, name: &str) -> Option<&'a str> {
    n.children()
        .filter(|c| c.is_element() && c.tag_name().name() == "info")
        .find(|c| c.attribute("name") == Some(name))
        .and_then(|c| c.attribute("value"))
}

struct Walk<'d, 'i> {
    doc: &'d Document<'i>,
    v2: bool,
    parts: Parts,
    machine_memory: Option<u64>,
    packages_seen: u32,
}

impl<'d, 'i> Walk<'d, 'i> {
    fn num<T: std::str::FromStr>(
        &self,
        n: XmlNode,
        attr: &str,
    ) -> Result<Option<T>, TopologyError> {
        match n.attribute(attr) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<T>()
                .map(Some)
                .map_err(|_| TopologyError::Hwloc {
                    line: line_of(self.doc, n),
                    message: format!(
                        "attribute {attr}=\"{v}\" of a {} object is not a number",
                        n.attribute("type").unwrap_or("?")
                    ),
                }),
        }
    }

    fn visit(
        &mut self,
        n: XmlNode<'d, 'i>,
        socket: Option<u32>,
        core: Option<usize>,
    ) -> Result<(), TopologyError> {
        let ty = n.attribute("type").unwrap_or("");
        let mut socket = socket;
        let mut core = core;
        match ty {
            "Machine" => {
                self.parts.hostname = self
                    .parts
                    .hostname
                    .take()
                    .or_else(|| info(n, "HostName").map(str::to_string));
                self.machine_memory = self.num::<u64>(n, "local_memory")?.filter(|&m| m > 0);
            }
            "Package" | "Socket" => {
                // Synthetic and some virtual topologies leave os_index out; the
                // package's rank in the document is then the best id there is.
                let id = self
                    .num::<u32>(n, "os_index")?
                    .unwrap_or(self.packages_seen);
                self.packages_seen += 1;
                socket = Some(id);
            }
            "Core" => {
                self.parts.cores.push((socket.unwrap_or(0), Vec::new()));
                core = Some(self.parts.cores.len() - 1);
            }
            "PU" => {
                let id = self
                    .num::<u32>(n, "os_index")?
                    .ok_or_else(|| TopologyError::Hwloc {
                        line: line_of(self.doc, n),
                        message: "PU object without os_index".into(),
                    })?;
                match core {
                    Some(c) => self.parts.cores[c].1.push(id),
                    // Without a Core above it (some VMs), a PU is its own core,
                    // as hwloc's tools treat it.
                    None => self.parts.cores.push((socket.unwrap_or(0), vec![id])),
                }
            }
            "NUMANode" => self.numa(n)?,
            "Cache" | "L1Cache" | "L2Cache" | "L3Cache" | "L4Cache" | "L5Cache" | "L1iCache"
            | "L2iCache" | "L3iCache" => self.cache(n, ty)?,
            // I/O objects hold no CPUs or memory; skipping them saves walking
            // large PCI trees.
            "Bridge" | "PCIDev" | "OSDev" | "Misc" => return Ok(()),
            _ => {}
        }
        if self.parts.cpu_model.is_none() {
            self.parts.cpu_model = info(n, "CPUModel").map(|m| m.trim().to_string());
        }
        for child in objects(n) {
            self.visit(child, socket, core)?;
        }
        Ok(())
    }

    fn numa(&mut self, n: XmlNode<'d, 'i>) -> Result<(), TopologyError> {
        let os_index = self
            .num::<u32>(n, "os_index")?
            .ok_or_else(|| TopologyError::Hwloc {
                line: line_of(self.doc, n),
                message: "NUMANode object without os_index".into(),
            })?;
        let memory_bytes = self.num::<u64>(n, "local_memory")?.filter(|&m| m > 0);
        let holder = if self.v2 {
            // A memory child: its CPUs are those of the nearest CPU-side
            // ancestor (memory-side caches may sit in between).
            n.ancestors()
                .skip(1)
                .find(|a| {
                    a.is_element() && !matches!(a.attribute("type"), Some("NUMANode" | "MemCache"))
                })
                .unwrap_or(n)
        } else {
            n
        };
        let cpus = pus_below(holder)?;
        self.parts.numa_nodes.push(NumaNode {
            os_index,
            cpus,
            memory_bytes,
        });
        Ok(())
    }

    fn cache(&mut self, n: XmlNode<'d, 'i>, ty: &str) -> Result<(), TopologyError> {
        let line = line_of(self.doc, n);
        let level = match self.num::<u32>(n, "depth")? {
            Some(d) => d,
            None => ty
                .strip_prefix('L')
                .and_then(|r| r.chars().next())
                .and_then(|c| c.to_digit(10))
                .ok_or_else(|| TopologyError::Hwloc {
                    line,
                    message: format!("{ty} object without depth"),
                })?,
        };
        let kind = match self.num::<u32>(n, "cache_type")? {
            Some(0) => CacheKind::Unified,
            Some(1) => CacheKind::Data,
            Some(2) => CacheKind::Instruction,
            Some(other) => {
                return Err(TopologyError::Hwloc {
                    line,
                    message: format!(
                        "cache_type=\"{other}\" is not 0 (unified), 1 (data) or 2 (instruction)"
                    ),
                })
            }
            None if ty.contains("iCache") => CacheKind::Instruction,
            None if level == 1 => CacheKind::Data,
            None => CacheKind::Unified,
        };
        let size = self.num::<u64>(n, "cache_size")?.unwrap_or(0);
        if size == 0 {
            self.parts.notes.push(format!(
                "hwloc reports an {} cache without a size; it is left out",
                kind.label(level)
            ));
            return Ok(());
        }
        let line_bytes = self.num::<u32>(n, "cache_linesize")?.filter(|&l| l > 0);
        let cpus = pus_below(n)?;
        self.parts.caches.push(Cache {
            level,
            kind,
            size_bytes: size,
            line_bytes,
            cpus,
        });
        Ok(())
    }
}

/// OS indices of all PUs in the subtree of `n`.
fn pus_below(n: XmlNode) -> Result<Vec<u32>, TopologyError> {
    let mut out = Vec::new();
    for d in n.descendants() {
        if d.is_element() && d.tag_name().name() == "object" && d.attribute("type") == Some("PU") {
            if let Some(v) = d.attribute("os_index") {
                let id = v.trim().parse::<u32>().map_err(|_| TopologyError::Hwloc {
                    line: d.document().text_pos_at(d.range().start).row,
                    message: format!("attribute os_index=\"{v}\" of a PU object is not a number"),
                })?;
                out.push(id);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VM_LIKE: &str = "<?xml version=\"1.0\"?><!DOCTYPE t [<!ENTITY a \"<b>\">]><t><!-- <c> --><o v=\"/>\"><p/><q a='>'/><![CDATA[<d>]]></o><x><y></y></x></t>";

    const TINY_V2: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0">
    <info name="HostName" value="tiny"/>
    <object type="Package" os_index="3">
      <info name="CPUModel" value="Test CPU"/>
      <object type="NUMANode" os_index="0" local_memory="1073741824"/>
      <object type="L2Cache" cache_size="1048576" depth="2" cache_linesize="64" cache_type="0">
        <object type="Core" os_index="0">
          <object type="PU" os_index="0"/>
          <object type="PU" os_index="1"/>
        </object>
      </object>
    </object>
  </object>
</topology>"#;

    #[test]
    fn reads_a_minimal_v2_tree() {
        let n = parse_hwloc_xml(TINY_V2).unwrap();
        assert_eq!(n.hostname.as_deref(), Some("tiny"));
        assert_eq!(n.cpu_model.as_deref(), Some("Test CPU"));
        assert_eq!(n.sockets, 1);
        assert_eq!(n.cores[0].socket, 3);
        assert_eq!(n.cores[0].pus, vec![0, 1]);
        assert_eq!(n.numa_nodes[0].cpus, vec![0, 1]);
        assert_eq!(n.memory_bytes, Some(1 << 30));
        assert_eq!(n.caches[0].kind, CacheKind::Unified);
        assert_eq!(n.source, TopologySource::Hwloc);
    }

    #[test]
    fn malformed_xml_names_line_and_column() {
        let e = parse_hwloc_xml("<topology>\n  <object type=\"PU\" os_index=\"0\">\n</topology>")
            .unwrap_err();
        match &e {
            TopologyError::Xml { line, .. } => assert_eq!(*line, 3),
            other => panic!("expected an XML error, got {other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with("hwloc XML is not well-formed at line 3"),
            "{e}"
        );
    }

    #[test]
    fn wrong_root_or_bad_numbers_are_errors() {
        let e = parse_hwloc_xml("<html/>").unwrap_err();
        assert!(e.to_string().contains("expected <topology>"), "{e}");
        let bad = TINY_V2.replace(r#"os_index="1""#, r#"os_index="one""#);
        let e = parse_hwloc_xml(&bad).unwrap_err();
        assert!(e.to_string().contains("os_index=\"one\""), "{e}");
        assert!(e.to_string().contains("line 12"), "{e}");
        let e = parse_hwloc_xml(&TINY_V2.replace(r#"cache_type="0""#, r#"cache_type="7""#))
            .unwrap_err();
        assert!(e.to_string().contains("cache_type"), "{e}");
    }

    #[test]
    fn absurdly_deep_nesting_is_an_error_not_a_stack_overflow() {
        let depth = 100_000;
        let xml = format!(
            "<topology>{}{}</topology>",
            "<object type=\"Group\">".repeat(depth),
            "</object>".repeat(depth)
        );
        let e = parse_hwloc_xml(&xml).unwrap_err();
        assert!(e.to_string().contains("more than 128"), "{e}");
        assert_eq!(max_element_depth(VM_LIKE), 3);
        assert_eq!(max_element_depth(TINY_V2), 5);
    }

    #[test]
    fn a_topology_without_pus_is_an_error() {
        let e = parse_hwloc_xml(r#"<topology version="2.0"><object type="Machine"/></topology>"#)
            .unwrap_err();
        assert!(e.to_string().contains("no processing units"), "{e}");
    }

    #[test]
    fn pus_without_cores_become_single_thread_cores() {
        let xml = r#"<topology version="2.0"><object type="Machine">
            <object type="NUMANode" os_index="0" local_memory="1024"/>
            <object type="PU" os_index="0"/><object type="PU" os_index="1"/>
        </object></topology>"#;
        let n = parse_hwloc_xml(xml).unwrap();
        assert_eq!((n.n_cores(), n.n_pus(), n.smt_width()), (2, 2, 1));
        assert_eq!(n.numa_nodes[0].cpus, vec![0, 1]);
    }

    #[test]
    fn v1_without_numa_gets_one_node_with_the_machine_memory() {
        let xml = r#"<topology><object type="Machine" local_memory="2048">
            <object type="Socket" os_index="0"><object type="Cache" depth="1" cache_size="32768" cache_type="1">
              <object type="Core" os_index="0"><object type="PU" os_index="0"/></object></object></object>
        </object></topology>"#;
        let n = parse_hwloc_xml(xml).unwrap();
        assert_eq!(
            n.numa_nodes,
            vec![NumaNode {
                os_index: 0,
                cpus: vec![0],
                memory_bytes: Some(2048)
            }]
        );
        assert_eq!(n.memory_bytes, Some(2048));
        assert_eq!((n.caches[0].level, n.caches[0].kind), (1, CacheKind::Data));
    }
}
