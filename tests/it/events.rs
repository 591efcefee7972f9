//! `GET /events`: the real daemon's Server-Sent Events stream, read over a real socket as
//! a browser's EventSource would, with changes made through REST and through `slice`.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{agent, slice, status_json, Daemon};

/// One event of the stream: its id (none on a `resync`), type and JSON data.
#[derive(Debug, Clone, PartialEq)]
struct Event {
    id: Option<u64>,
    kind: String,
    data: Value,
}

/// An open event stream, read line by line.
struct Events {
    lines: Box<dyn BufRead + Send>,
}

impl Events {
    fn open(daemon: &Daemon, path: &str, last_seen: Option<u64>) -> Self {
        let mut request = agent()
            .get(&daemon.url(path))
            .set("Accept", "text/event-stream");
        if let Some(id) = last_seen {
            request = request.set("Last-Event-ID", &id.to_string());
        }
        let response = request.call().expect("the stream opens");
        assert_eq!(response.header("content-type"), Some("text/event-stream"));
        Self {
            lines: Box::new(BufReader::new(response.into_reader())),
        }
    }

    /// The next event, skipping keep-alive comments; the stream's read timeout (the
    /// agent's) ends a test whose event never comes.
    fn next(&mut self) -> Event {
        let (mut id, mut kind, mut data) = (None, String::new(), Value::Null);
        loop {
            let mut line = String::new();
            let read = self
                .lines
                .read_line(&mut line)
                .expect("the stream stays open");
            assert!(read > 0, "the stream ended");
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if !kind.is_empty() {
                    return Event { id, kind, data };
                }
                continue;
            }
            if let Some(value) = line.strip_prefix("id: ") {
                id = Some(value.parse().expect("ids are numbers"));
            } else if let Some(value) = line.strip_prefix("event: ") {
                kind = value.to_owned();
            } else if let Some(value) = line.strip_prefix("data: ") {
                data = serde_json::from_str(value).expect("data is JSON");
            }
        }
    }
}

fn post(daemon: &Daemon, path: &str, body: Value) {
    let (status, answer) = status_json(agent().post(&daemon.url(path)).send_json(body));
    assert_eq!(status, 201, "POST {path}: {answer}");
}

#[test]
fn committed_changes_stream_in_order_with_growing_ids_and_a_client_resumes_where_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let mut events = Events::open(&daemon, "/events", None);
    post(&daemon, "/slices", json!({"name": "blue"}));
    post(
        &daemon,
        "/slices/blue/ports",
        json!({"dpid": 1, "port_no": 1}),
    );
    // A MAC address on a port not yet in the slice brings the port along, in one event.
    post(
        &daemon,
        "/slices/blue/ports/0x2:1/mac_addresses",
        json!({"name": "00:00:00:00:00:02"}),
    );
    // The tool writes through the daemon's socket; its changes are events too.
    let made = slice(dir.path(), &["add", "red"]);
    assert!(made.status.success(), "{made:?}");

    let seen: Vec<Event> = (0..4).map(|_| events.next()).collect();
    let kinds: Vec<&str> = seen.iter().map(|event| event.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["slice_created", "port_added", "mac_added", "slice_created"]
    );
    assert_eq!(seen[0].data, json!({"slice": "blue"}));
    assert_eq!(seen[1].data, json!({"slice": "blue", "port": "0x1:1"}));
    assert_eq!(
        seen[2].data,
        json!({"slice": "blue", "port": "0x2:1", "mac": "00:00:00:00:00:02"})
    );
    assert_eq!(seen[3].data, json!({"slice": "red"}));
    let ids: Vec<u64> = seen.iter().map(|event| event.id.unwrap()).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");

    // A client that saw the first two comes back and gets exactly the rest, then what
    // happens next.
    let mut resumed = Events::open(&daemon, "/events", Some(ids[1]));
    assert_eq!(resumed.next(), seen[2]);
    assert_eq!(resumed.next(), seen[3]);
    let (status, _) = status_json(
        agent()
            .delete(&daemon.url("/slices"))
            .send_json(json!({"name": "red"})),
    );
    assert_eq!(status, 200);
    let deleted = resumed.next();
    assert_eq!(deleted.kind, "slice_deleted");
    assert_eq!(deleted.data, json!({"slice": "red"}));
    assert!(deleted.id > Some(ids[3]));
    assert_eq!(events.next(), deleted);
}

