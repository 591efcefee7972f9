//! What the proactive pipeline costs on a Mininet network, counted on the switches
//! themselves: the entries each table holds against the bound hosts, and the PACKET_INs
//! (the table-miss flows' packet counts) and flow changes that new pairs of known hosts
//! cause. Counts, not times, so they are asserted.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::ensure;

use super::flows::{self, Flow};
use super::mininet_net::{check_pairs, Description};
use super::stage::Stage;

/// sliced's table-miss cookie (`crates/slice-controller/src/cookie.rs`, kind 1).
const TABLE_MISS_COOKIE: &str = "0x5c1c010000000000";

/// Each switch's flows, with statistics, by switch name.
fn dump(stage: &Stage, net: &Description) -> anyhow::Result<Vec<(String, Vec<Flow>)>> {
    net.switches
        .iter()
        .map(|switch| {
            let text = stage
                .ovs()
                .ofctl(stage.version, &["dump-flows", &switch.name])?;
            Ok((switch.name.clone(), flows::parse(&text)))
        })
        .collect()
}

/// The packets the table-miss flows sent to the controller, over all switches.
fn misses(tables: &[(String, Vec<Flow>)]) -> u64 {
    tables
        .iter()
        .flat_map(|(_, flows)| flows)
        .filter(|flow| flow.field("cookie") == Some(TABLE_MISS_COOKIE))
        .filter_map(|flow| flow.field("n_packets")?.parse::<u64>().ok())
        .sum()
}

/// The entries, without their statistics: what a FLOW_MOD would change.
fn entries(tables: &[(String, Vec<Flow>)]) -> BTreeSet<(String, String)> {
    const STATS: [&str; 5] = ["duration", "n_packets", "n_bytes", "idle_age", "hard_age"];
    tables
        .iter()
        .flat_map(|(name, flows)| {
            flows.iter().map(move |flow| {
                let fields: Vec<String> = flow
                    .fields
                    .iter()
                    .filter(|(key, _)| !STATS.contains(&key.as_str()))
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect();
                (
                    name.clone(),
                    format!("{} {}", fields.join(","), flow.actions),
                )
            })
        })
        .collect()
}

/// Every switch holds at most three entries per bound host, one per host port, two per
/// link end (its admission and its probes) and three more (LLDP, the transit miss and
/// the table-miss flow), whatever the pairs: the bound, checked
/// when `enforce` (its network, the tree). A host in two slices adds a forwarding entry
/// per tag that may reach it, which a network of nine hosts (the torus) feels; there the
/// sizes are only shown.
pub(super) fn check_table_bound(
    stage: &mut Stage,
    net: &Description,
    bound_hosts: usize,
    enforce: bool,
) -> anyhow::Result<()> {
    let tables = dump(stage, net)?;
    let mut sizes = Vec::new();
    for (name, flows) in &tables {
        let link_ends = net
            .links
            .iter()
            .filter(|(a, b)| a.switch == *name || b.switch == *name)
            .count();
        let host_ports = net
            .hosts
            .iter()
            .filter(|host| {
                net.switches
                    .iter()
                    .any(|s| s.name == *name && s.dpid == host.dpid)
            })
            .count();
        let bound = 3 * bound_hosts + host_ports + 2 * link_ends + 3;
        ensure!(
            !enforce || flows.len() <= bound,
            "{name} holds {} entries, more than 3 x {bound_hosts} bound hosts + {host_ports} \
             host ports + 2 x {link_ends} link ends + 3",
            flows.len()
        );
        sizes.push(format!("{name} {}", flows.len()));
    }
    stage.step(format!(
        "entries per switch with {bound_hosts} bound hosts (at most 3 per host + 1 per host \
         port + 2 per link end + 3): {}",
        sizes.join(", ")
    ));
    Ok(())
}

/// How long the table-miss flows must send nothing before the new pairs are measured:
/// hosts and switch ports chatter while Mininet starts (duplicate address detection, MLD
/// reports, the first router solicitations), and that is no pair's doing. Later router
/// solicitations, which Linux repeats with backoff for as long as an interface is up,
/// the script turns off (`quiet_ipv6_chatter` in `sliced_mininet.py`): in CI a round
/// of them, from the hosts bound nowhere and the ports, fell among the pings.
const QUIET: Duration = Duration::from_secs(3);
const QUIET_WAIT: Duration = Duration::from_secs(30);

/// Waits until no table-miss flow has sent anything for [`QUIET`], up to [`QUIET_WAIT`].
fn wait_quiet(stage: &mut Stage, net: &Description) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last = misses(&dump(stage, net)?);
    let mut since = Instant::now();
    while since.elapsed() < QUIET && started.elapsed() < QUIET_WAIT {
        std::thread::sleep(Duration::from_millis(500));
        let now = misses(&dump(stage, net)?);
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    stage.step(format!(
        "table-miss flows quiet for {} ms ({} ms waited)",
        since.elapsed().as_millis(),
        started.elapsed().as_millis()
    ));
    Ok(())
}

/// Pings from `rows` (bound hosts) to every host, as the first traffic between them;
/// with `enforce` (the pipeline): no switch's table changes (no FLOW_MOD), and the
/// table-miss flows send the controller next to nothing (a tenth of a packet per pair at
/// most, for chatter the quiet wait missed). The figures are printed either way.
pub(super) fn check_new_pairs_cost_nothing(
    stage: &mut Stage,
    net: &Description,
    rows: &[usize],
    enforce: bool,
    allowed: &dyn Fn(usize, usize) -> bool,
) -> anyhow::Result<()> {
    // On per-pair flows LLDP goes through the table-miss flow too: never quiet.
    if enforce {
        wait_quiet(stage, net)?;
    }
    let before = dump(stage, net)?;
    check_pairs(stage, net, rows, allowed, "new pairs of bound hosts")?;
    let after = dump(stage, net)?;
    let pairs: usize = rows
        .iter()
        .map(|&row| {
            (0..net.hosts.len())
                .filter(|&to| to != row && allowed(row, to))
                .count()
        })
        .sum();
    let packet_ins = misses(&after).saturating_sub(misses(&before));
    let (was, is) = (entries(&before), entries(&after));
    let changed: Vec<&(String, String)> = was.symmetric_difference(&is).collect();
    stage.step(format!(
        "{pairs} new pairs of bound hosts, pinged over IPv4 and IPv6: {packet_ins} PACKET_INs{}, \
         {} entries changed",
        if enforce { "" } else { " (LLDP included)" },
        changed.len()
    ));
    if !enforce {
        return Ok(());
    }
    ensure!(
        changed.is_empty(),
        "new pairs changed the tables: {changed:?}"
    );
    ensure!(
        packet_ins * 10 <= pairs as u64,
        "{pairs} new pairs of bound hosts sent {packet_ins} packets to the controller"
    );
    Ok(())
}
