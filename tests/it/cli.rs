//! Black-box tests of the `slice` tool: the real binary on a real database in a temporary
//! directory, alone (it opens the database itself) and beside a real `sliced` (it sends
//! its commands over the daemon's Unix socket).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{agent, status_json, Daemon, SLICE};
use serde_json::{json, Value};

// ---- helpers ------------------------------------------------------------------------------

/// A temporary data directory as sliced keeps one: owner-only, so that the tool has no
/// permission to tighten and nothing to say about it.
fn private_tempdir() -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// What one run of `slice` did.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }
}

fn run(dir: &Path, args: &[&str]) -> Run {
    crate::common::slice(dir, args).into()
}

/// Runs a command that must succeed silently on stderr; returns its stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    let run = run(dir, args);
    assert_eq!(run.code, Some(0), "slice {args:?} failed: {run:?}");
    assert_eq!(run.stderr, "", "slice {args:?} wrote to stderr");
    run.stdout
}

/// Runs a command that must fail with status 1, print nothing on stdout and change
/// nothing; returns its stderr.
fn fails(dir: &Path, args: &[&str]) -> String {
    let before = list(dir);
    let run = run(dir, args);
    assert_eq!(run.code, Some(1), "slice {args:?}: {run:?}");
    assert_eq!(run.stdout, "", "slice {args:?} printed on stdout");
    assert_eq!(list(dir), before, "slice {args:?} changed something");
    run.stderr
}

fn list(dir: &Path) -> String {
    ok(dir, &["list"])
}

fn list_json(dir: &Path) -> Value {
    serde_json::from_str(&ok(dir, &["list", "--json"])).expect("list --json prints JSON")
}

/// `slice` with a chosen environment and no `--db`.
fn slice_with_env(env: &[(&str, &Path)], args: &[&str]) -> Run {
    let mut command = Command::new(SLICE);
    command
        .args(args)
        .env_remove("SLICED_DB")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("slice runs").into()
}

const MAC1: &str = "00:00:00:00:00:01";
const MAC2: &str = "00:00:00:00:00:02";

/// The spec's example: blue with port 0x1:1 holding one host and an empty port 0x2:3,
/// then an empty slice red.
fn make_example(dir: &Path) {
    ok(dir, &["add", "blue"]);
    ok(dir, &["add_port", "--port", "0x1:1", "--slice", "blue"]);
    ok(
        dir,
        &[
            "add_host", "--mac", MAC1, "--port", "0x1:1", "--slice", "blue",
        ],
    );
    ok(dir, &["add_port", "-p", "0x2:3", "-s", "blue"]);
    ok(dir, &["add", "red"]);
}

const EXAMPLE_LIST: &str = "blue\n  0x1:1\n    00:00:00:00:00:01\n  0x2:3\nred\n";

/// Every way a well-formed command can break the slice contract, with the spec's message;
/// the same whichever mode the tool is in. Expects the example of [`make_example`].
fn check_contract_errors(dir: &Path) {
    let cases: &[(&[&str], &str)] = &[
        (&["add", "blue"], "Slice blue already exists"),
        (
            &["add_port", "--port", "0x1:1", "--slice", "blue"],
            "Port 0x1:1 already exists",
        ),
        // Named differently, the same port.
        (
            &["add_port", "--port", "0X0001:01", "--slice", "blue"],
            "Port 0x1:1 already exists",
        ),
        (
            &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"],
            "MAC address 00:00:00:00:00:01 already exists",
        ),
        (
            &[
                "add_host",
                "-m",
                "00:00:00:00:00:0a",
                "-p",
                "0x2:3",
                "-s",
                "blue",
            ],
            "MAC address 00:00:00:00:00:0a already exists",
        ),
        (
            &["add_port", "-p", "0x1:1", "-s", "green"],
            "Slice green not found",
        ),
        (
            &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "green"],
            "Slice green not found",
        ),
        (&["delete", "green"], "Slice green not found"),
        (
            &["delete_port", "-p", "0x1:1", "-s", "green"],
            "Slice green not found",
        ),
        (
            &["delete_port", "-p", "0x9:9", "-s", "blue"],
            "Port 0x9:9 not found",
        ),
        (
            &["delete_host", "-m", MAC1, "-p", "0x1:1", "-s", "green"],
            "Slice green not found",
        ),
        (
            &["delete_host", "-m", MAC1, "-p", "0x9:9", "-s", "blue"],
            "Port 0x9:9 not found",
        ),
        (
            &["delete_host", "-m", MAC2, "-p", "0x1:1", "-s", "blue"],
            "MAC address 00:00:00:00:00:02 not found",
        ),
        // The MAC is on another port of the slice: not on this one.
        (
            &["delete_host", "-m", MAC1, "-p", "0x2:3", "-s", "blue"],
            "MAC address 00:00:00:00:00:01 not found",
        ),
        (&["delete", "Blue"], "Slice Blue not found"),
    ];
    // A host named in capitals, to show that it is found in any case afterwards.
    ok(
        dir,
        &[
            "add_host",
            "-m",
            "00:00:00:00:00:0A",
            "-p",
            "0x2:3",
            "-s",
            "blue",
        ],
    );
    for (args, message) in cases {
        assert_eq!(fails(dir, args), format!("slice: {message}\n"), "{args:?}");
    }
}

