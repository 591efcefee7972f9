//! The REST API (spec sections 4 and 7). The contract (every endpoint, the errors and the
//! order they are checked in, identifiers, bodies) is tested in-process against the
//! application on a real store; what needs the real `sliced` over real sockets
//! (durability across restarts and SIGKILL, concurrent clients on several workers) is
//! tested black-box.

use crate::common::in_process::Api;
use crate::common::{agent, status_json, Daemon};
use serde_json::{json, Value};

/// The real daemon, for the tests that need its process, its workers or its disk.
struct Served {
    daemon: Daemon,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            daemon: Daemon::start(dir.path()),
            agent: agent(),
            _dir: dir,
        }
    }

    fn get(&self, path: &str) -> (u16, Value) {
        status_json(self.agent.get(&self.daemon.url(path)).call())
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        status_json(self.agent.post(&self.daemon.url(path)).send_json(body))
    }

    fn delete(&self, path: &str, body: Value) -> (u16, Value) {
        status_json(self.agent.delete(&self.daemon.url(path)).send_json(body))
    }
}

fn error(message: &str) -> Value {
    json!({ "error": message })
}

// ---- spec section 4: every endpoint -----------------------------------------------------------

#[actix_web::test]
async fn slices_are_created_listed_read_and_deleted() {
    let api = Api::start().await;
    assert_eq!(api.get("/slices").await, (200, json!([])));
    for name in ["zeta", "alpha", "mid"] {
        assert_eq!(
            api.post("/slices", json!({"name": name})).await,
            (201, json!({"name": name}))
        );
    }
    assert_eq!(
        api.get("/slices").await,
        (
            200,
            json!([{"name": "zeta"}, {"name": "alpha"}, {"name": "mid"}])
        ),
        "creation order, not name order"
    );
    assert_eq!(
        api.get("/slices/alpha").await,
        (200, json!({"name": "alpha"}))
    );
    assert_eq!(
        api.post("/slices", json!({"name": "alpha"})).await,
        (409, error("Slice alpha already exists"))
    );
    assert_eq!(
        api.delete("/slices", json!({"name": "alpha"})).await,
        (200, json!({"name": "alpha"}))
    );
    assert_eq!(
        api.get("/slices").await,
        (200, json!([{"name": "zeta"}, {"name": "mid"}]))
    );
    assert_eq!(
        api.get("/slices/alpha").await,
        (404, error("Slice alpha not found"))
    );
    assert_eq!(
        api.delete("/slices", json!({"name": "alpha"})).await,
        (404, error("Slice alpha not found"))
    );
}

#[actix_web::test]
async fn ports_are_added_listed_read_and_deleted() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    assert_eq!(api.get("/slices/s/ports").await, (200, json!([])));
    let port = |dpid: u64, port_no: u32| json!({"name": format!("{dpid:#x}:{port_no}"), "dpid": dpid, "port_no": port_no});
    assert_eq!(
        api.post("/slices/s/ports", json!({"dpid": 171, "port_no": 1}))
            .await,
        (201, port(171, 1))
    );
    assert_eq!(
        api.post("/slices/s/ports", json!({"dpid": 2, "port_no": 9}))
            .await,
        (201, port(2, 9))
    );
    assert_eq!(
        api.get("/slices/s/ports").await,
        (200, json!([port(171, 1), port(2, 9)]))
    );
    assert_eq!(api.get("/slices/s/ports/0xab:1").await, (200, port(171, 1)));
    assert_eq!(
        api.post("/slices/s/ports", json!({"dpid": 171, "port_no": 1}))
            .await,
        (409, error("Port 0xab:1 already exists"))
    );
    assert_eq!(
        api.delete("/slices/s/ports", json!({"dpid": 171, "port_no": 1}))
            .await,
        (200, port(171, 1))
    );
    assert_eq!(api.get("/slices/s/ports").await, (200, json!([port(2, 9)])));
    assert_eq!(
        api.get("/slices/s/ports/0xab:1").await,
        (404, error("Port 0xab:1 not found"))
    );
    assert_eq!(
        api.delete("/slices/s/ports", json!({"dpid": 171, "port_no": 1}))
            .await,
        (404, error("Port 0xab:1 not found"))
    );
}

