//! `cosched generate` makes what install.sh installs: a man page per verb
//! (`man cosched-run`) and a bash completion script that knows every verb.

use std::process::Command;

fn cosched(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cosched")).args(args).output().expect("cosched runs")
}

#[test]
fn man_pages_cover_the_binary_every_verb_and_nested_verbs() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosched(&["generate", "man", "--out", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for page in ["cosched.1", "cosched-run.1", "cosched-simulate.1", "cosched-db-export.1", "cosched-bench-simulate.1"] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page} is not a man page");
    }
    let run = std::fs::read_to_string(dir.path().join("cosched-run.1")).unwrap();
    assert!(run.contains("workload"), "cosched-run.1 documents --workload");
}

#[test]
fn bash_completion_offers_every_verb() {
    let out = cosched(&["generate", "completions", "bash"]);
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    for verb in ["run", "simulate", "evaluate", "pairs", "profile", "demo", "check", "db"] {
        assert!(script.contains(verb), "completion lacks `{verb}`");
    }
    assert!(script.contains("complete -F _cosched"), "registers the function for `cosched`");
}


/// What bash's completion function offers after `words` (the last one the
/// word being completed), as a shell user pressing TAB would see it.
fn complete(words: &[&str]) -> Vec<String> {
    let script = String::from_utf8(cosched(&["generate", "completions", "bash"]).stdout).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cosched.bash");
    std::fs::write(&path, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let body = format!(
        "source '{}' 2>/dev/null; COMP_WORDS=({}); COMP_CWORD={cword}; _cosched cosched '{}' '{prev}' 2>/dev/null; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        quoted.join(" "),
        words[cword]
    );
    // An empty directory: file names, if offered, would show as none.
    let out = Command::new("bash").arg("-c").arg(body).current_dir(dir.path()).output().expect("bash runs");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[test]
fn bash_completes_policy_predictor_and_fixed_values_from_the_registries_not_file_names() {
    if Command::new("bash").arg("--version").output().is_err() {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "bash is not installed");
        return;
    }
    let policies = complete(&["cosched", "run", "--policy", ""]);
    for p in ["best-match", "noplan", "exclusive", "conflict-aware", "timeshare", "lua"] {
        assert!(policies.contains(&p.to_string()), "--policy offers {p}: {policies:?}");
    }
    let predictors = complete(&["cosched", "run", "--predictor", ""]);
    assert!(predictors.contains(&"measured".to_string()) && predictors.contains(&"learned".to_string()), "{predictors:?}");
    assert_eq!(complete(&["cosched", "run", "--cgroups", ""]), ["auto", "v1", "v2", "none"]);
    assert_eq!(complete(&["cosched", "simulate", "--scheduler", ""]), ["easy", "fcfs"]);
    assert_eq!(complete(&["cosched", "governor", ""]).iter().filter(|w| !w.starts_with('-')).cloned().collect::<Vec<_>>(), ["high", "low"]);
    assert_eq!(complete(&["cosched", "pairs", "--in-regime", ""]), ["shared", "apart"]);
    let kernels = complete(&["cosched", "bench", "profile", "--kernel", ""]);
    assert!(kernels.contains(&"stream".to_string()), "{kernels:?}");
    assert_eq!(complete(&["cosched", "demo", "--workload", ""]), ["auto", "memory-half", "io-half"]);
    assert_eq!(complete(&["cosched", "run", "--solo", ""]), ["interleaved", "stored"]);
    assert_eq!(complete(&["cosched", "simulate", "--map", ""]), ["exe", "user", "random"]);
    let placements = complete(&["cosched", "simulate", "--placement", ""]);
    assert!(placements.contains(&"compact".to_string()) && placements.contains(&"scatter".to_string()), "{placements:?}");
    let metrics = complete(&["cosched", "evaluate", "--metric", ""]);
    assert!(metrics.contains(&"worst-slowdown".to_string()), "{metrics:?}");
}

#[test]
fn man_pages_render_without_hyphenation_and_carry_exit_status_environment_files_and_version() {
    if Command::new("man").arg("--version").output().is_err() {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "man (man-db) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = cosched(&["generate", "man", "--out", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for page in std::fs::read_dir(dir.path()).unwrap() {
        let page = page.unwrap().path();
        let shown = Command::new("man").arg("-l").arg(&page).env("MANWIDTH", "80").env("MAN_KEEP_FORMATTING", "").output().unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(!text.contains('\u{2010}'), "{} hyphenates a word at a line break", page.display());
        assert!(!text.contains("EXTRA"), "{}: examples belong in EXAMPLES", page.display());
        for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "VERSION"] {
            assert!(text.contains(section), "{} lacks {section}", page.display());
        }
        assert!(text.contains(concat!("cosched ", env!("CARGO_PKG_VERSION"))), "{}: the footer names the version", page.display());
    }
    let run = std::fs::read_to_string(dir.path().join("cosched-run.1")).unwrap();
    assert!(!run.contains("\\-\\-lock"), "a test-only flag is not documented");
    for var in ["COSCHED_DB", "COSCHED_DATA_DIR", "SLURM_CONF"] {
        assert!(run.contains(var), "cosched-run.1's ENVIRONMENT names {var}");
    }
}