/// Malformed identifiers: status 1, a message naming the value and what is wrong.
fn check_invalid_values(dir: &Path) {
    let long_name = "x".repeat(65);
    let cases: &[(&[&str], &str)] = &[
        (
            &["add", "a b"],
            r#"invalid slice name "a b": may contain only letters, digits, '-', '_' and '.'"#,
        ),
        (&["add", ""], r#"invalid slice name "": must not be empty"#),
        (
            &["add", &long_name],
            &format!("invalid slice name \"{long_name}\": must be at most 64 characters long"),
        ),
        (
            &["delete", "a/b"],
            r#"invalid slice name "a/b": may contain only letters, digits, '-', '_' and '.'"#,
        ),
        (
            &["add_port", "-p", "1:1", "-s", "blue"],
            r#"invalid port name "1:1": expected 0x<hex dpid>:<decimal port number>"#,
        ),
        (
            &["add_port", "-p", "0xg:1", "-s", "blue"],
            r#"invalid port name "0xg:1": the datapath id must be hexadecimal digits after 0x"#,
        ),
        (
            &["delete_port", "-p", "0x1:-1", "-s", "blue"],
            r#"invalid port name "0x1:-1": the port number must be decimal digits"#,
        ),
        (
            &[
                "add_host",
                "-m",
                "00:00:00:00:00:01",
                "-p",
                "0x1:4294967296",
                "-s",
                "blue",
            ],
            r#"invalid port name "0x1:4294967296": the port number does not fit in 32 bits"#,
        ),
        (
            &[
                "add_host",
                "-m",
                "00:00:00:00:01",
                "-p",
                "0x1:1",
                "-s",
                "blue",
            ],
            r#"invalid MAC address "00:00:00:00:01": expected six colon-separated pairs of hex digits"#,
        ),
        (
            &[
                "delete_host",
                "-m",
                "00-00-00-00-00-01",
                "-p",
                "0x1:1",
                "-s",
                "blue",
            ],
            r#"invalid MAC address "00-00-00-00-00-01": expected six colon-separated pairs of hex digits"#,
        ),
        (
            &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "no way"],
            r#"invalid slice name "no way": may contain only letters, digits, '-', '_' and '.'"#,
        ),
    ];
    for (args, message) in cases {
        assert_eq!(fails(dir, args), format!("slice: {message}\n"), "{args:?}");
    }
}

/// Command lines that do not parse: status 2, a message naming what is missing or wrong.
fn check_usage_errors(dir: &Path) {
    let cases: &[(&[&str], &[&str])] = &[
        (&["add_port", "--slice", "blue"], &["--port <PORT_NAME>"]),
        (&["add_port", "--port", "0x1:1"], &["--slice <SLICE_NAME>"]),
        (
            &["add_host", "-p", "0x1:1", "-s", "blue"],
            &["--mac <MAC_ADDRESS>"],
        ),
        (
            &["add_host", "-m", MAC1],
            &["--port <PORT_NAME>", "--slice <SLICE_NAME>"],
        ),
        (
            &["delete_host", "-m", MAC1, "-s", "blue"],
            &["--port <PORT_NAME>"],
        ),
        (&["delete_port", "-p", "0x1:1"], &["--slice <SLICE_NAME>"]),
        (&["add"], &["<SLICE_NAME>"]),
        (&["delete"], &["<SLICE_NAME>"]),
        (&["add", "a", "b"], &["'b'"]),
        (
            &["add-port", "-p", "0x1:1", "-s", "blue"],
            &["'add-port'", "add_port"],
        ),
        (&["list", "--yaml"], &["--yaml"]),
        (&["add_port", "--port"], &["--port"]),
        (&[], &["Usage:"]),
    ];
    for (args, mentions) in cases {
        let before = list(dir);
        let run = run(dir, args);
        assert_eq!(run.code, Some(2), "slice {args:?}: {run:?}");
        assert_eq!(run.stdout, "", "slice {args:?}");
        for mention in *mentions {
            assert!(
                run.stderr.contains(mention),
                "slice {args:?}: {}",
                run.stderr
            );
        }
        assert_eq!(list(dir), before, "slice {args:?} changed something");
    }
}

// ---- direct mode: no daemon ----------------------------------------------------------------

#[test]
fn an_empty_database_lists_nothing_at_all() {
    let dir = private_tempdir().unwrap();
    ok(dir.path(), &["add", "gone"]);
    ok(dir.path(), &["delete", "gone"]);
    let run = run(dir.path(), &["list"]);
    assert_eq!(run.code, Some(0));
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "");
    assert_eq!(list_json(dir.path()), json!([]));
}

/// Every command that only reads or removes: the reads first.
fn reads_and_removals(declaration: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["list"],
        vec!["list", "--json"],
        vec!["export"],
        vec!["apply", "-f", declaration, "--dry-run"],
        vec!["delete", "blue"],
        vec!["delete_port", "-p", "0x1:1", "-s", "blue"],
        vec!["delete_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"],
    ]
}

