//! Cross-site requests and DNS rebinding (finding 2): writes and logins from another site
//! are refused, host names the daemon was not told of are refused, and scripts and the
//! daemon's own pages keep working.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{login_cookie, raw, request, slices, with_cookie, PATIENCE};
use crate::common::in_process::{Api, HOST};
use crate::common::{agent, Daemon};

fn refused() -> Value {
    json!({"error": "cross-origin request refused"})
}

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
