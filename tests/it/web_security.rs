//! The HTTP surface's defences against hostile web pages and clients: cross-site
//! requests, DNS rebinding, replayed session cookies, stalled request bodies, malformed
//! requests, and a session key open to others. The checks the application makes on each
//! request (cross-site writes, replayed cookies, names) are tested in-process; what
//! depends on the real daemon (the addresses it is bound to, its flags and settings file,
//! restarts, the head guard and connection caps below actix, its log) is tested black-box.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::in_process::{Api, HOST};
use crate::common::{agent, status_json, Daemon};
use serde_json::{json, Value};

const FORM: &str = "application/x-www-form-urlencoded";
/// Generous bound for anything that waits on the daemon's clock on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// A response read off a raw connection.
#[derive(Debug)]
struct Raw {
    status: u16,
    head: String,
    body: String,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

/// Sends `request` as written (so Host and Origin are whatever the test says) on a new
/// connection and reads the answer to the end of the connection.
fn raw(addr: SocketAddr, request: &str) -> Raw {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    read_response(&mut stream)
}

/// Reads to the end of the connection; a reset after the answer ends it too.
fn read_response(stream: &mut impl Read) -> Raw {
    let mut bytes = Vec::new();
    if let Err(err) = stream.read_to_end(&mut bytes) {
        assert!(!bytes.is_empty(), "no answer: {err}");
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    Raw {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A request with a body, `Connection: close`, and the extra header lines given.
fn request(method: &str, path: &str, host: &str, headers: &[&str], body: &str) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for header in headers {
        text.push_str(header);
        text.push_str("\r\n");
    }
    if !body.is_empty() || method != "GET" {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text
}

fn slices(daemon: &Daemon) -> Value {
    status_json(agent().get(&daemon.url("/slices")).call()).1
}

fn refused() -> Value {
    json!({"error": "cross-origin request refused"})
}

// ---- cross-site requests and DNS rebinding (finding 2) -----------------------------------

#[actix_web::test]
async fn a_cross_site_page_cannot_create_slices_ports_or_hosts() {
    let api = Api::start().await;
    assert_eq!(api.post("/slices", json!({"name": "s"})).await.0, 201);
    let evil = "Origin: http://evil.example";
    let form = "Content-Type: application/x-www-form-urlencoded";
    let attempts: [(&str, Vec<&str>, &str); 7] = [
        ("/slices", vec![evil, form], "name=evil"),
        ("/slices", vec![evil], r#"{"name":"evil"}"#),
        ("/slices", vec!["Origin: null", form], "name=evil"),
        (
            "/slices",
            vec!["Sec-Fetch-Site: cross-site", form],
            "name=evil",
        ),
        // Another port on the same host is the same site but not the same origin.
        (
            "/slices",
            vec!["Sec-Fetch-Site: same-site", form],
            "name=evil",
        ),
        ("/slices/s/ports", vec![evil, form], "dpid=1&port_no=1"),
        (
            "/slices/s/ports/0x1:1/mac_addresses",
            vec![evil, form],
            "name=00%3A00%3A00%3A00%3A00%3A66",
        ),
    ];
    for (path, headers, body) in attempts {
        let answer = api.send("POST", path, &headers, body).await;
        assert_eq!(
            (answer.status, answer.json()),
            (403, refused()),
            "{path} {headers:?}"
        );
    }
    let answer = api
        .send("DELETE", "/slices", &[evil], r#"{"name":"s"}"#)
        .await;
    assert_eq!((answer.status, answer.json()), (403, refused()));
    assert_eq!(
        api.get("/slices").await,
        (200, json!([{"name": "s"}])),
        "nothing changed"
    );
    assert_eq!(api.get("/slices/s/ports").await, (200, json!([])));
}

#[test]
fn a_rebinding_host_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    agent()
        .post(&daemon.url("/slices"))
        .send_json(json!({"name": "s"}))
        .unwrap();
    let rebound = "attacker.example:9292";
    let answer = raw(
        daemon.http,
        &request(
            "DELETE",
            "/slices",
            rebound,
            &["Content-Type: application/json"],
            r#"{"name":"s"}"#,
        ),
    );
    assert_eq!(answer.status, 403, "{answer:?}");
    assert!(
        answer.json()["error"]
            .as_str()
            .is_some_and(|message| message.contains("attacker.example")),
        "{answer:?}"
    );
    // Reads through the foreign name are refused too: the page must learn nothing.
    assert_eq!(
        raw(daemon.http, &request("GET", "/slices", rebound, &[], "")).status,
        403
    );
    assert_eq!(
        slices(&daemon),
        json!([{"name": "s"}]),
        "the slice is still there"
    );
    // The names a local client uses all work.
    let port = daemon.http.port();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "localhost".to_owned(),
    ] {
        assert_eq!(
            raw(daemon.http, &request("GET", "/slices", &host, &[], "")).status,
            200,
            "{host}"
        );
    }
    // actix-http itself refuses HTTP/1.1 without Host, before the application sees it.
    let no_host = "GET /slices HTTP/1.1\r\nConnection: close\r\n\r\n";
    assert_eq!(raw(daemon.http, no_host).status, 400);
}

#[test]
fn an_allowed_host_can_be_added() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--allowed-host", "sliced.example"]);
    let get = |host: &str| raw(daemon.http, &request("GET", "/slices", host, &[], "")).status;
    assert_eq!(get("sliced.example:9292"), 200);
    assert_eq!(get("SLICED.example"), 200);
    assert_eq!(get("other.example"), 403);
}

#[test]
fn the_config_file_sets_the_allowed_hosts_and_the_session_lifetime() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        "allowed_hosts = [\"toml.example\"]\nrequest_timeout = 5\nmax_http_connections = 16\n\
         [auth]\nsession_ttl_seconds = 1\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let daemon = Daemon::start_with(&data, &["--config", config.to_str().unwrap()]);
    let get = |host: &str| raw(daemon.http, &request("GET", "/slices", host, &[], "")).status;
    assert_eq!(get("toml.example"), 200);
    assert_eq!(get("other.example"), 403);
    let saved = login_cookie(&daemon);
    let deadline = Instant::now() + PATIENCE;
    while with_cookie(&daemon, &saved) != 403 {
        assert!(
            Instant::now() < deadline,
            "the file's lifetime is not applied"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(daemon);

    std::fs::write(
        &config,
        "[auth]\nsession_ttl_seconds = 60\nsession_ttl_hours = 1\n",
    )
    .unwrap();
    let output = Command::new(crate::common::SLICED)
        .arg("--db")
        .arg(&data)
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not both"), "{stderr}");
}

#[actix_web::test]
async fn a_login_from_another_site_is_refused() {
    let api = Api::start().await;
    for origin in ["Origin: http://evil.example", "Sec-Fetch-Site: cross-site"] {
        let answer = api
            .send(
                "POST",
                "/auth/developer/callback",
                &[origin, "Content-Type: application/x-www-form-urlencoded"],
                "name=Mallory&email=mallory%40evil.example",
            )
            .await;
        assert_eq!((answer.status, answer.json()), (403, refused()), "{origin}");
        assert_eq!(answer.header("set-cookie"), None, "no session for {origin}");
    }
}

#[actix_web::test]
async fn scripts_and_the_daemons_own_pages_keep_working() {
    let api = Api::start().await;
    let own = format!("Origin: http://{HOST}");
    // curl -d without a Content-Type header, no Origin: JSON, as always.
    let answer = api.send("POST", "/slices", &[], r#"{"name":"curl"}"#).await;
    assert_eq!(
        (answer.status, answer.json()),
        (201, json!({"name": "curl"}))
    );
    // The login form served by the daemon posts from the daemon's own origin.
    let answer = api
        .send(
            "POST",
            "/auth/developer/callback",
            &[
                &own,
                "Sec-Fetch-Site: same-origin",
                "Content-Type: application/x-www-form-urlencoded",
            ],
            "name=Ada&email=ada%40example.com",
        )
        .await;
    assert_eq!(
        (answer.status, answer.json()),
        (200, json!({"status": "ok"}))
    );
    assert!(answer.header("set-cookie").is_some());
    let answer = api
        .send(
            "POST",
            "/slices",
            &[&own, "Content-Type: application/json"],
            r#"{"name":"page"}"#,
        )
        .await;
    assert_eq!(answer.status, 201, "{answer:?}");
    // A typed-in request (Sec-Fetch-Site: none) is the user's own.
    let answer = api
        .send(
            "POST",
            "/slices",
            &["Sec-Fetch-Site: none", "Content-Type: application/json"],
            r#"{"name":"typed"}"#,
        )
        .await;
    assert_eq!(answer.status, 201, "{answer:?}");
    // From a browser, even the same origin must label its JSON.
    let answer = api
        .send("POST", "/slices", &[&own], r#"{"name":"unlabelled"}"#)
        .await;
    assert_eq!(answer.status, 415, "{answer:?}");
    assert!(answer.json()["error"]
        .as_str()
        .unwrap()
        .contains("Content-Type: application/json"));
    assert_eq!(
        api.get("/slices").await,
        (
            200,
            json!([{"name": "curl"}, {"name": "page"}, {"name": "typed"}])
        )
    );
}

// ---- sessions (finding 3) ----------------------------------------------------------------

/// Logs in with a fresh client and returns the session cookie as sent back (`name=value`).
fn login_cookie(daemon: &Daemon) -> String {
    let response = agent()
        .post(&daemon.url("/auth/developer/callback"))
        .set("Content-Type", FORM)
        .send_string("name=Ada&email=ada%40example.com")
        .unwrap();
    let cookie = response.header("set-cookie").unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// `GET /api/session` with exactly this cookie, as a client that kept a copy would send.
fn with_cookie(daemon: &Daemon, cookie: &str) -> u16 {
    status_json(
        ureq::get(&daemon.url("/api/session"))
            .set("Accept", "application/json")
            .set("Cookie", cookie)
            .call(),
    )
    .0
}

fn logout(daemon: &Daemon, cookie: &str) {
    let (status, body) = status_json(
        ureq::post(&daemon.url("/auth/logout"))
            .set("Cookie", cookie)
            .call(),
    );
    assert_eq!((status, body), (200, json!({"status": "ok"})));
}

/// Logs in through the application, sending `cookie` if given, and returns the session
/// cookie as sent back (`name=value`).
async fn sign_in(api: &Api, cookie: Option<&str>) -> String {
    let cookie = cookie.map(|cookie| format!("Cookie: {cookie}"));
    let mut headers = vec!["Content-Type: application/x-www-form-urlencoded"];
    headers.extend(cookie.as_deref());
    let answer = api
        .send(
            "POST",
            "/auth/developer/callback",
            &headers,
            "name=Ada&email=ada%40example.com",
        )
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    answer.cookie().expect("a login sets the session cookie")
}

/// The status of `GET /api/session` with exactly this cookie.
async fn session_status(api: &Api, cookie: &str) -> u16 {
    let cookie = format!("Cookie: {cookie}");
    api.send(
        "GET",
        "/api/session",
        &["Accept: application/json", &cookie],
        "",
    )
    .await
    .status
}

async fn sign_out(api: &Api, cookie: &str) {
    let cookie = format!("Cookie: {cookie}");
    let answer = api.send("POST", "/auth/logout", &[&cookie], "").await;
    assert_eq!(
        (answer.status, answer.json()),
        (200, json!({"status": "ok"}))
    );
}

#[actix_web::test]
async fn a_cookie_saved_before_logout_is_refused_after_it() {
    let api = Api::start().await;
    let saved = sign_in(&api, None).await;
    let other = sign_in(&api, None).await;
    assert_eq!(session_status(&api, &saved).await, 200);
    sign_out(&api, &saved).await;
    assert_eq!(session_status(&api, &saved).await, 403);
    assert_eq!(
        session_status(&api, &other).await,
        200,
        "other sessions live on"
    );
}

#[test]
fn a_logged_out_cookie_stays_refused_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let saved = login_cookie(&daemon);
    let other = login_cookie(&daemon);
    logout(&daemon, &saved);
    let http = daemon.http;
    assert!(daemon.terminate().success());
    let daemon = Daemon::start_with_http(dir.path(), http);
    assert_eq!(with_cookie(&daemon, &saved), 403);
    assert_eq!(with_cookie(&daemon, &other), 200);
}

#[test]
fn the_server_refuses_a_session_past_its_lifetime() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--session-ttl-seconds", "1"]);
    let saved = login_cookie(&daemon);
    // The browser would drop the cookie; a client that kept it must be refused anyway.
    let deadline = Instant::now() + PATIENCE;
    while with_cookie(&daemon, &saved) != 403 {
        assert!(
            Instant::now() < deadline,
            "an expired session still works after {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[actix_web::test]
async fn a_new_login_revokes_the_session_it_replaces() {
    let api = Api::start().await;
    let copied = sign_in(&api, None).await;
    let renewed = sign_in(&api, Some(&copied)).await;
    assert_ne!(renewed, copied);
    assert_eq!(session_status(&api, &renewed).await, 200);
    assert_eq!(
        session_status(&api, &copied).await,
        403,
        "the replaced session lives on"
    );
}

#[test]
fn a_longer_lifetime_after_a_restart_does_not_revive_a_logged_out_session() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--session-ttl-seconds", "1"]);
    let stolen = login_cookie(&daemon);
    let witness = login_cookie(&daemon);
    logout(&daemon, &stolen);
    // Both sessions were issued together: once the witness has expired, so has the
    // stolen one, and its revocation may be pruned.
    let deadline = Instant::now() + PATIENCE;
    while with_cookie(&daemon, &witness) != 403 {
        assert!(Instant::now() < deadline, "the session never expired");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(daemon.terminate().success());
    let daemon = Daemon::start_with(dir.path(), &["--session-ttl-seconds", "3600"]);
    // Another logout prunes the revocations past their expiry.
    let other = login_cookie(&daemon);
    logout(&daemon, &other);
    assert_eq!(with_cookie(&daemon, &stolen), 403);
    assert_eq!(with_cookie(&daemon, &witness), 403);
}

// ---- stalled bodies and the connection cap (finding 5) ------------------------------------

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

// ---- the rest of the HTTP surface (finding 9) ---------------------------------------------

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
