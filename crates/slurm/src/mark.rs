//! cosched's decision on a released job, written into its AdminComment and
//! signed, so a job released by anyone else is told apart and held again.
//!
//! Only administrators can set an AdminComment, but an operator's stray
//! `scontrol update`, a copied comment or a reused job id must not pass
//! for cosched's decision either. The mark therefore carries an
//! HMAC-SHA256 (truncated to 128 bits) over the job's id, submit time and
//! CPU count and the decision's text, keyed by a secret only `serve`
//! reads ([`Key::load_or_create`]). A mark whose signature does not verify,
//! whose job changed its CPUs, or whose node is not the job's required
//! node is no decision: `tick` holds the job again.
//!
//! ```text
//! cosched;policy=exclusive;node=c1;beside=-;predicted=1.000;at=1795782851;sig=4f0c...
//! cosched;policy=noplan;node=c2;beside=7;predicted=1.210;at=1795782900;program=stream;sig=9a1e...
//! ```
//!
//! The program a job's batch script named (`#COSCHED program=NAME`, read by
//! the submission rule into the hold mark) is carried into the decision's
//! mark, signed with it: the hold mark is gone once the job is released, and
//! a `serve` restarted while the job runs reads the program back from here.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::parse::MARK;

/// The secret that signs marks.
#[derive(Clone)]
pub struct Key([u8; 32]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// A fixed key for tests; a real one is [`Key::load_or_create`]d.
    #[cfg(test)]
    pub(crate) const fn from_bytes(b: [u8; 32]) -> Key {
        Key(b)
    }

    /// Reads the key at `path` (64 hex digits), or creates it there from
    /// /dev/urandom, mode 0600. An existing key must be a regular file of
    /// this user that no one else can read: anyone who reads it can forge
    /// decisions.
    pub fn load_or_create(path: &Path) -> Result<Key, String> {
        let shown = path.display();
        match std::fs::symlink_metadata(path) {
            Ok(m) => {
                // SAFETY: geteuid has no preconditions and cannot fail.
                let me = unsafe { libc::geteuid() };
                if !m.file_type().is_file() || m.uid() != me || m.mode() & 0o077 != 0 {
                    return Err(format!(
                        "{shown}: the key that signs cosched's Slurm decisions must be a regular file owned by uid {me} with mode 0600 (found uid {}, mode {:o})",
                        m.uid(),
                        m.mode() & 0o7777
                    ));
                }
                let mut text = String::new();
                std::fs::File::open(path)
                    .and_then(|f| f.take(256).read_to_string(&mut text))
                    .map_err(|e| format!("{shown}: {e}"))?;
                let t = text.trim();
                let bytes: Option<Vec<u8>> = (t.len() == 64)
                    .then(|| (0..32).map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).ok()).collect())
                    .flatten();
                let bytes = bytes.ok_or_else(|| format!("{shown}: expected 64 hex digits (a key cosched wrote); remove it to make a new one"))?;
                let mut k = [0u8; 32];
                k.copy_from_slice(&bytes);
                Ok(Key(k))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut k = [0u8; 32];
                std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut k)).map_err(|e| format!("/dev/urandom: {e}"))?;
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                }
                let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(path)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{hex}\n").as_bytes()))
                    .map_err(|e| format!("{shown}: {e}"))?;
                Ok(Key(k))
            }
            Err(e) => Err(format!("{shown}: {e}")),
        }
    }

    fn mac(&self, job: &Signed, body: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(format!("cosched-slurm-mark v1\n{}\n{}\n{}\n{body}", job.id, job.submit.unwrap_or(0), job.cpus).as_bytes());
        mac
    }

    /// The first 128 bits of the HMAC, in hex: short enough for an
    /// AdminComment, far beyond guessing.
    fn sig(&self, job: &Signed, body: &str) -> String {
        self.mac(job, body).finalize().into_bytes()[..SIG_BYTES].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether `sig` (hex) is this key's signature of `body` on `job`,
    /// compared in constant time.
    fn verifies(&self, job: &Signed, body: &str, sig: &str) -> bool {
        if sig.len() != 2 * SIG_BYTES || !sig.is_ascii() {
            return false;
        }
        let bytes: Option<Vec<u8>> = (0..SIG_BYTES).map(|i| u8::from_str_radix(&sig[2 * i..2 * i + 2], 16).ok()).collect();
        bytes.is_some_and(|b| self.mac(job, body).verify_truncated_left(&b).is_ok())
    }
}

