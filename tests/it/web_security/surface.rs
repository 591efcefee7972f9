//! The rest of the HTTP surface (finding 9): HEAD, names a URL path cannot carry,
//! malformed requests answered in JSON over TCP and the local socket with nothing in the
//! log, keep-alive connections, and a session key open to others.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use super::{raw, read_response, request, Raw, PATIENCE};
use crate::common::in_process::Api;
use crate::common::{agent, Daemon};

#[test]
fn head_answers_like_get_without_a_body() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    agent()
        .post(&daemon.url("/slices"))
        .send_json(json!({"name": "s"}))
        .unwrap();
    let host = daemon.http.to_string();
    for path in ["/slices", "/slices/s", "/slices/s/ports", "/auth/developer"] {
        let get = raw(daemon.http, &request("GET", path, &host, &[], ""));
        let head = raw(daemon.http, &request("HEAD", path, &host, &[], ""));
        assert_eq!(get.status, 200, "GET {path}");
        assert_eq!(head.status, 200, "HEAD {path}: {head:?}");
        assert_eq!(head.body, "", "HEAD {path}");
        assert_eq!(
            head.header("content-length"),
            Some(get.body.len().to_string().as_str()),
            "HEAD {path}"
        );
        assert_eq!(head.header("content-type"), get.header("content-type"));
    }
    assert_eq!(
        raw(
            daemon.http,
            &request("HEAD", "/slices/nope", &host, &[], "")
        )
        .status,
        404
    );
}

#[actix_web::test]
async fn dot_and_dot_dot_are_not_slice_names() {
    let api = Api::start().await;
    for name in [".", ".."] {
        let (status, body) = api.post("/slices", json!({ "name": name })).await;
        assert_eq!(status, 400, "{name}");
        let expected = format!("invalid slice name \"{name}\": must not be '.' or '..'");
        assert!(
            body["error"].as_str().unwrap().contains(&expected),
            "{body}"
        );
    }
    assert_eq!(api.get("/slices").await, (200, json!([])));
}

/// A daemon started with `-d` and RUST_LOG=info, so that its log can be read; killed
/// when dropped.
struct Logged {
    pid: u32,
    http: SocketAddr,
    log: std::path::PathBuf,
}

impl Logged {
    fn start(dir: &Path) -> Self {
        let http = crate::common::free_port();
        let log = dir.join("sliced.log");
        let output = Command::new(crate::common::SLICED)
            .args(["-d", "--db"])
            .arg(dir)
            .args(["--http", &http.to_string()])
            .args(["--openflow", &crate::common::free_port().to_string()])
            .arg("--log-file")
            .arg(&log)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let pid = String::from_utf8(output.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        Self { pid, http, log }
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg(self.pid.to_string())
            .status();
    }
}

/// A connection to the daemon over either of its listeners.
trait Connection: Read + Write {}
impl<T: Read + Write> Connection for T {}

/// How a test reaches the daemon: its TCP port, or its local Unix socket.
#[derive(Debug, Clone, Copy)]
enum Transport<'a> {
    Tcp(SocketAddr),
    Local(&'a Path),
}

impl Transport<'_> {
    fn connect(self) -> Box<dyn Connection> {
        match self {
            Transport::Tcp(addr) => {
                let stream = TcpStream::connect(addr).unwrap();
                stream.set_read_timeout(Some(PATIENCE)).unwrap();
                Box::new(stream)
            }
            Transport::Local(data_dir) => {
                let stream =
                    std::os::unix::net::UnixStream::connect(data_dir.join("sliced.sock")).unwrap();
                stream.set_read_timeout(Some(PATIENCE)).unwrap();
                Box::new(stream)
            }
        }
    }
}

/// Requests that actix-http answers itself, before the application sees them, with the
/// status each gets.
fn malformed_requests() -> Vec<(&'static str, String, u16)> {
    // actix-http gives up on a head at 128 KiB, the daemon sooner. This one never ends, so
    // either answers having read all of it, and closes cleanly rather than resetting with
    // bytes unread.
    let huge = "x".repeat(131_100);
    vec![
        (
            "garbage request line",
            "NOT HTTP AT ALL\r\n\r\n".to_owned(),
            400,
        ),
        (
            "non-numeric Content-Length",
            "POST /slices HTTP/1.1\r\nHost: localhost\r\nContent-Length: nope\r\n\r\n".to_owned(),
            400,
        ),
        (
            "conflicting Content-Lengths",
            "POST /slices HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\
             Content-Length: 12\r\n\r\n{}{\"name\":1}"
                .to_owned(),
            400,
        ),
        (
            "oversized head",
            format!("GET /slices HTTP/1.1\r\nHost: localhost\r\nX-Big: {huge}"),
            431,
        ),
    ]
}