#[test]
fn a_read_where_there_is_no_database_says_so_exits_1_and_creates_nothing() {
    let dir = private_tempdir().unwrap();
    let declaration = dir.path().join("slices.toml");
    std::fs::write(&declaration, "[[slice]]\nname = \"blue\"\n").unwrap();
    let declaration = declaration.to_str().unwrap();
    // A mistyped directory, and one that exists but holds no database.
    let typo = dir.path().join("typo");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for data_dir in [&typo, &empty] {
        for args in reads_and_removals(declaration) {
            let run = run(data_dir, &args);
            assert_eq!(run.code, Some(1), "{args:?}: {run:?}");
            assert_eq!(run.stdout, "", "{args:?}");
            assert_eq!(
                run.stderr,
                format!(
                    "slice: no database in {} (is the daemon's data directory elsewhere? \
                     see --db / SLICED_DB)\n",
                    data_dir.display()
                ),
                "{args:?}"
            );
        }
        let named = slice_with_env(&[("SLICED_DB", data_dir)], &["list"]);
        assert_eq!(named.code, Some(1), "{named:?}");
    }
    assert!(!typo.exists(), "a read made the directory it did not find");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    // A write makes the database, as a first run does; then reads find it.
    ok(&typo, &["add", "blue"]);
    assert_eq!(list(&typo), "blue\n");
    for args in &reads_and_removals(declaration)[..4] {
        assert_eq!(run(&typo, args).code, Some(0), "{args:?}");
    }
}

#[test]
fn one_slice_is_one_line() {
    let dir = private_tempdir().unwrap();
    assert_eq!(ok(dir.path(), &["add", "blue"]), "");
    assert_eq!(list(dir.path()), "blue\n");
}

#[test]
fn the_spec_example_lists_exactly() {
    let dir = private_tempdir().unwrap();
    make_example(dir.path());
    assert_eq!(list(dir.path()), EXAMPLE_LIST);
}

#[test]
fn slices_ports_and_hosts_list_in_the_order_they_were_added() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    for slice in ["zeta", "alpha", "mid.1"] {
        ok(d, &["add", slice]);
    }
    ok(d, &["add_port", "-p", "0x9:1", "-s", "alpha"]);
    ok(d, &["add_port", "-p", "0x1:7", "-s", "alpha"]);
    // Read in any case and with leading zeros, shown canonically.
    ok(
        d,
        &[
            "add_host",
            "-m",
            "00:00:00:00:00:09",
            "-p",
            "0X00AB:02",
            "-s",
            "alpha",
        ],
    );
    ok(
        d,
        &[
            "add_host",
            "-m",
            "AA:BB:CC:DD:EE:FF",
            "-p",
            "0xab:2",
            "-s",
            "alpha",
        ],
    );
    ok(
        d,
        &[
            "add_host",
            "-m",
            "00:00:00:00:00:03",
            "-p",
            "0x1:7",
            "-s",
            "alpha",
        ],
    );
    ok(
        d,
        &[
            "add_host",
            "-m",
            "00:00:00:00:00:01",
            "-p",
            "0x1:7",
            "-s",
            "alpha",
        ],
    );
    ok(
        d,
        &[
            "add_host",
            "-m",
            "00:00:00:00:00:01",
            "-p",
            "0x1:1",
            "-s",
            "zeta",
        ],
    );
    assert_eq!(
        list(d),
        "zeta\n\
         \x20 0x1:1\n\
         \x20   00:00:00:00:00:01\n\
         alpha\n\
         \x20 0x9:1\n\
         \x20 0x1:7\n\
         \x20   00:00:00:00:00:03\n\
         \x20   00:00:00:00:00:01\n\
         \x20 0xab:2\n\
         \x20   00:00:00:00:00:09\n\
         \x20   aa:bb:cc:dd:ee:ff\n\
         mid.1\n"
    );
}

#[test]
fn add_host_creates_its_port() {
    let dir = private_tempdir().unwrap();
    ok(dir.path(), &["add", "blue"]);
    ok(
        dir.path(),
        &["add_host", "-m", MAC1, "-p", "0x5:2", "-s", "blue"],
    );
    assert_eq!(list(dir.path()), "blue\n  0x5:2\n    00:00:00:00:00:01\n");
    // The port exists now: adding it is a conflict.
    assert_eq!(
        fails(dir.path(), &["add_port", "-p", "0x5:2", "-s", "blue"]),
        "slice: Port 0x5:2 already exists\n"
    );
}

