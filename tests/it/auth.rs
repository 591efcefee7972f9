//! Black-box tests of client authentication (spec section 5) against the real daemon.

use crate::common::{agent, status_json, Daemon};
use serde_json::{json, Value};

const FORM: &str = "application/x-www-form-urlencoded";

fn login(agent: &ureq::Agent, daemon: &Daemon, email: &str) -> (u16, Value) {
    status_json(
        agent
            .post(&daemon.url("/auth/developer/callback"))
            .set("Content-Type", FORM)
            .send_string(&format!("name=Ada&email={email}")),
    )
}

fn get_json(agent: &ureq::Agent, daemon: &Daemon, path: &str) -> (u16, Value) {
    status_json(
        agent
            .get(&daemon.url(path))
            .set("Accept", "application/json")
            .call(),
    )
}

#[test]
fn api_paths_are_forbidden_without_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = agent();
    for path in ["/api/slices", "/api/anything", "/api/", "/api/session"] {
        assert_eq!(
            get_json(&agent, &daemon, path),
            (403, json!({"status": "forbidden"})),
            "{path}"
        );
    }
    let (status, body) = status_json(
        agent
            .post(&daemon.url("/api/slices"))
            .send_json(json!({"name": "x"})),
    );
    assert_eq!((status, body), (403, json!({"status": "forbidden"})));
    assert_eq!(
        get_json(&agent, &daemon, "/slices"),
        (200, json!([])),
        "nothing was created"
    );
}

#[test]
fn the_developer_callback_starts_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = agent();
    let response = agent
        .post(&daemon.url("/auth/developer/callback"))
        .set("Content-Type", FORM)
        .send_string("name=Ada&email=ada%40example.com")
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookie = response.header("set-cookie").unwrap().to_owned();
    assert!(cookie.starts_with("sliced_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    assert_eq!(
        response.into_json::<Value>().unwrap(),
        json!({"status": "ok"})
    );

    assert_eq!(
        get_json(&agent, &daemon, "/api/anything/at/all"),
        (200, json!({"status": "ok"}))
    );
    assert_eq!(
        get_json(&agent, &daemon, "/api/session"),
        (200, json!({"name": "Ada", "email": "ada@example.com"}))
    );
}

#[test]
fn with_a_session_the_api_prefix_serves_the_slice_api() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = agent();
    assert_eq!(login(&agent, &daemon, "ada@example.com").0, 200);
    let created = agent
        .post(&daemon.url("/api/slices"))
        .send_json(json!({"name": "s"}))
        .unwrap();
    assert_eq!(created.status(), 201);
    assert_eq!(created.header("location"), Some("/api/slices/s"));
    let (status, _) = status_json(
        agent
            .post(&daemon.url("/api/slices/s/ports/0x1:2/mac_addresses"))
            .send_json(json!({"name": "00:00:00:00:00:01"})),
    );
    assert_eq!(status, 201);
    assert_eq!(
        get_json(&agent, &daemon, "/api/slices/s/ports"),
        (200, json!([{"name": "0x1:2", "dpid": 1, "port_no": 2}]))
    );
    assert_eq!(
        status_json(
            agent
                .post(&daemon.url("/api/slices"))
                .send_json(json!({"name": "s"}))
        ),
        (409, json!({"error": "Slice s already exists"}))
    );
    assert_eq!(
        get_json(&agent, &daemon, "/api/slices/nope"),
        (404, json!({"error": "Slice nope not found"}))
    );
    // The same data without the prefix.
    assert_eq!(
        get_json(&crate::common::agent(), &daemon, "/slices"),
        (200, json!([{"name": "s"}]))
    );
}

#[test]
fn an_invalid_email_gets_400_and_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = agent();
    for email in ["not-an-email", "a@b", "", "a%20b@example.com"] {
        let (status, body) = login(&agent, &daemon, email);
        assert_eq!(status, 400, "{email}: {body}");
        assert!(body["error"].as_str().unwrap().contains("e-mail"), "{body}");
    }
    let (status, _) = status_json(
        agent
            .post(&daemon.url("/auth/developer/callback"))
            .set("Content-Type", FORM)
            .send_string("email=ada%40example.com"),
    );
    assert_eq!(status, 400, "a missing name");
    assert_eq!(
        get_json(&agent, &daemon, "/api/x"),
        (403, json!({"status": "forbidden"}))
    );
}

