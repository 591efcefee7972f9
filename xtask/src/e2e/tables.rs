//! Flow tables that fill: a real Open vSwitch bridge whose table refuses entries past a
//! limit (`Flow_Table` `flow_limit` with `overflow_policy=refuse`). The controller must
//! count the refusals per switch, open no hole between slices meanwhile, and fill the
//! table once it has room.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde_json::{json, Value};

use super::net;
use super::ovs::OfVersion;
use super::stage::Stage;
// Two switches with one cable; h1 and h2 (one per switch) in red, h3 and h4 in blue.
use super::topologies::PAIR;

/// How long a refilled table may take: the retry waits double while the table keeps
/// refusing (2, 4, 8, 16 s...), and the limit is lifted some seconds in.
const REFILL_DEADLINE: Duration = Duration::from_secs(75);

/// The table that holds the forwarding entries: the pipeline's table 2 on 1.3, the one
/// table of 1.0.
fn forwarding_table(version: OfVersion) -> u8 {
    match version {
        OfVersion::Of10 => 0,
        OfVersion::Of13 => 2,
    }
}

/// A limit of `limit` entries on s1's forwarding table, refusing beyond it; returns the
/// `Flow_Table` row's id, to lift the limit later.
fn limit_table(stage: &Stage, limit: u32) -> anyhow::Result<String> {
    let net = stage.net()?;
    let table = forwarding_table(stage.version);
    let id = stage.ovs().vsctl(&[
        "--id=@limit",
        "create",
        "Flow_Table",
        &format!("flow_limit={limit}"),
        "overflow_policy=refuse",
        "--",
        "set",
        "Bridge",
        &net.bridge(1),
        &format!("flow_tables:{table}=@limit"),
    ])?;
    Ok(id.trim().to_owned())
}

fn table_full_count(stage: &Stage, dpid: u64) -> anyhow::Result<u64> {
    let switches = stage.ctl()?.rest("GET", "/topology/switches", None, 200)?;
    let switches: Value = serde_json::from_str(&switches).context("/topology/switches")?;
    switches
        .as_array()
        .into_iter()
        .flatten()
        .find(|switch| switch["dpid"] == dpid)
        .and_then(|switch| switch["dropped"]["flow_mods_table_full"].as_u64())
        .context("s1's flow_mods_table_full")
}

/// s1's forwarding table holds fewer entries than the slices need: the refusals are
/// counted, red and blue stay apart (broadcast and unicast), and once the limit is lifted
/// every pair of a slice reaches the other without anyone touching the controller.
pub(super) fn table_full(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(PAIR)?;
    let limit = 1;
    let row = limit_table(stage, limit)?;
    stage.step(format!(
        "s1's table {} refuses entries past {limit}",
        forwarding_table(stage.version)
    ));
    for (slice, hosts) in [("red", [1u8, 2]), ("blue", [3, 4])] {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        for host in hosts {
            let port = stage.net()?.host_port(host)?;
            stage.rest(
                "POST",
                &format!("/slices/{slice}/ports"),
                Some(json!({ "dpid": port.dpid, "port_no": port.port })),
                201,
            )?;
            stage.rest(
                "POST",
                &format!("/slices/{slice}/ports/{}/mac_addresses", port.slice_name()),
                Some(json!({ "name": net::mac(host) })),
                201,
            )?;
        }
    }
    // Traffic makes 1.0's per-pair flows; the pipeline's entries are there already.
    let _ = stage.net()?.ping_all(&[(1, 2), (2, 1), (3, 4), (4, 3)])?;
    let started = Instant::now();
    let refused = loop {
        let refused = table_full_count(stage, 1)?;
        if refused > 0 {
            break refused;
        }
        if started.elapsed() > Duration::from_secs(10) {
            bail!("s1 refused no entry within 10 s:\n{}", stage.diagnose());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    stage.step(format!(
        "s1 refused {refused} FLOW_MODs for a full table, counted in /topology/switches"
    ));
    let across: Vec<(u8, u8)> = [(1, 3), (1, 4), (2, 3), (2, 4)]
        .into_iter()
        .flat_map(|(a, b)| [(a, b), (b, a)])
        .collect();
    stage.isolated(&across)?;

    stage
        .ovs()
        .vsctl(&["set", "Flow_Table", &row, "flow_limit=100000"])?;
    stage.step("the limit lifted");
    let lifted = Instant::now();
    for (a, b) in [(1, 2), (3, 4)] {
        loop {
            let answered = stage.net()?.ping_all(&[(a, b), (b, a)])?;
            if answered.iter().all(|ok| *ok) {
                break;
            }
            ensure!(
                lifted.elapsed() < REFILL_DEADLINE,
                "h{a} and h{b} still apart {} s after the limit was lifted:\n{}",
                lifted.elapsed().as_secs(),
                stage.diagnose()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    stage.step(format!(
        "both slices' pairs reach each other {} ms after the limit was lifted",
        lifted.elapsed().as_millis()
    ));
    stage.isolated(&across)?;
    Ok(())
}
