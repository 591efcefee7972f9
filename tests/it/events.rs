//! `GET /events`: the real daemon's Server-Sent Events stream, read over a real socket as
//! a browser's EventSource would, with changes made through REST and through `slice`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{json, Value};
use slice_http::events::{MAX_EVENT_STREAMS, MAX_STREAMS_PER_CLIENT, STREAMS_KEPT_FOR_LOGGED_IN};

use crate::common::switch::eventually;
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

    /// The next event but the audit trail's (which follows each write's changes).
    fn next(&mut self) -> Event {
        loop {
            let event = self.next_of_any_kind();
            if event.kind != "audit" {
                return event;
            }
        }
    }

    /// The next event, skipping keep-alive comments; the stream's read timeout (the
    /// agent's) ends a test whose event never comes.
    fn next_of_any_kind(&mut self) -> Event {
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
    let mut everything = Events::open(&daemon, "/events", None);
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
    // Each write's audit entry follows its changes, naming who wrote but not from where:
    // the stream is open to anyone here, the log keeps the source.
    let all: Vec<Event> = (0..8).map(|_| everything.next_of_any_kind()).collect();
    for event in all.iter().filter(|event| event.kind == "audit") {
        assert!(
            event.data.get("source").is_none() && event.data.get("email").is_none(),
            "{:?}",
            event.data
        );
        assert_eq!(event.data["result"], "ok");
    }
    let told: Vec<(String, Value, Value)> = all
        .into_iter()
        .map(|event| {
            let operation = event.data["operation"].clone();
            (event.kind, operation, event.data["user"].clone())
        })
        .collect();
    let change = |kind: &str| (kind.to_owned(), Value::Null, Value::Null);
    let audit = |operation: &str, user: &str| ("audit".to_owned(), json!(operation), json!(user));
    assert_eq!(
        told,
        [
            change("slice_created"),
            audit("create_slice", "anonymous"),
            change("port_added"),
            audit("add_port", "anonymous"),
            change("mac_added"),
            audit("add_mac", "anonymous"),
            change("slice_created"),
            audit("create_slice", &crate::audit::unix_user()),
        ]
    );
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
fn a_fabric_declaration_is_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let mut events = Events::open(&daemon, "/events", None);
    let declare = |entries: &[&str]| {
        let (status, body) = status_json(
            agent()
                .put(&daemon.url("/topology/fabric"))
                .send_json(json!({ "declared": entries })),
        );
        assert_eq!(status, 200, "{body}");
    };
    declare(&["0x3:1", "0x2:10-0x1:10"]);
    let declared = events.next();
    assert_eq!(declared.kind, "fabric_declared");
    assert_eq!(
        declared.data,
        json!({"mode": "declared", "declared": ["0x1:10-0x2:10", "0x3:1"]})
    );
    // The same again changes nothing and tells nothing: the next event is the slice's.
    declare(&["0x1:10-0x2:10", "0x3:1"]);
    post(&daemon, "/slices", json!({"name": "blue"}));
    assert_eq!(events.next().kind, "slice_created");
    declare(&[]);
    let ended = events.next();
    assert_eq!(
        (ended.kind.as_str(), ended.data),
        (
            "fabric_declared",
            json!({"mode": "discovered", "declared": []})
        )
    );
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
    // OpenFlow 1.0: per-pair paths, whose setup is an event too.
    let switch = network.connect(daemon.openflow, 1, Version::Of10, 2);
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

// ---- the bounds on streams ------------------------------------------------------------
//
// These talk raw HTTP/1.1 over sockets the test holds: a stream is held by keeping its
// connection, and a client hangs up by closing it, as a browser tab or `curl` does.

/// How long anything the daemon does at once may take on a loaded two-core machine; the
/// keep-alive comment every 15 s, which used to be the first a stream noticed of its
/// client's hangup, is well beyond it.
const PROMPTLY: Duration = Duration::from_secs(8);

/// A connection to the daemon from `source`: all of 127.0.0.0/8 is loopback on Linux, so
/// each address is another client to the daemon.
fn connect_from(daemon: &Daemon, source: Ipv4Addr) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let connection = runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((source, 0)))?;
            socket.connect(daemon.http).await?.into_std()
        })
        .expect("connects");
    connection.set_nonblocking(false).unwrap();
    connection.set_read_timeout(Some(PROMPTLY)).unwrap();
    connection
}

/// An answer's status, head and the body bytes read with it.
struct Head {
    status: u16,
    text: String,
    rest: Vec<u8>,
}

