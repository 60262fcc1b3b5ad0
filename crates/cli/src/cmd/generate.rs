//! `cosched generate`: man pages and shell completions, both made from the
//! clap definitions so they cannot disagree with `--help`. install.sh runs
//! it after installing the binaries.
//!
//! Man pages are composed section by section rather than with
//! `clap_mangen::Man::render`, because its one catch-all EXTRA section
//! typesets examples as filled, hyphenated prose (a copied
//! `--pol‐icy` then fails) and it has no EXIT STATUS, ENVIRONMENT or FILES.
//! Completions get the registries' names for the flags that take a policy,
//! a predictor or a kernel, and no file names for values that are not paths.

use std::path::{Path, PathBuf};

use clap::builder::PossibleValue;
use clap::{Arg, Args, Command, Subcommand, ValueHint};
use roff::{bold, roman, Roff};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  cosched generate man --out /usr/local/share/man/man1   # then: man cosched-run\n  \
    cosched generate completions bash > ~/.local/share/bash-completion/completions/cosched\n  \
    cosched generate completions zsh > ~/.zfunc/_cosched\n  \
    cosched generate completions fish > ~/.config/fish/completions/cosched.fish")]
pub struct GenerateArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand, Debug)]
enum What {
    /// Write cosched.1 and one page per verb (cosched-run.1, cosched-db-info.1, ...) into DIR.
    Man {
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Print the completion script for SHELL (bash, zsh, fish, elvish, powershell) on stdout.
    Completions { shell: clap_complete::Shell },
}

pub fn run(a: GenerateArgs, mut cli: Command) -> anyhow::Result<()> {
    match a.what {
        What::Man { out } => {
            cosched_app::common::create_dir(&out)?;
            cli.build();
            let n = write_pages(&cli, "cosched", &out)?;
            eprintln!("wrote {n} man pages to {}", out.display());
        }
        What::Completions { shell } => {
            let mut cli = for_completion(cli);
            clap_complete::generate(shell, &mut cli, "cosched", &mut std::io::stdout())
        }
    }
    Ok(())
}

/// Writes `name.1` for `cmd` and, recursively, `name-VERB.1` for each of its
/// subcommands (git's convention: `man cosched-run`); returns the count.
fn write_pages(cmd: &Command, name: &str, out: &Path) -> anyhow::Result<usize> {
    let path = out.join(format!("{name}.1"));
    cosched_app::common::write_file(&path, &page(cmd, name)?)?;
    let mut n = 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        n += write_pages(sub, &format!("{name}-{}", sub.get_name()), out)?;
    }
    Ok(n)
}

/// One verb's man page: clap's title, name, synopsis, description, options
/// and subcommands, then the `after_help` text split into EXAMPLES (kept
/// line for line, unfilled), EXIT STATUS and NOTES, and the sections every
/// page shares.
fn page(cmd: &Command, name: &str) -> anyhow::Result<String> {
    let version = env!("COSCHED_VERSION");
    let man = clap_mangen::Man::new(cmd.clone().name(name.to_string())).source(format!("cosched {version}")).manual("cosched manual");
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    // No hyphenation and ragged right: flags and policy names break only
    // at spaces, so what is copied from a page runs.
    buf.extend_from_slice(b".nh\n.ad l\n");
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut buf)?;
    }
    let after = cmd.get_after_long_help().or(cmd.get_after_help()).map(|s| s.to_string()).unwrap_or_default();
    let parts = cosched_model::examples::sections(&after);
    let mut roff = Roff::new();
    if !parts.examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]).control("nf", []);
        for line in &parts.examples {
            roff.text([roman(line.as_str())]);
        }
        roff.control("fi", []);
    }
    if !parts.notes.is_empty() {
        roff.control("SH", ["NOTES"]);
        for (k, p) in parts.notes.iter().enumerate() {
            if k > 0 {
                roff.control("PP", []);
            }
            roff.text([roman(p.as_str())]);
        }
    }
    roff.control("SH", ["EXIT STATUS"]).text([roman(parts.exit.unwrap_or_else(|| cosched_app::common::EXIT_STATUS.into()))]);
    for (title, rows) in [("ENVIRONMENT", cosched_app::common::ENVIRONMENT), ("FILES", cosched_app::common::FILES)] {
        roff.control("SH", [title]);
        for (what, means) in rows {
            roff.control("TP", []).text([bold(*what)]).text([roman(*means)]);
        }
    }
    let see = if name == "cosched" { "cosched-VERB(1) for each verb; docs/ in the source tree." } else { "cosched(1)" };
    roff.control("SH", ["SEE ALSO"]).text([roman(see)]);
    roff.control("SH", ["VERSION"]).text([roman(format!("cosched {version}"))]);
    roff.to_writer(&mut buf)?;
    Ok(String::from_utf8(buf)?)
}

