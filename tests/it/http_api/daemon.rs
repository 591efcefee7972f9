//! The real daemon, black-box: every write shown by the next read on any worker,
//! durability across a restart and SIGKILL, and concurrent clients.

use serde_json::{json, Value};

use super::error;
use crate::common::{agent, status_json, Daemon};

/// The real daemon, for the tests that need its process, its workers or its disk.
struct Served {
    daemon: Daemon,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            daemon: Daemon::start(dir.path()),
            agent: agent(),
            _dir: dir,
        }
    }

    fn get(&self, path: &str) -> (u16, Value) {
        status_json(self.agent.get(&self.daemon.url(path)).call())
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        status_json(self.agent.post(&self.daemon.url(path)).send_json(body))
    }

    fn delete(&self, path: &str, body: Value) -> (u16, Value) {
        status_json(self.agent.delete(&self.daemon.url(path)).send_json(body))
    }
}

/// The slice list is served from memory: every write must show in the very next read,
/// whichever worker and connection answers it (a fresh agent per read changes both).
#[test]
fn the_slice_list_shows_every_write_at_once() {
    let api = Served::start();
    let mut expected: Vec<Value> = Vec::new();
    for round in 0..20 {
        let name = format!("s{round}");
        assert_eq!(api.post("/slices", json!({"name": name})).0, 201);
        expected.push(json!({"name": name}));
        if round % 3 == 2 {
            let doomed = expected.remove(0);
            assert_eq!(api.delete("/slices", doomed).0, 200);
        }
        let fresh = agent();
        let (status, listed) = status_json(fresh.get(&api.daemon.url("/slices")).call());
        assert_eq!(
            (status, listed),
            (200, Value::Array(expected.clone())),
            "round {round}"
        );
        assert_eq!(api.get("/slices"), (200, Value::Array(expected.clone())));
    }
}

/// The reads of one slice, port or MAC address are answered from encodings each worker
/// keeps: every write must show in the very next read of everything it touches, on a
/// connection that read the old answers just before and on a fresh one.
#[test]
fn every_point_read_shows_every_write_at_once() {
    let api = Served::start();
    let slice = "/slices/s";
    let ports = "/slices/s/ports";
    let port = "/slices/s/ports/0x1:1";
    let macs = "/slices/s/ports/0x1:1/mac_addresses";
    let mac = "/slices/s/ports/0x1:1/mac_addresses/00:00:00:00:00:01";
    let no_slice = || (404, error("Slice s not found"));
    let no_port = || (404, error("Port 0x1:1 not found"));
    let no_mac = || (404, error("MAC address 00:00:00:00:00:01 not found"));
    let the_slice = || (200, json!({"name": "s"}));
    let port_request = json!({"dpid": 1, "port_no": 1});
    let the_port = json!({"name": "0x1:1", "dpid": 1, "port_no": 1});
    let the_mac = json!({"name": "00:00:00:00:00:01"});
    let fresh = agent();
    let read_all = |step: &str, expected: [(u16, Value); 5]| {
        for (path, want) in [slice, ports, port, macs, mac].into_iter().zip(expected) {
            for agent in [&api.agent, &fresh, &agent()] {
                let got = status_json(agent.get(&api.daemon.url(path)).call());
                assert_eq!(got, want, "{step}: GET {path}");
            }
        }
    };
    let empty = || (200, json!([]));
    read_all(
        "before",
        [no_slice(), no_slice(), no_slice(), no_slice(), no_slice()],
    );
    assert_eq!(api.post("/slices", json!({"name": "s"})).0, 201);
    read_all(
        "slice created",
        [the_slice(), empty(), no_port(), no_port(), no_port()],
    );
    assert_eq!(api.post(ports, port_request.clone()).0, 201);
    let with_port = || (200, json!([the_port.clone()]));
    let port_read = || (200, the_port.clone());
    read_all(
        "port added",
        [the_slice(), with_port(), port_read(), empty(), no_mac()],
    );
    assert_eq!(api.post(macs, the_mac.clone()).0, 201);
    let with_mac = || (200, json!([the_mac.clone()]));
    let mac_read = || (200, the_mac.clone());
    read_all(
        "MAC added",
        [
            the_slice(),
            with_port(),
            port_read(),
            with_mac(),
            mac_read(),
        ],
    );
    assert_eq!(api.delete(macs, the_mac.clone()).0, 200);
    read_all(
        "MAC deleted",
        [the_slice(), with_port(), port_read(), empty(), no_mac()],
    );
    assert_eq!(api.delete(ports, port_request).0, 200);
    read_all(
        "port deleted",
        [the_slice(), empty(), no_port(), no_port(), no_port()],
    );
    assert_eq!(api.delete("/slices", json!({"name": "s"})).0, 200);
    read_all(
        "slice deleted",
        [no_slice(), no_slice(), no_slice(), no_slice(), no_slice()],
    );
}

