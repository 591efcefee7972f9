//! The `slice` command-line tool, as a library: the `slice` binary only calls [`main`].
//!
//! `slice` manages the slices of sliced. The database (sled) admits one process at a
//! time, so the tool works in one of two modes, chosen anew by every invocation:
//!
//! - a `sliced` daemon runs on the data directory: the command goes to its REST API over
//!   the owner-only Unix socket `<data dir>/sliced.sock` (HTTP/1.1, no session needed),
//!   so that the daemon, and the controller behind it, hear of the change at once;
//! - no daemon answers there: the tool opens `<data dir>/store` itself.
//!
//! Both modes sit behind one internal trait, so each command is written once and fails
//! with the same messages either way.
//!
//! ```no_run
//! use clap::Parser;
//!
//! let cli = slice_cli::Cli::parse_from(["slice", "--db", "/tmp/sliced", "list"]);
//! slice_cli::run(cli, &mut std::io::stdout())?;
//! # Ok::<(), slice_cli::CliError>(())
//! ```

mod access;
mod audit;
mod backend;
mod cli;
mod complete;
mod connect;
mod daemon;
mod data_dir;
pub mod declare;
mod error;
mod http;
mod output;
mod verify;
mod views;

use std::error::Error as _;
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use slice_core::ParseError;

pub use crate::access::Account;
use crate::backend::SliceDatabase;
pub use crate::cli::{Cli, Command};
pub use crate::complete::{complete_if_asked, completion_file_name, completion_script};
pub use crate::connect::EtcdTarget;
use crate::connect::Missing;
pub use crate::daemon::daemon_answers;
pub use crate::data_dir::{load_or_create_session_key, DataDir, SESSION_KEY_LEN};
pub use crate::error::CliError;
pub use crate::http::HttpError;

/// Runs `slice` with the process's arguments, printing to stdout and stderr.
///
/// Exit status: 0 on success; 1 when the command failed (a slice-contract error, an
/// invalid identifier, an unreachable database), having changed nothing; 2 when the
/// command line does not parse.
pub fn main() -> ExitCode {
    // A tab press in a shell whose completion script is `slice completions`'s.
    complete_if_asked();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let result = run(cli, &mut out).and_then(|()| out.flush().map_err(CliError::Output));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`slice list | head -1`): it has what it wanted.
        Err(CliError::Output(err)) if err.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(err) => report(&err),
    }
}

