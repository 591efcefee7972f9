//! The OpenID Connect login against a real provider: panva's certified `oidc-provider`
//! (tests/oidc, installed by `npm ci --prefix tests/oidc`), run by node beside the real
//! daemon. The whole flow goes over real HTTP: the daemon's redirect, the provider's
//! login page, the callback; the provider's test routes then make it send ID tokens a
//! real provider never would, which the daemon must refuse. `hostile` is what anyone who
//! reaches the daemon, or a provider that stalls, can try.

mod client;
mod hostile;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::switch::eventually;
use crate::common::{free_port, status_json, SLICED};

/// How long the provider and the daemon may take to come up on a loaded machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The client secret the provider and the daemon share.
const CLIENT_SECRET: &str = "a-client-secret-for-the-tests";

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc")
}

/// The client the provider registers: its secret and how it authenticates at the token
/// endpoint (`client_secret_basic` unless said otherwise).
#[derive(Clone, Copy)]
pub(crate) struct Registered<'a> {
    pub secret: &'a str,
    pub auth_method: &'a str,
}

impl Default for Registered<'_> {
    fn default() -> Self {
        Self {
            secret: CLIENT_SECRET,
            auth_method: "client_secret_basic",
        }
    }
}

/// The provider, run by node, stopped when dropped.
pub(crate) struct Provider {
    child: Child,
    pub addr: SocketAddr,
}

impl Provider {
    /// The provider on `addr`, with one client whose callback is `redirect_url`. `None`
    /// (the test skips) without node or the installed fixture, except in CI, where the
    /// test fails and says what to install.
    pub(crate) fn start(addr: SocketAddr, redirect_url: &str) -> Option<Self> {
        Self::start_for(addr, redirect_url, Registered::default())
    }