#[actix_web::test]
async fn mac_addresses_are_added_listed_read_and_deleted() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    api.post("/slices/s/ports", json!({"dpid": 1, "port_no": 1}))
        .await;
    let base = "/slices/s/ports/0x1:1/mac_addresses";
    assert_eq!(api.get(base).await, (200, json!([])));
    for mac in ["00:00:00:00:00:09", "00:00:00:00:00:01"] {
        assert_eq!(
            api.post(base, json!({"name": mac})).await,
            (201, json!({"name": mac}))
        );
    }
    assert_eq!(
        api.get(base).await,
        (
            200,
            json!([{"name": "00:00:00:00:00:09"}, {"name": "00:00:00:00:00:01"}])
        ),
        "the order added"
    );
    assert_eq!(
        api.get(&format!("{base}/00:00:00:00:00:01")).await,
        (200, json!({"name": "00:00:00:00:00:01"}))
    );
    assert_eq!(
        api.post(base, json!({"name": "00:00:00:00:00:01"})).await,
        (409, error("MAC address 00:00:00:00:00:01 already exists"))
    );
    assert_eq!(
        api.delete(base, json!({"name": "00:00:00:00:00:09"})).await,
        (200, json!({"name": "00:00:00:00:00:09"}))
    );
    assert_eq!(
        api.get(&format!("{base}/00:00:00:00:00:09")).await,
        (404, error("MAC address 00:00:00:00:00:09 not found"))
    );
    assert_eq!(
        api.delete(base, json!({"name": "00:00:00:00:00:09"})).await,
        (404, error("MAC address 00:00:00:00:00:09 not found"))
    );
    // Rule 3: the port stays after its MAC address goes.
    assert_eq!(api.get("/slices/s/ports/0x1:1").await.0, 200);
}

#[actix_web::test]
async fn adding_a_mac_to_a_missing_port_creates_the_port() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    assert_eq!(
        api.post(
            "/slices/s/ports/0x2:3/mac_addresses",
            json!({"name": "aa:bb:cc:dd:ee:ff"})
        )
        .await,
        (201, json!({"name": "aa:bb:cc:dd:ee:ff"}))
    );
    assert_eq!(
        api.get("/slices/s/ports").await,
        (200, json!([{"name": "0x2:3", "dpid": 2, "port_no": 3}]))
    );
}

#[actix_web::test]
async fn deleting_a_port_takes_its_macs_with_it() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    api.post(
        "/slices/s/ports/0x1:1/mac_addresses",
        json!({"name": "00:00:00:00:00:01"}),
    )
    .await;
    api.delete("/slices/s/ports", json!({"dpid": 1, "port_no": 1}))
        .await;
    assert_eq!(api.get("/slices/s/ports").await, (200, json!([])));
    // Added again, the port starts empty.
    api.post("/slices/s/ports", json!({"dpid": 1, "port_no": 1}))
        .await;
    assert_eq!(
        api.get("/slices/s/ports/0x1:1/mac_addresses").await,
        (200, json!([]))
    );
}

#[actix_web::test]
async fn deleting_a_slice_takes_everything_with_it() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    api.post(
        "/slices/s/ports/0x1:1/mac_addresses",
        json!({"name": "00:00:00:00:00:01"}),
    )
    .await;
    api.delete("/slices", json!({"name": "s"})).await;
    api.post("/slices", json!({"name": "s"})).await;
    assert_eq!(api.get("/slices/s/ports").await, (200, json!([])));
}

