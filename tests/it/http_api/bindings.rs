//! A port or MAC address that can never match a frame is refused with the reason, by the
//! API and by the tool (through the daemon and on the database directly), and nothing
//! changes (issue 35 item 7).

use serde_json::{json, Value};

use crate::common::{agent, slice, status_json, Daemon};

/// Each with a word its refusal must say.
const UNBINDABLE_MACS: [(&str, &str); 4] = [
    ("ff:ff:ff:ff:ff:ff", "broadcast"),
    ("01:00:5e:00:00:01", "multicast"),
    ("33:33:00:00:00:fb", "multicast"),
    ("00:00:00:00:00:00", "no host's address"),
];
const UNBINDABLE_PORTS: [(u32, &str); 2] = [(0, "port number 0"), (4294967295, "reserved")];

#[test]
fn ports_and_macs_that_can_never_match_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = agent();
    let post = |path: &str, body: Value| status_json(agent.post(&daemon.url(path)).send_json(body));
    assert_eq!(post("/slices", json!({"name": "s"})).0, 201);
    let tree = || {
        let (_, slices) = status_json(agent.get(&daemon.url("/slices/s/ports")).call());
        slices
    };
    let before = tree();
    let refused = |(status, body): (u16, Value), says: &str, what: &str| {
        assert_eq!(status, 400, "{what}: {body}");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{what}: {message}");
        assert!(message.contains("cannot be bound"), "{what}: {message}");
    };
    for (mac, says) in UNBINDABLE_MACS {
        let answer = post("/slices/s/ports/0x1:1/mac_addresses", json!({"name": mac}));
        refused(answer, says, mac);
        let declared = json!({"slices": [{"name": "s", "ports": [
            {"name": "0x1:1", "mac_addresses": [mac]}]}]});
        refused(post("/slices:apply", declared), says, mac);
    }
    for (port_no, says) in UNBINDABLE_PORTS {
        let answer = post("/slices/s/ports", json!({"dpid": 1, "port_no": port_no}));
        refused(answer, says, &port_no.to_string());
        let path = format!("/slices/s/ports/0x1:{port_no}/mac_addresses");
        refused(
            post(&path, json!({"name": "00:00:00:00:00:01"})),
            says,
            &path,
        );
    }
    // The tool, through the daemon.
    let tool = slice(
        dir.path(),
        &[
            "add_host",
            "-m",
            "01:00:5e:00:00:01",
            "-p",
            "0x1:1",
            "-s",
            "s",
        ],
    );
    assert!(!tool.status.success());
    let stderr = String::from_utf8_lossy(&tool.stderr);
    assert!(stderr.contains("multicast"), "{stderr}");
    assert_eq!(tree(), before, "a refused binding changed nothing");
    // What can match is still taken, the same as before the rule.
    assert_eq!(
        post("/slices/s/ports", json!({"dpid": 1, "port_no": 1})).0,
        201
    );
    assert!(daemon.terminate().success());

    // The tool on the database itself, with no daemon to ask.
    for args in [
        ["add_port", "-p", "0x1:0", "-s", "s", "", ""],
        [
            "add_host",
            "-m",
            "ff:ff:ff:ff:ff:ff",
            "-p",
            "0x1:2",
            "-s",
            "s",
        ],
    ] {
        let args: Vec<&str> = args.into_iter().filter(|a| !a.is_empty()).collect();
        let tool = slice(dir.path(), &args);
        assert!(!tool.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&tool.stderr);
        assert!(stderr.contains("cannot be bound"), "{args:?}: {stderr}");
    }
    let listed = slice(dir.path(), &["list"]);
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "s\n  0x1:1\n");
}
