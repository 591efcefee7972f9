//! Black-box tests of the `slice` tool: the real binary on a real database in a temporary
//! directory, alone (it opens the database itself) and beside a real `sliced` (it sends
//! its commands over the daemon's Unix socket). This file holds the helpers and the checks
//! both modes share; `direct` the commands on their own, `database` where the data
//! directory is and what the tool does with one held, open to others or damaged, `daemon`
//! the tool beside a real daemon and a stand-in one, `apply` slices as a file, `access`
//! the tool run by a user who may not use the data directory, `views` what the running
//! daemon sees (switches, hosts, flows, topology, status) and completion.

mod access;
mod apply;
mod daemon;
mod database;
mod direct;
mod views;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

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
            r#"invalid port name "1:1": the datapath id is written in hexadecimal after 0x; did you mean 0x1:1?"#,
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