/// Sends `method path` on `connection` with the header lines `headers` (each ending in
/// CRLF) and reads the answer's head; the connection stays open, and with it any stream
/// the request opened.
fn ask(
    connection: &mut TcpStream,
    daemon: &Daemon,
    method: &str,
    path: &str,
    headers: &str,
) -> Head {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{headers}\r\n",
        daemon.http
    );
    connection.write_all(request.as_bytes()).unwrap();
    let mut read = Vec::new();
    let end = loop {
        if let Some(end) = read.windows(4).position(|four| four == b"\r\n\r\n") {
            break end;
        }
        let mut buf = [0u8; 4096];
        let n = connection.read(&mut buf).expect("the answer comes at once");
        assert!(
            n > 0,
            "{method} {path}: the connection closed before an answer"
        );
        read.extend_from_slice(&buf[..n]);
    };
    let text = String::from_utf8_lossy(&read[..end]).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .expect("a status line");
    Head {
        status,
        text,
        rest: read[end + 4..].to_vec(),
    }
}

/// The JSON body of a refusal whose head `head` is (`content-length` framed).
fn refusal_body(connection: &mut TcpStream, head: Head) -> Value {
    let length: usize = head
        .text
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .and_then(|length| length.trim().parse().ok())
        .expect("a refusal has a length");
    let mut body = head.rest;
    while body.len() < length {
        let mut buf = [0u8; 4096];
        let n = connection.read(&mut buf).unwrap();
        assert!(n > 0, "the body was cut short");
        body.extend_from_slice(&buf[..n]);
    }
    serde_json::from_slice(&body[..length]).expect("a JSON body")
}

/// A GET of `path` from `source`, with the header lines `headers`, that opened a stream;
/// its connection.
fn open_stream(daemon: &Daemon, source: Ipv4Addr, path: &str, headers: &str) -> TcpStream {
    let mut connection = connect_from(daemon, source);
    let head = ask(&mut connection, daemon, "GET", path, headers);
    assert_eq!(head.status, 200, "GET {path} from {source}: {}", head.text);
    connection
}

/// Logs in as `email` through the developer login; returns the header line that sends
/// the session cookie.
fn log_in(daemon: &Daemon, email: &str) -> String {
    let response = agent()
        .post(&daemon.url("/auth/developer/callback"))
        .send_json(json!({"name": "Ada", "email": email}))
        .expect("the login answers 200");
    let cookie = response.header("set-cookie").expect("a session cookie");
    format!(
        "Cookie: {}\r\n",
        cookie.split(';').next().unwrap_or_default()
    )
}

