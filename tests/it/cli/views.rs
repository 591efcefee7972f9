//! `slice switches`, `hosts`, `flows`, `topology` and `status` beside a real daemon, with
//! no switch and with a scripted one; the completion of slice names and the completion
//! scripts written to a path.

use std::path::Path;
use std::time::Duration;

use openflow::Version;
use serde_json::{json, Value};

use super::{fails, ok, private_tempdir, run};
use crate::common::switch::{eventually, frame, host, Network, BROADCAST};
use crate::common::{Daemon, SLICE};

const WAIT: Duration = Duration::from_secs(30);

fn json_of(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(dir, args)).expect("--json prints JSON")
}

#[test]
fn the_views_show_a_network_without_switches_clearly() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let daemon = Daemon::start(d);
    assert_eq!(ok(d, &["switches"]), "no switches connected\n");
    assert_eq!(ok(d, &["hosts"]), "no hosts learned\n");
    assert_eq!(ok(d, &["flows"]), "no flows installed\n");
    assert_eq!(
        ok(d, &["topology"]),
        "switches: none\nlinks: none\nfabric: discovered\n"
    );
    let status = ok(d, &["status"]);
    assert!(
        status.starts_with(
            "ready: yes\n  CHECK     STATE\n  http      ok\n  openflow  ok\n  store     ok\n"
        ),
        "{status}"
    );
    assert!(status.contains("\nstore: sled\n"), "{status}");
    json_is_the_daemons(d, &daemon);
    assert_eq!(
        json_of(d, &["topology", "--json"]),
        json!({
            "switches": daemon.get_json("/topology/switches"),
            "links": daemon.get_json("/topology/links"),
            "fabric": daemon.get_json("/topology/fabric"),
        })
    );
    let status = json_of(d, &["status", "--json"]);
    assert_eq!(status["ready"]["status"], "ready");
    assert_eq!(status["ready"]["checks"]["store"], "ok");
    assert_eq!(status["cluster"], daemon.get_json("/cluster"));
    assert!(daemon.terminate().success());
}

#[test]
fn without_a_daemon_the_views_say_so_and_create_nothing() {
    let dir = private_tempdir().unwrap();
    let d = dir.path().join("data");
    ok(&d, &["add", "blue"]);
    for command in ["switches", "hosts", "flows", "topology", "status"] {
        let err = fails(&d, &[command]);
        assert!(
            err.starts_with(&format!(
                "slice: no sliced answers on {} (",
                d.join("sliced.sock").display()
            )),
            "{command}: {err}"
        );
        assert!(
            err.contains("start it, or name its data directory with --db"),
            "{err}"
        );
    }
    let missing = dir.path().join("missing");
    let run = run(&missing, &["switches"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!missing.exists());
}

#[test]
fn the_views_show_a_switch_its_hosts_and_the_flows_between_them() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let daemon = Daemon::start_with(d, &["--per-pair-flows"]);
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x1:2", "00:00:00:00:00:02");
    let mut network = Network::new();
    let switch = network.connect(daemon.openflow, 1, Version::Of13, 2);
    // A PACKET_IN before the handshake ends counts for nothing.
    assert!(eventually(WAIT, || daemon.switch_view(1).is_some()));
    switch.packet_in(2, frame(2, BROADCAST));
    assert!(eventually(WAIT, || daemon
        .get_json("/topology/hosts")
        .as_array()
        .is_some_and(|hosts| !hosts.is_empty())));
    switch.packet_in(1, frame(1, host(2)));
    assert!(eventually(WAIT, || daemon
        .get_json("/paths")
        .as_array()
        .is_some_and(|paths| !paths.is_empty())));

    assert_eq!(
        ok(d, &["switches"]),
        "DPID  OPENFLOW  PORTS  LIVE  PACKET_IN METER  DROPPED\n\
         0x1   1.3       2      2     no               0\n"
    );
    let hosts = ok(d, &["hosts"]);
    assert!(
        hosts.starts_with("MAC                PORT   IP ADDRESSES\n"),
        "{hosts}"
    );
    assert!(hosts.contains("00:00:00:00:00:02  0x1:2  -\n"), "{hosts}");
    assert_eq!(
        ok(d, &["flows"]),
        "SRC                DST                HOPS\n\
         00:00:00:00:00:01  00:00:00:00:00:02  0x1:1 0x1:2\n"
    );
    assert_eq!(
        ok(d, &["topology"]),
        "switches:\n  0x1\nlinks: none\nfabric: discovered\n"
    );
    let status = ok(d, &["status"]);
    assert!(status.contains("  MEMBER"), "{status}");
    json_is_the_daemons(d, &daemon);
    assert!(daemon.terminate().success());
}

