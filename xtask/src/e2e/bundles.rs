//! The pipeline written as bundles, as Open vSwitch itself saw it: one `slices:apply`
//! binds many MAC addresses at once, and every switch's change must arrive as bundle
//! messages (1.3: the ONF extension's `BUNDLE_CONTROL` and `BUNDLE_ADD_MESSAGE`) with no
//! FLOW_MOD of its own, be committed without an error, leave every table holding every
//! bound address, and keep the slices apart. The time from the apply to every table
//! right is reported (docs/benchmarks.md quotes it). On 1.0 nothing may arrive as a
//! bundle: 1.0 has none.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::ensure;
use serde_json::{json, Value};

use super::net;
use super::ofmsg_log::{self, MessageLog};
use super::ovs::OfVersion;
use super::stage::Stage;
// Two switches with one cable; h1 and h2 (one per switch) in red, h3 and h4 in blue.
use super::topologies::PAIR;

/// Addresses bound beside each real host of the two slices: enough that each switch's
/// change (about 8,800 entries) is larger than one bundle may be (4,096 FLOW_MODs), so
/// that it goes as several.
const BULK_PER_HOST: u16 = 1100;
/// How long the tables may take to hold every address after the apply.
const TABLES_DEADLINE: Duration = Duration::from_secs(180);

/// The made-up addresses bound beside host `host`.
fn bulk_macs(host: u8) -> Vec<String> {
    (0..BULK_PER_HOST)
        .map(|n| format!("02:b0:00:{host:02x}:{:02x}:{:02x}", n >> 8, n & 0xff))
        .collect()
}

/// The `bundles` scenario.
pub(super) fn bundles(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    let _log = MessageLog::on(stage.ovs())?;
    stage.step("ovs-appctl vlog/set vconn:file:dbg; vlog/disable-rate-limit vconn");
    stage.build(PAIR)?;
    let ctl = stage.ctl()?;
    let peer = format!(
        "{}:127.0.0.1:{}",
        if ctl.tls { "ssl" } else { "tcp" },
        ctl.openflow_port
    );

    let mut slices = Vec::new();
    let mut every_mac = BTreeSet::new();
    for (slice, hosts) in [("red", [1u8, 2]), ("blue", [3, 4])] {
        let mut ports = Vec::new();
        for host in hosts {
            let port = stage.net()?.host_port(host)?;
            let mut macs = vec![net::mac(host)];
            macs.extend(bulk_macs(host));
            every_mac.extend(macs.iter().cloned());
            ports.push(json!({ "name": port.slice_name(), "mac_addresses": macs }));
        }
        slices.push(json!({ "name": slice, "ports": ports }));
    }
    let mark = stage.ovs().log_mark();
    let applied = Instant::now();
    stage.ctl()?.rest(
        "POST",
        "/slices:apply",
        Some(json!({ "slices": slices })),
        200,
    )?;
    stage.step(format!(
        "POST /slices:apply: red and blue, {} MAC addresses bound at the four host ports",
        every_mac.len()
    ));

    let pipeline = stage.runs_pipeline();
    if pipeline {
        let elapsed = wait_tables(stage, &every_mac, applied)?;
        let sizes = table_sizes(stage)?;
        stage.step(format!(
            "every switch's table holds every bound address {} ms after the apply \
             ({sizes})",
            elapsed.as_millis()
        ));
        stage.report(format!(
            "bulk write of {} addresses: apply to every table right in {} ms ({sizes})",
            every_mac.len(),
            elapsed.as_millis()
        ));
    }

    // What the switches received from sliced since just before the apply.
    let log = stage.ovs().log_between(mark, None)?;
    let traffic = ofmsg_log::traffic(&log, &peer);
    let received = |kind: &str| traffic.received.get(kind).copied().unwrap_or(0);
    let (controls, adds, flow_mods) = (
        received("BUNDLE_CONTROL"),
        received("BUNDLE_ADD_MESSAGE"),
        received("FLOW_MOD"),
    );
    stage.report(format!(
        "Open vSwitch received from sliced since the apply: {controls} BUNDLE_CONTROL, \
         {adds} BUNDLE_ADD_MESSAGE, {flow_mods} FLOW_MOD; sent it {}",
        ofmsg_log::counts(&traffic.sent)
    ));
    if stage.version == OfVersion::Of13 && pipeline {
        // Each switch has an entry per bound address at least, on its own change.
        let least = every_mac.len();
        ensure!(
            adds >= least && controls >= 4,
            "the bulk write did not arrive as bundles (at least {least} adds and an OPEN and \
             a COMMIT per switch expected): {traffic}"
        );
        ensure!(
            flow_mods == 0,
            "{flow_mods} FLOW_MODs of their own arrived during the bulk write: {traffic}"
        );
        ensure!(
            traffic.errors.is_empty(),
            "the switches answered the bundles with errors: {traffic}"
        );
        let replies = traffic.sent.get("BUNDLE_CONTROL").copied().unwrap_or(0);
        ensure!(
            replies >= controls,
            "Open vSwitch answered {replies} of {controls} bundle control messages: {traffic}"
        );
    } else {
        ensure!(
            controls + adds == 0,
            "a {} network received bundle messages: {traffic}",
            stage.version.short()
        );
    }

    for (a, b) in [(1, 2), (3, 4)] {
        stage.reach_both(a, b)?;
    }
    let across: Vec<(u8, u8)> = [(1, 3), (1, 4), (2, 3), (2, 4)]
        .into_iter()
        .flat_map(|(a, b)| [(a, b), (b, a)])
        .collect();
    stage.isolated(&across)
}

/// Polls until every switch has an entry for every address of `macs`; how long after
/// `since` that was.
fn wait_tables(stage: &Stage, macs: &BTreeSet<String>, since: Instant) -> anyhow::Result<Duration> {
    let switches = stage.net()?.topo.switches.clone();
    loop {
        let mut missing = Vec::new();
        for &dpid in &switches {
            let flows = stage.flows(dpid)?;
            let held: BTreeSet<&str> = flows
                .iter()
                .flat_map(|flow| [flow.field("dl_src"), flow.field("dl_dst")])
                .flatten()
                .collect();
            let lacking = macs
                .iter()
                .filter(|mac| !held.contains(mac.as_str()))
                .count();
            if lacking > 0 {
                missing.push(format!("s{dpid} lacks {lacking}"));
            }
        }
        if missing.is_empty() {
            return Ok(since.elapsed());
        }
        ensure!(
            since.elapsed() < TABLES_DEADLINE,
            "the tables still lack addresses {} s after the apply: {}\n{}",
            since.elapsed().as_secs(),
            missing.join(", "),
            stage.diagnose()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `s1 1234, s2 1230`: each switch's entries, and sliced's count of them.
fn table_sizes(stage: &Stage) -> anyhow::Result<String> {
    let switches: Value =
        serde_json::from_str(&stage.ctl()?.rest("GET", "/topology/switches", None, 200)?)?;
    let mut out = Vec::new();
    for dpid in stage.net()?.topo.switches.clone() {
        let held = switches
            .as_array()
            .into_iter()
            .flatten()
            .find(|switch| switch["dpid"] == dpid)
            .and_then(|switch| switch["pipeline_entries"].as_u64());
        out.push(format!(
            "s{dpid} {} entries (sliced counts {})",
            stage.flows(dpid)?.len(),
            held.map_or("none".to_owned(), |n| n.to_string())
        ));
    }
    Ok(out.join(", "))
}