/// The daemon's open streams, as its `sliced_event_streams` gauges count them.
fn open_streams(daemon: &Daemon) -> u64 {
    let text = agent()
        .get(&daemon.url("/metrics"))
        .call()
        .expect("the metrics answer")
        .into_string()
        .unwrap();
    let counts: Vec<f64> = text
        .lines()
        .filter(|line| line.starts_with("sliced_event_streams{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect();
    assert_eq!(counts.len(), 2, "the two stream gauges: {text}");
    counts.iter().sum::<f64>() as u64
}

/// Waits for the stream on `connection` to send an event of type `kind`.
fn read_until_event(connection: &mut TcpStream, kind: &str) {
    let wanted = format!("event: {kind}\n");
    let mut seen = String::new();
    while !seen.contains(&wanted) {
        let mut buf = [0u8; 4096];
        let n = connection.read(&mut buf).expect("the event comes");
        assert!(n > 0, "the stream ended before {kind}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

#[test]
fn head_requests_closed_at_once_leave_every_stream_free() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    // 300 HEADs, each answered and then closed, as `curl -I` or a page's fetch does: more
    // than there are streams.
    let mut heads: Vec<TcpStream> = (0..300)
        .map(|_| connect_from(&daemon, Ipv4Addr::LOCALHOST))
        .collect();
    for connection in &mut heads {
        let head = ask(connection, &daemon, "HEAD", "/events", "");
        assert_eq!(head.status, 200, "{}", head.text);
        // The GET's head: a stream would follow.
        assert!(
            head.text.contains("content-type: text/event-stream"),
            "{}",
            head.text
        );
    }
    drop(heads);
    assert!(eventually(PROMPTLY, || open_streams(&daemon) == 0));

    // The web view's stream is served, and streams.
    let cookie = log_in(&daemon, "ada@example.com");
    let mut web_view = open_stream(&daemon, Ipv4Addr::LOCALHOST, "/api/events", &cookie);
    post(&daemon, "/slices", json!({"name": "blue"}));
    read_until_event(&mut web_view, "slice_created");
    assert_eq!(open_streams(&daemon), 1);
    drop(web_view);
    assert!(eventually(PROMPTLY, || open_streams(&daemon) == 0));
}

#[test]
fn a_stream_whose_client_hangs_up_gives_its_slot_back_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let cookie = log_in(&daemon, "ada@example.com");
    let anonymous = open_stream(&daemon, Ipv4Addr::LOCALHOST, "/events", "");
    let web_view = open_stream(&daemon, Ipv4Addr::LOCALHOST, "/api/events", &cookie);
    assert_eq!(open_streams(&daemon), 2);
    // No event is published from here on: nothing is written to the streams that could
    // fail and tell the daemon, and the next keep-alive is 15 s away.
    drop(anonymous);
    assert!(
        eventually(PROMPTLY, || open_streams(&daemon) == 1),
        "the stream outlived its client"
    );
    drop(web_view);
    assert!(
        eventually(PROMPTLY, || open_streams(&daemon) == 0),
        "the web view's stream outlived its client"
    );
}

#[test]
fn one_client_holds_a_bounded_number_of_streams() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let local = Ipv4Addr::LOCALHOST;
    let mut held: Vec<TcpStream> = (0..MAX_STREAMS_PER_CLIENT)
        .map(|_| open_stream(&daemon, local, "/events", ""))
        .collect();
    let refused = |method: &str| {
        let mut connection = connect_from(&daemon, local);
        let head = ask(&mut connection, &daemon, method, "/events", "");
        assert_eq!(head.status, 429, "{method}: {}", head.text);
        (connection, head)
    };
    let (mut connection, head) = refused("GET");
    let body = refusal_body(&mut connection, head);
    assert!(
        body["error"].as_str().unwrap().contains("streams"),
        "{body}"
    );
    // A HEAD says what a GET would get.
    refused("HEAD");
    // Another address is another client.
    held.push(open_stream(
        &daemon,
        Ipv4Addr::new(127, 0, 0, 2),
        "/events",
        "",
    ));
    // On loopback every client has the same address: a logged-in one is its user.
    let ada = log_in(&daemon, "ada@example.com");
    for _ in 0..MAX_STREAMS_PER_CLIENT {
        held.push(open_stream(&daemon, local, "/api/events", &ada));
    }
    let mut connection = connect_from(&daemon, local);
    let head = ask(&mut connection, &daemon, "GET", "/api/events", &ada);
    assert_eq!(head.status, 429, "{}", head.text);
    let bob = log_in(&daemon, "bob@example.com");
    held.push(open_stream(&daemon, local, "/api/events", &bob));
    // A stream closed is one the client may open again.
    drop(held.swap_remove(0));
    assert!(eventually(PROMPTLY, || {
        let mut connection = connect_from(&daemon, local);
        let head = ask(&mut connection, &daemon, "GET", "/events", "");
        if head.status == 200 {
            held.push(connection);
        }
        head.status == 200
    }));
}

#[test]
fn clients_without_a_session_cannot_take_the_streams_kept_for_logged_in_ones() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    // Clients without a session, from one address after another, open streams until they
    // are refused.
    let mut held = Vec::new();
    let refused = 'open: {
        for client in 0u8..=255 {
            for _ in 0..MAX_STREAMS_PER_CLIENT {
                let mut connection = connect_from(&daemon, Ipv4Addr::new(127, 0, 1, client));
                let head = ask(&mut connection, &daemon, "GET", "/events", "");
                if head.status != 200 {
                    break 'open head;
                }
                held.push(connection);
            }
        }
        panic!("{} streams and never refused", held.len());
    };
    assert_eq!(refused.status, 503, "{}", refused.text);
    // The web view still gets its stream.
    let cookie = log_in(&daemon, "ada@example.com");
    held.push(open_stream(
        &daemon,
        Ipv4Addr::LOCALHOST,
        "/api/events",
        &cookie,
    ));
    assert_eq!(
        held.len(),
        MAX_EVENT_STREAMS - STREAMS_KEPT_FOR_LOGGED_IN + 1
    );
    assert_eq!(
        open_streams(&daemon),
        (MAX_EVENT_STREAMS - STREAMS_KEPT_FOR_LOGGED_IN + 1) as u64
    );
    drop(held);
    assert!(eventually(PROMPTLY, || open_streams(&daemon) == 0));
}

