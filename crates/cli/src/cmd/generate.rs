//! `cosched generate`: man pages and shell completions, both made from the
//! clap definitions so they cannot disagree with `--help`. install.sh runs
//! it after installing the binaries.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Command, Subcommand};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  cosched generate man --out /usr/local/share/man/man1   # then: man cosched-run\n  cosched generate completions bash > ~/.local/share/bash-completion/completions/cosched\n  cosched generate completions zsh > ~/.zfunc/_cosched")]
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
            std::fs::create_dir_all(&out).with_context(|| format!("{}", out.display()))?;
            cli.build();
            let n = write_pages(&cli, "cosched", &out)?;
            eprintln!("wrote {n} man pages to {}", out.display());
        }
        What::Completions { shell } => {
            clap_complete::generate(shell, &mut cli, "cosched", &mut std::io::stdout())
        }
    }
    Ok(())
}

/// Writes `name.1` for `cmd` and, recursively, `name-VERB.1` for each of its
/// subcommands (git's convention: `man cosched-run`); returns the count.
fn write_pages(cmd: &Command, name: &str, out: &Path) -> anyhow::Result<usize> {
    let page = cmd.clone().name(name.to_string());
    let mut buf = Vec::new();
    clap_mangen::Man::new(page).render(&mut buf)?;
    let path = out.join(format!("{name}.1"));
    std::fs::write(&path, buf).with_context(|| format!("{}", path.display()))?;
    let mut n = 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        n += write_pages(sub, &format!("{name}-{}", sub.get_name()), out)?;
    }
    Ok(n)
}