#[actix_web::test]
async fn created_resources_carry_their_location() {
    let api = Api::start().await;
    let json = "Content-Type: application/json";
    let location = |answer: crate::common::in_process::Answer| {
        assert_eq!(answer.status, 201, "{answer:?}");
        answer.header("location").unwrap().to_owned()
    };
    assert_eq!(
        location(
            api.send("POST", "/slices", &[json], r#"{"name": "s"}"#)
                .await
        ),
        "/slices/s"
    );
    assert_eq!(
        location(
            api.send(
                "POST",
                "/slices/s/ports",
                &[json],
                r#"{"dpid": 255, "port_no": 2}"#
            )
            .await
        ),
        "/slices/s/ports/0xff:2"
    );
    assert_eq!(
        location(
            api.send(
                "POST",
                "/slices/s/ports/0xFF:02/mac_addresses",
                &[json],
                r#"{"name": "AA:00:00:00:00:01"}"#
            )
            .await
        ),
        "/slices/s/ports/0xff:2/mac_addresses/aa:00:00:00:00:01"
    );
}

// ---- spec section 7: errors and their order ----------------------------------------------------

#[actix_web::test]
async fn a_missing_slice_is_reported_on_every_slice_endpoint() {
    let api = Api::start().await;
    let missing = error("Slice nope not found");
    let port = json!({"dpid": 1, "port_no": 1});
    let mac = json!({"name": "00:00:00:00:00:01"});
    assert_eq!(api.get("/slices/nope").await, (404, missing.clone()));
    assert_eq!(
        api.delete("/slices", json!({"name": "nope"})).await,
        (404, missing.clone())
    );
    assert_eq!(
        api.post("/slices/nope/ports", port.clone()).await,
        (404, missing.clone())
    );
    assert_eq!(api.get("/slices/nope/ports").await, (404, missing.clone()));
    assert_eq!(
        api.delete("/slices/nope/ports", port).await,
        (404, missing.clone())
    );
    assert_eq!(
        api.get("/slices/nope/ports/0x1:1").await,
        (404, missing.clone())
    );
    let macs = "/slices/nope/ports/0x1:1/mac_addresses";
    assert_eq!(api.post(macs, mac.clone()).await, (404, missing.clone()));
    assert_eq!(api.get(macs).await, (404, missing.clone()));
    assert_eq!(
        api.delete(macs, mac).await,
        (404, missing.clone()),
        "endpoint 11 too"
    );
    assert_eq!(
        api.get(&format!("{macs}/00:00:00:00:00:01")).await,
        (404, missing)
    );
    assert_eq!(
        api.get("/slices").await,
        (200, json!([])),
        "nothing was created"
    );
}

#[actix_web::test]
async fn the_slice_is_checked_before_the_port_and_the_port_before_the_mac() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    let mac = "00:00:00:00:00:01";
    let path = |slice: &str| format!("/slices/{slice}/ports/0x1:1/mac_addresses/{mac}");
    assert_eq!(
        api.get(&path("nope")).await,
        (404, error("Slice nope not found"))
    );
    assert_eq!(
        api.get(&path("s")).await,
        (404, error("Port 0x1:1 not found"))
    );
    assert_eq!(
        api.get("/slices/s/ports/0x1:1/mac_addresses").await,
        (404, error("Port 0x1:1 not found"))
    );
    assert_eq!(
        api.delete("/slices/s/ports/0x1:1/mac_addresses", json!({"name": mac}))
            .await,
        (404, error("Port 0x1:1 not found"))
    );
    api.post("/slices/s/ports", json!({"dpid": 1, "port_no": 1}))
        .await;
    assert_eq!(
        api.get(&path("s")).await,
        (404, error(&format!("MAC address {mac} not found")))
    );
}

