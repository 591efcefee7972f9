//! The `slice` tool and the store it names: what it writes itself (straight into etcd, or
//! into a sled database no daemon holds) is audited in its data directory, and a daemon
//! answering on its socket must serve the store the command names before it is sent
//! anything.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};
use slice_etcd::test_server::LocalEtcd;

use crate::common::{agent, free_port, slice, status_json, Daemon};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `slice --etcd ENDPOINT --etcd-allow-plaintext [--etcd-prefix PREFIX] ARGS` on `data`.
fn tool(data: &Path, endpoint: &str, prefix: Option<&str>, args: &[&str]) -> Output {
    let mut all = vec!["--etcd", endpoint, "--etcd-allow-plaintext"];
    if let Some(prefix) = prefix {
        all.extend(["--etcd-prefix", prefix]);
    }
    all.extend_from_slice(args);
    slice(data, &all)
}

/// The entries of the tool's audit trail in `data`.
fn trail(data: &Path) -> Vec<Value> {
    std::fs::read_to_string(data.join("audit.log"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// `slice --etcd` with no daemon on its data directory wrote straight into etcd, and
/// nothing recorded it. Now each write the tool makes itself, into etcd or into a sled
/// database, is one JSON line in `<data dir>/audit.log` (owner-only), as the daemon's
/// trail words it: who (the Unix account), which store, what, and how it went, refusals
/// included; an apply adds its steps. Reads write nothing there. A trail that cannot be
/// written stops the write before it is made.
#[test]
fn the_tools_own_writes_are_audited_in_its_data_directory_and_unauditable_ones_refused() {
    use std::os::unix::fs::PermissionsExt;
    let etcd = LocalEtcd::start();
    let endpoint = etcd.endpoint();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("tool");
    let ok = |args: &[&str]| {
        let output = tool(&data, &endpoint, None, args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        output
    };
    ok(&["add", "blue"]);
    ok(&[
        "add_host",
        "-m",
        "02:00:00:00:00:01",
        "-p",
        "0x1:1",
        "-s",
        "blue",
    ]);
    let refused = tool(&data, &endpoint, None, &["add", "blue"]);
    assert_eq!(refused.status.code(), Some(1));
    ok(&["list"]);
    let declaration = dir.path().join("slices.toml");
    std::fs::write(&declaration, "[[slice]]\nname = \"red\"\n").unwrap();
    // It replaces blue, the only slice: a deletion of every slice needs --prune.
    ok(&["apply", "-f", declaration.to_str().unwrap(), "--prune"]);

    let entries = trail(&data);
    let store = format!("etcd at {endpoint} under /sliced/");
    let summary: Vec<(&str, &str)> = entries
        .iter()
        .map(|entry| {
            assert_eq!(entry["via"], "slice_tool", "{entry}");
            assert_eq!(entry["user"], "root", "{entry}");
            assert_eq!(entry["store"], store.as_str(), "{entry}");
            (
                entry["operation"].as_str().unwrap(),
                entry["result"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("create_slice", "ok"),
            ("add_mac", "ok"),
            ("create_slice", "Slice blue already exists"),
            ("apply", "ok"),
            ("apply_steps", "ok"),
        ]
    );
    assert_eq!(entries[0]["target"], json!({ "slice": "blue" }));
    assert_eq!(
        entries[3]["outcome"]["apply"],
        entries[4]["target"]["apply"]
    );
    let steps = entries[4]["target"]["steps"].as_array().unwrap().len();
    assert_eq!(steps, 2, "blue goes with its port and host, red comes");
    let mode = std::fs::metadata(data.join("audit.log"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Without etcd: the sled database the tool opens itself.
    let sled = dir.path().join("sled");
    let output = slice(&sled, &["add", "green"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let entries = trail(&sled);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["operation"], "create_slice");
    assert_eq!(
        entries[0]["store"],
        sled.join("store").display().to_string().as_str()
    );

    // A trail that cannot be written: the write is not made.
    std::fs::remove_file(data.join("audit.log")).unwrap();
    std::fs::create_dir(data.join("audit.log")).unwrap();
    std::fs::set_permissions(
        data.join("audit.log"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let refused = tool(&data, &endpoint, None, &["add", "violet"]);
    assert_eq!(refused.status.code(), Some(1));
    // Refused by the check every private file of the data directory gets, which names it.
    let said = stderr(&refused);
    assert!(
        said.starts_with("slice: the audit log ") && said.contains("is not a regular file"),
        "{said}"
    );
    assert_eq!(stdout(&tool(&data, &endpoint, None, &["list"])), "red\n");
}

/// `slice --db <a sled daemon's data directory> --etcd <url> add x` went to the sled
/// daemon, exit 0. Now the tool asks the daemon on the socket which store it serves
/// (`GET /cluster`) and refuses, before sending the command, one that does not serve
/// the named etcd and prefix: exit 1 with both stores named, and nothing written to
/// either. The daemon that does serve it takes the command as before.
#[test]
fn a_daemon_that_serves_another_store_is_refused_and_nothing_is_written() {
    let etcd = LocalEtcd::start();
    let endpoint = etcd.endpoint();
    let sled_dir = tempfile::tempdir().unwrap();
    let sled_daemon = Daemon::start(sled_dir.path());
    let refused = tool(sled_dir.path(), &endpoint, None, &["add", "x"]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let expected = format!(
        "slice: the sliced on {} serves the sled database of its data directory, not the \
         store this command names (etcd at {endpoint} under /sliced/)",
        sled_dir.path().join("sliced.sock").display()
    );
    assert!(
        stderr(&refused).starts_with(&expected),
        "{}",
        stderr(&refused)
    );
    let slices = |daemon: &Daemon| status_json(agent().get(&daemon.url("/slices")).call());
    assert_eq!(slices(&sled_daemon), (200, json!([])));

    let etcd_dir = tempfile::tempdir().unwrap();
    let etcd_daemon = Daemon::start_with(
        etcd_dir.path(),
        &["--etcd", &endpoint, "--etcd-allow-plaintext"],
    );
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    for (named, prefix) in [
        (nowhere.as_str(), None),
        (endpoint.as_str(), Some("/other/")),
    ] {
        let refused = tool(etcd_dir.path(), named, prefix, &["add", "x"]);
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
        assert!(
            stderr(&refused).contains(&format!("serves etcd at {endpoint} under /sliced/, not")),
            "{}",
            stderr(&refused)
        );
    }
    assert_eq!(slices(&etcd_daemon), (200, json!([])));
    assert_eq!(
        etcd.etcdctl(None, &["get", "--prefix", "/other/", "--keys-only"]),
        ""
    );

    let sent = tool(etcd_dir.path(), &endpoint, None, &["add", "x"]);
    assert!(sent.status.success(), "{}", stderr(&sent));
    assert_eq!(slices(&etcd_daemon), (200, json!([{ "name": "x" }])));
    assert!(
        trail(etcd_dir.path()).is_empty(),
        "the daemon audits what it is sent"
    );
}