/// Bytes of the HMAC a mark keeps.
const SIG_BYTES: usize = 16;

/// What a mark is bound to: the job as Slurm knows it at the release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signed {
    pub id: u64,
    pub submit: Option<i64>,
    pub cpus: u32,
}

/// What cosched did to a job, as its mark says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Released onto its node (a start, or the end of a parking).
    Start,
    /// `scontrol suspend`: its cores go to the jobs `beside` it.
    Suspend,
    /// `scontrol resume`.
    Resume,
    /// Started and suspended in one decision (a time-sharing turn not
    /// yet its own): placed on its node, still held in Slurm, until a
    /// resume releases it there.
    Park,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Start => "start",
            Step::Suspend => "suspend",
            Step::Resume => "resume",
            Step::Park => "park",
        }
    }

    fn parse(s: &str) -> Option<Step> {
        [Step::Start, Step::Suspend, Step::Resume, Step::Park].into_iter().find(|x| x.name() == s)
    }
}

/// cosched's decision on one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub policy: String,
    pub node: String,
    /// Slurm ids of the jobs placed on the node at the decision.
    pub beside: Vec<u64>,
    pub predicted: f64,
    /// Unix seconds of the release.
    pub at: i64,
    /// What was done; a start's mark does not name it (marks of releases
    /// read as they always did).
    pub step: Step,
    /// The program the job's hold mark named, if any.
    pub program: Option<String>,
    /// The accelerator units (GRES) the job holds on each of its nodes
    /// (`gpu:1`), so its mark says what of the node's accelerator pool it
    /// took; none for a job of cores alone.
    pub gres: Vec<(String, u32)>,
}

/// A program name as the submission rule admits it: letters, digits,
/// `._-+`, at most 64 (so it never holds a mark's `;` or `=`).
pub fn program_name_ok(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
}

impl Decision {
    fn body(&self) -> String {
        let beside: Vec<String> = self.beside.iter().map(u64::to_string).collect();
        let beside = if beside.is_empty() { "-".to_string() } else { beside.join(",") };
        let step = if self.step == Step::Start { String::new() } else { format!(";act={}", self.step.name()) };
        // A name the rule would not admit is left out rather than let it
        // change the mark's form.
        let program = self.program.as_deref().filter(|p| program_name_ok(p)).map_or(String::new(), |p| format!(";program={p}"));
        // Kinds are Slurm's GRES names (letters, digits, `_`): never a `;`, `=`, `,` or `:`.
        let gres: Vec<String> = self.gres.iter().filter(|(k, _)| program_name_ok(k)).map(|(k, n)| format!("{k}:{n}")).collect();
        let gres = if gres.is_empty() { String::new() } else { format!(";gres={}", gres.join(",")) };
        format!("{MARK}policy={};node={};beside={beside};predicted={:.3};at={}{gres}{program}{step}", self.policy, self.node, self.predicted, self.at)
    }

    /// The signed AdminComment of this decision on `job`.
    pub fn write(&self, key: &Key, job: &Signed) -> String {
        let body = self.body();
        let sig = key.sig(job, &body);
        format!("{body};sig={sig}")
    }

