//! Spec section 7, in-process: the errors and the order they are checked in.

use serde_json::json;

use super::error;
use crate::common::in_process::Api;

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