#[test]
fn a_page_of_another_origin_opens_no_stream() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let cookie = log_in(&daemon, "ada@example.com");
    // A page on another port of this host is the same site, so the browser sends it the
    // session cookie; it could not read the stream, only hold it.
    for (path, session) in [("/events", ""), ("/api/events", cookie.as_str())] {
        for site in ["same-site", "cross-site"] {
            for method in ["GET", "HEAD"] {
                let mut connection = connect_from(&daemon, Ipv4Addr::LOCALHOST);
                let headers = format!("{session}Sec-Fetch-Site: {site}\r\n");
                let head = ask(&mut connection, &daemon, method, path, &headers);
                assert_eq!(head.status, 403, "{method} {path} from a {site} page");
            }
        }
    }
    assert_eq!(open_streams(&daemon), 0);
    // The daemon's own page, and an address typed by the user, are served.
    let own = format!("{cookie}Sec-Fetch-Site: same-origin\r\n");
    let _web_view = open_stream(&daemon, Ipv4Addr::LOCALHOST, "/api/events", &own);
    let _typed = open_stream(
        &daemon,
        Ipv4Addr::LOCALHOST,
        "/events",
        "Sec-Fetch-Site: none\r\n",
    );
    assert_eq!(open_streams(&daemon), 2);
}

// ---- the daemon's stop ----------------------------------------------------------------------

/// Streams open when SIGTERM comes: the web view's and `curl -N`'s, from several clients.
const STREAMS_AT_STOP: usize = 50;

/// What the test asserts of a stop: that it does not wait for its clients (actix's own
/// wait was 30 s), with room for a loaded two-core machine. The daemon gives open
/// connections 1 s (`slice_http::serve::STOP_GRACE_SECS`); the time taken is printed.
const STOP_BOUND: Duration = Duration::from_secs(5);

#[test]
fn sigterm_ends_every_stream_at_once_and_the_daemon_exits_whatever_its_clients_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = Daemon::start(dir.path());
    let cookie = log_in(&daemon, "ada@example.com");
    let mut readers = Vec::new();
    let mut never_read = Vec::new();
    for n in 0..STREAMS_AT_STOP {
        // Five addresses, as one client holds at most 16 streams; a quarter of the streams
        // the web view's, behind a session.
        let source = Ipv4Addr::new(127, 0, 5, 1 + (n / 10) as u8);
        let (path, headers) = if n % 4 == 0 {
            ("/api/events", cookie.as_str())
        } else {
            ("/events", "")
        };
        if n % 5 < 2 {
            // Asks, and never reads a byte, not even the answer's head.
            let mut connection = connect_from(&daemon, source);
            let request = format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n{headers}\r\n",
                daemon.http
            );
            connection.write_all(request.as_bytes()).unwrap();
            never_read.push(connection);
        } else {
            readers.push(open_stream(&daemon, source, path, headers));
        }
    }
    // Two clients that asked for far more than the sockets between them and the daemon
    // hold, and read none of it: their answers can never be written out.
    for n in 0..2 {
        let mut connection = connect_from(&daemon, Ipv4Addr::new(127, 0, 6, 1 + n));
        let request = format!(
            "GET /openapi.json HTTP/1.1\r\nHost: {}\r\n\r\n",
            daemon.http
        );
        connection
            .write_all(request.repeat(200).as_bytes())
            .unwrap();
        never_read.push(connection);
    }
    // Events the streams that never read leave unread.
    let slices: Vec<Value> = (0..300)
        .map(|n| json!({"name": format!("before-the-stop-{n}")}))
        .collect();
    let (status, body) = status_json(
        agent()
            .post(&daemon.url("/slices:apply"))
            .send_json(json!({ "slices": slices })),
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        eventually(PROMPTLY, || open_streams(&daemon) == STREAMS_AT_STOP as u64),
        "{} streams open",
        open_streams(&daemon)
    );
    let reading: Vec<_> = readers
        .into_iter()
        .map(|mut connection| {
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 16384];
                loop {
                    match connection.read(&mut buf) {
                        Ok(0) => return Ok(String::from_utf8_lossy(&seen).into_owned()),
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                        Err(err) => return Err(format!("{err} after {} bytes", seen.len())),
                    }
                }
            })
        })
        .collect();

    let signalled = std::time::Instant::now();
    crate::common::signal(daemon.pid(), "TERM");
    let status = daemon
        .exit_within(Duration::from_secs(60))
        .expect("sliced stops");
    let took = signalled.elapsed();
    eprintln!("sliced stopped {took:?} after SIGTERM with {STREAMS_AT_STOP} streams open");
    assert!(status.success(), "{status}");
    assert!(took < STOP_BOUND, "the stop took {took:?}");
    for reader in reading {
        // Each reading client got every event, then the last frame, then the end.
        let seen = reader
            .join()
            .unwrap()
            .expect("the stream ends, not times out");
        assert!(seen.contains("before-the-stop-299"), "{seen}");
        let last = seen.rfind("event: ").expect("events");
        assert!(
            seen[last..].starts_with(slice_http::events::SHUTDOWN_FRAME),
            "the last event is the shutdown: {}",
            &seen[last..]
        );
    }
    drop(never_read);
}