#[test]
fn deletes_remove_what_they_name_and_leave_the_rest() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    make_example(d);
    ok(d, &["add_host", "-m", MAC2, "-p", "0x1:1", "-s", "blue"]);
    assert_eq!(
        ok(d, &["delete_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"]),
        ""
    );
    assert_eq!(
        list(d),
        "blue\n  0x1:1\n    00:00:00:00:00:02\n  0x2:3\nred\n"
    );
    // The last host of a port goes; the port stays.
    ok(
        d,
        &[
            "delete_host",
            "--mac",
            MAC2,
            "--port",
            "0x1:1",
            "--slice",
            "blue",
        ],
    );
    assert_eq!(list(d), "blue\n  0x1:1\n  0x2:3\nred\n");
    ok(d, &["delete_port", "--port", "0x1:1", "--slice", "blue"]);
    assert_eq!(list(d), "blue\n  0x2:3\nred\n");
    ok(d, &["delete", "blue"]);
    assert_eq!(list(d), "red\n");
    // A slice made again under an old name starts empty, and comes last.
    ok(d, &["add", "blue"]);
    assert_eq!(list(d), "red\nblue\n");
}

#[test]
fn contract_errors_print_the_spec_messages_and_change_nothing() {
    let dir = private_tempdir().unwrap();
    make_example(dir.path());
    check_contract_errors(dir.path());
}

#[test]
fn invalid_identifiers_are_named_with_what_is_wrong() {
    let dir = private_tempdir().unwrap();
    make_example(dir.path());
    check_invalid_values(dir.path());
}

#[test]
fn usage_errors_exit_2_and_name_the_problem() {
    let dir = private_tempdir().unwrap();
    make_example(dir.path());
    check_usage_errors(dir.path());
}

#[test]
fn list_json_is_the_same_tree() {
    let dir = private_tempdir().unwrap();
    make_example(dir.path());
    assert_eq!(
        list_json(dir.path()),
        json!([
            {"name": "blue", "ports": [
                {"name": "0x1:1", "dpid": 1, "port_no": 1,
                 "mac_addresses": [{"name": "00:00:00:00:00:01"}]},
                {"name": "0x2:3", "dpid": 2, "port_no": 3, "mac_addresses": []},
            ]},
            {"name": "red", "ports": []},
        ])
    );
}

#[test]
fn large_identifiers_survive_the_round_trip() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let name = "A".repeat(64);
    ok(d, &["add", &name]);
    ok(
        d,
        &[
            "add_host",
            "-m",
            "ff:ff:ff:ff:ff:ff",
            "-p",
            "0xFFFFFFFFFFFFFFFF:4294967295",
            "-s",
            &name,
        ],
    );
    assert_eq!(
        list(d),
        format!("{name}\n  0xffffffffffffffff:4294967295\n    ff:ff:ff:ff:ff:ff\n")
    );
    assert_eq!(list_json(d)[0]["ports"][0]["dpid"], json!(u64::MAX));
}

#[test]
fn changes_persist_across_invocations() {
    let dir = private_tempdir().unwrap();
    make_example(dir.path());
    // Each run is its own process opening the database afresh.
    for _ in 0..2 {
        assert_eq!(list(dir.path()), EXAMPLE_LIST);
    }
    let store = dir.path().join("store");
    assert!(store.is_dir(), "the database lives in <data dir>/store");
}

#[test]
fn concurrent_invocations_take_turns_on_the_database() {
    let dir = private_tempdir().unwrap();
    let children: Vec<_> = ["s1", "s2", "s3", "s4"]
        .iter()
        .map(|name| {
            Command::new(SLICE)
                .arg("--db")
                .arg(dir.path())
                .args(["add", name])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("slice starts")
        })
        .collect();
    for child in children {
        let run = Run::from(child.wait_with_output().unwrap());
        assert_eq!(run.code, Some(0), "{run:?}");
    }
    let mut names: Vec<String> = list(dir.path()).lines().map(str::to_owned).collect();
    names.sort();
    assert_eq!(names, ["s1", "s2", "s3", "s4"]);
}

#[test]
fn a_dead_daemons_socket_file_is_ignored() {
    let dir = private_tempdir().unwrap();
    // A socket file nobody listens on, as a killed daemon leaves behind.
    drop(std::os::unix::net::UnixListener::bind(dir.path().join("sliced.sock")).unwrap());
    ok(dir.path(), &["add", "blue"]);
    assert_eq!(list(dir.path()), "blue\n");
}