#[actix_web::test]
async fn port_names_in_messages_are_canonical_whatever_the_request_said() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    assert_eq!(
        api.get("/slices/s/ports/0X00AB:007").await,
        (404, error("Port 0xab:7 not found"))
    );
    assert_eq!(
        api.delete("/slices/s/ports", json!({"dpid": 0xab, "port_no": 7}))
            .await,
        (404, error("Port 0xab:7 not found"))
    );
}

// ---- identifiers -------------------------------------------------------------------------------

#[actix_web::test]
async fn identifiers_are_read_leniently_and_shown_canonically() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "s"})).await;
    api.post(
        "/slices/s/ports/0xAB:1/mac_addresses",
        json!({"name": "AA:BB:CC:DD:EE:FF"}),
    )
    .await;
    for spelling in ["0xab:1", "0xAB:1", "0x00ab:1", "0X00Ab:0001", "0xab%3A1"] {
        assert_eq!(
            api.get(&format!("/slices/s/ports/{spelling}")).await,
            (200, json!({"name": "0xab:1", "dpid": 171, "port_no": 1})),
            "{spelling}"
        );
    }
    assert_eq!(
        api.get("/slices/s/ports/0xab:1/mac_addresses/aA:Bb:cC:dD:eE:fF")
            .await,
        (200, json!({"name": "aa:bb:cc:dd:ee:ff"}))
    );
    assert_eq!(
        api.post(
            "/slices/s/ports/0xab:1/mac_addresses",
            json!({"name": "aa:bb:cc:dd:ee:FF"})
        )
        .await,
        (409, error("MAC address aa:bb:cc:dd:ee:ff already exists")),
        "MAC addresses compare without case"
    );
}

#[actix_web::test]
async fn the_largest_identifiers_round_trip() {
    let api = Api::start().await;
    api.post("/slices", json!({"name": "x".repeat(64)})).await;
    let body = json!({"dpid": u64::MAX, "port_no": u32::MAX});
    let expected =
        json!({"name": "0xffffffffffffffff:4294967295", "dpid": u64::MAX, "port_no": u32::MAX});
    let slice = "x".repeat(64);
    assert_eq!(
        api.post(&format!("/slices/{slice}/ports"), body).await,
        (201, expected.clone())
    );
    assert_eq!(
        api.get(&format!(
            "/slices/{slice}/ports/0xffffffffffffffff:4294967295"
        ))
        .await,
        (200, expected)
    );
}

