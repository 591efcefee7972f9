//! Client authentication (spec section 5). The session guard, the developer login and
//! the session cookie are tested in-process against the application; what needs the real
//! daemon (its flags and settings file, a restart, the local socket) is tested black-box.

mod refusals;

use crate::common::in_process::{Answer, Api};
use crate::common::{agent, status_json, Daemon};
use serde_json::{json, Value};

const FORM: &str = "application/x-www-form-urlencoded";

fn login_to(agent: &ureq::Agent, daemon: &Daemon, email: &str) -> (u16, Value) {
    status_json(
        agent
            .post(&daemon.url("/auth/developer/callback"))
            .set("Content-Type", FORM)
            .send_string(&format!("name=Ada&email={email}")),
    )
}

fn get_json_from(agent: &ureq::Agent, daemon: &Daemon, path: &str) -> (u16, Value) {
    status_json(
        agent
            .get(&daemon.url(path))
            .set("Accept", "application/json")
            .call(),
    )
}

/// Posts the developer login form for Ada with `email` (form-encoded), sending `cookie`
/// (`name=value`) if given.
async fn login(api: &Api, email: &str, cookie: Option<&str>) -> Answer {
    let cookie = cookie.map(|cookie| format!("Cookie: {cookie}"));
    let mut headers = vec!["Content-Type: application/x-www-form-urlencoded"];
    headers.extend(cookie.as_deref());
    api.send(
        "POST",
        "/auth/developer/callback",
        &headers,
        &format!("name=Ada&email={email}"),
    )
    .await
}

/// GET `path` as JSON, with the session cookie `cookie` (`name=value`) if given.
async fn get_json(api: &Api, path: &str, cookie: Option<&str>) -> (u16, Value) {
    let cookie = cookie.map(|cookie| format!("Cookie: {cookie}"));
    let mut headers = vec!["Accept: application/json"];
    headers.extend(cookie.as_deref());
    let answer = api.send("GET", path, &headers, "").await;
    (answer.status, answer.json())
}

#[actix_web::test]
async fn api_paths_are_forbidden_without_a_session() {
    let api = Api::start().await;
    for path in ["/api/slices", "/api/anything", "/api/", "/api/session"] {
        assert_eq!(
            get_json(&api, path, None).await,
            (403, json!({"status": "forbidden"})),
            "{path}"
        );
    }
    assert_eq!(
        api.post("/api/slices", json!({"name": "x"})).await,
        (403, json!({"status": "forbidden"}))
    );
    assert_eq!(
        get_json(&api, "/slices", None).await,
        (200, json!([])),
        "nothing was created"
    );
}