/// The command tree as the completion generators should see it: registry
/// names as the values of the flags that take them, and values that are
/// neither paths nor from a set completed as nothing instead of file names.
/// Parsing never sees this tree, so `NAME:KEY=VALUE` specs stay valid.
fn for_completion(cmd: Command) -> Command {
    let ids: Vec<String> = cmd.get_arguments().map(|a| a.get_id().to_string()).collect();
    let mut cmd = ids.iter().fold(cmd, |c, id| c.mut_arg(id, complete_values));
    let subs: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for s in subs {
        cmd = cmd.mut_subcommand(s, for_completion);
    }
    cmd
}

fn complete_values(a: Arg) -> Arg {
    if !a.get_action().takes_values() || !a.get_possible_values().is_empty() {
        return a;
    }
    if let Some(names) = cosched_app::registry::names_for(a.get_id().as_str()) {
        let values: Vec<PossibleValue> = names.into_iter().map(PossibleValue::new).collect();
        return a.value_parser(values);
    }
    match a.get_value_hint() {
        ValueHint::Unknown if !is_path_name(a.get_value_names()) => a.value_hint(ValueHint::Other),
        _ => a,
    }
}

/// Whether a value's name in --help (`FILE`, `DIR`, `SCRIPT`...) says it is a path,
/// for the `String` arguments clap cannot tell are paths.
fn is_path_name(names: Option<&[clap::builder::Str]>) -> bool {
    names.into_iter().flatten().any(|n| ["FILE", "DIR", "PATH", "SCRIPT", "DB", "TOML", "SWF", "CSV", "XML"].iter().any(|p| n.contains(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_has_no_extra_section_and_its_examples_are_unfilled() {
        let cmd = Command::new("x").version("1.2.3").about("Does x").after_help("Examples:\n  x --pol-icy a-b\n\nMore text.");
        let page = page(&cmd, "cosched-x").unwrap();
        assert!(!page.contains(".SH EXTRA"), "{page}");
        assert!(page.contains(".nh\n.ad l\n"), "{page}");
        let ex = page.split(".SH EXAMPLES\n").nth(1).unwrap();
        assert!(ex.starts_with(".nf\nx \\-\\-pol\\-icy a\\-b\n.fi\n"), "{ex}");
        for s in ["NOTES", "EXIT STATUS", "ENVIRONMENT", "FILES", "VERSION"] {
            assert!(page.contains(&format!(".SH {s}\n")) || page.contains(&format!(".SH \"{s}\"\n")), "no {s}: {page}");
        }
        assert!(page.contains(concat!("\"cosched ", env!("CARGO_PKG_VERSION"))), "the footer names the version: {page}");
    }

    #[test]
    fn every_fixed_name_offered_is_one_its_flag_parses() {
        use std::str::FromStr;
        for n in cosched_app::registry::names_for("solo").unwrap() {
            assert!(cosched_app::run::SoloMode::from_str(&n).is_ok(), "{n}");
        }
        for n in cosched_app::registry::names_for("in_regime").unwrap() {
            assert!(crate::cmd::common::parse_regime(&n).is_ok(), "{n}");
        }
        for n in cosched_app::registry::names_for("metric").unwrap() {
            assert!(cosched_app::evaluate::Figure::from_str(&n).is_ok(), "{n}");
        }
    }

    #[test]
    fn completion_offers_registry_names_and_no_files_for_plain_values() {
        let cmd = Command::new("x")
            .arg(Arg::new("policy").long("policy"))
            .arg(Arg::new("seed").long("seed").value_name("N"))
            .arg(Arg::new("trace").long("trace").value_name("FILE"));
        let c = for_completion(cmd);
        let arg = |id: &str| c.get_arguments().find(|a| a.get_id() == id).unwrap().clone();
        let policies: Vec<String> = arg("policy").get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
        assert!(policies.contains(&"best-match".to_string()) && policies.contains(&"lua".to_string()), "{policies:?}");
        assert_eq!(arg("seed").get_value_hint(), ValueHint::Other);
        assert_eq!(arg("trace").get_value_hint(), ValueHint::Unknown);
    }
}