    /// The provider with `client` registered.
    pub(crate) fn start_for(
        addr: SocketAddr,
        redirect_url: &str,
        client: Registered<'_>,
    ) -> Option<Self> {
        let installed = fixture_dir().join("node_modules/oidc-provider").is_dir();
        let node = Command::new("node").arg("--version").output().is_ok();
        if !(installed && node) {
            let message = "the OpenID Connect tests need node and the provider fixture: \
                           npm ci --prefix tests/oidc";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
            eprintln!("skipped: {message}");
            return None;
        }
        // A start that fails (node ended, or never said it listens) is tried again: the
        // test cannot move the provider, whose address the daemon may already have, and
        // CI once saw a start fail there. What node said goes into the failure.
        let mut said = String::new();
        for _ in 0..3 {
            match Self::spawn(addr, redirect_url, client) {
                Ok(child) => return Some(Self { child, addr }),
                Err(stderr) => {
                    said = stderr;
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
        panic!("the OpenID provider did not start on {addr}: {said}");
    }

    /// node running the provider, once it said it listens; else what it wrote on stderr.
    fn spawn(
        addr: SocketAddr,
        redirect_url: &str,
        client: Registered<'_>,
    ) -> Result<Child, String> {
        let errors = tempfile::NamedTempFile::new().expect("a file for node's stderr");
        let mut child = Command::new("node")
            .arg(fixture_dir().join("provider.js"))
            .arg(addr.port().to_string())
            .arg(redirect_url)
            .arg(client.secret)
            .arg(client.auth_method)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(errors.reopen().expect("node's stderr file"))
            .spawn()
            .expect("node starts");
        // The script says "listening" once it does.
        let stdout = child.stdout.take().expect("the provider's stdout");
        let (said, heard) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = said.send(line);
            }
        });
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match heard.recv_timeout(left) {
                Ok(line) if line == "listening" => return Ok(child),
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let stderr = std::fs::read_to_string(errors.path()).unwrap_or_default();
                    return Err(stderr
                        .lines()
                        .rev()
                        .take(20)
                        .collect::<Vec<_>>()
                        .join(" | "));
                }
            }
        }
    }

    pub(crate) fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Makes the provider re-sign the next ID token as `mode` says (see provider.js).
    fn tamper_next_id_token(&self, mode: &str) {
        let url = format!("{}/test/next-id-token?mode={mode}", self.issuer());
        let response = ureq::post(&url)
            .call()
            .expect("the provider takes the mode");
        assert_eq!(response.status(), 204);
    }

    /// Makes the provider take the next token request and never answer it.
    fn hold_next_token(&self) {
        let url = format!("{}/test/hold-next-token", self.issuer());
        let response = ureq::post(&url).call().expect("the provider takes it");
        assert_eq!(response.status(), 204);
    }

    /// The held token requests whose client is connected, and those it closed.
    fn held(&self) -> (u64, u64) {
        let url = format!("{}/test/held", self.issuer());
        let held: Value = ureq::get(&url)
            .call()
            .expect("the provider answers")
            .into_json()
            .expect("JSON");
        let count = |key: &str| held[key].as_u64().unwrap_or_default();
        (count("open"), count("closed"))
    }

    /// Makes the provider sign with a new key from now on, as a key rotation does.
    fn rotate_key(&self) {
        let url = format!("{}/test/rotate-key", self.issuer());
        let response = ureq::post(&url)
            .call()
            .expect("the provider rotates its key");
        assert_eq!(response.status(), 204);
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A real `sliced` with `[auth.oidc]` on `http`, its log (audit trail at info) in its
/// directory; killed when dropped.
pub(crate) struct Sliced {
    child: Child,
    pub http: SocketAddr,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

/// The daemon's log filter: warnings, the audit trail and the login's own lines.
const LOG_FILTER: &str = "warn,sliced::audit=info,slice_http=info";

impl Sliced {
    pub(crate) fn start(http: SocketAddr, issuer: &str) -> Self {
        Self::start_with(http, issuer, &[], LOG_FILTER)
    }

    /// Started with `extra` arguments, logging as `filter` says.
    fn start_with(http: SocketAddr, issuer: &str, extra: &[&str], filter: &str) -> Self {
        Self::start_as(http, issuer, extra, filter, CLIENT_SECRET, "")
    }

    /// Started with `client_secret` and `oidc_keys` (more lines of `[auth.oidc]`).
    pub(crate) fn start_as(
        http: SocketAddr,
        issuer: &str,
        extra: &[&str],
        filter: &str,
        client_secret: &str,
        oidc_keys: &str,
    ) -> Self {
        let dir = tempfile::tempdir().expect("a directory for the daemon");
        let secret = dir.path().join("client-secret");
        std::fs::write(&secret, format!("  {client_secret}\n")).expect("the secret is written");
        std::fs::set_permissions(
            &secret,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600),
        )
        .expect("the secret is made owner-only");
        let config = dir.path().join("sliced.toml");
        std::fs::write(
            &config,
            format!(
                r#"
[auth]
require_for_slices = true
developer_login = false

[auth.roles]
operator = ["net-admins"]
viewer = ["staff"]
default = "none"

[auth.oidc]
issuer = "{issuer}"
client_id = "sliced"
client_secret_file = "{secret}"
redirect_url = "http://{http}/auth/oidc/callback"
{oidc_keys}
"#,
                secret = secret.display()
            ),
        )
        .expect("the config is written");
        let data = dir.path().join("data");
        let log = dir.path().join("sliced.log");
        let child = Command::new(SLICED)
            .arg("--db")
            .arg(&data)
            .arg("--http")
            .arg(http.to_string())
            .arg("--openflow")
            .arg(free_port().to_string())
            .arg("--config")
            .arg(&config)
            .args(extra)
            .env("RUST_LOG", filter)
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the log file"))
            .spawn()
            .expect("sliced starts");
        let mut sliced = Self {
            child,
            http,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect(http).is_err() || !data.join("sliced.sock").exists() {
            if let Ok(Some(status)) = sliced.child.try_wait() {
                panic!(
                    "sliced exited during start-up ({status}): {}",
                    sliced.log_text()
                );
            }
            assert!(Instant::now() < deadline, "sliced did not come up in time");
            std::thread::sleep(Duration::from_millis(20));
        }
        sliced
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http)
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The audit trail's login lines, as JSON.
    fn audited_logins(&self) -> Vec<Value> {
        self.log_text()
            .lines()
            .filter(|line| line.contains("sliced::audit"))
            .filter_map(|line| line.find('{').map(|start| &line[start..]))
            .filter_map(|entry| serde_json::from_str::<Value>(entry).ok())
            .filter(|entry| entry["operation"] == "login")
            .collect()
    }
}

impl Drop for Sliced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The provider and the daemon, set up for each other; `None` when the test skips.
fn pair() -> Option<(Provider, Sliced)> {
    pair_logging(LOG_FILTER)
}

/// The pair, the daemon logging as `filter` says.
fn pair_logging(filter: &str) -> Option<(Provider, Sliced)> {
    let http = free_port();
    let provider = Provider::start(free_port(), &format!("http://{http}/auth/oidc/callback"))?;
    let sliced = Sliced::start_with(http, &provider.issuer(), &[], filter);
    Some((provider, sliced))
}

/// A browser-like client: it keeps cookies and follows no redirect by itself.
pub(crate) fn browser() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .redirects(0)
        .build()
}

fn answer(result: Result<ureq::Response, ureq::Error>) -> ureq::Response {
    match result {
        Ok(response) => response,
        Err(ureq::Error::Status(_, response)) => response,
        Err(other) => panic!("request failed: {other}"),
    }
}

/// Where a redirect leads, resolved against the URL that answered it.
fn location(response: &ureq::Response) -> Option<String> {
    let target = response.header("Location")?;
    let base = url::Url::parse(response.get_url()).ok()?;
    Some(base.join(target).ok()?.to_string())
}

/// Starts a login at the daemon and goes through the provider's login page as `login`,
/// up to the callback, which it returns unvisited.
fn callback_for(http: &ureq::Agent, sliced: &Sliced, login: &str) -> String {
    let start = answer(http.get(&sliced.url("/auth/oidc/login?next=%2Fui")).call());
    assert_eq!(start.status(), 302, "the login redirects to the provider");
    let mut url = location(&start).expect("a redirect");
    for _ in 0..10 {
        if url.starts_with(&sliced.url("/auth/oidc/callback")) {
            return url;
        }
        let response = answer(http.get(&url).call());
        if let Some(next) = location(&response) {
            url = next;
            continue;
        }
        // The provider's development login form: any password goes.
        let page_url = response.get_url().to_owned();
        let page = response.into_string().unwrap_or_default();
        let action = page
            .split("action=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no form on the provider's page {page_url}: {page}"));
        let action = url::Url::parse(&page_url).unwrap().join(action).unwrap();
        let posted = answer(http.post(action.as_str()).send_form(&[
            ("prompt", "login"),
            ("login", login),
            ("password", "any password"),
        ]));
        url = location(&posted)
            .unwrap_or_else(|| panic!("the provider did not take the login: {}", posted.status()));
    }
    panic!("the provider never sent the browser back to the daemon")
}