#[test]
fn sliced_db_names_the_data_directory_and_db_wins_over_it() {
    let dir = private_tempdir().unwrap();
    let other = private_tempdir().unwrap();
    let run = slice_with_env(&[("SLICED_DB", dir.path())], &["add", "from-env"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(list(dir.path()), "from-env\n");

    let db = dir.path().to_str().unwrap();
    let run = slice_with_env(
        &[("SLICED_DB", other.path())],
        &["--db", db, "add", "from-flag"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(list(dir.path()), "from-env\nfrom-flag\n");
    let other_listed = crate::common::slice(other.path(), &["list"]);
    assert_eq!(other_listed.status.code(), Some(1), "--db won");
    assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0);
}

#[test]
fn without_db_the_per_user_data_directory_is_used() {
    let home = private_tempdir().unwrap();
    let xdg = private_tempdir().unwrap();

    let run = slice_with_env(&[("HOME", home.path())], &["add", "in-home"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let home_dir = home.path().join(".local/share/sliced");
    assert_eq!(list(&home_dir), "in-home\n");

    let run = slice_with_env(
        &[("HOME", home.path()), ("XDG_DATA_HOME", xdg.path())],
        &["add", "in-xdg"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(list(&xdg.path().join("sliced")), "in-xdg\n");
    assert_eq!(list(&home_dir), "in-home\n");
}

#[test]
fn an_unusable_data_directory_is_named() {
    let dir = private_tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a directory").unwrap();
    for db in [file.join("db"), file.clone()] {
        for args in [&["list"][..], &["add", "blue"][..]] {
            let run = run(&db, args);
            assert_eq!(run.code, Some(1), "{db:?} {args:?}: {run:?}");
            assert_eq!(run.stdout, "");
            assert!(
                run.stderr.starts_with("slice: ") && run.stderr.contains(db.to_str().unwrap()),
                "{}",
                run.stderr
            );
            assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}

#[test]
fn help_shows_an_example_for_every_command() {
    let dir = private_tempdir().unwrap();
    let help = ok(dir.path(), &["--help"]);
    for name in [
        "list",
        "add",
        "delete",
        "add_port",
        "delete_port",
        "add_host",
        "delete_host",
        "completions",
        "--db",
        "SLICED_DB",
        "Example",
    ] {
        assert!(help.contains(name), "--help lacks {name}:\n{help}");
    }
    for name in [
        "list",
        "add",
        "delete",
        "add_port",
        "delete_port",
        "add_host",
        "delete_host",
        "completions",
    ] {
        let help = ok(dir.path(), &[name, "--help"]);
        assert!(
            help.contains(&format!("$ slice {name}")),
            "{name} --help has no example:\n{help}"
        );
    }
    let help = ok(dir.path(), &["add_host", "--help"]);
    for option in [
        "-m, --mac <MAC_ADDRESS>",
        "-p, --port <PORT_NAME>",
        "-s, --slice <SLICE_NAME>",
    ] {
        assert!(help.contains(option), "{help}");
    }
    assert!(ok(dir.path(), &["--version"]).starts_with("slice "));
}

#[test]
fn completion_scripts_are_printed_without_touching_the_database() {
    let dir = private_tempdir().unwrap();
    let db = dir.path().join("db");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = ok(&db, &["completions", shell]);
        assert!(script.contains("add_host"), "{shell}");
    }
    assert!(!db.exists());
    assert_eq!(run(&db, &["completions", "tcsh"]).code, Some(2));
}

#[test]
fn a_database_held_by_another_process_is_waited_for() {
    let dir = private_tempdir().unwrap();
    ok(dir.path(), &["add", "blue"]);
    // A holder that is no daemon, like one still starting: it lets go after a moment.
    let holder = slice_store::Store::open(&dir.path().join("store")).unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(holder);
    });
    let started = Instant::now();
    ok(dir.path(), &["add", "red"]);
    assert!(started.elapsed() >= Duration::from_millis(400));
    releaser.join().unwrap();
    assert_eq!(list(dir.path()), "blue\nred\n");
}

// ---- beside a running daemon -----------------------------------------------------------------

fn get(daemon: &Daemon, path: &str) -> (u16, Value) {
    status_json(agent().get(&daemon.url(path)).call())
}

fn post(daemon: &Daemon, path: &str, body: Value) -> (u16, Value) {
    status_json(agent().post(&daemon.url(path)).send_json(body))
}

#[test]
fn tool_writes_are_visible_through_the_rest_api_at_once() {
    let dir = private_tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let d = dir.path();
    make_example(d);
    ok(
        d,
        &[
            "add_host",
            "-m",
            "AA:00:00:00:00:02",
            "-p",
            "0xAB:9",
            "-s",
            "red",
        ],
    );
    assert_eq!(
        get(&daemon, "/slices"),
        (200, json!([{"name": "blue"}, {"name": "red"}]))
    );
    assert_eq!(
        get(&daemon, "/slices/blue/ports"),
        (
            200,
            json!([
                {"name": "0x1:1", "dpid": 1, "port_no": 1},
                {"name": "0x2:3", "dpid": 2, "port_no": 3},
            ])
        )
    );
    assert_eq!(
        get(&daemon, "/slices/blue/ports/0x1:1/mac_addresses"),
        (200, json!([{"name": MAC1}]))
    );
    assert_eq!(
        get(&daemon, "/slices/blue/ports/0x2:3/mac_addresses"),
        (200, json!([]))
    );
    assert_eq!(
        get(&daemon, "/slices/red/ports/0xab:9/mac_addresses"),
        (200, json!([{"name": "aa:00:00:00:00:02"}]))
    );
    ok(d, &["delete_port", "-p", "0x1:1", "-s", "blue"]);
    ok(d, &["delete", "red"]);
    assert_eq!(get(&daemon, "/slices"), (200, json!([{"name": "blue"}])));
    assert_eq!(
        get(&daemon, "/slices/blue/ports"),
        (200, json!([{"name": "0x2:3", "dpid": 2, "port_no": 3}]))
    );
}

#[test]
fn rest_writes_appear_in_slice_list() {
    let dir = private_tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    assert_eq!(ok(dir.path(), &["list"]), "");
    assert_eq!(post(&daemon, "/slices", json!({"name": "blue"})).0, 201);
    assert_eq!(
        post(
            &daemon,
            "/slices/blue/ports",
            json!({"dpid": 1, "port_no": 1})
        )
        .0,
        201
    );
    assert_eq!(
        post(
            &daemon,
            "/slices/blue/ports/0x1:1/mac_addresses",
            json!({"name": MAC1})
        )
        .0,
        201
    );
    // Endpoint 9 creates the port.
    assert_eq!(
        post(
            &daemon,
            "/slices/blue/ports/0x2:3/mac_addresses",
            json!({"name": MAC2})
        )
        .0,
        201
    );
    assert_eq!(post(&daemon, "/slices", json!({"name": "red"})).0, 201);
    assert_eq!(
        list(dir.path()),
        "blue\n  0x1:1\n    00:00:00:00:00:01\n  0x2:3\n    00:00:00:00:00:02\nred\n"
    );
}

#[test]
fn errors_through_the_daemon_are_the_same() {
    let dir = private_tempdir().unwrap();
    let _daemon = Daemon::start(dir.path());
    make_example(dir.path());
    check_contract_errors(dir.path());
    check_invalid_values(dir.path());
    check_usage_errors(dir.path());
}

/// Slice names made of the grammar's punctuation, or of the templates' own words, come
/// back from the daemon as the same contract errors the tool reports on its own.
#[test]
fn contract_errors_on_awkward_names_are_the_same_in_both_modes() {
    let dir = private_tempdir().unwrap();
    let longest = "x".repeat(64);
    let names = ["...", "-", "Slice", "found", &longest];
    let errors = |dir: &Path| -> Vec<String> {
        let mut seen = Vec::new();
        for name in names {
            seen.push(fails(dir, &["delete", name]));
            seen.push(fails(
                dir,
                &[
                    "add_port",
                    "-p",
                    "0xffffffffffffffff:4294967295",
                    "-s",
                    name,
                ],
            ));
            ok(dir, &["add", name]);
            seen.push(fails(dir, &["add", name]));
            seen.push(fails(dir, &["delete_port", "-p", "0x0:0", "-s", name]));
            ok(dir, &["delete", name]);
        }
        seen
    };
    // Removals need a database to remove from.
    ok(dir.path(), &["add", "other"]);
    let direct = errors(dir.path());
    assert_eq!(direct[0], "slice: Slice ... not found\n");
    assert_eq!(direct[2], "slice: Slice ... already exists\n");
    assert_eq!(direct[3], "slice: Port 0x0:0 not found\n");
    let daemon = Daemon::start(dir.path());
    assert_eq!(errors(dir.path()), direct);
    assert!(daemon.terminate().success());
}

#[test]
fn both_modes_list_the_same_tree() {
    let dir = private_tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    make_example(dir.path());
    let (text, json) = (list(dir.path()), list_json(dir.path()));
    assert_eq!(text, EXAMPLE_LIST);
    assert!(daemon.terminate().success());
    assert_eq!(list(dir.path()), text);
    assert_eq!(list_json(dir.path()), json);
}

#[test]
fn after_the_daemon_stops_the_tool_works_directly_on_the_same_data() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let daemon = Daemon::start(d);
    ok(d, &["add", "blue"]);
    assert!(daemon.terminate().success());
    assert!(!d.join("sliced.sock").exists());

    ok(d, &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "blue"]);
    assert_eq!(list(d), "blue\n  0x1:1\n    00:00:00:00:00:01\n");

    // And what the tool wrote alone, a new daemon serves.
    let daemon = Daemon::start(d);
    assert_eq!(
        get(&daemon, "/slices/blue/ports/0x1:1/mac_addresses"),
        (200, json!([{"name": MAC1}]))
    );
    ok(d, &["add", "red"]);
    assert_eq!(
        get(&daemon, "/slices"),
        (200, json!([{"name": "blue"}, {"name": "red"}]))
    );
}

#[test]
fn after_a_daemon_is_killed_its_socket_file_is_passed_over() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let daemon = Daemon::start(d);
    ok(d, &["add", "blue"]);
    daemon.kill9();
    assert!(
        d.join("sliced.sock").exists(),
        "kill -9 leaves the socket file"
    );
    ok(d, &["add", "red"]);
    assert_eq!(list(d), "blue\nred\n");
}

#[test]
fn dot_and_dot_dot_are_not_slice_names() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let _daemon = Daemon::start(d);
    // A URL path resolves these segments away, so no client could address such a slice.
    for name in [".", ".."] {
        let stderr = fails(d, &["add", name]);
        assert!(
            stderr.contains(&format!(
                "invalid slice name \"{name}\": must not be '.' or '..'"
            )),
            "{stderr}"
        );
    }
    ok(d, &["add", "..."]);
    ok(d, &["add_host", "-m", MAC1, "-p", "0x1:1", "-s", "..."]);
    assert_eq!(list(d), "...\n  0x1:1\n    00:00:00:00:00:01\n");
}

#[test]
fn a_daemon_without_its_socket_is_reported_with_both_paths() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let _daemon = Daemon::start(d);
    ok(d, &["add", "blue"]);
    // The daemon holds the database but nobody can reach it any more.
    std::fs::remove_file(d.join("sliced.sock")).unwrap();
    let started = Instant::now();
    let run = run(d, &["add", "red"]);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "gave up at once"
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    let socket = d.join("sliced.sock");
    let store = d.join("store");
    assert!(
        run.stderr.starts_with("slice: ")
            && run.stderr.contains(socket.to_str().unwrap())
            && run.stderr.contains(store.to_str().unwrap()),
        "{}",
        run.stderr
    );
}

/// Sets a file's permission bits.
fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_database_readable_by_others_is_made_owner_only_and_the_change_reported() {
    let dir = private_tempdir().unwrap();
    let d = dir.path().join("data");
    ok(&d, &["add", "blue"]);
    // As an earlier release, or a careless hand, left them.
    let store = d.join("store");
    for (path, mode) in [(&d, 0o755), (&store, 0o755), (&store.join("db"), 0o644)] {
        chmod(path, mode);
    }
    let run = run(&d, &["list"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "blue\n");
    for expected in [
        format!(
            "slice: tightened the permissions of {} from 0755 to 0700",
            d.display()
        ),
        format!(
            "slice: tightened the permissions of {} from 0755 to 0700",
            store.display()
        ),
        format!(
            "slice: tightened the permissions of {} from 0644 to 0600",
            store.join("db").display()
        ),
    ] {
        assert!(
            run.stderr.contains(&expected),
            "{expected} not in {}",
            run.stderr
        );
    }
    assert_eq!(mode_of(&d), 0o700);
    assert_eq!(mode_of(&store), 0o700);
    for entry in std::fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        let expected = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode_of(&path), expected, "{}", path.display());
    }
    // Tight now: the next command has nothing to say.
    assert_eq!(list(&d), "blue\n");
}

