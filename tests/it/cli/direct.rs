//! The tool on its own, with no daemon: what it lists, adds and removes, its errors and
//! help.

use std::process::{Command, Stdio};

use serde_json::json;

use super::{
    check_contract_errors, check_invalid_values, check_usage_errors, fails, list, list_json,
    make_example, ok, private_tempdir, run, Run, EXAMPLE_LIST, MAC1, MAC2,
};
use crate::common::SLICE;

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
            "fe:ff:ff:ff:ff:ff",
            "-p",
            "0xFFFFFFFFFFFFFFFF:4294967040",
            "-s",
            &name,
        ],
    );
    assert_eq!(
        list(d),
        format!("{name}\n  0xffffffffffffffff:4294967040\n    fe:ff:ff:ff:ff:ff\n")
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
        // The scripts ask the binary itself for candidates, by the path it was run by.
        let script = ok(&db, &["completions", shell]);
        assert!(script.contains(crate::common::SLICE), "{shell}: {script}");
    }
    assert!(!db.exists());
    assert_eq!(run(&db, &["completions", "tcsh"]).code, Some(2));
}
