//! Identifiers and bodies as clients write them, in-process: read leniently, shown
//! canonically, the largest round-trip, and form bodies taken like JSON.

use serde_json::json;

use super::error;
use crate::common::in_process::Api;

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
    // The highest port number a slice can hold (OFPP_MAX): above it are OpenFlow's
    // reserved ports.
    let body = json!({"dpid": u64::MAX, "port_no": slice_core::MAX_SWITCH_PORT});
    let expected = json!({
        "name": "0xffffffffffffffff:4294967040",
        "dpid": u64::MAX,
        "port_no": slice_core::MAX_SWITCH_PORT
    });
    let slice = "x".repeat(64);
    assert_eq!(
        api.post(&format!("/slices/{slice}/ports"), body).await,
        (201, expected.clone())
    );
    assert_eq!(
        api.get(&format!(
            "/slices/{slice}/ports/0xffffffffffffffff:4294967040"
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
