//! `sliced --write-manuals DIR`: the man pages and shell completions of both programs,
//! made from their clap definitions at packaging time (`cargo xtask deb`) rather than
//! written by hand, so a new flag cannot be missing from them.
//!
//! sliced writes slice's too: it already links slice-cli, whose `Cli` is the definition.

use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::config::Args;

/// The shells whose completion directories the Debian package fills.
const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Writes `DIR/man/*.1` (a page per program and per subcommand of slice) and
/// `DIR/completions/` (`NAME.bash`, `_NAME` for zsh, `NAME.fish`).
pub(crate) fn write(dir: &Path) -> anyhow::Result<()> {
    let man = dir.join("man");
    let completions = dir.join("completions");
    for path in [&man, &completions] {
        std::fs::create_dir_all(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
    }
    for command in [Args::command(), slice_cli::Cli::command()] {
        let name = command.get_name().to_owned();
        clap_mangen::generate_to(command.clone(), &man).with_context(|| {
            format!("cannot write the man pages of {name} in {}", man.display())
        })?;
        for shell in SHELLS {
            // slice's scripts are its dynamic ones, calling /usr/bin/slice for slice names.
            if name == "slice" {
                let file = completions.join(clap_complete::Generator::file_name(&shell, &name));
                std::fs::write(&file, slice_cli::completion_script(shell, "slice"))
                    .with_context(|| format!("cannot write {}", file.display()))?;
                continue;
            }
            clap_complete::generate_to(shell, &mut command.clone(), &name, &completions)
                .with_context(|| {
                    format!(
                        "cannot write the {shell} completions of {name} in {}",
                        completions.display()
                    )
                })?;
        }
    }
    Ok(())
}
