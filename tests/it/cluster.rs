//! `sliced --etcd`: several real daemons sharing their slices through a real etcd
//! (`slice_etcd::test_server`, on free ports, killed when the test ends).

use std::time::{Duration, Instant};

use openflow::{ControllerRole, Message, RoleMsg, Version};
use serde_json::{json, Value};
use slice_etcd::test_server::LocalEtcd;

use crate::common::switch::{eventually, Network};
use crate::common::{agent, free_port, slice, status_json, Daemon};

/// Longer than a change takes to reach another instance on a loaded machine.
const PROPAGATION: Duration = Duration::from_secs(20);

fn start_on(etcd: &LocalEtcd, data_dir: &tempfile::TempDir) -> Daemon {
    Daemon::start_with(
        data_dir.path(),
        &["--etcd", &etcd.endpoint(), "--etcd-allow-plaintext"],
    )
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
fn a_fabric_declared_on_one_instance_is_in_force_on_the_other() {
    let etcd = LocalEtcd::start();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (start_on(&etcd, &dir_a), start_on(&etcd, &dir_b));
    let fabric = |daemon: &Daemon| {
        let view = daemon.get_json("/topology/fabric");
        (view["source"].clone(), view["declared"].clone())
    };
    let declare = |entries: &[&str]| {
        status_json(
            agent()
                .put(&a.url("/topology/fabric"))
                .send_json(json!({ "declared": entries })),
        )
    };
    assert_eq!(
        declare(&["0x1:3-0x2:3", "0x3:1"]),
        (200, json!({"declared": ["0x1:3-0x2:3", "0x3:1"]}))
    );
    let declared = (json!("api"), json!(["0x1:3-0x2:3", "0x3:1"]));
    assert!(
        eventually(PROPAGATION, || fabric(&a) == declared
            && fabric(&b) == declared),
        "b never followed: {:?}",
        fabric(&b)
    );
    assert_eq!(declare(&[]).0, 200);
    assert!(
        eventually(PROPAGATION, || fabric(&b) == (Value::Null, json!([]))),
        "b never followed the end: {:?}",
        fabric(&b)
    );
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
    // Plain http:// is refused unless the operator says the network is trusted.
    let output = sliced(&["--etcd", &nowhere]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is reached without TLS") && stderr.contains("--etcd-allow-plaintext"),
        "{stderr}"
    );
    let output = sliced(&["--etcd", &nowhere, "--etcd-allow-plaintext"]);
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
        let mut all = vec!["--etcd", endpoint.as_str(), "--etcd-allow-plaintext"];
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

    // Beside a running daemon the tool goes through its socket once the daemon says it
    // serves the store the command names (an etcd nobody serves is refused:
    // `etcd_tool::a_daemon_that_serves_another_store_is_refused_and_nothing_is_written`).
    let output = slice(
        daemon_dir.path(),
        &[
            "--etcd",
            &endpoint,
            "--etcd-allow-plaintext",
            "add",
            "green",
        ],
    );
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

fn start_named(etcd: &LocalEtcd, data_dir: &tempfile::TempDir, name: &str) -> Daemon {
    Daemon::start_with(
        data_dir.path(),
        &[
            "--etcd",
            &etcd.endpoint(),
            "--etcd-allow-plaintext",
            "--name",
            name,
        ],
    )
}

fn cluster_of(daemon: &Daemon) -> Value {
    daemon.get_json("/cluster")
}

fn member_names(view: &Value) -> Vec<String> {
    view["members"]
        .as_array()
        .map(|members| {
            members
                .iter()
                .filter_map(|m| m["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until both instances name the same master, of one generation, and list both
/// members; that master's name and the generation.
fn agreed(a: &Daemon, b: &Daemon) -> (String, u64) {
    let mut views = (Value::Null, Value::Null);
    let settled = eventually(PROPAGATION, || {
        views = (cluster_of(a), cluster_of(b));
        let (va, vb) = &views;
        va["master"].is_string()
            && va["master"] == vb["master"]
            && va["generation"] == vb["generation"]
            && member_names(va) == ["a", "b"]
            && member_names(vb) == ["a", "b"]
    });
    assert!(settled, "the instances never agreed: {views:?}");
    let (va, vb) = views;
    assert_eq!(va["instance"], "a");
    assert_eq!(vb["instance"], "b");
    assert_eq!(va["etcd"]["healthy"], true, "{va}");
    assert_eq!(va["store"], "etcd");
    assert!(va["revision"].as_i64().is_some_and(|r| r > 0), "{va}");
    (
        va["master"].as_str().unwrap().to_owned(),
        va["generation"].as_u64().unwrap(),
    )
}

#[test]
fn one_of_two_instances_is_master_and_the_other_takes_over_within_the_ttl_when_it_is_killed() {
    let etcd = LocalEtcd::start();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (
        start_named(&etcd, &dir_a, "a"),
        start_named(&etcd, &dir_b, "b"),
    );
    let (master, generation) = agreed(&a, &b);
    let (dead, survivor, survivor_name) = if master == "a" {
        (a, b, "b")
    } else {
        (b, a, "a")
    };
    dead.kill9();
    let killed = Instant::now();
    // The goal, as a deadline on correctness: master again within the lease's
    // time to live (2 s by default) and a second.
    let mut view = Value::Null;
    let took_over = eventually(Duration::from_secs(3), || {
        view = cluster_of(&survivor);
        view["master"] == survivor_name
    });
    assert!(
        took_over,
        "{survivor_name} not master {:?} after the master's kill: {view}",
        killed.elapsed()
    );
    assert!(
        view["generation"].as_u64().unwrap() > generation,
        "{view} after generation {generation}"
    );
}

#[test]
fn a_switch_connected_to_both_is_claimed_by_the_master_and_asked_to_be_slave_by_the_other() {
    let etcd = LocalEtcd::start();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (
        start_named(&etcd, &dir_a, "a"),
        start_named(&etcd, &dir_b, "b"),
    );
    let (master, generation) = agreed(&a, &b);
    let (to_master, to_standby) = if master == "a" { (&a, &b) } else { (&b, &a) };
    let (mut net_master, mut net_standby) = (Network::new(), Network::new());
    let at_master = net_master.connect(to_master.openflow, 0x1, Version::Of13, 2);
    let at_standby = net_standby.connect(to_standby.openflow, 0x1, Version::Of13, 2);
    let role_request = |role| {
        Message::RoleRequest(RoleMsg {
            role,
            generation_id: generation,
        })
    };
    assert!(
        eventually(PROPAGATION, || at_master
            .received()
            .contains(&role_request(ControllerRole::Master))),
        "the master never claimed the switch: {:?}",
        at_master.received()
    );
    assert!(
        eventually(PROPAGATION, || at_standby
            .received()
            .contains(&role_request(ControllerRole::Slave))),
        "the standby never asked to be slave: {:?}",
        at_standby.received()
    );
    // Each instance reports the role the switch confirmed, and both list both.
    let roles = |view: &Value| -> Vec<(String, Value)> {
        view["members"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                (
                    m["name"].as_str().unwrap_or_default().to_owned(),
                    m["switches"].clone(),
                )
            })
            .collect()
    };
    let standby_name = if master == "a" { "b" } else { "a" };
    let expected = {
        let mut expected = vec![
            (master.clone(), json!([{"dpid": 1, "role": "master"}])),
            (
                standby_name.to_owned(),
                json!([{"dpid": 1, "role": "slave"}]),
            ),
        ];
        expected.sort_by(|x, y| x.0.cmp(&y.0));
        expected
    };
    let mut seen = Vec::new();
    assert!(
        eventually(PROPAGATION, || {
            seen = [roles(&cluster_of(&a)), roles(&cluster_of(&b))].concat();
            seen == [expected.clone(), expected.clone()].concat()
        }),
        "the roles were never reported: {seen:?}"
    );
    // The standby writes nothing to it: no flow, no probe.
    assert!(
        !at_standby
            .received()
            .iter()
            .any(|m| matches!(m, Message::FlowMod(_) | Message::PacketOut(_))),
        "{:?}",
        at_standby.received()
    );
}

#[test]
fn a_session_made_on_one_instance_is_valid_on_the_other() {
    let etcd = LocalEtcd::start();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (
        start_named(&etcd, &dir_a, "a"),
        start_named(&etcd, &dir_b, "b"),
    );
    let login = ureq::AgentBuilder::new()
        .redirects(0)
        .build()
        .post(&a.url("/auth/developer/callback"))
        .set("Content-Type", "application/x-www-form-urlencoded")
        .send_string("name=Ada&email=ada@example.com");
    let response = match login {
        Ok(response) | Err(ureq::Error::Status(_, response)) => response,
        Err(err) => panic!("login on a: {err}"),
    };
    let cookie = response
        .all("set-cookie")
        .into_iter()
        .find(|cookie| cookie.starts_with("sliced_session="))
        .and_then(|cookie| cookie.split(';').next())
        .expect("a session cookie")
        .to_owned();
    let on_b = |cookie: Option<&str>| {
        let mut request = agent()
            .get(&b.url("/api/x"))
            .set("Accept", "application/json");
        if let Some(cookie) = cookie {
            request = request.set("Cookie", cookie);
        }
        status_json(request.call())
    };
    assert_eq!(on_b(Some(&cookie)), (200, json!({"status": "ok"})));
    // Without it, b refuses: the 200 above is the shared key's doing.
    assert_eq!(on_b(None).0, 403);
    // The key is etcd's, not written to either data directory.
    assert!(!dir_a.path().join("session.key").exists());
    assert!(!dir_b.path().join("session.key").exists());
}

#[test]
fn a_single_instance_reports_itself_as_the_only_member_and_master() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let view = cluster_of(&daemon);
    assert_eq!(view["store"], "sled", "{view}");
    assert_eq!(view["master"], view["instance"]);
    assert_eq!(member_names(&view), [view["instance"].as_str().unwrap()]);
    assert_eq!(view["generation"], Value::Null);
    assert_eq!(view["etcd"], Value::Null);
}

#[test]
fn cluster_settings_without_etcd_or_a_bad_name_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let sliced = |args: &[&str]| {
        let output = std::process::Command::new(crate::common::SLICED)
            .arg("--db")
            .arg(dir.path())
            .args(["--http", &free_port().to_string()])
            .args(["--openflow", &free_port().to_string()])
            .args(args)
            .env_remove("SLICED_ETCD")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = sliced(&["--name", "a"]);
    assert!(
        stderr.contains("--name, --lease-ttl and [cluster] are used only with etcd"),
        "{stderr}"
    );
    let stderr = sliced(&["--lease-ttl", "5"]);
    assert!(stderr.contains("used only with etcd"), "{stderr}");
    // Checked before etcd is asked anything: nothing listens on this endpoint.
    let nowhere = format!("http://{}", free_port());
    let stderr = sliced(&[
        "--etcd",
        &nowhere,
        "--etcd-allow-plaintext",
        "--name",
        "a/b",
    ]);
    assert!(stderr.contains("the instance name must be"), "{stderr}");
    let stderr = sliced(&[
        "--etcd",
        &nowhere,
        "--etcd-allow-plaintext",
        "--lease-ttl",
        "0",
    ]);
    assert!(stderr.contains("--lease-ttl"), "{stderr}");
}

#[test]
fn with_one_etcd_member_of_three_down_daemons_start_write_and_keep_their_master() {
    let mut members = LocalEtcd::cluster(3);
    // The first endpoint each daemon is given is the one that goes.
    let endpoints = members
        .iter()
        .map(LocalEtcd::endpoint)
        .collect::<Vec<_>>()
        .join(",");
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = |dir: &tempfile::TempDir, name: &str| {
        Daemon::start_with(
            dir.path(),
            &[
                "--etcd",
                &endpoints,
                "--etcd-allow-plaintext",
                "--name",
                name,
            ],
        )
    };
    let a = start(&dir_a, "a");
    members[0].stop();
    // b starts with its first member already gone.
    let b = start(&dir_b, "b");
    let (master, generation) = agreed(&a, &b);
    for at in 0..20 {
        let writer = if at % 2 == 0 { &a } else { &b };
        let (status, body) = create(writer, &format!("s{at}"));
        assert_eq!(status, 201, "write {at}: {body}");
    }
    let (status, listed) = slices(&a);
    assert_eq!(status, 200);
    let everything_seen = eventually(PROPAGATION, || {
        slices(&b).1.as_array().map(Vec::len) == Some(20)
    });
    assert!(everything_seen, "b lists {}, a {listed}", slices(&b).1);
    for view in [cluster_of(&a), cluster_of(&b)] {
        assert_eq!(view["master"], master.as_str(), "{view}");
        assert_eq!(view["generation"], generation, "{view}");
        let in_use = view["etcd"]["in_use"].as_str().unwrap_or_default();
        assert!(
            in_use.starts_with("http://") && in_use != members[0].endpoint(),
            "{view}"
        );
    }
}