/// Runs one parsed command line, writing what it prints to `out`.
pub fn run(cli: Cli, out: &mut dyn Write) -> Result<(), CliError> {
    let data_dir = DataDir::resolve(cli.db);
    let etcd = (!cli.etcd.is_empty()).then_some(EtcdTarget {
        endpoints: cli.etcd,
        prefix: cli.etcd_prefix,
        access: slice_etcd::Access {
            ca_file: cli.etcd_cafile,
            cert_file: cli.etcd_certfile,
            key_file: cli.etcd_keyfile,
            user: cli.etcd_user,
            password_file: cli.etcd_password_file,
        },
        allow_plaintext: cli.etcd_allow_plaintext,
    });
    // Reads and removals need a database to be there; additions make one, as a first
    // write does.
    let existing = || {
        connect::open(
            &data_dir,
            etcd.as_ref(),
            slice_store::LOCKED_WAIT,
            Missing::Refuse,
        )
    };
    let backend = || {
        connect::open(
            &data_dir,
            etcd.as_ref(),
            slice_store::LOCKED_WAIT,
            Missing::Create,
        )
    };
    match cli.command {
        Command::List { json } => list(existing()?.as_ref(), json, out),
        Command::Export => {
            let tree = existing()?.tree()?;
            out.write_all(declare::export(&tree).as_bytes())
                .map_err(CliError::Output)
        }
        Command::Apply {
            file,
            dry_run,
            prune,
        } => {
            // The file is read and checked before the database is touched.
            let declared = declare::parse(&file, &read_file(&file)?)?;
            let opened = if dry_run { existing()? } else { backend()? };
            if !prune {
                let preview = opened.apply(&declared, true)?;
                if let Some(refusal) =
                    declare::mass_deletion(&file, declared.len(), &preview, opened.slices()?.len())
                {
                    if !dry_run {
                        return Err(refusal);
                    }
                    if let CliError::Prune {
                        declared,
                        deleted,
                        current,
                        ..
                    } = refusal
                    {
                        let what = declare::describe_deletion(&file, declared, deleted, current);
                        eprintln!("slice: warning: {what}; that needs --prune");
                    }
                }
            }
            let plan = opened.apply(&declared, dry_run)?;
            let summary = match (plan.is_empty(), dry_run) {
                (true, _) => "nothing to change\n",
                (false, true) => "dry run: nothing was changed\n",
                (false, false) => "applied\n",
            };
            let text = declare::describe(&plan) + summary;
            out.write_all(text.as_bytes()).map_err(CliError::Output)
        }
        Command::Add { slice } => backend()?.create_slice(&slice),
        Command::Delete { slice } => existing()?.delete_slice(&slice),
        Command::AddPort { port, slice } => {
            port.check_bindable()?;
            backend()?.add_port(&slice, port)
        }
        Command::DeletePort { port, slice } => existing()?.delete_port(&slice, port),
        Command::AddHost { mac, port, slice } => {
            port.check_bindable()?;
            mac.check_bindable()?;
            backend()?.add_mac(&slice, port, mac)
        }
        Command::DeleteHost { mac, port, slice } => existing()?.delete_mac(&slice, port, mac),
        Command::Completions { shell, output } => {
            let script = completion_script(shell, &complete::completer_name());
            match output {
                Some(path) => complete::write_script(&path, shell, &script).map(drop),
                None => out.write_all(&script).map_err(CliError::Output),
            }
        }
        Command::Switches { json } => view(&data_dir, views::View::Switches, json, out),
        Command::Hosts { json } => view(&data_dir, views::View::Hosts, json, out),
        Command::Flows { json } => view(&data_dir, views::View::Flows, json, out),
        Command::Topology { json } => view(&data_dir, views::View::Topology, json, out),
        Command::Status { json } => view(&data_dir, views::View::Status, json, out),
        Command::Verify { json } => verify::show(&connect::open_daemon(&data_dir)?, json, out),
    }
}

/// What the daemon on the data directory sees; there is nothing to show without one.
fn view(
    data_dir: &DataDir,
    view: views::View,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    views::show(&connect::open_daemon(data_dir)?, view, json, out)
}

/// The text of `path`, or of standard input for `-`.
fn read_file(path: &str) -> Result<String, CliError> {
    let read = if path == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map(|_| text)
    } else {
        std::fs::read_to_string(path)
    };
    read.map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })
}

fn list(backend: &dyn SliceDatabase, json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    // Read everything before printing anything, so that a failure prints no partial tree.
    let tree = backend.tree()?;
    let printed = if json {
        output::json(&tree, out)
    } else {
        output::text(&tree, out)
    };
    printed.map_err(CliError::Output)
}

/// An invalid identifier is a failed command (status 1) with the identifier's own message;
/// anything else clap rejects is a usage error, shown and numbered as clap does.
fn usage_error(err: clap::Error) -> ExitCode {
    if let Some(invalid) = invalid_value(&err) {
        return report(&CliError::Invalid(invalid.clone()));
    }
    // Help and version are "errors" too, printed to stdout with status 0.
    let _ = err.print();
    ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2))
}

fn invalid_value(err: &clap::Error) -> Option<&ParseError> {
    if err.kind() != clap::error::ErrorKind::ValueValidation {
        return None;
    }
    err.source()?.downcast_ref::<ParseError>()
}

