//! The PACKET_IN meter sliced puts in front of the table-miss flow on OpenFlow 1.3.

use anyhow::ensure;
use serde_json::json;

use super::net::mac;
use super::ovs::OfVersion;
use super::stage::Stage;
use super::topologies::SINGLE;

/// The PACKET_IN meter: on 1.3 sliced asks Open vSwitch for its meter features and puts
/// meter 1 (a drop band at the PACKET_IN rate, 1000 packets per second by default, burst
/// 2000) in front of the table-miss flow, which `dump-meters` and `dump-flows` show and
/// `GET /topology/switches` reports; 1.0 has no meters and keeps its plain behaviour.
/// Either way the misses still reach sliced: a slice's hosts ping each other.
pub(super) fn packet_in_meter(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(SINGLE)?;
    let metered = stage.version == OfVersion::Of13;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let switches = loop {
        let switches = stage.ctl()?.view("/topology/switches")?;
        let reported = switches
            .get(0)
            .and_then(|s| s.get("packet_in_meter"))
            .and_then(|m| m.as_bool());
        if reported == Some(metered) || std::time::Instant::now() > deadline {
            break switches;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let reported = switches.get(0).and_then(|s| s.get("packet_in_meter"));
    ensure!(
        reported == Some(&json!(metered)),
        "GET /topology/switches gave {switches}, expected packet_in_meter {metered}"
    );
    stage.step(format!("sliced reports packet_in_meter {metered}"));
    if metered {
        let meters = stage.meters(1)?;
        let meter = meters
            .lines()
            .skip_while(|line| !line.starts_with("meter=1 "))
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        ensure!(
            meter.contains("pktps")
                && meter.contains("type=drop")
                && meter.contains("rate=1000")
                && meter.contains("burst_size=2000"),
            "ovs-ofctl dump-meters shows no meter 1 dropping above 1000 pktps: {meters}"
        );
        stage.step(format!("dump-meters: {meter}"));
    }
    let flows = stage.flows(1)?;
    let table_miss = flows
        .iter()
        // Priority 0 and no match: the parser keeps `priority=0` among the fields, and
        // the cookie sliced marks its flows with.
        .find(|flow| {
            flow.priority == 0
                && flow
                    .fields
                    .keys()
                    .all(|key| key == "priority" || key == "cookie")
        });
    match (metered, table_miss) {
        (true, Some(flow)) => {
            ensure!(
                flow.actions.split(',').any(|action| action == "meter:1")
                    && flow.actions.contains("CONTROLLER"),
                "the table-miss flow does not pass meter 1: {}",
                flow.line
            );
            stage.step(format!("table-miss flow: {}", flow.line));
        }
        (true, None) => anyhow::bail!("no table-miss flow: {flows:?}"),
        (false, _) => {
            ensure!(
                !flows.iter().any(|flow| flow.actions.contains("meter:")),
                "a flow uses a meter on 1.0: {flows:?}"
            );
        }
    }
    stage.rest("POST", "/slices", Some(json!({ "name": "metered" })), 201)?;
    for host in [1, 2] {
        let port = stage.port_of(host)?;
        stage.rest(
            "POST",
            &format!("/slices/metered/ports/{port}/mac_addresses"),
            Some(json!({ "name": mac(host) })),
            201,
        )?;
    }
    stage.reach_both(1, 2)?;
    Ok(())
}
