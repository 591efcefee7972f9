//! `GET /healthz` and `GET /readyz` on the real daemon: open to anyone, guarded by the
//! Host policy like every endpoint, and readiness following the store.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use crate::common::switch::eventually;
use crate::common::{agent, status_json, Daemon};

/// Longer than readiness keeps a probe's outcome (1 s), with room for a loaded machine.
const NOTICED: Duration = Duration::from_secs(10);

#[test]
fn health_and_readiness_answer_anyone_even_with_require_auth() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--require-auth"]);
    let (status, _) = status_json(agent().get(&daemon.url("/slices")).call());
    assert_eq!(status, 403, "the slice endpoints are guarded");

    let live = agent().get(&daemon.url("/healthz")).call().unwrap();
    assert_eq!(live.header("cache-control"), Some("no-store"));
    assert_eq!(
        live.into_json::<serde_json::Value>().unwrap(),
        json!({"status": "ok"})
    );
    let ready = status_json(agent().get(&daemon.url("/readyz")).call());
    assert_eq!(
        ready,
        (
            200,
            json!({"status": "ready", "checks": {"store": "ok", "openflow": "ok", "http": "ok"}})
        )
    );
    for path in ["/healthz", "/readyz"] {
        let head = agent().head(&daemon.url(path)).call().unwrap();
        assert_eq!(head.status(), 200, "HEAD {path}");
        assert_eq!(head.into_string().unwrap(), "", "HEAD {path}");
        // A page that rebinds its name to the daemon's address gets no more than elsewhere.
        let answer = status_line(&daemon, path, "attacker.example");
        assert!(answer.starts_with("HTTP/1.1 403 "), "{path}: {answer}");
    }
}

/// The status line of `GET path` sent with `host` as its `Host`.
fn status_line(daemon: &Daemon, path: &str, host: &str) -> String {
    let mut connection = TcpStream::connect(daemon.http).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    connection.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    connection.read_to_string(&mut answer).unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

#[test]
fn readiness_fails_once_the_database_is_gone_while_liveness_holds() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    assert_eq!(
        status_json(agent().get(&daemon.url("/readyz")).call()).0,
        200
    );
    // Removed under the running daemon: writes would go to a file no restart finds.
    std::fs::remove_file(dir.path().join("store/db")).unwrap();
    assert!(eventually(NOTICED, || {
        status_json(agent().get(&daemon.url("/readyz")).call()).0 == 503
    }));
    let (_, body) = status_json(agent().get(&daemon.url("/readyz")).call());
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("not ready: store: "), "{body}");
    assert!(error.contains("removed"), "{body}");
    assert_eq!(body["checks"]["openflow"], "ok", "{body}");
    assert_eq!(
        status_json(agent().get(&daemon.url("/healthz")).call()).0,
        200
    );
}
