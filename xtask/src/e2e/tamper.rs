//! Tampering on purpose (issue 37): someone with switch access writes a leak between two
//! slices with `ovs-ofctl add-flow`, or deletes a forwarding entry. The verification must
//! report each within one period of the read-back, naming the entry, and the repair must
//! undo it: the planted entry gone, the deleted one back, the hosts as the slices say.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde_json::{json, Value};

use super::net::mac;
use super::oracle::VERIFICATION_INTERVAL_SECS;
use super::ovs::OfVersion;
use super::stage::Stage;
use super::sys;
use super::topologies::PAIR;

/// A priority above every entry sliced writes, so the planted entry wins.
const PLANTED_PRIORITY: u16 = 1000;

/// The promise is "within one period"; a read-back and a verification take milliseconds
/// on top of it, and the lab's machine may be busy.
const SLACK: Duration = Duration::from_millis(1500);

/// How long the scenario waits at most for anything: several periods.
const PATIENCE: Duration = Duration::from_secs(30);

pub(super) fn tamper(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(PAIR)?;
    for (slice, hosts) in [("red", [1u8, 2]), ("blue", [3, 4])] {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        for host in hosts {
            stage.add_member(slice, host)?;
        }
    }
    stage.reach_both(1, 2)?;
    stage.reach_both(3, 4)?;
    let clean = wait_proven(stage)?;
    stage.step(format!("verified: {clean}"));
    slice_verify_proves(stage)?;

    planted_leak(stage)?;
    if stage.version == OfVersion::Of13 {
        deleted_forwarding(stage)?;
    } else {
        stage.step(
            "a deleted per-pair flow is not tampering on OpenFlow 1.0: the controller \
             makes such flows again on demand, so the verifier counts the pair as the \
             controller's decision",
        );
    }
    stage.pings_agree_with_verifier(&[1, 2, 3, 4])
}