fn repo(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)).unwrap()
}

/// install.sh installs the man pages and the bash, zsh and fish completion
/// `generate` makes, where each shell looks for them (issue 40: zsh and fish
/// were generated but not installed).
#[test]
fn install_sh_installs_man_pages_and_bash_zsh_and_fish_completion() {
    let install = repo("install.sh");
    for line in [
        "gen man --out \"$mandir\"",
        "gen completions bash > \"$bashdir/cosched\"",
        "gen completions zsh > \"$zshdir/_cosched\"",
        "gen completions fish > \"$fishdir/cosched.fish\"",
        "zshdir=\"$PREFIX/share/zsh/site-functions\"",
        "fishdir=\"$PREFIX/share/fish/vendor_completions.d\"",
    ] {
        assert!(install.contains(line), "install.sh lacks `{line}`");
    }
    for shell in ["zsh", "fish"] {
        let out = cosched(&["generate", "completions", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && script.contains("evaluate") && script.contains("best-match"), "{shell}: {script}");
    }
}

/// README's package list is install.sh's (issue 40: it left out the Slurm
/// packages install.sh installs), and says what the Slurm ones are for.
#[test]
fn readme_names_every_package_install_sh_installs() {
    let install = repo("install.sh");
    let list = install.split("PACKAGES=(").nth(1).and_then(|r| r.split(')').next()).expect("install.sh's PACKAGES=(...)");
    let readme = repo("README.md");
    let section = readme.split("`install.sh` installs the Debian packages").nth(1).expect("README's package paragraph");
    let section = section.split("\n\n").next().unwrap();
    let missing: Vec<&str> = list.split_whitespace().filter(|p| !section.contains(p)).collect();
    assert!(missing.is_empty(), "README's package list lacks {missing:?}");
    assert!(section.contains("local Slurm"), "README says what slurm-wlm, slurm-client and munge are for");
}

/// The systemd unit in dist/ links only to man pages `generate man` makes,
/// which install.sh installs (issue 40: it linked a doc path never installed).
#[test]
fn the_slurm_units_documentation_links_are_installed_man_pages() {
    let unit = repo("dist/cosched-slurm.service");
    let links: Vec<&str> = unit.lines().filter_map(|l| l.strip_prefix("Documentation=")).flat_map(str::split_whitespace).collect();
    assert!(!links.is_empty(), "the unit has a Documentation= line");
    let dir = tempfile::tempdir().unwrap();
    assert!(cosched(&["generate", "man", "--out", dir.path().to_str().unwrap()]).status.success());
    for link in links {
        let page = link.strip_prefix("man:").unwrap_or_else(|| panic!("{link}: not a man page, which install.sh would not install"));
        let (name, section) = page.trim_end_matches(')').split_once('(').expect("man:NAME(SECTION)");
        assert!(dir.path().join(format!("{name}.{section}")).is_file(), "{link}: generate makes no {name}.{section}");
    }
}
