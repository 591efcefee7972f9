//! `sliced --etcd`: several real daemons sharing their slices through a real etcd
//! (`slice_etcd::test_server`, on free ports, killed when the test ends).

use std::time::Duration;

use serde_json::json;
use slice_etcd::test_server::LocalEtcd;

use crate::common::switch::eventually;
use crate::common::{agent, free_port, slice, status_json, Daemon};

/// Longer than a change takes to reach another instance on a loaded machine.
const PROPAGATION: Duration = Duration::from_secs(20);

fn start_on(etcd: &LocalEtcd, data_dir: &tempfile::TempDir) -> Daemon {
    Daemon::start_with(data_dir.path(), &["--etcd", &etcd.endpoint()])
}

fn create(daemon: &Daemon, name: &str) -> (u16, serde_json::Value) {
    status_json(
        agent()
            .post(&daemon.url("/slices"))
            .send_json(json!({ "name": name })),
    )
}

fn slices(daemon: &Daemon) -> (u16, serde_json::Value) {
    status_json(agent().get(&daemon.url("/slices")).call())
}

#[test]
fn two_instances_share_slices_and_racing_creates_admit_one() {
    let etcd = LocalEtcd::start();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (start_on(&etcd, &dir_a), start_on(&etcd, &dir_b));

    assert_eq!(create(&a, "shared").0, 201);
    assert!(
        eventually(PROPAGATION, || slices(&b)
            == (200, json!([{ "name": "shared" }]))),
        "b never listed the slice created on a: {:?}",
        slices(&b)
    );

    let racers: Vec<_> = [a.url("/slices"), b.url("/slices")]
        .into_iter()
        .map(|url| {
            std::thread::spawn(move || {
                status_json(agent().post(&url).send_json(json!({ "name": "contested" })))
            })
        })
        .collect();
    let mut statuses: Vec<u16> = racers.into_iter().map(|r| r.join().unwrap().0).collect();
    statuses.sort();
    assert_eq!(statuses, [201, 409], "exactly one create wins");
    let both = json!([{ "name": "shared" }, { "name": "contested" }]);
    assert!(eventually(PROPAGATION, || slices(&a)
        == (200, both.clone())
        && slices(&b) == (200, both.clone())));
}

#[test]
fn without_etcd_writes_answer_503_reads_answer_and_writes_resume() {
    let mut etcd = LocalEtcd::start();
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_on(&etcd, &dir);
    assert_eq!(create(&daemon, "kept").0, 201);

    etcd.stop();
    let (status, body) = create(&daemon, "new");
    assert_eq!(status, 503, "{body}");
    assert!(body["error"].is_string(), "{body}");
    assert_eq!(slices(&daemon), (200, json!([{ "name": "kept" }])));

    etcd.restart();
    // The first write may still find the client reconnecting; a 409 is a try whose answer
    // was lost (the listing below shows nothing else was created).
    assert!(eventually(PROPAGATION, || matches!(
        create(&daemon, "new").0,
        201 | 409
    )));
    assert_eq!(
        slices(&daemon),
        (200, json!([{ "name": "kept" }, { "name": "new" }]))
    );
}

#[test]
fn an_unreachable_etcd_or_a_prefix_without_etcd_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let sliced = |args: &[&str]| {
        std::process::Command::new(crate::common::SLICED)
            .arg("--db")
            .arg(dir.path())
            .args(["--http", &free_port().to_string()])
            .args(["--openflow", &free_port().to_string()])
            .args(args)
            .env_remove("SLICED_ETCD")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // Nothing listens there: the port was free a moment ago.
    let nowhere = format!("http://{}", free_port());
    let output = sliced(&["--etcd", &nowhere]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot open the store in etcd at {nowhere} under /sliced/"
        )),
        "{stderr}"
    );

    let config = dir.path().join("sliced.toml");
    std::fs::write(&config, "[store]\netcd_prefix = \"/other/\"\n").unwrap();
    let output = sliced(&["--config", config.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("store.etcd_prefix is used only with etcd"),
        "{stderr}"
    );
}

/// `slice --etcd`: the tool works on the cluster's store itself, with no daemon, and what
/// it writes is what the daemons serve (and the other way round); with a daemon answering
/// on its data directory's socket, the tool asks that daemon instead.
#[test]
fn the_tool_works_on_the_cluster_directly_or_through_the_local_daemon() {
    let etcd = LocalEtcd::start();
    let endpoint = etcd.endpoint();
    let tool_dir = tempfile::tempdir().unwrap();
    let tool = |args: &[&str]| {
        let mut all = vec!["--etcd", endpoint.as_str()];
        all.extend_from_slice(args);
        let output = slice(tool_dir.path(), &all);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    assert_eq!(tool(&["add", "blue"]).0, Some(0));
    assert_eq!(
        tool(&[
            "add_host",
            "-m",
            "02:00:00:00:00:01",
            "-p",
            "0x1:1",
            "-s",
            "blue"
        ])
        .0,
        Some(0)
    );
    let (code, _, stderr) = tool(&["add", "blue"]);
    assert_eq!(
        (code, stderr.trim()),
        (Some(1), "slice: Slice blue already exists")
    );

    let daemon_dir = tempfile::tempdir().unwrap();
    let daemon = start_on(&etcd, &daemon_dir);
    assert!(
        eventually(PROPAGATION, || status_json(
            agent()
                .get(&daemon.url("/slices/blue/ports/0x1:1/mac_addresses"))
                .call()
        ) == (
            200,
            json!([{ "name": "02:00:00:00:00:01" }])
        )),
        "the daemon never served what the tool wrote"
    );
    assert_eq!(create(&daemon, "red").0, 201);
    assert!(
        eventually(PROPAGATION, || tool(&["list"]).1
            == "blue\n  0x1:1\n    02:00:00:00:00:01\nred\n"),
        "the tool never listed what the daemon wrote: {:?}",
        tool(&["list"])
    );

    // Beside a running daemon the tool goes through its socket: an etcd that nobody
    // serves is never asked.
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let output = slice(daemon_dir.path(), &["--etcd", &nowhere, "add", "green"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        slices(&daemon),
        (
            200,
            json!([{ "name": "blue" }, { "name": "red" }, { "name": "green" }])
        )
    );
}
