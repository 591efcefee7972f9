//! Bad input, in-process: a clear 4xx that says what is wrong, and nothing changed.

use serde_json::json;

use super::error;
use crate::common::in_process::Api;

#[actix_web::test]
async fn bad_bodies_get_400_and_change_nothing() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    api.post(
        "/slices/s/ports/0x1:1/mac_addresses",
        json!({"name": "00:00:00:00:00:01"}),
    )
    .await;
    let before = api.tree().await;
    let json_type = "application/json";
    let cases: &[(&str, &str, &str)] = &[
        ("POST", "/slices", "{"),
        ("POST", "/slices", ""),
        ("POST", "/slices", "[]"),
        ("POST", "/slices", "{}"),
        ("POST", "/slices", r#"{"name": 5}"#),
        ("POST", "/slices", r#"{"name": null}"#),
        ("POST", "/slices", r#"{"name": ""}"#),
        ("POST", "/slices", r#"{"name": "has space"}"#),
        ("POST", "/slices", r#"{"name": "a/b"}"#),
        (
            "POST",
            "/slices",
            &format!(r#"{{"name": "{}"}}"#, "x".repeat(65)),
        ),
        ("DELETE", "/slices", r#"{"nom": "s"}"#),
        ("POST", "/slices/s/ports", r#"{"dpid": 1}"#),
        ("POST", "/slices/s/ports", r#"{"dpid": -1, "port_no": 1}"#),
        (
            "POST",
            "/slices/s/ports",
            r#"{"dpid": 18446744073709551616, "port_no": 1}"#,
        ),
        (
            "POST",
            "/slices/s/ports",
            r#"{"dpid": 1, "port_no": 4294967296}"#,
        ),
        (
            "POST",
            "/slices/s/ports",
            r#"{"dpid": "0x1", "port_no": 1}"#,
        ),
        ("POST", "/slices/s/ports", r#"{"dpid": 1.5, "port_no": 1}"#),
        (
            "DELETE",
            "/slices/s/ports",
            r#"{"dpid": 1, "port_no": "one"}"#,
        ),
        (
            "POST",
            "/slices/s/ports/0x1:1/mac_addresses",
            r#"{"name": "00:00:00:00:00"}"#,
        ),
        (
            "POST",
            "/slices/s/ports/0x1:1/mac_addresses",
            r#"{"name": "zz:00:00:00:00:01"}"#,
        ),
        (
            "POST",
            "/slices/s/ports/0x1:1/mac_addresses",
            r#"{"name": "00-00-00-00-00-02"}"#,
        ),
        (
            "DELETE",
            "/slices/s/ports/0x1:1/mac_addresses",
            r#"{"name": 1}"#,
        ),
        (
            "POST",
            "/slices/s/ports/0x1:1/mac_addresses",
            r#"{"mac": "00:00:00:00:00:02"}"#,
        ),
    ];
    for (method, path, body) in cases {
        let (status, response) = api.raw(method, path, json_type, body).await;
        assert_eq!(status, 400, "{method} {path} {body}: {response}");
        let message = response["error"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{method} {path} {body}: {response}");
    }
    assert_eq!(api.tree().await, before);
}

/// `dpid` and `port_no` are decimal digits only, in JSON and in a form: a sign, fraction
/// or exponent is 400 naming the field, even on a number that is whole (`1.0`, `1e0`) or
/// zero (`-0`; `1e-400`, which a double holds as 0), and nothing changes (issue 22).
#[actix_web::test]
async fn port_numbers_with_a_sign_fraction_or_exponent_get_400_naming_the_field() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    api.post("/slices/s/ports", json!({"dpid": 0, "port_no": 0}))
        .await;
    api.post("/slices/s/ports", json!({"dpid": 1, "port_no": 1}))
        .await;
    let before = api.get("/slices/s/ports").await;
    let mut cases = Vec::new();
    for token in ["-0", "1e0", "1.0", "1e-400", "0.0", "-1", "1.5"] {
        let json = "application/json";
        cases.push((
            json,
            format!(r#"{{"dpid": {token}, "port_no": 0}}"#),
            "dpid",
        ));
        cases.push((
            json,
            format!(r#"{{"dpid": 1, "port_no": {token}}}"#),
            "port_no",
        ));
    }
    for token in ["-0", "1e0", "1.0", "%2B1", "", "0x1"] {
        let form = "application/x-www-form-urlencoded";
        cases.push((form, format!("dpid={token}&port_no=0"), "dpid"));
        cases.push((form, format!("dpid=1&port_no={token}"), "port_no"));
    }
    for (content_type, body, field) in cases {
        for method in ["POST", "DELETE"] {
            let (status, answer) = api
                .raw(method, "/slices/s/ports", content_type, &body)
                .await;
            assert_eq!(status, 400, "{method} {body}: {answer}");
            let message = answer["error"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("{field} must be written in decimal digits only")),
                "{method} {body}: {answer}"
            );
        }
    }
    assert_eq!(api.get("/slices/s/ports").await, before);
}

#[actix_web::test]
async fn bad_body_messages_say_what_is_wrong() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    let (_, body) = api
        .raw("POST", "/slices", "application/json", r#"{"name": "a b"}"#)
        .await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("invalid slice name \"a b\""),
        "{body}"
    );
    let (_, body) = api
        .raw(
            "POST",
            "/slices/s/ports",
            "application/json",
            r#"{"dpid": 1}"#,
        )
        .await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("missing field `port_no`"),
        "{body}"
    );
    let (_, body) = api
        .raw(
            "POST",
            "/slices/s/ports",
            "application/json",
            r#"{"dpid": 1, "port_no": 4294967296}"#,
        )
        .await;
    assert!(
        body["error"].as_str().unwrap().contains("4294967296"),
        "{body}"
    );
}

#[actix_web::test]
async fn bad_identifiers_in_the_path_get_400() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    api.post(
        "/slices/s/ports/0x1:1/mac_addresses",
        json!({"name": "00:00:00:00:00:01"}),
    )
    .await;
    let before = api.tree().await;
    for path in [
        "/slices/bad%20name",
        "/slices/s/ports/1:1",
        "/slices/s/ports/0x1",
        "/slices/s/ports/0xg:1",
        "/slices/s/ports/0x1:99999999999",
        "/slices/s/ports/0x10000000000000000:1",
        "/slices/s/ports/0x1:1/mac_addresses/00:00:00:00:00",
        "/slices/s/ports/0x1:1/mac_addresses/00:00:00:00:00:0g",
    ] {
        let (status, body) = api.get(path).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(
            body["error"].as_str().unwrap().starts_with("invalid"),
            "{path}: {body}"
        );
    }
    let (status, body) = api
        .post(
            "/slices/s/ports/0x1/mac_addresses",
            json!({"name": "00:00:00:00:00:02"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(api.tree().await, before);
}

#[actix_web::test]
async fn oversized_and_unsupported_bodies_are_refused() {
    let api = Api::start().await;
    let huge = format!(r#"{{"name": "s", "padding": "{}"}}"#, "x".repeat(64 * 1024));
    let (status, body) = api.raw("POST", "/slices", "application/json", &huge).await;
    assert_eq!(status, 413, "{body}");
    assert!(body["error"].as_str().unwrap().contains("too large"));
    let (status, body) = api.raw("POST", "/slices", "text/plain", "name=s").await;
    assert_eq!(status, 415, "{body}");
    assert!(body["error"].as_str().unwrap().contains("text/plain"));
    assert_eq!(api.get("/slices").await, (200, json!([])));
}

#[actix_web::test]
async fn unknown_paths_and_wrong_methods_answer_in_json() {
    let api = Api::start().await;
    assert_eq!(api.get("/nothing/here").await, (404, error("not found")));
    assert_eq!(
        api.get("/slices/s/ports/0x1:1/extra").await,
        (404, error("not found"))
    );
    for (method, path, allow) in [
        ("PUT", "/slices", "GET, HEAD, POST, DELETE"),
        ("PATCH", "/slices/s", "GET, HEAD"),
        ("POST", "/slices/s", "GET, HEAD"),
        ("PUT", "/slices/s/ports", "GET, HEAD, POST, DELETE"),
        ("DELETE", "/slices/s/ports/0x1:1", "GET, HEAD"),
        (
            "PUT",
            "/slices/s/ports/0x1:1/mac_addresses",
            "GET, HEAD, POST, DELETE",
        ),
        (
            "POST",
            "/slices/s/ports/0x1:1/mac_addresses/00:00:00:00:00:01",
            "GET, HEAD",
        ),
        ("GET", "/auth/developer/callback", "POST"),
        ("POST", "/topology/links", "GET, HEAD"),
    ] {
        let response = api
            .send(method, path, &["Content-Type: application/json"], "{}")
            .await;
        assert_eq!(response.status, 405, "{method} {path}");
        assert_eq!(response.header("Allow"), Some(allow), "{method} {path}");
        let body = response.json();
        assert_eq!(
            body,
            json!({"error": "method not allowed"}),
            "{method} {path}"
        );
    }
}

/// A body of the wrong shape is refused with the shape to send: `curl -d garbage` sends a
/// form, which lacks every field, and the answer says how it was read and what it wants
/// (issue 35 item 14).
#[actix_web::test]
async fn a_body_of_the_wrong_shape_is_told_what_to_send() {
    let api = Api::start().await;
    let form = "application/x-www-form-urlencoded";
    let json_type = "application/json";
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "/slices",
            form,
            "garbage",
            &[
                "missing field `name`",
                "read as a form",
                "name=<slice name>",
                r#"{"name": "<slice name>"}"#,
            ],
        ),
        (
            "/slices",
            json_type,
            "{}",
            &[
                "missing field `name`",
                r#"expected {"name": "<slice name>"}"#,
            ],
        ),
        (
            "/slices/s/ports",
            form,
            "dpid=1",
            &[
                "missing field `port_no`",
                "dpid=<integer>&port_no=<integer>",
            ],
        ),
        (
            "/topology/fabric",
            json_type,
            "[]",
            &[r#"expected {"declared": ["#],
        ),
    ];
    api.post("/slices", json!({"name": "s"})).await;
    for (path, content_type, body, says) in cases {
        let method = if path.starts_with("/topology") {
            "PUT"
        } else {
            "POST"
        };
        let (status, answer) = api.raw(method, path, content_type, body).await;
        assert_eq!(status, 400, "{path} {body}: {answer}");
        let message = answer["error"].as_str().unwrap_or_default();
        for said in *says {
            assert!(
                message.contains(said),
                "{path} {body}: {message:?} lacks {said:?}"
            );
        }
    }
}