/// `slice list` on a damaged database: status 1, nothing listed, one line on stderr that
/// names the database as corrupt.
fn list_of_damaged_database(d: &Path) -> Run {
    let run = run(d, &["list"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    let expected = format!(
        "slice: the database {} is corrupt: ",
        d.join("store").display()
    );
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    run
}

/// A database whose start was overwritten must not list as "no slices": the tool says it
/// is corrupt, naming it, and leaves every byte as it found it.
#[test]
fn a_damaged_database_is_reported_and_left_untouched_never_listed_as_empty() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    ok(d, &["add", "blue"]);
    let damaged = crate::common::damage_start_of_log(d);
    list_of_damaged_database(d);
    assert!(
        crate::common::files_with_bytes(d) == damaged,
        "the damaged database was rewritten"
    );
}

/// The same once sled has written a snapshot (every open after the first does): sled
/// itself finds the damage then, and the tool reports it alike.
#[test]
fn a_damaged_database_with_a_snapshot_is_reported_too() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    ok(d, &["add", "blue"]);
    ok(d, &["add", "red"]);
    let damaged = crate::common::damage_start_of_log(d);
    list_of_damaged_database(d);
    assert!(
        crate::common::files_with_bytes(d) == damaged,
        "the damaged database was rewritten"
    );
}

