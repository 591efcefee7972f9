//! What a refused client learns, against the real daemon: under `/api/` the contract's
//! body byte for byte whatever the client accepts, the reason in `X-Sliced-Refusal`; a
//! browser that opens the web view on a daemon without a browser login, a page saying
//! why; and the developer login form, which says what it is.

use std::time::Duration;

use crate::common::Daemon;

/// A browser's navigation asks for this.
const NAVIGATION: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// The contract's body for a refused client (spec section 5), byte for byte.
const FORBIDDEN: &str = r#"{"status":"forbidden"}"#;

/// An agent that follows no redirect, so that each answer is seen as it is.
fn client() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .redirects(0)
        .build()
}

/// `GET path` accepting `accept`: the status, the refusal header, the content type and
/// the body as sent.
fn get(daemon: &Daemon, path: &str, accept: &str) -> (u16, Option<String>, String, String) {
    let response = match client().get(&daemon.url(path)).set("Accept", accept).call() {
        Ok(response) | Err(ureq::Error::Status(_, response)) => response,
        Err(other) => panic!("GET {path}: {other}"),
    };
    let status = response.status();
    let refusal = response.header("X-Sliced-Refusal").map(str::to_owned);
    let media = response.content_type().to_owned();
    (
        status,
        refusal,
        media,
        response.into_string().unwrap_or_default(),
    )
}

#[test]
fn under_api_every_client_gets_the_contracts_body_and_the_reason_in_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    for accept in ["application/json", "*/*", NAVIGATION, "text/html"] {
        for path in ["/api/slices", "/api/session", "/api/", "/api/nowhere"] {
            let (status, refusal, _, body) = get(&daemon, path, accept);
            assert_eq!(
                (status, refusal.as_deref(), body.as_str()),
                (403, Some("login required"), FORBIDDEN),
                "{path} accepting {accept}"
            );
        }
    }
}

#[test]
fn without_a_browser_login_the_view_tells_a_browser_why_and_a_script_the_contracts_body() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--no-developer-login"]);
    let (status, refusal, media, page) = get(&daemon, "/ui", NAVIGATION);
    assert_eq!(status, 403, "{page}");
    assert_eq!(refusal.as_deref(), Some("login required"));
    assert!(media.starts_with("text/html"), "{media}");
    assert!(
        page.contains("Login required")
            && page.contains("offers none in the browser")
            && page.contains("[auth.oidc]")
            && page.contains("/ui/style.css"),
        "{page}"
    );
    let (status, refusal, _, body) = get(&daemon, "/ui", "application/json");
    assert_eq!(
        (status, refusal.as_deref(), body.as_str()),
        (403, Some("login required"), FORBIDDEN)
    );
    // The view's files stay open: the login pages use its stylesheet.
    assert_eq!(get(&daemon, "/ui/style.css", NAVIGATION).0, 200);
}

#[test]
fn the_developer_login_looks_like_the_view_and_says_any_name_works() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let (status, _, media, page) = get(&daemon, "/auth/developer?next=%2Fui", NAVIGATION);
    assert_eq!(status, 200, "{page}");
    assert!(media.starts_with("text/html"), "{media}");
    for part in [
        r#"<link rel="stylesheet" href="/ui/style.css">"#,
        "<header><h1>sliced</h1></header>",
        "any name and e-mail address log you in",
        "auth.developer_login = false",
        r#"action="/auth/developer/callback""#,
        r#"<script src="/ui/login.js" defer></script>"#,
    ] {
        assert!(page.contains(part), "{part} missing: {page}");
    }
}