/// Checks that `answer` is a JSON error with `status` on a closing connection.
fn assert_json_error(answer: &Raw, status: u16, what: &str) {
    assert_eq!(answer.status, status, "{what}: {answer:?}");
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "{what}: {answer:?}"
    );
    assert_eq!(
        answer.header("connection"),
        Some("close"),
        "{what}: {answer:?}"
    );
    let message = answer.json()["error"].as_str().map(str::to_owned);
    assert!(
        message.is_some_and(|message| !message.is_empty()),
        "{what}: no error message in {answer:?}"
    );
}

#[test]
fn malformed_requests_get_a_json_error_and_no_error_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Logged::start(dir.path());
    for transport in [Transport::Tcp(daemon.http), Transport::Local(dir.path())] {
        for (what, text, status) in &malformed_requests() {
            let mut stream = transport.connect();
            // The daemon may answer and close before reading all of an oversized head.
            let _ = stream.write_all(text.as_bytes());
            assert_json_error(
                &read_response(&mut stream),
                *status,
                &format!("{what} over {transport:?}"),
            );
        }
        // A request after them is served, and its completion shows the earlier ones are done.
        let mut stream = transport.connect();
        stream
            .write_all(request("GET", "/slices", "localhost", &[], "").as_bytes())
            .unwrap();
        let answer = read_response(&mut stream);
        assert_eq!(answer.status, 200, "over {transport:?}: {answer:?}");
        assert_eq!(answer.json(), json!([]), "over {transport:?}");
    }
    let log = std::fs::read_to_string(&daemon.log).unwrap();
    let errors: Vec<&str> = log.lines().filter(|line| line.contains("ERROR")).collect();
    assert!(
        errors.is_empty(),
        "client errors logged as errors: {errors:#?}"
    );
}

/// Reads one response off a connection that stays open, by its Content-Length.
fn read_one_response(stream: &mut impl Read) -> Raw {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        stream
            .read_exact(&mut byte)
            .expect("a complete response head");
        head.push(byte[0]);
    }
    let mut raw = Raw {
        status: 0,
        head: String::from_utf8_lossy(&head).trim_end().to_owned(),
        body: String::new(),
    };
    raw.status = raw
        .head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap();
    let length = raw
        .header("content-length")
        .map_or(0, |length| length.parse().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).expect("the whole body");
    raw.body = String::from_utf8(body).unwrap();
    raw
}

#[test]
fn keep_alive_connections_are_served_and_checked_request_after_request() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let create = |name: &str| {
        let body = format!("{{\"name\":\"{name}\"}}");
        format!(
            "POST /slices HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let list = "GET /slices HTTP/1.1\r\nHost: localhost\r\n\r\n";
    for (transport, name) in [
        (Transport::Tcp(daemon.http), "over-tcp"),
        (Transport::Local(dir.path()), "over-local"),
    ] {
        let mut stream = transport.connect();
        stream.write_all(create(name).as_bytes()).unwrap();
        let created = read_one_response(&mut stream);
        assert!(created.status < 300, "over {transport:?}: {created:?}");
        // Two requests in one write, the first with a body that looks like a bad request
        // line: the body is a body, and the request after it is served.
        let tricky = "NOT HTTP\r\n\r\n";
        let pipelined = format!(
            "POST /slices HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{tricky}{list}",
            tricky.len()
        );
        stream.write_all(pipelined.as_bytes()).unwrap();
        let refused = read_one_response(&mut stream);
        assert_eq!(refused.status, 400, "over {transport:?}: {refused:?}");
        let listed = read_one_response(&mut stream);
        assert_eq!(listed.status, 200, "over {transport:?}: {listed:?}");
        assert!(
            listed
                .json()
                .as_array()
                .is_some_and(|slices| slices.contains(&json!({ "name": name }))),
            "over {transport:?}: {listed:?}"
        );
        // A malformed request later on the same connection is refused with JSON too.
        stream
            .write_all(b"GET /slices HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
            .unwrap();
        assert_json_error(
            &read_response(&mut stream),
            400,
            &format!("conflicting Content-Lengths after keep-alive over {transport:?}"),
        );
    }
}

#[test]
fn a_session_key_open_to_others_stops_the_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("session.key");
    std::fs::write(&key, [7u8; 64]).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut child = Command::new(crate::common::SLICED)
        .arg("--db")
        .arg(dir.path())
        .args(["--http", &crate::common::free_port().to_string()])
        .args(["--openflow", &crate::common::free_port().to_string()])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = crate::common::wait_with_timeout(&mut child, PATIENCE).expect("sliced exits");
    assert!(!status.success());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains(&format!("chmod 600 {}", key.display())),
        "{stderr}"
    );
    assert!(stderr.contains("mode 644"), "{stderr}");
}