#[actix_web::test]
async fn the_developer_callback_starts_a_session() {
    let api = Api::start().await;
    let answer = login(&api, "ada%40example.com", None).await;
    assert_eq!(answer.status, 200);
    let cookie = answer.header("set-cookie").unwrap().to_owned();
    assert!(cookie.starts_with("sliced_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    assert_eq!(answer.json(), json!({"status": "ok"}));

    let session = answer.cookie();
    assert_eq!(
        get_json(&api, "/api/anything/at/all", session.as_deref()).await,
        (200, json!({"status": "ok"}))
    );
    assert_eq!(
        get_json(&api, "/api/session", session.as_deref()).await,
        (
            200,
            json!({"name": "Ada", "email": "ada@example.com", "role": "operator"})
        )
    );
}

#[actix_web::test]
async fn with_a_session_the_api_prefix_serves_the_slice_api() {
    let api = Api::start().await;
    let answer = login(&api, "ada%40example.com", None).await;
    assert_eq!(answer.status, 200);
    let cookie = format!("Cookie: {}", answer.cookie().unwrap());
    let headers = [cookie.as_str(), "Content-Type: application/json"];
    let post = |path: &'static str, body: &'static str| api.send("POST", path, &headers, body);
    let created = post("/api/slices", r#"{"name": "s"}"#).await;
    assert_eq!(created.status, 201);
    assert_eq!(created.header("location"), Some("/api/slices/s"));
    let added = post(
        "/api/slices/s/ports/0x1:2/mac_addresses",
        r#"{"name": "00:00:00:00:00:01"}"#,
    )
    .await;
    assert_eq!(added.status, 201);
    let session = answer.cookie();
    assert_eq!(
        get_json(&api, "/api/slices/s/ports", session.as_deref()).await,
        (200, json!([{"name": "0x1:2", "dpid": 1, "port_no": 2}]))
    );
    let again = post("/api/slices", r#"{"name": "s"}"#).await;
    assert_eq!(
        (again.status, again.json()),
        (409, json!({"error": "Slice s already exists"}))
    );
    assert_eq!(
        get_json(&api, "/api/slices/nope", session.as_deref()).await,
        (404, json!({"error": "Slice nope not found"}))
    );
    // The same data without the prefix, and without the session.
    assert_eq!(
        get_json(&api, "/slices", None).await,
        (200, json!([{"name": "s"}]))
    );
}

#[actix_web::test]
async fn an_invalid_email_gets_400_and_no_session() {
    let api = Api::start().await;
    for email in ["not-an-email", "a@b", "", "a%20b@example.com"] {
        let answer = login(&api, email, None).await;
        assert_eq!(answer.status, 400, "{email}: {answer:?}");
        assert!(
            answer.json()["error"].as_str().unwrap().contains("e-mail"),
            "{answer:?}"
        );
        assert_eq!(answer.cookie(), None, "{email}");
    }
    let (status, _) = api
        .raw(
            "POST",
            "/auth/developer/callback",
            FORM,
            "email=ada%40example.com",
        )
        .await;
    assert_eq!(status, 400, "a missing name");
    assert_eq!(
        get_json(&api, "/api/x", None).await,
        (403, json!({"status": "forbidden"}))
    );
}

#[actix_web::test]
async fn a_tampered_cookie_is_refused() {
    let api = Api::start().await;
    let value = login(&api, "ada%40example.com", None)
        .await
        .cookie()
        .unwrap();
    let api = &api;
    let send = |cookie: String| async move { get_json(api, "/api/session", Some(&cookie)).await };
    assert_eq!(
        send(value.clone()).await.0,
        200,
        "the untouched cookie works"
    );
    // Flip one character of the sealed value.
    let mut bytes = value.into_bytes();
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    assert_eq!(send(tampered).await, (403, json!({"status": "forbidden"})));
    assert_eq!(
        send("sliced_session=forged".to_owned()).await,
        (403, json!({"status": "forbidden"}))
    );
}

#[actix_web::test]
async fn logout_ends_the_session() {
    let api = Api::start().await;
    let session = login(&api, "ada%40example.com", None).await.cookie();
    let session = session.as_deref();
    assert_eq!(get_json(&api, "/api/x", session).await.0, 200);
    let cookie = format!("Cookie: {}", session.unwrap());
    let logout = api.send("POST", "/auth/logout", &[&cookie], "").await;
    assert_eq!(
        (logout.status, logout.json()),
        (200, json!({"status": "ok"}))
    );
    // The browser is told to forget the cookie, and a client that kept it is refused.
    assert_eq!(logout.cookie().as_deref(), Some("sliced_session="));
    assert_eq!(
        get_json(&api, "/api/x", session).await,
        (403, json!({"status": "forbidden"}))
    );
}

#[test]
fn a_session_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent();
    let daemon = Daemon::start(dir.path());
    login_to(&agent, &daemon, "ada@example.com");
    let http = daemon.http;
    assert!(daemon.terminate().success());
    // Same data directory, so the same key; same port, so the agent sends its cookie.
    let daemon = Daemon::start_with_http(dir.path(), http);
    assert_eq!(
        get_json_from(&agent, &daemon, "/api/x"),
        (200, json!({"status": "ok"}))
    );
}

#[actix_web::test]
async fn a_browser_gets_the_contracts_403_under_api_and_the_login_form_from_the_view() {
    let api = Api::start().await;
    let html = "Accept: text/html,application/xhtml+xml";
    let answer = api.send("GET", "/api/slices", &[html], "").await;
    assert_eq!(answer.status, 403);
    assert_eq!(answer.body, r#"{"status":"forbidden"}"#);
    let answer = api.send("GET", "/ui", &[html], "").await;
    assert_eq!(answer.status, 302);
    assert_eq!(
        answer.header("location"),
        Some("/auth/developer?next=%2Fui")
    );
    // Followed, the redirect ends at a form that posts to the callback.
    let page = api.send("GET", "/auth/developer", &[html], "").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(r#"action="/auth/developer/callback""#),
        "{page:?}"
    );
}

#[test]
fn one_setting_guards_the_unprefixed_endpoints_too() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--require-auth"]);
    let agent = agent();
    assert_eq!(
        get_json_from(&agent, &daemon, "/slices"),
        (403, json!({"status": "forbidden"}))
    );
    login_to(&agent, &daemon, "ada@example.com");
    assert_eq!(get_json_from(&agent, &daemon, "/slices"), (200, json!([])));
}

#[test]
fn the_developer_login_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--no-developer-login"]);
    let agent = agent();
    assert_eq!(
        login_to(&agent, &daemon, "ada@example.com"),
        (404, json!({"error": "not found"}))
    );
    assert_eq!(
        get_json_from(&agent, &daemon, "/api/x"),
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
        get_json_from(&agent, &daemon, "/slices"),
        (403, json!({"status": "forbidden"}))
    );
    assert_eq!(
        login_to(&agent, &daemon, "ada@example.com"),
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

/// An agent that shows a redirect rather than following it.
fn not_following() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .redirects(0)
        .timeout(std::time::Duration::from_secs(30))
        .build()
}

/// Every byte but letters and digits as `%XX`, as a page that builds a query would.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => char::from(byte).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// `?next=` values that a link to the login could carry to send the browser elsewhere
/// once logged in, each as it stands in the query: control characters the URL parser
/// drops, backslashes it reads as slashes, scheme-relative and absolute URLs, scripts.
pub(crate) fn foreign_next_queries(elsewhere: &str) -> Vec<String> {
    let mut queries: Vec<String> = ["%09", "%0a", "%0D", "%0d%0a", "%5C", "%09%5C"]
        .iter()
        .map(|dropped_or_slash| format!("/{dropped_or_slash}/{elsewhere}/pwned"))
        .collect();
    queries.extend(
        [
            format!("//{elsewhere}/pwned"),
            format!("/\\{elsewhere}/pwned"),
            format!("\\\\{elsewhere}/pwned"),
            format!("\\/{elsewhere}/pwned"),
            format!("/\t/{elsewhere}/pwned"),
            format!(" //{elsewhere}/pwned"),
            format!("http://{elsewhere}/pwned"),
            format!("HTTP://{elsewhere}/pwned"),
            format!("http:/\\{elsewhere}/pwned"),
            format!("https:{elsewhere}/pwned"),
            format!("javascript:location='http://{elsewhere}/pwned'"),
            "data:text/html,pwned".to_owned(),
            "http://[".to_owned(),
        ]
        .iter()
        .map(|next| percent_encoded(next)),
    );
    queries
}

/// The server resolves `next` as a browser would and sends a login whose `next` leaves
/// the daemon's origin to the login that returns to the web view instead; a `next` on
/// the daemon's own origin gets the form.
#[test]
fn the_login_form_never_takes_a_next_that_leaves_the_daemons_origin() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = not_following();
    let get = |query: &str| {
        let url = daemon.url(&format!("/auth/developer?next={query}"));
        match agent.get(&url).call() {
            Ok(response) => response,
            Err(ureq::Error::Status(_, response)) => response,
            Err(other) => panic!("GET {url}: {other}"),
        }
    };
    for query in foreign_next_queries("127.0.0.1:28001") {
        let answer = get(&query);
        assert_eq!(answer.status(), 302, "next={query}");
        assert_eq!(
            answer.header("Location"),
            Some("/auth/developer?next=%2Fui"),
            "next={query}"
        );
    }
    let own = percent_encoded(&daemon.url("/ui"));
    for query in ["%2Fui", "/ui", "/ui?x=1#y", "ui", "/api/slices", &own] {
        let answer = get(query);
        assert_eq!(answer.status(), 200, "next={query}");
        let page = answer.into_string().unwrap();
        assert!(page.contains("/auth/developer/callback"), "{page}");
    }
}

/// The login form is a page of the daemon like the web view, with the view's headers: it
/// may not be framed by another site (which could overlay it to take the name typed in),
/// sniffed as another type, or named in a `Referer`.
#[test]
fn the_login_form_carries_the_web_views_security_headers() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let agent = agent();
    let form = agent.get(&daemon.url("/auth/developer")).call().unwrap();
    login_to(&agent, &daemon, "ada@example.com");
    let view = agent.get(&daemon.url("/ui")).call().unwrap();
    assert_eq!(
        view.get_url(),
        daemon.url("/ui"),
        "the view itself answered"
    );
    for name in [
        "Content-Security-Policy",
        "X-Content-Type-Options",
        "Referrer-Policy",
    ] {
        assert!(view.header(name).is_some(), "the view has {name}");
        assert_eq!(form.header(name), view.header(name), "{name}");
    }
    let policy = form.header("Content-Security-Policy").unwrap_or_default();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(form.header("X-Content-Type-Options"), Some("nosniff"));
    assert_eq!(form.header("Referrer-Policy"), Some("no-referrer"));
}
