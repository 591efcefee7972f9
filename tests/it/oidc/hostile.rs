//! What anyone who reaches the daemon can do with its OpenID Connect routes, and what a
//! provider that stalls costs: callbacks that try to write the log, a provider that takes
//! connections and never answers, a client that leaves while the provider is asked.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::{api, browser, callback_for, pair, pair_logging, Sliced, LOG_FILTER};
use crate::common::free_port;
use crate::common::switch::eventually;

/// Longer than any wait of the daemon's on its provider (seconds), so that no request
/// of the tests races one.
const PATIENCE: Duration = Duration::from_secs(90);

/// An agent that waits for an answer as long as [`PATIENCE`].
fn patient() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(PATIENCE)
        .redirects(0)
        .build()
}

/// A line of the daemon's log (env_logger: `[time LEVEL target] text`) as its level and
/// target; `None` for a line that is the rest of another.
fn level_and_target(line: &str) -> Option<(&str, &str)> {
    let head = line.strip_prefix('[')?.split(']').next()?;
    let mut words = head.split_whitespace();
    let (_time, level, target) = (words.next()?, words.next()?, words.next()?);
    Some((level, target))
}

/// A description of an error that carries a whole audit line after a line break, and
/// enough padding to make each request 60 KB.
fn forged_description() -> String {
    let line = r#"[2026-01-01T00:00:00Z INFO  sliced::audit] {"operation":"login","result":"ok","user":"mallory","via":"session"}"#;
    format!("denied\n{line}\n{}", "A".repeat(60 * 1024))
}

fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[test]
fn oidc_a_hostile_callback_neither_forges_a_log_line_nor_floods_the_log() {
    // The login's own lines at debug level, so that the quiet ones are seen too.
    let Some((_provider, sliced)) = pair_logging("warn,sliced::audit=info,slice_http::oidc=debug")
    else {
        return;
    };
    let description = encoded(&forged_description());
    let before = std::fs::metadata(&sliced.log).map_or(0, |m| m.len());
    let http = browser();
    for _ in 0..200 {
        let url = sliced.url(&format!(
            "/auth/oidc/callback?error=x&error_description={description}"
        ));
        let (status, body) =
            crate::common::status_json(http.get(&url).set("Accept", "application/json").call());
        assert_eq!(status, 400);
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            error.len() < 1024 && error.contains("denied\\n[2026"),
            "the answer quotes the description escaped and short: {error}"
        );
    }
    // After a valid state the same description is a refused login, in the trail.
    let bob = browser();
    let callback = callback_for(&bob, &sliced, "bob");
    let state = url::Url::parse(&callback)
        .unwrap()
        .query_pairs()
        .find(|(key, _)| key == "state")
        .map(|(_, value)| value.into_owned())
        .unwrap();
    let denied = sliced.url(&format!(
        "/auth/oidc/callback?error=access_denied&error_description={description}&state={state}"
    ));
    let (status, _) =
        crate::common::status_json(bob.get(&denied).set("Accept", "application/json").call());
    assert_eq!(status, 403);

    let text = sliced.log_text();
    let grown = text.len() as u64 - before;
    assert!(
        grown < 200 * 1024,
        "200 callbacks of 60 KB grew the log by {grown} bytes"
    );
    let (mut audited, mut quiet) = (Vec::new(), 0);
    for line in text.lines() {
        assert!(
            !line.starts_with("[2026-01-01T00:00:00Z"),
            "a forged line: {line}"
        );
        match level_and_target(line) {
            Some((_, "sliced::audit")) => audited.push(line),
            // Each refusal without a state is one line, at debug level only.
            Some((level, _)) if line.contains(r#"answered "x""#) => {
                assert_eq!(level, "DEBUG", "{line}");
                quiet += 1;
            }
            Some(_) => {}
            None => panic!("a line that continues another: {line}"),
        }
    }
    assert_eq!(quiet, 200);
    // One audit line: Bob's refused login, anonymous (the provider named nobody).
    assert_eq!(audited.len(), 1, "{audited:#?}");
    let entry: Value = serde_json::from_str(&audited[0][audited[0].find('{').unwrap()..]).unwrap();
    assert_eq!(
        (&entry["user"], &entry["status"], &entry["operation"]),
        (&json!("anonymous"), &json!(403), &json!("login"))
    );
    assert!(entry["result"].as_str().unwrap().len() < 1024, "{entry}");
}

