//! Stalled bodies and the connection cap (finding 5): a connection that stops sending
//! is answered and closed, and stalled connections starve neither other clients, the
//! local socket nor the switches.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::{read_response, slices, PATIENCE};
use crate::common::{agent, status_json, Daemon};

/// Opens a connection that sends a POST head and part of its body, then nothing.
fn stall(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(
            format!(
                "POST /slices HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Content-Length: 100\r\n\r\n{{\"name\""
            )
            .as_bytes(),
        )
        .unwrap();
    stream
}

fn local_get(data_dir: &Path, path: &str) -> String {
    let mut stream = std::os::unix::net::UnixStream::connect(data_dir.join("sliced.sock")).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn a_stalled_body_is_answered_408_and_its_connection_closed() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--request-timeout", "1"]);
    let mut stalled = stall(daemon.http);
    stalled.set_read_timeout(Some(PATIENCE)).unwrap();
    // read_to_end returns only once the daemon closes the connection.
    let answer = read_response(&mut stalled);
    assert_eq!(answer.status, 408, "{answer:?}");
    assert_eq!(
        answer.json(),
        json!({"error": "the request body did not arrive within 1 s"})
    );
    assert_eq!(slices(&daemon), json!([]));
}

/// actix-http times only the first request head of a connection: without the guard's
/// hold on partial heads, one byte of a second request kept a connection forever.
#[test]
fn a_second_request_that_never_completes_its_head_does_not_hold_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--request-timeout", "1"]);
    let mut stream = TcpStream::connect(daemon.http).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let host = daemon.http.to_string();
    let first = format!("GET /slices HTTP/1.1\r\nHost: {host}\r\n\r\n");
    stream.write_all(first.as_bytes()).unwrap();
    let mut answer = [0u8; 4096];
    let read = stream.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with("[]"),
        "the first answer arrives whole: {answer}"
    );
    // The start of a second request, and then nothing.
    stream.write_all(b"G").unwrap();
    let mut rest = Vec::new();
    // read_to_end returns once the daemon closes the connection; a read timeout after
    // PATIENCE is an error, and so a failure.
    let closed = stream.read_to_end(&mut rest);
    assert!(closed.is_ok(), "the connection was held: {closed:?}");
}

#[test]
fn a_client_queued_behind_stalled_connections_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(
        dir.path(),
        &["--request-timeout", "1", "--max-http-connections", "8"],
    );
    let stalled: Vec<TcpStream> = (0..40).map(|_| stall(daemon.http)).collect();
    // Every slot is taken by a stalled body; the new client waits for the timeouts.
    assert_eq!(
        status_json(agent().get(&daemon.url("/slices")).timeout(PATIENCE).call()),
        (200, json!([]))
    );
    drop(stalled);
}

#[test]
fn stalled_connections_starve_neither_the_local_socket_nor_the_switches() {
    let dir = tempfile::tempdir().unwrap();
    // Bodies are waited for an hour: only the connection cap protects the daemon here.
    let daemon = Daemon::start_with(
        dir.path(),
        &["--request-timeout", "3600", "--max-http-connections", "40"],
    );
    // An administrator's low limit: without a cap, the stalled connections below would
    // take every descriptor and the daemon could accept nothing, on any socket.
    let limit = Command::new("prlimit")
        .arg(format!("--pid={}", daemon.pid()))
        .arg("--nofile=160:160")
        .status()
        .expect("prlimit runs");
    assert!(limit.success());
    let stalled: Vec<TcpStream> = (0..300).map(|_| stall(daemon.http)).collect();

    let local = local_get(dir.path(), "/slices");
    assert!(local.starts_with("HTTP/1.1 200"), "{local}");
    assert!(local.ends_with("[]"), "{local}");
    let switch = TcpStream::connect(daemon.openflow).unwrap();
    let mut hello = [0u8; 8];
    switch.set_read_timeout(Some(PATIENCE)).unwrap();
    (&switch).read_exact(&mut hello).unwrap();
    assert_eq!(hello[1], 0, "an OpenFlow HELLO: {hello:?}");
    drop(stalled);
}
