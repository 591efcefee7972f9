//! `POST /slices:apply` against the real daemon at sizes an attacker picks: the bound on
//! records, the bound on applies at once, and a large state in and out again (issue 22).
//! How long they take and how much memory is measured by `cargo xtask bench --only
//! applies`, not asserted here.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{agent, status_json, Daemon};

fn apply(daemon: &Daemon, query: &str, body: &Value) -> (u16, Value) {
    status_json(
        agent()
            .post(&daemon.url(&format!("/slices:apply{query}")))
            .send_json(body.clone()),
    )
}

fn export(daemon: &Daemon) -> Value {
    daemon.get_json("/slices:export")
}

/// `count` slices named `<prefix><n>`, each with a port holding one MAC address.
fn declared(prefix: &str, count: u32) -> Value {
    let slices: Vec<Value> = (0..count)
        .map(|n| {
            json!({
                "name": format!("{prefix}{n}"),
                "ports": [{
                    "name": format!("0x1:{}", n + 1),
                    "mac_addresses": [format!("02:00:00:00:{:02x}:{:02x}", n >> 8, n & 0xff)],
                }],
            })
        })
        .collect();
    json!({ "slices": slices })
}

#[test]
fn a_declared_state_of_more_records_than_max_apply_records_is_413_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--max-apply-records", "6"]);
    let (status, _) = apply(&daemon, "", &declared("kept", 1));
    assert_eq!(status, 200);
    let before = export(&daemon);
    // Three records a slice: two slices are 6, three are 9.
    for query in ["", "?dry_run=true"] {
        let (status, body) = apply(&daemon, query, &declared("big", 3));
        assert_eq!(status, 413, "{query}: {body}");
        assert_eq!(
            body["error"],
            "the declared state holds 9 records (slices, ports and MAC addresses), more than \
             the 6 one apply takes; apply it in parts, or raise max_apply_records",
        );
        assert_eq!(export(&daemon), before);
    }
    let (status, body) = apply(&daemon, "", &declared("fits", 2));
    assert_eq!(status, 200, "{body}");
    assert_eq!(export(&daemon)["slices"].as_array().map(Vec::len), Some(2));
}

/// Opens an apply whose body never comes: the daemon takes a place for it and waits.
fn stalled_apply(daemon: &Daemon) -> TcpStream {
    let mut stream = TcpStream::connect(daemon.http).unwrap();
    write!(
        stream,
        "POST /slices:apply?dry_run=true HTTP/1.1\r\nHost: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"slices\":",
        daemon.http
    )
    .unwrap();
    stream
}

/// What the daemon answered on `stream` within `wait`, if anything.
fn answer_within(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut buffer = vec![0; 4096];
    match stream.read(&mut buffer) {
        Ok(read) if read > 0 => Some(String::from_utf8_lossy(&buffer[..read]).into_owned()),
        _ => None,
    }
}

#[test]
fn applies_beyond_two_at_once_are_refused_before_their_bodies_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--request-timeout", "30"]);
    // Three uploads that never finish: two hold the places, whichever came last is
    // refused at once, though its body has not arrived.
    let mut uploads: Vec<TcpStream> = (0..3).map(|_| stalled_apply(&daemon)).collect();
    let mut answers: Vec<Option<String>> = vec![None; uploads.len()];
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while answers.iter().all(Option::is_none) && std::time::Instant::now() < deadline {
        for (upload, answer) in uploads.iter_mut().zip(&mut answers) {
            *answer = answer_within(upload, Duration::from_millis(50));
        }
    }
    // The others are still waiting for their bodies.
    for (upload, answer) in uploads.iter_mut().zip(&mut answers) {
        if answer.is_none() {
            *answer = answer_within(upload, Duration::from_millis(500));
        }
    }
    let refused: Vec<&String> = answers.iter().flatten().collect();
    assert_eq!(refused.len(), 1, "{answers:?}");
    assert!(refused[0].starts_with("HTTP/1.1 503 "), "{}", refused[0]);
    assert!(
        refused[0].ends_with(
            r#"{"error":"2 declared states are being read, planned or applied; try again when one is done"}"#
        ),
        "{}",
        refused[0]
    );
    // While the two wait for their bodies, any other apply is refused as well.
    let (status, body) = apply(&daemon, "?dry_run=true", &declared("other", 1));
    assert_eq!(status, 503, "{body}");
    // A closed upload gives its place back.
    drop(uploads);
    let answered = (0..100).any(|_| {
        let (status, _) = apply(&daemon, "?dry_run=true", &declared("later", 1));
        std::thread::sleep(Duration::from_millis(50));
        status == 200
    });
    assert!(answered, "an apply after the uploads closed is served");
}

#[test]
fn a_state_larger_than_one_batch_goes_in_and_out_whole_and_stays_so_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    // 1,500 slices are 9,000 records of the database: more than one batch takes.
    let big = declared("s", 1500);
    let (status, body) = apply(&daemon, "", &big);
    assert_eq!(status, 200);
    assert_eq!(body["plan"].as_array().map(Vec::len), Some(4500));
    assert_eq!(export(&daemon), big);
    let (status, body) = apply(&daemon, "", &json!({ "slices": [] }));
    assert_eq!(status, 200);
    assert_eq!(body["plan"].as_array().map(Vec::len), Some(1500));
    assert_eq!(daemon.get_json("/slices"), json!([]));
    drop(daemon);
    let daemon = Daemon::start(dir.path());
    assert_eq!(export(&daemon), json!({ "slices": [] }));
    let (status, _) = apply(&daemon, "", &big);
    assert_eq!(status, 200);
    drop(daemon);
    let daemon = Daemon::start(dir.path());
    assert_eq!(export(&daemon), big);
}

#[test]
fn the_daemon_gives_freed_memory_back_from_a_background_thread() {
    // The allocator's options (src/allocator.rs) are read: jemalloc runs its purging
    // thread, which it starts only when told to.
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let (status, _) = apply(&daemon, "", &declared("s", 100));
    assert_eq!(status, 200);
    let threads: Vec<String> = std::fs::read_dir(format!("/proc/{}/task", daemon.pid()))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect();
    assert!(
        threads
            .iter()
            .any(|name| name.starts_with("jemalloc_bg_thd")),
        "{threads:?}"
    );
}