    /// Reads a mark without checking it (for display; never to trust).
    pub fn read_unverified(text: &str) -> Result<Decision, String> {
        let body = text.split_once(";sig=").map_or(text, |(b, _)| b);
        let rest = body.strip_prefix(MARK).ok_or("not a cosched decision")?;
        let mut fields = std::collections::BTreeMap::new();
        for w in rest.split(';') {
            let (k, v) = w.split_once('=').ok_or_else(|| format!("`{w}` is not key=value"))?;
            if fields.insert(k, v).is_some() {
                return Err(format!("`{k}` given twice"));
            }
        }
        let get = |k: &str| fields.get(k).copied().ok_or_else(|| format!("no `{k}`"));
        let beside = match get("beside")? {
            "-" => Vec::new(),
            v => v.split(',').map(|x| x.parse().map_err(|_| format!("beside `{v}`"))).collect::<Result<_, _>>()?,
        };
        Ok(Decision {
            policy: get("policy")?.to_string(),
            node: get("node")?.to_string(),
            beside,
            predicted: get("predicted")?.parse().map_err(|_| "predicted is not a number".to_string())?,
            at: get("at")?.parse().map_err(|_| "at is not a number".to_string())?,
            step: match fields.get("act") {
                None => Step::Start,
                Some(a) => Step::parse(a).ok_or_else(|| format!("act `{a}` is none of start, suspend, resume, park"))?,
            },
            program: match fields.get("program") {
                None => None,
                Some(p) if program_name_ok(p) => Some(p.to_string()),
                Some(p) => return Err(format!("program `{p}` is not a program name")),
            },
            gres: match fields.get("gres") {
                None => Vec::new(),
                Some(g) => g
                    .split(',')
                    .map(|u| u.split_once(':').and_then(|(k, n)| Some((k.to_string(), n.parse().ok()?))).ok_or_else(|| format!("gres `{g}` is not KIND:UNITS,...")))
                    .collect::<Result<_, _>>()?,
            },
        })
    }