fn report(err: &CliError) -> ExitCode {
    // Nowhere is left to report a failure to write to stderr.
    let _ = writeln!(std::io::stderr(), "slice: {err}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("slice").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn subcommands_are_named_as_the_spec_words_them() {
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "list",
                "add",
                "delete",
                "add_port",
                "delete_port",
                "add_host",
                "delete_host",
                "export",
                "apply",
                "completions",
                "switches",
                "hosts",
                "flows",
                "topology",
                "verify",
                "status"
            ]
        );
    }

    #[test]
    fn short_and_long_options_parse_into_identifiers() {
        let cli = parse(&[
            "add_host",
            "-m",
            "AA:00:00:00:00:01",
            "-p",
            "0X0AB:01",
            "-s",
            "b",
        ])
        .unwrap();
        let long = parse(&[
            "add_host",
            "--mac",
            "aa:00:00:00:00:01",
            "--port",
            "0xab:1",
            "--slice",
            "b",
        ])
        .unwrap();
        assert_eq!(format!("{:?}", cli.command), format!("{:?}", long.command));
        match cli.command {
            Command::AddHost { mac, port, slice } => {
                assert_eq!(mac.to_string(), "aa:00:00:00:00:01");
                assert_eq!(port.to_string(), "0xab:1");
                assert_eq!(slice.as_str(), "b");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_identifiers_come_out_as_their_parse_errors() {
        for (args, expected) in [
            (
                &["add", "a b"][..],
                r#"invalid slice name "a b": may contain only letters, digits, '-', '_' and '.'"#,
            ),
            (
                &["add_port", "-p", "1:1", "-s", "a"][..],
                r#"invalid port name "1:1": the datapath id is written in hexadecimal after 0x; did you mean 0x1:1?"#,
            ),
            (
                &["delete_host", "-m", "00:00", "-p", "0x1:1", "-s", "a"][..],
                r#"invalid MAC address "00:00": expected six colon-separated pairs of hex digits"#,
            ),
        ] {
            let err = parse(args).unwrap_err();
            assert_eq!(invalid_value(&err).unwrap().to_string(), expected);
        }
    }

    #[test]
    fn usage_errors_are_not_mistaken_for_invalid_values() {
        let err = parse(&["add_port", "--slice", "a"]).unwrap_err();
        assert!(invalid_value(&err).is_none());
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("--port"), "{err}");
    }

    #[test]
    fn completions_need_no_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let cli = parse(&["--db", db.to_str().unwrap(), "completions", "bash"]).unwrap();
        let mut out = Vec::new();
        run(cli, &mut out).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("COMPLETE=\"bash\""));
        assert!(!db.exists());
    }

    #[test]
    fn commands_run_against_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().to_str().unwrap();
        let run_args = |args: &[&str]| {
            let cli = parse(&[&["--db", db][..], args].concat()).unwrap();
            let mut out = Vec::new();
            run(cli, &mut out).map(|()| String::from_utf8(out).unwrap())
        };
        assert!(matches!(run_args(&["list"]), Err(CliError::NoDatabase(_))));
        assert_eq!(run_args(&["add", "blue"]).unwrap(), "");
        run_args(&[
            "add_host",
            "-m",
            "00:00:00:00:00:01",
            "-p",
            "0x1:1",
            "-s",
            "blue",
        ])
        .unwrap();
        run_args(&["add_port", "-p", "0x2:3", "-s", "blue"]).unwrap();
        run_args(&["add", "red"]).unwrap();
        assert_eq!(
            run_args(&["list"]).unwrap(),
            "blue\n  0x1:1\n    00:00:00:00:00:01\n  0x2:3\nred\n"
        );
        let err = run_args(&["delete_port", "-p", "0x9:9", "-s", "blue"]).unwrap_err();
        assert_eq!(err.to_string(), "Port 0x9:9 not found");
        run_args(&[
            "delete_host",
            "-m",
            "00:00:00:00:00:01",
            "-p",
            "0x1:1",
            "-s",
            "blue",
        ])
        .unwrap();
        run_args(&["delete_port", "-p", "0x2:3", "-s", "blue"]).unwrap();
        run_args(&["delete", "red"]).unwrap();
        assert_eq!(run_args(&["list"]).unwrap(), "blue\n  0x1:1\n");
    }
}