#[actix_web::test]
async fn form_bodies_are_accepted_like_json() {
    let api = Api::start().await;
    let form = "application/x-www-form-urlencoded";
    assert_eq!(
        api.raw("POST", "/slices", form, "name=s").await,
        (201, json!({"name": "s"}))
    );
    assert_eq!(
        api.raw("POST", "/slices/s/ports", form, "dpid=16&port_no=2")
            .await,
        (201, json!({"name": "0x10:2", "dpid": 16, "port_no": 2}))
    );
    assert_eq!(
        api.raw(
            "POST",
            "/slices/s/ports/0x10:2/mac_addresses",
            form,
            "name=00%3A00%3A00%3A00%3A00%3A01"
        )
        .await,
        (201, json!({"name": "00:00:00:00:00:01"}))
    );
    assert_eq!(
        api.raw("DELETE", "/slices/s/ports", form, "dpid=16&port_no=2")
            .await,
        (200, json!({"name": "0x10:2", "dpid": 16, "port_no": 2}))
    );
    // What `curl -d '{...}'` sends: JSON labelled as a form.
    assert_eq!(
        api.raw("POST", "/slices", form, r#"{"name":"t"}"#).await,
        (201, json!({"name": "t"}))
    );
}

// ---- bad input: a clear 4xx and nothing changed ----------------------------------------------

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

// ---- the real daemon: several workers, durability, concurrency ---------------------------------

/// The slice list is served from memory: every write must show in the very next read,
/// whichever worker and connection answers it (a fresh agent per read changes both).
#[test]
fn the_slice_list_shows_every_write_at_once() {
    let api = Served::start();
    let mut expected: Vec<Value> = Vec::new();
    for round in 0..20 {
        let name = format!("s{round}");
        assert_eq!(api.post("/slices", json!({"name": name})).0, 201);
        expected.push(json!({"name": name}));
        if round % 3 == 2 {
            let doomed = expected.remove(0);
            assert_eq!(api.delete("/slices", doomed).0, 200);
        }
        let fresh = agent();
        let (status, listed) = status_json(fresh.get(&api.daemon.url("/slices")).call());
        assert_eq!(
            (status, listed),
            (200, Value::Array(expected.clone())),
            "round {round}"
        );
        assert_eq!(api.get("/slices"), (200, Value::Array(expected.clone())));
    }
}

/// The reads of one slice, port or MAC address are answered from encodings each worker
/// keeps: every write must show in the very next read of everything it touches, on a
/// connection that read the old answers just before and on a fresh one.
#[test]
fn every_point_read_shows_every_write_at_once() {
    let api = Served::start();
    let slice = "/slices/s";
    let ports = "/slices/s/ports";
    let port = "/slices/s/ports/0x1:1";
    let macs = "/slices/s/ports/0x1:1/mac_addresses";
    let mac = "/slices/s/ports/0x1:1/mac_addresses/00:00:00:00:00:01";
    let no_slice = || (404, error("Slice s not found"));
    let no_port = || (404, error("Port 0x1:1 not found"));
    let no_mac = || (404, error("MAC address 00:00:00:00:00:01 not found"));
    let the_slice = || (200, json!({"name": "s"}));
    let port_request = json!({"dpid": 1, "port_no": 1});
    let the_port = json!({"name": "0x1:1", "dpid": 1, "port_no": 1});
    let the_mac = json!({"name": "00:00:00:00:00:01"});
    let fresh = agent();
    let read_all = |step: &str, expected: [(u16, Value); 5]| {
        for (path, want) in [slice, ports, port, macs, mac].into_iter().zip(expected) {
            for agent in [&api.agent, &fresh, &agent()] {
                let got = status_json(agent.get(&api.daemon.url(path)).call());
                assert_eq!(got, want, "{step}: GET {path}");
            }
        }
    };
    let empty = || (200, json!([]));
    read_all(
        "before",
        [no_slice(), no_slice(), no_slice(), no_slice(), no_slice()],
    );
    assert_eq!(api.post("/slices", json!({"name": "s"})).0, 201);
    read_all(
        "slice created",
        [the_slice(), empty(), no_port(), no_port(), no_port()],
    );
    assert_eq!(api.post(ports, port_request.clone()).0, 201);
    let with_port = || (200, json!([the_port.clone()]));
    let port_read = || (200, the_port.clone());
    read_all(
        "port added",
        [the_slice(), with_port(), port_read(), empty(), no_mac()],
    );
    assert_eq!(api.post(macs, the_mac.clone()).0, 201);
    let with_mac = || (200, json!([the_mac.clone()]));
    let mac_read = || (200, the_mac.clone());
    read_all(
        "MAC added",
        [
            the_slice(),
            with_port(),
            port_read(),
            with_mac(),
            mac_read(),
        ],
    );
    assert_eq!(api.delete(macs, the_mac.clone()).0, 200);
    read_all(
        "MAC deleted",
        [the_slice(), with_port(), port_read(), empty(), no_mac()],
    );
    assert_eq!(api.delete(ports, port_request).0, 200);
    read_all(
        "port deleted",
        [the_slice(), empty(), no_port(), no_port(), no_port()],
    );
    assert_eq!(api.delete("/slices", json!({"name": "s"})).0, 200);
    read_all(
        "slice deleted",
        [no_slice(), no_slice(), no_slice(), no_slice(), no_slice()],
    );
}

#[test]
fn everything_survives_a_restart_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent();
    let daemon = Daemon::start(dir.path());
    for name in ["b", "a", "c"] {
        agent
            .post(&daemon.url("/slices"))
            .send_json(json!({"name": name}))
            .unwrap();
    }
    for (port, mac) in [
        ("0x2:1", "00:00:00:00:00:02"),
        ("0x1:1", "00:00:00:00:00:01"),
        ("0x1:1", "00:00:00:00:00:00"),
    ] {
        agent
            .post(&daemon.url(&format!("/slices/a/ports/{port}/mac_addresses")))
            .send_json(json!({"name": mac}))
            .unwrap();
    }
    assert!(daemon.terminate().success(), "clean exit on SIGTERM");

    let daemon = Daemon::start(dir.path());
    let get = |path: &str| status_json(agent.get(&daemon.url(path)).call());
    assert_eq!(
        get("/slices"),
        (200, json!([{"name": "b"}, {"name": "a"}, {"name": "c"}]))
    );
    assert_eq!(
        get("/slices/a/ports"),
        (
            200,
            json!([{"name": "0x2:1", "dpid": 2, "port_no": 1}, {"name": "0x1:1", "dpid": 1, "port_no": 1}])
        )
    );
    assert_eq!(
        get("/slices/a/ports/0x1:1/mac_addresses"),
        (
            200,
            json!([{"name": "00:00:00:00:00:01"}, {"name": "00:00:00:00:00:00"}])
        )
    );
}

