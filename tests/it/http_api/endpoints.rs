//! Spec section 4, in-process: every endpoint creates, lists, reads and deletes what it
//! names, with its cascades and the location of what it creates.

use serde_json::json;

use super::error;
use crate::common::in_process::Api;

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
