//! The HTTP surface's defences against hostile web pages and clients: cross-site
//! requests, DNS rebinding, replayed session cookies, stalled request bodies, malformed
//! requests, and a session key open to others. The checks the application makes on each
//! request (cross-site writes, replayed cookies, names) are tested in-process; what
//! depends on the real daemon (the addresses it is bound to, its flags and settings file,
//! restarts, the head guard and connection caps below actix, its log) is tested black-box.
//! This file holds the raw-connection and login helpers the areas share: `cross_site`
//! (cross-site requests and DNS rebinding), `sessions` (replayed cookies), `stalls` (stalled
//! bodies and the connection cap) and `surface` (the rest of the HTTP surface).

mod cross_site;
mod sessions;
mod stalls;
mod surface;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

use crate::common::{agent, status_json, Daemon};

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
