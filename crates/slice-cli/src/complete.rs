//! Shell completion. The scripts `slice completions` writes are clap_complete's dynamic
//! ones: they hand every tab press to `slice` itself (`COMPLETE=<shell> slice -- <words>`),
//! which answers from its own command line, and, for a slice name, from the slices of
//! the daemon running on the data directory. So the scripts never go stale when a
//! command or option is added, and slice names complete from the live state.
//!
//! Completing must never change anything or keep the shell waiting: slice names are
//! asked of a running daemon only (opening the database here would take sled's lock
//! from a daemon starting up, and may write to it), within a short timeout, and any
//! failure just offers no names.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::{Bash, Elvish, EnvCompleter, Fish, Powershell, Zsh};
use clap_complete::Shell;

use crate::{Cli, CliError, DataDir};

/// The environment variable that makes `slice` a completer (clap_complete's default).
const VAR: &str = "COMPLETE";

/// How long a tab press may wait for the daemon's list of slices.
const DAEMON_TIMEOUT: Duration = Duration::from_secs(2);

/// When this process was started by a completion script, answers it and exits; otherwise
/// returns at once. Runs before anything is printed.
pub fn complete_if_asked() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .complete();
}

fn completer_of(shell: Shell) -> Option<&'static dyn EnvCompleter> {
    Some(match shell {
        Shell::Bash => &Bash,
        Shell::Elvish => &Elvish,
        Shell::Fish => &Fish,
        Shell::PowerShell => &Powershell,
        Shell::Zsh => &Zsh,
        _ => return None,
    })
}

/// The completion script of `shell`, calling `completer` (the `slice` binary, by a name
/// the shell finds) on each tab press.
pub fn completion_script(shell: Shell, completer: &str) -> Vec<u8> {
    let mut script = Vec::new();
    match completer_of(shell) {
        // Writing into a Vec cannot fail.
        Some(dynamic) => {
            let _ = dynamic.write_registration(VAR, "slice", "slice", completer, &mut script);
        }
        // A shell clap_complete may add later: its static script, without slice names.
        None => clap_complete::generate(shell, &mut Cli::command(), "slice", &mut script),
    }
    script
}

/// The file name `shell` looks for in its completion directory.
pub fn completion_file_name(shell: Shell) -> String {
    match shell {
        Shell::Bash => "slice".to_owned(),
        Shell::Zsh => "_slice".to_owned(),
        Shell::Fish => "slice.fish".to_owned(),
        Shell::Elvish => "slice.elv".to_owned(),
        Shell::PowerShell => "_slice.ps1".to_owned(),
        other => clap_complete::Generator::file_name(&other, "slice"),
    }
}

/// How the script should call this binary: by the name it was run by when that is a bare
/// name (found on PATH), else by its absolute path, as a relative one would break in
/// another directory.
pub(crate) fn completer_name() -> String {
    let argv0 = std::env::args_os().next().unwrap_or_else(|| "slice".into());
    let path = PathBuf::from(&argv0);
    if path.components().count() > 1 {
        if let Ok(absolute) = std::path::absolute(&path) {
            return absolute.to_string_lossy().into_owned();
        }
    }
    path.to_string_lossy().into_owned()
}

/// Writes `script` to `path`, making the directories it needs; a directory (one that
/// exists, or a path ending in `/`) gets `shell`'s file name. Returns the file written.
pub(crate) fn write_script(path: &Path, shell: Shell, script: &[u8]) -> Result<PathBuf, CliError> {
    let names_directory = path.is_dir() || path.as_os_str().to_string_lossy().ends_with('/');
    let file = if names_directory {
        path.join(completion_file_name(shell))
    } else {
        path.to_owned()
    };
    let fail = |source| CliError::Write {
        path: file.clone(),
        source,
    };
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let mut written = std::fs::File::create(&file).map_err(fail)?;
    written.write_all(script).map_err(fail)?;
    written.sync_all().map_err(fail)?;
    Ok(file)
}

/// The slices whose names start with `current`, from the daemon on the data directory
/// the line being completed names; none when no daemon answers.
pub(crate) fn slice_names(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    let data_dir = DataDir::resolve(db_on_the_line(std::env::args_os()));
    let Ok(names) = crate::connect::open_daemon(&data_dir)
        .and_then(|daemon| daemon.with_timeout(DAEMON_TIMEOUT).slice_names())
    else {
        return Vec::new();
    };
    names
        .into_iter()
        .map(|name| name.to_string())
        .filter(|name| name.starts_with(current))
        .map(CompletionCandidate::new)
        .collect()
}

/// The data directory the words being completed name (`--db PATH`, `--db=PATH`), else
/// `$SLICED_DB`; `None` for the default. The arguments are the completer's own: the words
/// come after `--`.
fn db_on_the_line(args: impl IntoIterator<Item = OsString>) -> Option<PathBuf> {
    let words: Vec<OsString> = args
        .into_iter()
        .skip_while(|arg| arg != "--")
        .skip(1)
        .collect();
    let mut named = None;
    for (index, word) in words.iter().enumerate() {
        let Some(text) = word.to_str() else { continue };
        if text == "--db" {
            named = words.get(index + 1).map(PathBuf::from);
        } else if let Some(value) = text.strip_prefix("--db=") {
            named = Some(PathBuf::from(value));
        }
    }
    named
        .filter(|path| !path.as_os_str().is_empty())
        .or_else(|| {
            std::env::var_os("SLICED_DB")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_data_directory_is_read_from_the_words_being_completed() {
        assert_eq!(
            db_on_the_line(args(&["slice", "--", "slice", "--db", "/a", "delete", ""])),
            Some(PathBuf::from("/a"))
        );
        assert_eq!(
            db_on_the_line(args(&["slice", "--", "slice", "delete", "--db=/b", "x"])),
            Some(PathBuf::from("/b"))
        );
    }

    #[test]
    fn every_shell_gets_a_script_that_calls_slice_back() {
        for shell in [
            Shell::Bash,
            Shell::Zsh,
            Shell::Fish,
            Shell::Elvish,
            Shell::PowerShell,
        ] {
            let script = String::from_utf8(completion_script(shell, "/usr/bin/slice")).unwrap();
            assert!(script.contains("/usr/bin/slice"), "{shell}: {script}");
            assert!(script.contains("COMPLETE"), "{shell}: {script}");
        }
    }
}