/// h1 (red) and h3 (blue) share s1: two entries above sliced's own carry frames between
/// them directly.
fn planted_leak(stage: &mut Stage) -> anyhow::Result<()> {
    let (h1, h3) = {
        let net = stage.net()?;
        (net.host_port(1)?, net.host_port(3)?)
    };
    ensure!(h1.dpid == h3.dpid, "PAIR puts h1 and h3 on one switch");
    let table = if stage.version == OfVersion::Of13 {
        "table=0,"
    } else {
        ""
    };
    let bridge = stage.net()?.bridge(h1.dpid);
    let before = violations_seen(stage)?;
    let started = Instant::now();
    for (from, to, dst) in [(h1.port, h3.port, mac(3)), (h3.port, h1.port, mac(1))] {
        let flow = format!(
            "{table}priority={PLANTED_PRIORITY},in_port={from},dl_dst={dst},actions=output:{to}"
        );
        stage
            .ovs()
            .ofctl(stage.version, &["add-flow", &bridge, &flow])?;
    }
    stage.step(format!(
        "planted on s{}: h1 <-> h3 at priority {PLANTED_PRIORITY}",
        h1.dpid
    ));

    let found = wait_for(stage, "the planted leak reported", |answer| {
        let leak = newer_violations(answer, before, "leaks").find(|v| {
            v.pointer("/src/mac").and_then(Value::as_str) == Some(mac(1).as_str())
                && v.pointer("/dst/mac").and_then(Value::as_str) == Some(mac(3).as_str())
                && entries_of(v).any(|e| priority(e) == Some(PLANTED_PRIORITY))
        })?;
        Some(leak.clone())
    })?;
    let latency = started.elapsed();
    stage.step(format!(
        "leak h1 -> h3 reported after {} ms with the entry: {}",
        latency.as_millis(),
        entries_of(&found)
            .map(|e| format!("{} {}", e["match"], e["actions"]))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    within_one_period(latency, "the planted leak")?;

    let foreign = wait_for(stage, "the planted entries listed as foreign", |answer| {
        let listed = answer
            .get("foreign")?
            .as_array()?
            .iter()
            .filter(|e| priority(e) == Some(PLANTED_PRIORITY) && e["dpid"] == json!(h1.dpid))
            .count();
        (listed >= 2).then_some(listed)
    })?;
    stage.step(format!(
        "{foreign} foreign entries listed with switch and match"
    ));

    let gone = sys::poll(PATIENCE, Duration::from_millis(100), || {
        let left = stage
            .flows(h1.dpid)?
            .into_iter()
            .filter(|f| f.priority == u32::from(PLANTED_PRIORITY))
            .count();
        Ok((left == 0).then_some(()))
    })?;
    ensure!(
        gone.is_some(),
        "the planted entries are still in s{} after {PATIENCE:?}",
        h1.dpid
    );
    stage.step("repaired: the planted entries are gone from the switch");
    wait_proven(stage)?;
    stage.isolated(&[(1, 3), (3, 1)])
}

/// The entries of s1 forwarding to h2 removed: h1's frames for h2 go nowhere.
fn deleted_forwarding(stage: &mut Stage) -> anyhow::Result<()> {
    let dpid = stage.net()?.host_port(1)?.dpid;
    let bridge = stage.net()?.bridge(dpid);
    let to_h2 = |stage: &Stage| -> anyhow::Result<usize> {
        Ok(stage
            .flows(dpid)?
            .iter()
            .filter(|f| f.field("table") == Some("2") && f.field("dl_dst") == Some(&mac(2)))
            .count())
    };
    let held = to_h2(stage)?;
    ensure!(
        held > 0,
        "s{dpid} holds no entry forwarding to h2 to delete"
    );
    let before = violations_seen(stage)?;
    let started = Instant::now();
    let filter = format!("table=2,dl_dst={}", mac(2));
    stage
        .ovs()
        .ofctl(stage.version, &["del-flows", &bridge, &filter])?;
    stage.step(format!(
        "deleted from s{dpid}: {held} entries of table 2 for h2"
    ));

    let found = wait_for(stage, "the black hole reported", |answer| {
        newer_violations(answer, before, "black_holes")
            .find(|v| {
                v.pointer("/src/mac").and_then(Value::as_str) == Some(mac(1).as_str())
                    && v.pointer("/dst/mac").and_then(Value::as_str) == Some(mac(2).as_str())
            })
            .cloned()
    })?;
    let latency = started.elapsed();
    stage.step(format!(
        "black hole h1 -> h2 reported after {} ms: {}",
        latency.as_millis(),
        found["reason"]
    ));
    within_one_period(latency, "the deleted entry")?;

    let back = sys::poll(PATIENCE, Duration::from_millis(100), || {
        Ok((to_h2(stage)? == held).then_some(()))
    })?;
    ensure!(
        back.is_some(),
        "s{dpid}'s entries for h2 were not written again within {PATIENCE:?}"
    );
    stage.step(format!("repaired: the {held} entries for h2 are back"));
    wait_proven(stage)?;
    stage.reach_both(1, 2)
}

/// `slice verify`, the operator's way to ask, says so too (exit 0).
pub(super) fn slice_verify_proves(stage: &mut Stage) -> anyhow::Result<()> {
    let said = stage.tool(&["verify"])?;
    ensure!(
        said.starts_with("isolation proven: ") && said.contains(" pairs checked ("),
        "slice verify said: {said}"
    );
    stage.step(format!(
        "slice verify: {}",
        said.lines().next().unwrap_or("")
    ));
    Ok(())
}

fn within_one_period(latency: Duration, what: &str) -> anyhow::Result<()> {
    let period = Duration::from_secs(VERIFICATION_INTERVAL_SECS.parse()?);
    ensure!(
        latency <= period + SLACK,
        "{what} was reported after {} ms, more than one period ({} ms) and {} ms",
        latency.as_millis(),
        period.as_millis(),
        SLACK.as_millis()
    );
    Ok(())
}

/// How many verifications had found a violation when the tampering began: the
/// `last_violation` to look past.
fn violations_seen(stage: &Stage) -> anyhow::Result<u64> {
    let answer = stage.ctl()?.view("/verification")?;
    Ok(answer
        .pointer("/last_violation/computed_at_unix_ms")
        .and_then(Value::as_u64)
        .unwrap_or(0))
}

/// The violations of one kind in the latest verification and in the last one that found
/// any, if that ended after `since_ms`: a repair may clear the latest before a poll.
fn newer_violations<'v>(
    answer: &'v Value,
    since_ms: u64,
    kind: &'static str,
) -> impl Iterator<Item = &'v Value> {
    let latest = answer.pointer("/latest/report").and_then(|r| r.get(kind));
    let last = answer
        .get("last_violation")
        .filter(|v| {
            v.get("computed_at_unix_ms")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                > since_ms
        })
        .and_then(|v| v.pointer("/report").and_then(|r| r.get(kind)));
    [latest, last]
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
}

fn entries_of(violation: &Value) -> impl Iterator<Item = &Value> {
    violation
        .get("entries")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn priority(entry: &Value) -> Option<u16> {
    entry.get("priority")?.as_u64()?.try_into().ok()
}

fn wait_for<T>(
    stage: &Stage,
    what: &str,
    mut found: impl FnMut(&Value) -> Option<T>,
) -> anyhow::Result<T> {
    let ctl = stage.ctl()?;
    let mut last = Value::Null;
    let result = sys::poll(PATIENCE, Duration::from_millis(50), || {
        last = ctl.view("/verification")?;
        Ok(found(&last))
    })?;
    result.with_context(|| format!("{what}: not within {PATIENCE:?}; GET /verification: {last}"))
}

/// Waits until the latest verification proves the slices hold; returns its summary.
fn wait_proven(stage: &Stage) -> anyhow::Result<String> {
    let report = wait_for(stage, "a verification proving the slices", |answer| {
        let latest = answer.get("latest")?;
        (latest.get("proven")? == &json!(true)).then(|| latest["report"].clone())
    })?;
    Ok(format!(
        "isolation proven: {} pairs checked ({} hosts, {} switches, {} entries)",
        report["pairs_checked"], report["hosts"], report["switches"], report["entries"]
    ))
}