#[test]
fn an_id_from_before_this_run_asks_the_client_to_read_the_state_again() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let mut events = Events::open(&daemon, "/events", None);
    post(&daemon, "/slices", json!({"name": "blue"}));
    let before = events.next().id.unwrap();
    drop(events);
    let http = daemon.http;
    daemon.kill9();
    let daemon = Daemon::start_with_http(dir.path(), http);
    let mut events = Events::open(&daemon, "/events", Some(before));
    let told = events.next();
    assert_eq!(told.kind, "resync");
    assert_eq!(told.id, None);
    post(&daemon, "/slices", json!({"name": "red"}));
    let next = events.next();
    assert!(next.id.unwrap() > before, "ids grow across restarts");
}

#[test]
fn the_stream_follows_the_slice_endpoints_rules_and_refuses_a_bad_last_event_id() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    // Under /api/ a session is needed, as for every path there.
    let (status, body) = status_json(agent().get(&daemon.url("/api/events")).call());
    assert_eq!((status, body), (403, json!({"status": "forbidden"})));
    let (status, body) = status_json(
        agent()
            .get(&daemon.url("/events"))
            .set("Last-Event-ID", "yesterday")
            .call(),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Last-Event-ID"));
    let (status, body) = status_json(agent().post(&daemon.url("/events")).call());
    assert_eq!(status, 405, "{body}");

    let dir = tempfile::tempdir().unwrap();
    let guarded = Daemon::start_with(dir.path(), &["--require-auth"]);
    let (status, body) = status_json(
        agent()
            .get(&guarded.url("/events"))
            .timeout(Duration::from_secs(5))
            .call(),
    );
    assert_eq!((status, body), (403, json!({"status": "forbidden"})));
}

#[test]
fn the_networks_changes_stream_too() {
    use crate::common::switch::{frame, host, Network, BROADCAST};
    use openflow::Version;

    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x1:2", "00:00:00:00:00:02");
    // Only what happens after the stream opened is in it.
    let mut events = Events::open(&daemon, "/events", None);
    let mut network = Network::new();
    let switch = network.connect(daemon.openflow, 1, Version::Of13, 2);
    let up = events.next();
    assert_eq!(
        (up.kind.as_str(), &up.data),
        ("switch_up", &json!({"dpid": 1}))
    );
    switch.packet_in(2, frame(2, BROADCAST));
    switch.packet_in(1, frame(1, host(2)));
    let seen: Vec<Event> = (0..3).map(|_| events.next()).collect();
    assert_eq!(
        seen.iter()
            .map(|event| (event.kind.as_str(), event.data.clone()))
            .collect::<Vec<_>>(),
        [
            (
                "host_learned",
                json!({"mac": "00:00:00:00:00:02", "port": "0x1:2"})
            ),
            (
                "host_learned",
                json!({"mac": "00:00:00:00:00:01", "port": "0x1:1"})
            ),
            (
                "path_installed",
                json!({"src": "00:00:00:00:00:01", "dst": "00:00:00:00:00:02"})
            ),
        ]
    );
    // A header that claims less than itself: the controller hangs up on the switch.
    switch.send_raw(&[4, 0, 0, 4, 0, 0, 0, 1]);
    let mut gone = Vec::new();
    while gone
        .last()
        .is_none_or(|event: &Event| event.kind != "switch_down")
    {
        gone.push(events.next());
    }
    let kinds: Vec<&str> = gone.iter().map(|event| event.kind.as_str()).collect();
    assert!(kinds.contains(&"path_deleted"), "{kinds:?}");
    assert_eq!(
        gone.iter()
            .filter(|event| event.kind == "host_forgotten")
            .count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(gone.last().unwrap().data, json!({"dpid": 1}));
}