/// Visits the callback; the status, where it redirects, and the JSON body.
fn visit(http: &ureq::Agent, callback: &str) -> (u16, Option<String>, Value) {
    let response = answer(http.get(callback).set("Accept", "application/json").call());
    let status = response.status();
    let redirect = response.header("Location").map(str::to_owned);
    let body = response.into_string().unwrap_or_default();
    (
        status,
        redirect,
        serde_json::from_str(&body).unwrap_or(Value::Null),
    )
}

/// Logs `login` in through the provider; the client then holds the session.
fn log_in(http: &ureq::Agent, sliced: &Sliced, login: &str) {
    let callback = callback_for(http, sliced, login);
    let (status, redirect, body) = visit(http, &callback);
    assert_eq!(
        (status, redirect.as_deref()),
        (302, Some("/ui")),
        "{login}'s callback: {body}"
    );
}

fn api(
    http: &ureq::Agent,
    sliced: &Sliced,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let request = http
        .request(method, &sliced.url(path))
        .set("Accept", "application/json");
    status_json(match body {
        Some(body) => request.send_json(body),
        None => request.call(),
    })
}

#[test]
fn oidc_users_get_the_role_their_groups_give_and_each_login_is_audited() {
    let Some((provider, sliced)) = pair() else {
        return;
    };
    let anonymous = browser();
    // Only the OpenID login: the developer form is gone, and a browser is sent to the
    // provider's login.
    assert_eq!(
        api(&anonymous, &sliced, "GET", "/auth/developer", None).0,
        404
    );
    let (status, _) = api(
        &anonymous,
        &sliced,
        "POST",
        "/auth/developer/callback",
        Some(json!({"name": "x", "email": "x@example.com"})),
    );
    assert_eq!(status, 404);
    assert_eq!(
        api(&anonymous, &sliced, "GET", "/api/session", None),
        (403, json!({"status": "forbidden"}))
    );
    let page = answer(
        anonymous
            .get(&sliced.url("/ui"))
            .set("Accept", "text/html")
            .call(),
    );
    assert_eq!(page.status(), 302);
    assert_eq!(page.header("Location"), Some("/auth/oidc/login?next=%2Fui"));

    // Ada's ID token carries her groups: an operator, who writes.
    let ada = browser();
    log_in(&ada, &sliced, "ada");
    assert_eq!(
        api(&ada, &sliced, "GET", "/api/session", None),
        (
            200,
            json!({"name": "Ada Lovelace", "email": "ada@example.com", "role": "operator"})
        )
    );
    assert_eq!(
        api(
            &ada,
            &sliced,
            "POST",
            "/api/slices",
            Some(json!({"name": "blue"}))
        )
        .0,
        201
    );
    assert_eq!(
        api(
            &ada,
            &sliced,
            "POST",
            "/slices",
            Some(json!({"name": "green"}))
        )
        .0,
        201
    );

    // Bob's groups come from the userinfo endpoint: a viewer, who reads but cannot write.
    let bob = browser();
    log_in(&bob, &sliced, "bob");
    assert_eq!(
        api(&bob, &sliced, "GET", "/api/session", None).1["role"],
        "viewer"
    );
    let (status, slices) = api(&bob, &sliced, "GET", "/api/slices", None);
    assert_eq!(status, 200);
    assert_eq!(slices.as_array().map(Vec::len), Some(2), "{slices}");
    for (path, name) in [("/api/slices", "red"), ("/slices", "red")] {
        assert_eq!(
            api(&bob, &sliced, "POST", path, Some(json!({"name": name}))),
            (403, json!({"status": "forbidden"})),
            "{path}"
        );
    }
    // Why, in a header beside the contract's body; and to a browser outside `/api/`, as
    // a page.
    for (path, accept) in [
        ("/api/slices", "text/html"),
        ("/slices", "application/json"),
    ] {
        let refused = answer(
            bob.post(&sliced.url(path))
                .set("Accept", accept)
                .send_json(json!({"name": "red"})),
        );
        assert_eq!(refused.status(), 403);
        assert_eq!(
            refused.header("X-Sliced-Refusal"),
            Some("viewers cannot write")
        );
        assert_eq!(refused.into_string().unwrap(), r#"{"status":"forbidden"}"#);
    }
    let refused = answer(
        bob.post(&sliced.url("/slices"))
            .set("Accept", "text/html")
            .send_json(json!({"name": "red"})),
    );
    assert_eq!(refused.status(), 403);
    assert!(refused.content_type().starts_with("text/html"));
    let page = refused.into_string().unwrap();
    assert!(page.contains("logged in as a viewer"), "{page}");

    // Eve's groups name no role, and the mapping has no default: no session.
    let eve = browser();
    let (status, _, body) = visit(&eve, &callback_for(&eve, &sliced, "eve"));
    assert_eq!(status, 403, "{body}");
    let reason = body["error"].as_str().unwrap_or_default();
    assert!(
        reason.contains("eve") && reason.contains("visitors"),
        "{reason}"
    );
    assert_eq!(api(&eve, &sliced, "GET", "/api/session", None).0, 403);

    // The provider rotates its signing key: the daemon fetches the key set again.
    provider.rotate_key();
    let ada_again = browser();
    log_in(&ada_again, &sliced, "ada");
    assert_eq!(
        api(&ada_again, &sliced, "GET", "/api/session", None).1["role"],
        "operator"
    );

    // Each login is in the trail once, naming the user; the refused one with its status.
    let logins = sliced.audited_logins();
    let of = |user: &str| -> Vec<&Value> { logins.iter().filter(|l| l["user"] == user).collect() };
    assert_eq!(of("Ada Lovelace").len(), 2, "{logins:?}");
    for entry in of("Ada Lovelace").into_iter().chain(of("Bob Builder")) {
        assert_eq!(entry["target"], json!({"method": "oidc"}));
        assert_eq!(entry["result"], "ok");
        assert_eq!(entry["via"], "session");
    }
    assert_eq!(of("Bob Builder")[0]["email"], "bob@example.com");
    let refused = of("eve");
    assert_eq!(refused.len(), 1, "{logins:?}");
    assert_eq!(refused[0]["status"], 403);
    assert_eq!(logins.len(), 4, "{logins:?}");
}

#[test]
fn oidc_refuses_foreign_states_provider_errors_and_bad_id_tokens() {
    let Some((provider, sliced)) = pair() else {
        return;
    };
    let logged_out = |http: &ureq::Agent| api(http, &sliced, "GET", "/api/session", None).0 == 403;

    // A tampered state: refused, and the real one still works, once.
    let ada = browser();
    let callback = callback_for(&ada, &sliced, "ada");
    let mut tampered = url::Url::parse(&callback).unwrap();
    let pairs: Vec<(String, String)> = tampered
        .query_pairs()
        .map(|(key, value)| {
            let value = if key == "state" {
                format!("{value}x")
            } else {
                value.into_owned()
            };
            (key.into_owned(), value)
        })
        .collect();
    tampered.query_pairs_mut().clear().extend_pairs(pairs);
    let (status, _, body) = visit(&ada, tampered.as_str());
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not started here"),
        "{body}"
    );
    assert!(logged_out(&ada));
    // Another browser's callback: its state is not in this browser's session (a login
    // planted by an attacker's link).
    let mallory = browser();
    assert_eq!(visit(&mallory, &callback).0, 400);
    assert!(logged_out(&mallory));
    assert_eq!(visit(&ada, &callback).0, 302);
    assert!(!logged_out(&ada));
    // Replayed: the state was used (before the provider would refuse the used code).
    let (status, _, body) = visit(&ada, &callback);
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("used already"),
        "{body}"
    );

    // The provider's errors: 4xx with what it said, as a page to a browser.
    let state_of = |url: &str| {
        url::Url::parse(url)
            .unwrap()
            .query_pairs()
            .find(|(key, _)| key == "state")
            .map(|(_, value)| value.into_owned())
            .unwrap()
    };
    let bob = browser();
    let state = state_of(&callback_for(&bob, &sliced, "bob"));
    let denied = sliced.url(&format!(
        "/auth/oidc/callback?error=access_denied&error_description=%3Cb%3Eno%3C%2Fb%3E&state={state}"
    ));
    let page = answer(bob.get(&denied).set("Accept", "text/html").call());
    assert_eq!(page.status(), 403);
    assert!(page.content_type().starts_with("text/html"));
    let text = page.into_string().unwrap();
    assert!(
        text.contains("access_denied") && text.contains("&lt;b&gt;no&lt;/b&gt;"),
        "{text}"
    );
    let (status, _, body) = visit(
        &bob,
        &sliced.url("/auth/oidc/callback?error=invalid_request"),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]
        .as_str()
        .unwrap_or_default()
        .contains("invalid_request"));
    let (status, _, _) = visit(&bob, &sliced.url("/auth/oidc/callback"));
    assert_eq!(status, 400);
    assert!(logged_out(&bob));

    // ID tokens a real provider never sends: signed by another key under the provider's
    // key id, for another client, expired. Each is refused, and no session begins.
    for (mode, reason) in [
        ("foreign-key", "signature"),
        ("other-audience", "audience"),
        ("expired", "expired"),
    ] {
        let http = browser();
        let callback = callback_for(&http, &sliced, "ada");
        provider.tamper_next_id_token(mode);
        let (status, _, body) = visit(&http, &callback);
        assert_eq!(status, 403, "{mode}: {body}");
        let error = body["error"].as_str().unwrap_or_default().to_lowercase();
        assert!(error.contains(reason), "{mode}: {error}");
        assert!(logged_out(&http), "{mode}");
    }

    // The trail has every login whose state was valid, refused or not: Ada's, Bob's
    // access_denied and the three bad ID tokens; nothing of the callbacks without one
    // (tampered, foreign, replayed, a provider's error or nothing at all), which anyone
    // could send as often as they like.
    let logins = sliced.audited_logins();
    let summary: Vec<(String, Value)> = logins
        .iter()
        .map(|entry| {
            let result = entry["result"].as_str().unwrap_or_default();
            (result.chars().take(40).collect(), entry["status"].clone())
        })
        .collect();
    assert_eq!(logins.len(), 5, "{logins:#?}");
    assert_eq!(logins[0]["result"], "ok", "{summary:?}");
    let denied = &logins[1];
    assert_eq!(
        (denied["user"].as_str(), denied["status"].as_u64()),
        (Some("anonymous"), Some(403)),
        "{denied}"
    );
    assert!(
        denied["result"]
            .as_str()
            .is_some_and(|result| result.contains("access_denied")),
        "{denied}"
    );
    assert_eq!(denied["target"], json!({"method": "oidc"}));
    for refused in &logins[2..] {
        assert_eq!(refused["status"], 403, "{summary:?}");
    }
}

