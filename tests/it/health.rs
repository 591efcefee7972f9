//! `GET /healthz` and `GET /readyz` on the real daemon: open to anyone, guarded by the
//! Host policy like every endpoint, readiness following the store, and its reasons told
//! only to a requester something vouches for.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use slice_etcd::test_server::LocalEtcd;

use crate::common::switch::eventually;
use crate::common::{agent, local_request, status_json, Daemon};

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
    assert_eq!(ready, (200, json!({"status": "ready"})));
    assert_eq!(
        local_request(&daemon.data_dir, "GET", "/readyz", &[], None),
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

/// sled's log removed under the running daemon: the next probe finds it gone, which fails
/// the store for good and stops the daemon (see
/// `daemon::a_write_after_the_log_file_was_removed_is_refused_and_the_daemon_stops`).
/// Until it has stopped, anyone asking is told "not ready" and nothing of why; the log
/// says why.
#[test]
fn readiness_fails_once_the_database_is_gone_and_tells_anyone_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    let mut daemon = Daemon::start_logged(&dir.path().join("db"), &[], true, &log);
    let ready = (200, json!({"status": "ready"}));
    assert_eq!(
        status_json(agent().get(&daemon.url("/readyz")).call()),
        ready
    );
    std::fs::remove_file(daemon.data_dir.join("store/db")).unwrap();
    let mut answers = Vec::new();
    let gone = eventually(NOTICED, || {
        match agent().get(&daemon.url("/readyz")).call() {
            Ok(answer) | Err(ureq::Error::Status(_, answer)) => {
                let status = answer.status();
                answers.push((status, answer.into_json().unwrap_or(Value::Null)));
                false
            }
            Err(_) => true,
        }
    });
    assert!(gone, "{answers:?}");
    let not_ready = (503, json!({"error": "not ready"}));
    assert!(
        answers
            .iter()
            .all(|answer| *answer == ready || *answer == not_ready),
        "{answers:?}"
    );
    let status = daemon.exit_within(NOTICED).expect("sliced stops by itself");
    assert_eq!(status.code(), Some(1));
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(written.contains("sled's log file was removed"), "{written}");
}

/// Whether `body` names `text` anywhere, keys and values alike.
fn mentions(body: &Value, text: &str) -> bool {
    body.to_string().contains(text)
}

#[test]
fn with_etcd_down_anyone_learns_not_ready_and_only_a_login_learns_why() {
    let mut etcd = LocalEtcd::start();
    let member = etcd.endpoint();
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(
        dir.path(),
        &[
            "--etcd",
            &member,
            "--etcd-allow-plaintext",
            "--require-auth",
        ],
    );
    let anyone = agent();
    let ready = || status_json(anyone.get(&daemon.url("/readyz")).call());
    assert!(eventually(NOTICED, || ready().0 == 200), "{:?}", ready());
    assert_eq!(ready(), (200, json!({"status": "ready"})));
    let logged_in = agent();
    let login = logged_in
        .post(&daemon.url("/auth/developer/callback"))
        .set("Origin", &daemon.url(""))
        .send_json(json!({"name": "Ada", "email": "ada@example.com"}));
    assert_eq!(status_json(login).0, 200);
    let told = || status_json(logged_in.get(&daemon.url("/readyz")).call());
    assert_eq!(told().1["checks"]["store"], "ok", "{:?}", told());

    etcd.stop();
    assert!(eventually(NOTICED, || ready().0 == 503), "{:?}", ready());
    // Anyone: the status, no member address, no system error.
    let (status, body) = ready();
    assert_eq!((status, &body), (503, &json!({"error": "not ready"})));
    let head = anyone.head(&daemon.url("/readyz")).call();
    assert_eq!(status_json(head).0, 503);
    // A session of any role, and the local socket: the checks and the first one's reason.
    for (who, (status, body)) in [
        ("a session", told()),
        (
            "the local socket",
            local_request(&daemon.data_dir, "GET", "/readyz", &[], None),
        ),
    ] {
        assert_eq!(status, 503, "{who}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("not ready: store: "), "{who}: {body}");
        assert!(mentions(&body, &member), "{who}: {body}");
        assert_eq!(body["checks"]["openflow"], "ok", "{who}: {body}");
    }
    // `/cluster` stays behind the guard: nothing to anyone, the store's health (its
    // members and error) to a logged-in reader of any role.
    let (status, body) = status_json(anyone.get(&daemon.url("/cluster")).call());
    assert_eq!(status, 403, "{body}");
    assert!(!mentions(&body, &member), "{body}");
    let cluster = || status_json(logged_in.get(&daemon.url("/cluster")).call());
    assert!(
        eventually(NOTICED, || cluster().1["etcd"]["healthy"] == false),
        "{:?}",
        cluster()
    );
    assert_eq!(cluster().1["etcd"]["endpoints"], json!([member]));
}
