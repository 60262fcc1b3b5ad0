//! Example command lines in `--help` and the man pages fitted to 80
//! columns (`cosched_model::examples` says why and how), for every verb.

use clap::Command;

/// `cmd` and its subcommands with every example paragraph of their
/// `after_help` fitted.
pub fn fit(cmd: Command) -> Command {
    let mut cmd = match cmd.get_after_help().map(|s| s.to_string()) {
        Some(text) => {
            let fitted = cosched_model::examples::fit_examples(&text);
            cmd.after_help(fitted)
        }
        None => cmd,
    };
    let subs: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for s in subs {
        cmd = cmd.mut_subcommand(s, fit);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::examples::WIDTH;

    #[test]
    fn every_example_line_of_every_verb_fits_80_columns() {
        use clap::CommandFactory;
        fn walk(cmd: &Command, path: &str, long: &mut Vec<String>) {
            if let Some(text) = cmd.get_after_help() {
                for para in text.to_string().split("\n\n").filter(|p| p.starts_with("Example")) {
                    long.extend(para.lines().filter(|l| l.chars().count() > WIDTH).map(|l| format!("{path}: {l}")));
                }
            }
            for s in cmd.get_subcommands() {
                walk(s, &format!("{path} {}", s.get_name()), long);
            }
        }
        let mut long = Vec::new();
        walk(&fit(crate::Cli::command()), "cosched", &mut long);
        // A word wider than the line cannot be broken; none is today.
        assert!(long.is_empty(), "{long:#?}");
    }
}