#[test]
fn oidc_logins_wait_for_a_provider_that_is_down_at_start() {
    let provider_addr = free_port();
    let http = free_port();
    // The daemon starts although its provider does not answer yet.
    let sliced = Sliced::start(http, &format!("http://{provider_addr}"));
    let early = browser();
    let (status, body) = api(&early, &sliced, "GET", "/auth/oidc/login", None);
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("discovered"),
        "{body}"
    );
    let Some(_provider) = Provider::start(provider_addr, &sliced.url("/auth/oidc/callback")) else {
        return;
    };
    // Discovery is tried again by a login once the wait after the failure is over (logins
    // meanwhile answer 503 at once).
    let started = || {
        let response = answer(browser().get(&sliced.url("/auth/oidc/login")).call());
        response.status() == 302
    };
    assert!(
        eventually(Duration::from_secs(120), started),
        "the provider is never discovered: {}",
        sliced.log_text()
    );
    let ada = browser();
    log_in(&ada, &sliced, "ada");
    assert_eq!(
        api(&ada, &sliced, "GET", "/api/session", None).1["role"],
        "operator"
    );
}

#[test]
fn oidc_client_secret_files_must_be_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "s").unwrap();
    std::fs::set_permissions(
        &secret,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o640),
    )
    .unwrap();
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        format!(
            "[auth.oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"sliced\"\n\
             client_secret_file = \"{}\"\nredirect_url = \"https://sliced.example.com/auth/oidc/callback\"\n",
            secret.display()
        ),
    )
    .unwrap();
    let output = Command::new(SLICED)
        .arg("--db")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("open to other users") && stderr.contains("chmod 600"),
        "{stderr}"
    );
}