/// What `slice` answers to a bash completion script's request for the words `words`,
/// the last being completed.
fn bash_completion(words: &[&str], env: &[(&str, &Path)]) -> Vec<String> {
    let mut command = std::process::Command::new(SLICE);
    command
        .env("COMPLETE", "bash")
        .env("_CLAP_IFS", "\n")
        .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
        .env_remove("SLICED_DB")
        .arg("--")
        .args(words)
        .stdin(std::process::Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("slice runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn slice_names_complete_from_the_running_daemon() {
    let dir = private_tempdir().unwrap();
    let d = dir.path();
    let db = d.to_str().unwrap();
    for name in ["blue", "bluegreen", "red"] {
        ok(d, &["add", name]);
    }
    // No daemon: no names, and the database is left alone.
    let before = crate::common::files_with_bytes(d);
    let offered = bash_completion(&["slice", "--db", db, "delete", "bl"], &[]);
    assert!(
        !offered.iter().any(|word| word.starts_with("bl")),
        "{offered:?}"
    );
    assert!(crate::common::files_with_bytes(d) == before);

    let daemon = Daemon::start(d);
    assert_eq!(
        bash_completion(&["slice", "--db", db, "delete", "bl"], &[]),
        ["blue", "bluegreen"]
    );
    assert_eq!(
        bash_completion(
            &["slice", "add_port", "-p", "0x1:1", "-s", ""],
            &[("SLICED_DB", d)]
        ),
        ["blue", "bluegreen", "red"]
    );
    assert_eq!(
        bash_completion(
            &["slice", &format!("--db={db}"), "add_host", "--slice", "r"],
            &[]
        ),
        ["red"]
    );
    // Commands complete as before.
    assert!(bash_completion(&["slice", "topo"], &[]).contains(&"topology".to_owned()));
    assert!(daemon.terminate().success());
}

#[test]
fn completions_are_written_where_asked_making_the_directories() {
    let dir = private_tempdir().unwrap();
    let db = dir.path().join("db");
    let target = dir.path().join("a/b/completions/");
    for (shell, file) in [
        ("bash", "slice"),
        ("zsh", "_slice"),
        ("fish", "slice.fish"),
        ("elvish", "slice.elv"),
        ("powershell", "_slice.ps1"),
    ] {
        assert_eq!(
            ok(
                &db,
                &[
                    "completions",
                    shell,
                    "--output",
                    &format!("{}/", target.display())
                ]
            ),
            ""
        );
        let written = std::fs::read_to_string(target.join(file)).unwrap();
        assert_eq!(written, ok(&db, &["completions", shell]), "{shell}");
    }
    let file = dir.path().join("x/y/slice.bash");
    ok(&db, &["completions", "bash", "-o", file.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("COMPLETE=\"bash\""));
    // Where it cannot be written, it says so.
    let blocked = dir.path().join("a/b/completions/slice/below");
    let refused = run(
        &db,
        &["completions", "bash", "-o", blocked.to_str().unwrap()],
    );
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused
            .stderr
            .starts_with(&format!("slice: cannot write {}: ", blocked.display())),
        "{refused:?}"
    );
    assert!(!db.exists());
}

/// A daemon that answers it is not ready: `slice status` prints why, then fails (status
/// 1, the reason on stderr), so that a script can wait on it.
#[test]
fn status_fails_when_the_daemon_is_not_ready_after_saying_why() {
    let dir = private_tempdir().unwrap();
    super::daemon::scripted_daemon(dir.path(), |request_line| {
        if request_line.starts_with("GET /readyz ") {
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 112\r\n\r\n\
             {\"error\":\"not ready: store: the disk is full\",\"checks\":{\"store\":\"the disk is full\",\"openflow\":\"ok\",\"http\":\"ok\"}}"
        } else {
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 41\r\n\r\n\
             {\"error\":\"the controller is not running\"}"
        }
    });
    let status = run(dir.path(), &["status"]);
    assert_eq!(status.code, Some(1), "{status:?}");
    assert_eq!(
        status.stdout,
        "ready: no (not ready: store: the disk is full)\n  CHECK     STATE\n  http      ok\n  \
         openflow  ok\n  store     the disk is full\ncluster: the controller is not running\n"
    );
    assert_eq!(
        status.stderr,
        "slice: sliced is not ready (HTTP 503): not ready: store: the disk is full\n"
    );
    let json = run(dir.path(), &["status", "--json"]);
    assert_eq!(json.code, Some(1), "{json:?}");
    let body: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(body["ready"]["checks"]["store"], "the disk is full");
    assert_eq!(body["cluster"]["error"], "the controller is not running");
}

/// `--json` of each view is the daemon's own answer.
fn json_is_the_daemons(d: &Path, daemon: &Daemon) {
    for (command, path) in [
        ("switches", "/topology/switches"),
        ("hosts", "/topology/hosts"),
        ("flows", "/paths"),
    ] {
        assert_eq!(
            json_of(d, &[command, "--json"]),
            daemon.get_json(path),
            "{command}"
        );
    }
}