#[test]
fn everything_survives_a_restart_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent();
    let daemon = Daemon::start(dir.path());
    for name in ["b", "a", "c"] {
        agent
            .post(&daemon.url("/slices"))
            .send_json(json!({"name": name}))
            .unwrap();
    }
    for (port, mac) in [
        ("0x2:1", "00:00:00:00:00:02"),
        ("0x1:1", "00:00:00:00:00:01"),
        ("0x1:1", "00:00:00:00:00:03"),
    ] {
        agent
            .post(&daemon.url(&format!("/slices/a/ports/{port}/mac_addresses")))
            .send_json(json!({"name": mac}))
            .unwrap();
    }
    assert!(daemon.terminate().success(), "clean exit on SIGTERM");

    let daemon = Daemon::start(dir.path());
    let get = |path: &str| status_json(agent.get(&daemon.url(path)).call());
    assert_eq!(
        get("/slices"),
        (200, json!([{"name": "b"}, {"name": "a"}, {"name": "c"}]))
    );
    assert_eq!(
        get("/slices/a/ports"),
        (
            200,
            json!([{"name": "0x2:1", "dpid": 2, "port_no": 1}, {"name": "0x1:1", "dpid": 1, "port_no": 1}])
        )
    );
    assert_eq!(
        get("/slices/a/ports/0x1:1/mac_addresses"),
        (
            200,
            json!([{"name": "00:00:00:00:00:01"}, {"name": "00:00:00:00:00:03"}])
        )
    );
}

#[test]
fn an_acknowledged_write_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent();
    let daemon = Daemon::start(dir.path());
    agent
        .post(&daemon.url("/slices"))
        .send_json(json!({"name": "s"}))
        .unwrap();
    for i in 0..50u8 {
        let response = agent
            .post(&daemon.url("/slices/s/ports/0x1:1/mac_addresses"))
            .send_json(json!({"name": format!("00:00:00:00:01:{i:02x}")}))
            .unwrap();
        assert_eq!(response.status(), 201);
    }
    // No pause: the last 201 must already be on disk.
    daemon.kill9();
    let daemon = Daemon::start(dir.path());
    let (status, macs) = status_json(
        agent
            .get(&daemon.url("/slices/s/ports/0x1:1/mac_addresses"))
            .call(),
    );
    assert_eq!(status, 200);
    assert_eq!(macs.as_array().unwrap().len(), 50);
    assert_eq!(macs[49]["name"], "00:00:00:00:01:31");
}

#[test]
fn racing_creates_of_one_slice_admit_exactly_one() {
    let api = Served::start();
    let url = api.daemon.url("/slices");
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..24)
            .map(|_| {
                let (agent, url) = (agent(), url.clone());
                scope.spawn(move || {
                    status_json(agent.post(&url).send_json(json!({"name": "race"}))).0
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        23,
        "{statuses:?}"
    );
    assert_eq!(api.get("/slices"), (200, json!([{"name": "race"}])));
}

#[test]
fn concurrent_mac_adds_to_one_port_all_land() {
    let api = Served::start();
    api.post("/slices", json!({"name": "s"}));
    let url = api.daemon.url("/slices/s/ports/0x1:1/mac_addresses");
    std::thread::scope(|scope| {
        for i in 1..=32u8 {
            let (agent, url) = (agent(), url.clone());
            scope.spawn(move || {
                let body = json!({"name": format!("00:00:00:00:00:{i:02x}")});
                assert_eq!(status_json(agent.post(&url).send_json(body)).0, 201);
            });
        }
    });
    let (_, macs) = api.get("/slices/s/ports/0x1:1/mac_addresses");
    let mut macs: Vec<String> = macs
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_owned())
        .collect();
    macs.sort();
    let expected: Vec<String> = (1..=32u8)
        .map(|i| format!("00:00:00:00:00:{i:02x}"))
        .collect();
    assert_eq!(macs, expected);
    assert_eq!(api.get("/slices/s/ports").1.as_array().unwrap().len(), 1);
}