/// A provider that accepts connections and never answers: a plain socket, whose
/// connections are held open until it is dropped.
struct Silent {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Silent {
    fn start() -> Self {
        let listener = TcpListener::bind(free_port()).expect("the silent provider listens");
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (accepted, stop) = (Arc::clone(&accepted), Arc::clone(&stop));
            move || {
                let mut held = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            accepted.fetch_add(1, Ordering::Relaxed);
                            held.push(stream);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            }
        });
        Self {
            addr,
            accepted,
            stop,
            thread: Some(thread),
        }
    }

    fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn oidc_a_provider_that_never_answers_costs_a_503_and_keeps_nobody_else_waiting() {
    let silent = Silent::start();
    let sliced = Sliced::start_with(
        free_port(),
        &silent.issuer(),
        &["--max-http-connections", "8"],
        LOG_FILTER,
    );
    let (status, body) = api(&patient(), &sliced, "GET", "/auth/oidc/login", None);
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|error| error.contains("cannot be discovered")),
        "{body}"
    );

    // Logins from 16 clients at once, more than the daemon's 8 connections.
    let logins: Vec<JoinHandle<Vec<u16>>> = (0..16)
        .map(|_| {
            let url = sliced.url("/auth/oidc/login");
            std::thread::spawn(move || {
                let http = patient();
                (0..8)
                    .map(|_| crate::common::status_json(http.get(&url).call()).0)
                    .collect()
            })
        })
        .collect();
    // Meanwhile health checks and the API answer: none of them waits on the provider.
    for _ in 0..3 {
        for (path, expected) in [("/healthz", 200), ("/readyz", 200), ("/slices", 403)] {
            let answer = patient().get(&sliced.url(path)).call();
            let status = match answer {
                Ok(response) => response.status(),
                Err(ureq::Error::Status(status, _)) => status,
                Err(err) => panic!("{path} did not answer while logins waited: {err}"),
            };
            assert_eq!(status, expected, "{path}");
        }
    }
    for login in logins {
        let statuses = login.join().expect("a login thread");
        assert!(statuses.iter().all(|status| *status == 503), "{statuses:?}");
    }
    // 129 logins, and the provider was asked a few times: one discovery at a time, shared
    // by the logins that wait for it, none before the wait after a failure is over
    // (the tenth would come about three minutes after the first).
    let asked = silent.accepted();
    assert!(
        (1..10).contains(&asked),
        "the provider was asked {asked} times"
    );
}

#[test]
fn oidc_a_login_whose_client_leaves_stops_asking_the_provider() {
    let Some((provider, sliced)) = pair() else {
        return;
    };
    let ada = browser();
    let callback = callback_for(&ada, &sliced, "ada");
    provider.hold_next_token();
    // The callback over a connection of its own, with Ada's cookie, closed once the
    // daemon waits for the provider's token.
    let cookie: Vec<String> = ada
        .cookie_store()
        .get_request_values(&url::Url::parse(&sliced.url("/")).unwrap())
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    let target = &callback[callback.find("/auth/").unwrap()..];
    let mut client = TcpStream::connect(sliced.http).unwrap();
    write!(
        client,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nAccept: application/json\r\n\r\n",
        sliced.http,
        cookie.join("; ")
    )
    .unwrap();
    assert!(
        eventually(PATIENCE, || provider.held() == (1, 0)),
        "the daemon never asked for the token"
    );
    drop(client);

    // The daemon stops: it lets go of the provider and tells the trail why the login
    // ended, long before any timeout of its own would.
    let left = |entry: &Value| {
        entry["result"]
            .as_str()
            .is_some_and(|result| result.contains("closed its connection"))
    };
    assert!(
        eventually(PATIENCE, || sliced.audited_logins().iter().any(left)),
        "{}",
        sliced.log_text()
    );
    assert!(
        eventually(PATIENCE, || provider.held() == (0, 1)),
        "the daemon still waits on the provider"
    );
    let logins = sliced.audited_logins();
    assert_eq!(logins.len(), 1, "{logins:#?}");
    assert_eq!(logins[0]["status"], 400);
}