    /// Reads `text` as cosched's decision on `job`, if its signature
    /// verifies with `key` for this very job (id, submit time, CPUs).
    pub fn verify(key: &Key, job: &Signed, text: &str) -> Result<Decision, String> {
        let (body, sig) = text.rsplit_once(";sig=").ok_or("unsigned")?;
        if !key.verifies(job, body, sig) {
            return Err("its signature does not verify (not written by this cosched for this job)".into());
        }
        let d = Decision::read_unverified(body)?;
        // Parsed back to the same text: nothing appended that the signature did not cover.
        if d.body() != body {
            return Err("not in cosched's form".into());
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: Signed = Signed { id: 12, submit: Some(1_795_782_841), cpus: 2 };

    fn decision() -> Decision {
        Decision { policy: "conflict-aware:threshold=50".into(), node: "c1".into(), beside: vec![10, 11], predicted: 1.2345, at: 1_795_782_900, step: Step::Start, program: None, gres: vec![] }
    }

    #[test]
    fn the_accelerator_units_a_job_holds_are_signed_into_its_mark_and_read_back() {
        let key = Key::from_bytes([7; 32]);
        let d = Decision { gres: vec![("gpu".into(), 1), ("mps".into(), 100)], program: Some("nbody".into()), ..decision() };
        let text = d.write(&key, &JOB);
        assert!(text.contains(";at=1795782900;gres=gpu:1,mps:100;program=nbody;sig="), "{text}");
        assert_eq!(Decision::verify(&key, &JOB, &text).unwrap().gres, d.gres);
        // Signed: a job cannot be passed off as holding fewer GPUs.
        assert!(Decision::verify(&key, &JOB, &text.replace("gpu:1", "gpu:0")).is_err());
        // Marks of jobs without GRES (and marks written before) carry none.
        assert!(!decision().write(&key, &JOB).contains("gres="));
        assert!(Decision::read_unverified("cosched;policy=p;node=c1;beside=-;predicted=1;at=1;gres=gpu").is_err());
    }

    #[test]
    fn the_program_a_hold_mark_named_is_signed_into_the_decision_and_read_back() {
        let key = Key::from_bytes([7; 32]);
        let d = Decision { program: Some("stream.v2".into()), step: Step::Suspend, ..decision() };
        let text = d.write(&key, &JOB);
        assert!(text.contains(";at=1795782900;program=stream.v2;act=suspend;sig="), "{text}");
        assert_eq!(Decision::verify(&key, &JOB, &text).unwrap().program.as_deref(), Some("stream.v2"));
        // Signed: another program cannot be written in, nor the name taken out.
        assert!(Decision::verify(&key, &JOB, &text.replace("program=stream.v2", "program=dgemm")).is_err());
        assert!(Decision::verify(&key, &JOB, &text.replace(";program=stream.v2", "")).is_err());
        // A mark without one (written before, or for a job that named none) reads as none.
        let plain = decision().write(&key, &JOB);
        assert_eq!(Decision::verify(&key, &JOB, &plain).unwrap().program, None);
        // A name the rule would not admit never enters the mark's form.
        let odd = Decision { program: Some("a;node=c9".into()), ..decision() }.write(&key, &JOB);
        assert_eq!(odd, plain);
        assert!(Decision::read_unverified("cosched;policy=p;node=c1;beside=-;predicted=1;at=1;program=").is_err());
    }

    #[test]
    fn a_suspension_and_a_parking_are_signed_and_read_back_with_their_step() {
        let key = Key::from_bytes([7; 32]);
        for step in [Step::Suspend, Step::Resume, Step::Park] {
            let d = Decision { step, node: "c1,c2".into(), ..decision() };
            let text = d.write(&key, &JOB);
            assert!(text.contains(&format!(";act={};sig=", step.name())), "{text}");
            assert_eq!(Decision::verify(&key, &JOB, &text).unwrap(), Decision { predicted: 1.234, ..d.clone() });
            // The step is signed: a parking cannot be passed off as a start.
            assert!(Decision::verify(&key, &JOB, &text.replace(&format!(";act={}", step.name()), "")).is_err());
        }
    }

    #[test]
    fn a_mark_verifies_for_its_job_and_reads_back_its_decision() {
        let key = Key::from_bytes([7; 32]);
        let text = decision().write(&key, &JOB);
        assert!(text.starts_with("cosched;policy=conflict-aware:threshold=50;node=c1;beside=10,11;predicted=1.234;at=1795782900;sig="), "{text}");
        let d = Decision::verify(&key, &JOB, &text).unwrap();
        assert_eq!((d.node.as_str(), d.beside.clone(), d.predicted), ("c1", vec![10, 11], 1.234));
    }

    #[test]
    fn a_mark_does_not_verify_for_another_job_key_submit_time_cpu_count_or_text() {
        let key = Key::from_bytes([7; 32]);
        let text = decision().write(&key, &JOB);
        assert!(Decision::verify(&Key::from_bytes([8; 32]), &JOB, &text).is_err());
        for other in [Signed { id: 13, ..JOB }, Signed { submit: Some(1), ..JOB }, Signed { cpus: 64, ..JOB }] {
            assert!(Decision::verify(&key, &other, &text).is_err(), "{other:?}");
        }
        assert!(Decision::verify(&key, &JOB, &text.replace("node=c1", "node=c2")).is_err());
        assert_eq!(Decision::verify(&key, &JOB, "cosched;policy=x;node=c9").unwrap_err(), "unsigned");
        assert!(Decision::verify(&key, &JOB, crate::parse::HELD).is_err());
    }

    #[test]
    fn a_key_file_is_made_private_reread_and_refused_when_others_can_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k/slurm.key");
        let a = Key::load_or_create(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let b = Key::load_or_create(&path).unwrap();
        assert_eq!(a.0, b.0);
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let e = Key::load_or_create(&path).unwrap_err();
        assert!(e.contains("mode 0600") && e.contains("mode 644"), "{e}");
        let link = dir.path().join("link.key");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(Key::load_or_create(&link).is_err(), "a link is not the key");
    }

    proptest::proptest! {
        #[test]
        fn no_text_but_the_signed_one_verifies(text in ".{0,120}", tail in ".{0,40}") {
            let key = Key::from_bytes([3; 32]);
            let good = decision().write(&key, &JOB);
            proptest::prop_assert!(Decision::verify(&key, &JOB, &text).is_err() || text == good);
            let longer = format!("{good}{tail}");
            proptest::prop_assert!(Decision::verify(&key, &JOB, &longer).is_err() || tail.is_empty());
        }
    }
}
