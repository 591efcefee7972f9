//! Withdrawing a MAC address, a port or a slice stops traffic and removes its flows.

use serde_json::json;

use super::net::mac;
use super::stage::Stage;
use super::topologies::LINE3;

/// Scenario 4, withdrawal three ways, each undone before the next: the MAC address (REST), the
/// port (slice tool), the slice (REST). Each time the flows for the withdrawn host
/// vanish from every switch within the deadline, pings fail, and no switch forwards for
/// it afterwards; re-adding it makes the pair talk again.
pub(super) fn withdrawal(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(LINE3)?;
    let (p1, p3) = (stage.port_of(1)?, stage.port_of(3)?);
    stage.rest("POST", "/slices", Some(json!({ "name": "w" })), 201)?;
    for (port, host) in [(&p1, 1), (&p3, 3)] {
        stage.rest(
            "POST",
            &format!("/slices/w/ports/{port}/mac_addresses"),
            Some(json!({ "name": mac(host) })),
            201,
        )?;
    }
    let path_13 = [(1, 1, 2), (2, 2, 3), (3, 2, 1)];
    let path_31 = [(3, 1, 2), (2, 3, 2), (1, 2, 1)];
    let both_ways = |stage: &mut Stage| -> anyhow::Result<()> {
        stage.reach_both(1, 3)?;
        stage.expect_path(1, 3, &path_13)?;
        stage.expect_path(3, 1, &path_31)
    };
    both_ways(stage)?;

    // a. The MAC address.
    let mac3_path = format!("/slices/w/ports/{p3}/mac_addresses");
    stage.rest("DELETE", &mac3_path, Some(json!({ "name": mac(3) })), 200)?;
    stage.expect_no_flows(&[3])?;
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.expect_no_forwarding(&[3])?;
    stage.rest("POST", &mac3_path, Some(json!({ "name": mac(3) })), 201)?;
    both_ways(stage)?;

    // b. The port.
    stage.tool(&["delete_port", "--port", &p3, "--slice", "w"])?;
    stage.expect_no_flows(&[3])?;
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.expect_no_forwarding(&[3])?;
    stage.tool(&["add_host", "--mac", &mac(3), "--port", &p3, "--slice", "w"])?;
    both_ways(stage)?;

    // c. The whole slice.
    stage.rest("DELETE", "/slices", Some(json!({ "name": "w" })), 200)?;
    stage.expect_no_flows(&[1, 3])?;
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.expect_no_forwarding(&[1, 3])
}