// ---- a stand-in daemon that answers with chosen bytes ------------------------------------------

/// Listens on the data directory's daemon socket and answers each request with what
/// `reply` gives for its request line, then closes the connection: the tool takes it for a
/// running sliced.
fn scripted_daemon(dir: &Path, reply: fn(&str) -> &'static str) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::os::unix::net::UnixListener::bind(dir.join("sliced.sock")).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let mut conn = BufReader::new(conn.unwrap());
            // The tool's requests have no body here: the head ends at the blank line.
            let mut request_line = String::new();
            conn.read_line(&mut request_line).unwrap();
            let mut line = String::new();
            while conn.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
                line.clear();
            }
            // Small writes, so that the tool reassembles the answer from many reads.
            for piece in reply(&request_line).as_bytes().chunks(5) {
                if conn.get_mut().write_all(piece).is_err() {
                    break;
                }
            }
        }
    });
}

#[test]
fn the_tool_reads_interim_answers_and_chunked_bodies_with_trailers() {
    let dir = private_tempdir().unwrap();
    scripted_daemon(dir.path(), |request_line| {
        if request_line.starts_with("GET /slices HTTP/1.1") {
            "HTTP/1.1 100 Continue\r\n\r\n\
             HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
             6;note=x\r\n[{\"nam\r\n\
             b\r\ne\":\"blue\"}]\r\n\
             0\r\nX-Checksum: 1\r\n\r\n"
        } else {
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n"
        }
    });
    assert_eq!(list(dir.path()), "blue\n");
}

#[test]
fn a_malformed_answer_is_reported_as_such() {
    for reply in [
        |_: &str| "SSH-2.0-OpenSSH_9.6\r\n",
        |_: &str| "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n[]",
        |_: &str| "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        |_: &str| "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n[]",
    ] {
        let dir = private_tempdir().unwrap();
        scripted_daemon(dir.path(), reply);
        let run = run(dir.path(), &["list"]);
        let sent = reply("");
        assert_eq!(run.code, Some(1), "{sent:?}: {run:?}");
        assert!(
            run.stderr.contains("malformed response: "),
            "{sent:?}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{sent:?}");
    }
}

// ---- slices as a file --------------------------------------------------------------------

/// `slice export`, changed, `slice apply -f` back: the plan printed, the state equal to
/// the file, and the file's errors named by line; in `dir`'s mode (direct or daemon).
fn check_export_and_apply(dir: &Path) {
    make_example(dir);
    let exported = ok(dir, &["export"]);
    let file = dir.join("slices.toml");
    // The same state again: nothing to change.
    std::fs::write(&file, &exported).unwrap();
    assert_eq!(
        ok(dir, &["apply", "-f", file.to_str().unwrap()]),
        "nothing to change\n"
    );
    assert_eq!(list(dir), EXAMPLE_LIST);

    let wanted = "[[slice]]\nname = \"green\"\n\n[[slice.port]]\nname = \"0x3:1\"\nmac_addresses = [\"00:00:00:00:00:03\"]\n\n[[slice]]\nname = \"blue\"\n\n[[slice.port]]\nname = \"0x1:1\"\nmac_addresses = [\"00:00:00:00:00:02\"]\n";
    std::fs::write(&file, wanted).unwrap();
    let path = file.to_str().unwrap();
    // Removals in the current order (blue, then red), then additions in the file's.
    let plan = "- host 00:00:00:00:00:01 at 0x1:1 of blue\n- port 0x2:3 of blue\n- slice red\n\
                + slice green\n+ port 0x3:1 of green\n+ host 00:00:00:00:00:03 at 0x3:1 of green\n\
                + host 00:00:00:00:00:02 at 0x1:1 of blue\n";
    assert_eq!(
        ok(dir, &["apply", "-f", path, "--dry-run"]),
        format!("{plan}dry run: nothing was changed\n")
    );
    assert_eq!(list(dir), EXAMPLE_LIST);
    assert_eq!(ok(dir, &["apply", "-f", path]), format!("{plan}applied\n"));
    assert_eq!(
        list(dir),
        "blue\n  0x1:1\n    00:00:00:00:00:02\ngreen\n  0x3:1\n    00:00:00:00:00:03\n"
    );
    // What is exported now is what was applied, and applies as nothing.
    std::fs::write(&file, ok(dir, &["export"])).unwrap();
    assert_eq!(ok(dir, &["apply", "-f", path]), "nothing to change\n");

    // A file with an error changes nothing and says where.
    std::fs::write(
        &file,
        "[[slice]]\nname = \"blue\"\n\n[[slice.port]]\nname = \"0x1:1\"\nmac_addresses = [\"00:00:00:00:00:0g\"]\n",
    )
    .unwrap();
    let err = fails(dir, &["apply", "-f", path]);
    assert!(
        err.starts_with(&format!("slice: {path}:6: invalid MAC address")),
        "{err}"
    );
    std::fs::write(&file, "[[slice]]\nname = \"a\"\n[[slice]]\nname = \"a\"\n").unwrap();
    let err = fails(dir, &["apply", "-f", path]);
    assert!(
        err.contains(":4: slice a is declared twice (first on line 2)"),
        "{err}"
    );
    let err = fails(dir, &["apply", "-f", "/nonexistent/slices.toml"]);
    assert!(
        err.contains("cannot read /nonexistent/slices.toml"),
        "{err}"
    );
}

#[test]
fn export_and_apply_work_on_the_database() {
    let dir = private_tempdir().unwrap();
    check_export_and_apply(dir.path());
}

#[test]
fn export_and_apply_work_through_the_daemon_and_rest() {
    let dir = private_tempdir().unwrap();
    let daemon = crate::common::Daemon::start(dir.path());
    check_export_and_apply(dir.path());
    // Over REST: the same plan, and a body that names something twice is 400.
    let (status, body) = crate::common::status_json(
        crate::common::agent()
            .post(&daemon.url("/slices:apply?dry_run=true"))
            .send_json(serde_json::json!({"slices": [{"name": "blue"}]})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["applied"], false);
    assert_eq!(
        body["plan"],
        serde_json::json!([
            {"op": "delete_port", "slice": "blue", "port": "0x1:1"},
            {"op": "delete_slice", "slice": "green"},
        ])
    );
    let (status, body) = crate::common::status_json(
        crate::common::agent()
            .post(&daemon.url("/slices:apply"))
            .send_json(serde_json::json!({"slices": [{"name": "a"}, {"name": "a"}]})),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "slice a is declared twice");
    let (status, body) = crate::common::status_json(
        crate::common::agent()
            .get(&daemon.url("/slices:export"))
            .call(),
    );
    assert_eq!(status, 200);
    assert_eq!(body["slices"][0]["name"], "blue");
}
