//! Sessions (finding 3): a cookie replayed after a logout, a restart, its lifetime or a
//! new login is refused.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{login_cookie, with_cookie, PATIENCE};
use crate::common::in_process::Api;
use crate::common::{status_json, Daemon};

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