#[test]
fn a_tampered_cookie_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let response = crate::common::agent()
        .post(&daemon.url("/auth/developer/callback"))
        .set("Content-Type", FORM)
        .send_string("name=Ada&email=ada%40example.com")
        .unwrap();
    let cookie = response.header("set-cookie").unwrap();
    let value = cookie.split(';').next().unwrap().to_owned();
    let send = |cookie: &str| {
        status_json(
            ureq::get(&daemon.url("/api/session"))
                .set("Accept", "application/json")
                .set("Cookie", cookie)
                .call(),
        )
    };
    assert_eq!(send(&value).0, 200, "the untouched cookie works");
    // Flip one character of the sealed value.
    let mut bytes = value.into_bytes();
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    assert_eq!(send(&tampered), (403, json!({"status": "forbidden"})));
    assert_eq!(
        send("sliced_session=forged"),
        (403, json!({"status": "forbidden"}))
    );
}

#[test]
fn logout_ends_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = agent();
    login(&agent, &daemon, "ada@example.com");
    assert_eq!(get_json(&agent, &daemon, "/api/x").0, 200);
    assert_eq!(
        status_json(agent.post(&daemon.url("/auth/logout")).call()),
        (200, json!({"status": "ok"}))
    );
    assert_eq!(
        get_json(&agent, &daemon, "/api/x"),
        (403, json!({"status": "forbidden"}))
    );
}

#[test]
fn a_session_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent();
    let daemon = Daemon::start(dir.path());
    login(&agent, &daemon, "ada@example.com");
    let http = daemon.http;
    assert!(daemon.terminate().success());
    // Same data directory, so the same key; same port, so the agent sends its cookie.
    let daemon = Daemon::start_with_http(dir.path(), http);
    assert_eq!(
        get_json(&agent, &daemon, "/api/x"),
        (200, json!({"status": "ok"}))
    );
}

#[test]
fn a_browser_is_sent_to_the_login_form() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let no_redirects = ureq::AgentBuilder::new().redirects(0).build();
    let response = no_redirects
        .get(&daemon.url("/api/slices"))
        .set("Accept", "text/html,application/xhtml+xml")
        .call()
        .unwrap();
    assert_eq!(response.status(), 302);
    assert_eq!(response.header("location"), Some("/auth/developer"));
    // Followed, the redirect ends at a form that posts to the callback.
    let page = agent()
        .get(&daemon.url("/api/slices"))
        .set("Accept", "text/html")
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(
        page.contains(r#"action="/auth/developer/callback""#),
        "{page}"
    );
}

#[test]
fn one_setting_guards_the_unprefixed_endpoints_too() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--require-auth"]);
    let agent = agent();
    assert_eq!(
        get_json(&agent, &daemon, "/slices"),
        (403, json!({"status": "forbidden"}))
    );
    login(&agent, &daemon, "ada@example.com");
    assert_eq!(get_json(&agent, &daemon, "/slices"), (200, json!([])));
}

#[test]
fn the_developer_login_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--no-developer-login"]);
    let agent = agent();
    assert_eq!(
        login(&agent, &daemon, "ada@example.com"),
        (404, json!({"error": "not found"}))
    );
    assert_eq!(
        get_json(&agent, &daemon, "/api/x"),
        (403, json!({"status": "forbidden"}))
    );
}

/// The file's `[auth]` keys do what the two flags do.
#[test]
fn the_settings_file_requires_sessions_and_turns_the_developer_login_off() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        "[auth]\nrequire_for_slices = true\ndeveloper_login = false\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let daemon = Daemon::start_with(&dir.path().join("db"), &["--config", config]);
    let agent = agent();
    assert_eq!(
        get_json(&agent, &daemon, "/slices"),
        (403, json!({"status": "forbidden"}))
    );
    assert_eq!(
        login(&agent, &daemon, "ada@example.com"),
        (404, json!({"error": "not found"}))
    );
}

#[test]
fn the_local_socket_needs_no_session() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let mut stream =
        std::os::unix::net::UnixStream::connect(dir.path().join("sliced.sock")).unwrap();
    stream
        .write_all(b"GET /api/slices HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("[]"), "{response}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("sliced.sock"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "owner-only socket");
    drop(daemon);
}
