//! `sliced --write-manuals DIR` and `sliced completions SHELL`: the man pages and shell
//! completions of both programs, made from their clap definitions (at packaging time by
//! `cargo xtask deb`, or by an operator who built from source) rather than written by
//! hand, so a new flag cannot be missing from them.
//!
//! sliced writes slice's too: it already links slice-cli, whose `Cli` is the definition.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::{ArgAction, CommandFactory};
use clap_complete::Shell;
use clap_mangen::roff::{bold, italic, roman, Inline, Roff};
use clap_mangen::Man;

use crate::config::Args;

/// The shells whose completion directories the Debian package fills.
const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Writes `DIR/man/*.1` (a page per program and per subcommand) and `DIR/completions/`
/// (`NAME.bash`, `_NAME` for zsh, `NAME.fish`).
pub(crate) fn write(dir: &Path) -> anyhow::Result<()> {
    let man = dir.join("man");
    let completions = dir.join("completions");
    for path in [&man, &completions] {
        std::fs::create_dir_all(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
    }
    for command in [Args::command(), slice_cli::Cli::command()] {
        let name = command.get_name().to_owned();
        write_pages(command.clone(), &man).with_context(|| {
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
    println!("wrote {} and {}", man.display(), completions.display());
    Ok(())
}

/// `sliced completions SHELL [--output PATH]`: the script on stdout or in a file, as
/// `slice completions` gives its own (a directory gets the name the shell looks for).
pub(crate) fn completions(shell: Shell, output: Option<&Path>) -> anyhow::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Args::command(), "sliced", &mut script);
    let Some(path) = output else {
        return std::io::stdout()
            .write_all(&script)
            .context("cannot write the completion script");
    };
    let names_directory = path.is_dir() || path.as_os_str().to_string_lossy().ends_with('/');
    let file = if names_directory {
        path.join(file_name(shell))
    } else {
        path.to_owned()
    };
    let write = || -> std::io::Result<()> {
        if let Some(parent) = file
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            std::fs::create_dir_all(parent)?;
        }
        let mut written = std::fs::File::create(&file)?;
        written.write_all(&script)?;
        written.sync_all()
    };
    write().with_context(|| format!("cannot write {}", file.display()))
}

/// The file name `shell` looks for in its completion directory.
fn file_name(shell: Shell) -> String {
    match shell {
        Shell::Bash => "sliced".to_owned(),
        Shell::Zsh => "_sliced".to_owned(),
        Shell::Fish => "sliced.fish".to_owned(),
        Shell::Elvish => "sliced.elv".to_owned(),
        Shell::PowerShell => "_sliced.ps1".to_owned(),
        other => clap_complete::Generator::file_name(&other, "sliced"),
    }
}

/// The page of `command` and of each of its subcommands, as `clap_mangen::generate_to`
/// writes them but with a synopsis that names each option's value.
fn write_pages(command: clap::Command, dir: &Path) -> std::io::Result<()> {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    write_page(command, dir)
}

fn write_page(command: clap::Command, dir: &Path) -> std::io::Result<()> {
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        write_page(sub.clone(), dir)?;
    }
    let man = Man::new(command.clone());
    let mut page = std::fs::File::create(dir.join(man.get_filename()))?;
    render(&man, &command, &mut page)?;
    page.flush()
}

/// clap_mangen's page with its synopsis replaced.
fn render(man: &Man, command: &clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    let mut page = Vec::new();
    man.render(&mut page)?;
    let page = String::from_utf8_lossy(&page);
    let mut synopsis = Roff::default();
    synopsis.text(synopsis_line(command));
    let synopsis = synopsis.to_roff();
    // The section's text runs from its heading to the next; the page has its preamble.
    const HEADING: &str = ".SH SYNOPSIS\n";
    let Some(start) = page.find(HEADING) else {
        return out.write_all(page.as_bytes());
    };
    let text_start = start + HEADING.len();
    let text_end = page[text_start..]
        .find("\n.SH ")
        .map_or(page.len(), |at| text_start + at + 1);
    let own_text: String = synopsis
        .lines()
        .filter(|line| !line.starts_with(".ie ") && !line.starts_with(".el "))
        .flat_map(|line| [line, "\n"])
        .collect();
    out.write_all(page[..text_start].as_bytes())?;
    out.write_all(own_text.as_bytes())?;
    out.write_all(page[text_end..].as_bytes())
}

/// `name [--db PATH] [-d|--daemon] [--allowed-dpid DPID]... [COMMAND]`: what `--help`'s
/// options list says of each flag, on one line (clap_mangen's drops the values).
fn synopsis_line(command: &clap::Command) -> Vec<Inline> {
    let name = command
        .get_bin_name()
        .or(command.get_display_name())
        .unwrap_or_else(|| command.get_name());
    let mut line = vec![bold(name)];
    for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
        let (open, close) = if arg.is_required_set() {
            ("<", ">")
        } else {
            ("[", "]")
        };
        let values = arg.get_value_names().map(|names| names.join(" "));
        let takes_value = arg.get_num_args().is_some_and(|range| range.takes_values());
        line.push(roman(format!(" {open}")));
        match (arg.get_short(), arg.get_long()) {
            (Some(short), Some(long)) => {
                line.push(bold(format!("-{short}")));
                line.push(roman("|"));
                line.push(bold(format!("--{long}")));
            }
            (Some(short), None) => line.push(bold(format!("-{short}"))),
            (None, Some(long)) => line.push(bold(format!("--{long}"))),
            (None, None) => {
                line.push(italic(values.unwrap_or_else(|| arg.get_id().to_string())));
                line.push(roman(close));
                continue;
            }
        }
        if takes_value {
            let value = values.unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
            line.push(roman(" "));
            line.push(italic(value));
        }
        line.push(roman(close));
        if matches!(arg.get_action(), ArgAction::Append | ArgAction::Count) {
            line.push(roman("..."));
        }
    }
    if command.get_subcommands().any(|sub| !sub.is_hide_set()) {
        let open_close = if command.is_subcommand_required_set() {
            ("<", ">")
        } else {
            ("[", "]")
        };
        let value = command.get_subcommand_value_name().unwrap_or("COMMAND");
        line.push(roman(format!(" {}", open_close.0)));
        line.push(italic(value.to_owned()));
        line.push(roman(open_close.1));
    }
    line
}