#[test]
fn an_acknowledged_write_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent();
    let daemon = Daemon::start(dir.path());
    agent
        .post(&daemon.url("/slices"))
        .send_json(json!({"name": "s"}))
        .unwrap();
    for i in 0..50u8 {
        let response = agent
            .post(&daemon.url("/slices/s/ports/0x1:1/mac_addresses"))
            .send_json(json!({"name": format!("00:00:00:00:01:{i:02x}")}))
            .unwrap();
        assert_eq!(response.status(), 201);
    }
    // No pause: the last 201 must already be on disk.
    daemon.kill9();
    let daemon = Daemon::start(dir.path());
    let (status, macs) = status_json(
        agent
            .get(&daemon.url("/slices/s/ports/0x1:1/mac_addresses"))
            .call(),
    );
    assert_eq!(status, 200);
    assert_eq!(macs.as_array().unwrap().len(), 50);
    assert_eq!(macs[49]["name"], "00:00:00:00:01:31");
}

#[test]
fn racing_creates_of_one_slice_admit_exactly_one() {
    let api = Served::start();
    let url = api.daemon.url("/slices");
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..24)
            .map(|_| {
                let (agent, url) = (agent(), url.clone());
                scope.spawn(move || {
                    status_json(agent.post(&url).send_json(json!({"name": "race"}))).0
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        23,
        "{statuses:?}"
    );
    assert_eq!(api.get("/slices"), (200, json!([{"name": "race"}])));
}

#[test]
fn concurrent_mac_adds_to_one_port_all_land() {
    let api = Served::start();
    api.post("/slices", json!({"name": "s"}));
    let url = api.daemon.url("/slices/s/ports/0x1:1/mac_addresses");
    std::thread::scope(|scope| {
        for i in 0..32u8 {
            let (agent, url) = (agent(), url.clone());
            scope.spawn(move || {
                let body = json!({"name": format!("00:00:00:00:00:{i:02x}")});
                assert_eq!(status_json(agent.post(&url).send_json(body)).0, 201);
            });
        }
    });
    let (_, macs) = api.get("/slices/s/ports/0x1:1/mac_addresses");
    let mut macs: Vec<String> = macs
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_owned())
        .collect();
    macs.sort();
    let expected: Vec<String> = (0..32u8)
        .map(|i| format!("00:00:00:00:00:{i:02x}"))
        .collect();
    assert_eq!(macs, expected);
    assert_eq!(api.get("/slices/s/ports").1.as_array().unwrap().len(), 1);
}
